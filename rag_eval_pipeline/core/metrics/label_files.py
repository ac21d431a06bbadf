"""Hand-label files for judge calibration: read (CSV, TSV, JSON Lines, Parquet) and validate line by
line, every error naming the file, line and field. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.metrics.calibration_mapping import resolve_mapping

__all__ = ["LABEL_FILE_SCHEMA", "read_human_labels", "read_label_file"]


def read_human_labels(path: str | Path, level: str = "claim") -> pl.DataFrame:
    """Read a human label file: CSV (``.csv``), TSV (``.tsv``), JSON Lines (``.jsonl``/``.ndjson``)
    or Parquet (``.parquet``).

    Needed columns: system, question_id, verdict (the human label, any string), and claim_id at
    claim level. Output: a frame with those columns (claim_id too when present) cast to Utf8,
    other columns dropped. Raises InputError naming the file (and field) when the file is
    missing, has an unknown extension, cannot be parsed, or lacks a needed column.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("human label file does not exist", path=str(p))
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            df = pl.read_csv(p, infer_schema_length=0)
        elif suffix == ".tsv":
            df = pl.read_csv(p, separator="\t", infer_schema_length=0, quote_char=None)
        elif suffix in (".jsonl", ".ndjson"):
            df = pl.read_ndjson(p)
        elif suffix == ".parquet":
            df = pl.read_parquet(p)
        else:
            raise InputError(f"unknown extension {suffix!r}: expected .csv, .tsv, .jsonl, .ndjson or .parquet",
                             path=str(p))
    except InputError:
        raise
    except Exception as exc:  # polars raises several error types for a malformed file
        raise InputError(f"cannot read human labels: {exc}", path=str(p)) from exc
    needed = ["system", "question_id", "verdict"] + (["claim_id"] if level == "claim" else [])
    for col in needed:
        if col not in df.columns:
            raise InputError(f"missing column (have {df.columns})", path=str(p), field=col)
    keep = needed + (["claim_id"] if level != "claim" and "claim_id" in df.columns else [])
    return df.select([pl.col(c).cast(pl.Utf8) for c in keep])


#: Columns of :func:`read_label_file`.
LABEL_FILE_SCHEMA = pl.Schema({"system": pl.Utf8, "question_id": pl.Utf8, "claim_id": pl.Utf8, "verdict": pl.Utf8,
                               "annotator": pl.Utf8, "labelled_at": pl.Utf8, "content_sha256": pl.Utf8,
                               "note": pl.Utf8, "line": pl.Int64})


def read_label_file(path: str | Path, level: str = "claim", mapping: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Read and validate a hand-label file for :func:`calibrate`, every error naming file, line and field.

    Input: a .csv, .tsv, .jsonl/.ndjson or .parquet file in the human-label format (see
    ``core/judges/human.py``: claim level needs system, question_id, claim_id, claim, verdict;
    response level system, question_id, verdict); ``level``; ``mapping`` (its ``human`` dict gives
    the raw labels allowed). Output: :data:`LABEL_FILE_SCHEMA` frame, one row per label, file order
    (``line`` = the line, or Parquet row, it came from). Raises InputError (file, line, field) for
    a missing file or column, a blank required field, a verdict the mapping does not know, a
    duplicate item for the same annotator, a malformed content hash; ValueError for a bad mapping.
    """
    from rag_eval_pipeline.core.judges.human import (
        read_human_label_rows,
        read_response_label_rows,
    )

    m = resolve_mapping(mapping, level)
    allowed = list(m["human"])
    if level == "claim":
        rows, _ = read_human_label_rows(path)
        for r in rows:
            if r["verdict"] not in allowed:
                raise InputError(f"verdict {r['verdict']!r} is not one of {allowed} (the calibration mapping's "
                                 "human labels)", path=str(path), line=r["line"], field="verdict")
    else:
        rows, _ = read_response_label_rows(path, allowed if m["human_rule"] == "label" else None)
    return pl.DataFrame([{c: r.get(c) for c in LABEL_FILE_SCHEMA} for r in rows], schema=LABEL_FILE_SCHEMA)

