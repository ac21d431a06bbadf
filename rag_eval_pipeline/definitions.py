"""The one code location: every suite's assets, checks, jobs, sensors and resources, and the nightly schedule.

Deployment choices come from environment variables, read once here:
RAG_EVAL_SUITES (the suites file, default data/suites.yaml), RAG_EVAL_CONFIG (an extra, ad-hoc
configuration file loaded as its own suite), RAG_EVAL_OUTPUT_DIR (the folder holding one folder per
suite, default outputs/), RAG_EVAL_REPORT_URL (where ``rag-eval serve`` serves the reports),
RAG_EVAL_JUDGE (rule_based | openai_compatible | human) and the judge's own variables (see docs/judges.md).

Each suite is built by the asset factory ``defs/factory.py`` with its own resources (its judge
included). ``ASSETS`` and ``CHECKS`` are the unprefixed chain of one configuration (keys without a
suite prefix, resources under the plain keys ``settings``, ``store``, ``io_manager``, ``judge``): tests
materialise it with :func:`build_resources`. They are built on first access (``from
rag_eval_pipeline.definitions import ASSETS``), not at import: the code location (``defs``) does not use them,
and every step process imports this module.
"""

import dagster as dg  # noqa: F401 - `dagster dev -m rag_eval_pipeline.definitions` finds `defs` here

from rag_eval_pipeline.defs.factory import chain
from rag_eval_pipeline.defs.location import PROJECT_ROOT, build_definitions, build_resources, load_code_location
from rag_eval_pipeline.defs.scope import SuiteScope

__all__ = ["ASSETS", "CHECKS", "PROJECT_ROOT", "build_definitions", "build_resources", "defs"]

ASSETS: list  # built on first access, by __getattr__ below
CHECKS: list

defs = load_code_location()


def __getattr__(name: str) -> list:
    """``ASSETS`` and ``CHECKS``, built once on first access (PEP 562)."""
    if name in ("ASSETS", "CHECKS"):
        globals()["ASSETS"], globals()["CHECKS"] = chain(SuiteScope())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
