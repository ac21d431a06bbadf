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
Parquet tables are written through pyarrow with their declared Arrow schema and file metadata
(:mod:`rag_eval_pipeline.core.table_files`), and read back with :func:`read_table`, which checks the
schema version (migrating an older file with a one-line message, refusing one it cannot read).
Writers (the IO manager, the table store) call only :func:`write_parquet_atomic` and
:func:`read_table`, with a :class:`WriteContext` saying which run and suite write.
Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.table_files import WriteContext, check_and_read, to_arrow_batches

if TYPE_CHECKING:
    import polars as pl
    import pyarrow.parquet as pq
else:
    pl = lazy_module("polars")
    pq = lazy_module("pyarrow.parquet")

__all__ = ["TableBatches", "WriteContext", "read_table", "scan_slices", "write_atomic", "write_json_atomic",
           "write_parquet_atomic", "write_parquet_batches_atomic", "write_text_atomic"]

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


def write_parquet_atomic(df: pl.DataFrame, path: Path, table: str | None = None,
                         context: WriteContext | None = None) -> Path:
    """Write ``df`` to ``path`` as the Parquet file of declared table ``table``, atomically.

    The frame is conformed to the table's schema and written with its Arrow schema (column descriptions)
    and file metadata (table, schema version, provenance from ``context``: see ``core/table_files.py``).
    Output: ``path``. Raises SchemaError before anything is written for an undeclared table (``None``
    included: every Parquet file the pipeline writes is a declared table) or a frame of another shape.
    """
    if table is None:
        raise SchemaError(f"{path}: not written: a Parquet file of the pipeline is always one of its tables "
                          "(metric_summary, rag_runs, ...), and no table was named for this one")
    schema, slices = to_arrow_batches(df, table, context)  # conform and metadata before the temporary file exists

    def write(tmp: str) -> None:
        with pq.ParquetWriter(tmp, schema, compression="zstd") as writer:
            for piece in slices:
                writer.write_table(piece)

    return write_atomic(path, write, pause=True)


class TableBatches:
    """A table given as parts, for a writer that writes each part as it comes
    (:func:`write_parquet_batches_atomic`): what a step returns instead of a frame when the whole table would
    not fit in memory comfortably (``question_metrics`` of 100,000 questions).

    ``batches``: the parts, frames of one schema (usually a generator that computes each part when asked);
    ``metadata``: called once every part has been written, it returns what the writer records beside the file
    (counts the parts accumulated while they were computed)."""

    def __init__(self, batches: Iterable[pl.DataFrame], metadata: Callable[[], dict[str, Any]] | None = None):
        self.batches = batches
        self._metadata = metadata

    def metadata(self) -> dict[str, Any]:
        """The metadata the parts gave (call after writing them); {} when none."""
        return self._metadata() if self._metadata is not None else {}


def scan_slices(lf: pl.LazyFrame, where: pl.Expr | None = None, rows: int = 262_144) -> Iterator[pl.DataFrame]:
    """The rows of ``lf`` (a scanned table) ``rows`` at a time, in order, those matching ``where`` when given:
    each slice of the scan read, filtered and given before the next is read (a table of millions of rows
    is never held whole; the concatenated slices equal ``lf.filter(where).collect()``). Empty slices are
    skipped."""
    total = int(lf.select(pl.len()).collect().item())
    for start in range(0, total, rows):
        piece = lf.slice(start, rows)
        batch = (piece if where is None else piece.filter(where)).collect()
        if batch.height:
            yield batch


