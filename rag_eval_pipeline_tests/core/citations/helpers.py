"""Small tables and a scripted support judge for the citation and nugget tests."""

from __future__ import annotations

import datetime as dt

import polars as pl

from rag_eval_pipeline.core.judges.base import SupportRequest, SupportVerdict
from rag_eval_pipeline.core.tables import SCHEMAS, conform


def snapshot(chunks: dict[str, dict]) -> pl.DataFrame:
    """chunk_id -> {text, status?, replaced_by?, acl?} as a corpus_snapshot frame."""
    rows = []
    for cid, c in chunks.items():
        doc, n = cid.rsplit("#", 1)
        rows.append({"chunk_id": cid, "doc_id": doc, "chunk_index": int(n), "text": c["text"], "title": doc,
                     "source": "test", "doc_type": "policy", "language": "en", "status": c.get("status", "active"),
                     "replaced_by": c.get("replaced_by"), "acl": c.get("acl", []), "valid_from": dt.date(2025, 1, 1),
                     "valid_to": None, "sha256": "0" * 64})
    return conform(pl.DataFrame(rows, schema=SCHEMAS["corpus_snapshot"]), "corpus_snapshot")


def golden(*questions: dict) -> pl.DataFrame:
    """golden_set rows from {question_id, claims?, user_groups?, answerability?}."""
    rows = [{"question_id": q["question_id"], "golden_version": "gv", "question": q.get("question", "?"),
             "answerability": q.get("answerability", "answerable"), "relevant": [],
             "reference_answer": None, "claims": q.get("claims", []), "split": "test", "segments": [],
             "user_groups": q.get("user_groups", ["customers"])} for q in questions]
    return conform(pl.DataFrame(rows, schema=SCHEMAS["golden_set"]), "golden_set")


def run(qid: str, answer: str | None, retrieved=(), citations=(), decision="answer", system="s") -> dict:
    return {"system": system, "question_id": qid,
            "retrieved": [{"chunk_id": c, "score": 1.0, "rank": i} for i, c in enumerate(retrieved, start=1)],
            "decision": decision, "answer": answer, "citations": list(citations),
            "error": "boom" if decision == "error" else None, "corpus_version": "cv", "golden_version": "gv",
            "retriever": "{}", "generator": "g", "model": "m", "prompt_version": "p"}


def runs(*rows: dict) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SCHEMAS["rag_runs"])


class ScriptedJudge:
    """A support judge whose verdicts are written by hand: ``script[(item, frozenset(passage ids))]`` is a
    verdict; SUPPORTED and PARTIAL quote the first passage (a literal substring, so the code check
    passes) unless ``bad_quote``. Unscripted pairs are NOT_SUPPORTED. Records every request."""

    name, model, prompt_sha256 = "scripted", "scripted-v1", "1" * 64

    def __init__(self, script: dict, bad_quote: bool = False, raise_for: str | None = None):
        self.script, self.bad_quote, self.raise_for = script, bad_quote, raise_for
        self.requests: list[SupportRequest] = []

    def support_prompt_sha256(self, family: str) -> str:
        return {"citation_support": "c" * 64, "nugget_coverage": "n" * 64}[family]

    def judge_support(self, request: SupportRequest) -> list[SupportVerdict]:
        self.requests.append(request)
        if self.raise_for and any(self.raise_for in i for i in request.items):
            raise RuntimeError("scripted failure")
        out = []
        for item_id, item in zip(request.item_ids, request.items):
            verdict = self.script.get((item, frozenset(request.passage_ids)), "NOT_SUPPORTED")
            quote = None
            if verdict in ("SUPPORTED", "PARTIAL"):
                quote = "words in no passage" if self.bad_quote else request.passages[0]
            out.append(SupportVerdict(item_id, verdict, quote, "scripted"))
        return out
