"""The one code location: assets, checks, jobs, schedules and resources.

Deployment choices come from environment variables, read once here:
RAG_EVAL_CONFIG (evaluation YAML, default data/sample/config.yaml), RAG_EVAL_OUTPUT_DIR (tables,
default outputs/), RAG_EVAL_JUDGE (rule_based | openai_compatible | human) and the judge's own
variables (see README).
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.defs import calibration, corpus, golden, judging, metrics, promotion, report, runs, schedules
from rag_eval_pipeline.defs.systems import live_sources_changed, system_resources
from rag_eval_pipeline.defs.io import ParquetIOManager
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def _default(env: str, fallback: Path) -> str:
    value = os.environ.get(env)
    return str(Path(value).resolve()) if value else str(fallback)


def build_resources(config_path: str | None = None, output_dir: str | None = None, judge=None) -> dict:
    """The resource set for one deployment; tests call it with their own config and output folder."""
    config_path = config_path or _default("RAG_EVAL_CONFIG", PROJECT_ROOT / "data" / "sample" / "config.yaml")
    output_dir = output_dir or _default("RAG_EVAL_OUTPUT_DIR", PROJECT_ROOT / "outputs")
    return {
        "settings": EvalSettings(config_path=config_path),
        "store": TableStore(base_dir=output_dir),
        "io_manager": ParquetIOManager(base_dir=output_dir),
        "judge": judge or judging.select_judge_resource(config_path=config_path),
        **system_resources(),  # http_system, python_system, traces_system
    }


ASSETS = dg.load_assets_from_modules([corpus, golden, runs, judging, calibration, metrics, promotion, report])
CHECKS = dg.load_asset_checks_from_modules([corpus, golden, runs, judging, calibration, metrics, promotion, report])

defs = dg.Definitions(
    assets=ASSETS,
    asset_checks=CHECKS,
    jobs=[schedules.full_evaluation, schedules.quick_evaluation],
    schedules=[schedules.nightly_full_evaluation],
    sensors=[live_sources_changed],
    resources=build_resources(),
)
