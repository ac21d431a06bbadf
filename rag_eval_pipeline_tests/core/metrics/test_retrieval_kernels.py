"""The retrieval kernels and the metric-name registry: full-depth nDCG against pytrec_eval and by hand,
claim evidence availability in trec_eval's ranking, and configuration that needs no metric module."""

from __future__ import annotations

import math
import subprocess
import sys

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from rag_eval_pipeline.core.metrics import names
from rag_eval_pipeline.core.metrics.retrieval import (
    claim_evidence_availability,
    parse_measure,
    retrieval_question_metrics,
)
from rag_eval_pipeline.core.metrics.retrieval_kernels import KERNELS
from rag_eval_pipeline.core.tables import SCHEMAS
from rag_eval_pipeline_tests.core.metrics.test_retrieval import (
    SCHEMAS_RUN,
    golden_frame,
    qrels_frame,
    run_and_qrels,
    run_frame,
    value,
)

pytrec_eval = pytest.importorskip("pytrec_eval")
L2 = math.log2


def test_every_measure_has_one_kernel() -> None:
    assert set(KERNELS) == set(names.MEASURES)


def test_registry_holds_the_names_each_metric_module_writes() -> None:
    from rag_eval_pipeline.core.answer_quality import QUALITY_METRICS
    from rag_eval_pipeline.core.metrics.correctness import CORRECTNESS_METRICS
    from rag_eval_pipeline.core.metrics.decisions import DECISION_METRICS
    from rag_eval_pipeline.core.metrics.faithfulness import FAITHFULNESS_METRICS

    # one declaration: each metric module takes its names from the registry, none keeps a second list
    assert names.DECISION_METRICS is DECISION_METRICS
    assert names.FAITHFULNESS_METRICS is FAITHFULNESS_METRICS
    assert names.CORRECTNESS_METRICS is CORRECTNESS_METRICS
    assert names.QUALITY_METRICS is QUALITY_METRICS
    # the pipeline computes the default retrieval measures only: a gate on mrr@10 would never be evaluated
    assert "recip_rank_cut" not in names.PIPELINE_METRICS and "ndcg" not in names.PIPELINE_METRICS
    assert {"recall", "ndcg_cut", "map", "claim_evidence_availability", "coverage"} <= names.PIPELINE_METRICS


def test_configuration_knows_metric_names_without_importing_metric_modules() -> None:
    # the configuration may import its own validators (sections, YAML reader, system specs), never a metric module
    code = ("import sys; from rag_eval_pipeline.core.config import known_metrics; assert 'recall' in known_metrics(); "
            "print(sorted(m for m in sys.modules if m.startswith('rag_eval_pipeline.core.metrics.') and "
            "m != 'rag_eval_pipeline.core.metrics.names'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_ndcg_is_trec_evals_full_depth_measure() -> None:
    assert parse_measure("ndcg") == ("ndcg", None)
    assert parse_measure("ndcg@10") == ("ndcg_cut", 10) and parse_measure("ndcg_cut_10") == ("ndcg_cut", 10)
    # q1: ranking d1 (grade 0), d2 (2), d3 (unjudged), d4 (1); d5 (grade 3) never retrieved.
    # DCG = 2/log2(3) + 1/log2(5); ideal over every judged grade > 0: 3, 2, 1 at positions 1..3.
    run = run_frame({"q1": ["d1", "d2", "d3", "d4"], "q2": ["d1"]})
    qrels = qrels_frame({"q1": {"d1": 0, "d2": 2, "d4": 1, "d5": 3}, "q2": {"d1": 0}})
    pq = retrieval_question_metrics(run, qrels, ks=(2,), measures=["ndcg", "ndcg_cut"]).per_question
    want = (2 / L2(3) + 1 / L2(5)) / (3 + 2 / L2(3) + 1 / L2(4))
    row = value(pq, "ndcg", None, "q1")
    assert row["value"] == pytest.approx(want, abs=1e-12) and row["k"] is None
    assert value(pq, "ndcg_cut", 2, "q1")["value"] == pytest.approx((2 / L2(3)) / (3 + 2 / L2(3)), abs=1e-12)
    q2 = value(pq, "ndcg", None, "q2")  # no judged grade > 0: not evaluable (trec_eval prints 0)
    assert q2["value"] is None and q2["status"] == "no_relevant"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_and_qrels())
