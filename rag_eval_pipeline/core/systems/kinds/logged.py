"""``kind: logged``: the answers a team's RAG system logged, one run-log line per question
(schema: ``core/sources/run_logs.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sections import key
from rag_eval_pipeline.core.systems.base import Deployment, SystemKind, SystemRun, register, resolve
from rag_eval_pipeline.core.systems.kinds._shared import IdMappedSpec, mapped_files
from rag_eval_pipeline.core.systems.records import RunContext

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")


@dataclass(frozen=True, kw_only=True)
class LoggedSystem(IdMappedSpec):
    """A ``kind: logged`` system."""

    path: Path = key(doc="the run log: JSONL or Parquet, one object per question (run-log schema)")


def run(spec: LoggedSystem, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """Read the log; a chunk id outside the snapshot, or a hit without a score under ``ranking_mode:
    trec_eval``, is an InputError at its line. Rows for questions outside the golden set are kept
    (``rag_runs`` counts and excludes them)."""
    from rag_eval_pipeline.core.sources.run_logs import load_run_log

    return SystemRun(load_run_log(resolve(ctx.base_dir, spec.path), spec.name, ctx.corpus_version,
                                  ctx.golden_version, known_chunks=ctx.known_chunks,
                                  require_scores=ctx.require_scores, ids=ctx.ids),
                     {"id_mapping": ctx.ids.stats()} if ctx.ids is not None else {})


KIND = register(SystemKind(
    example={"name": "team_rag", "kind": "logged", "path": "runs/team_rag.jsonl"},
    name="logged", section=LoggedSystem, run=run, order=20, watches=lambda s: (str(s.path),) + mapped_files(s),
    doc="Reads the answers your RAG system already gave, one JSON object per line (or one Parquet row) per "
        "question: retrieved chunk ids with scores and ranks, the decision, the answer and its citations. A "
        "bad line stops the run with the file, line and field. The on-change sensor watches the file's "
        "content.",
))
