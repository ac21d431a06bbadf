"""The asset factory: one suite's definitions, built explicitly from the suite, its configuration and its folder.

:func:`suite_definitions` is Dagster's asset-factory pattern: it takes one suite (name, loaded
configuration, output folder) and returns a ``dg.Definitions`` holding the suite's full evaluation
(keys ``<suite>/...``, group ``<suite>``), its quick evaluation (keys ``<suite>/quick/...``, group
``<suite>_quick``: never writes the full evaluation's tables, history, plots or baseline), their checks,
the two jobs, the sensor on its logged or traces sources, and the suite's own resources under its own
keys: configuration (``<suite>__settings``), table store (``<suite>__store``), IO manager
(``<suite>__io_manager``) and judge (``<suite>__judge``, built from the suite's ``judge:`` section with the
environment's overrides, so the UI and ``rag-eval run`` judge a suite the same way). The code location
(``defs/location.py``) merges one such Definitions per suite.

Each stage module declares its assets for a :class:`~rag_eval_pipeline.defs.scope.SuiteScope` with a
``build(scope)`` function; :data:`STAGES` lists them in the order of the chain. ``defs/`` is a plain
package with this explicit list, not a folder that ``dg`` loads by itself (docs/pipeline.md,
"How a suite is built").
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.suites import Suite
from rag_eval_pipeline.defs import (
    aggregate,
    calibration,
    citations,
    corpus,
    golden,
    judging,
    metrics,
    promotion,
    report,
    runs,
    schedules,
    shards,
    stopped,
)
from rag_eval_pipeline.defs.io import ParquetIOManager
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore
from rag_eval_pipeline.defs.scope import QUICK, SHARDS, SuiteScope
from rag_eval_pipeline.defs.systems import has_watched_sources, live_sources_sensor

STAGES = (corpus, golden, runs, judging, citations, shards, metrics, aggregate, promotion, report, calibration)
#: The stages whose per-question tables a sharded suite computes shard by shard (``defs/shards.py``).
SHARD_STAGES = (runs, judging, citations, metrics)


def chain(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of every stage for ``scope``, in the order of :data:`STAGES`; for a sharded scope
    (``shards:`` >= 2 in a full evaluation) also the shard layer of :data:`SHARD_STAGES` (partitioned by shard).
    The steps upstream of the report carry the failure hook of ``defs/stopped.py``."""
    assets, checks = [], []
    layers = [scope] + ([scope.shard_layer_scope()] if scope.sharded else [])
    for layer in layers:
        for stage in (STAGES if layer is scope else SHARD_STAGES):
            stage_assets, stage_checks = stage.build(layer)
            assets += stage_assets
            checks += stage_checks
    # a step upstream of the report that fails leaves a stopped decision.json, not an earlier run's (stopped.py)
    return stopped.guard(scope, assets, checks, scope.key(report.REPORT_ASSET))


def calibration_blocks(config: EvalConfig) -> bool:
    """Whether a gate of ``config`` is on a judge-based metric (then the calibration check blocks): as
    ``core.metrics.calibration.judge_based_metrics``, from the metric registry, without importing polars."""
    from rag_eval_pipeline.core.metrics.names import is_judge_based

    return any(is_judge_based(t.metric) for t in config.thresholds)


def scopes(suite: Suite, config: EvalConfig) -> tuple[SuiteScope, SuiteScope]:
    """The (full, quick) scopes of a suite, with what its configuration decides about the graph."""
    labels = calibration.labels_file(config)
    full = SuiteScope(suite=suite.name, calibration_blocks=calibration_blocks(config),
                      quick_size=config.quick_subset_size, calibration_labels=str(labels) if labels else None,
                      shards=config.shards)
    return full, SuiteScope(**{**full.__dict__, "quick": True})


def suite_resources(suite: Suite, folder: str | Path, *, judge=None, serve_root: str | Path | None = None,
                    config: EvalConfig | None = None) -> dict:
    """The suite's own resources, under its own keys (see :class:`SuiteScope`). ``judge``: the judge
    resource (default: :func:`~rag_eval_pipeline.defs.judging.select_judge_resource` of the suite's
    configuration; raises JudgeConfigError when that is misconfigured). ``config``: the suite's configuration
    when the caller has loaded it already (its judge settings are used; otherwise the file is loaded again)."""
    scope, folder = SuiteScope(suite=suite.name), str(folder)
    if judge is None:
        judge = judging.select_judge_resource(None if config is None else config.judge,
                                              config_path=str(suite.config_path))
    return {
        scope.resource_key("settings"): EvalSettings(config_path=str(suite.config_path), suite=suite.name,
                                                     output_dir=folder),
        scope.resource_key("store"): TableStore(base_dir=folder, suite=suite.name,
                                                serve_root=str(serve_root or Path(folder).parent)),
        scope.resource_key("io_manager"): ParquetIOManager(base_dir=folder, suite=suite.name),
        scope.resource_key("judge"): judge,
    }


def suite_definitions(suite: Suite, config: EvalConfig, folder: str | Path, *, judge=None,
                      serve_root: str | Path | None = None) -> dg.Definitions:
    """Every definition of one suite (the asset factory).

    Inputs: ``suite`` (name, configuration path, nightly, description), ``config`` (its loaded
    configuration: decides whether the calibration check blocks, the quick subset's size, whether the
    hand-label file and the sensor exist), ``folder`` (the suite's output folder), ``judge`` (a judge
    resource to use instead of the configuration's, for tests), ``serve_root`` (the folder
    ``rag-eval serve`` serves, for report links; default the folder's parent).
    Output: a ``dg.Definitions`` with the full and quick assets and checks, the jobs
    ``<suite>__full_evaluation`` and ``<suite>__quick_evaluation``, the sensor when the suite watches
    logged or traces sources, and the suite's resources. Raises JudgeConfigError for a misconfigured judge.
    """
    full, quick = scopes(suite, config)
    full_assets, full_checks = chain(full)
    quick_assets, quick_checks = chain(quick)
    resources = suite_resources(suite, folder, judge=judge, serve_root=serve_root, config=config)
    tags = resources[full.resource_key("settings")].run_tags()
    jobs = schedules.suite_jobs(suite.name, full.group(""), quick.group(""), tags, config.quick_subset_size,
                                suite.description,
                                shards_group=full.shard_layer_scope().group("") if full.sharded else None)
    sensors = [live_sources_sensor(full, tags)] if has_watched_sources(config) else []
    # the UI's link to the suite's latest report, whoever launched the run (when RAG_EVAL_REPORT_URL is set here)
    assets = report.link_report_assets(full_assets + quick_assets, serve_root or Path(folder).parent, folder)
    return dg.Definitions(assets=assets, asset_checks=full_checks + quick_checks, jobs=jobs, sensors=sensors,
                          resources=resources)


def full_evaluation_keys(defs: dg.Definitions, suite: str) -> tuple[list[dg.AssetKey], list[dg.AssetCheckKey]]:
    """The asset keys (materialisable ones) and check keys of ``suite``'s full evaluation in ``defs``, sorted
    (not its question shards': those are partitioned, one run per shard)."""
    def full(key: dg.AssetKey) -> bool:
        return key.path[0] == suite and key.path[1] not in (QUICK, SHARDS)

    keys = sorted({k for a in defs.assets or [] if isinstance(a, dg.AssetsDefinition) and a.is_materializable
                   for k in a.keys if full(k)}, key=lambda k: tuple(k.path))
    checks = sorted({k for c in defs.asset_checks or [] for k in c.check_keys if full(k.asset_key)},
                    key=lambda k: (k.asset_key.path, k.name))
    return keys, checks

