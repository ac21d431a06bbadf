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


def test_numbers_inside_names():
    # every number of a hyphenated word that starts with a letter is the name's ("miR-142-5P": 142
    # and the 5 of "5P"); a one-to-three-digit number after an acronym too ("BRCA 1"); a year after
    # an acronym stays a year, and a range glued to its unit ("10-15mg") is no name
    assert number_kinds("miR-142-5P suppresses 12 genes.", "english") == {
        "142": frozenset({"name"}), "5": frozenset({"name"}), "12": frozenset({"gene"})}
    assert number_kinds("BRCA 1 carriers, WHO 2019.", "english") == {
        "1": frozenset({"name"}), "2019": frozenset({"year"})}
    assert number_kinds("Take 10-15mg.", "english") == {"10": frozenset({None}), "15": frozenset({"mg"})}


def test_a_name_number_is_no_contradiction(judge):
    # by hand: the claim's 1 (of "BRCA 1") and 142, 5 (of "miR-142-5P") name a gene and a microRNA;
    # the sentences' 52 and 40 count women and mice. The sentences do not state the names'
    # numbers, so no support; but no contradiction either (rule version 7: CONTRADICTED, the bare
    # "1" and the "5" read as quantities)
    got = judge.judge("", "Tumours were more frequent with BRCA 1.",
                      ["Tumours were more frequent with BRCA mutations in 52 women."]).claims
    assert [c.verdict for c in got] == ["NOT_MENTIONED"]
    got = judge.judge("", "Tumours were smaller with miR-142-5P.",
                      ["Tumours were smaller with the microRNA in 40 mice."]).claims
    assert [c.verdict for c in got] == ["NOT_MENTIONED"]
