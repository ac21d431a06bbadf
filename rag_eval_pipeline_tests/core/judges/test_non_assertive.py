"""A context sentence that asks rather than states (a question, "whether ...") neither supports nor
contradicts a claim (core/judges/assertion.py, rule_based.py ``_row``). Cases written before the
rule was implemented; expected verdicts worked out by hand."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.assertion import asserts
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

OBJECTIVE = "OBJECTIVE To assess whether screening for impaired vision leads to improvements in vision."


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge()


@pytest.mark.parametrize("ctx, claim", [
    # the sentence asks whether screening helps: it says neither that it does nor that it does not
    (OBJECTIVE, "Screening for impaired vision does not lead to improvements in vision."),
    (OBJECTIVE, "Screening for impaired vision leads to improvements in vision."),
    ("Does coffee raise blood pressure?", "Coffee raises blood pressure."),
])
def test_a_question_states_nothing(judge, ctx, claim):
    assert [c.verdict for c in judge.judge("", claim, [ctx]).claims] == ["NOT_MENTIONED"]


def test_concessive_whether_still_states_its_main_clause(judge):
    # "whether or not they smoked" concedes: the sentence still states that mortality fell
    r = judge.judge("", "Mortality fell in all patients.",
                    ["Mortality fell in all patients, whether or not they smoked."])
    assert [c.verdict for c in r.claims] == ["SUPPORTED"]


def test_a_statement_still_contradicts(judge):
    r = judge.judge("", "Screening does not lead to improvements in vision.",
                    ["Screening leads to improvements in vision."])
    assert [c.verdict for c in r.claims] == ["CONTRADICTED"]


def test_asserts_by_hand():
    assert not asserts(OBJECTIVE)
    assert not asserts("¿Sube el precio en enero?")
    assert asserts("Mortality fell, regardless of whether patients smoked.")
    assert asserts("El precio sube en enero.")
