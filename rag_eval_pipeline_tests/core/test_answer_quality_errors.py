"""answer_quality keeps the judge's failure reason on the row (an error-path unit test, stub judge)."""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.answer_quality import answer_quality_metrics
from rag_eval_pipeline.core.tables import SCHEMAS


class FailingRelevanceJudge:
    name, model, prompt_sha256 = "stub", "stub-v0", "0" * 64

    def answer_relevance(self, question, answer):
        raise TimeoutError("judge call timed out after 30 s")

    def context_relevance(self, question, contexts):
        return 1.0

    def correctness(self, answer, reference):
        return {"n_facts": 0, "facts": []}

    def holistic(self, question, answer, contexts):
        return "YES"


def test_judge_error_reason_is_stored_on_the_answer_quality_row():
    runs = pl.DataFrame([{
        "system": "s", "question_id": "q1", "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1}],
        "decision": "answer", "answer": "Abre a las 9.", "citations": [], "error": None, "corpus_version": "c",
        "golden_version": "g", "retriever": "{}", "generator": "g", "model": "m", "prompt_version": "p",
    }], schema=SCHEMAS["rag_runs"])
    golden = pl.DataFrame({"question_id": ["q1"], "question": ["¿Cuándo abre?"], "reference_answer": [None]})
    snapshot = pl.DataFrame({"chunk_id": ["d#0"], "text": ["Abre a las 9."]})
    out = answer_quality_metrics(runs, golden, snapshot, FailingRelevanceJudge())
    rows = {r["metric"]: r for r in out.iter_rows(named=True)}
    assert rows["answer_relevance"]["status"] == "judge_error"
    assert rows["answer_relevance"]["value"] is None
    assert rows["answer_relevance"]["error"] == "TimeoutError: judge call timed out after 30 s"
    assert rows["context_relevance"]["status"] == "ok" and rows["context_relevance"]["error"] is None
