"""Resources: the evaluation configuration, the table store, and the judge.

Each is a ``ConfigurableResource`` chosen once per deployment in ``definitions.py``; secrets (a judge's
API key) arrive only through ``dagster.EnvVar`` and are never logged or written.

Suites: one code location holds a prefixed copy of every asset per suite (``sample/metric_summary``,
``scifact/metric_summary``). The resources are shared; each step finds its suite from its own asset
keys (the prefix), so ``settings.config`` is that suite's configuration and ``store`` reads and writes
that suite's folder. Asset bodies do not name their suite.
"""


import os
from pathlib import Path
from urllib.parse import quote

import dagster as dg
import polars as pl
from pydantic import PrivateAttr

from rag_eval_pipeline.core.config import EvalConfig, load_config
from rag_eval_pipeline.core.storage import (
    BASELINE_DIR,
    WriteContext,
    read_table,
    write_json_atomic,
    write_parquet_atomic,
)
from rag_eval_pipeline.defs.io import QUICK, SUITE_TAG, HoldsOutputLock, run_suites, suite_folder

# Read by a quick evaluation from its suite's full evaluation (never written by it): the promoted
# baseline it is compared with and the history its report's trend shows.
SHARED_WITH_FULL = (BASELINE_DIR, "metric_history.parquet", "promotion.json")
REPORT_URL_ENV = "RAG_EVAL_REPORT_URL"  # where `rag-eval serve` serves the output folder
CONFIG_PATH_TAG, CONFIG_SHA_TAG, OUTPUT_TAG = "rag_eval/config_path", "rag_eval/config_sha256", "rag_eval/output_dir"


def _current_context() -> dg.OpExecutionContext | None:
    try:
        return dg.OpExecutionContext.get()
    except (dg.DagsterInvariantViolationError, AttributeError):
        return None


def current_prefix() -> tuple[str, ...]:
    """The asset key prefix of the step being executed: ``("sample",)``, ``("sample", "quick")``, or
    ``()`` outside a step or for unprefixed assets. Read from Dagster's current execution context."""
    context = _current_context()
    try:
        assets_def = context.assets_def if context is not None else None
    except (dg.DagsterInvariantViolationError, AttributeError):
        return ()
    if assets_def is None:
        return ()
    keys = list(assets_def.keys) or [c.asset_key for c in assets_def.check_keys]
    return tuple(keys[0].path[:-1]) if keys else ()


