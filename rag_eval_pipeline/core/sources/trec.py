"""Read and write TREC run files, TREC qrels and BEIR qrels.

Formats, as trec_eval 10.0 reads them (``usnistgov/trec_eval``, ``get_trec_results.c`` and
``get_qrels.c``):

* run: ``topic Q0 docno rank score runid`` separated by any whitespace; fields after ``runid`` are
  ignored (trec_eval's ``results.trunc`` fixture has such trailing text); blank lines and lines
  whose first non-blank character is ``#`` are skipped.
* qrels: ``topic iteration docno rel`` (exactly four fields, ``rel`` an integer that may be
  negative or graded); ``#`` comment lines and blank lines are skipped.
* BEIR qrels (``qrels/<split>.tsv`` of a BEIR dataset): tab-separated, header
  ``query-id	corpus-id	score``, ``score`` an integer grade.

Readers return the ``run_long`` / ``qrels`` frames of ``docs/CONTRACTS.md`` (see
``core.metrics.retrieval.RUN_LONG_SCHEMA`` and ``QRELS_SCHEMA``). Every parse error is an
InputError naming the file, the 1-based line and the field.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError

RUN_FIELDS = ("topic", "Q0", "docno", "rank", "score", "runid")
QRELS_FIELDS = ("topic", "iteration", "docno", "rel")
BEIR_HEADER = ("query-id", "corpus-id", "score")
#: The docno of the one line written for a question that retrieved nothing (no qrels judge it).
NO_RETRIEVAL_DOCNO = "rag_eval:no_retrieval"

_RUN_SCHEMA = pl.Schema({"system": pl.Utf8, "question_id": pl.Utf8, "chunk_id": pl.Utf8, "score": pl.Float64,
                         "rank": pl.Int32})
_QRELS_SCHEMA = pl.Schema({"question_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int32})


def _first_true(mask: pl.Series) -> int:
    """The 0-based index of the first True of a boolean Series that holds one (its ``arg_max``)."""
    i = mask.arg_max()
    if i is None:
        raise ValueError("the mask holds no True value")
    return i


def _lines(path: str | Path) -> pl.DataFrame:
    """Content lines of a text file: columns ``line_no`` (1-based, u32) and ``fields`` (list[str]).

    Blank lines and lines starting (after blanks) with ``#`` are dropped.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc})", path=str(path)) from exc
    except OSError as exc:
        raise InputError(f"cannot read file: {exc}", path=str(path)) from exc
    lines = pl.Series("line", text.split("\n"), dtype=pl.Utf8)
    df = pl.DataFrame({"line": lines}).with_row_index("line_no", offset=1)
    df = df.with_columns(pl.col("line").str.strip_chars().alias("line"))
    df = df.filter((pl.col("line") != "") & ~pl.col("line").str.starts_with("#"))
    return df.select("line_no", pl.col("line").str.extract_all(r"\S+").alias("fields"))


def _field_error(df: pl.DataFrame, bad: pl.Series, path: str | Path, message: str, field: str) -> InputError:
    row = df.filter(bad).row(0, named=True)
    return InputError(message.format(**row), path=str(path), line=int(row["line_no"]), field=field)


def read_trec_run(path: str | Path, system: str | None = None) -> pl.DataFrame:
    """Read a TREC run file into a ``run_long`` frame.

    Input: path of a file of ``topic Q0 docno rank score runid [ignored...]`` lines (any whitespace
    between fields; blank and ``#`` lines skipped). ``system``: the value for the ``system``
    column; None keeps each line's ``runid``.
    Output: columns ``system``, ``question_id`` (topic), ``chunk_id`` (docno), ``score`` (f64),
    ``rank`` (i32), in file order.
    Raises InputError with the file, line and field when a line has fewer than six fields (the
    field named is the first one missing), when ``score`` is not a finite number or ``rank`` not
    an integer, or when the file cannot be read. Source: trec_eval ``get_trec_results.c``
    (trec_eval itself ignores ``rank``; it is kept here for ``mode="system"``).
    """
    df = _lines(path)
    n = df["fields"].list.len()
    short = n < len(RUN_FIELDS)
    if short.any():
        row = df.filter(short).row(0, named=True)
        got = len(row["fields"])
        raise InputError(f"expected at least 6 whitespace-separated fields "
                         f"(topic Q0 docno rank score runid), got {got}",
                         path=str(path), line=int(row["line_no"]), field=RUN_FIELDS[got])
    out = df.select(
        "line_no",
        pl.col("fields").list.get(5).alias("system"),
        pl.col("fields").list.get(0).alias("question_id"),
        pl.col("fields").list.get(2).alias("chunk_id"),
        pl.col("fields").list.get(4).alias("_score"),
        pl.col("fields").list.get(3).alias("_rank"),
    ).with_columns(
        pl.col("_score").cast(pl.Float64, strict=False).alias("score"),
        pl.col("_rank").cast(pl.Int32, strict=False).alias("rank"),
    )
    bad_score = out["score"].is_null() | out["score"].is_nan() | out["score"].is_infinite()
    if bad_score.any():
        raise _field_error(out, bad_score, path, "score {_score!r} is not a finite number", "score")
    if out["rank"].is_null().any():
        raise _field_error(out, out["rank"].is_null(), path, "rank {_rank!r} is not an integer", "rank")
    if system is not None:
        out = out.with_columns(pl.lit(system, pl.Utf8).alias("system"))
    return out.select(list(_RUN_SCHEMA)).cast(_RUN_SCHEMA)


