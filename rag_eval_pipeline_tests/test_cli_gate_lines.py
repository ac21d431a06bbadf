"""The CLI's gates and promotion lines on hand-made tables: what they count, what blocked promotion, and how to
add a gate when none is configured (the sample-run tests read the same lines from real runs)."""

import json
from types import SimpleNamespace

import polars as pl

from rag_eval_pipeline.cli.run_output import blocking_names, gate_lines, promotion_line
from rag_eval_pipeline.core.storage import write_parquet_atomic
from rag_eval_pipeline.core.tables import SCHEMAS


def _gates(tmp_path, rows):
    write_parquet_atomic(pl.DataFrame(rows, schema=SCHEMAS["gate_results"]), tmp_path / "gate_results.parquet",
                         "gate_results")


def _row(system, status, passed, blocking=True, metric="recall", k=5):
    return {"system": system, "metric": metric, "k": k, "status": status, "reason": "r", "blocking": blocking,
            "passed": passed, "wins": 0, "ties": 0, "losses": 0, "regressed_questions": []}


def test_no_gate_configured_says_how_to_add_one(tmp_path):
    _gates(tmp_path, [])
    lines = gate_lines(tmp_path, True, thresholds=0)
    assert lines[0] == "gates: no gate configured (gates.thresholds is empty)"
    assert lines[1].startswith("  add a gate: under gates.thresholds in the configuration, e.g. "
                               "`- {metric: recall_5, max_abs_drop: 0.05}`")
    # thresholds configured but none compared (no baseline yet): no "add a gate" advice
    assert len(gate_lines(tmp_path, True, thresholds=2)) == 1


def test_the_gates_line_counts_gates_apart_from_the_verdicts_failures(tmp_path):
    # 4 gates, 3 blocking ones failed (a 4th verdict failure would be a check): the line counts gates only
    _gates(tmp_path, [_row("a", "regression", False), _row("b", "below_floor", False), _row("c", "inconclusive", False),
                      _row("d", "pass", True, metric="map", k=None)])
    head = gate_lines(tmp_path, True, thresholds=4, listed=True)[0]
    assert head.startswith("gates: 4 gate(s), 3 of them failed blocking (the verdict's blocking failures also "
                           "count failed checks and steps;")


def test_a_blocked_promotion_names_what_blocked_it(tmp_path):
    _gates(tmp_path, [_row("team_rag", "below_floor", False), _row("team_rag", "pass", True, metric="map", k=None),
                      _row("team_rag", "regression", False, blocking=False, metric="ndcg_cut", k=10)])
    checks = [SimpleNamespace(classname="checks.s/gate_verdict", name="no_regression_against_baseline",
                              outcome="failed"),
              SimpleNamespace(classname="checks.s/judge_labels", name="judge_error_share", outcome="failed"),
              SimpleNamespace(classname="checks.s/rag_runs", name="every_question_has_a_run_row", outcome="passed")]
    names = blocking_names(tmp_path, True, checks, ["step golden_set failed: boom"])
    # the gate check is not named again (its failures are the gates); the non-blocking ndcg gate blocks nothing
    assert names == ["gate team_rag/recall_5 (below_floor)", "check s/judge_labels:judge_error_share",
                     "step golden_set failed"]
    no_promotion = SimpleNamespace(get_asset_materialization_events=lambda: [])
    decision = tmp_path / "decision.json"
    decision.write_text(json.dumps({"promotion_action": "blocked", "promotion": "not promoted: 1 blocking failure(s) "
                                    "stop team_rag; the stored baseline (bm25 promoted 2026-12-01) stays"}))
    assert promotion_line(no_promotion, "s", False, decision, names[:1]) == (
        "promotion: not promoted: 1 blocking failure(s) stop team_rag; the stored baseline (bm25 promoted "
        "2026-12-01) stays; blocked by gate team_rag/recall_5 (below_floor)")
    # no decision (the run stopped before its report): still names what blocked, and that the baseline stays
    assert promotion_line(no_promotion, "s", False, None, ["step golden_set failed"]) == (
        "promotion: not promoted (blocked by step golden_set failed; the stored baseline stays)")
    assert promotion_line(no_promotion, "s", False) == (
        "promotion: not promoted (a blocking check failed or a step failed; the stored baseline stays)")
