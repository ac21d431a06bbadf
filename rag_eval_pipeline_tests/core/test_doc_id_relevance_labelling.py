"""A document-id system (``chunk_map: {doc_ids: true}``) is shown whole documents beyond faithfulness too:
answer / context relevance (core/answer_quality.py) and the human-labelling items (core/labelling.py) read
every chunk of each retrieved or cited document, through the one mapping of core/systems/doc_evidence.py.

Fixture (test_doc_id_evidence.py): document "plan" has chunks plan#0 ("... costs 10 euros ...") and plan#1
("... includes free shipping ..."); q2's answer is plan#1's sentence word for word. System "chunks"
retrieved and cited plan#1; system "docs" retrieved and cited document "plan", which rag_runs stores as
its first chunk plan#0."""

from __future__ import annotations

import threading

import polars as pl

from rag_eval_pipeline.core.answer_quality import answer_quality_metrics
from rag_eval_pipeline.core.citations.judging import judge_citations
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.labelling import build_family_items, build_items, current_content_hashes
from rag_eval_pipeline_tests.core.test_doc_id_evidence import ANSWERS, CHUNKS, _tables

PLAN0, PLAN1 = CHUNKS["plan#0"]["text"], CHUNKS["plan#1"]["text"]
Q2_ANSWER = ANSWERS["q2"][0]  # == PLAN1


class RecordingQualityJudge:
    """A deterministic quality judge that records the contexts it is given. context_relevance: share of the
    contexts that contain the answer's sentence (the "needed" ones); holistic: YES when a context contains the
    answer's sentence, else NO. Every answer here is one sentence copied from a chunk."""

    name, model, prompt_sha256 = "recording", "recording-v1", "2" * 64
    concurrency = 1

    def __init__(self, answers: dict[str, str]):
        self.answers = answers  # question -> answer (to tell which answer a context_relevance call is about)
        self.seen: dict[tuple[str, str], list[str]] = {}
        self._lock = threading.Lock()

    def answer_relevance(self, question: str, answer: str) -> int:
        return 5

    def context_relevance(self, question: str, contexts: list[str]) -> float:
        return sum(self.answers[question] in c for c in contexts) / len(contexts)

    def correctness(self, answer: str, reference: str) -> dict:
        return {"n_facts": 0, "facts": []}

    def holistic(self, question: str, answer: str, contexts: list[str]) -> str:
        with self._lock:
            self.seen[(question, answer)] = list(contexts)
        return "YES" if any(answer in c for c in contexts) else "NO"


def _quality(doc_id_systems):
    snap, rag_runs, gold = _tables()
    gold = gold.with_columns(pl.col("question_id").alias("question"))  # question text = its id, one per answer
    judge = RecordingQualityJudge({q: a for q, (a, _, _) in ANSWERS.items()})
    rows = {(r["system"], r["question_id"], r["metric"]): (r["value"], r["numerator"], r["denominator"])
            for r in answer_quality_metrics(rag_runs, gold, snap, judge,
                                            doc_id_systems=doc_id_systems).iter_rows(named=True)}
    return rows, judge


def test_answer_and_context_relevance_read_the_whole_document():
    rows, judge = _quality({"docs"})
    # Contexts passed, by hand: "chunks" retrieved plan#1 only; "docs" retrieved document "plan" = plan#0, plan#1.
    assert judge.seen[("q2", Q2_ANSWER)] == [PLAN0, PLAN1]
    # context_relevance, by hand: chunks/q2 1 of 1 context holds the answer -> 1.0 (1/1); docs/q2 1 of 2 -> 0.5.
    assert rows[("chunks", "q2", "context_relevance")] == (1.0, 1.0, 1.0)
    assert rows[("docs", "q2", "context_relevance")] == (0.5, 1.0, 2.0)
    # holistic: the answer's sentence is in a context for both systems -> YES = 1.0 for both.
    assert rows[("chunks", "q2", "faithfulness_holistic_model")] == (1.0, 1.0, 1.0)
    assert rows[("docs", "q2", "faithfulness_holistic_model")] == (1.0, 1.0, 1.0)


