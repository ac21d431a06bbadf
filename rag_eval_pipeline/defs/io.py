"""Parquet IO for every asset: one small IO manager over polars + pyarrow.

dagster-polars does not load Parquet with polars 2.x (``scan_parquet`` lost ``rechunk``), so this
~40-line manager replaces it. DataFrames go to ``<base_dir>/<asset>.parquet`` (checked against the
table's declared schema, written atomically); anything else goes to ``<base_dir>/<asset>.json``.
"""


import json
from pathlib import Path

import dagster as dg
import polars as pl

from rag_eval_pipeline.core.storage import write_json_atomic, write_parquet_atomic


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores polars DataFrames as Parquet and other values as JSON under ``base_dir``."""

    base_dir: str

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
        key = context.upstream_output.asset_key if context.upstream_output else context.asset_key
        parquet = self._path(key, ".parquet")
        if parquet.exists():
            return pl.read_parquet(parquet)
        as_json = self._path(key, ".json")
        if as_json.exists():
            return json.loads(as_json.read_text(encoding="utf-8"))
        raise FileNotFoundError(
            f"asset {key.to_user_string()} has not been materialised yet: no {parquet} or {as_json}"
        )
