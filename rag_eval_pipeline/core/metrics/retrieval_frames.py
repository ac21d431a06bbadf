"""The frames the retrieval measures read and write: ``run_long``, ``qrels`` and per-question rows.

``run_long`` has one row per retrieved hit, ``qrels`` one row per judged chunk (``docs/CONTRACTS.md``);
both keep a placeholder row with a null ``chunk_id`` for a question that retrieved nothing / has no
judged chunk, so that such a question is scored (or reported as not evaluable) instead of vanishing.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError

RUN_LONG_SCHEMA = pl.Schema(
    {"system": pl.Utf8, "question_id": pl.Utf8, "chunk_id": pl.Utf8, "score": pl.Float64, "rank": pl.Int32}
)
QRELS_SCHEMA = pl.Schema({"question_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int32})

#: The ``question_metrics`` table's columns minus ``split``: what every per-question metric returns.
PER_QUESTION_SCHEMA = pl.Schema(
    {
        "system": pl.Utf8,
        "question_id": pl.Utf8,
        "metric": pl.Utf8,
        "k": pl.Int32,
        "value": pl.Float64,
        "numerator": pl.Float64,
        "denominator": pl.Float64,
        "status": pl.Utf8,
        "ranking_mode": pl.Utf8,
    }
)


def explode_runs(rag_runs: pl.DataFrame) -> pl.DataFrame:
    """One row per retrieved hit of a ``rag_runs`` table: the ``run_long`` frame.

    Input: a frame with ``system``, ``question_id`` and ``retrieved`` (list of struct ``chunk_id``,
    ``score``, ``rank``), as in ``core.tables.SCHEMAS["rag_runs"]``.
    Output: columns ``system`` (str), ``question_id`` (str), ``chunk_id`` (str), ``score`` (f64),
    ``rank`` (i32), hits in list order. A run whose ``retrieved`` list is empty or null gives one
    placeholder row with null ``chunk_id``/``score``/``rank``: "the system was asked and retrieved
    nothing", so :func:`retrieval_question_metrics` scores it (recall 0, ...) instead of counting
    the question as missing. Raises SchemaError when a column is absent, InputError naming the
    system and question when one ``(system, question_id)`` occurs in two rows.
    Source: ``docs/CONTRACTS.md`` (run_long).
    """
    need = ("system", "question_id", "retrieved")
    missing = [c for c in need if c not in rag_runs.columns]
    if missing:
        raise SchemaError(f"explode_runs: rag_runs lacks columns {missing}")
    runs = rag_runs.select(need)
    dup = runs.select("system", "question_id").is_duplicated()
    if dup.any():
        row = runs.filter(dup).row(0, named=True)
        raise InputError(
            f"rag_runs holds question {row['question_id']!r} twice for system {row['system']!r}",
            field="question_id",
        )
    out = (
        runs.explode("retrieved", empty_as_null=True, keep_nulls=True)
        .with_columns(
            pl.col("retrieved").struct.field("chunk_id").cast(pl.Utf8).alias("chunk_id"),
            pl.col("retrieved").struct.field("score").cast(pl.Float64).alias("score"),
            pl.col("retrieved").struct.field("rank").cast(pl.Int32).alias("rank"),
        )
        .select(list(RUN_LONG_SCHEMA))
    )
    return out.cast(RUN_LONG_SCHEMA)


def qrels_from_golden(golden: pl.DataFrame) -> pl.DataFrame:
    """The relevance judgments of a golden set: the ``qrels`` frame.

    Input: a ``golden_set`` (or ``golden_raw``) frame with ``question_id`` and ``relevant`` (list
    of struct ``chunk_id``, ``grade``). Output: columns ``question_id`` (str), ``chunk_id`` (str),
    ``grade`` (i32), one row per judged chunk. A question whose ``relevant`` list is empty or null
    (an absent or clarification question) gives one row with null ``chunk_id`` and ``grade``, so
    the question stays known: its retrieval metrics come out null with status ``no_relevant``
    rather than the question being "unknown". Grades <= 0 are kept (judged non-relevant).
    Raises SchemaError when a column is absent. Source: ``docs/CONTRACTS.md`` (qrels).
    """
    missing = [c for c in ("question_id", "relevant") if c not in golden.columns]
    if missing:
        raise SchemaError(f"qrels_from_golden: golden lacks columns {missing}")
    out = (
        golden.select("question_id", "relevant")
        .explode("relevant", empty_as_null=True, keep_nulls=True)
        .with_columns(
            pl.col("relevant").struct.field("chunk_id").cast(pl.Utf8).alias("chunk_id"),
            pl.col("relevant").struct.field("grade").cast(pl.Int32).alias("grade"),
        )
        .select(list(QRELS_SCHEMA))
    )
    return out.cast(QRELS_SCHEMA)


def select_columns(df: pl.DataFrame, schema: pl.Schema, what: str) -> pl.DataFrame:
    """``df`` reduced to ``schema``'s columns, cast to its types. Raises SchemaError naming ``what``."""
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise SchemaError(f"{what}: missing columns {missing} (expected {list(schema)})")
    out = df.select(list(schema))
    casts = {c: t for c, t in schema.items() if out.schema[c] != t}
    if casts:
        try:
            out = out.cast(pl.Schema(casts))
        except Exception as exc:  # polars raises several error types for a bad cast
            raise SchemaError(f"{what}: cannot cast columns {sorted(casts)}: {exc}") from exc
    return out


__all__ = ["PER_QUESTION_SCHEMA", "QRELS_SCHEMA", "RUN_LONG_SCHEMA", "explode_runs", "qrels_from_golden",
           "select_columns"]
