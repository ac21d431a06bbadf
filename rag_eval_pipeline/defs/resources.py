"""Resources: the evaluation configuration, the table store, and the judge.

Each is a ``ConfigurableResource`` chosen once per deployment in ``definitions.py``; secrets (a judge's
API key) arrive only through ``dagster.EnvVar`` and are never logged or written.
"""


from functools import cached_property
from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import PrivateAttr

from rag_eval_pipeline.core.config import EvalConfig, load_config
from rag_eval_pipeline.core.locking import OutputLock
from rag_eval_pipeline.core.storage import write_json_atomic, write_parquet_atomic
from rag_eval_pipeline.defs.io import HoldsOutputLock


class EvalSettings(dg.ConfigurableResource):
    """Points at the evaluation configuration YAML (corpus source, golden set, systems, gates)."""

    config_path: str

    @cached_property
    def config(self) -> EvalConfig:
        return load_config(self.config_path)


class TableStore(HoldsOutputLock, dg.ConfigurableResource):
    """Reads and writes tables outside the asset IO path: history, baseline, regression list, reports.

    Holds the output folder's lock while a run uses it, like the IO manager (see ``io.py``)."""

    base_dir: str
    lock_wait_s: float = 0.0

    _lock: OutputLock | None = PrivateAttr(default=None)

    def path(self, *parts: str) -> Path:
        return Path(self.base_dir).joinpath(*parts)

    def read(self, *parts: str) -> pl.DataFrame | None:
        p = self.path(*parts)
        return pl.read_parquet(p) if p.exists() else None

    def write(self, df: pl.DataFrame, *parts: str, table: str | None = None) -> Path:
        return write_parquet_atomic(df, self.path(*parts), table=table)

    def write_json(self, obj, *parts: str) -> Path:
        return write_json_atomic(obj, self.path(*parts))
