"""Building the code location: suites checked and loaded, one Definitions per suite (``defs/factory.py``),
merged with the nightly schedule and the systems' resources.

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
from rag_eval_pipeline.defs import schedules
from rag_eval_pipeline.defs.executors import EXECUTOR_ENV, executor_from_env
from rag_eval_pipeline.defs.factory import full_evaluation_keys, suite_definitions
from rag_eval_pipeline.defs.io import ParquetIOManager
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore
from rag_eval_pipeline.defs.systems import system_resources

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUITES_FILE = PROJECT_ROOT / "data" / "suites.yaml"
log = logging.getLogger("rag_eval_pipeline")


def _default(env: str, fallback: Path) -> str:
    value = os.environ.get(env)
    return str(Path(value).resolve()) if value else str(fallback)


def build_resources(config_path: str | None = None, output_dir: str | None = None, judge=None) -> dict:
    """The resources of the unprefixed chain (``definitions.ASSETS``: one configuration, keys without a
    suite prefix; tests use it): configuration, table store and IO manager on ``output_dir``, the judge
    (default: the configuration's, with the environment's overrides) and the systems under test."""
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


def suite_folder(output_dir: str | Path, suite_dirs: dict[str, str], name: str) -> Path:
    """A suite's output folder: ``suite_dirs[name]`` when given (``rag-eval run --output``), else
    ``<output_dir>/<name>``."""
    return Path(suite_dirs[name]) if name in suite_dirs else Path(output_dir, name)


def build_definitions(loaded: list[LoadedSuite], *, output_dir: str | None = None,
                      suite_dirs: dict[str, str] | None = None, judge=None,
                      skipped: dict[str, str] | None = None, executor: str | None = None) -> dg.Definitions:
    """The Definitions of several suites side by side: one :func:`~rag_eval_pipeline.defs.factory.suite_definitions`
    per suite, merged, with the nightly schedule, the systems' resources and the deployment's executor.

    ``output_dir``: the folder holding one folder per suite (default RAG_EVAL_OUTPUT_DIR or outputs/; the
    folder ``rag-eval serve`` serves); ``suite_dirs``: suite name -> its own folder, overriding
    ``<output_dir>/<suite>``; ``judge``: one judge resource for every suite (tests; default: each suite's
    own, from its configuration and the environment); ``skipped``: suite name -> why it is not loaded
    (shown in the code location's metadata); ``executor``: a name of ``defs/executors.py`` (default:
    RAG_EVAL_EXECUTOR, else Dagster's default executor). A nightly suite with ``shards`` >= 2 is left out of
    the nightly schedule, with a warning (``not_in_nightly_schedule`` in the metadata). Raises JudgeConfigError
    for a suite whose judge is misconfigured, ConfigError for an unknown executor.
    """
    output_dir = output_dir or _default("RAG_EVAL_OUTPUT_DIR", PROJECT_ROOT / "outputs")
    parts, nightly, tags_for, dirs, not_nightly = [], {}, {}, {}, {}
    for ls in loaded:
        name = ls.suite.name
        folder = suite_folder(output_dir, suite_dirs or {}, name)
        dirs[name] = str(folder)
        part = suite_definitions(ls.suite, ls.config, folder, judge=judge, serve_root=output_dir)
        parts.append(part)
        tags_for[name] = (part.resources or {})[f"{name}__settings"].run_tags
        if ls.suite.nightly and ls.config.shards > 1:
            # one run cannot hold several partitions: the schedule would merge the shards of an earlier night
            not_nightly[name] = (f"shards: {ls.config.shards}: the nightly schedule does not run question shards; "
                                 "launch a backfill of its question_shards job, then its full evaluation")
            log.warning("rag_eval_pipeline: suite %s is nightly but sharded: %s", name, not_nightly[name])
        elif ls.suite.nightly:
            nightly[name] = full_evaluation_keys(part, name)
    shared = dg.Definitions(
        schedules=[schedules.nightly_schedule(nightly, lambda s: tags_for[s]())],
        resources=system_resources(),  # systems: the deployment's settings for every system kind
        # None: Dagster's default (multiprocess, or in_process by run config)
        executor=executor_from_env(None if executor is None else {EXECUTOR_ENV: executor}),
        metadata={"suites": dg.MetadataValue.json(sorted(dirs)),
                  "skipped_suites": dg.MetadataValue.json(skipped or {}),
                  "not_in_nightly_schedule": dg.MetadataValue.json(not_nightly)},
    )
    return dg.Definitions.merge(*parts, shared)


def load_code_location() -> dg.Definitions:
    """Every configured suite that loads, side by side; a suite that does not load (its configuration, its
    data folder or its judge) is skipped with a warning naming why, and listed in the Definitions'
    ``skipped_suites`` metadata."""
    from rag_eval_pipeline.defs.judging import select_judge_resource

    loaded, skipped = [], {}
    for suite in configured_suites():
        try:
            ls = check_suite(suite)
            # a misconfigured judge skips its suite (the configuration just loaded holds the judge settings)
            select_judge_resource(ls.config.judge, config_path=str(suite.config_path))
            loaded.append(ls)
        except ConfigError as exc:
            skipped[suite.name] = str(exc)
            reason = str(exc) if str(exc).startswith("suite ") else f"suite {suite.name}: {exc}"
            log.warning("rag_eval_pipeline: skipping %s", reason)
    return build_definitions(loaded, skipped=skipped)
