"""Parquet IO for every asset: one small IO manager over polars + pyarrow.

dagster-polars does not load Parquet with polars 2.x (``scan_parquet`` lost ``rechunk``), so this
~40-line manager replaces it. DataFrames go to ``<base_dir>/<asset>.parquet`` (checked against the
table's declared schema, written atomically); anything else goes to ``<base_dir>/<asset>.json``.

One writer per folder: while a run's resources are up, the IO manager (and the table store, see
``resources.py``) holds ``<base_dir>/.rag-eval.lock`` (``core/locking.py``). A second run on the same
folder fails at resource initialisation with a message naming the holder (pid, run id, start time),
or waits ``lock_wait_s`` seconds first; steps of one run in other processes wait for each other.
"""


import json
from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import PrivateAttr

from rag_eval_pipeline.core.locking import OutputLock
from rag_eval_pipeline.core.storage import write_json_atomic, write_parquet_atomic


def hold_output_lock(base_dir: str, context: dg.InitResourceContext, wait_s: float) -> OutputLock:
    """Take the folder lock for the run being initialised (re-entrant within the process)."""
    lock = OutputLock(base_dir, run_id=getattr(context, "run_id", None), wait_s=wait_s).acquire()
    if lock.removed_temp_files and context.log is not None:
        context.log.warning(f"removed {len(lock.removed_temp_files)} temporary file(s) left in {base_dir} by a "
                            f"killed write: {lock.removed_temp_files[:5]}")
    return lock


class HoldsOutputLock:
    """Mixin for resources with ``base_dir``, ``lock_wait_s`` and a ``_lock`` private attribute:
    hold the folder's lock from resource set-up to tear-down of a run."""

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        self._lock = hold_output_lock(self.base_dir, context, self.lock_wait_s)

    def teardown_after_execution(self, context: dg.InitResourceContext) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


class ParquetIOManager(HoldsOutputLock, dg.ConfigurableIOManager):
    """Stores polars DataFrames as Parquet and other values as JSON under ``base_dir``."""

    base_dir: str
    lock_wait_s: float = 0.0  # how long a run waits for another run writing the same folder; 0 = fail at once

    _lock: OutputLock | None = PrivateAttr(default=None)

    def _path(self, key: dg.AssetKey, suffix: str) -> Path:
        return Path(self.base_dir).joinpath(*key.path).with_suffix(suffix)

    def handle_output(self, context: dg.OutputContext, obj) -> None:
        if obj is None:
            return
        key = context.asset_key
        if isinstance(obj, pl.DataFrame):
            path = write_parquet_atomic(obj, self._path(key, ".parquet"), table=key.path[-1])
            context.add_output_metadata(
                {"path": dg.MetadataValue.path(str(path.resolve())), "dagster/row_count": obj.height}
            )
        else:
            path = write_json_atomic(obj, self._path(key, ".json"))
            context.add_output_metadata({"path": dg.MetadataValue.path(str(path.resolve()))})

    def load_input(self, context: dg.InputContext):
        """Read an upstream table. ``dg.AssetIn(metadata={"columns": [...]})`` reads only those columns
        (a check that needs the 200,000 chunk ids of a snapshot need not load its text)."""
        key = context.upstream_output.asset_key if context.upstream_output else context.asset_key
        parquet = self._path(key, ".parquet")
        if parquet.exists():
            columns = (context.definition_metadata or {}).get("columns")
            return pl.read_parquet(parquet, columns=list(columns) if columns else None)
        as_json = self._path(key, ".json")
        if as_json.exists():
            return json.loads(as_json.read_text(encoding="utf-8"))
        raise FileNotFoundError(
            f"asset {key.to_user_string()} has not been materialised yet: no {parquet} or {as_json}"
        )
