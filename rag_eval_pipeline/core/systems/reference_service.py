"""The built-in reference system answering one question at a time (what ``serve-reference`` serves).

:func:`run_reference_system` answers a whole golden set in one batch; a service is asked one
question at a time, so :class:`ReferenceService` builds the same index once and answers each
question with the same retriever, access rule and extractive answerer. Its replies are run-log
objects, so the in-process run and a run over HTTP give the same rows (the parity tests check it).
"""

from __future__ import annotations

import json
import threading
from typing import Any

import polars as pl

from rag_eval_pipeline.core import reference_system as ref
from rag_eval_pipeline.core.generation.extractive import GENERATOR_VERSION, ExtractiveAnswerer


class ReferenceService:
    """A reference system (``kind: reference`` entry of the configuration) indexed over ``snapshot``.

    Input: a ``corpus_snapshot`` frame, the system's typed section (``ReferenceSystem``, or the same
    entry as a mapping) and the snapshot's corpus version. Raises ConfigError as
    :func:`run_reference_system` does for a bad entry. :meth:`answer` is thread-safe (one lock: the
    retrievers are not documented as thread-safe).
    """

    def __init__(self, snapshot: pl.DataFrame, system: Any, corpus_version: str):
        spec = ref.reference_spec(system)
        self.name = spec.name
        self.corpus_version = corpus_version
        self.rcfg = spec.retriever.resolved()
        gcfg = spec.generator
        lang = gcfg.language if gcfg.language is not None else self.rcfg["language"]
        self.answerer = ExtractiveAnswerer(
            abstain_threshold=gcfg.abstain_threshold, context_k=gcfg.context_k, max_sentences=gcfg.max_sentences,
            language=lang, stopwords=list(gcfg.stopwords) if isinstance(gcfg.stopwords, tuple) else gcfg.stopwords)
        self.prompt_version = spec.prompt_version
        self.retriever_json = json.dumps(self.rcfg, sort_keys=True)
        self.generator_desc = GENERATOR_VERSION + " " + json.dumps(
            {"abstain_threshold": self.answerer.abstain_threshold, "context_k": self.answerer.context_k,
             "max_sentences": self.answerer.max_sentences, "language": lang}, sort_keys=True)
        chunks = snapshot.filter(pl.col("status").is_in(self.rcfg["index_status"]))
        self.chunk_ids = chunks["chunk_id"].to_list()
        texts = chunks["text"].fill_null("").to_list()
        self.acls = chunks["acl"].to_list()
        self.text_of = dict(zip(self.chunk_ids, texts))
        titles = chunks["title"].to_list()
        index_texts = ([f"{t} {x}" if t else x for t, x in zip(titles, texts)] if self.rcfg["with_title"] else texts)
        self.parts = ref._build_retriever(self.rcfg)
        if self.chunk_ids:
            for part in self.parts.values():
                part.index(self.chunk_ids, index_texts)
        self._lock = threading.Lock()

    def answer(self, question_id: str, question: str, user_groups: list[str] | None) -> dict[str, Any]:
        """One run-log object (docs/systems.md, "Logs of your own RAG system") for one question.

        Output keys: ``question_id``, ``retrieved`` (chunk_id, score, rank), ``decision``, ``answer``,
        ``citations``, ``error``, ``corpus_version``, ``retriever``, ``generator``, ``model``,
        ``prompt_version``. A failure inside retrieval or generation is decision ``error`` with the
        reason, as in the batch run.
        """
        base = {"question_id": question_id, "corpus_version": self.corpus_version, "retriever": self.retriever_json,
                "generator": self.generator_desc, "model": "none", "prompt_version": self.prompt_version}
        with self._lock:
            try:
                allowed = ref._allowed_sets(self.chunk_ids, self.acls, [list(user_groups or [])])
                hits = ref._search(self.parts, self.rcfg, [question], allowed)[0] if self.chunk_ids else []
            except Exception as exc:  # noqa: BLE001 - reported as the batch run reports it
                return {**base, "retrieved": [], "decision": "error", "citations": [],
                        "error": f"retrieval failed: {type(exc).__name__}: {exc}"}
            retrieved = [{"chunk_id": c, "score": float(s), "rank": r} for r, (c, s) in enumerate(hits, start=1)]
            try:
                res = self.answerer.answer(question, [(c, self.text_of[c]) for c, _ in hits])
            except Exception as exc:  # noqa: BLE001
                return {**base, "retrieved": retrieved, "decision": "error", "citations": [],
                        "error": f"generation failed: {type(exc).__name__}: {exc}"}
        return {**base, "retrieved": retrieved, "decision": res.decision, "answer": res.answer,
                "citations": list(res.citations)}
