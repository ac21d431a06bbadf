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

__all__ = ["LABEL_FILE_SCHEMA", "read_label_file"]


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

