"""The promoted baseline on disk, and the checks that keep it from changing quietly.

Layout inside a suite's output folder: ``baseline/manifest.json`` (what was promoted: system, versions,
``promoted_at``, ``run_id``, and ``files``: the sha256 of each table below), ``baseline/metric_summary.parquet``,
``baseline/question_metrics.parquet``, ``baseline/rag_runs.parquet``; and ``promotion.json`` beside the
tables (the ``promotion`` asset's record of the last promotion).

:func:`read_baseline` refuses, with :class:`BaselineDamaged`, every state in which the reference the gate
compares against is not the one that was promoted:

- ``promotion.json`` records a promoted system but ``baseline/manifest.json`` is gone (the folder
  deleted: the gate would otherwise fall back to the run's own ``baseline_system`` and promote what
  the real baseline blocked);
- a table listed in the manifest is missing, or its sha256 differs from the one recorded at promotion
  (edited, truncated, zeroed by hand);
- the manifest itself cannot be read (not JSON, repeated keys, not an object).

A manifest written before hashes were recorded (no ``files``) is read as before, its tables required.
How to recover is in the message: restore ``baseline/`` from a backup, or delete both
``baseline/`` and ``promotion.json`` to start again without a baseline (the next passing candidate
is promoted). Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.gates import PromotedBaseline
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.storage import BASELINE_DIR  # the suite folder's names are declared there

MANIFEST = "manifest.json"
PROMOTION_RECORD = "promotion.json"
TABLES = ("metric_summary", "question_metrics", "rag_runs")
#: Tables the gate reads; ``rag_runs`` is kept for people and checked like the others.
READ_BY_GATE = ("metric_summary", "question_metrics")


class BaselineDamaged(EvalError):
    """The promoted baseline is missing, edited or unreadable; the message names the file and the way back."""


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks. Raises OSError when it cannot be read."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _recover(folder: Path) -> str:
    return (f"restore {folder / BASELINE_DIR} from a backup, or delete both {folder / BASELINE_DIR} and "
            f"{folder / PROMOTION_RECORD} to start again without a baseline; nothing is compared or promoted "
            "until then")


def _read_json(path: Path, folder: Path) -> Any:
    try:
        return strict_json(path.read_bytes())
    except (OSError, JsonError) as exc:
        raise BaselineDamaged(f"{path}: cannot be read ({str(exc)[:200]}); {_recover(folder)}") from None


def read_baseline(folder: str | Path) -> PromotedBaseline | None:
    """The promoted baseline of a suite's output folder, checked (module docstring), or None when nothing
    was ever promoted there.

    Input: the suite's output folder. Output: a PromotedBaseline (manifest, metric_summary,
    question_metrics) or None. Raises BaselineDamaged naming the file and what is wrong."""
    folder = Path(folder)
    manifest_path = folder / BASELINE_DIR / MANIFEST
    if not manifest_path.exists():
        record_path = folder / PROMOTION_RECORD
        record = _read_json(record_path, folder) if record_path.exists() else None
        if isinstance(record, dict) and record.get("system"):
            raise BaselineDamaged(
                f"{manifest_path} is missing, but {record_path} records {record['system']!r} promoted at "
                f"{record.get('promoted_at')}; the gate will not fall back to another reference; {_recover(folder)}")
        return None
    manifest = _read_json(manifest_path, folder)
    if not isinstance(manifest, dict) or not manifest.get("system"):
        raise BaselineDamaged(f"{manifest_path}: expected a JSON object naming the promoted system; "
                              f"{_recover(folder)}")
    files = manifest.get("files")
    names = [f"{t}.parquet" for t in (TABLES if isinstance(files, dict) else READ_BY_GATE)]
    for name in names:
        path = folder / BASELINE_DIR / name
        if not path.is_file():
            raise BaselineDamaged(f"{path} is missing (listed in {manifest_path}); {_recover(folder)}")
        if isinstance(files, dict):
            recorded = files.get(name)
            actual = file_sha256(path)
            if recorded != actual:
                raise BaselineDamaged(f"{path}: sha256 {actual[:12]}... differs from {str(recorded)[:12]}... recorded "
                                      f"at promotion in {manifest_path} (edited, truncated or zeroed since); "
                                      f"{_recover(folder)}")
    tables = {}
    for name in READ_BY_GATE:
        path = folder / BASELINE_DIR / f"{name}.parquet"
        try:
            tables[name] = pl.read_parquet(path)
        except Exception as exc:  # noqa: BLE001 - polars raises several types for a damaged file
            raise BaselineDamaged(f"{path}: not a readable Parquet table ({str(exc)[:200]}); "
                                  f"{_recover(folder)}") from None
    return PromotedBaseline(manifest, tables["metric_summary"], tables["question_metrics"])


def with_file_hashes(manifest: Mapping[str, Any], folder: str | Path) -> dict[str, Any]:
    """``manifest`` plus ``files``: the sha256 of each baseline table as written in ``folder/baseline``.
    Raises OSError when a table cannot be read."""
    base = Path(folder) / BASELINE_DIR
    return {**manifest, "files": {f"{t}.parquet": file_sha256(base / f"{t}.parquet") for t in TABLES}}
