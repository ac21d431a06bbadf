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


def test_the_worst_key_decides_and_the_lowest_current_kappa_is_reported():
    # The stale row's κ 0.45 was measured for another judge/model/prompt (j/old/q): it is not this judge's κ.
    # (This test used to expect κ 0.45 and n 20 here, reporting the stale κ as the current one.)
    # The lowest current κ is therefore the current row's 0.8 (n 40); the stale κ appears only labelled.
    two = pl.concat([calib_table(0.8, 40), calib_table(0.45, 20, stale=True)])
    st = calibration_status(two, configured=True, kappa_floor=0.4, gated_metrics=[])
    assert st.state == "stale" and st.kappa == 0.8 and st.n == 40
    assert st.stale == ["κ 0.450 (n 20) made for j/old/q"]


def test_a_stale_kappa_is_never_reported_as_the_current_one():
    # only a stale calibration (κ 0.8 made for j/old/q): there is no current κ, whatever the stale one says
    st = calibration_status(calib_table(0.8, 40, stale=True), configured=True, kappa_floor=0.4,
                            gated_metrics=["faithfulness"])
    assert st.state == "stale" and st.blocks and st.kappa is None and st.n is None
    assert st.figures() == "κ null (floor 0.4); stale κ 0.800 (n 40) made for j/old/q"
    assert st.line() == ("stale: calibrated for another judge, model or prompt; κ null (floor 0.4); "
                         "stale κ 0.800 (n 40) made for j/old/q; blocks promotion (gates on faithfulness)")
    assert "κ 0.800 ≥ floor" not in st.line()
    d = run([gate(metric="faithfulness", k=None)], st)
    assert d.calibration_line() == ("FAILED (blocks promotion): calibrated for another judge, model or prompt; "
                                    "κ null (floor 0.4); stale κ 0.800 (n 40) made for j/old/q")
    assert d.blocking_failures == [
        "judge calibration: response j/m/pppppppppppp: stale: the calibration in force (κ 0.800 (n 40) made for "
        "j/old/q) was made for another judge, model or prompt; recalibrate after a judge, model or prompt change"]


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
    # PASS means "no blocking failure"; the one-line reason must not say "every gate passed" when one did not
    # (this test used to accept the verdict without reading its reason, which said "every gate passed").
    d = run([gate(), gate(metric="map", k=None, status="regression", blocking=False, passed=False)])
    assert d.verdict == "pass" and d.blocking_failures == []
    assert d.warnings == ["gate cand/map (split test): regression: r (not blocking)"]
    assert d.why == ("no blocking failure on split test (2 gate(s)); 1 non-blocking gate(s) failed: "
                     "cand/map (regression)")
    assert "every gate passed" not in d.why


def test_every_gate_passed_is_said_only_when_every_gate_passed():
    d = run([gate(), gate(metric="ndcg_cut", k=10, status="within_noise")])
    assert d.verdict == "pass" and d.why == "every gate passed on split test (2 gate(s))"


def test_gates_unchanged_since_promotion_are_counted_apart_not_said_to_have_passed():
    # a second run of the sample: the candidate's 5 gates compare it with the baseline system (pass), the 5 gates
    # of the promoted system itself compare nothing. Before the fix: "every gate passed on split test (10 gate(s))"
    rows = ([gate(metric=m, k=None) for m in "abcde"]
            + [gate(system="base", metric=m, k=None, status="unchanged_since_promotion") for m in "abcde"])
    d = run(rows)
    assert d.verdict == "pass"
    assert d.why == "5 gate(s) passed, 5 unchanged since promotion (nothing to compare) on split test (10 gate(s))"
    md = render_markdown(decision_blocks(d))  # the report's verdict line is the same sentence
    assert f"Verdict: PASS — {d.why}." in md and "every gate passed" not in md
    # with a non-blocking failure too: both said
    d = run(rows + [gate(metric="map", k=None, status="regression", blocking=False, passed=False)])
    assert d.why == ("no blocking failure on split test (11 gate(s), 5 unchanged since promotion (nothing to "
                     "compare)); 1 non-blocking gate(s) failed: cand/map (regression)")


def test_no_gate_and_nothing_compared_are_inconclusive():
    assert run([]).verdict == "inconclusive"
    d = run([gate(status="unchanged_since_promotion")], unchanged=True)
    assert d.verdict == "inconclusive" and d.promotion_action == "keep"


def test_with_no_gate_the_candidate_is_promoted_and_the_line_says_nothing_checked_it():
    # decided: "no gate" promotes (nothing blocks it), and the decision says so rather than "no blocking failure"
    d = run([])
    assert d.verdict == "inconclusive" and d.promotion_action == "promote"
    assert d.promotion == ("promotes cand as the baseline: no gate is configured, so nothing checked it (the "
                           "promotion step, which runs after this report, writes it)")


