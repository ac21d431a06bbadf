"""Quote normalisation and literal presence (core/judges/quotes.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.judges.quotes import normalise_text, quote_in_context


def test_normalise_typography_only():
    assert normalise_text("  «Hola»\u00a0\t—  “Mundo”\n") == "'hola' - 'mundo'"
    assert normalise_text("Arthur’s Magazine (1844–1846)") == "arthur's magazine (1844-1846)"
    assert normalise_text("ＦＵＬＬ　ｗｉｄｔｈ") == "full width"  # NFKC
    assert normalise_text("Stra\u00dfe") == "strasse"  # casefold
    assert normalise_text("co\u00adope\u200bration") == "cooperation"  # invisible characters
    assert normalise_text("wait…") == "wait..."
    assert normalise_text("año") != normalise_text("ano")  # accents are wording, kept
    assert normalise_text(None) == ""


@given(st.text(max_size=60))
def test_normalise_is_idempotent(s):
    once = normalise_text(s)
    assert normalise_text(once) == once


def test_quote_found_after_normalisation():
    ctx = ["El plazo es de 30 días.\nEl coste “corre” a cargo del cliente."]
    assert quote_in_context("el coste \"corre\"   a cargo", ctx)
    assert quote_in_context("PLAZO ES DE 30 DÍAS", ctx)


def test_quote_not_found():
    ctx = ["El plazo es de 30 días.", "El coste corre a cargo del cliente."]
    assert not quote_in_context("El plazo es de 31 días", ctx)
    assert not quote_in_context("30 días. El coste", ctx)  # spans two chunks
    assert not quote_in_context("El plazo ... 30 días", ctx)  # stitched with an ellipsis
    assert not quote_in_context("El plazo es de 30 dias", ctx)  # accent differs


def test_empty_quote_or_contexts_is_false():
    assert not quote_in_context("", ["anything"])
    assert not quote_in_context("   ", ["anything"])
    assert not quote_in_context(None, ["anything"])
    assert not quote_in_context("x", [])
    assert not quote_in_context("x", [None, ""])