def write_trec_run(run_long: pl.DataFrame, path: str | Path, run_id: str | None = None) -> None:
    """Write a ``run_long`` frame as a TREC run file.

    Input: columns ``system``, ``question_id``, ``chunk_id``, ``score``, ``rank``; ``run_id``
    replaces the ``system`` column as the runid when given. Output: one line
    ``question_id Q0 chunk_id rank score runid`` per hit (single spaces, score with ``repr``
    precision so it reads back exactly), in frame order. A placeholder row (null ``chunk_id``: the
    question was run and retrieved nothing, e.g. an errored run) becomes one line with the docno
    :data:`NO_RETRIEVAL_DOCNO`, rank 1 and score 0: trec_eval then evaluates the question (0 on every
    measure, as the pipeline scores it) instead of leaving it out; its ``num_ret`` reads 1 there.
    Raises InputError naming the row and field when an id is empty or holds whitespace (the format
    cannot represent it), when score or rank of a hit is null, or when a hit's id is
    :data:`NO_RETRIEVAL_DOCNO`. Source: trec_eval ``get_trec_results.c`` (a topic exists in a run only
    through its lines).
    """
    df = run_long.select("system", "question_id", "chunk_id", "score", "rank")
    if run_id is not None:
        df = df.with_columns(pl.lit(run_id, pl.Utf8).alias("system"))
    clash = df["chunk_id"] == NO_RETRIEVAL_DOCNO
    if clash.any():
        i = _first_true(clash)
        raise InputError(f"row {i + 1}: chunk_id {NO_RETRIEVAL_DOCNO!r} is reserved for a question that retrieved "
                         "nothing", path=str(path), field="chunk_id")
    empty = df["chunk_id"].is_null()
    df = df.with_columns(
        pl.when(empty).then(pl.lit(NO_RETRIEVAL_DOCNO)).otherwise(pl.col("chunk_id")).alias("chunk_id"),
        pl.when(empty).then(pl.lit(0.0)).otherwise(pl.col("score").cast(pl.Float64)).alias("score"),
        pl.when(empty).then(pl.lit(1, pl.Int32)).otherwise(pl.col("rank")).alias("rank"),
    )
    _check_tokens(df, ("question_id", "chunk_id", "system"), path)
    for col in ("score", "rank"):
        if df[col].null_count():
            i = _first_true(df[col].is_null())
            raise InputError(f"row {i + 1}: {col} is null", path=str(path), field=col)
    lines = [f"{q} Q0 {c} {r} {s!r} {sy}\n" for q, c, r, s, sy in
             zip(df["question_id"], df["chunk_id"], df["rank"], df["score"], df["system"])]
    Path(path).write_text("".join(lines), encoding="utf-8")


