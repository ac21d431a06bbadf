"""Latency of the system under test: per question in ``question_metrics``, p50 / p95 in ``metric_summary``.

Latency is a measurement, not a rate. Per question (metric ``latency_ms``): the wall time of the call
that produced the row (``rag_runs.latency_ms``), null with status ``run_error`` for an ``error`` row
(a timeout's duration says nothing about the system's speed) and ``not_measured`` when the system
reported none. Only systems with at least one measured latency get rows (the in-process reference
system and run logs have none).

In ``metric_summary`` the rows ``latency_ms_p50`` and ``latency_ms_p95`` hold the percentile with
linear interpolation between order statistics (Hyndman & Fan 1996, definition 7; numpy's and
polars' default). They carry ``numerator`` = the percentile and ``denominator`` = 1 (so
``value = numerator / denominator`` holds as for every row), or 0 / 0 with a null value when no
question of the group has a measured latency; ``n`` = questions, ``n_not_evaluable`` = questions
without a measured latency; no interval (``ci_method`` ``none``).
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from rag_eval_pipeline.core.tables import SCHEMAS, conform

LATENCY_METRIC = "latency_ms"
LATENCY_SUMMARY_METRICS = {"latency_ms_p50": 0.50, "latency_ms_p95": 0.95}


def latency_systems(rag_runs: pl.DataFrame | pl.LazyFrame) -> list[str]:
    """The systems with at least one measured latency (non-null ``latency_ms``) in ``rag_runs`` (a frame or a
    scan; sorted names; empty when the column is absent). Decide it over the WHOLE run table: a batch or a
    question shard may hold none of a system's measured rows."""
    runs = rag_runs.lazy()
    if "latency_ms" not in runs.collect_schema().names():
        return []
    got = runs.filter(pl.col("latency_ms").is_not_null()).select(pl.col("system").unique().sort()).collect()
    return got["system"].to_list()


def latency_question_metrics(rag_runs: pl.DataFrame, measured: Collection[str] | None = None) -> pl.DataFrame:
    """``question_metrics`` rows (no ``split`` column) of metric ``latency_ms`` for every run row of
    every system that measured at least one latency. Input: a ``rag_runs`` frame; ``measured``: those systems,
    decided over the whole run table (:func:`latency_systems`) when ``rag_runs`` is a part of it; None =
    :func:`latency_systems` of ``rag_runs``. Output columns system, question_id, metric, k, value, numerator,
    denominator, status, ranking_mode."""
    cols = [c for c in SCHEMAS["question_metrics"] if c != "split"]
    if "latency_ms" not in rag_runs.columns or rag_runs.height == 0:
        return pl.DataFrame(schema={c: SCHEMAS["question_metrics"][c] for c in cols})
    systems = latency_systems(rag_runs) if measured is None else sorted(measured)
    runs = rag_runs.filter(pl.col("system").is_in(systems))
    is_error = pl.col("decision") == "error"
    return runs.select(
        "system", "question_id",
        pl.lit(LATENCY_METRIC).alias("metric"),
        pl.lit(None, pl.Int32).alias("k"),
        pl.when(is_error).then(None).otherwise(pl.col("latency_ms")).cast(pl.Float64).alias("value"),
        pl.lit(None, pl.Float64).alias("numerator"),
        pl.lit(None, pl.Float64).alias("denominator"),
        pl.when(is_error).then(pl.lit("run_error"))
        .when(pl.col("latency_ms").is_null()).then(pl.lit("not_measured")).otherwise(pl.lit("ok")).alias("status"),
        pl.lit(None, pl.Utf8).alias("ranking_mode"),
    )


def latency_summary(latency_rows: pl.DataFrame, segments: pl.DataFrame, small_segment_n: int) -> pl.DataFrame:
    """``metric_summary`` rows p50 / p95 (module docstring) per system, split (``all`` and each
    split) and segment (``all`` and each segment of ``segments``).

    Input: ``latency_ms`` question_metrics rows with ``split`` filled; ``segments`` (question_id,
    segment) from ``question_segments``. Output: conformed ``metric_summary`` rows."""
    if latency_rows.height == 0:
        return pl.DataFrame(schema=SCHEMAS["metric_summary"])
    rows = latency_rows.select("system", "question_id", "split", "value")
    seg = segments.select("question_id", pl.col("segment").cast(pl.Utf8)).filter(pl.col("segment") != "all").unique()
    with_seg = pl.concat([rows.with_columns(pl.lit("all").alias("segment")),
                          rows.join(seg, on="question_id", how="inner")])
    with_split = pl.concat([with_seg.with_columns(pl.lit("all").alias("split")),
                            with_seg.filter(pl.col("split").is_not_null() & (pl.col("split") != "all"))])
    parts = []
    for metric, q in LATENCY_SUMMARY_METRICS.items():
        g = with_split.group_by("system", "split", "segment").agg(
            pl.col("value").quantile(q, interpolation="linear").alias("value"),
            pl.len().cast(pl.Int64).alias("n"),
            pl.col("value").null_count().cast(pl.Int64).alias("n_not_evaluable"),
        )
        parts.append(g.with_columns(pl.lit(metric).alias("metric")))
    out = pl.concat(parts).with_columns(
        pl.lit(None, pl.Int32).alias("k"),
        pl.col("value").fill_null(0.0).alias("numerator"),
        pl.when(pl.col("value").is_null()).then(0.0).otherwise(1.0).alias("denominator"),
        pl.lit(None, pl.Float64).alias("ci_low"),
        pl.lit(None, pl.Float64).alias("ci_high"),
        pl.lit("none").alias("ci_method"),
        pl.lit(0, pl.Int64).alias("judge_errors"),
        pl.lit(None, pl.Utf8).alias("ranking_mode"),
        (pl.col("n") < small_segment_n).alias("small_segment"),
        pl.lit(None, pl.Utf8).alias("level"),
    )
    return conform(out, "metric_summary")
