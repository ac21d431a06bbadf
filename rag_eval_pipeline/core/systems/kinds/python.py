"""``kind: python``: a function ``package.module:function`` called once per golden question, in the
run's process. Implementation: ``core/systems/python_callable.py``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.section_checks import check_callable_target
from rag_eval_pipeline.core.sections import key
from rag_eval_pipeline.core.systems.base import Deployment, SystemKind, SystemRun, register
from rag_eval_pipeline.core.systems.kinds._shared import AnswerTextSpec
from rag_eval_pipeline.core.systems.records import DEFAULT_MAX_REPLY_BYTES, MAX_REPLY_BYTES_LIMIT, RunContext

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")


@dataclass(frozen=True, kw_only=True)
class PythonSystemConfig(AnswerTextSpec):
    """A ``kind: python`` system."""

    callable: str = key(check=check_callable_target, doc="answer(question_id, question, user_groups) -> run-log object")
    concurrency: int = key(1, low=1, doc="threads (the function must then be thread-safe)")
    timeout_s: float | None = key(None, low=0, low_open=True, noun="number",
                                  doc="a call still running then is an error row; null: no deadline")
    exception_messages: bool = key(False, doc="keep an exception's message (cut to 100,000 characters) in "
                                              "the error row, not only its type; a message can quote anything")
    max_reply_bytes: int = key(DEFAULT_MAX_REPLY_BYTES, low=1, cap=MAX_REPLY_BYTES_LIMIT,
                               cap_why="the cap keeps one reply's memory bounded",
                               doc="largest return value, measured as JSON; a bigger one is an error row")


def run(spec: PythonSystemConfig, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """One call per question; an exception is an ``error`` row. ConfigError when the callable does not import."""
    return PythonRunner(spec, max_concurrency=deployment.max_concurrency, base_dir=ctx.base_dir).run(golden, ctx)


class PythonRunner:
    """A ``python`` system ready to run; ``fn`` replaces the import (tests), ``max_concurrency`` caps threads,
    ``base_dir`` (the configuration's folder) is where the module is looked for first."""

    def __init__(self, spec: PythonSystemConfig, fn: Callable | None = None, *, max_concurrency: int | None = None,
                 base_dir: Path | None = None):
        from rag_eval_pipeline.core.systems.python_callable import PythonSystem

        if max_concurrency is not None:
            spec = dataclasses.replace(spec, concurrency=Deployment(max_concurrency).concurrency(spec.concurrency))
        self.system = PythonSystem(spec, fn, base_dir)

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        """One call per golden question: the ``rag_runs`` rows (an exception or a reply outside the run-log
        schema is an ``error`` row) and what the run counted (calls, errors by kind)."""
        from rag_eval_pipeline.core.systems.base import questions_of, row_counts, rows_frame

        rows = self.system.run(questions_of(golden), ctx)
        stats = {"calls": self.system.stats["calls"], "errors_by_kind": dict(self.system.stats["errors_by_kind"]),
                 "captured_output_lines": self.system.capture.lines}
        mapping = {"id_mapping": ctx.ids.stats()} if ctx.ids is not None else {}
        return SystemRun(rows_frame(rows), {"kind": "python", **row_counts(rows), **stats, **mapping})


def preflight(spec: PythonSystemConfig, base_dir: Path | None, environ, reach: bool) -> list[str]:
    """``rag-eval check``: the callable imports (it is not called). Raises ConfigError saying where the
    module was looked for."""
    from rag_eval_pipeline.core.systems.python_callable import load_callable

    load_callable(spec.callable, spec.name, base_dir)
    return [f"{spec.callable} imports (not called)"]


KIND = register(SystemKind(
    example={"name": "team_rag_inproc", "kind": "python", "callable": "team_rag.service:answer", "concurrency": 4},
    name="python", section=PythonSystemConfig, run=run, order=40, makes_calls=True, preflight=preflight,
    doc="Calls a Python function of yours once per golden question, in the run's process (the module is looked "
        "for in the configuration's folder first, then on PYTHONPATH): "
        "function(question_id, question, user_groups) returns one run-log object, checked like an HTTP reply. "
        "An exception, an invalid return value or a call past timeout_s is an error row with the reason.",
))
