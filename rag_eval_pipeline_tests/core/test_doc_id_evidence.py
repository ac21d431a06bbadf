"""A system whose ids are document ids (``chunk_map: {doc_ids: true}``) is judged on every chunk of the
documents it retrieved and cited, so the same answers and citations score the same faithfulness and
citation recall / precision as a chunk-id system's (core/systems/doc_evidence.py)."""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.citations.judging import judge_citations, support_requests
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.citations import citation_question_metrics
from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
from rag_eval_pipeline.core.systems.id_mapping import IdMapper
from rag_eval_pipeline_tests.core.citations.helpers import golden, run, runs, snapshot

# Document "plan" has two chunks, document "store" one.
CHUNKS = {"plan#0": {"text": "The Basic plan costs 10 euros per month."},
          "plan#1": {"text": "The Basic plan includes free shipping on every order."},
          "store#0": {"text": "The store opens at nine in the morning."}}
# Each answer restates one chunk's sentence, cited; q2's comes from the SECOND chunk of "plan".
ANSWERS = {"q1": ("The Basic plan costs 10 euros per month.", "plan#0", "plan"),
           "q2": ("The Basic plan includes free shipping on every order.", "plan#1", "plan"),
           "q3": ("The store opens at nine in the morning.", "store#0", "store")}


def _tables():
    snap = snapshot(CHUNKS)
    mapper = IdMapper(snap, {"file": None, "strip_prefix": None, "doc_ids": True})
    rows = []
    for qid, (answer, chunk, doc) in ANSWERS.items():
        rows.append(run(qid, answer, [chunk], [chunk], system="chunks"))
        stored = mapper.chunk(doc)  # what rag_runs holds for a document id: the document's first chunk
        rows.append(run(qid, answer, [stored], [stored], system="docs"))
    return snap, runs(*rows), golden(*({"question_id": q} for q in ANSWERS))


def _values(qm: pl.DataFrame, metric: str) -> dict:
    return {(r["system"], r["question_id"]): (r["value"], r["numerator"], r["denominator"])
            for r in qm.filter(pl.col("metric") == metric).iter_rows(named=True)}


def test_the_stored_id_of_a_document_is_its_first_chunk():
    snap, rag_runs, _ = _tables()
    docs = rag_runs.filter(pl.col("system") == "docs")
    assert [r[0]["chunk_id"] for r in docs["retrieved"].to_list()] == ["plan#0", "plan#0", "store#0"]


def test_evidence_of_a_document_id_is_every_chunk_in_chunk_order():
    ev = JudgingEvidence(snapshot(CHUNKS), {"docs"})
    assert ev.chunk_ids("docs", ["plan#0"]) == ["plan#0", "plan#1"]
    assert ev.chunk_ids("docs", ["store#0", "plan#0"]) == ["store#0", "plan#0", "plan#1"]
    assert ev.chunk_ids("chunks", ["plan#0"]) == ["plan#0"]  # a chunk-id system: unchanged
    assert ev.chunk_ids("docs", ["nowhere#0"]) == ["nowhere#0"]  # unknown ids kept for the caller to report


def test_faithfulness_equal_for_chunk_ids_and_document_ids():
    snap, rag_runs, gold = _tables()
    questions = gold.select("question_id", "question")
    labels, judged = judge_runs(rag_runs, snap, RuleBasedJudge(), questions=questions, doc_id_systems={"docs"})
    faith = _values(faithfulness_question_metrics(labels, judged), "faithfulness")
    # By hand: every answer is one claim, word for word a sentence of its chunk, so SUPPORTED: 1/1 per question
    # for both systems; for "docs" q2's claim is in plan#1, read because "plan" stands for plan#0 and plan#1.
    for system in ("chunks", "docs"):
        for qid in ANSWERS:
            assert faith[(system, qid)] == (1.0, 1.0, 1.0), (system, qid)
    # Judged on the first chunk only (no doc_id_systems), q2's claim is not in plan#0: 0/1 (the defect).
    labels0, judged0 = judge_runs(rag_runs, snap, RuleBasedJudge(), questions=questions)
    faith0 = _values(faithfulness_question_metrics(labels0, judged0), "faithfulness")
    assert faith0[("docs", "q2")] == (0.0, 0.0, 1.0)
    assert faith0[("chunks", "q2")] == (1.0, 1.0, 1.0)


def test_citation_recall_and_precision_equal_for_chunk_ids_and_document_ids():
    snap, rag_runs, gold = _tables()
    claims, cites = judge_citations(rag_runs, snap, gold, RuleBasedJudge(), doc_id_systems={"docs"})
    qm = citation_question_metrics(rag_runs, claims, cites)
    recall, precision = _values(qm, "citation_recall"), _values(qm, "citation_precision")
    # By hand: one claim per answer, one citation (a run-log citation binds to every claim); the cited chunk
    # (for "docs": every chunk of the cited document) states the claim word for word, so the joint verdict
    # is SUPPORTED (recall 1/1) and the single citation is precise (precision 1/1), for both systems.
    for system in ("chunks", "docs"):
        for qid in ANSWERS:
            assert recall[(system, qid)] == (1.0, 1.0, 1.0), (system, qid)
            assert precision[(system, qid)] == (1.0, 1.0, 1.0), (system, qid)
    # the citation row still names what the system cited (the document's stored id), the judge read its chunks
    docs_q2 = cites.filter((pl.col("system") == "docs") & (pl.col("question_id") == "q2"))
    assert docs_q2["target"].to_list() == ["plan#0"]
    assert claims.filter((pl.col("system") == "docs") & (pl.col("question_id") == "q2"))["judged"].to_list() \
        == [["plan#0"]]
    requests, _ = support_requests(rag_runs, snap, gold, doc_id_systems={"docs"})
    passages = {(r.system, r.question_id): r.passage_ids for r in requests}
    assert passages[("docs", "q2")] == ("plan#0", "plan#1") and passages[("chunks", "q2")] == ("plan#1",)
    # Judged on the first chunk only, q2's citation supports nothing: recall 0/1, precision 0/1 (the defect).
    claims0, cites0 = judge_citations(rag_runs, snap, gold, RuleBasedJudge())
    qm0 = citation_question_metrics(rag_runs, claims0, cites0)
    assert _values(qm0, "citation_recall")[("docs", "q2")] == (0.0, 0.0, 1.0)
    assert _values(qm0, "citation_precision")[("docs", "q2")] == (0.0, 0.0, 1.0)
