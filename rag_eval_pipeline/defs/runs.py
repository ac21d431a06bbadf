"""rag_runs: every configured system answering every golden question, with its run manifest.

The computations are plain functions; :func:`build` declares them as one suite's asset and check.
``rag_runs`` with ``systems: [...]`` in its run config re-runs only those systems and keeps the other
systems' rows of its own previous materialisation (read from the suite's folder: an asset reading
what it wrote last time, not another table).
"""

import dagster as dg
import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.pipeline import build_runs
from rag_eval_pipeline.core.systems.records import RunContext
from rag_eval_pipeline.core.systems.specs import LIVE_KINDS
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SuiteScope
from rag_eval_pipeline.defs.systems import HttpSystemResource, PythonSystemResource, TracesSystemResource

STAGE = "runs"
SYSTEM_RESOURCES = ("http_system", "python_system", "traces_system")  # shared by every suite (defs/systems.py)
RUN_ROW_DESCRIPTION = ("Every golden question has exactly one run row per configured system, on this corpus version "
                       "(with metrics.complete: true a missing question is allowed, counted and scored as an empty "
                       "retrieval, as trec_eval -c).")


class RagRunsConfig(dg.Config):
    """``systems``: re-run only these systems and keep the other systems' rows from the last run."""

    systems: list[str] = []


def _with_optional_columns(df: pl.DataFrame) -> pl.DataFrame:
    """A rag_runs table written before the optional columns existed, with them as nulls."""
    missing = [c for c in tables.RAG_RUNS_OPTIONAL if c not in df.columns]
    return df.with_columns([pl.lit(None, tables.SCHEMAS["rag_runs"][c]).alias(c) for c in missing])


