"""``kind: traces``: OpenTelemetry traces (OpenInference conventions) the team already collects, read
from OTLP JSON or Phoenix exports; makes no call. Implementation: ``core/systems/traces.py``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sections import key
from rag_eval_pipeline.core.systems.base import Deployment, SystemKind, SystemRun, register
from rag_eval_pipeline.core.systems.kinds._shared import AnswerTextSpec, mapped_files, nonblank
from rag_eval_pipeline.core.systems.records import RunContext

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

TRACE_FORMATS = ("auto", "otlp_json", "phoenix")


@dataclass(frozen=True, kw_only=True)
class TracesSystemConfig(AnswerTextSpec):
    """A ``kind: traces`` system."""

    path: Path = key(doc="an OTLP JSON file, a Phoenix spans export, or a folder of them")
    format: str = key("auto", choices=TRACE_FORMATS, doc="how the files are written; auto tells them apart")
    question_id_attribute: str | None = key(None, check=nonblank,
                                            doc="span attribute holding the question id; null: match by text")
    decision_attribute: str | None = key(None, check=nonblank, doc="span attribute holding the decision")


def run(spec: TracesSystemConfig, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """Import the traces: one row per golden question (``no_trace`` error rows where none matched)."""
    return TracesRunner(spec, ctx.base_dir).run(golden, ctx)


class TracesRunner:
    """A ``traces`` system ready to run; relative paths resolve against ``base_dir`` (default: ``ctx.base_dir``)."""

    def __init__(self, spec: TracesSystemConfig, base_dir: Path | None = None):
        self.spec, self.base_dir = spec, base_dir

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        """One row per golden question from the traces (a ``no_trace`` error row where none matched) and what
        the import counted (traces, unmatched, duplicates). Raises InputError for an unreadable source."""
        from rag_eval_pipeline.core.systems.base import row_counts, rows_frame
        from rag_eval_pipeline.core.systems.traces import import_traces

        result = import_traces(self.spec, golden, ctx, base_dir=self.base_dir or ctx.base_dir)
        return SystemRun(rows_frame(result.rows), {"kind": "traces", **row_counts(result.rows), **result.info})


KIND = register(SystemKind(
    example={"name": "team_rag_traces", "kind": "traces", "path": "traces/",
             "question_id_attribute": "metadata.question_id"},
    name="traces", section=TracesSystemConfig, run=run, order=50, watches=lambda s: (str(s.path),) + mapped_files(s),
    estimate_note="reads its trace files",
    doc="Reads the OpenTelemetry traces your system already collects (OpenInference conventions): an OTLP JSON "
        "file from the Collector's file exporter or a Phoenix spans export. One trace is one question; the "
        "retriever span gives the ranked documents, the root span the answer and its latency. A question "
        "without a trace is an error row; the on-change sensor watches the files' content.",
))
