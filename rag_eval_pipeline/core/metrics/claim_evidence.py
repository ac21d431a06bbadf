"""Claim evidence availability: the share of a question's annotated claims whose support was retrieved."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import polars as pl

from rag_eval_pipeline.core.errors import ConfigError, InputError, SchemaError
from rag_eval_pipeline.core.metrics.names import CLAIM_METRIC, RANKING_MODES
from rag_eval_pipeline.core.metrics.ranking import check_ks
from rag_eval_pipeline.core.metrics.retrieval_frames import PER_QUESTION_SCHEMA, explode_runs

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence


def _positions(hits: pl.DataFrame, mode: str) -> pl.DataFrame:
    """``system``, ``question_id``, ``chunk_id``, ``pos``: 1-based position of each hit in the mode's order."""
    hits = hits.filter(pl.col("chunk_id").is_not_null()).with_row_index("_row")
    if mode == "system":
        order, descending = ["system", "question_id", "rank", "_row"], [False, False, False, False]
    else:
        bad = hits.filter(pl.col("score").is_null() | pl.col("score").is_nan())
        if bad.height:
            row = bad.row(0, named=True)
            raise InputError(f"system {row['system']!r}, question {row['question_id']!r}, chunk {row['chunk_id']!r}: "
                             "score is null or NaN (ranking mode 'trec_eval' orders by score)", field="score")
        # trec_eval compares scores as C floats, ties by docno in decreasing byte order (form_res_rels.c)
        hits = hits.with_columns(pl.col("score").cast(pl.Float32).alias("_score"))
        order, descending = ["system", "question_id", "_score", "chunk_id", "_row"], [False, False, True, True, False]
    return (hits.sort(order, descending=descending, nulls_last=True)
            .with_columns((pl.int_range(pl.len()).over("system", "question_id") + 1).alias("pos"))
            .group_by("system", "question_id", "chunk_id").agg(pl.col("pos").min()))


