"""Parquet IO for every asset: one small IO manager over polars, one instance per suite.

dagster-polars does not load Parquet with polars 2.x (``scan_parquet`` lost ``rechunk``), so this
~40-line manager replaces it. DataFrames go to ``<base_dir>/<asset>.parquet`` (checked against the
table's declared schema, written atomically); anything else goes to ``<base_dir>/<asset>.json``.
Each suite has its own manager (resource key ``<suite>__io_manager``) whose ``base_dir`` is the suite's
folder (``outputs/<suite>/``, or ``rag-eval run --output``): ``sample/metric_summary`` goes to
``<base_dir>/metric_summary.parquet``, the quick evaluation's ``sample/quick/...`` to ``<base_dir>/quick/``.

Every Parquet file carries its table's Arrow schema and metadata (table, schema version, suite, run id,
corpus / golden versions, judge key, metric definitions: ``core/table_files.py``); a file of another
schema version is migrated on load with a warning in the run's log, or refused (``core/storage.read_table``).

One writer per folder: while a run's resources are up, the IO manager (and the table store, see
``resources.py``) holds ``.rag-eval.lock`` of its suite's folder (``core/locking.py``); Dagster starts
only the resources of the suites a run writes. A second run on the same folder fails at resource
initialisation with a message naming the holder (pid, run id, start time), or waits ``lock_wait_s``
seconds first; steps of one run in other processes (multiprocess or Celery executor) hold the folder
together. A folder belongs to one suite (``core/suites.claim_output_folder``): a suite's resources refuse
a folder another suite recorded.
"""


import json
from pathlib import Path
from typing import TYPE_CHECKING

import dagster as dg
from pydantic import PrivateAttr

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.locking import OutputLock
from rag_eval_pipeline.core.storage import (
    TableBatches,
    WriteContext,
    read_table,
    scan_table,
    write_json_atomic,
    write_parquet_atomic,
    write_parquet_batches_atomic,
)
from rag_eval_pipeline.core.suites import claim_output_folder

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

#: Run tag naming one evaluation made of several runs (a sharded suite's shard runs and the run that merges
#: them, ``defs/shards.py``): its runs hold the output folder together, as the steps of one run do. The runs of
#: one Dagster backfill (tag ``dagster/backfill``) do too.
EVALUATION_TAG = "rag_eval/evaluation"


def lock_holder(context: dg.InitResourceContext) -> str | None:
    """Who holds the folder for this run: its ``rag_eval/evaluation`` tag, else its backfill's id, else its run id
    (None outside a run)."""
    run_id = getattr(context, "run_id", None)
    run = getattr(context, "dagster_run", None)
    tags = (run.tags if run is not None else None) or {}
    return tags.get(EVALUATION_TAG) or tags.get("dagster/backfill") or run_id


def hold_output_lock(base_dir: str, context: dg.InitResourceContext, wait_s: float) -> OutputLock:
    """Take the folder lock for the run being initialised (re-entrant within the process), shared with the
    run's other step processes (its steps on other executors' processes run side by side; another run waits)."""
    run_id = lock_holder(context)
    lock = OutputLock(base_dir, run_id=run_id, wait_s=wait_s, shared=run_id is not None).acquire()
    if lock.removed_temp_files and context.log is not None:
        context.log.warning(f"removed {len(lock.removed_temp_files)} temporary file(s) left in {base_dir} by a "
                            f"killed write: {lock.removed_temp_files[:5]}")
    return lock


class HoldsOutputLock:
    """Mixin for resources with ``base_dir`` (a suite's folder), ``suite`` (its name, or None),
    ``lock_wait_s`` and a ``_locks`` private attribute: hold the folder's lock from resource set-up to
    tear-down, and refuse a folder another suite recorded."""

    if TYPE_CHECKING:  # the resource's fields (declared there, where Dagster reads them)
        base_dir: str
        suite: str | None
        lock_wait_s: float
        _locks: list[OutputLock]

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._locks = []
        try:
            self._locks.append(hold_output_lock(str(self.base_dir), context, self.lock_wait_s))
            if self.suite is not None:
                # an output folder belongs to one suite: refuse to write another suite's tables into it
                # (checked here; the record is written with the suite's first table, see handle_output)
                claim_output_folder(self.base_dir, self.suite, write=False)
        except BaseException:
            self.teardown_after_execution(context)
            raise

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        for lock in reversed(self._locks or []):
            lock.release()
        self._locks = []


