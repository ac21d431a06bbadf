"""Retrieval scored per document: document-level qrels and runs made from the ranked chunks.

A golden question may judge relevance per document (``relevant_docs``: graded doc ids), as TREC and
most teams label. The retrieval measures are then also computed at document level, from the same
ranked chunks: each hit becomes its chunk's document; a document's place in the ranking is that of
its first retrieved chunk, and later chunks of the same document are dropped (counted in
``dropped_chunks``), so a document is retrieved once, as trec_eval requires of a run (it refuses a
docno twice for one topic, ``form_res_rels.c``). The measures are then exactly trec_eval's on the
resulting document-level qrels and run (``docs/METRICS.md``, "Document-level relevance"), which the
TREC export writes as a pair (``trec/qrels_doc.txt``, ``trec/<system>.doc.run``).

Which levels a golden set is scored at (:func:`levels_of`): ``chunk`` when some question lists
relevant chunks (``relevant``), ``doc`` when some question lists relevant documents
(``relevant_docs``); both when both are given. At document level a question without
``relevant_docs`` is judged by the documents of its relevant chunks (grade: the highest grade of
that document's chunks); at chunk level a question without ``relevant`` has no relevant chunk (its
measures are null, status ``no_relevant``).

"First" follows the ranking mode: ``system`` ranks by the ``rank`` column (ties by list order) and
a document keeps its first chunk's rank; ``trec_eval`` ranks by score descending (compared in
single precision), ties by chunk id in decreasing byte order, and a document keeps its first
chunk's score (its highest), the document run then being re-ranked by trec_eval's own rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.metrics.retrieval_frames import QRELS_SCHEMA, RUN_LONG_SCHEMA, qrels_from_golden
from rag_eval_pipeline.core.plain_names import LEVELS  # the values of the ``level`` column


@dataclass(frozen=True)
class DocRun:
    """A document-level ``run_long`` frame (documents in the ``chunk_id`` column) and the chunks it
    left out because an earlier chunk of their document was retrieved."""

    run_long: pl.DataFrame
    dropped_chunks: int


def levels_of(golden: pl.DataFrame) -> tuple[str, ...]:
    """The levels a golden set is scored at: ``("chunk",)``, ``("doc",)`` or ``("chunk", "doc")``.

    Input: a ``golden_set`` frame (``relevant``; ``relevant_docs`` when present). Output: ``chunk``
    when some question has a relevant chunk, ``doc`` when some question has a relevant document;
    ``("chunk",)`` when neither (every retrieval measure is then null, as before documents existed).
    """
    chunk = "relevant" in golden.columns and bool((golden["relevant"].list.len().fill_null(0) > 0).any())
    doc = "relevant_docs" in golden.columns and bool((golden["relevant_docs"].list.len().fill_null(0) > 0).any())
    out = tuple(level for level, present in (("chunk", chunk), ("doc", doc)) if present)
    return out or ("chunk",)


def chunk_documents_map(snapshot: pl.DataFrame) -> pl.DataFrame:
    """``chunk_id`` -> ``doc_id`` of a snapshot (one row per chunk). Raises SchemaError for a missing column."""
    missing = [c for c in ("chunk_id", "doc_id") if c not in snapshot.columns]
    if missing:
        raise SchemaError(f"chunk_documents_map: snapshot lacks columns {missing}")
    return snapshot.select("chunk_id", "doc_id").unique("chunk_id", keep="first")


def doc_qrels(golden: pl.DataFrame, snapshot: pl.DataFrame) -> pl.DataFrame:
    """The document-level ``qrels`` frame of a golden set (documents in the ``chunk_id`` column).

    Input: a ``golden_set`` frame and the ``corpus_snapshot`` (``chunk_id``, ``doc_id``). Output:
    columns ``question_id``, ``chunk_id`` (a doc id), ``grade`` (i32): a question's
    ``relevant_docs`` when it has any, else the documents of its ``relevant`` chunks, each with the
    highest grade of its chunks; a question with neither keeps one placeholder row with a null id
    (its measures come out null, status ``no_relevant``, as at chunk level). Rows in golden order.
    """
    qrels = qrels_from_golden(golden)
    from_chunks = (
        qrels.with_row_index("_o")
        .join(chunk_documents_map(snapshot), on="chunk_id", how="left")
        .filter(pl.col("doc_id").is_not_null())
        .group_by("question_id", "doc_id").agg(pl.col("grade").max(), pl.col("_o").min())
    )
    if "relevant_docs" in golden.columns:
        docs = (golden.select("question_id", "relevant_docs").with_row_index("_q")
                .explode("relevant_docs").drop_nulls("relevant_docs")
                .with_row_index("_o")
                .select("question_id", "_q", "_o",
                        pl.col("relevant_docs").struct.field("doc_id").alias("doc_id"),
                        pl.col("relevant_docs").struct.field("grade").alias("grade")))
    else:
        docs = pl.DataFrame(schema={"question_id": pl.Utf8, "_q": pl.UInt32, "_o": pl.UInt32, "doc_id": pl.Utf8,
                                    "grade": pl.Int32})
    with_docs = set(docs["question_id"].to_list())
    from_chunks = from_chunks.filter(~pl.col("question_id").is_in(list(with_docs)))
    order = golden.select("question_id").with_row_index("_q")
    judged = pl.concat([
        docs.select("question_id", "_q", pl.col("_o").cast(pl.Int64), "doc_id", pl.col("grade").cast(pl.Int32)),
        from_chunks.join(order, on="question_id", how="left").select(
            "question_id", "_q", pl.col("_o").cast(pl.Int64), "doc_id", pl.col("grade").cast(pl.Int32)),
    ])
    empty = order.join(judged.select("question_id").unique(), on="question_id", how="anti").select(
        "question_id", "_q", pl.lit(None, pl.Int64).alias("_o"), pl.lit(None, pl.Utf8).alias("doc_id"),
        pl.lit(None, pl.Int32).alias("grade"))
    out = pl.concat([judged, empty]).sort("_q", "_o", nulls_last=True)
    return out.select("question_id", pl.col("doc_id").alias("chunk_id"), "grade").cast(pl.Schema(QRELS_SCHEMA))


def doc_run(run_long: pl.DataFrame, snapshot: pl.DataFrame, mode: str = "system") -> DocRun:
    """A chunk-level ``run_long`` frame made document-level: each document once, at its first chunk's place.

    Input: ``run_long`` (``system``, ``question_id``, ``chunk_id``, ``score``, ``rank``; placeholder
    rows with a null ``chunk_id`` for a question that retrieved nothing), the ``corpus_snapshot``
    (``chunk_id``, ``doc_id``), ``mode`` (``system`` or ``trec_eval``: which order "first" means;
    module docstring). Output: a :class:`DocRun` whose frame has the ``run_long`` columns with the
    doc id in ``chunk_id`` and the first chunk's ``score`` and ``rank``, in the mode's order; a
    question whose chunks all lie outside the snapshot, or that retrieved nothing, keeps one
    placeholder row. Raises SchemaError for a missing column.
    """
    missing = [c for c in RUN_LONG_SCHEMA if c not in run_long.columns]
    if missing:
        raise SchemaError(f"doc_run: run_long lacks columns {missing}")
    run = (run_long.select(list(RUN_LONG_SCHEMA)).with_row_index("_row")
           .join(chunk_documents_map(snapshot), on="chunk_id", how="left", maintain_order="left"))
    if mode == "trec_eval":
        run = run.with_columns(pl.col("score").cast(pl.Float32).alias("_key"))
        order, descending = ["system", "question_id", "_key", "chunk_id", "_row"], [False, False, True, True, False]
    else:
        run = run.with_columns(pl.col("rank").alias("_key"))
        order, descending = ["system", "question_id", "_key", "_row"], [False, False, False, False]
    ranked = run.sort(order, descending=descending, nulls_last=True)
    hits = ranked.filter(pl.col("doc_id").is_not_null())
    firsts = hits.unique(["system", "question_id", "doc_id"], keep="first", maintain_order=True)
    dropped = hits.height - firsts.height
    asked = ranked.select("system", "question_id").unique(maintain_order=True)
    empty = asked.join(firsts.select("system", "question_id").unique(), on=["system", "question_id"], how="anti")
    out = pl.concat([
        firsts.select("system", "question_id", pl.col("doc_id").alias("chunk_id"), "score", "rank", "_row"),
        empty.select("system", "question_id", pl.lit(None, pl.Utf8).alias("chunk_id"),
                     pl.lit(None, pl.Float64).alias("score"), pl.lit(None, pl.Int32).alias("rank"),
                     pl.lit(None, pl.UInt32).alias("_row")),
    ], how="vertical_relaxed")
    keep = asked.with_row_index("_pair")
    out = (out.join(keep, on=["system", "question_id"], how="left").sort("_pair", maintain_order=True)
           .select(list(RUN_LONG_SCHEMA)).cast(pl.Schema(RUN_LONG_SCHEMA)))
    return DocRun(out, dropped)


def primary_level_rows(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows of a ``question_metrics`` / ``metric_summary`` / ``metric_history`` frame at one level per
    metric: chunk when the metric has chunk-level rows, else doc; rows without a level are kept. For
    readers that show one number per (system, metric, k). A frame without ``level`` is returned as is."""
    if "level" not in frame.columns or frame.height == 0:
        return frame
    chunk_metrics = frame.filter(pl.col("level") == "chunk")["metric"].unique().to_list()
    return frame.filter(pl.col("level").is_null() | (pl.col("level") == "chunk")
                        | ((pl.col("level") == "doc") & ~pl.col("metric").is_in(chunk_metrics)))


