"""The ``rag_runs`` step without Dagster: choose the systems, run each through its kind, keep the other
systems' rows from the last run when only some are re-run, exclude rows for questions outside the
golden set, and count what the asset's metadata reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.systems.base import Deployment, SystemRun, run_system
from rag_eval_pipeline.core.systems.records import RunContext

_LISTED = 50


def run_each(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, corpus_version: str,
             systems: list[str] | None = None, deployment: Deployment | None = None
             ) -> Iterator[tuple[str, SystemRun]]:
    """``(name, SystemRun)`` for each system of ``cfg`` (or each named one, in the given order).

    Every kind reads its ids through the system's id mapper (``core/systems/id_mapping.py``: the
    ``chunk_map`` of its section, text alignment of passages without ids), set here on the run
    context; a kind that maps ids reports what the mapper did in its ``info["id_mapping"]``.
    Raises ConfigError for a name that is not configured or a bad ``chunk_map``, InputError for a
    bad chunk map file, and what the kind's runner raises."""
    from rag_eval_pipeline.core.systems.id_mapping import IdMapper

    golden_version = golden["golden_version"][0] if golden.height else ""
    known = frozenset(snapshot["chunk_id"].to_list())
    for name in systems or cfg.system_names:
        spec = cfg.system(name)
        ids = IdMapper.for_system(spec, snapshot, base_dir=cfg.path.parent)
        ctx = RunContext(name, corpus_version, golden_version, known, cfg.ranking_mode == "trec_eval",
                         snapshot=snapshot, base_dir=cfg.path.parent, ids=ids)
        yield name, run_system(spec, golden, ctx, deployment)


def with_optional_columns(df: pl.DataFrame) -> pl.DataFrame:
    """A rag_runs table written before the optional columns existed, with them as nulls."""
    missing = [c for c in tables.RAG_RUNS_OPTIONAL if c not in df.columns]
    return df.with_columns([pl.lit(None, tables.SCHEMAS["rag_runs"][c]).alias(c) for c in missing])


@dataclass
class RagRuns:
    """What the ``rag_runs`` step produced: ``runs`` (the table), ``unknown`` (the excluded rows for
    questions outside the golden set), ``live`` (system -> what its run counted, for systems whose kind
    counts something: calls, retries, errors, traces), ``corpus_version``."""

    runs: pl.DataFrame
    unknown: pl.DataFrame
    live: dict[str, dict[str, Any]] = field(default_factory=dict)
    corpus_version: str = ""

    def metadata(self) -> dict[str, Any]:
        """The asset metadata as plain values: systems, rows, unknown_question_rows,
        unknown_question_ids (first 50), decisions (``system/decision`` -> count), corpus_version,
        live_systems (what each kind counted, but its id mapping), id_mapping (system -> what its id
        mapper did, for systems whose ids were not all the snapshot's as they are)."""
        by_decision = self.runs.group_by("system", "decision").len().sort("system", "decision")
        mapping = {n: i["id_mapping"] for n, i in self.live.items()
                   if {k for k, v in (i.get("id_mapping") or {}).items() if v} - {"ids_as_is"}}
        live = {n: {k: v for k, v in i.items() if k != "id_mapping"} for n, i in self.live.items()}
        return {
            "systems": sorted(self.runs["system"].unique().to_list()),
            "rows": self.runs.height,
            "unknown_question_rows": self.unknown.height,
            "unknown_question_ids": sorted(self.unknown["question_id"].unique().to_list())[:_LISTED],
            "decisions": {f"{s}/{d}": n for s, d, n in by_decision.iter_rows()},
            "corpus_version": self.corpus_version,
            "live_systems": {n: i for n, i in live.items() if i},
            "id_mapping": mapping,
        }


def rag_runs(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, *, systems: list[str] | None = None,
             previous: pl.DataFrame | None = None, deployment: Deployment | None = None,
             log: Callable[[str], None] | None = None, all_questions: pl.Series | None = None) -> RagRuns:
    """One row per (system, question) for the configured systems.

    Inputs: the configuration, the corpus snapshot and golden set; ``systems``: re-run only these (the
    others' rows come from ``previous``, the last ``rag_runs`` table, when given); ``deployment``: the
    deployment's settings; ``log``: called with one line per system whose kind counts something.
    Output: :class:`RagRuns`; rows naming questions outside the golden set are removed from ``runs``
    and returned in ``unknown``. ``all_questions``: when ``golden`` is one question shard
    (``core/shards.py``), the whole golden set's question ids: rows of the other shards' questions are
    dropped, not counted as unknown. Raises ConfigError for an unknown system name, InputError for a bad
    log or trace source, and what a kind's runner raises before its first call.
    """
    from rag_eval_pipeline.core.corpus import corpus_version

    cv = corpus_version(snapshot)
    selected = systems or cfg.system_names
    frames, live = [], {}
    for name, result in run_each(cfg, snapshot, golden, cv, selected, deployment):
        frames.append(result.runs)
        if result.info:
            live[name] = result.info
            if log is not None and "questions" in result.info:
                log(f"system {name} ({cfg.system(name).kind}): {result.info.get('questions', 0)} questions, "
                    f"{result.info.get('error_rows', 0)} error rows")
    runs = pl.concat(frames) if frames else tables.empty("rag_runs")
    if systems and previous is not None:
        kept = with_optional_columns(previous.filter(~pl.col("system").is_in(selected)))
        runs = pl.concat([tables.conform(kept, "rag_runs"), runs])
    known_q = golden["question_id"].to_list()
    inside = pl.col("question_id").is_in(known_q)
    outside = ~inside if all_questions is None else ~pl.col("question_id").is_in(all_questions.to_list())
    return RagRuns(runs.filter(inside), runs.filter(outside), live, cv)


