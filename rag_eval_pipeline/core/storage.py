"""Atomic Parquet and JSON files: written aside, then renamed over the old file.

Killing the process mid-write leaves the previous file intact (``os.replace`` is atomic on POSIX
within one filesystem). Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.tables import SCHEMAS, conform


def write_parquet_atomic(df: pl.DataFrame, path: Path, table: str | None = None) -> Path:
    """Write ``df`` to ``path`` as Parquet atomically; conform it to ``table``'s schema first if given.

    Raises SchemaError (from :func:`conform`) before anything is written.
    """
    if table is not None and table in SCHEMAS:
        df = conform(df, table)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        df.write_parquet(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_text_atomic(text: str, path: Path) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_json_atomic(obj: Any, path: Path) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    return write_text_atomic(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)