def test_chunk_id_system_unchanged_and_first_chunk_alone_would_fail():
    rows, judge = _quality({"docs"})
    old_rows, old_judge = _quality(())  # the old behaviour: a document id read as its first chunk only
    def chunk_system(table):
        return {k: v for k, v in table.items() if k[0] == "chunks"}
    assert chunk_system(rows) == chunk_system(old_rows)
    # First chunk only: docs/q2 saw plan#0 alone, which lacks the answer -> context_relevance 0/1, holistic NO = 0.
    assert old_judge.seen[("q2", Q2_ANSWER)] == [PLAN0]
    assert old_rows[("docs", "q2", "context_relevance")] == (0.0, 0.0, 1.0)
    assert old_rows[("docs", "q2", "faithfulness_holistic_model")] == (0.0, 0.0, 1.0)


def _judge_labels(snap, rag_runs):
    rows = [{"system": s, "question_id": "q2", "claim_id": "q2:c0", "claim": Q2_ANSWER, "verdict": "SUPPORTED",
             "quote": Q2_ANSWER, "quote_found": True, "justification": "", "judge": "j", "judge_model": "m",
             "prompt_sha256": "p", "repeat": 0, "error": None} for s in ("chunks", "docs")]
    return pl.DataFrame(rows)


def test_labelling_items_show_every_chunk_of_a_document():
    snap, rag_runs, gold = _tables()
    labels = _judge_labels(snap, rag_runs)
    items = {(it.system, it.question_id): it for it in build_items(rag_runs, gold, snap, labels, "response",
                                                                    doc_id_systems={"docs"})}
    # By hand: chunks/q2 shows plan#1 (rank 1, cited); docs/q2 shows plan#0 and plan#1, both at the document's
    # rank 1 and both cited (the cited document "plan").
    assert [(h["chunk_id"], h["rank"], h["text"]) for h in items[("chunks", "q2")].chunks] == [("plan#1", 1, PLAN1)]
    assert [(h["chunk_id"], h["rank"], h["text"]) for h in items[("docs", "q2")].chunks] == [
        ("plan#0", 1, PLAN0), ("plan#1", 1, PLAN1)]
    assert items[("docs", "q2")].cited == ["plan#0", "plan#1"]
    # The staleness hash is taken over the same chunks the page shows.
    hashes = current_content_hashes(rag_runs, gold, snap, labels, "response", doc_id_systems={"docs"})
    assert hashes[("docs", "q2")] == items[("docs", "q2")].content_sha256
    # The old first-chunk behaviour showed docs/q2 only plan#0, which lacks the answer; chunk-id items unchanged.
    old = {(it.system, it.question_id): it for it in build_items(rag_runs, gold, snap, labels, "response")}
    assert [h["chunk_id"] for h in old[("docs", "q2")].chunks] == ["plan#0"]
    assert old[("chunks", "q2")] == items[("chunks", "q2")]
    assert old[("docs", "q2")].content_sha256 != items[("docs", "q2")].content_sha256


def test_citation_support_items_show_every_chunk_of_a_cited_document():
    snap, rag_runs, gold = _tables()
    claims, _ = judge_citations(rag_runs, snap, gold, RuleBasedJudge(), doc_id_systems={"docs"})
    items = {(it.system, it.question_id): it
             for it in build_family_items("citation_support", rag_runs, gold, snap, claims, doc_id_systems={"docs"})}
    # By hand: docs/q2 cited "plan" (stored plan#0): the person reads plan#0 and plan#1, as the judge did;
    # the item's key of judged ids stays the stored id.
    assert [h["chunk_id"] for h in items[("docs", "q2")].chunks] == ["plan#0", "plan#1"]
    assert items[("docs", "q2")].passages == "plan#0"
    assert [h["chunk_id"] for h in items[("chunks", "q2")].chunks] == ["plan#1"]
    old = {(it.system, it.question_id): it
           for it in build_family_items("citation_support", rag_runs, gold, snap, claims)}
    assert [h["chunk_id"] for h in old[("docs", "q2")].chunks] == ["plan#0"]  # first chunk only: lacks the answer
    assert old[("chunks", "q2")] == items[("chunks", "q2")]