class EvalSettings(dg.ConfigurableResource):
    """Points at the evaluation configuration YAML (corpus source, golden set, systems, gates).

    ``suites``: suite name -> configuration path; a step of suite S reads ``suites[S]``. ``config_path``
    is the configuration of unprefixed assets (a single-configuration deployment, tests).
    """

    config_path: str | None = None
    suites: dict[str, str] = {}
    suite_dirs: dict[str, str] = {}  # suite name -> output folder, for the run tags
    base_dir: str | None = None

    _configs: dict = PrivateAttr(default_factory=dict)

    def config_path_for(self, suite: str | None) -> str:
        """The configuration file of ``suite`` (None: ``config_path``). Raises dagster.Failure for an unknown suite."""
        if suite is None:
            if self.config_path is None:
                raise dg.Failure("this asset has no suite prefix and no configuration path is set")
            return self.config_path
        if suite not in self.suites:
            raise dg.Failure(f"unknown suite {suite!r}: this code location has {sorted(self.suites)}")
        return self.suites[suite]

    def config_for(self, suite: str | None) -> EvalConfig:
        """The loaded configuration of ``suite`` (cached per suite for the run)."""
        path = self.config_path_for(suite)
        if path not in self._configs:
            self._configs[path] = load_config(path)
        return self._configs[path]

    @property
    def suite(self) -> str | None:
        """The suite of the step being executed (None for unprefixed assets)."""
        prefix = current_prefix()
        return prefix[0] if prefix else None

    @property
    def quick(self) -> bool:
        """True in a step of a quick evaluation (keys ``<suite>/quick/...``)."""
        return current_prefix()[1:2] == (QUICK,)

    @property
    def config(self) -> EvalConfig:
        """The configuration of the suite of the step being executed."""
        return self.config_for(self.suite)

    def run_tags(self, suites: list[str]) -> dict[str, str]:
        """Tags naming what a run evaluates: suite, configuration path and sha256, output folder
        (comma-separated when a run spans several suites)."""
        from rag_eval_pipeline.core.suites import file_sha256

        paths = [self.config_path_for(s) for s in suites]
        shas = []
        for p in paths:
            try:
                shas.append(file_sha256(p))
            except OSError:
                shas.append("unreadable")
        outs = [str(suite_folder(self.base_dir or ".", self.suite_dirs, (s,))) for s in suites]
        return {SUITE_TAG: ",".join(suites), CONFIG_PATH_TAG: ",".join(paths), CONFIG_SHA_TAG: ",".join(shas),
                OUTPUT_TAG: ",".join(outs)}

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Tag every run with what it evaluates, whoever launched it (a job's tags are set when the code
        # location loads; the sha256 is the file's at the start of the run).
        run = getattr(context, "dagster_run", None)
        instance = getattr(context, "instance", None)
        if not self.suites or run is None or instance is None:
            return
        suites = run_suites(run, sorted(self.suites))
        if not suites:
            return
        tags = self.run_tags(suites)
        if any((run.tags or {}).get(k) != v for k, v in tags.items()):
            try:
                instance.add_run_tags(run.run_id, tags)
            except Exception as exc:  # noqa: BLE001 - a missing tag must not fail the run
                if context.log is not None:
                    context.log.warning(f"could not tag run {run.run_id}: {type(exc).__name__}: {exc}")


class TableStore(HoldsOutputLock, dg.ConfigurableResource):
    """Reads and writes tables outside the asset IO path: history, baseline, regression list, reports.

    Paths are inside the folder of the step's suite (see ``io.suite_folder``); a quick evaluation
    reads the promoted baseline and the history of its suite's full evaluation. Holds the output
    folders' locks while a run uses them, like the IO manager (see ``io.py``)."""

    base_dir: str
    suite_dirs: dict[str, str] = {}
    lock_wait_s: float = 0.0

    _locks: list = PrivateAttr(default_factory=list)

    def folder(self) -> Path:
        """The output folder of the step being executed (its suite's, or ``base_dir`` when unprefixed)."""
        return suite_folder(self.base_dir, self.suite_dirs, current_prefix())

    def path(self, *parts: str) -> Path:
        """The path of ``parts`` (folder names, then a file name) inside the executing step's suite folder;
        ``baseline``, ``metric_history.parquet`` and ``promotion.json`` (:data:`SHARED_WITH_FULL`) always in the
        full evaluation's folder, also from a quick one. Nothing is created or checked."""
        prefix = current_prefix()
        if parts and parts[0] in SHARED_WITH_FULL:
            prefix = prefix[:1]
        return suite_folder(self.base_dir, self.suite_dirs, prefix).joinpath(*parts)

    def url_for(self, path: str | Path) -> str | None:
        """The URL of a file under ``base_dir`` on the ``rag-eval serve`` server at RAG_EVAL_REPORT_URL
        (``<url>/<path relative to base_dir>``); None when the variable is unset or the file lies elsewhere."""
        base_url = os.environ.get(REPORT_URL_ENV, "").strip().rstrip("/")
        if not base_url:
            return None
        try:
            rel = Path(path).resolve().relative_to(Path(self.base_dir).resolve())
        except ValueError:
            return None
        return f"{base_url}/{quote(rel.as_posix())}"

    def read(self, *parts: str, table: str | None = None) -> pl.DataFrame | None:
        """The table file at ``parts`` (None when absent), checked for its table (``table``, else the one the
        file names, else the file's stem) and schema version: an older one is migrated with a warning in the
        step's log; one that cannot be read raises SchemaVersionError (``core/storage.read_table``)."""
        p = self.path(*parts)
        if not p.exists():
            return None
        ctx = _current_context()
        return read_table(p, table, on_migrate=ctx.log.warning if ctx is not None else None)

    def write(self, df: pl.DataFrame, *parts: str, table: str | None = None) -> Path:
        """Write the declared ``table`` at ``parts`` atomically, with its metadata: this step's run id and
        suite, and the provenance of the step's folder (``core/table_files.py``)."""
        if parts and parts[0] in SHARED_WITH_FULL and self.path(*parts) != self.folder().joinpath(*parts):
            raise dg.Failure(f"a quick evaluation never writes {'/'.join(parts)} of the full evaluation")
        ctx = _current_context()
        prefix = current_prefix()
        context = WriteContext.of(ctx.run_id if ctx is not None else None, prefix[0] if prefix else None,
                                  self.folder())
        return write_parquet_atomic(df, self.path(*parts), table=table, context=context)

    def write_json(self, obj, *parts: str) -> Path:
        """Write ``obj`` (JSON-serialisable; other values as ``str``) as indented, key-sorted JSON at ``parts``,
        atomically (``core/storage.write_json_atomic``); returns the path. Raises dagster.Failure when a quick
        evaluation would write a file it shares with the full one (:data:`SHARED_WITH_FULL`)."""
        if parts and parts[0] in SHARED_WITH_FULL and self.path(*parts) != self.folder().joinpath(*parts):
            raise dg.Failure(f"a quick evaluation never writes {'/'.join(parts)} of the full evaluation")
        return write_json_atomic(obj, self.path(*parts))

    def copy_file(self, source: str | Path, *parts: str) -> Path:
        """Copy the file ``source`` to ``parts`` under the step's folder, atomically (a table this run already
        wrote, kept once more without reading it into memory)."""
        if parts and parts[0] in SHARED_WITH_FULL and self.path(*parts) != self.folder().joinpath(*parts):
            raise dg.Failure(f"a quick evaluation never writes {'/'.join(parts)} of the full evaluation")
        import shutil

        from rag_eval_pipeline.core.storage import write_atomic

        return write_atomic(self.path(*parts), lambda tmp: shutil.copyfile(source, tmp))
