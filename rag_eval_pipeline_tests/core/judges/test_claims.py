"""Claim and sentence splitting (core/judges/claims.py): Spanish, English, CJK, lists, numbers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.judges.claims import sentence_spans, split_claims, split_sentences


def test_spanish_question_and_exclamation_marks():
    text = "¿Cuál es el plazo? Son 30 días naturales. ¡Ojo! Hay excepciones."
    assert split_claims(text) == [
        "¿Cuál es el plazo?", "Son 30 días naturales.", "¡Ojo!", "Hay excepciones.",
    ]


def test_spanish_abbreviations_do_not_split():
    text = "Lo firmó el Sr. García, p. ej. en la reunión con la Dra. Pérez. Después se fue."
    assert split_claims(text) == [
        "Lo firmó el Sr. García, p. ej. en la reunión con la Dra. Pérez.", "Después se fue.",
    ]
    assert split_claims("Viajó a EE. UU. en 2010. Volvió en 2012.") == [
        "Viajó a EE. UU. en 2010.", "Volvió en 2012.",
    ]


def test_english_abbreviations_initials_and_acronyms():
    text = "Dr. Smith, e.g. in 2010, met J. K. Rowling in the U.S. and Mr. Brown. They talked."
    assert split_claims(text) == [
        "Dr. Smith, e.g. in 2010, met J. K. Rowling in the U.S. and Mr. Brown.", "They talked.",
    ]
    assert split_claims("See i.e. the list. Done.") == ["See i.e. the list.", "Done."]


def test_etc_ends_a_sentence_only_before_a_capital():
    assert split_claims("Vende lápices, gomas, etc. Abre a las 9.") == [
        "Vende lápices, gomas, etc.", "Abre a las 9.",
    ]
    assert split_claims("Vende lápices, gomas, etc. y también papel.") == [
        "Vende lápices, gomas, etc. y también papel.",
    ]


def test_number_abbreviation_only_before_a_digit():
    assert split_claims("It ranked No. 1 in 1981. It sold well.") == [
        "It ranked No. 1 in 1981.", "It sold well.",
    ]
    assert split_claims("He said no. Then he left.") == ["He said no.", "Then he left."]


def test_decimals_and_thousands_do_not_split():
    text = "Pesa 3.5 kg y cuesta 3,5 euros. Tiene 1.000 páginas y 1,000 notas. Fin."
    assert split_claims(text, coordinated=False) == [
        "Pesa 3.5 kg y cuesta 3,5 euros.", "Tiene 1.000 páginas y 1,000 notas.", "Fin.",
    ]
    # with coordinated facts split (the default), "pesa ... y cuesta ..." is two facts; the
    # decimals still do not split anything
    assert split_claims(text) == [
        "Pesa 3.5 kg.", "Cuesta 3,5 euros.", "Tiene 1.000 páginas y 1,000 notas.", "Fin.",
    ]


def test_guillemets_and_closing_quotes_stay_with_their_sentence():
    assert split_claims("Dijo «basta.» Luego salió.") == ["Dijo «basta.»", "Luego salió."]
    assert split_claims('He said "stop." Then he left.') == ['He said "stop."', "Then he left."]
    assert split_claims("Es así. «Nada cambia», dijo.") == ["Es así.", "«Nada cambia», dijo."]


def test_list_items_markers_removed():
    text = ("Requisitos:\n- DNI en vigor\n* Foto reciente. En color.\n1. Pagar la tasa\n2) Firmar\n• Esperar\n"
            "(a) Recoger")
    assert split_claims(text) == [
        "Requisitos:", "DNI en vigor", "Foto reciente.", "En color.", "Pagar la tasa", "Firmar",
        "Esperar", "Recoger",
    ]


def test_semicolons_split_claims_but_not_sentences():
    text = "El plazo es de 30 días; el envío lo paga el cliente."
    assert split_claims(text) == ["El plazo es de 30 días", "el envío lo paga el cliente."]
    assert split_sentences(text) == [text]


def test_cjk_sentence_marks_split_without_spaces():
    assert split_claims("东京是日本的首都。它很大！你去过吗？是的") == [
        "东京是日本的首都。", "它很大！", "你去过吗？", "是的",
    ]
    assert split_claims("東京は日本の首都です。人口が多い。") == ["東京は日本の首都です。", "人口が多い。"]


def test_line_breaks_hard_for_claims_soft_for_sentences():
    text = "The track is a street\ncircuit. It is public.\n\nNew paragraph"
    assert split_claims(text) == ["The track is a street", "circuit.", "It is public.", "New paragraph"]
    assert split_sentences(text) == ["The track is a street\ncircuit.", "It is public.", "New paragraph"]


def test_glued_sentences_split_only_in_evidence_mode():
    text = "It was published in the 19th century.First for Women is a magazine."
    assert split_sentences(text) == [
        "It was published in the 19th century.", "First for Women is a magazine.",
    ]
    assert split_claims(text) == [text]
    # "e.g.The" is not a glued end: the letter before the period is a one-letter word.
    assert len(split_sentences("Use a tool e.g.The hammer.")) == 1


def test_empty_and_punctuation_only():
    assert split_claims("") == []
    assert split_claims(None) == []
    assert split_claims("   \n\n ") == []
    assert split_claims("... — ;") == []
    assert split_sentences(None) == []


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(list("ab Z9.,;!?¿¡«»\n-•。東") + ["Sr.", "e.g.", " 3.5", "1. "]),
                max_size=40).map("".join))
def test_spans_are_ordered_trimmed_substrings(text):
    for kw in ({}, {"hard_newlines": True, "split_semicolons": True, "split_glued": False}):
        spans = sentence_spans(text, **kw)
        prev_end = 0
        for s, e in spans:
            assert prev_end <= s < e <= len(text)
            piece = text[s:e]
            assert piece == piece.strip()
            assert any(ch.isalnum() for ch in piece)
            prev_end = e
    claims = split_claims(text)
    assert claims == split_claims(text)  # deterministic
    assert all(c in text for c in claims)
