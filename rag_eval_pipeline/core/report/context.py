"""Context-window misses: evidence that was retrieved, but below the chunks the generator reads.

A generator reads only the first ``context_k`` retrieved chunks. An answerable question whose
evidence was retrieved only at ranks beyond ``context_k`` counts as ``evidence_retrieved`` (the
retrieval metric looks at the whole ranking), yet the generator never saw it: the report calls it a
*context-window miss*, not "evidence retrieved" (definitions in ``docs/METRICS.md``, section
evidence_retrieved). ``context_k`` is read from the run manifest's ``generator`` text, which the
built-in generator writes as ``<version> {"context_k": K, ...}``; a logged system that records no
``context_k`` has none, and no miss is claimed for it. Nothing here imports Dagster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import polars as pl

from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.metrics.decisions import evidence_chunks

_CONTEXT_K = re.compile(r'"context_k"\s*:\s*(\d+)')


def context_k_of(generator: str | None) -> int | None:
    """The ``context_k`` recorded in a run manifest's generator text, or None.

    Input: the ``generator`` field of a rag_runs row (e.g. ``extractive-v1 {"context_k": 3, ...}``,
    a JSON object, or free text). Output: an int >= 1, or None when the text holds no such field or
    a value below 1. Raises nothing.
    """
    if not generator:
        return None
    text = str(generator)
    start = text.find("{")
    if start >= 0:
        try:
            obj = strict_json(text[start:])  # a system's own text: depth-limited, never a RecursionError
        except JsonError:
            obj = None
        if isinstance(obj, dict) and isinstance(obj.get("context_k"), int) and not isinstance(obj["context_k"], bool):
            return obj["context_k"] if obj["context_k"] >= 1 else None
    m = _CONTEXT_K.search(text)
    return int(m.group(1)) if m and int(m.group(1)) >= 1 else None


@dataclass(frozen=True)
class EvidenceRank:
    """Where a run placed a question's evidence: ``first_rank`` (rank of the best-ranked evidence
    chunk, None when none was retrieved), ``context_k`` (None = unknown) and ``miss`` (True when
    evidence was retrieved, but only beyond ``context_k``)."""

    first_rank: int | None
    context_k: int | None

    @property
    def miss(self) -> bool:
        return self.first_rank is not None and self.context_k is not None and self.first_rank > self.context_k


def evidence_ranks(rag_runs: pl.DataFrame, golden: pl.DataFrame,
                   snapshot: pl.DataFrame | None = None) -> dict[tuple[str, str], EvidenceRank]:
    """For every (system, question) run of an answerable question with evidence: where the evidence was.

    Inputs: rag_runs (system, question_id, retrieved, generator), golden_set, optional corpus_snapshot
    (evidence the question's users cannot read does not count, as for ``evidence_retrieved``).
    Output: {(system, question_id): EvidenceRank}; a hit without a rank takes its list position
    (1-based). Raises nothing beyond polars' errors for missing columns.
    """
    ev = {r["question_id"]: set(r["evidence"] or [])
          for r in evidence_chunks(golden, snapshot).iter_rows(named=True)}
    answerable = {r["question_id"] for r in golden.select("question_id", "answerability").iter_rows(named=True)
                  if r["answerability"] == "answerable"}
    out: dict[tuple[str, str], EvidenceRank] = {}
    for r in rag_runs.select("system", "question_id", "retrieved", "generator").iter_rows(named=True):
        q = r["question_id"]
        if q not in answerable or not ev.get(q):
            continue
        ranks = [h["rank"] if h.get("rank") is not None else i
                 for i, h in enumerate((h for h in (r["retrieved"] or []) if h is not None), start=1)
                 if h.get("chunk_id") in ev[q]]
        out[(r["system"], q)] = EvidenceRank(min(ranks) if ranks else None, context_k_of(r["generator"]))
    return out
