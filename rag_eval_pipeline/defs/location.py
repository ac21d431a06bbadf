"""Building the code location: suites checked and loaded, their assets, jobs, schedule and resources.

No side effect on import (``rag_eval_pipeline.definitions`` builds the code location; the CLI builds
one suite's Definitions with :func:`build_definitions`).
"""


from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.config import EvalConfig, load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.suites import Suite, ad_hoc_suite, load_suites, missing_data
from rag_eval_pipeline.defs import report as report_defs
from rag_eval_pipeline.defs import schedules
from rag_eval_pipeline.defs import suites as suite_defs
from rag_eval_pipeline.defs.executors import EXECUTOR_ENV, executor_from_env
from rag_eval_pipeline.defs.io import ParquetIOManager, suite_folder
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore
from rag_eval_pipeline.defs.systems import has_watched_sources, live_sources_sensor, system_resources

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUITES_FILE = PROJECT_ROOT / "data" / "suites.yaml"
log = logging.getLogger("rag_eval_pipeline")


def _default(env: str, fallback: Path) -> str:
    value = os.environ.get(env)
    return str(Path(value).resolve()) if value else str(fallback)


def build_resources(config_path: str | None = None, output_dir: str | None = None, judge=None) -> dict:
    """The resource set for one configuration and output folder (unprefixed assets; tests use it)."""
    from rag_eval_pipeline.defs import judging

    config_path = config_path or _default("RAG_EVAL_CONFIG", PROJECT_ROOT / "data" / "sample" / "config.yaml")
    output_dir = output_dir or _default("RAG_EVAL_OUTPUT_DIR", PROJECT_ROOT / "outputs")
    return {
        "settings": EvalSettings(config_path=config_path),
        "store": TableStore(base_dir=output_dir),
        "io_manager": ParquetIOManager(base_dir=output_dir),
        "judge": judge or judging.select_judge_resource(config_path=config_path),
        **system_resources(),  # systems: the deployment's settings for every system kind
    }


@dataclass(frozen=True)
class LoadedSuite:
    """A suite whose configuration loaded and whose data is present."""

    suite: Suite
    config: EvalConfig


def check_suite(suite: Suite) -> LoadedSuite:
    """Load a suite's configuration and check that its data exists.

    Raises ConfigError (one line naming the suite and the file) when the configuration does not load
    or its ``corpus.path`` / ``golden.path`` is absent."""
    reason = missing_data(suite.config_path)  # before loading: a missing data folder reads as "not here"
    if reason:
        raise ConfigError(f"suite {suite.name}: data not found: {reason}")
    return LoadedSuite(suite, load_config(suite.config_path))  # its ConfigError names the file


def configured_suites() -> list[Suite]:
    """The suites of RAG_EVAL_SUITES (default data/suites.yaml), plus RAG_EVAL_CONFIG as an ad-hoc suite."""
    listed = load_suites(os.environ.get("RAG_EVAL_SUITES") or DEFAULT_SUITES_FILE)
    extra = os.environ.get("RAG_EVAL_CONFIG")
    if extra:
        suite = ad_hoc_suite(extra, listed)
        if suite.ad_hoc:
            listed.append(suite)
    return listed


def _calibration_blocks(cfg: EvalConfig) -> bool:
    from rag_eval_pipeline.core.metrics.calibration import judge_based_metrics

    return bool(judge_based_metrics(t.metric for t in cfg.thresholds))


def build_definitions(loaded: list[LoadedSuite], *, output_dir: str | None = None,
                      suite_dirs: dict[str, str] | None = None, judge=None,
                      skipped: dict[str, str] | None = None, executor: str | None = None) -> dg.Definitions:
    """The Definitions of several suites side by side.

    ``output_dir``: the folder holding one folder per suite (default RAG_EVAL_OUTPUT_DIR or outputs/);
    ``suite_dirs``: suite name -> its own folder, overriding ``<output_dir>/<suite>``; ``judge``: the judge
    resource (default: from RAG_EVAL_JUDGE); ``skipped``: suite name -> why it is not loaded (shown in
    the code location's metadata); ``executor``: a name of ``defs/executors.py`` (default: RAG_EVAL_EXECUTOR, else
    Dagster's default executor).
    """
    from rag_eval_pipeline.defs import judging

    output_dir = output_dir or _default("RAG_EVAL_OUTPUT_DIR", PROJECT_ROOT / "outputs")
    dirs = {ls.suite.name: str(suite_folder(output_dir, suite_dirs or {}, (ls.suite.name,))) for ls in loaded}
    settings = EvalSettings(suites={ls.suite.name: str(ls.suite.config_path) for ls in loaded},
                            suite_dirs=dirs, base_dir=output_dir)
    assets, checks, jobs, sensors, nightly = [], [], [], [], {}
    for ls in loaded:
        name, size = ls.suite.name, ls.config.quick_subset_size
        full, full_checks, quick, quick_checks = suite_defs.suite_assets(
            ls.suite, calibration_blocks=_calibration_blocks(ls.config), quick_size=size)
        assets += full + quick
        checks += full_checks + quick_checks
        jobs += schedules.suite_jobs(name, name, f"{name}_{suite_defs.QUICK}", settings.run_tags([name]), size,
                                     ls.suite.description)
        if has_watched_sources(ls.config):
            sensors.append(live_sources_sensor(name, settings.run_tags([name])))
        if ls.suite.nightly:
            nightly[name] = (suite_defs.asset_keys(full), suite_defs.check_keys(full_checks))
    return dg.Definitions(
        assets=report_defs.link_report_assets(assets, output_dir, dirs),  # the UI's report link, any launcher
        asset_checks=checks,
        jobs=jobs,
        schedules=[schedules.nightly_schedule(nightly, lambda s: settings.run_tags([s]))],
        sensors=sensors,
        resources={
            "settings": settings,
            "store": TableStore(base_dir=output_dir, suite_dirs=dirs),
            "io_manager": ParquetIOManager(base_dir=output_dir, suite_dirs=dirs),
            "judge": judge or judging.select_judge_resource(config_path=_judge_config(loaded)),
            **system_resources(),  # systems: the deployment's settings for every system kind
        },
        # None: Dagster's default (multiprocess, or in_process by run config)
        executor=executor_from_env(None if executor is None else {EXECUTOR_ENV: executor}),
        metadata={"suites": dg.MetadataValue.json(sorted(dirs)),
                  "skipped_suites": dg.MetadataValue.json(skipped or {})},
    )


def _judge_config(loaded: list[LoadedSuite]) -> str | None:
    """The configuration whose ``judge:`` section picks the code location's one judge resource: the
    default suite's (the sample) when loaded, else the first suite's; RAG_EVAL_JUDGE overrides it."""
    for ls in loaded:
        if ls.suite.name == "sample":
            return str(ls.suite.config_path)
    return str(loaded[0].suite.config_path) if loaded else None


def load_code_location() -> dg.Definitions:
    """Every configured suite that loads, side by side; a suite that does not load (or whose data folder is
    absent) is skipped with a warning naming why, and listed in the Definitions' ``skipped_suites`` metadata."""
    loaded, skipped = [], {}
    for suite in configured_suites():
        try:
            loaded.append(check_suite(suite))
        except ConfigError as exc:
            skipped[suite.name] = str(exc)
            reason = str(exc) if str(exc).startswith("suite ") else f"suite {suite.name}: {exc}"
            log.warning("rag_eval_pipeline: skipping %s", reason)
    return build_definitions(loaded, skipped=skipped)
