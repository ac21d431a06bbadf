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
- the manifest itself cannot be read (not JSON, repeated keys, not an object);
- the manifest was written with hashes (it carries ``manifest_version``, or ``promotion.json``, which
  holds a copy of the manifest, records ``files``) but its ``files`` is gone, not an object or lacks a
  table (deleting ``files`` would otherwise turn the check off), or its ``files`` differ from the copy
  in ``promotion.json`` of the same run (hashes rewritten to match edited tables);
- a table is not a Parquet file of its declared table and schema version (``core.storage.read_table``:
  an older version is migrated, a newer or damaged one refused).

A manifest written before hashes were recorded (no ``files``, no ``manifest_version``, and no ``files``
in ``promotion.json``) is read as before, its tables required.
How to recover is in the message: restore ``baseline/`` from a backup, or delete both
``baseline/`` and ``promotion.json`` to start again without a baseline (the next passing candidate
is promoted). Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.errors import EvalError, InputError
from rag_eval_pipeline.core.gates import PromotedBaseline
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.storage import BASELINE_DIR, read_table  # the suite folder's names are declared there

#: The manifest layout written by :func:`with_file_hashes`: 1 = ``files`` holds every table's sha256.
MANIFEST_VERSION = 1
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


def _hashed_files(manifest: dict, record: Any, manifest_path: Path, folder: Path) -> dict | None:
    """The manifest's ``files`` when it was written with hashes (module docstring), None for a manifest
    written before hashes. Raises BaselineDamaged when a hashed manifest's ``files`` is missing or altered."""
    record = record if isinstance(record, dict) else {}
    files = manifest.get("files")
    version = manifest.get("manifest_version")
    hashed = version is not None or "files" in manifest or "files" in record or "manifest_version" in record
    if not hashed:
        return None
    if version is not None and version != MANIFEST_VERSION:
        newer = isinstance(version, int) and not isinstance(version, bool) and version > MANIFEST_VERSION
        raise BaselineDamaged(f"{manifest_path}: manifest_version {version!r}, this pipeline reads version "
                              f"{MANIFEST_VERSION}" + (" (written by a newer release: read it with that release)"
                                                       if newer else "") + f"; {_recover(folder)}")
    wanted = [f"{t}.parquet" for t in TABLES]
    if not isinstance(files, dict) or any(not isinstance(files.get(n), str) for n in wanted):
        raise BaselineDamaged(f"{manifest_path}: 'files' (the sha256 of each baseline table, recorded at promotion) "
                              "is missing, not an object or lacks a table; without it the tables cannot be "
                              f"checked; {_recover(folder)}")
    if (isinstance(record.get("files"), dict) and record.get("run_id") == manifest.get("run_id")
            and record["files"] != files):
        raise BaselineDamaged(f"{manifest_path}: the table hashes differ from those {folder / PROMOTION_RECORD} "
                              f"recorded for the same promotion (run {manifest.get('run_id')}); {_recover(folder)}")
    return files


def _checked_manifest(folder: Path) -> tuple[dict, bool] | None:
    """The checks of :func:`read_baseline` before its tables are read: (the manifest, whether it records the
    tables' hashes, all matching), or None when nothing was promoted. Raises BaselineDamaged."""
    manifest_path = folder / BASELINE_DIR / MANIFEST
    record_path = folder / PROMOTION_RECORD
    record = _read_json(record_path, folder) if record_path.exists() else None
    if not manifest_path.exists():
        if isinstance(record, dict) and record.get("system"):
            raise BaselineDamaged(
                f"{manifest_path} is missing, but {record_path} records {record['system']!r} promoted at "
                f"{record.get('promoted_at')}; the gate will not fall back to another reference; {_recover(folder)}")
        return None
    manifest = _read_json(manifest_path, folder)
    if not isinstance(manifest, dict) or not manifest.get("system"):
        raise BaselineDamaged(f"{manifest_path}: expected a JSON object naming the promoted system; "
                              f"{_recover(folder)}")
    files = _hashed_files(manifest, record, manifest_path, folder)
    names = [f"{t}.parquet" for t in (TABLES if files is not None else READ_BY_GATE)]
    for name in names:
        path = folder / BASELINE_DIR / name
        if not path.is_file():
            raise BaselineDamaged(f"{path} is missing (listed in {manifest_path}); {_recover(folder)}")
        if files is not None:
            recorded = files[name]
            actual = file_sha256(path)
            if recorded != actual:
                raise BaselineDamaged(f"{path}: sha256 {actual[:12]}... differs from {recorded[:12]}... recorded "
                                      f"at promotion in {manifest_path} (edited, truncated or zeroed since); "
                                      f"{_recover(folder)}")
    return manifest, files is not None


def read_baseline_manifest(folder: str | Path) -> dict | None:
    """The promoted baseline's manifest, checked as :func:`read_baseline` checks the baseline, without holding
    its tables in memory (a step that needs the manifest only: the report, promotion), or None when nothing
    was ever promoted.

    When the manifest records the tables' sha256 and each file's footer says the current schema version, the
    matching hashes stand for the read (the bytes are those written, and checked, at promotion); otherwise
    (an older manifest, an older table version) the tables are read as :func:`read_baseline` reads them, so
    the same baselines are refused. Raises BaselineDamaged naming the file and what is wrong."""
    from rag_eval_pipeline.core.table_files import PREFIX, read_file_metadata
    from rag_eval_pipeline.core.tables import spec_of

    folder = Path(folder)
    checked = _checked_manifest(folder)
    if checked is None:
        return None
    manifest, hashed = checked
    current = hashed
    for name in READ_BY_GATE if hashed else ():
        try:
            version = read_file_metadata(folder / BASELINE_DIR / f"{name}.parquet").get(PREFIX + "schema_version")
        except InputError:
            version = None
        current = current and version == str(spec_of(name).version)
    if not current:
        read_baseline(folder)
    return manifest


def read_baseline(folder: str | Path) -> PromotedBaseline | None:
    """The promoted baseline of a suite's output folder, checked (module docstring), or None when nothing
    was ever promoted there.

    Input: the suite's output folder. Output: a PromotedBaseline (manifest, metric_summary,
    question_metrics; the tables in their declared schema) or None. Raises BaselineDamaged naming the file
    and what is wrong."""
    folder = Path(folder)
    checked = _checked_manifest(folder)
    if checked is None:
        return None
    manifest = checked[0]
    tables = {}
    for name in READ_BY_GATE:
        path = folder / BASELINE_DIR / f"{name}.parquet"
        try:
            tables[name] = read_table(path, name)
        except InputError as exc:  # names the file: another table, a newer schema version, not Parquet
            raise BaselineDamaged(f"{exc}; {_recover(folder)}") from None
        except Exception as exc:  # noqa: BLE001 - polars raises several types for a damaged file
            raise BaselineDamaged(f"{path}: not a readable Parquet table ({str(exc)[:200]}); "
                                  f"{_recover(folder)}") from None
    return PromotedBaseline(manifest, tables["metric_summary"], tables["question_metrics"])


def with_file_hashes(manifest: Mapping[str, Any], folder: str | Path) -> dict[str, Any]:
    """``manifest`` plus ``manifest_version`` (:data:`MANIFEST_VERSION`) and ``files``: the sha256 of each
    baseline table as written in ``folder/baseline``. Raises OSError when a table cannot be read."""
    base = Path(folder) / BASELINE_DIR
    return {**manifest, "manifest_version": MANIFEST_VERSION,
            "files": {f"{t}.parquet": file_sha256(base / f"{t}.parquet") for t in TABLES}}
