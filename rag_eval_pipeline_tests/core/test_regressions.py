"""Regression tracking in the core (``core/regressions.py``): cases kept across runs and their state each run.

Values worked out by hand from the small tables below, not read from the code's output.
"""

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.regressions import REGRESSION_COLUMNS, failed_gates, track_regressions


def _qm(rows):
    return pl.DataFrame(rows, schema={"system": pl.String, "metric": pl.String, "k": pl.Int64,
                                      "question_id": pl.String, "value": pl.Float64}, orient="row")


def _gates(rows):
    return pl.DataFrame(rows, schema={"system": pl.String, "metric": pl.String, "k": pl.Int64,
                                      "regressed_questions": pl.List(pl.String), "blocking": pl.Boolean,
                                      "passed": pl.Boolean, "reason": pl.String}, orient="row")


def test_a_first_run_adds_each_regressed_question_once():
    qm = _qm([("cand", "recall", 5, "q1", 0.5), ("cand", "recall", 5, "q2", 0.0),
              ("cand", "faithfulness", None, "q3", 0.25)])
    gates = _gates([("cand", "recall", 5, ["q1", "q2"], True, False, "dropped"),
                    ("cand", "faithfulness", None, ["q3"], True, True, ""),
                    ("cand", "recall", 10, [], False, False, "floor")])
    cases, new = track_regressions(None, qm, gates, run_id="r1", now="2026-12-01T00:00:00+00:00")
    assert new == 3 and cases.height == 3
    rows = {r["question_id"]: r for r in cases.iter_rows(named=True)}
    # q1: found at 0.5, now 0.5 (not above) -> still regressed; q3 has k null and matches the null-k value
    assert rows["q1"]["value_when_found"] == 0.5 and rows["q1"]["status"] == "still_regressed"
    assert rows["q2"]["value_when_found"] == 0.0 and rows["q2"]["status"] == "still_regressed"
    assert rows["q3"]["k"] is None and rows["q3"]["value_when_found"] == 0.25
    assert {r["first_seen_run"] for r in rows.values()} == {"r1"}
    assert set(cases.columns) == set(tables.SCHEMAS["regression_cases"])
    # only the blocking rows that did not pass are failures (the non-blocking floor is not)
    assert failed_gates(gates) == ["cand/recall: dropped"]


def test_a_later_run_keeps_every_case_and_reports_its_state():
    previous = pl.DataFrame([
        {"system": "cand", "metric": "recall", "k": 5, "question_id": "q1",
         "value_when_found": 0.5, "first_seen_run": "r1", "first_seen_at": "t1"},
        {"system": "cand", "metric": "recall", "k": 5, "question_id": "q2",
         "value_when_found": 0.0, "first_seen_run": "r1", "first_seen_at": "t1"},
        {"system": "cand", "metric": "recall", "k": 5, "question_id": "q9",
         "value_when_found": 0.2, "first_seen_run": "r1", "first_seen_at": "t1"},
    ], schema=REGRESSION_COLUMNS)
    # now: q1 recovered (1.0 > 0.5), q2 still at 0.0, q9 has no value; q2 listed again is not added twice; q4 new
    qm = _qm([("cand", "recall", 5, "q1", 1.0), ("cand", "recall", 5, "q2", 0.0), ("cand", "recall", 5, "q4", 0.1)])
    gates = _gates([("cand", "recall", 5, ["q2", "q4"], True, False, "dropped")])
    cases, new = track_regressions(previous, qm, gates, run_id="r2", now="t2")
    assert new == 1
    status = dict(cases.select("question_id", "status").iter_rows())
    assert status == {"q1": "recovered", "q2": "still_regressed", "q9": "no_value_now", "q4": "still_regressed"}
    first = dict(cases.select("question_id", "first_seen_run").iter_rows())
    assert first == {"q1": "r1", "q2": "r1", "q9": "r1", "q4": "r2"}


def test_run_row_coverage_finds_missing_duplicate_and_stale_rows():
    from rag_eval_pipeline.core.corpus import corpus_version
    from rag_eval_pipeline.core.systems.runs import run_row_coverage

    snapshot = tables.empty("corpus_snapshot")  # its version is a hash; only equality with the rows' matters
    cv = corpus_version(snapshot)
    golden = pl.DataFrame({"question_id": ["q1", "q2", "q3"]})
    runs = pl.DataFrame({"system": ["a", "a", "a", "b", "b", "b"], "question_id": ["q1", "q2", "q3", "q1", "q1", "q3"],
                         "corpus_version": [cv, cv, "old", cv, cv, cv]})
    cov = run_row_coverage(["a", "b"], runs, golden, snapshot)
    # a: every question once, but q3 from corpus "old"; b: q2 missing, q1 twice
    assert cov.missing == {"b": ["q2"]} and cov.missing_count == {"b": 1}
    assert cov.duplicated == {"b": ["q1"]}
    assert cov.stale == [f"a: ['old'] != snapshot {cv}"]
    assert not cov.passed and cov.allowed == {}
    ok = run_row_coverage(["b"], runs.filter(pl.col("system") == "b").unique(), golden, snapshot, complete=True)
    assert ok.passed and ok.allowed == {"b": ["q2"]}  # trec_eval -c: a missing question is allowed


def test_a_lower_is_better_rate_recovers_when_it_falls():
    # run_error_rate: lower is better. q1 found at 1.0, now 0.0: recovered; q2 found at 0.0, now 1.0: still
    previous = pl.DataFrame([
        {"system": "cand", "metric": "run_error_rate", "k": None, "question_id": q, "value_when_found": v,
         "first_seen_run": "r1", "first_seen_at": "t1"} for q, v in (("q1", 1.0), ("q2", 0.0))],
        schema=REGRESSION_COLUMNS)
    qm = _qm([("cand", "run_error_rate", None, "q1", 0.0), ("cand", "run_error_rate", None, "q2", 1.0)])
    cases, new = track_regressions(previous, qm, _gates([]), run_id="r2", now="t2")
    assert new == 0
    assert dict(cases.select("question_id", "status").iter_rows()) == {"q1": "recovered", "q2": "still_regressed"}