RUN_ERRORS = "system cand: 1 of 7 runs errored (share 0.143 > gates.max_run_error_share 0.1): HTTP 500 \u00d7 1"


@pytest.mark.parametrize("gates", [[], [gate()]])
def test_a_failed_run_error_check_fails_the_decision_and_blocks_promotion(gates):
    # the run_errors_within_share check failed (1/7 = 0.143 > 0.10): whatever the gates say (none, or all passed),
    # the decision is FAIL and the candidate is blocked, the check named with its reason; before, the decision
    # did not know the check and said "promote" (the CLI added the failure on the side)
    d = run(gates, thresholds=1, failed_checks={"run_errors_within_share": [RUN_ERRORS]})
    assert d.verdict == "fail" and d.why == "1 blocking failure(s)"
    assert d.blocking_failures == [f"check run_errors_within_share: {RUN_ERRORS}"]
    assert d.promotion_action == "blocked"
    assert d.promotion == "not promoted: 1 blocking failure(s) stop cand; the stored baseline (none yet) stays"
    md = render_markdown(decision_blocks(d))
    assert "Verdict: FAIL" in md and "check run_errors_within_share" in md and "Promotion: promotes" not in md
    assert "no gate configured" not in md


def test_a_passed_check_changes_nothing():
    assert run([gate()], failed_checks={"run_errors_within_share": []}) == run([gate()])


def test_thresholds_configured_but_none_evaluated_is_not_no_gate_configured():
    # a first run with one drop threshold and no baseline: gate_results has no row, but a gate is configured
    d = run([], thresholds=2)
    assert d.verdict == "inconclusive" and "no gate configured" not in d.why
    assert d.why.startswith("no gate evaluated: 2 threshold(s) configured, none could be compared in this run")
    assert d.promotion == ("promotes cand as the baseline: no gate was evaluated (a drop threshold needs a baseline), "
                           "so nothing checked it (the promotion step, which runs after this report, writes it)")
    assert run([], thresholds=0).why == "no gate configured: nothing decides whether a change is safe"


def test_keep_is_decided_from_the_manifests_not_from_gate_rows():
    # no gate row at all, but the candidate's configuration is the stored baseline's: the promotion step keeps it
    # (this used to read "promotes cand", inferred from gate rows only)
    d = run([], unchanged=True)
    assert d.promotion_action == "keep"
    assert d.promotion == ("kept: cand is already the promoted baseline (same configuration and versions); "
                           "nothing is written")


def test_unchanged_since_promotion_compares_the_run_manifest_with_the_stored_one():
    from rag_eval_pipeline.core.gates import unchanged_since_promotion

    runs = pl.DataFrame([{"system": "cand", "corpus_version": "c1", "retriever": "r", "generator": "g", "model": "m",
                          "prompt_version": "p1", "system_version": None}])
    golden = pl.DataFrame({"golden_version": ["g1"]})
    stored = {"system": "cand", "corpus_version": "c1", "golden_version": "g1", "retriever": "r", "generator": "g",
              "model": "m", "prompt_version": "p1", "system_version": None, "promoted_at": "2026-11-30T00:00:00+00:00"}
    assert unchanged_since_promotion(runs, golden, "cand", stored)
    assert not unchanged_since_promotion(runs, golden, "cand", stored | {"prompt_version": "p0"})
    assert not unchanged_since_promotion(runs, golden, "cand", None)
    assert not unchanged_since_promotion(runs, golden, None, stored)


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


def test_decision_json_names_the_candidate_and_says_promote_only_for_a_promotion():
    """A blocked run's decision.json used to carry ``"promote": "cand"`` beside ``"promotion_action": "blocked"``:
    now ``candidate`` is the configured candidate, and ``promote`` appears only when the action is promote."""
    blocked = run([gate(status="regression", passed=False)]).to_dict()
    assert blocked["promotion_action"] == "blocked" and blocked["candidate"] == "cand" and "promote" not in blocked
    kept = run([gate(status="unchanged_since_promotion")], unchanged=True).to_dict()
    assert kept["promotion_action"] == "keep" and kept["candidate"] == "cand" and "promote" not in kept
    promoted = run([gate()]).to_dict()
    assert promoted["promotion_action"] == "promote" and promoted["promote"] == promoted["candidate"] == "cand"
    none = run([gate()], promote=None).to_dict()
    assert none["promotion_action"] == "none" and none["candidate"] is None and "promote" not in none
