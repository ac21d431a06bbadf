"""bpref (trec_eval ``m_bpref.c``; Buckley & Voorhees, SIGIR 2004): by hand, against pytrec_eval on random
runs; the trec_eval fixtures check it in ``test_trec_eval_fixtures.py``."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings

from rag_eval_pipeline.core.metrics import names
from rag_eval_pipeline.core.metrics.retrieval import retrieval_question_metrics
from rag_eval_pipeline_tests.core.metrics.test_retrieval import SCHEMAS_RUN, qrels_frame, run_and_qrels, value

pytrec_eval = pytest.importorskip("pytrec_eval")


def run_frame(ranking: dict[str, list[str]]) -> pl.DataFrame:
    return pl.DataFrame([{"system": "s", "question_id": q, "chunk_id": d, "score": float(len(docs) - i),
                          "rank": i + 1} for q, docs in ranking.items() for i, d in enumerate(docs)],
                        schema=SCHEMAS_RUN)


def test_bpref_by_hand():
    # q1: ranking n1 (judged 0), u (unjudged: skipped), r1, n2, r2; relevant r1, r2, r3 (R = 3),
    # judged non-relevant n1, n2, n3, n4 (N = 4): min(N, R) = 3.
    #   r1 has 1 judged non-relevant above: 1 - 1/3; r2 has 2: 1 - 2/3; r3 is not retrieved: 0.
    #   bpref = (2/3 + 1/3) / 3 = 1/3
    # q2: relevant d1 ranked first, nothing judged non-relevant (N = 0): 1 / 1 = 1
    # q3: no relevant chunk: null (trec_eval prints 0)
    # (questions in reverse order: each question's hits are contiguous but the questions unsorted, as in a
    # TREC run file listing topics in any order)
    run = run_frame({"q3": ["y"], "q2": ["d1", "x"], "q1": ["n1", "u", "r1", "n2", "r2"]})
    qrels = qrels_frame({"q1": {"r1": 1, "r2": 2, "r3": 1, "n1": 0, "n2": 0, "n3": 0, "n4": 0},
                         "q2": {"d1": 1}, "q3": {"y": 0}})
    pq = retrieval_question_metrics(run, qrels, ks=(1,), measures=["bpref"], mode="trec_eval").per_question
    q1 = value(pq, "bpref", None, "q1")
    assert q1["value"] == pytest.approx(1 / 3, abs=1e-12) and (q1["numerator"], q1["denominator"]) == (1.0, 3.0)
    assert value(pq, "bpref", None, "q2")["value"] == 1.0
    q3 = value(pq, "bpref", None, "q3")
    assert q3["value"] is None and q3["status"] == "no_relevant"


def test_bpref_is_declared_once_and_computed_on_request():
    info = names.metric_info("bpref")
    assert info.family == "retrieval" and info.needs_relevant and not info.cut and not info.default
    assert "bpref" in names.UNCUT_MEASURES and "bpref" not in names.DEFAULT_MEASURES
    assert "bpref" not in names.PIPELINE_METRICS  # computed by the trec_eval command, not by every run


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_and_qrels())
def test_bpref_matches_pytrec_eval(data) -> None:
    run, qrels, _, rel_level, seed = data
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"bpref"}, relevance_level=rel_level).evaluate(run)
    run_long = pl.DataFrame(
        [{"system": "s", "question_id": q, "chunk_id": d, "score": s, "rank": 0} for q, dd in run.items()
         for d, s in dd.items()], schema=SCHEMAS_RUN,
    ).sample(fraction=1.0, shuffle=True, seed=seed)
    ev = retrieval_question_metrics(run_long, qrels_frame(qrels), ks=(1,), measures=["bpref"], mode="trec_eval",
                                    rel_level=rel_level)
    ours = {q: 0.0 if v is None else v for q, v in ev.per_question.select("question_id", "value").iter_rows()}
    assert set(ours) == set(ref)
    for q, want in ref.items():
        assert ours[q] == pytest.approx(want["bpref"], abs=1e-9), q
