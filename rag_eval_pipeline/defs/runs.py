"""rag_runs: every configured system answering every golden question, with its run manifest.

The computations are in ``core/systems/runs.py`` (running the systems, the run-row coverage check);
:func:`build` declares them as one suite's asset and check.
``rag_runs`` with ``systems: [...]`` in its run config re-runs only those systems and keeps the other
systems' rows of its own previous materialisation (read from the suite's folder: an asset reading
what it wrote last time, not another table).
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.defs.pools import LIVE_SYSTEMS_POOL
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SHARDS, SuiteScope
from rag_eval_pipeline.defs.systems import SystemsResource

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "runs"
SYSTEMS_KEY = "systems"  # shared by every suite: the deployment's settings for every system kind (defs/systems.py)
RUN_ROW_DESCRIPTION = ("Every golden question has exactly one run row per configured system, on this corpus version "
                       "(with metrics.complete: true a missing question is allowed, counted and scored as an empty "
                       "retrieval, as trec_eval -c).")


class RagRunsConfig(dg.Config):
    """``systems``: re-run only these systems and keep the other systems' rows from the last run."""

    systems: list[str] = []


def rag_runs(context: dg.AssetExecutionContext, config: RagRunsConfig, settings: EvalSettings, store: TableFolder,
             systems: SystemsResource, corpus_snapshot: pl.DataFrame,
             golden_set: pl.DataFrame, previous: str = "rag_runs.parquet",
             all_questions: pl.Series | None = None) -> dg.Output[pl.DataFrame]:
    """One row per (system, question): ranked retrieved chunks, decision, answer, citations, manifest.

    Each system runs through its kind: a system the pipeline calls is called once per question, the
    others are run in process or read from what they logged or traced; a call that fails is an ``error``
    row with its reason. What each system's run counted (calls, retries, errors by kind, versions seen,
    unmatched traces) is in the metadata ``live_systems``; what each system's id mapping did (``chunk_map``,
    passages aligned by text, unmatched passages) in ``id_mapping``. ``previous``: the file (in the suite's
    folder) of the last materialisation, kept for the systems not re-run (a shard's own file in a shard);
    ``all_questions``: in a shard, the whole golden set's ids (``golden_set`` is then the shard's questions)."""
    from rag_eval_pipeline.core.systems.runs import rag_runs as run_systems
    result = run_systems(settings.config, corpus_snapshot, golden_set, systems=config.systems or None,
                         previous=store.read(*previous.split("/"), table="rag_runs") if config.systems else None,
                         deployment=systems.deployment(), log=context.log.info, all_questions=all_questions)
    if result.unknown.height:
        context.log.warning(f"{result.unknown.height} run rows name questions outside the golden set; "
                            "they are excluded")
    for name, info in result.live.items():
        shapes = {k: info.get(k, 0) for k in ("orphan_spans", "ambiguous_root_traces", "rootless_traces")}
        if any(shapes.values()):  # resolved by the documented rule (core/systems/traces.py), never silently
            context.log.warning(f"system {name} (traces): {shapes['ambiguous_root_traces']} trace(s) with several "
                                f"root spans, {shapes['rootless_traces']} without a root, {shapes['orphan_spans']} "
                                "orphan span(s); resolved by the documented root rule, listed in the metadata "
                                "live_systems")
        if info.get("captured_output_lines"):
            context.log.info(f"system {name} (python): {info['captured_output_lines']} line(s) the callable "
                             "printed were captured (not written to stdout)")
    md = result.metadata()
    return dg.Output(result.runs, metadata={
        **{k: md[k] for k in ("rows", "unknown_question_rows", "corpus_version")},
        **{k: dg.MetadataValue.json(md[k]) for k in ("systems", "unknown_question_ids", "decisions", "live_systems",
                                                      "id_mapping")},
    })


def every_question_has_a_run_row(settings: EvalSettings, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                                 corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    """The check of ``rag_runs``: :func:`~rag_eval_pipeline.core.systems.runs.run_row_coverage` of the suite's
    systems, with what it found in the metadata."""
    from rag_eval_pipeline.core.systems.runs import run_row_coverage
    cfg = settings.config
    cov = run_row_coverage(cfg.system_names, rag_runs, golden_set, corpus_snapshot, complete=cfg.complete)
    missing = cov.missing_lines(cfg)  # each names the run file the rows are missing from
    return dg.AssetCheckResult(
        passed=cov.passed,
        metadata={
            **({"reason": "; ".join(missing)} if missing else {}),
            "complete": cov.complete,
            "allowed_missing_questions": sum(cov.missing_count.values()) if cov.allowed else 0,
            "allowed_missing_question_ids": dg.MetadataValue.json(cov.allowed),
            "missing_question_ids": dg.MetadataValue.json(cov.missing),
            "duplicate_question_ids": dg.MetadataValue.json(cov.duplicated),
            "corpus_version_mismatch": dg.MetadataValue.json(cov.stale),
        },
    )


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the runs stage for ``scope``: ``rag_runs`` reads ``golden_set`` and ``corpus_snapshot``.

    In a suite's shard layer (``scope.shard_layer``) ``rag_runs`` is one shard's (its golden questions only)
    and has no check; in a sharded full evaluation the merged ``rag_runs`` comes from ``defs/shards.py`` and
    this stage declares only its check."""
    assets = []
    if scope.declares("rag_runs"):
        @dg.asset(key=scope.key("rag_runs"), ins=scope.ins("corpus_snapshot", "golden_set"),
                  kinds={"polars", "parquet"}, description=scope.describe(rag_runs.__doc__),
                  **scope.asset_args(STAGE),
                  pool=LIVE_SYSTEMS_POOL,  # it calls the systems under test: one slot of their pool (defs/pools.py)
                  required_resource_keys=scope.needs("settings", "store") | {SYSTEMS_KEY})
        def runs(context: dg.AssetExecutionContext, config: RagRunsConfig, corpus_snapshot: pl.DataFrame,
                 golden_set: pl.DataFrame) -> dg.Output[pl.DataFrame]:
            previous = (f"{SHARDS}/rag_runs/{context.partition_key}.parquet"
                        if scope.shard_layer else "rag_runs.parquet")
            return rag_runs(context, config, scope.settings(context), scope.store(context),
                            getattr(context.resources, SYSTEMS_KEY), corpus_snapshot,
                            scope.shard_rows(context, golden_set), previous=previous,
                            all_questions=golden_set["question_id"] if scope.shard_layer else None)

        assets.append(runs)
    if scope.shard_layer:
        return assets, []

    @dg.asset_check(asset=scope.key("rag_runs"), name="every_question_has_a_run_row", blocking=True,
                    required_resource_keys=scope.needs("settings"),
                    additional_ins=scope.ins("corpus_snapshot", golden_set={"columns": ["question_id"]}),
                    description=RUN_ROW_DESCRIPTION)
    def run_rows(context, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                 corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
        return every_question_has_a_run_row(scope.settings(context), rag_runs, golden_set, corpus_snapshot)

    return assets, [run_rows]
