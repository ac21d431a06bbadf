"""What a forkserver loads once, so that each step process forked from it starts at once.

Run config of the multiprocess executor (docs/scale-out.md, "Step start-up")::

    execution:
      config:
        multiprocess:
          start_method:
            forkserver:
              preload_modules: [rag_eval_pipeline.defs.preload]

Importing this module does, in the forkserver, what every step process would otherwise do again after the
fork (measured by ``bench/bench_startup.py``):

* imports the code location (``rag_eval_pipeline.definitions``) and resolves its repository and jobs
  (``Definitions.get_repository_def`` is cached on the ``defs`` object each child inherits);
* imports the modules of the Dagster instance's storages, as the instance's ``dagster.yaml`` names them
  (``$DAGSTER_HOME``: SQLite by default, ``dagster_postgres`` in the Postgres deployment), with SQLAlchemy,
  Alembic and universal-pathlib (:data:`STEP_MODULES`): a step process opens the instance before anything
  else, and these imports were most of its start-up;
* imports polars and the pyarrow modules that every step writing or reading a table uses (:data:`TABLE_MODULES`;
  the code location itself imports neither, ``core/lazy.py``), and the core modules the steps import in their
  bodies (:data:`STEP_BODY_MODULES`: the code location imports none of them either). What
  only one or two steps need (scipy for the statistics, bm25s, an encoder, a model client) is left to them:
  the forkserver would pay it before the first step.

The mechanism is Python's ``forkserver`` start method with its preload list
(https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods,
``multiprocessing.set_forkserver_preload``), as Dagster's ``multiprocess_executor`` exposes it in its
``start_method`` config (https://docs.dagster.io/api/dagster/execution).

Nothing is opened here (no database connection, no file handle): a connection made before the fork would be
shared by every child. Without ``DAGSTER_HOME`` (an ephemeral instance, where the multiprocess executor does
not run) only the code location is loaded.
"""

from __future__ import annotations

import importlib
import os

from dagster._core.instance.ref import InstanceRef
from dagster._serdes import ConfigurableClassData

from rag_eval_pipeline.definitions import defs

__all__ = ["instance_modules", "preload"]

#: Imported by every step process whatever the storage: the execution plan, the instance (its defs-state
#: storage imports universal-pathlib) and the step's event writes. A name this Dagster version lacks is skipped.
STEP_MODULES = ("dagster._core.execution.api", "dagster._core.execution.plan.execute_plan",
                "dagster._core.storage.sql", "dagster._core.storage.defs_state.blob_storage_state_storage",
                "dagster._core.system_config.composite_descent", "dagster._utils.test.definitions",
                "sqlalchemy", "alembic", "upath.core")
#: Imported by every step that writes or reads a table (``core/table_files.py``, ``core/storage.py``).
TABLE_MODULES = ("polars", "pyarrow.compute", "pyarrow.parquet")
#: The core modules the steps of ``defs/`` import inside their bodies (a test keeps this list equal to theirs):
#: none imports scipy, an encoder, a model client or a server when imported (those are imported where used).
STEP_BODY_MODULES = tuple(f"rag_eval_pipeline.core.{m}" for m in (
    "answer_quality", "baseline", "errors", "gates", "judges.human", "judging",
    "labelling", "metrics.calibration", "metrics.calibration_families", "metrics.calibration_status",
    "metrics.decisions", "metrics.doc_level", "metrics.latency", "metrics.names", "metrics.retrieval",
    "metrics.variance", "pipeline", "regressions", "report", "report.decision", "report.markdown",
    "report.questions", "retrieval.dense", "shards", "sources.corpus_base", "sources.golden", "sources.trec",
    "storage", "suites", "systems.error_reasons", "systems.runs", "yamlio"))


def instance_modules(dagster_home: str | None) -> list[str]:
    """The modules of the storages, compute log manager, run launcher and coordinator that the
    ``dagster.yaml`` in ``dagster_home`` names (Dagster's defaults for what it leaves out), in order, each once.

    Input: the DAGSTER_HOME folder, or None (then none). Output: dotted module names. Raises what Dagster
    raises for an unreadable ``dagster.yaml`` (a step process would fail on it the same way)."""
    if not dagster_home:
        return []
    ref = InstanceRef.from_dir(dagster_home)
    names = [value.module_name for value in ref if isinstance(value, ConfigurableClassData)]
    return list(dict.fromkeys(names))


def preload(dagster_home: str | None = None) -> list[str]:
    """Import what a step process needs before its compute (see the module docstring) and resolve the code
    location's jobs. Input: the DAGSTER_HOME folder (default the environment's). Output: the modules imported
    (a module that cannot be imported is skipped). Never raises for the instance: an unreadable ``dagster.yaml``
    leaves its storages to the step processes, which report it (an error here would stop the forkserver)."""
    try:
        storages = instance_modules(dagster_home or os.environ.get("DAGSTER_HOME"))
    except Exception:  # noqa: BLE001 - each step process opens the instance and reports the error itself
        storages = []
    modules = [*STEP_MODULES, *TABLE_MODULES, *STEP_BODY_MODULES, *storages]
    loaded = []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:  # another Dagster version: the step imports what it needs itself
            continue
        loaded.append(name)
    repository = defs.get_repository_def()
    repository.get_all_jobs()
    return loaded


preload()