def claim_evidence_availability(rag_runs: pl.DataFrame, golden: pl.DataFrame, ks: Sequence[int],
                                mode: str = "system", complete: bool = False,
                                doc_evidence: JudgingEvidence | None = None) -> pl.DataFrame:
    """Share of a question's human-annotated claims whose supporting chunks were retrieved in the top k.

    Inputs: ``rag_runs`` (``system``, ``question_id``, ``retrieved``: list of struct ``chunk_id``,
    ``score``, ``rank``); ``golden`` (``question_id``, ``claims``: list of struct ``claim_id``,
    ``text``, ``supporting`` list[str]); ``ks``: cutoffs >= 1; ``mode``: ``"system"`` takes hits in
    ``rank`` order (what the generator saw; ties by list order), ``"trec_eval"`` by score descending,
    ties by chunk id descending, as trec_eval ranks; ``complete``: a golden question without a run row
    of a system scores as an empty retrieval (0 when it has claims), as ``trec_eval -c`` scores a
    missing topic; ``doc_evidence``: the snapshot's documents for the systems whose ids are document
    ids (``chunk_map: {doc_ids: true}``; the mapping judging reads,
    :class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`): for those systems the
    positions are the documents' and a supporting chunk is retrieved at its document's position, so a
    claim is available when a document holding one of its supporting chunks is in the top k documents.
    Output: ``question_metrics`` rows without ``split`` (:data:`PER_QUESTION_SCHEMA`), one per system,
    evaluated question present in ``golden`` and k: metric ``claim_evidence_availability``,
    ``numerator`` = claims with at least one supporting chunk in the top k, ``denominator`` = claims
    of the question, ``value`` = their ratio in [0, 1]; ``ranking_mode`` = ``mode``. A question
    without claims gets a null value and status ``no_claims`` (nothing to support: not evaluable). A
    claim with no supporting chunk counts in the denominator and is never available. Run questions
    missing from ``golden`` give no rows.
    Raises ConfigError for a k below 1 or an unknown mode, SchemaError for missing columns,
    InputError for a repeated ``(system, question_id)`` run or (mode trec_eval) a hit without a
    finite score. Source: claim evidence availability as defined in ``docs/METRICS.md`` (the
    per-claim form of recall@k); ranking rules of trec_eval 10.0 ``form_res_rels.c``.
    """
    ks_t = check_ks(ks)
    if mode not in RANKING_MODES:
        raise ConfigError(f"ranking mode must be one of {RANKING_MODES}, got {mode!r}")
    for c in ("question_id", "claims"):
        if c not in golden.columns:
            raise SchemaError(f"claim_evidence_availability: golden lacks column {c!r}")
    hits = explode_runs(rag_runs)
    asked = hits.select("system", "question_id").unique()
    if complete:
        asked = asked.select("system").unique().join(golden.select("question_id").unique(), how="cross")
    hits = _positions(hits, mode)
    claims = (golden.select("question_id", "claims")
              .explode("claims")
              .filter(pl.col("claims").is_not_null())
              .with_columns((pl.int_range(pl.len()).over("question_id")).alias("claim_no"),
                            pl.col("claims").struct.field("supporting").alias("supporting")))
    n_claims = (golden.select("question_id", pl.col("claims").list.len().fill_null(0).alias("n_claims"))
                .unique("question_id", keep="first"))
    support = (claims.select("question_id", "claim_no", "supporting").explode("supporting")
               .rename({"supporting": "chunk_id"}).filter(pl.col("chunk_id").is_not_null()))
    if doc_evidence is not None and doc_evidence.doc_id_systems:
        # a document-id system's hit (its document's first chunk) meets every chunk of its document
        docs = doc_evidence.documents()
        as_doc = pl.col("chunk_id").replace_strict(docs["chunk_id"], docs["document"], default=pl.col("chunk_id"),
                                                   return_dtype=pl.Utf8)
        by_doc = pl.col("system").is_in(list(doc_evidence.doc_id_systems))
        doc_hits = hits.filter(by_doc).with_columns(as_doc)
        doc_best = support.with_columns(as_doc).join(doc_hits, on=["question_id", "chunk_id"], how="inner")
        chunk_best = support.join(hits.filter(~by_doc), on=["question_id", "chunk_id"], how="inner")
        best = (pl.concat([chunk_best, doc_best.select(chunk_best.columns)])
                .group_by("system", "question_id", "claim_no").agg(pl.col("pos").min()))
    else:
        best = (support.join(hits, on=["question_id", "chunk_id"], how="inner")
                .group_by("system", "question_id", "claim_no").agg(pl.col("pos").min()))
    base = asked.join(n_claims, on="question_id", how="inner").sort("system", "question_id")
    frames = []
    for k in ks_t:
        avail = best.filter(pl.col("pos") <= k).group_by("system", "question_id").agg(pl.len().alias("num"))
        f = (base.join(avail, on=["system", "question_id"], how="left", maintain_order="left")
             .with_columns(
                 pl.lit(CLAIM_METRIC).alias("metric"),
                 pl.lit(k, pl.Int32).alias("k"),
                 pl.col("num").fill_null(0).cast(pl.Float64).alias("numerator"),
                 pl.col("n_claims").cast(pl.Float64).alias("denominator"))
             .with_columns(
                 pl.when(pl.col("denominator") > 0).then(pl.col("numerator") / pl.col("denominator"))
                 .otherwise(None).alias("value"),
                 pl.when(pl.col("denominator") > 0).then(pl.lit("ok")).otherwise(pl.lit("no_claims")).alias("status"),
                 pl.lit(mode).alias("ranking_mode")))
        frames.append(f.select(list(PER_QUESTION_SCHEMA)))
    if not frames:
        return pl.DataFrame(schema=PER_QUESTION_SCHEMA)
    return pl.concat(frames).cast(PER_QUESTION_SCHEMA)


__all__ = ["claim_evidence_availability"]