def test_full_depth_ndcg_matches_pytrec_eval(data) -> None:
    run, qrels, _, rel_level, seed = data
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}, relevance_level=rel_level).evaluate(run)
    run_long = pl.DataFrame(
        [{"system": "s", "question_id": q, "chunk_id": d, "score": s, "rank": 0} for q, dd in run.items()
         for d, s in dd.items()], schema=SCHEMAS_RUN,
    ).sample(fraction=1.0, shuffle=True, seed=seed)
    ev = retrieval_question_metrics(run_long, qrels_frame(qrels), ks=(1,), measures=["ndcg"], mode="trec_eval",
                                    rel_level=rel_level)
    ours = {q: 0.0 if v is None else v for q, v in ev.per_question.select("question_id", "value").iter_rows()}
    assert set(ours) == set(ref)
    for q, want in ref.items():
        assert ours[q] == pytest.approx(want["ndcg"], abs=1e-9), q


def _runs(rows: list[tuple[str, str, list[tuple[str, float, int]]]]) -> pl.DataFrame:
    return pl.DataFrame(
        [{"system": s, "question_id": q, "retrieved": [{"chunk_id": c, "score": sc, "rank": r} for c, sc, r in hits]}
         for s, q, hits in rows],
        schema={"system": pl.Utf8, "question_id": pl.Utf8, "retrieved": SCHEMAS["rag_runs"]["retrieved"]})


def test_claim_evidence_availability_in_trec_eval_ranking() -> None:
    golden = golden_frame([{"question_id": "q1", "claims": [("a", ["x"]), ("b", ["y"])]}])
    # the system ranked w, x, y; by score the order is y (2.0), then z and w tied at 1.0 (ids descending:
    # z before w), then x (0.5)
    runs = _runs([("s", "q1", [("w", 1.0, 1), ("x", 0.5, 2), ("y", 2.0, 3), ("z", 1.0, 4)])])
    system = claim_evidence_availability(runs, golden, ks=(1, 2, 3), mode="system")
    trec = claim_evidence_availability(runs, golden, ks=(1, 2, 3), mode="trec_eval")
    assert [value(system, "claim_evidence_availability", k)["numerator"] for k in (1, 2, 3)] == [0.0, 1.0, 2.0]
    assert [value(trec, "claim_evidence_availability", k)["numerator"] for k in (1, 2, 3)] == [1.0, 1.0, 1.0]
    assert set(system["ranking_mode"]) == {"system"} and set(trec["ranking_mode"]) == {"trec_eval"}
    # x and y tie at 1.0: trec_eval puts the larger id first, so the top 1 is y (claim b), not x
    tie = _runs([("s", "q1", [("x", 1.0, 1), ("y", 1.0, 2)])])
    top1 = _runs([("s", "q1", [("y", 1.0, 1)])])
    got = claim_evidence_availability(tie, golden, ks=(1,), mode="trec_eval")
    want = claim_evidence_availability(top1, golden, ks=(1,), mode="system")
    assert value(got, "claim_evidence_availability", 1)["numerator"] == 1.0
    assert got.drop("ranking_mode").equals(want.drop("ranking_mode"))


def test_claim_evidence_availability_complete_scores_missing_questions_zero() -> None:
    golden = golden_frame([{"question_id": "q1", "claims": [("a", ["x"])]},
                           {"question_id": "q2", "claims": [("b", ["y"]), ("c", ["z"])]}])
    runs = _runs([("s", "q1", [("x", 1.0, 1)])])
    assert set(claim_evidence_availability(runs, golden, ks=(1,))["question_id"]) == {"q1"}
    full = claim_evidence_availability(runs, golden, ks=(1,), complete=True)
    q2 = value(full, "claim_evidence_availability", 1, "q2")
    assert (q2["numerator"], q2["denominator"], q2["value"], q2["status"]) == (0.0, 2.0, 0.0, "ok")