class ParquetIOManager(HoldsOutputLock, dg.ConfigurableIOManager):
    """Stores polars DataFrames (and :class:`~rag_eval_pipeline.core.storage.TableBatches`, a table in parts) as
    Parquet and other values as JSON under ``base_dir``.

    ``suite``: the key prefix of the suite whose folder ``base_dir`` is (None: unprefixed keys);
    ``lock_wait_s``: how long a run waits for another run writing the same folder (0: fail at once)."""

    base_dir: str
    suite: str | None = None
    lock_wait_s: float = 0.0

    _locks: list = PrivateAttr(default_factory=list)

    def _path(self, key: dg.AssetKey, suffix: str, partition: str | None = None) -> Path:
        """``<base_dir>/<key without the suite>.<suffix>``; a partition (a question shard) in a folder named
        after the asset: ``<base_dir>/shards/rag_runs/0.parquet``."""
        parts = list(key.path)
        if partition is not None:
            parts = [*parts, partition]
        if self.suite is not None:
            if parts[0] != self.suite:
                raise dg.Failure(f"asset {key.to_user_string()} is not in suite {self.suite}: its IO manager "
                                 f"writes only {self.base_dir}")
            parts = parts[1:]
        return Path(self.base_dir).joinpath(*parts[:-1], parts[-1] + suffix)

    def _write_context(self, context: dg.OutputContext) -> WriteContext:
        """Who writes an asset's table: the run id, the suite, the folder of its upstream tables, and the
        provenance the asset put in its output metadata."""
        try:
            run_id, metadata = context.run_id, context.output_metadata
        except (dg.DagsterInvariantViolationError, AttributeError):
            run_id, metadata = None, None
        return WriteContext.of(run_id, self.suite, self._path(context.asset_key, "").parent, metadata)

    @staticmethod
    def _output_partition(context: dg.OutputContext) -> str | None:
        return context.asset_partition_key if context.has_asset_partitions else None

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        if obj is None:
            return
        key = context.asset_key
        if self.suite is not None:
            # the first table a run writes into a suite's folder records the suite there
            claim_output_folder(self.base_dir, self.suite)
        partition = self._output_partition(context)
        if isinstance(obj, pl.DataFrame):
            path = write_parquet_atomic(obj, self._path(key, ".parquet", partition), table=key.path[-1],
                                        context=self._write_context(context))
            context.add_output_metadata(
                {"path": dg.MetadataValue.path(str(path.resolve())), "dagster/row_count": obj.height}
            )
        elif isinstance(obj, TableBatches):  # a table in parts: each written as it comes, never whole
            path, rows = write_parquet_batches_atomic(obj.batches, self._path(key, ".parquet", partition),
                                                      table=key.path[-1], context=self._write_context(context))
            context.add_output_metadata(
                {"path": dg.MetadataValue.path(str(path.resolve())), "dagster/row_count": rows, **obj.metadata()}
            )
        else:
            path = write_json_atomic(obj, self._path(key, ".json", partition))
            context.add_output_metadata({"path": dg.MetadataValue.path(str(path.resolve()))})

    def load_input(self, context: dg.InputContext):
        """Read an upstream table. ``dg.AssetIn(metadata={"columns": [...]})`` reads only those columns
        (a check that needs the 200,000 chunk ids of a snapshot need not load its text);
        ``metadata={"allow_missing": True}`` gives None for a table never materialised (a quick
        evaluation reading the full evaluation's history before the first full run); an input annotated
        ``pl.LazyFrame`` is scanned, not read (a step that keeps a few rows of a table of millions reads those).

        A partitioned upstream (a question shard's table) is read from its partition's file; several
        partitions (a non-partitioned step reading every shard: ``defs/shards.py``) give a dict
        {partition key: scan of that shard's file}, as Dagster's own multi-partition loads do. A shard never
        materialised raises FileNotFoundError naming it."""
        key = context.upstream_output.asset_key if context.upstream_output else context.asset_key
        if context.has_asset_partitions:
            keys = list(context.asset_partition_keys)
            if len(keys) > 1:
                return {k: self._load_partition(context, key, k, lazy=True) for k in keys}
            return self._load_partition(context, key, keys[0])
        return self._load(context, key, self._path(key, ".parquet"), self._path(key, ".json"))

    def _load_partition(self, context: dg.InputContext, key: dg.AssetKey, partition: str, lazy: bool = False):
        parquet = self._path(key, ".parquet", partition)
        if not parquet.exists():
            raise FileNotFoundError(f"shard {partition} of {key.to_user_string()} has not been materialised yet: no "
                                    f"{parquet}")
        return self._load(context, key, parquet, self._path(key, ".json", partition), lazy=lazy)

    def _load(self, context: dg.InputContext, key: dg.AssetKey, parquet: Path, as_json: Path, lazy: bool = False):
        metadata = context.definition_metadata or {}
        if parquet.exists():
            columns = metadata.get("columns")
            columns = list(columns) if columns else None
            on_migrate = context.log.warning if context.log is not None else None
            typing_type = getattr(context.dagster_type, "typing_type", None)
            # annotated LazyFrame: polars's class, or its stand-in that the project's annotations resolve to
            if lazy or (isinstance(typing_type, type) and issubclass(typing_type, pl.LazyFrame)):
                return scan_table(parquet, key.path[-1], columns=columns, on_migrate=on_migrate)
            return read_table(parquet, key.path[-1], columns=columns, on_migrate=on_migrate)
        if as_json.exists():
            return json.loads(as_json.read_text(encoding="utf-8"))
        if metadata.get("allow_missing"):
            return None
        raise FileNotFoundError(
            f"asset {key.to_user_string()} has not been materialised yet: no {parquet} or {as_json}"
        )
