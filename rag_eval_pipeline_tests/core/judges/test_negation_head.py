"""A negation contradicts only what it denies (core/judges/tokens.py ``negation_heads``,
evidence.py ``evidence``): the first content word of a negation scope must be stated by the other
side, or be a direction word. Expected verdicts worked out by hand from the rule."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.evidence import decide, evidence
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judges.tokens import tokens


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge(semantic=False)


def test_the_head_is_the_first_content_word_of_each_scope():
    # "no" opens a scope; "benefit" is its first content word (Snowball stem "benefit")
    assert tokens("Charcoal shows no benefit for acute paraquat poisoning.").negation_heads == {"benefit"}
    # "does" is a stopword, so the head of "not" is "refund"; Spanish "no cubre" -> "cubr"
    assert tokens("Lumo does not refund duties.").negation_heads == {"refund"}
    assert tokens("El plan no cubre el dentista.", "spanish").negation_heads == {"cubr"}
    # "No," closes its scope at the comma: nothing is denied
    assert tokens("No, the store is closed.").negation_heads == frozenset()


def test_a_denial_of_what_the_sentence_does_not_speak_of_is_no_contradiction():
    # claim negated on "benefit"; the sentence states charcoal, paraquat, poisoning but not benefit:
    # the sides do not disagree (no flip); the same sentence with "benefit" does disagree
    claim = tokens("Charcoal shows no benefit for paraquat poisoning.")
    other = tokens("Charcoal was given in paraquat poisoning.")
    assert evidence(claim, other).negation_flipped == frozenset()
    assert evidence(claim, other).negation_unanchored  # ... and no support either
    stated = tokens("Charcoal shows a benefit for paraquat poisoning.")
    assert evidence(claim, stated).negation_flipped  # head "benefit" stated: a flip
    assert not evidence(claim, stated).negation_unanchored
    # lexical 4/5 with "benefit" missing: before rule version 6 a flip (CONTRADICTED); now neither
    # a flip nor support, whatever the parameters
    ev = evidence(claim, tokens("Charcoal shows effects in paraquat poisoning."))
    assert ev.negation_flipped == frozenset() and ev.negation_unanchored
    params = {"support_lexical": 0.1, "lexical_floor": 0.1, "support_semantic": 0.0, "word_counterpart": 1.01}
    assert decide(ev, params) == "NOT_MENTIONED"
    # the sentence's side: "No association ... between diet and cancer" denies "association", which
    # the claim does not state
    denial = tokens("No association was found between the diet and cancer rates.")
    assert evidence(tokens("The diet raises cancer rates."), denial).negation_flipped == frozenset()


def test_verdicts(judge):
    # every claim word is in the sentence and only the negation differs: CONTRADICTED, as before
    r = judge.judge("", "Charcoal shows no benefit for paraquat poisoning.",
                    ["Charcoal shows a benefit for paraquat poisoning."])
    assert [c.verdict for c in r.claims] == ["CONTRADICTED"]
    # the sentence says nothing of a benefit: not a contradiction (NOT_MENTIONED: "benefit", "show"
    # are not stated)
    r = judge.judge("", "Charcoal shows no benefit for paraquat poisoning.",
                    ["Charcoal was given in paraquat poisoning."])
    assert [c.verdict for c in r.claims] == ["NOT_MENTIONED"]
    # a negated direction word still meets the direction rule: "did not increase" / "reduced" agree
    r = judge.judge("", "The treatment did not increase mortality.", ["The treatment reduced mortality."])
    assert [c.verdict for c in r.claims] != ["CONTRADICTED"]
    # and "does not increase" against "increases" is a contradiction (head "increas" stated)
    r = judge.judge("", "The diet does not increase cancer rates.", ["The diet increases cancer rates."])
    assert [c.verdict for c in r.claims] == ["CONTRADICTED"]


@pytest.mark.parametrize(("claim", "context", "verdict"), [
    # by hand: an aim or an embedded question states neither "leads" nor "does not lead", so a
    # negated claim is neither contradicted nor supported by it (rule version 7: CONTRADICTED)
    ("Screening does not lead to improvements in vision.",
     "To assess whether screening leads to improvements in vision.", "NOT_MENTIONED"),
    ("Screening does not lead to improvements in vision.",
     "OBJECTIVE To evaluate whether screening leads to improvements in vision.", "NOT_MENTIONED"),
    # the same claim against a statement is contradicted
    ("Screening does not lead to improvements in vision.", "Screening leads to improvements in vision.",
     "CONTRADICTED"),
])
def test_an_open_question_takes_no_side(judge, claim, context, verdict):
    assert [c.verdict for c in judge.judge("", claim, [context]).claims] == [verdict]


def test_open_question_by_structure():
    from rag_eval_pipeline.core.judges.rule_context import open_question

    assert open_question("To assess whether screening helps.")
    assert open_question("AIM: To compare two doses.")
    assert open_question("We asked whether the dose matters.")
    assert not open_question("Screening leads to improvements.")
    assert not open_question("The drug was given to patients.")  # "to" inside a sentence is no aim
