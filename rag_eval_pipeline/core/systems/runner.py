"""One interface over the live kinds: ``run_system(spec, golden, ctx) -> SystemRun``.

The Dagster resources (one per kind) build a :class:`SystemUnderTest` from a validated spec with
their deployment settings and call :meth:`SystemUnderTest.run`; the pure pipeline calls
:func:`run_system` with the defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.records import RunContext


@dataclass
class SystemRun:
    """One system's ``rag_runs`` rows (conformed) and what the run counted (for the asset metadata)."""

    runs: pl.DataFrame
    info: dict[str, Any] = field(default_factory=dict)


class SystemUnderTest(Protocol):
    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun: ...


def questions_of(golden: pl.DataFrame) -> list[dict]:
    """The golden questions as call arguments: ``question_id``, ``question``, ``user_groups`` (list)."""
    return [{"question_id": q, "question": t, "user_groups": list(g or [])}
            for q, t, g in golden.select("question_id", "question", "user_groups").iter_rows()]


def _frame(rows: list[dict]) -> pl.DataFrame:
    if not rows:
        return tables.empty("rag_runs")
    return tables.conform(pl.DataFrame(rows, schema=tables.SCHEMAS["rag_runs"]), "rag_runs")


def _row_counts(rows: list[dict]) -> dict[str, Any]:
    # ids only: an error text can quote a reply, and asset metadata never carries answer or chunk text
    errors = [r["question_id"] for r in rows if r["decision"] == "error"]
    return {"questions": len(rows), "error_rows": len(errors), "error_question_ids": errors[:50]}


class HttpRunner:
    """``kind: http`` behind the interface. ``environ``/``transport``/``user_agent``: see HttpSystem."""

    def __init__(self, spec: dict, environ: Mapping[str, str] | None = None, **kwargs):
        from rag_eval_pipeline.core.systems.http import HttpSystem

        self.system = HttpSystem(spec, environ, **kwargs)

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        rows = self.system.run(questions_of(golden), ctx)
        return SystemRun(_frame(rows), {"kind": "http", **_row_counts(rows), **self.system.stats.as_dict()})


class PythonRunner:
    """``kind: python`` behind the interface."""

    def __init__(self, spec: dict, fn=None, base_dir: Path | None = None):
        from rag_eval_pipeline.core.systems.python_callable import PythonSystem

        self.system = PythonSystem(spec, fn, base_dir)

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        rows = self.system.run(questions_of(golden), ctx)
        stats = {"calls": self.system.stats["calls"], "errors_by_kind": dict(self.system.stats["errors_by_kind"])}
        return SystemRun(_frame(rows), {"kind": "python", **_row_counts(rows), **stats})


class TracesRunner:
    """``kind: traces`` behind the interface (reads files; makes no call)."""

    def __init__(self, spec: dict, base_dir: Path | None = None):
        self.spec, self.base_dir = spec, base_dir

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        from rag_eval_pipeline.core.systems.traces import import_traces

        result = import_traces(self.spec, golden, ctx, base_dir=self.base_dir)
        return SystemRun(_frame(result.rows), {"kind": "traces", **_row_counts(result.rows), **result.info})


def make_system(spec: dict, *, base_dir: Path | None = None, environ: Mapping[str, str] | None = None,
                **kwargs) -> SystemUnderTest:
    """The runner for a validated ``http`` / ``python`` / ``traces`` spec. Raises ConfigError for
    another kind, an unset ``headers_from_env`` variable, or a callable that cannot be imported."""
    kind = spec.get("kind")
    if kind == "http":
        return HttpRunner(spec, environ, **kwargs)
    if kind == "python":
        return PythonRunner(spec, base_dir=base_dir, **kwargs)
    if kind == "traces":
        return TracesRunner(spec, base_dir)
    raise ConfigError(f"system {spec.get('name')!r}: kind {kind!r} is not a live system kind")


def run_system(spec: dict, golden: pl.DataFrame, ctx: RunContext, *, base_dir: Path | None = None,
               environ: Mapping[str, str] | None = None) -> SystemRun:
    """Run one live system over ``golden`` with default settings; see :func:`make_system`."""
    return make_system(spec, base_dir=base_dir, environ=environ).run(golden, ctx)
