"""A suite's resources: its evaluation configuration and its table store (the IO manager is in ``io.py``,
the judge in ``judging.py``).

Every suite of the code location has its own instance of each, under its own resource key
(``sample__settings``, ``sample__store``: see ``defs/scope.py``), built from the suite's configuration
path and output folder when the definitions are built. An asset reads them through its scope, never by
asking Dagster which step is running. Secrets (a judge's API key) arrive only through
``dagster.EnvVar`` and are never logged or written.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import dagster as dg
from pydantic import PrivateAttr

from rag_eval_pipeline.core.config import EvalConfig, load_config
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.storage import (
    BASELINE_DIR,
    TableBatches,
    WriteContext,
    read_table,
    write_json_atomic,
    write_parquet_atomic,
    write_parquet_batches_atomic,
)
from rag_eval_pipeline.defs.io import HoldsOutputLock
from rag_eval_pipeline.defs.scope import QUICK

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

# Read by a quick evaluation from its suite's full evaluation (never written by it): the promoted
# baseline it is compared with and the history its report's trend shows.
SHARED_WITH_FULL = (BASELINE_DIR, "metric_history.parquet", "promotion.json")
REPORT_URL_ENV = "RAG_EVAL_REPORT_URL"  # where `rag-eval serve` serves the output folder
SUITE_TAG = "rag_eval/suite"
CONFIG_PATH_TAG, CONFIG_SHA_TAG, OUTPUT_TAG = "rag_eval/config_path", "rag_eval/config_sha256", "rag_eval/output_dir"
RUN_TAGS = (SUITE_TAG, CONFIG_PATH_TAG, CONFIG_SHA_TAG, OUTPUT_TAG)


class EvalSettings(dg.ConfigurableResource):
    """One suite's evaluation configuration (corpus source, golden set, systems, gates): the YAML at
    ``config_path``, loaded once per run. ``suite`` and ``output_dir`` name the suite and its folder in
    the run's tags (None for the unprefixed chain, whose runs are not tagged)."""

    config_path: str
    suite: str | None = None
    output_dir: str | None = None

    _config: EvalConfig | None = PrivateAttr(default=None)

    @property
    def config(self) -> EvalConfig:
        """The loaded configuration. Raises ConfigError (naming the file and key) when it does not load."""
        if self._config is None:
            self._config = load_config(self.config_path)
        return self._config

    def run_tags(self) -> dict[str, str]:
        """Tags naming what a run of this suite evaluates: suite, configuration path and its sha256 now,
        output folder. Empty for the unprefixed chain."""
        from rag_eval_pipeline.core.suites import file_sha256

        if self.suite is None:
            return {}
        try:
            sha = file_sha256(self.config_path)
        except OSError:
            sha = "unreadable"
        return {SUITE_TAG: self.suite, CONFIG_PATH_TAG: self.config_path, CONFIG_SHA_TAG: sha,
                OUTPUT_TAG: str(self.output_dir or "")}

    def setup_for_execution(self, context: dg.InitResourceContext) -> None:
        # Tag every run with what it evaluates, whoever launched it (a job's tags are set when the code
        # location loads; the sha256 is the file's at the start of the run). A run that writes several
        # suites carries each one's value, comma-separated in the order the resources started.
        run = getattr(context, "dagster_run", None)
        instance = getattr(context, "instance", None)
        mine = self.run_tags()
        if not mine or run is None or instance is None:
            return
        stored = instance.get_run_by_id(run.run_id)  # another suite's resource may have tagged it already
        current = dict((stored.tags if stored is not None else run.tags) or {})
        tags = merge_run_tags(current, mine)
        if any(current.get(k) != v for k, v in tags.items()):
            try:
                instance.add_run_tags(run.run_id, tags)
            except Exception as exc:  # noqa: BLE001 - a missing tag must not fail the run
                if context.log is not None:
                    context.log.warning(f"could not tag run {run.run_id}: {type(exc).__name__}: {exc}")


def merge_run_tags(current: dict[str, str], mine: dict[str, str]) -> dict[str, str]:
    """The run tags once this suite's are added to ``current``: a run tagged with another suite keeps
    it and gets this one after a comma (same position in every tag); a run tagged with this suite gets
    this suite's current values."""
    suites = [s for s in (current.get(SUITE_TAG) or "").split(",") if s]
    if not suites or suites == [mine[SUITE_TAG]]:
        return dict(mine)
    columns = {k: (current.get(k) or "").split(",") for k in RUN_TAGS}
    if mine[SUITE_TAG] in suites:
        i = suites.index(mine[SUITE_TAG])
        for k in RUN_TAGS:
            col = columns[k] + [""] * (len(suites) - len(columns[k]))
            col[i] = mine[k]
            columns[k] = col
    else:
        for k in RUN_TAGS:
            columns[k] = columns[k][:len(suites)] + [""] * (len(suites) - len(columns[k])) + [mine[k]]
    return {k: ",".join(v) for k, v in columns.items()}


