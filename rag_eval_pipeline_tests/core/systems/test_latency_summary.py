"""Latency p50 / p95 in metric_summary: values worked out by hand, counts, and the denominator rule."""

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.metrics.latency import latency_question_metrics
from rag_eval_pipeline.core.metrics.summary import summarise
from rag_eval_pipeline.defs.metrics import denominators_consistent


def runs(system, latencies, decisions):
    rows = [{"system": system, "question_id": f"q{i}", "retrieved": [], "decision": d, "citations": [],
             "latency_ms": lat} for i, (lat, d) in enumerate(zip(latencies, decisions))]
    return pl.DataFrame(rows, schema=tables.SCHEMAS["rag_runs"])


def test_p50_p95_with_linear_interpolation_and_null_when_nothing_was_measured():
    rr = pl.concat([
        runs("live", [40.0, 10.0, 30.0, 20.0, 999.0], ["answer", "abstain", "answer", "answer", "error"]),
        runs("down", [5000.0, 5000.0], ["error", "error"]),
        runs("inproc", [None, None], ["answer", "answer"]),
    ])
    qm = latency_question_metrics(rr)
    assert set(qm["system"]) == {"live", "down"}  # a system that measured nothing gets no rows
    qm = qm.with_columns(pl.lit("test").alias("split"))
    segments = qm.select("question_id").unique().with_columns(pl.lit("all").alias("segment"))
    s = summarise(qm, segments, small_segment_n=0)
    live = {r["metric"]: r for r in s.filter((pl.col("system") == "live") & (pl.col("split") == "all")).to_dicts()}
    # sorted measured values 10, 20, 30, 40 (the error row's 999 ms is left out)
    # p50: position 0.5 * 3 = 1.5 -> 20 + 0.5 * 10 = 25; p95: position 2.85 -> 30 + 0.85 * 10 = 38.5
    assert live["latency_ms_p50"]["value"] == 25.0
    assert abs(live["latency_ms_p95"]["value"] - 38.5) < 1e-9
    for r in live.values():
        assert (r["numerator"], r["denominator"], r["n"], r["n_not_evaluable"]) == (r["value"], 1.0, 5, 1)
        assert (r["ci_low"], r["ci_high"], r["ci_method"]) == (None, None, "none")
    down = s.filter((pl.col("system") == "down") & (pl.col("split") == "all")).to_dicts()
    got = [(r["value"], r["numerator"], r["denominator"], r["n_not_evaluable"]) for r in down]
    assert got == [(None, 0.0, 0.0, 2)] * 2
    check = denominators_consistent(metric_summary=s)
    assert check.passed
