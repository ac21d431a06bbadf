"""Question segments: the groups of golden questions every metric is also reported for.

:func:`question_segments` tags each golden question with the segments it is reported in: ``all``, its
answerability class, its golden ``segments`` tags, and two corpus segments of their own (permission errors,
and withdrawn or replaced documents); :func:`~rag_eval_pipeline.core.metrics.summary.summarise` aggregates
per segment. Nothing here imports Dagster.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.metrics.decisions import evidence_chunks, readable_expr

__all__ = ["question_segments"]

_ACL_VALUES = ("restricted", "readable")
_DOC_VALUES = ("active", "withdrawn", "replaced")


def question_segments(golden: pl.DataFrame, snapshot: pl.DataFrame | None = None) -> pl.DataFrame:
    """The segments each golden question is reported in.

    Input: a ``golden_set`` frame (``question_id``, ``answerability``, ``segments``, ``relevant``,
    ``claims``, ``user_groups``; an extra ``lang`` or ``language`` column is used when present)
    and optionally a ``corpus_snapshot`` frame (``chunk_id``, ``acl``, ``status``).
    Output: columns ``question_id``, ``segment`` (str), unique rows sorted by both; every question
    has ``all`` and ``answerability=<class>``, plus:

    - each non-empty golden ``segments`` tag, verbatim (expected as ``key=value``);
    - ``lang=<value>`` from a ``lang``/``language`` column, when the frame has one;
    - ``acl=restricted`` when any evidence chunk (relevant with grade > 0, supporting a golden
      claim, or a chunk of a ``relevant_docs`` document with grade > 0) has a non-empty ``acl``
      sharing no group with the question's ``user_groups``, or when
      the golden carries the tag ``acl=restricted``; otherwise ``acl=readable`` (only when a
      snapshot is given or the golden carries ``acl=readable``). A question is in exactly one of
      the two: restricted wins.
    - ``doc_status=withdrawn`` / ``doc_status=replaced`` when any evidence chunk's status is that
      (both may apply), or the golden carries that tag; otherwise ``doc_status=active`` (only when
      a snapshot is given or the golden carries ``doc_status=active``).

    - ``doc_year=<YYYY>``: the year the newest evidence document became valid (``valid_from``),
      when the snapshot has one.

    Evidence chunks absent from the snapshot are ignored for the corpus segments.
    Source: this pipeline's segments (docs/METRICS.md: permissions and withdrawn or replaced
    documents as segments of their own).
    """
    qid = golden.select("question_id")
    parts = [
        qid.with_columns(pl.lit("all").alias("segment")),
        golden.select("question_id", pl.concat_str(pl.lit("answerability="), pl.col("answerability")).alias("segment")),
    ]
    tags = (
        golden.select("question_id", pl.col("segments").alias("segment"))
        .explode("segment")
        .with_columns(pl.col("segment").str.strip_chars())
        .filter(pl.col("segment").is_not_null() & (pl.col("segment") != ""))
    )
    acl_tags = [f"acl={v}" for v in _ACL_VALUES]
    doc_tags = [f"doc_status={v}" for v in _DOC_VALUES]
    parts.append(tags.filter(~pl.col("segment").is_in(acl_tags + doc_tags)))
    for col in ("lang", "language"):
        if col in golden.columns:
            parts.append(
                golden.select("question_id", pl.concat_str(pl.lit("lang="), pl.col(col)).alias("segment"))
                .drop_nulls("segment")
            )
            break

    # the corpus facts, per question: restricted evidence, withdrawn / replaced evidence
    flags = qid.with_columns(
        pl.lit(snapshot is not None).alias("acl_known"),
        pl.lit(False).alias("restricted"),
        pl.lit(snapshot is not None).alias("doc_known"),
        pl.lit(False).alias("withdrawn"),
        pl.lit(False).alias("replaced"),
    )
    if snapshot is not None:
        ev = (
            evidence_chunks(golden, snapshot, readable_only=False)  # relevant_docs count: every chunk of the document
            .explode("evidence")
            .drop_nulls("evidence")
            .rename({"evidence": "chunk_id"})
            .join(golden.select("question_id", "user_groups"), on="question_id", how="left")
            .join(snapshot.select("chunk_id", "acl", "status", "valid_from").unique("chunk_id", keep="first"),
                  on="chunk_id", how="inner")
            .group_by("question_id")
            .agg(
                (~readable_expr()).any().alias("r"),
                (pl.col("status") == "withdrawn").any().alias("w"),
                (pl.col("status") == "replaced").any().alias("p"),
                pl.col("valid_from").max().dt.year().alias("year"),
            )
        )
        # the date segment: the year the newest evidence document became valid
        parts.append(ev.drop_nulls("year").select(
            "question_id", pl.concat_str(pl.lit("doc_year="), pl.col("year").cast(pl.Utf8)).alias("segment")))
        ev = ev.drop("year")
        flags = flags.join(ev, on="question_id", how="left").with_columns(
            pl.col("r").fill_null(False).alias("restricted"),
            pl.col("w").fill_null(False).alias("withdrawn"),
            pl.col("p").fill_null(False).alias("replaced"),
        ).drop("r", "w", "p")
    tag_flags = tags.group_by("question_id").agg(
        *[(pl.col("segment") == t).any().alias(t) for t in acl_tags + doc_tags]
    )
    f = flags.join(tag_flags, on="question_id", how="left").with_columns(
        [pl.col(t).fill_null(False) for t in acl_tags + doc_tags]
    )
    restricted = pl.col("restricted") | pl.col("acl=restricted")
    acl_known = pl.col("acl_known") | pl.col("acl=readable")
    withdrawn = pl.col("withdrawn") | pl.col("doc_status=withdrawn")
    replaced = pl.col("replaced") | pl.col("doc_status=replaced")
    doc_known = pl.col("doc_known") | pl.col("doc_status=active")
    corpus = f.select(
        "question_id",
        pl.when(restricted).then(pl.lit("acl=restricted"))
        .when(acl_known).then(pl.lit("acl=readable")).otherwise(None).alias("acl"),
        pl.when(withdrawn).then(pl.lit("doc_status=withdrawn")).otherwise(None).alias("w"),
        pl.when(replaced).then(pl.lit("doc_status=replaced")).otherwise(None).alias("p"),
        pl.when(~withdrawn & ~replaced & doc_known).then(pl.lit("doc_status=active")).otherwise(None).alias("a"),
    )
    for col in ("acl", "w", "p", "a"):
        parts.append(corpus.select("question_id", pl.col(col).alias("segment")).drop_nulls("segment"))
    return pl.concat(parts).unique().sort("question_id", "segment")
