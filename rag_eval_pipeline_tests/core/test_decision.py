"""The run's decision (verdict, promotion) and the calibration check's state, on hand-made gate rows."""

import polars as pl
import pytest

from rag_eval_pipeline.core.metrics.calibration_status import calibration_status
from rag_eval_pipeline.core.report.decision import decide, decision_blocks, judge_errors_by_system
from rag_eval_pipeline.core.report.markdown import render_markdown


def gate(system="cand", metric="recall", k=5, status="pass", blocking=True, passed=None, reason="r"):
    return {"system": system, "metric": metric, "k": k, "status": status, "reason": reason, "blocking": blocking,
            "passed": (status in ("pass", "within_noise", "unchanged_since_promotion")) if passed is None else passed}


def calib_table(kappa=0.5, n=30, stale=False, missing=False):
    return pl.DataFrame([{"level": "response", "judge": "j", "judge_model": "m", "prompt_sha256": "p" * 64,
                          "kappa": kappa, "n": n, "stale": stale, "missing": missing, "kappa_reason": None,
                          "calibrated_judge": "j", "calibrated_judge_model": "old", "calibrated_prompt_sha256": "q"}])


OK = calibration_status(calib_table(), configured=True, kappa_floor=0.4, gated_metrics=["recall_5"])


def run(gates, calibration=OK, **kw):
    args = dict(split="test", split_questions=26, baseline="base", promote="cand", systems=["cand", "base"])
    return decide(gates, calibration, **(args | kw))


# --------------------------------------------------------------------------------- calibration status

def test_passed_only_when_current_and_above_the_floor():
    assert OK.passed and OK.state == "passed" and not OK.blocks
    assert OK.figures() == "κ 0.500 ≥ floor 0.4 (n 30, response level)"
    below = calibration_status(calib_table(0.3), configured=True, kappa_floor=0.4, gated_metrics=["faithfulness"])
    assert not below.passed and below.state == "below_floor" and below.blocks
    assert below.figures() == "κ 0.300 below floor 0.4 (n 30, response level)"


@pytest.mark.parametrize("kw, state", [({"stale": True}, "stale"), ({"missing": True, "kappa": None}, "missing"),
                                       ({"kappa": None}, "kappa_null")])
def test_missing_or_stale_never_passes(kw, state):
    # no judge-based gate: a warning, never "passed"
    st = calibration_status(calib_table(**kw), configured=True, kappa_floor=0.4, gated_metrics=["recall_5"])
    assert not st.passed and st.state == state and not st.blocks and st.severity == "warning"
    assert "A warning only" in st.reason
    # a gate on a judge-based metric: the same state blocks
    st = calibration_status(calib_table(**kw), configured=True, kappa_floor=0.4,
                            gated_metrics=["recall_5", "faithfulness"])
    assert st.blocks and st.severity == "error" and st.judge_based_gates == ["faithfulness"]


def test_no_calibration_section_is_not_passed():
    st = calibration_status(calib_table(missing=True, kappa=None), configured=False, kappa_floor=0.4,
                            gated_metrics=[])
    assert st.state == "not_configured" and not st.passed and not st.blocks
    assert st.line().startswith("not configured: the configuration has no calibration section; κ null")


def test_the_worst_key_decides_and_the_lowest_kappa_is_reported():
    two = pl.concat([calib_table(0.8, 40), calib_table(0.45, 20, stale=True)])
    st = calibration_status(two, configured=True, kappa_floor=0.4, gated_metrics=[])
    assert st.state == "stale" and st.kappa == 0.45 and st.n == 20


# --------------------------------------------------------------------------------- verdicts

def test_pass():
    d = run([gate(), gate(metric="ndcg_cut", k=10)])
    assert d.verdict == "pass" and d.blocking_failures == [] and d.promotion_action == "promote"
    assert d.promotion.startswith("promotes cand as the baseline")


def test_a_regression_fails_and_blocks_promotion():
    d = run([gate(), gate(status="regression", reason="drop 0.2 > allowed 0.05 (p = 0.0100)", passed=False)])
    assert d.verdict == "fail" and d.promotion_action == "blocked"
    assert d.blocking_failures == ["gate cand/recall_5 (split test): regression: drop 0.2 > allowed 0.05 (p = 0.0100)"]


def test_an_inconclusive_blocking_gate_is_inconclusive_and_still_blocks():
    d = run([gate(status="inconclusive", passed=False, reason="p = 0.3")])
    assert d.verdict == "inconclusive" and d.promotion_action == "blocked" and len(d.blocking_failures) == 1


def test_inconclusive_passing_gate_when_block_inconclusive_is_off():
    d = run([gate(status="inconclusive", passed=True)])
    assert d.verdict == "inconclusive" and d.promotion_action == "promote" and d.warnings


def test_a_non_blocking_failure_is_a_warning():
    d = run([gate(), gate(metric="map", k=None, status="regression", blocking=False, passed=False)])
    assert d.verdict == "pass" and d.blocking_failures == []
    assert d.warnings == ["gate cand/map (split test): regression: r (not blocking)"]


def test_no_gate_and_nothing_compared_are_inconclusive():
    assert run([]).verdict == "inconclusive"
    d = run([gate(status="unchanged_since_promotion")])
    assert d.verdict == "inconclusive" and d.promotion_action == "keep"


def test_a_blocking_calibration_failure_fails_the_run():
    bad = calibration_status(calib_table(0.2), configured=True, kappa_floor=0.4, gated_metrics=["faithfulness"])
    d = run([gate(metric="faithfulness", k=None)], bad)
    assert d.verdict == "fail" and d.promotion_action == "blocked"
    assert d.blocking_failures[0].startswith("judge calibration: ")
    warn = calibration_status(calib_table(0.2), configured=True, kappa_floor=0.4, gated_metrics=["recall_5"])
    d = run([gate()], warn)
    assert d.verdict == "pass" and d.promotion_action == "promote" and d.warnings[0].startswith("judge calibration")


def test_version_mismatch_line():
    d = run([gate(metric="versions", k=None, status="version_mismatch", passed=False, reason="cand: golden differs")])
    assert d.verdict == "fail" and d.blocking_failures == ["gate cand: version mismatch: cand: golden differs"]


def test_promotion_lines():
    assert run([gate()], quick=True).promotion == "none: the quick evaluation never promotes"
    assert run([gate()], promote=None).promotion_action == "none"
    assert run([gate()], promote="ghost").promotion_action == "blocked"


def test_judge_errors_and_the_rendered_first_lines():
    labels = pl.DataFrame({"system": ["a", "a", "a", "b"],
                           "verdict": ["SUPPORTED", "JUDGE_ERROR", "NOT_MENTIONED", "SUPPORTED"]})
    errors = judge_errors_by_system(labels)
    assert [(j.system, j.errors, j.labels) for j in errors] == [("a", 1, 3), ("b", 0, 1)]
    d = run([gate()], judge_errors=errors)
    assert d.judge_errors_line() == "1 of 4 claim labels (a 1/3, b 0/1)"
    md = render_markdown(decision_blocks(d)).splitlines()
    assert md[0] == "## Decision"
    assert md[2].startswith("Verdict: PASS — ") and md[4].startswith("Promotion: promotes cand")
    assert "| judge errors | 1 of 4 claim labels (a 1/3, b 0/1) |" in md
