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

What is loaded here lives as long as the process, so it is moved out of the garbage collector's reach with
``gc.freeze()`` (https://docs.python.org/3/library/gc.html#gc.freeze): once Dagster is imported (else the
first full collection while this package's modules load traverses all of Dagster: 0.06-0.19 s of the code
location's import, ``bench/bench_startup.py``), and once the Definitions are built (no later full collection
traverses them). Nothing else changes: the garbage collector runs as before on what is created afterwards;
the few unreachable objects frozen with the rest (about 20 after ``import dagster``) are never freed.
"""

import gc

import dagster as dg  # noqa: F401 - `dagster dev -m rag_eval_pipeline.definitions` finds `defs` here

gc.freeze()  # Dagster's modules: see the docstring

from rag_eval_pipeline.defs.factory import chain  # noqa: E402 - imported after the freeze above
from rag_eval_pipeline.defs.location import (  # noqa: E402
    PROJECT_ROOT,
    build_definitions,
    build_resources,
    load_code_location,
)
from rag_eval_pipeline.defs.scope import SuiteScope  # noqa: E402

__all__ = ["ASSETS", "CHECKS", "PROJECT_ROOT", "build_definitions", "build_resources", "defs"]

ASSETS: list  # built on first access, by __getattr__ below
CHECKS: list

defs = load_code_location()
gc.freeze()  # this package's modules and the Definitions: see the docstring


def __getattr__(name: str) -> list:
    """``ASSETS`` and ``CHECKS``, built once on first access (PEP 562)."""
    if name in ("ASSETS", "CHECKS"):
        globals()["ASSETS"], globals()["CHECKS"] = chain(SuiteScope())
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