def document_docnos(snapshot: pl.DataFrame) -> pl.DataFrame | None:
    """The chunk id -> document id map when every document of ``snapshot`` is one chunk, else None.

    Input: a frame with ``chunk_id`` and ``doc_id`` (a ``corpus_snapshot``). Output: columns
    ``chunk_id``, ``doc_id`` (one row per chunk), or None when some document has two or more chunks
    (its chunks would collapse into one docno) or the snapshot is empty. A BEIR corpus (one chunk per
    document) then gets TREC files in the dataset's own document ids, which diff directly against
    runs from other toolkits (Pyserini, BEIR's qrels). Raises SchemaError for a missing column.
    """
    missing = [c for c in ("chunk_id", "doc_id") if c not in snapshot.columns]
    if missing:
        raise SchemaError(f"document_docnos: snapshot lacks columns {missing}")
    ids = snapshot.select("chunk_id", "doc_id").unique("chunk_id")
    if ids.height == 0 or ids["doc_id"].n_unique() != ids.height:
        return None
    return ids


def with_docnos(frame: pl.DataFrame, docnos: pl.DataFrame | None) -> pl.DataFrame:
    """``frame`` with its ``chunk_id`` column replaced by document ids from :func:`document_docnos`.

    Input: a ``run_long`` or ``qrels`` frame and the map (None leaves the frame as it is). Null
    chunk ids (placeholders) stay null; an id absent from the map raises InputError naming it.
    """
    if docnos is None:
        return frame
    mapped = frame.join(docnos, on="chunk_id", how="left", maintain_order="left")
    lost = mapped.filter(pl.col("chunk_id").is_not_null() & pl.col("doc_id").is_null())
    if lost.height:
        raise InputError(f"chunk id {lost['chunk_id'][0]!r} is not in the snapshot", field="chunk_id")
    return mapped.with_columns(pl.col("doc_id").alias("chunk_id")).drop("doc_id").select(frame.columns)


def trec_tokens(frame: pl.DataFrame, cols: tuple[str, ...] = ("question_id", "chunk_id")) -> pl.DataFrame:
    """``frame`` with the id columns ``cols`` made writable as TREC tokens: every ``%`` becomes ``%25`` and
    every whitespace character its percent-encoding (``my doc#0`` -> ``my%20doc#0``; RFC 3986 section
    2.1), so an id with a space (a corpus file name such as ``guía de envíos.md``) is one token that maps
    back to exactly one id. Qrels and runs encoded alike give trec_eval the same numbers. Null stays null.
    Raises nothing."""
    def enc(col: str) -> pl.Expr:
        e = pl.col(col).str.replace_all("%", "%25", literal=True)
        for ch in (" ", "\t", "\n", "\r", "\x0b", "\x0c", "\u00a0", "\u2028", "\u2029", "\u3000"):
            e = e.str.replace_all(ch, f"%{ord(ch):02X}" if ord(ch) < 256 else f"%u{ord(ch):04X}", literal=True)
        return e.str.replace_all(r"\s", "%20").alias(col)  # any other Unicode space

    return frame.with_columns([enc(c) for c in cols if c in frame.columns])


def _check_tokens(df: pl.DataFrame, cols: tuple[str, ...], path: str | Path) -> None:
    for col in cols:
        bad = df[col].is_null() | (df[col] == "") | df[col].str.contains(r"\s")
        if bad.any():
            i = _first_true(bad)
            raise InputError(f"row {i + 1}: {col} {df[col][i]!r} is empty or contains whitespace, "
                             "which TREC files cannot hold", path=str(path), field=col)


def read_trec_qrels(path: str | Path) -> pl.DataFrame:
    """Read a TREC qrels file into a ``qrels`` frame.

    Input: path of a file of ``topic iteration docno rel`` lines (``#`` comment lines and blank
    lines skipped). Output: columns ``question_id`` (topic), ``chunk_id`` (docno), ``grade`` (i32,
    may be negative = judged non-relevant), in file order. Duplicate judgments are kept here and
    rejected by ``retrieval_question_metrics`` (as trec_eval does).
    Raises InputError with file, line and field when a line has other than four fields or ``rel``
    is not an integer. Source: trec_eval ``get_qrels.c``.
    """
    df = _lines(path)
    n = df["fields"].list.len()
    wrong = n != len(QRELS_FIELDS)
    if wrong.any():
        row = df.filter(wrong).row(0, named=True)
        got = len(row["fields"])
        field = QRELS_FIELDS[got] if got < len(QRELS_FIELDS) else "rel"
        raise InputError(f"expected 4 whitespace-separated fields (topic iteration docno rel), got {got}",
                         path=str(path), line=int(row["line_no"]), field=field)
    out = df.select(
        "line_no",
        pl.col("fields").list.get(0).alias("question_id"),
        pl.col("fields").list.get(2).alias("chunk_id"),
        pl.col("fields").list.get(3).alias("_rel"),
    ).with_columns(pl.col("_rel").cast(pl.Int32, strict=False).alias("grade"))
    if out["grade"].is_null().any():
        raise _field_error(out, out["grade"].is_null(), path, "rel {_rel!r} is not an integer", "rel")
    return out.select(list(_QRELS_SCHEMA)).cast(_QRELS_SCHEMA)


