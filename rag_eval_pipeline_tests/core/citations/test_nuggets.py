"""Nugget recall (AutoNuggetizer scores) against hand-worked values, with the null rules."""

import pytest

from rag_eval_pipeline.core.completeness import judge_nuggets, omitted_nuggets
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.metrics.nuggets import NUGGET_METRICS, nugget_question_metrics, nugget_scores
from rag_eval_pipeline_tests.core.citations.helpers import ScriptedJudge, golden, run, runs

NUGGETS = [
    {"claim_id": "c1", "text": "The period is 30 calendar days.", "supporting": ["r#0"], "importance": "vital"},
    {"claim_id": "c2", "text": "It counts from delivery.", "supporting": ["r#0"], "importance": "vital"},
    {"claim_id": "c3", "text": "If the order arrived in several parcels, it counts from the last one.",
     "supporting": ["r#0"], "importance": "okay"},
]
ANSWER = "You have 30 calendar days from delivery [1]."


def values(scores):
    return {m: (None if s[2] != "ok" else s[0] / s[1]) for m, s in scores.items()}


def test_the_worked_example_of_the_issue():
    """Strict vital 2/2 = 1.0, strict all 2/3, weighted (1 + 1 + 0) / (1 + 1 + 0.5) = 0.8."""
    v = values(nugget_scores([("vital", "SUPPORTED"), ("vital", "SUPPORTED"), ("okay", "NOT_SUPPORTED")]))
    assert v["nugget_recall_strict_vital"] == 1.0
    assert v["nugget_recall_strict_all"] == pytest.approx(2 / 3)
    assert v["nugget_recall_weighted"] == pytest.approx(0.8)
    assert v["nugget_recall_vital"] == 1.0 and v["nugget_recall_all"] == pytest.approx(2 / 3)


def test_partial_counts_half_except_in_the_strict_scores():
    # vital PARTIAL, vital SUPPORTED, okay PARTIAL: strict vital 1/2, strict all 1/3, vital (0.5 + 1) / 2 = 0.75,
    # all (0.5 + 1 + 0.5) / 3 = 2/3, weighted (0.5 + 1 + 0.5 * 0.5) / 2.5 = 0.7
    v = values(nugget_scores([("vital", "PARTIAL"), ("vital", "SUPPORTED"), ("okay", "PARTIAL")]))
    assert v == {"nugget_recall_strict_vital": 0.5, "nugget_recall_strict_all": pytest.approx(1 / 3),
                 "nugget_recall_vital": 0.75, "nugget_recall_all": pytest.approx(2 / 3),
                 "nugget_recall_weighted": pytest.approx(0.7)}


def test_empty_denominators_are_null():
    s = nugget_scores([("okay", "SUPPORTED")])  # no vital nugget: the vital scores are not evaluable
    assert s["nugget_recall_strict_vital"] == (None, None, "no_vital_nuggets")
    assert s["nugget_recall_vital"] == (None, None, "no_vital_nuggets")
    assert s["nugget_recall_weighted"] == (0.5, 0.5, "ok")
    s = nugget_scores([("vital", "JUDGE_ERROR")])  # every verdict failed: null, a judge error
    assert all(x == (None, None, "judge_error") for x in s.values())
    assert nugget_scores([(None, "SUPPORTED")])["nugget_recall_strict_vital"] == (1, 1, "ok")  # null = vital


def test_through_the_judge_interface_with_quotes_checked_in_the_answer():
    script = {(NUGGETS[0]["text"], frozenset({"answer"})): "SUPPORTED",
              (NUGGETS[1]["text"], frozenset({"answer"})): "SUPPORTED"}
    gold = golden({"question_id": "q1", "claims": NUGGETS}, {"question_id": "absent"},
                  {"question_id": "q3", "claims": NUGGETS})
    rag = runs(run("q1", ANSWER, ["r#0"]), run("absent", "No lo sé.", decision="abstain"),
               run("q3", "No encuentro esa información en la documentación.", ["r#0"]),
               run("q1", "Lo siento.", decision="clarify", system="t"))
    judge = ScriptedJudge(script)
    labels = judge_nuggets(rag, gold, judge)
    # one request per answered run of a question with claims, judged against the answer without its marker
    assert [(r.question_id, r.passages) for r in judge.requests] == \
        [("q1", ("You have 30 calendar days from delivery.",))]
    assert labels["verdict"].to_list() == ["SUPPORTED", "SUPPORTED", "NOT_SUPPORTED"]
    assert labels["quote_found"].to_list() == [True, True, False] and set(labels["prompt_sha256"]) == {"n" * 64}
    qm = {(r["system"], r["question_id"], r["metric"]): r for r in nugget_question_metrics(rag, gold, labels).iter_rows(
        named=True)}
    assert qm[("s", "q1", "nugget_recall_strict_vital")]["value"] == 1.0
    assert qm[("s", "q1", "nugget_recall_weighted")]["value"] == pytest.approx(0.8)
    assert (qm[("s", "q1", "nugget_recall_weighted")]["numerator"],
            qm[("s", "q1", "nugget_recall_weighted")]["denominator"]) == (2.0, 2.5)
    for metric in NUGGET_METRICS:  # never 0 for what cannot be scored
        assert (qm[("s", "absent", metric)]["value"], qm[("s", "absent", metric)]["status"]) == (None, "no_nuggets")
        assert qm[("s", "q3", metric)]["status"] == "abstention_text_in_answer"
        assert qm[("t", "q1", metric)]["status"] == "clarify"
    omitted = omitted_nuggets(labels)
    assert omitted.select("question_id", "nugget_id", "importance").rows() == [("q1", "c3", "okay")]


def test_a_support_verdict_whose_quote_is_not_in_the_answer_is_not_support():
    gold = golden({"question_id": "q1", "claims": NUGGETS[:1]})
    labels = judge_nuggets(runs(run("q1", ANSWER, ["r#0"])), gold,
                           ScriptedJudge({(NUGGETS[0]["text"], frozenset({"answer"})): "SUPPORTED"}, bad_quote=True))
    assert labels["verdict"].to_list() == ["NOT_SUPPORTED"] and labels["quote_found"].to_list() == [False]


def test_the_embedded_judge_on_the_worked_example():
    """The embedded judge through the same interface: the okay nugget, which the answer does not state,
    is NOT_SUPPORTED; whatever it supports (fully or in part) is quoted from the answer. (Measured here:
    nugget 1, sharing 3 of its 4 content words and the number, is PARTIAL; nugget 2, 1 of 2, is not.)"""
    labels = judge_nuggets(runs(run("q1", ANSWER, ["r#0"])), golden({"question_id": "q1", "claims": NUGGETS}),
                           RuleBasedJudge())
    assert labels["verdict"][2] == "NOT_SUPPORTED"
    assert all(found for v, found in zip(labels["verdict"], labels["quote_found"]) if v in ("SUPPORTED", "PARTIAL"))
