"""The two sides of ``rag-eval compare A B``: what a side is written as, and the Parquet tables it reads.

Syntax of a side (one system of one evaluation, read offline from the Parquet tables of an output folder):

- ``system:NAME``        system NAME in the suite folder's latest run (``metric_summary.parquet`` ...);
- ``baseline``           the promoted baseline (``baseline/``: manifest, metric_summary, question_metrics,
                         rag_runs; the judge's labels from that run's per-question archive when kept);
- ``night:YYYY-MM-DD[:NAME]``  the last full run of that UTC night in ``metric_history.parquet``; its
                         per-question tables from ``history/<run_id>/`` when kept (without them: the metric
                         values only, no paired test);
- ``run:RUN_ID[:NAME]``  the same for one run id (a unique prefix is enough);
- ``dir:PATH[:NAME]``    another output folder (another suite's, a ``--output`` folder, a copy).

Without ``:NAME``, a ``night``, ``run`` or ``dir`` side takes the other side's system when it has it, else its
only system; otherwise the command says which systems there are. Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.errors import EvalError, InputError
from rag_eval_pipeline.core.plain_names import COMPARE_SIDE_SYNTAX
from rag_eval_pipeline.core.storage import BASELINE_DIR, RUN_ARCHIVE
from rag_eval_pipeline.core.storage import read_table as read_checked

KINDS = ("system", "baseline", "night", "run", "dir")
SYNTAX = COMPARE_SIDE_SYNTAX
ARCHIVE = RUN_ARCHIVE  # one folder per run id with its per-question tables (declared in core.storage)


class SideError(EvalError):
    """A side that does not resolve: bad syntax, unknown system, no run that night, no such folder (usage)."""


@dataclass(frozen=True)
class SideSpec:
    """A parsed side: ``kind`` (:data:`KINDS`), ``value`` (name, date, run id or path; "" for baseline),
    ``system`` (the system named after the last ``:``, or None), ``text`` (as written)."""

    kind: str
    value: str
    system: str | None
    text: str


@dataclass
class Side:
    """One resolved side: ``label`` (for people), ``system``, ``summary`` (metric_summary rows of that system, all
    splits; None when only history values exist), ``history_values`` (metric_history rows: split all only),
    ``question_metrics``, ``rag_runs``, ``judge_labels`` (each None when not kept), ``golden_version``,
    ``corpus_version``, ``notes`` (what is missing and why), ``folder`` (the output folder read)."""

    spec: SideSpec
    label: str
    system: str
    folder: Path
    summary: pl.DataFrame | None
    history_values: pl.DataFrame | None
    question_metrics: pl.DataFrame | None
    rag_runs: pl.DataFrame | None
    judge_labels: pl.DataFrame | None
    golden_version: str | None
    corpus_version: str | None
    notes: list[str]


def parse_side(text: str) -> SideSpec:
    """Parse a side as written on the command line (see the module docstring).

    Output: a :class:`SideSpec`. Raises SideError naming the syntax for anything else (an empty name, an
    unknown kind, a date that is not YYYY-MM-DD)."""
    t = text.strip()
    if t == "baseline":
        return SideSpec("baseline", "", None, text)
    kind, sep, rest = t.partition(":")
    if not sep or kind not in KINDS or kind == "baseline" or not rest:
        raise SideError(f"cannot read side {text!r}: write {SYNTAX}")
    if kind == "system":
        return SideSpec("system", rest, rest, text)
    value, system = rest, None
    if kind in ("night", "run"):
        value, _, system = rest.partition(":")
        system = system or None
    elif kind == "dir":
        head, sep2, tail = rest.rpartition(":")
        if sep2 and tail and head and not Path(rest).is_dir() and Path(head).is_dir():
            value, system = head, tail
    if kind == "night":
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise SideError(f"cannot read side {text!r}: night:YYYY-MM-DD (a UTC date), got {value!r}") from None
    if not value:
        raise SideError(f"cannot read side {text!r}: write {SYNTAX}")
    return SideSpec(kind, value, system, text)


def read_table(path: Path) -> pl.DataFrame | None:
    """The Parquet table at ``path``, or None when the file does not exist, checked for its table and schema
    version (``core.storage.read_table``: an older file is migrated with a one-line warning). Raises InputError
    naming the file when it exists but cannot be read (SchemaVersionError, naming both versions, for a file of
    another schema version)."""
    if not path.exists():
        return None
    try:
        return read_checked(path)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - polars raises several kinds for a damaged file
        raise InputError(f"{path}: cannot read the Parquet table ({type(exc).__name__}: {exc})") from None


def _need(df: pl.DataFrame | None, path: Path, what: str) -> pl.DataFrame:
    if df is None:
        raise InputError(f"{path}: not found: {what} (run rag-eval run first, or check the folder)")
    return df


def _systems(*frames: pl.DataFrame | None) -> list[str]:
    found: set[str] = set()
    for df in frames:
        if df is not None and "system" in df.columns:
            found |= set(df["system"].drop_nulls().to_list())
    return sorted(found)


def _pick_system(spec: SideSpec, available: list[str], default: str | None, where: str) -> str:
    if spec.system:
        if spec.system not in available:
            have = ", ".join(available) or "none"
            raise SideError(f"side {spec.text!r}: no system {spec.system!r} in {where} (it has {have})")
        return spec.system
    if default and default in available:
        return default
    if len(available) == 1:
        return available[0]
    raise SideError(f"side {spec.text!r}: {where} has several systems ({', '.join(available) or 'none'}): "
                    f"name one, e.g. {spec.kind}:{spec.value}:{available[0] if available else 'NAME'}")


def _only(df: pl.DataFrame | None, system: str) -> pl.DataFrame | None:
    """``df``'s rows of ``system``, at one level per metric (chunk when a metric has it, else document:
    ``core/metrics/doc_level.py``), so a comparison keyed by (metric, k) sees one row each."""
    from rag_eval_pipeline.core.metrics.doc_level import primary_level_rows

    return None if df is None else primary_level_rows(df.filter(pl.col("system") == system))


def _first(df: pl.DataFrame | None, column: str) -> str | None:
    if df is None or column not in df.columns or not df.height:
        return None
    values = df[column].drop_nulls()
    return str(values[0]) if len(values) else None


def _from_folder(spec: SideSpec, folder: Path, default: str | None, label: str, archive: Path | None = None) -> Side:
    tables = {name: read_table(folder / f"{name}.parquet")
              for name in ("metric_summary", "question_metrics", "rag_runs", "judge_labels")}
    summary = _need(tables["metric_summary"], folder / "metric_summary.parquet", "the metric summary")
    system = _pick_system(spec, _systems(summary), default, str(folder))
    judge = tables["judge_labels"]
    notes = []
    if judge is None and archive is not None:
        judge = read_table(archive / "judge_labels.parquet")
    if judge is None:
        notes.append("the judge's claim labels were not kept: no verdicts shown")
    qm = _only(tables["question_metrics"], system)
    if qm is None:
        notes.append("no per-question values: no paired test")
    runs = _only(tables["rag_runs"], system)
    return Side(spec, f"{label} {system}".strip(), system, folder, _only(summary, system), None, qm, runs,
                _only(judge, system), _first(runs, "golden_version"), _first(runs, "corpus_version"), notes)


def _history_run(spec: SideSpec, folder: Path) -> tuple[str, dt.datetime, pl.DataFrame]:
    path = folder / "metric_history.parquet"
    history = _need(read_table(path), path, "the metric history (a full evaluation writes it)")
    runs = history.group_by("run_id").agg(pl.col("evaluated_at").max()).sort("evaluated_at")
    if spec.kind == "night":
        day = dt.date.fromisoformat(spec.value)
        runs_that_night = runs.filter(pl.col("evaluated_at").dt.date() == day)
        if not runs_that_night.height:
            nights = sorted({t.date().isoformat() for t in runs["evaluated_at"].to_list()})[-10:]
            raise SideError(f"side {spec.text!r}: no full run on the night of {day} in {path} "
                            f"(recorded nights: {', '.join(nights) or 'none'})")
        row = runs_that_night.row(-1, named=True)
    else:
        hits = runs.filter(pl.col("run_id").str.starts_with(spec.value))
        if hits.height != 1:
            raise SideError(f"side {spec.text!r}: {'no run' if not hits.height else 'several runs'} with id "
                            f"{spec.value!r}... in {path}" + (f" ({', '.join(hits['run_id'].to_list()[:5])})"
                                                              if hits.height else ""))
        row = hits.row(0, named=True)
    return row["run_id"], row["evaluated_at"], history.filter(pl.col("run_id") == row["run_id"])


def resolve_side(spec: SideSpec, suite_folder: Path, default_system: str | None = None) -> Side:
    """Read one side's tables.

    Inputs: the parsed side, the suite's output folder (for ``system``, ``baseline``, ``night``, ``run``), the
    system to take when the side names none (the other side's). Output: a :class:`Side`. Raises SideError for a
    side that does not resolve (no such system, night, run or folder: a usage mistake) and InputError naming
    the file for a table that is missing where it must exist or cannot be read (a data mistake).
    """
    if spec.kind == "system":
        return _from_folder(spec, suite_folder, None, "")
    if spec.kind == "dir":
        folder = Path(spec.value).expanduser()
        if not folder.is_dir():
            raise SideError(f"side {spec.text!r}: folder {folder.resolve()} not found")
        return _from_folder(spec, folder.resolve(), default_system, f"{folder.resolve()}:")
    if spec.kind == "baseline":
        from rag_eval_pipeline.core.baseline import BaselineDamaged, read_baseline

        folder = suite_folder / BASELINE_DIR
        try:  # the gate's own reader: strict JSON, hashes, table schema versions
            promoted = read_baseline(suite_folder)
        except BaselineDamaged as exc:
            raise InputError(str(exc)) from None
        if promoted is None:
            raise SideError(f"side 'baseline': nothing promoted yet in {suite_folder} (no manifest.json)")
        manifest = promoted.manifest
        run_id = manifest.get("run_id")
        archive = suite_folder / ARCHIVE / str(run_id) if run_id else None
        side = _from_folder(SideSpec("baseline", "", manifest.get("system"), spec.text), folder, None,
                            f"baseline (promoted {manifest.get('promoted_at', '?')})", archive)
        side.golden_version = manifest.get("golden_version") or side.golden_version
        side.corpus_version = manifest.get("corpus_version") or side.corpus_version
        return side
    run_id, when, rows = _history_run(spec, suite_folder)
    archive = suite_folder / ARCHIVE / run_id
    label = f"{spec.kind}:{when.date().isoformat() if spec.kind == 'night' else run_id} (run {run_id[:8]}, " \
            f"{when.strftime('%Y-%m-%d %H:%M UTC')})"
    if (archive / "metric_summary.parquet").exists():
        side = _from_folder(spec, archive, default_system, label)
        return side
    system = _pick_system(spec, _systems(rows), default_system, f"run {run_id}")
    mine = _only(rows, system)
    return Side(spec, f"{label} {system}", system, suite_folder, None, mine, None, None, None,
                _first(mine, "golden_version"), _first(mine, "corpus_version"),
                ["no per-question tables were kept for this run: metric values only (split all), no paired test, "
                 "no question-by-question view"])
