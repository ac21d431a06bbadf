"""Regression cases per level (``core/regressions.py``): a golden set judged per document (``relevant_docs``)
gates its retrieval metrics at document level, and those gates' regressed questions are cases of their own.

Values worked out by hand from the small tables below, not read from the code's output.
"""

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.regressions import track_regressions

_QM = {"system": pl.String, "metric": pl.String, "k": pl.Int64, "level": pl.String, "question_id": pl.String,
       "value": pl.Float64}
_GATES = {"system": pl.String, "metric": pl.String, "k": pl.Int64, "level": pl.String,
          "regressed_questions": pl.List(pl.String)}


def _qm(rows):
    return pl.DataFrame(rows, schema=_QM, orient="row")


def _gates(rows):
    return pl.DataFrame(rows, schema=_GATES, orient="row")


def test_a_document_level_gate_keeps_its_regressed_questions_at_document_level():
    # q1 is found per chunk (recall_5 = 1.0) but missed per document (0.0); q2 half found per document
    qm = _qm([("cand", "recall", 5, "chunk", "q1", 1.0), ("cand", "recall", 5, "doc", "q1", 0.0),
              ("cand", "recall", 5, "doc", "q2", 0.5), ("cand", "refusal_rate", None, None, "q1", 0.0)])
    gates = _gates([("cand", "recall", 5, "doc", ["q1", "q2"]), ("cand", "recall", 5, "chunk", [])])
    cases, new = track_regressions(None, qm, gates, run_id="r1", now="t1")
    assert new == 2 and cases.height == 2
    assert "level" in tables.SCHEMAS["regression_cases"]
    assert set(cases.columns) == set(tables.SCHEMAS["regression_cases"])
    rows = {r["question_id"]: r for r in cases.iter_rows(named=True)}
    # the document-level values, not q1's chunk-level 1.0
    assert (rows["q1"]["level"], rows["q1"]["value_when_found"], rows["q1"]["current_value"]) == ("doc", 0.0, 0.0)
    assert (rows["q2"]["level"], rows["q2"]["value_when_found"], rows["q2"]["current_value"]) == ("doc", 0.5, 0.5)
    assert {r["status"] for r in rows.values()} == {"still_regressed"}  # found now: not better than when found


def test_a_later_run_reports_each_level_apart_and_reads_an_old_case_as_chunk_level():
    previous = pl.DataFrame([
        # kept before levels were recorded (version 2: no level column): a chunk-level case
        {"system": "cand", "metric": "recall", "k": 5, "question_id": "q1", "value_when_found": 0.5,
         "first_seen_run": "r0", "first_seen_at": "t0"},
    ]).with_columns(pl.col("k").cast(pl.Int32))
    first, _ = track_regressions(None, _qm([("cand", "recall", 5, "doc", "q1", 0.0)]),
                                 _gates([("cand", "recall", 5, "doc", ["q1"])]), run_id="r1", now="t1")
    previous = pl.concat([previous.with_columns(pl.lit(None, pl.String).alias("level")),
                          first.drop("current_value", "status")], how="diagonal_relaxed")
    # now: q1 per chunk 1.0 (> 0.5: recovered), per document still 0.0 (not > 0.0: still regressed); the
    # document gate lists q1 again (not added twice)
    qm = _qm([("cand", "recall", 5, "chunk", "q1", 1.0), ("cand", "recall", 5, "doc", "q1", 0.0)])
    cases, new = track_regressions(previous, qm, _gates([("cand", "recall", 5, "doc", ["q1"])]), run_id="r2",
                                   now="t2")
    assert new == 0 and cases.height == 2
    got = {(r["level"], r["first_seen_run"], r["status"]) for r in cases.iter_rows(named=True)}
    assert got == {("chunk", "r0", "recovered"), ("doc", "r1", "still_regressed")}