def metric_levels(frame: pl.DataFrame, metric: str) -> list[str | None]:
    """The levels ``metric`` has rows at in a ``question_metrics`` / ``metric_summary`` frame, chunk before doc.

    Output: a sub-list of ``["chunk", "doc", None]`` in that order; ``[None]`` for a metric without levels,
    one absent from ``frame``, or a frame written before levels existed (no ``level`` column). Never raises."""
    if "level" not in frame.columns:
        return [None]
    present = set(frame.filter(pl.col("metric") == metric)["level"].to_list())
    return [lv for lv in ("chunk", "doc", None) if lv in present] or [None]


def sole_level(frame: pl.DataFrame, metric: str) -> str | None:
    """``"doc"`` when ``metric`` has document-level rows only in ``frame`` (as after :func:`primary_level_rows`
    on a golden set judged per document), else None: the level a one-number-per-metric reader prints
    (``recall_5 (doc)``, else bare). Never raises."""
    return "doc" if metric_levels(frame, metric) == ["doc"] else None


def levels_not_scored(summary: pl.DataFrame, levels: tuple[str, ...] | None = None) -> list[dict]:
    """Where a ``metric_summary`` breaks the rule that every question is scored at every level: the check that
    catches a per-question step that scored some questions at fewer levels than the others (a question shard
    or batch that decided the levels from its own part of the golden set).

    Input: a ``metric_summary`` frame (``system``, ``split``, ``segment``, ``metric``, ``k``, ``level``, ``n``);
    ``levels``: the levels the whole golden set is scored at (:func:`levels_of`), or None when not known (only
    the summary's own consistency is checked). Read: the trec_eval retrieval measures
    (``core/metrics/names.MEASURES``) of split ``all``, segment ``all``. The invariant: every level is scored
    over the same questions, each golden question with a run row of the system (the qrels of each level hold
    every golden question, one without any relevance as a placeholder scored null; a system whose ids are
    documents keeps null chunk-level rows), so (a) every system's retrieval rows sit at the same levels,
    ``levels`` when given, and (b) for each system, each (metric, k) has the same ``n`` (questions) at every
    level.
    Output: one dict per breach, sorted: ``{"system", "problem": "levels", "scored", "expected"}`` or
    ``{"system", "problem": "questions_differ", "metric", "k", "n_by_level"}``; empty when the rule holds, for
    an empty summary or one without a ``level`` column (tables written before levels existed). Raises nothing
    for a well-formed summary. Source: trec_eval scores every topic of the run (every topic of the qrels with
    ``-c``); a level is a second qrels over the same topics (``docs/METRICS.md``, "Document-level relevance").
    """
    from rag_eval_pipeline.core.metrics.names import MEASURES

    if "level" not in summary.columns or summary.height == 0:
        return []
    rows = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all")
                          & pl.col("metric").is_in(list(MEASURES)) & pl.col("level").is_not_null())
    if rows.height == 0:
        return []
    scored = {system: sorted(own["level"].unique().to_list())
              for (system,), own in rows.group_by("system", maintain_order=True)}
    expected = sorted(levels) if levels is not None else max(scored.values(), key=len)
    out: list[dict] = [{"system": system, "problem": "levels", "scored": got, "expected": expected}
                       for system, got in scored.items() if got != expected]
    per = rows.group_by("system", "metric", "k", maintain_order=True).agg(pl.col("level"), pl.col("n"))
    for system, metric, k, lv, n in per.iter_rows():
        if len(set(n)) > 1:
            out.append({"system": system, "problem": "questions_differ", "metric": metric, "k": k,
                        "n_by_level": dict(zip(lv, n, strict=True))})
    return sorted(out, key=lambda d: (str(d["system"]), d["problem"], str(d.get("metric")), d.get("k") or 0))


__all__ = ["LEVELS", "DocRun", "chunk_documents_map", "doc_qrels", "doc_run", "levels_not_scored", "levels_of",
           "metric_levels", "primary_level_rows", "sole_level"]
