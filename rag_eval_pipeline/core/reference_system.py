"""The built-in reference RAG system: BM25 / dense / hybrid retrieval + the extractive answerer.

It exists so that the whole chain runs offline with no model server, and as a transparent baseline.
:func:`run_reference_system` answers every question of a golden set against a corpus snapshot and
returns the ``rag_runs`` table (``core.tables.SCHEMAS["rag_runs"]``).

System configuration: the typed section :class:`~rag_eval_pipeline.core.systems.kinds.reference.ReferenceSystem`
(``retriever``, ``generator``, ``prompt_version``; every key, default and range is declared there and
listed in ``docs/systems.md``). The functions here also accept the same entry as a plain mapping
(``{"name": ..., "retriever": {...}, "generator": {...}}``), read by the same parser.

Access control: a chunk whose ``acl`` is empty (or null) is readable by everyone; otherwise a
question may retrieve it only when its ``user_groups`` share at least one group with the ``acl``.
Forbidden chunks are removed before the top-k is taken, never after.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.generation.extractive import GENERATOR_VERSION, ExtractiveAnswerer

if TYPE_CHECKING:  # imported where used: dense retrieval needs the optional sentence-transformers
    from rag_eval_pipeline.core.retrieval.bm25 import BM25Retriever
    from rag_eval_pipeline.core.retrieval.dense import DenseRetriever


def reference_spec(system: Any) -> Any:
    """``system`` as a :class:`~rag_eval_pipeline.core.systems.kinds.reference.ReferenceSystem`: returned
    as is when it already is one (a typed section, recognised by its fields: this module does not import
    the kind's, which imports it); a mapping (``kind`` optional) is read by the configuration's parser.
    Raises ConfigError (a SectionError naming the key) for an unknown key or a bad value."""
    from rag_eval_pipeline.core.systems.base import system_from_mapping

    if not isinstance(system, dict):
        if all(hasattr(system, field) for field in ("name", "retriever", "generator", "prompt_version")):
            return system
        raise ConfigError(f"a reference system's configuration must be a mapping, got {type(system).__name__}")
    if system.get("kind", "reference") != "reference":
        raise ConfigError(f"system {system.get('name')!r} is of kind {system.get('kind')!r}, not reference")
    return system_from_mapping({**system, "kind": "reference"})


def _build_retriever(cfg: dict[str, Any]):
    """The retrievers a resolved config needs: {"bm25": BM25Retriever, "dense": DenseRetriever}, not
    yet indexed. Raises ConfigError (bad BM25 settings, dense without sentence-transformers)."""
    from rag_eval_pipeline.core.retrieval.bm25 import BM25Retriever

    parts: dict[str, BM25Retriever | DenseRetriever] = {}
    if cfg["type"] in ("bm25", "hybrid"):
        parts["bm25"] = BM25Retriever(
            language=cfg["language"], stopwords=cfg["stopwords"], k1=cfg["k1"], b=cfg["b"],
            method=cfg["method"],
        )
    if cfg["type"] in ("dense", "hybrid"):
        from rag_eval_pipeline.core.retrieval.dense import DenseRetriever

        parts["dense"] = DenseRetriever(
            model_name=cfg["model"], device=cfg["device"], batch_size=cfg["batch_size"],
            encoder=_encoder(cfg["model"], cfg["device"]),
        )
    return parts


_ENCODERS: dict[tuple[str, str], Any] = {}


def _encoder(model: str, device: str):
    """Load (once per process) the sentence-transformers model; ConfigError when unavailable."""
    from rag_eval_pipeline.core.retrieval.dense import load_encoder

    key = (model, device)
    if key not in _ENCODERS:
        _ENCODERS[key] = load_encoder(model, device)
    return _ENCODERS[key]


def _search(parts: dict, cfg: dict, queries: Sequence[str], allowed) -> list[list[tuple[str, float]]]:
    """Hits for each query: the configured retriever, or RRF of bm25 and dense at ``depth``."""
    k = cfg["k"]
    if cfg["type"] == "bm25":
        return parts["bm25"].search(queries, k=k, allowed=allowed)
    if cfg["type"] == "dense":
        return parts["dense"].search(queries, k=k, allowed=allowed)
    from rag_eval_pipeline.core.retrieval.fusion import reciprocal_rank_fusion

    lex = parts["bm25"].search(queries, k=cfg["depth"], allowed=allowed)
    sem = parts["dense"].search(queries, k=cfg["depth"], allowed=allowed)
    return [reciprocal_rank_fusion([a, b], k_rrf=cfg["k_rrf"], top_k=k) for a, b in zip(lex, sem)]


def _allowed_sets(
    chunk_ids: list[str], acls: list[list[str] | None], groups_per_question: list[list[str] | None]
) -> list[frozenset[str] | None]:
    """Per question: the indexed chunk ids it may read, or None when it may read all of them."""
    public = [c for c, a in zip(chunk_ids, acls) if not a]
    by_group: dict[str, list[str]] = {}
    for c, a in zip(chunk_ids, acls):
        for g in a or ():
            by_group.setdefault(g, []).append(c)
    restricted = len(public) < len(chunk_ids)
    cache: dict[frozenset, frozenset | None] = {}
    out = []
    for groups in groups_per_question:
        key = frozenset(groups or ())
        if key not in cache:
            if not restricted:
                cache[key] = None
            else:
                s = set(public)
                for g in key:
                    s.update(by_group.get(g, ()))
                cache[key] = None if len(s) == len(chunk_ids) else frozenset(s)
        out.append(cache[key])
    return out


def run_reference_system(
    snapshot: pl.DataFrame,
    golden: pl.DataFrame,
    system: Any,
    corpus_version: str,
    golden_version: str,
) -> pl.DataFrame:
    """Answer every question of ``golden`` with the reference system described by ``system``.

    Input: ``snapshot`` (``corpus_snapshot`` schema), ``golden`` (``golden_set`` schema; question
    texts non-empty), ``system`` (a ReferenceSystem section or the same as a mapping, module docstring),
    the two version strings recorded in each row.
    Output: ``rag_runs`` (conformed), one row per question in golden order: ``retrieved`` = up to k
    hits (chunk_id, score, rank counted from 1) among the chunks whose status is in
    ``index_status`` and that the question's ``user_groups`` may read; ``decision`` "answer" or
    "abstain" from the extractive answerer (never "clarify"), or "error" with the exception message
    in ``error`` when that question failed (the run goes on); manifest columns ``retriever`` =
    JSON of the resolved retriever config (sorted keys), ``generator`` = "extractive-v1",
    ``model`` = "none", ``prompt_version`` = system["prompt_version"] (default "none").
    Raises ConfigError for a bad configuration (including dense retrieval without
    sentence-transformers) -- a configuration error stops the run, a per-question error does not.
    """
    spec = reference_spec(system)
    name = spec.name
    rcfg = spec.retriever.resolved()
    gcfg = spec.generator
    lang = gcfg.language if gcfg.language is not None else rcfg["language"]
    answerer = ExtractiveAnswerer(
        abstain_threshold=gcfg.abstain_threshold,
        context_k=gcfg.context_k,
        max_sentences=gcfg.max_sentences,
        language=lang,
        stopwords=list(gcfg.stopwords) if isinstance(gcfg.stopwords, tuple) else gcfg.stopwords,
    )
    prompt_version = spec.prompt_version
    retriever_json = json.dumps(rcfg, sort_keys=True)
    # The generator's settings go into the manifest so two systems differing only in them stay apart.
    generator_desc = GENERATOR_VERSION + " " + json.dumps(
        {"abstain_threshold": answerer.abstain_threshold, "context_k": answerer.context_k,
         "max_sentences": answerer.max_sentences, "language": lang}, sort_keys=True)

    # ---- index
    chunks = snapshot.filter(pl.col("status").is_in(rcfg["index_status"]))
    chunk_ids = chunks["chunk_id"].to_list()
    texts = chunks["text"].fill_null("").to_list()
    titles = chunks["title"].to_list()
    acls = chunks["acl"].to_list()
    text_of = dict(zip(chunk_ids, texts))
    index_texts = (
        [f"{t} {x}" if t else x for t, x in zip(titles, texts)] if rcfg["with_title"] else texts
    )
    parts = _build_retriever(rcfg)
    if chunk_ids:
        for part in parts.values():
            part.index(chunk_ids, index_texts)

    # ---- retrieve (batched; one question at a time if the batch fails)
    qids = golden["question_id"].to_list()
    questions = golden["question"].to_list()
    allowed = _allowed_sets(chunk_ids, acls, golden["user_groups"].to_list())
    hits: list[list[tuple[str, float]] | None] = [None] * len(qids)
    errors: list[str | None] = [None] * len(qids)
    if not chunk_ids:
        hits = [[] for _ in qids]
    else:
        try:
            hits = list(_search(parts, rcfg, questions, allowed))
        except Exception:  # noqa: BLE001 -- isolate the failing question below
            for i, q in enumerate(questions):
                try:
                    hits[i] = _search(parts, rcfg, [q], [allowed[i]])[0]
                except Exception as exc:  # noqa: BLE001
                    errors[i] = f"retrieval failed: {type(exc).__name__}: {exc}"

    # ---- generate
    rows = []
    for i, qid in enumerate(qids):
        row_hits = hits[i] or []
        retrieved = [
            {"chunk_id": c, "score": float(s), "rank": r} for r, (c, s) in enumerate(row_hits, start=1)
        ]
        decision, answer, citations, error = "error", None, [], errors[i]
        if error is None:
            try:
                res = answerer.answer(questions[i], [(c, text_of[c]) for c, _ in row_hits])
                decision, answer, citations = res.decision, res.answer, res.citations
            except Exception as exc:  # noqa: BLE001
                decision, error = "error", f"generation failed: {type(exc).__name__}: {exc}"
        rows.append({
            "system": name, "question_id": qid, "retrieved": retrieved, "decision": decision,
            "answer": answer, "citations": citations, "error": error,
            "corpus_version": corpus_version, "golden_version": golden_version,
            "retriever": retriever_json, "generator": generator_desc, "model": "none",
            "prompt_version": prompt_version,
        })
    df = pl.DataFrame(rows, schema=tables.SCHEMAS["rag_runs"])
    return tables.conform(df, "rag_runs")