class TableFolder:
    """Reads and writes a suite's tables outside the asset IO path: history, baseline, regression list,
    reports. ``root``: the suite's folder; ``quick``: the quick evaluation's ``quick/`` folder inside it,
    which reads (never writes) the promoted baseline and the history of the full evaluation.
    ``serve_root``: the folder ``rag-eval serve`` serves (for report URLs); ``suite``, ``run_id`` and
    ``log`` (a step's logger, for a migrated table's warning): what a written file records."""

    def __init__(self, root: str | Path, quick: bool = False, serve_root: str | Path | None = None, *,
                 suite: str | None = None, run_id: str | None = None, log=None):
        self.root = Path(root)
        self.quick = quick
        self.serve_root = Path(serve_root) if serve_root else self.root
        self.suite, self.run_id, self.log = suite, run_id, log

    def folder(self) -> Path:
        """The folder this evaluation writes: the suite's, or its ``quick/``."""
        return self.root / QUICK if self.quick else self.root

    def path(self, *parts: str) -> Path:
        """``parts`` inside :meth:`folder`; the promoted baseline and the history always in the suite's own."""
        if parts and parts[0] in SHARED_WITH_FULL:
            return self.root.joinpath(*parts)
        return self.folder().joinpath(*parts)

    def url_for(self, path: str | Path) -> str | None:
        """The URL of a file under ``serve_root`` on the ``rag-eval serve`` server at RAG_EVAL_REPORT_URL
        (``<url>/<path relative to serve_root>``); None when the variable is unset or the file lies elsewhere."""
        base_url = os.environ.get(REPORT_URL_ENV, "").strip().rstrip("/")
        if not base_url:
            return None
        try:
            rel = Path(path).resolve().relative_to(self.serve_root.resolve())
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
        return read_table(p, table, on_migrate=self.log.warning if self.log is not None else None)

    def _writable(self, parts: tuple[str, ...]) -> None:
        if self.quick and parts and parts[0] in SHARED_WITH_FULL:
            raise dg.Failure(f"a quick evaluation never writes {'/'.join(parts)} of the full evaluation")

    def write(self, df: pl.DataFrame | TableBatches, *parts: str, table: str | None = None) -> Path:
        """Write the declared ``table`` at ``parts`` atomically, with its metadata: this step's run id and
        suite, and the provenance of the step's folder (``core/table_files.py``). A table in parts
        (``TableBatches``) is written one part at a time (``core/storage.write_parquet_batches_atomic``)."""
        self._writable(parts)
        context = WriteContext.of(self.run_id, self.suite, self.folder())
        if isinstance(df, TableBatches):
            return write_parquet_batches_atomic(df.batches, self.path(*parts), table=table, context=context)[0]
        return write_parquet_atomic(df, self.path(*parts), table=table, context=context)

    def write_json(self, obj, *parts: str) -> Path:
        """Write ``obj`` (JSON-serialisable; other values as ``str``) as indented, key-sorted JSON at ``parts``,
        atomically (``core/storage.write_json_atomic``); returns the path. Raises dagster.Failure when a quick
        evaluation would write a file it shares with the full one (:data:`SHARED_WITH_FULL`)."""
        self._writable(parts)
        return write_json_atomic(obj, self.path(*parts))

    def copy_file(self, source: str | Path, *parts: str) -> Path:
        """Copy the file ``source`` to ``parts`` under the step's folder, atomically (a table this run already
        wrote, kept once more without reading it into memory)."""
        self._writable(parts)
        import shutil

        from rag_eval_pipeline.core.storage import write_atomic

        return write_atomic(self.path(*parts), lambda tmp: shutil.copyfile(source, tmp))


class TableStore(HoldsOutputLock, dg.ConfigurableResource):
    """One suite's folder for the tables kept outside the asset IO path (see :class:`TableFolder`).

    ``base_dir``: the suite's output folder; ``suite``: its name (None for the unprefixed chain);
    ``serve_root``: the folder ``rag-eval serve`` serves (default ``base_dir``). Holds the folder's lock
    while a run uses it, like the IO manager (see ``io.py``)."""

    base_dir: str
    suite: str | None = None
    serve_root: str | None = None
    lock_wait_s: float = 0.0

    _locks: list = PrivateAttr(default_factory=list)

    def folder_for(self, quick: bool = False, context=None) -> TableFolder:
        """The full evaluation's folder, or (``quick``) the quick evaluation's; ``context``: the step's
        (its run id and log go with what the folder writes)."""
        return TableFolder(self.base_dir, quick=quick, serve_root=self.serve_root or self.base_dir, suite=self.suite,
                           run_id=getattr(context, "run_id", None), log=getattr(context, "log", None))
