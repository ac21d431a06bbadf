"""Regression cases kept across runs: each run's status is oriented by the metric's direction."""

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.gates import regression_case_status


def _cases(rows):
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "metric": pl.Utf8, "k": pl.Int32, "question_id": pl.Utf8,
                                      "value_when_found": pl.Float64, "current_value": pl.Float64}, orient="row")


def test_the_status_follows_the_metrics_direction():
    # recall (higher is better): found at 0.25; now 0.25 -> still regressed, now 1.0 -> recovered.
    # false_abstention_rate (lower is better): found at 1.0 (it abstained); now 0.0 -> recovered (it used to
    # read still_regressed, 0.0 < 1.0), now 1.0 -> still regressed. run_error_rate (lower is better) found at
    # 0.0 and now 1.0 is worse: it used to read recovered (1.0 > 0.0); it is still regressed. No value: no_value_now.
    cases = _cases([
        ("s", "recall", 5, "q1", 0.25, 0.25),
        ("s", "recall", 5, "q2", 0.25, 1.0),
        ("s", "false_abstention_rate", None, "q3", 1.0, 0.0),
        ("s", "false_abstention_rate", None, "q4", 1.0, 1.0),
        ("s", "run_error_rate", None, "q5", 0.0, 1.0),
        ("s", "recall", 5, "q6", 0.25, None),
    ])
    got = regression_case_status(cases)
    assert got["status"].to_list() == ["still_regressed", "recovered", "recovered", "still_regressed",
                                       "still_regressed", "no_value_now"]


def test_the_declared_schema_has_no_column_nobody_writes():
    # baseline_value was declared but never written (always null): it is no longer part of the schema
    assert "baseline_value" not in tables.SCHEMAS["regression_cases"]


def test_a_version_1_file_with_baseline_value_is_read_without_it(tmp_path):
    from rag_eval_pipeline.core.storage import read_table

    path = tmp_path / "regression_cases.parquet"
    pl.DataFrame([{"system": "s", "metric": "recall", "k": 5, "question_id": "q1", "baseline_value": None,
                   "value_when_found": 0.25, "first_seen_run": "r1", "first_seen_at": "2026-11-30T00:00:00+00:00",
                   "current_value": 0.25, "status": "still_regressed"}],
                 schema_overrides={"k": pl.Int32, "baseline_value": pl.Float64}).write_parquet(path)
    messages = []
    df = read_table(path, "regression_cases", on_migrate=messages.append)
    assert df.columns == list(tables.SCHEMAS["regression_cases"]) and df["value_when_found"].to_list() == [0.25]
    # version 1 -> 2 drops baseline_value; 2 -> 3 adds level (nullable: null by itself)
    assert "migrated on read (1->2: drop_baseline_value; added as null: ['level'])" in messages[0]