def rag_runs(context: dg.AssetExecutionContext, config: RagRunsConfig, settings: EvalSettings, store: TableFolder,
             http_system: HttpSystemResource, python_system: PythonSystemResource,
             traces_system: TracesSystemResource,
             corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per (system, question): ranked retrieved chunks, decision, answer, citations, manifest.

    Live systems (``http``, ``python``) are called once per question; ``traces`` are imported; a call
    that fails is an ``error`` row with its reason. What each live system's run counted (calls,
    retries, errors by kind, versions seen, unmatched traces) is in the metadata ``live_systems``."""
    cfg = settings.config
    from rag_eval_pipeline.core.corpus import corpus_version

    cv = corpus_version(corpus_snapshot)
    gv = golden_set["golden_version"][0] if golden_set.height else ""
    selected = config.systems or [s["name"] for s in cfg.systems]
    resources = {"http": http_system, "python": python_system, "traces": traces_system}
    known = frozenset(corpus_snapshot["chunk_id"].to_list())
    frames, live_info = [], {}
    for name in selected:
        spec = cfg.system(name)
        if spec["kind"] not in LIVE_KINDS:
            frames.append(build_runs(cfg, corpus_snapshot, golden_set, cv, [name]))
            continue
        ctx = RunContext(name, cv, gv, known, cfg.ranking_mode == "trec_eval")
        result = resources[spec["kind"]].system(spec, cfg.path.parent).run(golden_set, ctx)
        frames.append(result.runs)
        live_info[name] = result.info
        context.log.info(f"system {name} ({spec['kind']}): {result.info.get('questions', 0)} questions, "
                         f"{result.info.get('error_rows', 0)} error rows")
    runs = pl.concat(frames) if frames else tables.empty("rag_runs")
    if config.systems:
        previous = store.read("rag_runs.parquet")
        if previous is not None:
            kept = _with_optional_columns(previous.filter(~pl.col("system").is_in(selected)))
            runs = pl.concat([tables.conform(kept, "rag_runs"), runs])
    known_q = set(golden_set["question_id"].to_list())
    unknown = runs.filter(~pl.col("question_id").is_in(list(known_q)))
    if unknown.height:
        context.log.warning(f"{unknown.height} run rows name questions outside the golden set; they are excluded")
        runs = runs.filter(pl.col("question_id").is_in(list(known_q)))
    by_decision = runs.group_by("system", "decision").len().sort("system", "decision")
    decisions = {f"{s}/{d}": n for s, d, n in by_decision.iter_rows()}
    return dg.Output(
        runs,
        metadata={
            "systems": dg.MetadataValue.json(sorted(runs["system"].unique().to_list())),
            "rows": runs.height,
            "unknown_question_rows": unknown.height,
            "unknown_question_ids": dg.MetadataValue.json(sorted(unknown["question_id"].unique().to_list())[:50]),
            "decisions": dg.MetadataValue.json(decisions),
            "corpus_version": cv,
            "live_systems": dg.MetadataValue.json(live_info),
        },
    )


def every_question_has_a_run_row(settings: EvalSettings, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                                 corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.corpus import corpus_version

    cv = corpus_version(corpus_snapshot)
    qids = golden_set.select("question_id").unique()
    counts = rag_runs.group_by("system", "question_id").len()
    missing, duplicated, stale, missing_count = {}, {}, [], {}
    for system in [s["name"] for s in settings.config.systems]:  # a handful of systems; no loop over questions
        have = counts.filter(pl.col("system") == system)
        gone = qids.join(have, on="question_id", how="anti")["question_id"].sort()
        if gone.len():
            missing[system] = gone.head(50).to_list()
            missing_count[system] = gone.len()
        dup = have.filter(pl.col("len") > 1)["question_id"].sort()
        if dup.len():
            duplicated[system] = dup.head(50).to_list()
        versions = set(rag_runs.filter(pl.col("system") == system)["corpus_version"].drop_nulls().unique().to_list())
        if versions - {cv}:
            stale.append(f"{system}: {sorted(versions - {cv})} != snapshot {cv}")
    # trec_eval -c: with metrics.complete a question without a run row is scored as an empty retrieval
    allowed = missing if settings.config.complete else {}
    return dg.AssetCheckResult(
        passed=not ((missing and not allowed) or duplicated or stale),
        metadata={
            "complete": settings.config.complete,
            "allowed_missing_questions": sum(missing_count.values()) if allowed else 0,
            "allowed_missing_question_ids": dg.MetadataValue.json(allowed),
            "missing_question_ids": dg.MetadataValue.json(missing),
            "duplicate_question_ids": dg.MetadataValue.json(duplicated),
            "corpus_version_mismatch": dg.MetadataValue.json(stale),
        },
    )


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the runs stage for ``scope``: ``rag_runs`` reads ``golden_set`` and ``corpus_snapshot``."""

    @dg.asset(key=scope.key("rag_runs"), ins=scope.ins("corpus_snapshot", "golden_set"), kinds={"polars", "parquet"},
              description=scope.describe(rag_runs.__doc__), **scope.asset_args(STAGE),
              required_resource_keys=scope.needs("settings", "store") | set(SYSTEM_RESOURCES))
    def runs(context: dg.AssetExecutionContext, config: RagRunsConfig, corpus_snapshot: pl.DataFrame,
             golden_set: pl.DataFrame) -> dg.Output[pl.DataFrame]:
        systems = [getattr(context.resources, key) for key in SYSTEM_RESOURCES]
        return rag_runs(context, config, scope.settings(context), scope.store(context), *systems, corpus_snapshot,
                        golden_set)

    @dg.asset_check(asset=runs, name="every_question_has_a_run_row", blocking=True,
                    required_resource_keys=scope.needs("settings"),
                    additional_ins=scope.ins("corpus_snapshot", golden_set={"columns": ["question_id"]}),
                    description=RUN_ROW_DESCRIPTION)
    def run_rows(context, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                 corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
        return every_question_has_a_run_row(scope.settings(context), rag_runs, golden_set, corpus_snapshot)

    return [runs], [run_rows]