def write_trec_qrels(qrels: pl.DataFrame, path: str | Path) -> None:
    """Write a ``qrels`` frame as a TREC qrels file.

    Input: columns ``question_id``, ``chunk_id``, ``grade``. Output: one line
    ``question_id 0 chunk_id grade`` per judgment, in frame order; placeholder rows with a null
    ``chunk_id`` (a question with no judged chunk) have no TREC form and are skipped.
    Raises InputError naming the row and field for an id that is empty or holds whitespace, or a
    null grade. Source: trec_eval ``get_qrels.c``.
    """
    df = qrels.filter(pl.col("chunk_id").is_not_null())
    _check_tokens(df, ("question_id", "chunk_id"), path)
    if df["grade"].null_count():
        i = _first_true(df["grade"].is_null())
        raise InputError(f"row {i + 1}: grade is null", path=str(path), field="grade")
    lines = [f"{q} 0 {c} {g}\n" for q, c, g in zip(df["question_id"], df["chunk_id"], df["grade"])]
    Path(path).write_text("".join(lines), encoding="utf-8")


def read_beir_qrels(path: str | Path) -> pl.DataFrame:
    """Read a BEIR qrels TSV (``qrels/test.tsv``) into a ``qrels`` frame.

    Input: a tab-separated file whose first line is the header ``query-id<TAB>corpus-id<TAB>score``
    and each further non-blank line ``query_id<TAB>corpus_id<TAB>integer grade``.
    Output: columns ``question_id``, ``chunk_id``, ``grade`` (i32), in file order (BEIR corpus ids
    are document ids; map them to chunk ids before scoring chunked runs).
    Raises InputError with file, line and field when the header differs, a line has other than
    three fields, or the score is not an integer. Source: BEIR dataset layout
    (``beir-cellar/beir``, ``GenericDataLoader``).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read file: {exc}", path=str(path)) from exc
    raw = text.split("\n")
    header = raw[0].rstrip("\r").split("\t") if raw else []
    if tuple(header) != BEIR_HEADER:
        raise InputError(f"header must be {'<TAB>'.join(BEIR_HEADER)!r}, got {raw[0][:80]!r}",
                         path=str(path), line=1, field="header")
    df = (pl.DataFrame({"line": pl.Series(raw[1:], dtype=pl.Utf8)})
          .with_row_index("line_no", offset=2)
          .with_columns(pl.col("line").str.strip_chars_end("\r"))
          .filter(pl.col("line").str.strip_chars() != "")
          .with_columns(pl.col("line").str.split("\t").alias("fields")))
    n = df["fields"].list.len()
    wrong = n != 3
    if wrong.any():
        row = df.filter(wrong).row(0, named=True)
        got = len(row["fields"])
        field = BEIR_HEADER[got] if got < 3 else "score"
        raise InputError(f"expected 3 tab-separated fields (query-id corpus-id score), got {got}",
                         path=str(path), line=int(row["line_no"]), field=field)
    out = df.select(
        "line_no",
        pl.col("fields").list.get(0).alias("question_id"),
        pl.col("fields").list.get(1).alias("chunk_id"),
        pl.col("fields").list.get(2).alias("_score"),
    ).with_columns(pl.col("_score").str.strip_chars().cast(pl.Int32, strict=False).alias("grade"))
    if out["grade"].is_null().any():
        raise _field_error(out, out["grade"].is_null(), path, "score {_score!r} is not an integer", "score")
    for col in ("question_id", "chunk_id"):
        empty = out[col].str.strip_chars() == ""
        if empty.any():
            field = "query-id" if col == "question_id" else "corpus-id"
            raise _field_error(out, empty, path, f"{field} is empty", field)
    return out.select(list(_QRELS_SCHEMA)).cast(_QRELS_SCHEMA)


__all__ = ["NO_RETRIEVAL_DOCNO", "document_docnos", "read_beir_qrels", "read_trec_qrels", "read_trec_run",
           "with_docnos", "write_trec_qrels", "write_trec_run"]
