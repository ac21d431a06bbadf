"""Retrieval at document level: relevance judged per document, ranks from the ranked chunks."""

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.metrics.doc_level import doc_qrels, doc_run, levels_of, primary_level_rows
from rag_eval_pipeline.core.metrics.names import trec_name
from rag_eval_pipeline.core.metrics.retrieval import retrieval_question_metrics
from rag_eval_pipeline.core.metrics.retrieval_frames import RUN_LONG_SCHEMA

pytrec_eval = pytest.importorskip("pytrec_eval")

# four documents; d1 has three chunks, d2 two, d3 and d4 one (the team's own chunk ids: no doc_id#n)
CHUNKS = {"c11": "d1", "c12": "d1", "c13": "d1", "c21": "d2", "c22": "d2", "c31": "d3", "c41": "d4"}


def snapshot() -> pl.DataFrame:
    return pl.DataFrame({"chunk_id": list(CHUNKS), "doc_id": list(CHUNKS.values())})


def golden(rows) -> pl.DataFrame:
    """rows: (question_id, relevant chunks {id: grade}, relevant docs {id: grade})."""
    return pl.DataFrame([{"question_id": q, "relevant": [{"chunk_id": c, "grade": g} for c, g in rel.items()],
                          "relevant_docs": [{"doc_id": d, "grade": g} for d, g in docs.items()]}
                         for q, rel, docs in rows],
                        schema={"question_id": pl.Utf8, "relevant": tables.SCHEMAS["golden_set"]["relevant"],
                                "relevant_docs": tables.SCHEMAS["golden_set"]["relevant_docs"]})


def run(hits) -> pl.DataFrame:
    """hits: (question_id, chunk_id, score, rank)."""
    return pl.DataFrame([{"system": "s", "question_id": q, "chunk_id": c, "score": s, "rank": r}
                         for q, c, s, r in hits], schema=RUN_LONG_SCHEMA)


def test_a_document_is_ranked_at_its_first_chunk_and_retrieved_once():
    # system order: c12 (d1), c11 (d1), c31 (d3), c21 (d2), c13 (d1)
    hits = [("q", "c12", 0.1, 1), ("q", "c11", 0.9, 2), ("q", "c31", 0.8, 3), ("q", "c21", 0.7, 4),
            ("q", "c13", 0.6, 5)]
    made = doc_run(run(hits), snapshot(), "system")
    assert made.run_long.select("chunk_id", "rank").rows() == [("d1", 1), ("d3", 3), ("d2", 4)]
    assert made.dropped_chunks == 2  # c11 and c13: d1 was already retrieved
    # trec_eval order: by score, c11 (0.9) first; d1 keeps c11's score
    made = doc_run(run(hits), snapshot(), "trec_eval")
    assert made.run_long.select("chunk_id", "score").rows() == [("d1", 0.9), ("d3", 0.8), ("d2", 0.7)]
    # relevant: d2 only. Positions at document level: d1 = 1, d3 = 2, d2 = 3 (by hand)
    qrels = doc_qrels(golden([("q", {}, {"d2": 1})]), snapshot())
    pq = retrieval_question_metrics(doc_run(run(hits), snapshot(), "system").run_long, qrels, ks=(2, 3)).per_question
    got = {(m, k): v for m, k, v in pq.select("metric", "k", "value").iter_rows()}
    assert got[("recip_rank", None)] == pytest.approx(1 / 3)
    assert (got[("success", 2)], got[("success", 3)]) == (0.0, 1.0)
    assert got[("P", 3)] == pytest.approx(1 / 3) and got[("num_ret", None)] == 3.0


def test_document_qrels_come_from_relevant_docs_else_from_the_relevant_chunks():
    g = golden([("q1", {"c11": 1}, {"d2": 2, "d4": 0}),   # relevant_docs given: used as they are
                ("q2", {"c11": 1, "c13": 3, "c21": 0}, {}),  # none: the documents of its chunks, highest grade
                ("q3", {}, {})])                             # neither: one placeholder row
    q = doc_qrels(g, snapshot())
    assert q.rows() == [("q1", "d2", 2), ("q1", "d4", 0), ("q2", "d1", 3), ("q2", "d2", 0), ("q3", None, None)]
    assert levels_of(g) == ("chunk", "doc")
    assert levels_of(g.with_columns(pl.lit([], g.schema["relevant_docs"]).alias("relevant_docs"))) == ("chunk",)
    assert levels_of(g.with_columns(pl.lit([], g.schema["relevant"]).alias("relevant"))) == ("doc",)


def test_readers_of_one_number_per_metric_take_chunk_level_when_both_exist():
    frame = pl.DataFrame({"metric": ["recall", "recall", "map", "coverage"], "level": ["chunk", "doc", "doc", None]})
    assert primary_level_rows(frame).rows() == [("recall", "chunk"), ("map", "doc"), ("coverage", None)]


DOC_OF = {f"c{i}": f"d{i % 5}" for i in range(14)}  # 5 documents of 2-3 chunks
SCORES = [0.0, 0.5, 1.0, 2.0]


@st.composite
def chunk_runs(draw):
    qrels: dict[str, dict[str, int]] = {}
    for q in draw(st.lists(st.sampled_from(["q1", "q2", "q3", "q4"]), min_size=1, max_size=4, unique=True)):
        judged = draw(st.dictionaries(st.sampled_from(sorted(set(DOC_OF.values()))), st.integers(0, 3), min_size=1,
                                      max_size=4))
        qrels[q] = judged
    hits = []
    for q in sorted(qrels):
        chunks = draw(st.lists(st.sampled_from(sorted(DOC_OF)), min_size=1, max_size=10, unique=True))
        hits += [(q, c, draw(st.sampled_from(SCORES) | st.floats(-3, 3, allow_nan=False)), 0) for c in chunks]
    return qrels, hits, draw(st.sampled_from([(1, 3), (2, 5), (3, 10)]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunk_runs())
def test_document_level_matches_pytrec_eval_on_the_document_run(data):
    """pytrec_eval on document qrels and a document run in which each document's score is the best score of its
    retrieved chunks (what trec_eval ranks first) gives the pipeline's document-level values, to 1e-9."""
    qrels, hits, ks = data
    doc_run_dict: dict[str, dict[str, float]] = {}
    for q, c, s, _ in hits:
        d = DOC_OF[c]
        doc_run_dict.setdefault(q, {})[d] = max(s, doc_run_dict.get(q, {}).get(d, float("-inf")))
    cut = ",".join(map(str, ks))
    measures = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}", "recip_rank", "map", "Rprec",
                "num_ret", "num_rel", "num_rel_ret"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(doc_run_dict)

    snap = pl.DataFrame({"chunk_id": list(DOC_OF), "doc_id": list(DOC_OF.values())})
    g = golden([(q, {}, docs) for q, docs in sorted(qrels.items())])
    made = doc_run(run(hits), snap, "trec_eval")
    ev = retrieval_question_metrics(made.run_long, doc_qrels(g, snap), ks=ks, mode="trec_eval")
    ours: dict[str, dict[str, float]] = {}
    for q, metric, k, v in ev.per_question.select("question_id", "metric", "k", "value").iter_rows():
        if metric != "F1":
            ours.setdefault(q, {})[trec_name(metric, k)] = 0.0 if v is None else v
    for q in ref:
        for name, want in ref[q].items():
            assert ours[q][name] == pytest.approx(want, abs=1e-9), (q, name)
    assert made.dropped_chunks == len(hits) - sum(len(v) for v in doc_run_dict.values())