def write_parquet_batches_atomic(batches: Iterable[pl.DataFrame], path: Path, table: str | None,
                                 context: WriteContext | None = None) -> tuple[Path, int]:
    """Write the frames of ``batches`` as one Parquet file of declared table ``table`` at ``path``, atomically,
    holding one batch in memory at a time (a table of millions of rows computed in parts is never whole).

    The same file as :func:`write_parquet_atomic` of the batches concatenated (schema, checks, metadata;
    :func:`rag_eval_pipeline.core.table_files.batches_to_parquet`), whose row groups follow the batches.
    ``batches`` is consumed here (a generator computes each part as it is written). Output: (``path``, rows
    written). Raises SchemaError for an undeclared table, ``corpus_snapshot`` (its metadata hashes every row)
    or a batch of another shape; the previous file at ``path`` is then intact."""
    from rag_eval_pipeline.core.table_files import DEFINED_BY, batches_to_parquet

    if table is None or table == DEFINED_BY["corpus"]:
        raise SchemaError(f"{path}: not written: a batched write needs a declared table other than "
                          f"{DEFINED_BY['corpus']}, got {table!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    written = [0]

    def write(tmp: str) -> None:
        written[0] = batches_to_parquet(batches, staging, tmp, table, context)

    try:
        write_atomic(path, write, pause=True)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)
    return path, written[0]


def read_table(path: Path, table: str | None = None, *, columns: list[str] | None = None,
               on_migrate: Callable[[str], None] | None = None) -> pl.DataFrame:
    """Read the table file ``path`` after checking its table and schema version
    (:func:`rag_eval_pipeline.core.table_files.check_and_read`: an older file is migrated with a
    one-line message passed to ``on_migrate``; SchemaVersionError for one that cannot be read)."""
    return check_and_read(path, table, columns=columns, on_migrate=on_migrate)


def scan_table(path: Path, table: str | None = None, *, columns: list[str] | None = None,
               on_migrate: Callable[[str], None] | None = None) -> pl.LazyFrame:
    """:func:`read_table` as a ``polars.LazyFrame`` (:func:`rag_eval_pipeline.core.table_files.check_and_scan`):
    rows and columns are read when the caller collects, only those it keeps."""
    from rag_eval_pipeline.core.table_files import check_and_scan

    return check_and_scan(path, table, columns=columns, on_migrate=on_migrate)


#: Folders of a suite's output folder: the promoted baseline, and the per-question archive of each full run.
BASELINE_DIR = "baseline"
RUN_ARCHIVE = "history"


def prune_run_archive(suite_folder: Path, keep: int) -> list[str]:
    """Delete the oldest run folders of ``<suite_folder>/history/`` beyond the ``keep`` newest; return the
    deleted run ids, oldest first.

    A run folder is one holding ``run.json`` (written by the report step: ``run_id``, ``evaluated_at`` as
    ISO 8601); runs are ordered by ``evaluated_at`` compared as times (no offset: UTC), then by run id.
    Folders without a readable ``run.json`` are not the archive's and are never deleted. Raises
    ValueError for ``keep`` < 1; OSError from the file system."""
    import datetime as dt
    import shutil

    if keep < 1:
        raise ValueError(f"keep must be >= 1, got {keep}")
    root = Path(suite_folder) / RUN_ARCHIVE
    if not root.is_dir():
        return []
    runs = []
    for folder in root.iterdir():
        try:
            when = dt.datetime.fromisoformat(json.loads((folder / "run.json").read_text(encoding="utf-8"))
                                             ["evaluated_at"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        runs.append((when if when.tzinfo else when.replace(tzinfo=dt.UTC), folder.name, folder))
    runs.sort(key=lambda r: (r[0], r[1]))
    old = runs[:max(0, len(runs) - keep)]
    for _when, _name, folder in old:
        shutil.rmtree(folder)
    return [name for _when, name, _folder in old]


def write_text_atomic(text: str, path: Path) -> Path:
    """Write UTF-8 ``text`` to ``path`` atomically (temporary file in the same folder, then rename)."""

    def write(tmp: str) -> None:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)

    return write_atomic(path, write)


def write_json_atomic(obj: Any, path: Path) -> Path:
    """Write ``obj`` as indented JSON to ``path`` atomically."""
    return write_text_atomic(json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n", path)
