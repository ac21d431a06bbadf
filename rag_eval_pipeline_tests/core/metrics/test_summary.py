"""The summary aggregation: counts, nulls, Wilson and bootstrap intervals, per segment and split."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.metrics.decisions import decision_question_metrics
from rag_eval_pipeline.core.metrics.segments import question_segments
from rag_eval_pipeline.core.metrics.stats import bootstrap_mean_ci, wilson_interval
from rag_eval_pipeline.core.metrics.summary import metric_base, summarise
from rag_eval_pipeline.core.tables import SCHEMAS, conform

from .test_decisions import golden_frame, seed_example


def qm_frame(rows: list[tuple], split: str | None = "test") -> pl.DataFrame:
    """(system, question_id, metric, k, value[, status]) rows -> question_metrics."""
    out = []
    for r in rows:
        system, qid, metric, k, value = r[:5]
        status = r[5] if len(r) > 5 else ("ok" if value is not None else "no_relevant")
        out.append({"system": system, "question_id": qid, "split": split, "metric": metric, "k": k,
                    "value": value, "numerator": value, "denominator": 1.0 if value is not None else None,
                    "status": status, "ranking_mode": None})
    return pl.DataFrame(out, schema=SCHEMAS["question_metrics"])


def row(summary: pl.DataFrame, **keys) -> dict:
    keys = {"system": "s1", "split": "all", "segment": "all", **keys}
    f = summary
    for c, v in keys.items():
        f = f.filter(pl.col(c).is_null() if v is None else pl.col(c) == v)
    assert f.height == 1, (keys, f)
    return f.row(0, named=True)


# ---------------------------------------------------------------- summarise

def test_summary_seed_example_with_wilson():
    golden, runs = seed_example()
    qm = decision_question_metrics(runs, golden)
    out = summarise(qm, question_segments(golden), golden)
    assert out.columns == list(SCHEMAS["metric_summary"])
    conform(out, "metric_summary")
    cov = row(out, metric="coverage")
    assert (cov["value"], cov["numerator"], cov["denominator"], cov["n"], cov["n_not_evaluable"]) == (0.5, 3, 6, 6, 0)
    assert cov["ci_method"] == "wilson"
    assert (cov["ci_low"], cov["ci_high"]) == pytest.approx(wilson_interval(3, 6))
    fa = row(out, metric="false_abstention_rate")
    assert fa["value"] == pytest.approx(1 / 3) and (fa["n"], fa["n_not_evaluable"]) == (6, 3)
    assert (fa["ci_low"], fa["ci_high"]) == pytest.approx(wilson_interval(1, 3))
    awe = row(out, metric="answer_without_evidence_rate", split="test", segment="answerability=absent")
    assert awe["value"] == pytest.approx(1 / 3) and awe["n"] == 3 and awe["small_segment"]
    # all splits = "all" plus each split present
    assert set(out["split"]) == {"all", "test"}


def test_empty_denominator_is_null_with_n_reported():
    golden, runs = seed_example()
    qm = decision_question_metrics(runs, golden)
    out = summarise(qm, question_segments(golden), golden)
    r = row(out, metric="clarify_asked_rate")
    assert r["value"] is None and r["denominator"] == 0 and r["n"] == 6 and r["n_not_evaluable"] == 6
    assert r["ci_low"] is None and r["ci_high"] is None and r["ci_method"] == "none"
    r = row(out, metric="answer_without_evidence_rate", segment="answerability=answerable")
    assert r["value"] is None and r["n"] == 3


def test_errors_are_counted_apart_in_summary():
    golden, runs = seed_example()
    runs = runs.with_columns(pl.when(pl.col("question_id") == "n1").then(pl.lit("error"))
                             .otherwise(pl.col("decision")).alias("decision"))
    out = summarise(decision_question_metrics(runs, golden), question_segments(golden), golden)
    assert row(out, metric="run_error_rate")["numerator"] == 1
    awe = row(out, metric="answer_without_evidence_rate")
    assert (awe["numerator"], awe["denominator"], awe["n_not_evaluable"]) == (0, 2, 4)
    assert row(out, metric="coverage")["denominator"] == 5


def test_bootstrap_for_graded_metrics_matches_bootstrap_mean_ci():
    rng = np.random.default_rng(0)
    qids = [f"q{i:03d}" for i in range(40)]
    vals = rng.random(40).round(3)
    rows = [("s1", q, "recall", 5, float(v)) for q, v in zip(qids, vals)]
    qm = qm_frame(rows)
    seg = pl.DataFrame({"question_id": qids, "segment": ["all"] * 40})
    out = summarise(qm, seg, bootstrap_resamples=500, seed=11)
    r = row(out, metric="recall", k=5)
    assert r["ci_method"] == "bootstrap"
    assert r["value"] == pytest.approx(vals.mean())
    want = bootstrap_mean_ci(vals, n_resamples=500, seed=11)  # values in question_id order
    assert (r["ci_low"], r["ci_high"]) == pytest.approx(want, abs=1e-12)
    # seeded: same again, different with another seed
    again = row(summarise(qm, seg, bootstrap_resamples=500, seed=11), metric="recall", k=5)
    assert (again["ci_low"], again["ci_high"]) == (r["ci_low"], r["ci_high"])
    other = row(summarise(qm, seg, bootstrap_resamples=500, seed=12), metric="recall", k=5)
    assert (other["ci_low"], other["ci_high"]) != (r["ci_low"], r["ci_high"])
    # input row order does not matter
    shuffled = summarise(qm.sample(fraction=1.0, shuffle=True, seed=3), seg, bootstrap_resamples=500, seed=11)
    assert row(shuffled, metric="recall", k=5)["ci_low"] == r["ci_low"]


def test_wilson_only_for_declared_proportions_with_01_values():
    qids = [f"q{i}" for i in range(12)]
    rows = [("s1", q, "success", 5, float(i % 2)) for i, q in enumerate(qids)]
    rows += [("s1", q, "recall", 5, float(i % 2)) for i, q in enumerate(qids)]  # 0/1 but not a proportion metric
    rows += [("s1", q, "coverage", None, 0.5 if i == 0 else 1.0) for i, q in enumerate(qids)]  # not all 0/1
    out = summarise(qm_frame(rows), pl.DataFrame({"question_id": qids, "segment": "all"}), bootstrap_resamples=200)
    assert row(out, metric="success", k=5)["ci_method"] == "wilson"
    assert row(out, metric="recall", k=5)["ci_method"] == "bootstrap"
    assert row(out, metric="coverage", k=None)["ci_method"] == "bootstrap"
    assert metric_base("success_10") == "success" and metric_base("Success@5") == "success"


def test_segments_splits_judge_errors_and_small_segments():
    golden = golden_frame([
        {"question_id": f"q{i}", "answerability": "answerable", "relevant": [f"d{i}#0"],
         "split": "dev" if i < 4 else "test", "segments": ["topic=a"] if i % 2 else []}
        for i in range(12)
    ])
    rows = []
    for i in range(12):
        v = None if i == 0 else i / 12
        status = "judge_error" if i == 0 else "ok"
        rows.append(("s1", f"q{i}", "faithfulness", None, v, status))
        rows.append(("s2", f"q{i}", "faithfulness", None, 1.0, "ok"))
    qm = qm_frame(rows, split=None).with_columns(pl.lit("pooled").alias("ranking_mode"))
    out = summarise(qm, question_segments(golden), golden, small_segment_n=10, bootstrap_resamples=300)
    r = row(out, metric="faithfulness", k=None)
    assert (r["n"], r["denominator"], r["n_not_evaluable"], r["judge_errors"]) == (12, 11, 1, 1)
    assert r["value"] == pytest.approx(sum(i / 12 for i in range(1, 12)) / 11)
    assert r["ranking_mode"] == "pooled" and not r["small_segment"]
    dev = row(out, metric="faithfulness", k=None, split="dev")
    assert (dev["n"], dev["denominator"], dev["judge_errors"]) == (4, 3, 1) and dev["small_segment"]
    assert dev["value"] == pytest.approx((1 / 12 + 2 / 12 + 3 / 12) / 3)
    topic = row(out, metric="faithfulness", k=None, segment="topic=a")
    assert topic["n"] == 6 and topic["value"] == pytest.approx(sum(i / 12 for i in (1, 3, 5, 7, 9, 11)) / 6)
    s2 = row(out, system="s2", metric="faithfulness", k=None)
    assert s2["value"] == 1.0 and (s2["ci_low"], s2["ci_high"]) == (1.0, 1.0) and s2["judge_errors"] == 0
    assert set(out["split"]) == {"all", "dev", "test"}
    # bootstrap interval of a segment lies within the range of its values
    assert 1 / 12 <= topic["ci_low"] <= topic["value"] <= topic["ci_high"] <= 11 / 12


def test_summary_rejects_bad_input():
    qm = qm_frame([("s1", "q1", "recall", 5, 1.0), ("s1", "q1", "recall", 5, 0.0)])
    seg = pl.DataFrame({"question_id": ["q1"], "segment": ["all"]})
    with pytest.raises(InputError, match="q1"):
        summarise(qm, seg)
    with pytest.raises(SchemaError):
        summarise(qm.drop("value"), seg)
    with pytest.raises(SchemaError):
        summarise(qm.drop("split"), seg)  # no split and no golden
    mixed = pl.concat([qm_frame([("s1", "q1", "recall", 5, 1.0)], split="dev"),
                       qm_frame([("s2", "q1", "recall", 5, 1.0)], split="test")])
    with pytest.raises(InputError, match="split"):
        summarise(mixed, seg)


def test_empty_question_metrics_give_empty_summary():
    out = summarise(qm_frame([]), pl.DataFrame(schema={"question_id": pl.Utf8, "segment": pl.Utf8}))
    assert out.height == 0 and out.columns == list(SCHEMAS["metric_summary"])


def test_summary_scales_to_many_questions_and_segments():
    """10,000 questions x 12 series x 6 segments x 2 splits runs in seconds, not minutes."""
    import time

    rng = np.random.default_rng(0)
    n = 10_000
    qids = [f"q{i:05d}" for i in range(n)]
    frames = []
    for system in ("s1", "s2"):
        for metric, k in [("recall", 5), ("ndcg", 10), ("mrr", None), ("coverage", None), ("success", 5),
                          ("faithfulness", None)]:
            graded = metric in ("recall", "ndcg", "mrr", "faithfulness")
            v = rng.random(n) if graded else (rng.random(n) < 0.5) * 1.0
            v = np.where(rng.random(n) < 0.1, np.nan, v)
            frames.append(pl.DataFrame({
                "system": system, "question_id": qids, "split": np.where(np.arange(n) % 3 == 0, "dev", "test"),
                "metric": metric, "k": pl.Series([k] * n, dtype=pl.Int32), "value": v, "status": "ok",
                "ranking_mode": pl.Series([None] * n, dtype=pl.Utf8),
            }).with_columns(pl.col("value").fill_nan(None)))
    qm = pl.concat(frames)
    topics = [f"topic={i % 5}" for i in range(n)]
    langs = [f"lang={'es' if i % 2 else 'en'}" for i in range(n)]
    seg = pl.DataFrame({"question_id": qids * 2, "segment": topics + langs})
    t = time.perf_counter()
    out = summarise(qm, seg, bootstrap_resamples=1000)
    elapsed = time.perf_counter() - t
    assert out.height == 2 * 6 * 3 * 8
    assert elapsed < 60, elapsed
