"""The one code location: every suite's assets, checks, jobs, the nightly schedule and the resources.

Deployment choices come from environment variables, read once here:
RAG_EVAL_SUITES (the suites file, default data/suites.yaml), RAG_EVAL_CONFIG (an extra, ad-hoc
configuration file loaded as its own suite), RAG_EVAL_OUTPUT_DIR (the folder holding one folder per
suite, default outputs/), RAG_EVAL_REPORT_URL (where ``rag-eval serve`` serves the reports),
RAG_EVAL_JUDGE (rule_based | openai_compatible | human) and the judge's own variables (see docs/judges.md).

``ASSETS`` and ``CHECKS`` are the unprefixed chain (one configuration: tests materialise it with
:func:`build_resources`); the code location holds a prefixed copy per suite (``defs/suites.py``).
"""

import dagster as dg

from rag_eval_pipeline.defs.location import PROJECT_ROOT, build_definitions, build_resources, load_code_location
from rag_eval_pipeline.defs.suites import STAGE_MODULES

__all__ = ["ASSETS", "CHECKS", "PROJECT_ROOT", "build_definitions", "build_resources", "defs"]

ASSETS = dg.load_assets_from_modules(STAGE_MODULES)
CHECKS = dg.load_asset_checks_from_modules(STAGE_MODULES)

defs = load_code_location()
