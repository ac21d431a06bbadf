"""Facts swapped inside one context sentence (core/judges/binding.py): the claim's numbers and names
must be stated together by one fact of the sentence. Every expected verdict is worked out by hand
from the sentence: which name it gives which number."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.binding import sentence_facts, swapped
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judges.tokens import tokens


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge()


@pytest.mark.parametrize(("context", "claim", "verdict"), [
    # the sentence gives Acme 1985 and Globex 1990 (gapping): a claim that swaps them has the words and
    # numbers of the sentence but not of one fact
    ("Acme was founded in 1985 and Globex in 1990.", "Acme was founded in 1990.", "CONTRADICTED"),
    ("Acme was founded in 1985 and Globex in 1990.", "Globex was founded in 1985.", "CONTRADICTED"),
    ("Acme was founded in 1985 and Globex in 1990.", "Acme was founded in 1985.", "SUPPORTED"),
    ("Acme was founded in 1985 and Globex in 1990.", "Globex was founded in 1990.", "SUPPORTED"),
    ("Acme se fundó en 1985 y Globex en 1990.", "Acme se fundó en 1990.", "CONTRADICTED"),
    ("Acme se fundó en 1985 y Globex en 1990.", "Globex se fundó en 1990.", "SUPPORTED"),
    # one subject, two facts: the year of the move is 1948, not 1935 (the birth)
    ("Elvis Presley was born in Tupelo in 1935 and moved to Memphis in 1948.",
     "Elvis Presley moved to Memphis in 1935.", "CONTRADICTED"),
    ("Elvis Presley was born in Tupelo in 1935 and moved to Memphis in 1948.",
     "Elvis Presley moved to Memphis in 1948.", "SUPPORTED"),
])
def test_a_number_belongs_to_its_own_fact(judge, context, claim, verdict):
    got = judge.judge("", claim, [context])
    assert [c.verdict for c in got.claims] == [verdict]


def test_facts_of_a_sentence():
    facts = sentence_facts("Acme was founded in 1985 and Globex in 1990.", "english")
    assert len(facts) == 2
    (n1, w1), (n2, w2) = facts
    assert n1 == tokens("1985", "english").numbers and "acme" in w1 and "globex" not in w1
    assert n2 == tokens("1990", "english").numbers and "globex" in w2 and "acme" not in w2


def test_no_binding_without_names_numbers_or_two_facts():
    n1990 = tokens("1990", "english").numbers
    # one fact: nothing to bind
    assert not swapped("Acme was founded in 1990.", n1990, "Acme was founded in 1990 in Ohio.", "english")
    # no number in the claim
    assert not swapped("Acme was founded early.", frozenset(), "Acme was founded in 1985 and Globex in 1990.",
                       "english")
    # no name of the sentence and no word that tells its facts apart ("shop", "opens" are in both)
    assert not swapped("The shop opens at 1990.", n1990, "The shop opens at 1985 and opens again at 1990.",
                       "english")


def test_statistics_quotes_and_name_numbers_are_not_bound():
    # a fact with three or more numbers is a statistic: a claim quoting part of it is not checked
    # (by hand: the second fact "…, 2.05; 95% CI, 1.15-3.64" holds 2.05, 95, 1.15, 3.64)
    stat = ("Risk rose in Spain (ratio 1.8) and it doubled in Italy (ratio 2.05; 95% CI, 1.15-3.64).")
    assert not swapped("Risk rose in Italy (ratio 1.8).", tokens("1.8", "english").numbers, stat, "english")
    # a verbatim part of the sentence swaps nothing, whatever facts the splitter makes of it
    s = "Acme was founded in 1985 and Globex in 1990."
    assert not swapped("Acme was founded in 1985 and Globex in 1990", tokens("1985 1990", "english").numbers, s,
                       "english")
    # "IL-1": the 1 is the name's, not a quantity to bind
    s = "IL-10 blocks PD-1 and IL-6 blocks PD-2."
    assert not swapped("IL-1 blocks PD.", tokens("1", "english").numbers, s, "english")


@pytest.mark.parametrize(("context", "claim", "verdict"), [
    # rule version 9: no name, but a word of the claim that only one fact of the sentence states
    # ("closes", "cierra") binds the claim's number to that fact. By hand: the sentence's facts are
    # "The museum opens at 9" and "The museum closes at 5"; "closes" is only in the second, which
    # gives 5, so "closes at 9" takes the first fact's number
    ("The museum opens at 9 and closes at 5.", "The museum closes at 9.", "CONTRADICTED"),
    ("The museum opens at 9 and closes at 5.", "The museum opens at 5.", "CONTRADICTED"),
    ("The museum opens at 9 and closes at 5.", "The museum closes at 5.", "SUPPORTED"),
    ("The museum opens at 9 and closes at 5.", "The museum opens at 9.", "SUPPORTED"),
    ("La piscina abre a las 8 y cierra a las 21.", "La piscina cierra a las 8.", "CONTRADICTED"),
    ("La piscina abre a las 8 y cierra a las 21.", "La piscina cierra a las 21.", "SUPPORTED"),
    # words in both facts ("kettle", "litres") tell nothing apart: "holds" is the second fact's
    ("The kettle weighs 2 kilos and holds 1.5 litres.", "The kettle holds 2 litres.", "CONTRADICTED"),
    ("The kettle weighs 2 kilos and holds 1.5 litres.", "The kettle holds 1.5 litres.", "SUPPORTED"),
])
def test_a_number_is_bound_by_the_word_that_tells_the_facts_apart(judge, context, claim, verdict):
    got = judge.judge("", claim, [context])
    assert [c.verdict for c in got.claims] == [verdict]


def test_no_binding_by_words_when_no_fact_states_them_all():
    n10 = tokens("10", "english").numbers
    # "Sundays" (second fact) and "opens" (first fact only, when the second fact is read without it)
    # are in no one fact together: nothing is bound (the facts: "The museum opens at 9",
    # "On Sundays the museum opens at 10"; "opens" and "museum" are in both, "sundays" in the second)
    s = "The museum opens at 9, but on Sundays it opens at 10."
    assert not swapped("On Sundays the museum opens at 10.", n10, s, "english")
    # a word the claim does not share with the sentence binds nothing ("shuts")
    assert not swapped("The museum shuts at 9.", tokens("9", "english").numbers,
                       "The museum opens at 9 and closes at 5.", "english")
    # a claim whose numbers two facts state joins them (a list item split badly): not bound by words
    # (by hand: "ten-pin" is the first item's 10, "nine-pin" the second's 9; no item states both)
    s = "The most common types of pin bowling include ten-pin, nine-pin and five-pin bowling."
    assert not swapped("Ten-pin bowling are the most nine-pin.", tokens("ten-pin nine-pin", "english").numbers, s,
                       "english")
