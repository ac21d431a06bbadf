"""Parquet IO for every asset: one small IO manager over polars.

dagster-polars does not load Parquet with polars 2.x (``scan_parquet`` lost ``rechunk``), so this
~40-line manager replaces it. DataFrames go to ``<base_dir>/<asset>.parquet`` (checked against the
table's declared schema, written atomically); anything else goes to ``<base_dir>/<asset>.json``.
A suite's assets carry its name as key prefix (``sample/metric_summary``): they go to the suite's
folder, ``suite_dirs[suite]`` when given (``rag-eval run --output``), else ``<base_dir>/<suite>/``;
the quick evaluation's keys (``sample/quick/...``) to ``quick/`` inside it.

Every Parquet file carries its table's Arrow schema and metadata (table, schema version, suite, run id,
corpus / golden versions, judge key, metric definitions: ``core/table_files.py``); a file of another
schema version is migrated on load with a warning in the run's log, or refused (``core/storage.read_table``).

One writer per folder: while a run's resources are up, the IO manager (and the table store, see
``resources.py``) holds ``.rag-eval.lock`` of every suite folder the run writes (``core/locking.py``;
``<base_dir>`` itself for unprefixed assets). A second run on the same
folder fails at resource initialisation with a message naming the holder (pid, run id, start time),
or waits ``lock_wait_s`` seconds first; steps of one run in other processes (multiprocess or Celery
executor) hold the folder together.
"""


import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
import polars as pl
from pydantic import PrivateAttr

from rag_eval_pipeline.core.locking import OutputLock
from rag_eval_pipeline.core.storage import (
    WriteContext,
    read_table,
    scan_table,
    write_json_atomic,
    write_parquet_atomic,
)
from rag_eval_pipeline.core.suites import claim_output_folder

SUITE_TAG = "rag_eval/suite"
QUICK = "quick"


def suite_folder(base_dir: str, suite_dirs: Mapping[str, str], prefix: Sequence[str]) -> Path:
    """The folder of an asset key prefix: ``()`` -> base_dir; ``("sample",)`` -> the sample suite's
    folder (``suite_dirs["sample"]`` or ``base_dir/sample``); ``("sample", "quick")`` -> ``<that>/quick``."""
    if not prefix:
        return Path(base_dir)
    root = Path(suite_dirs[prefix[0]]) if prefix[0] in suite_dirs else Path(base_dir, prefix[0])
    return root.joinpath(*prefix[1:])


def write_context(context: dg.OutputContext, base_dir: str, suite_dirs: dict[str, str]) -> WriteContext:
    """Who writes an asset's table: the run id, the suite (the key's first part when prefixed), the folder
    of its upstream tables, and the provenance the asset put in its output metadata."""
    key = context.asset_key
    try:
        run_id, metadata = context.run_id, context.output_metadata
    except (dg.DagsterInvariantViolationError, AttributeError):
        run_id, metadata = None, None
    return WriteContext.of(run_id, key.path[0] if len(key.path) > 1 else None,
                           suite_folder(base_dir, suite_dirs, key.path[:-1]), metadata)


def run_suites(dagster_run, known: list[str]) -> list[str]:
    """The suites a run writes: the key prefixes of its asset (and check) selection, else its
    ``rag_eval/suite`` tag, else every known suite (a run of the whole code location)."""
    if dagster_run is None:
        return list(known)
    keys = list(dagster_run.asset_selection or []) + [c.asset_key for c in (dagster_run.asset_check_selection or [])]
    if keys:
        return sorted({k.path[0] for k in keys if len(k.path) > 1 and k.path[0] in known})
    tagged = (dagster_run.tags or {}).get(SUITE_TAG)
    if tagged:
        return [s for s in tagged.split(",") if s in known] or list(known)
    return list(known)


def hold_output_lock(base_dir: str, context: dg.InitResourceContext, wait_s: float) -> OutputLock:
    """Take the folder lock for the run being initialised (re-entrant within the process), shared with the
    run's other step processes (its steps on other executors' processes run side by side; another run waits)."""
    run_id = getattr(context, "run_id", None)
    lock = OutputLock(base_dir, run_id=run_id, wait_s=wait_s, shared=run_id is not None).acquire()
    if lock.removed_temp_files and context.log is not None:
        context.log.warning(f"removed {len(lock.removed_temp_files)} temporary file(s) left in {base_dir} by a "
                            f"killed write: {lock.removed_temp_files[:5]}")
    return lock


