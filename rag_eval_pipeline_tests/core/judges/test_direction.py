"""Opposite directions are contradictions (core/judges/direction.py, rule_based.py ``_row``): a claim
that says "lower" / "decreased" / "disminuyó" where its sentence says "higher" / "increased" /
"aumentó" about the same thing is not support, whatever the word similarity of the two words, and a
direction swapped *inside* one sentence ("decreased A but increased B" read as "decreased B") is
caught. Cases written before the rule was implemented; expected verdicts worked out by hand."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.direction import direction_flip
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge()


@pytest.mark.parametrize("ctx, claim", [
    # comparative swapped: every other word and the number are there (word recall 1 without "lower")
    ("The incidence of dementia was higher in the 10/66 group than in the DSM-IV group.",
     "The incidence of dementia was lower in the 10/66 group than in the DSM-IV group."),
    # change verb swapped, Spanish: "aumentó" / "disminuyó", the rest identical
    ("El consumo de agua aumentó un 5 % en 2023.", "El consumo de agua disminuyó un 5 % en 2023."),
    # a swap inside one sentence: the sentence does say "decreased", but of vomiting; what it says of
    # bleeding is "increased" (the direction word right before "risk of bleeding")
    ("Dexamethasone decreased the risk of vomiting but increased the risk of bleeding.",
     "Dexamethasone decreased the risk of bleeding."),
])
def test_opposite_direction_is_contradicted(judge, ctx, claim):
    r = judge.judge("", claim, [ctx])
    assert [c.verdict for c in r.claims] == ["CONTRADICTED"], r.claims


def test_the_right_direction_inside_the_same_sentence_is_supported(judge):
    # "increased the risk of bleeding" is in the sentence word for word: every claim token is there,
    # the direction word next to "risk of bleeding" is "increased" -> SUPPORTED
    r = judge.judge("", "Dexamethasone increased the risk of bleeding.",
                    ["Dexamethasone decreased the risk of vomiting but increased the risk of bleeding."])
    assert [c.verdict for c in r.claims] == ["SUPPORTED"]


@pytest.mark.parametrize("ctx, claim", [
    # same direction, other word: not a contradiction
    ("Prices rose by 5 percent in 2023.", "Prices increased by 5 percent in 2023."),
    # "more effective" and "reducing pain" speak of different things: the words after "more" are not
    # those after "reducing", and the shared word before them ("exercises") is one of three
    ("A specific exercise programme is effective in reducing pain.",
     "Rotator cuff exercises are more effective than general exercise in reducing pain."),
    # a negated opposite says the same: "reduced" means it "did not increase"
    ("The treatment reduced mortality.", "The treatment did not increase mortality."),
])
def test_same_direction_is_not_contradicted(judge, ctx, claim):
    r = judge.judge("", claim, [ctx])
    assert [c.verdict for c in r.claims] != ["CONTRADICTED"], r.claims


def test_direction_flip_by_hand():
    # claim direction "lower" (down); the sentence's only direction word "higher" (up): a flip
    assert direction_flip("Costs were lower in 2020.", "Costs were higher in 2020.", "english") is not None
    # no direction word in the claim: nothing to flip
    assert direction_flip("Costs were 5 euros.", "Costs were higher.", "english") is None
    # both directions in the sentence; "decreased" sits right before the claim's "risk of vomiting"
    assert direction_flip("It decreased the risk of vomiting.",
                          "It decreased the risk of vomiting but increased the risk of bleeding.",
                          "english") is None
