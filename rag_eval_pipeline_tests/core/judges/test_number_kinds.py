"""Numbers conflict only with numbers of the same kind (core/judges/number_kinds.py): a year with a
year, a count of weeks with a count of weeks; a number inside a name ("kinesin-8") does not
contradict another name's number, and a year does not contradict the confidence interval of a
number-dense sentence. Cases written before the rule was implemented; verdicts worked out by hand."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.number_kinds import number_kinds
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge()


@pytest.mark.parametrize("ctx, claim", [
    # same kind, other value: 12 weeks / 52 weeks (both count "week")
    ("At 52 weeks, 30% of the patients stopped smoking.", "At 12 weeks, 30% of the patients stopped smoking."),
    # a year against a year
    ("The bridge opened in 1932.", "The bridge opened in 1928."),
    # a number counting the same thing: inhabitants
    ("The city has 3 million inhabitants.", "The city has 5 million inhabitants."),
])
def test_same_kind_other_value_is_contradicted(judge, ctx, claim):
    assert [c.verdict for c in judge.judge("", claim, [ctx]).claims] == ["CONTRADICTED"]


@pytest.mark.parametrize("ctx, claim", [
    # "kinesin-8 protein" / "kinesin-5 family": numbers of names, counting different words; the
    # claim's 8 is not in the sentence -> not SUPPORTED, and no conflict -> NOT_MENTIONED
    ("Kip3, a kinesin-5 family member, promotes spindle assembly.",
     "The kinesin-8 protein Kip3 promotes spindle assembly."),
    # numbers joined to a word by a hyphen are part of a name: IL-8 is not a count that IL-6
    # contradicts; the claim's 8 is missing -> NOT_MENTIONED
    ("Interleukin IL-6 levels rose in 30 patients.", "Interleukin IL-8 levels rose in 30 patients."),
    # a year (1979) against a sentence with no year, only counts of persons: NOT_MENTIONED
    ("Incidence of heart failure among women was 289 per 100 000 persons.",
     "Incidence of heart failure among women was stable since 1979."),
])
def test_other_kind_is_not_a_contradiction(judge, ctx, claim):
    assert [c.verdict for c in judge.judge("", claim, [ctx]).claims] == ["NOT_MENTIONED"]


def test_number_kinds_by_hand():
    # "12 weeks": 12 counts "week"; 1979 is a year; "3 million inhabitants": 3000000 counts "inhabit"
    assert number_kinds("At 12 weeks since 1979, 3 million inhabitants.", "english") == {
        "12": frozenset({"week"}), "1979": frozenset({"year"}), "3000000": frozenset({"inhabit"})}
    # a number at the end of a clause counts nothing: no kind (None)
    assert number_kinds("The total was 7.", "english") == {"7": frozenset({None})}
    # joined to a word by a hyphen, before or after: part of a name
    assert number_kinds("The A-769662 compound binds 3-kinase.", "english") == {
        "769662": frozenset({"name"}), "3": frozenset({"name"})}
