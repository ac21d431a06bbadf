"""rag_runs: every configured system answering every golden question, with its run manifest."""


import dagster as dg
import polars as pl

from rag_eval_pipeline.core.systems.runs import rag_runs as run_systems
from rag_eval_pipeline.defs.pools import LIVE_SYSTEMS_POOL
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore
from rag_eval_pipeline.defs.systems import SystemsResource


class RagRunsConfig(dg.Config):
    """``systems``: re-run only these systems and keep the other systems' rows from the last run."""

    systems: list[str] = []


@dg.asset(group_name="runs", kinds={"polars", "parquet"}, pool=LIVE_SYSTEMS_POOL)  # defs/pools.py
def rag_runs(context: dg.AssetExecutionContext, config: RagRunsConfig, settings: EvalSettings, store: TableStore,
             systems: SystemsResource, corpus_snapshot: pl.DataFrame,
             golden_set: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per (system, question): ranked retrieved chunks, decision, answer, citations, manifest.

    Each system runs through its kind: a system the pipeline calls is called once per question, the
    others are run in process or read from what they logged or traced; a call that fails is an ``error``
    row with its reason. What each system's run counted (calls, retries, errors by kind, versions seen,
    unmatched traces) is in the metadata ``live_systems``; what each system's id mapping did (``chunk_map``,
    passages aligned by text, unmatched passages) in ``id_mapping``."""
    result = run_systems(settings.config, corpus_snapshot, golden_set, systems=config.systems or None,
                         previous=store.read("rag_runs.parquet") if config.systems else None,
                         deployment=systems.deployment(), log=context.log.info)
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


@dg.asset_check(asset=rag_runs, blocking=True,
                additional_ins={"golden_set": dg.AssetIn(metadata={"columns": ["question_id"]}),
                                "corpus_snapshot": dg.AssetIn()},
                description="Every golden question has exactly one run row per configured system, on this corpus "
                            "version (with metrics.complete: true a missing question is allowed, counted and scored "
                            "as an empty retrieval, as trec_eval -c).")
def every_question_has_a_run_row(settings: EvalSettings, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
                                 corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.corpus import corpus_version

    cv = corpus_version(corpus_snapshot)
    qids = golden_set.select("question_id").unique()
    counts = rag_runs.group_by("system", "question_id").len()
    missing, duplicated, stale, missing_count = {}, {}, [], {}
    for system in settings.config.system_names:  # a handful of systems; no loop over questions
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
