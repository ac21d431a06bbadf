"""Comparing two evaluations' output folders table by table (executor and deployment parity tests).

What may differ between two runs of the same evaluation, and nothing else:

- ``metric_history``: ``run_id`` (Dagster's run id) and ``evaluated_at`` (when the run wrote it);
- ``judge_calibration`` / ``calibration_history``: ``calibrated_at`` (when the calibration was computed);
- ``regression_cases``: ``first_seen_run`` / ``first_seen_at`` (the run that first saw the case, and when);
- the run archive's folder name, ``history/<run id>/`` (compared as ``history/<run>/``: one run per folder here).

Every other column of every Parquet table, in every row and in the same row order, must be equal.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

RUN_SPECIFIC_COLUMNS = {"run_id", "evaluated_at", "calibrated_at", "first_seen_run", "first_seen_at"}


def parquet_tables(folder: Path) -> dict[str, pl.DataFrame]:
    """Every Parquet table under ``folder`` (relative path -> frame), run-specific columns dropped."""
    out = {}
    for p in sorted(folder.rglob("*.parquet")):
        if any(part.startswith(".") for part in p.relative_to(folder).parts):
            continue
        df = pl.read_parquet(p)
        name = re.sub(r"^history/[^/]+/", "history/<run>/", p.relative_to(folder).as_posix())
        out[name] = df.drop([c for c in df.columns if c in RUN_SPECIFIC_COLUMNS])
    return out


def table_differences(expected: Path, actual: Path) -> list[str]:
    """One line per difference between the Parquet tables of two folders (empty: equal)."""
    a, b = parquet_tables(expected), parquet_tables(actual)
    diffs = [f"only in {expected}: {k}" for k in sorted(a.keys() - b.keys())]
    diffs += [f"only in {actual}: {k}" for k in sorted(b.keys() - a.keys())]
    for name in sorted(a.keys() & b.keys()):
        x, y = a[name], b[name]
        if x.schema != y.schema:
            diffs.append(f"{name}: schema {x.schema} != {y.schema}")
        elif x.height != y.height:
            diffs.append(f"{name}: {x.height} rows != {y.height} rows")
        elif not x.equals(y):
            cols = [c for c in x.columns if not x[c].equals(y[c])]
            diffs.append(f"{name}: columns {cols} differ")
    return diffs