@dataclass
class RunRowCoverage:
    """Whether ``rag_runs`` has one row per (system, question) on this corpus version.

    ``missing``: system -> its first 50 golden questions without a run row (``missing_count``: how many in
    all); ``duplicated``: system -> its first 50 questions with more than one row; ``stale``:
    ``"system: [versions] != snapshot V"`` for each system with a row from another corpus version;
    ``complete``: whether the configuration allows missing questions (trec_eval ``-c``)."""

    missing: dict[str, list[str]]
    missing_count: dict[str, int]
    duplicated: dict[str, list[str]]
    stale: list[str]
    complete: bool

    @property
    def allowed(self) -> dict[str, list[str]]:
        """The missing questions the configuration allows (all of them with ``complete``, else none)."""
        return self.missing if self.complete else {}

    @property
    def passed(self) -> bool:
        """No disallowed missing question, no duplicate, no row from another corpus version."""
        return not ((self.missing and not self.complete) or self.duplicated or self.stale)

    def missing_lines(self, cfg: EvalConfig) -> list[str]:
        """One line per system with disallowed missing questions, naming the run file(s) they are missing from
        (:func:`run_files`) and the question ids: ``system s: 1 golden question(s) have no run row in
        /x/runs.jsonl: ['q07']``; [] when none is missing or ``complete`` allows them."""
        if self.complete:
            return []
        lines = []
        for system, qids in self.missing.items():
            files = run_files(cfg, system)
            source = f" in {', '.join(files)}" if files else ""
            count = self.missing_count.get(system, len(qids))
            lines.append(f"system {system}: {count} golden question(s) have no run row{source}: {qids[:10]}"
                         + (" ..." if count > 10 else ""))
        return lines


def run_files(cfg: EvalConfig, system: str) -> list[str]:
    """The files ``system``'s runs are read from: its kind's ``watches`` (a ``logged`` system's log, a ``traces`` or
    ``langsmith`` export) resolved against the configuration's folder; [] for a kind that makes calls or computes
    in process (every question is answered, or is an ``error`` row). Raises ConfigError for an unknown system."""
    from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS

    spec = cfg.system(system)
    return [str(cfg.resolve(p)) for p in SYSTEM_KINDS.get(spec.kind).watches(spec)]


def run_row_coverage(system_names: list[str], rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                     corpus_snapshot: pl.DataFrame, *, complete: bool = False) -> RunRowCoverage:
    """Check that every golden question has exactly one run row per configured system, on this corpus version.

    Inputs: the configured ``system_names``; ``rag_runs`` (system, question_id, corpus_version); ``golden_set``
    (question_id); ``corpus_snapshot`` (its corpus version is computed); ``complete``: ``metrics.complete``
    (then a question without a run row is allowed and scored as an empty retrieval, as trec_eval ``-c``).
    Output: :class:`RunRowCoverage`. Raises polars' ColumnNotFoundError when a table lacks a column."""
    from rag_eval_pipeline.core.corpus import corpus_version

    cv = corpus_version(corpus_snapshot)
    qids = golden_set.select("question_id").unique()
    counts = rag_runs.group_by("system", "question_id").len()
    missing, missing_count, duplicated, stale = {}, {}, {}, []
    for system in system_names:  # a handful of systems; no loop over questions
        have = counts.filter(pl.col("system") == system)
        gone = qids.join(have, on="question_id", how="anti")["question_id"].sort()
        if gone.len():
            missing[system] = gone.head(_LISTED).to_list()
            missing_count[system] = gone.len()
        dup = have.filter(pl.col("len") > 1)["question_id"].sort()
        if dup.len():
            duplicated[system] = dup.head(_LISTED).to_list()
        versions = set(rag_runs.filter(pl.col("system") == system)["corpus_version"].drop_nulls().unique().to_list())
        if versions - {cv}:
            stale.append(f"{system}: {sorted(versions - {cv})} != snapshot {cv}")
    return RunRowCoverage(missing, missing_count, duplicated, stale, complete)
