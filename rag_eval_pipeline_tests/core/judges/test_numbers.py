"""Numbers in words, dates and units (core/judges/numbers.py) and their effect on the judge.

Expected values are the numbers as a person reads them (RAE / CLDR spell-out rules)."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.numbers import normalise_dates, normalise_quantities, words_to_numbers
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge


@pytest.mark.parametrize(("text", "expected"), [
    ("quince dias", "15 dias"),
    ("treinta y cinco euros", "35 euros"),
    ("veintiun dias", "21 dias"),
    ("ciento veinte", "120"),
    ("dos mil", "2000"),
    ("mil quinientos", "1500"),
    ("one hundred and five days", "105 days"),
    ("twenty-one", "21"),
    ("a thousand", "1000"),
    ("fifteen", "15"),
    ("un ano", "1 ano"),          # "un" before a unit is one
    ("un plazo", "un plazo"),     # an article, not a number
    ("one of the best", "one of the best"),
    ("media hora", "0.5 hora"),
    ("una docena", "una 12"),
])
def test_words_to_numbers(text, expected):
    assert words_to_numbers(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("el 15 de enero de 2023", "el d2023m01d15"),
    ("january 15, 2023", "d2023m01d15"),
    ("15 january 2023", "d2023m01d15"),
    ("15/01/2023", "d2023m01d15"),
    ("2023-01-15", "d2023m01d15"),
    ("en junio de 2024", "en d2024m06"),
    ("may 2024", "d2024m05"),
    ("you may 2 things", "you may 2 things"),  # "may" the verb is no month
])
def test_dates(text, expected):
    assert normalise_dates(text) == expected


@pytest.mark.parametrize(("a", "b"), [
    ("15 w", "15 vatios"),
    ("15w", "15 watts"),
    ("4,95 €", "4,95 euros"),
    ("€4,95", "4,95 eur"),
    ("70 %", "setenta por ciento"),
    ("3 horas", "three hours"),
    ("a three-year warranty", "a 3 year warranty"),
])
def test_units_and_numbers_meet_in_one_form(a, b):
    assert normalise_quantities(a).split() == normalise_quantities(b).split()


def test_m_alone_is_a_letter_not_a_unit():
    assert normalise_quantities("plan m").split() == ["plan", "m"]
    assert normalise_quantities("20 m").split() == ["20", "m"]


LEX = RuleBasedJudge(semantic=False)


def test_number_in_words_supports_and_contradicts():
    ctx = ["El plazo de devolución es de 15 días desde la entrega."]
    quince = LEX.judge("", "El plazo de devolución es de quince días desde la entrega.", ctx)
    assert quince.claims[0].verdict == "SUPPORTED"
    other = ["El plazo de devolución es de 30 días desde la entrega."]
    c = LEX.judge("", "El plazo de devolución es de quince días desde la entrega.", other).claims[0]
    assert c.verdict == "CONTRADICTED"
    assert "'15'" in c.justification and "'30'" in c.justification


def test_dates_compare_across_formats_and_state_their_year():
    ctx = ["La oferta terminó el 01/03/2024 en todas las tiendas."]
    same_day = LEX.judge("", "La oferta terminó el 1 de marzo de 2024 en todas las tiendas.", ctx)
    assert same_day.claims[0].verdict == "SUPPORTED"
    next_day = LEX.judge("", "La oferta terminó el 2 de marzo de 2024 en todas las tiendas.", ctx)
    assert next_day.claims[0].verdict == "CONTRADICTED"
    # "born" must be in the context too: a word the context does not state is an extra detail
    born = ["Elvis Presley (born January 8, 1935 – died August 16, 1977) was an American singer."]
    assert LEX.judge("", "Elvis Presley was an American singer born in 1935.", born).claims[0].verdict == "SUPPORTED"


def test_units_written_differently_support():
    ctx = ["La base necesita un adaptador de corriente USB-C de 15 W."]
    j = LEX.judge("", "La base necesita un adaptador de corriente USB-C de 15 vatios.", ctx)
    assert [c.verdict for c in j.claims] == ["SUPPORTED"]
    assert j.claims[0].quote == ctx[0]