class HoldsOutputLock:
    """Mixin for resources with ``base_dir``, ``suite_dirs``, ``lock_wait_s`` and a ``_locks`` private
    attribute: hold the lock of every folder the run writes, from resource set-up to tear-down."""

    if TYPE_CHECKING:  # the resource's fields (declared there, where Dagster reads them)
        base_dir: str
        suite_dirs: dict[str, str]
        lock_wait_s: float
        _locks: list[OutputLock]

    def lock_folders(self, context: dg.InitResourceContext | None) -> list[Path]:
        """The folders this run writes: its suites' folders, or ``base_dir`` when no suite is known."""
        known = sorted(self.suite_dirs)
        if not known:
            return [Path(self.base_dir)]
        suites = run_suites(getattr(context, "dagster_run", None), known) or known
        return [suite_folder(self.base_dir, self.suite_dirs, (s,)) for s in suites]

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._locks = []
        try:
            for folder in self.lock_folders(context):
                self._locks.append(hold_output_lock(str(folder), context, self.lock_wait_s))
            known = sorted(self.suite_dirs)
            for suite in (run_suites(getattr(context, "dagster_run", None), known) or known) if known else []:
                # an output folder belongs to one suite: refuse to write another suite's tables into it
                # (checked here; the record is written with the suite's first table, see handle_output)
                claim_output_folder(suite_folder(self.base_dir, self.suite_dirs, (suite,)), suite, write=False)
        except BaseException:
            self.teardown_after_execution(context)
            raise

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        for lock in reversed(self._locks or []):
            lock.release()
        self._locks = []


class ParquetIOManager(HoldsOutputLock, dg.ConfigurableIOManager):
    """Stores polars DataFrames as Parquet and other values as JSON under ``base_dir``."""

    base_dir: str
    suite_dirs: dict[str, str] = {}  # suite name -> its output folder (default base_dir/<suite>)
    lock_wait_s: float = 0.0  # how long a run waits for another run writing the same folder; 0 = fail at once

    _locks: list = PrivateAttr(default_factory=list)

    def _path(self, key: dg.AssetKey, suffix: str) -> Path:
        return suite_folder(self.base_dir, self.suite_dirs, key.path[:-1]).joinpath(key.path[-1] + suffix)

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        if obj is None:
            return
        key = context.asset_key
        if self.suite_dirs and key.path[:-1] and key.path[0] in self.suite_dirs:
            # the first table a run writes into a suite's folder records the suite there
            claim_output_folder(suite_folder(self.base_dir, self.suite_dirs, key.path[:1]), key.path[0])
        if isinstance(obj, pl.DataFrame):
            path = write_parquet_atomic(obj, self._path(key, ".parquet"), table=key.path[-1],
                                        context=write_context(context, self.base_dir, self.suite_dirs))
            context.add_output_metadata(
                {"path": dg.MetadataValue.path(str(path.resolve())), "dagster/row_count": obj.height}
            )
        else:
            path = write_json_atomic(obj, self._path(key, ".json"))
            context.add_output_metadata({"path": dg.MetadataValue.path(str(path.resolve()))})

    def load_input(self, context: dg.InputContext):
        """Read an upstream table. ``dg.AssetIn(metadata={"columns": [...]})`` reads only those columns
        (a check that needs the 200,000 chunk ids of a snapshot need not load its text); an input annotated
        ``pl.LazyFrame`` is scanned, not read (a step that keeps a few rows of a table of millions reads those)."""
        key = context.upstream_output.asset_key if context.upstream_output else context.asset_key
        parquet = self._path(key, ".parquet")
        if parquet.exists():
            columns = (context.definition_metadata or {}).get("columns")
            columns = list(columns) if columns else None
            on_migrate = context.log.warning if context.log is not None else None
            if getattr(context.dagster_type, "typing_type", None) is pl.LazyFrame:  # the input is annotated LazyFrame
                return scan_table(parquet, key.path[-1], columns=columns, on_migrate=on_migrate)
            return read_table(parquet, key.path[-1], columns=columns, on_migrate=on_migrate)
        as_json = self._path(key, ".json")
        if as_json.exists():
            return json.loads(as_json.read_text(encoding="utf-8"))
        raise FileNotFoundError(
            f"asset {key.to_user_string()} has not been materialised yet: no {parquet} or {as_json}"
        )
