"""Atomic Parquet and JSON files: written aside, then renamed over the old file.

Killing the process mid-write leaves the previous file intact (``os.replace`` is atomic on POSIX
within one filesystem). The temporary file is ``.<name>.<random>.tmp`` in the same folder: its name
starts with a dot, so globs such as ``*.parquet`` never see it; one left by a killed process is
removed by the next run that takes the folder's lock (:mod:`rag_eval_pipeline.core.locking`).
Files get the usual permissions (0666 minus the umask), not ``mkstemp``'s 0600. After the rename the
folder is fsync'ed, so the new name survives a power cut.

Test hook: when the environment variable ``RAG_EVAL_TEST_SLOW_WRITE_S`` holds a positive number,
:func:`write_parquet_atomic` sleeps that many seconds after the temporary file is written and synced
and before the rename, which gives a crash test time to SIGKILL a real materialisation mid-write
(``rag_eval_pipeline_tests/defs/test_crash_safety.py``). Never set it in production.
Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.tables import SCHEMAS, conform

SLOW_WRITE_ENV = "RAG_EVAL_TEST_SLOW_WRITE_S"

_UMASK = os.umask(0)
os.umask(_UMASK)
_FILE_MODE = 0o666 & ~_UMASK


def _test_slow_write_pause() -> None:
    """The crash-test hook (see the module docstring): sleep RAG_EVAL_TEST_SLOW_WRITE_S seconds if set."""
    value = os.environ.get(SLOW_WRITE_ENV)
    if value:
        try:
            seconds = float(value)
        except ValueError:
            return
        if seconds > 0:
            time.sleep(seconds)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_atomic(path: Path, write, pause: bool = False) -> Path:
    """Call ``write(tmp_path)`` on a hidden temporary file beside ``path``, fsync it, then rename it over ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _FILE_MODE)
    finally:
        os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        if pause:
            _test_slow_write_pause()
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def write_parquet_atomic(df: pl.DataFrame, path: Path, table: str | None = None) -> Path:
    """Write ``df`` to ``path`` as Parquet atomically; conform it to ``table``'s schema first if given.

    Raises SchemaError (from :func:`conform`) before anything is written.
    """
    if table is not None and table in SCHEMAS:
        df = conform(df, table)
    return write_atomic(path, df.write_parquet, pause=True)


def write_text_atomic(text: str, path: Path) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    return write_atomic(path, write)


def write_json_atomic(obj: Any, path: Path) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    return write_text_atomic(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)
