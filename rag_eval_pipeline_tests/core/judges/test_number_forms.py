"""Equal numbers written differently are the same number (core/judges/tokens.py canonical_number,
core/judges/numbers.py scale_numbers): trailing decimal zeros, Spanish and English separators,
scale words. Expected values worked out by hand in the comments."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.numbers import normalise_quantities, scale_numbers
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge


@pytest.mark.parametrize("text, want", [
    ("1.2 million", "1200000"),            # 1.2 x 10^6
    ("1,2 millones", "1200000"),           # Spanish decimal comma
    ("un millon de visitas", "1000000 de visitas"),
    ("2.5 thousand", "2500"),
    ("3 mil", "3000"),
    ("1.5 billion", "1500000000"),         # English short scale: 10^9
    ("3 mil millones", "3000000000"),      # Spanish "mil millones" = 10^9
    ("2 billones", "2000000000000"),       # Spanish long scale: billón = 10^12
    ("1.200 millones", "1200000000"),      # "1.200" groups thousands: 1200 x 10^6
    ("1.2.3 million", "1.2.3 million"),    # an identifier, not a number: unchanged
])
def test_scale_numbers_by_hand(text, want):
    assert scale_numbers(text) == want


@pytest.mark.parametrize("text, want", [
    ("dos millones", "2000000"),           # "dos" -> 2 first, then 2 x 10^6
    ("dos mil millones", "2000000000"),    # "dos mil" = 2000, x 10^6
    ("mil personas", "1000 personas"),     # "mil" alone is a number word
])
def test_scale_after_number_words(text, want):
    assert normalise_quantities(text) == want


@pytest.mark.parametrize("claim, context, verdict", [
    ("The ticket costs 2.50 euros.", "The ticket costs 2.5 euros.", "SUPPORTED"),
    ("La entrada cuesta 2,50 euros.", "La entrada cuesta 2.5 euros.", "SUPPORTED"),
    ("The city has 1,200,000 inhabitants.", "The city has 1.2 million inhabitants.", "SUPPORTED"),
    ("La ciudad tiene 1,2 millones de habitantes.", "La ciudad tiene 1.200.000 habitantes.", "SUPPORTED"),
    # a different number is still a conflict: 1,300,000 vs 1,200,000
    ("The city has 1,300,000 inhabitants.", "The city has 1.2 million inhabitants.", "CONTRADICTED"),
    ("The ticket costs 2.05 euros.", "The ticket costs 2.5 euros.", "CONTRADICTED"),
])
def test_equal_numbers_written_differently_are_supported(claim, context, verdict):
    r = RuleBasedJudge().judge("", claim, [context])
    assert [c.verdict for c in r.claims] == [verdict]
