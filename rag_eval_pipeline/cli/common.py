"""What every ``rag-eval`` command shares: how a suite, its folder and its judge are found, and the
usage-error type (one line on stderr, exit 2)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_eval_pipeline.defs.judging import JudgeResource

PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SUITE = "sample"
AD_HOC_HOME = "adhoc"  # the Dagster instance of ad-hoc runs, inside the shared one's folder


class UsageError(Exception):
    """A mistake on the command line or in the environment: one line on stderr, exit 2."""


def dagster_home(ad_hoc: bool = False) -> Path:
    """Set DAGSTER_HOME for this process and return it: the project's .dagster_home (shared with ``dagster dev``)
    unless DAGSTER_HOME is set.

    ``ad_hoc``: a run of a configuration that no suites file lists (``rag-eval run --config FILE``) is recorded
    in its own instance, ``<that folder>/adhoc/``, which the UI does not read: the UI's catalog lists only
    assets its code location defines (docs/pipeline.md, Suites). Its ``dagster.yaml`` is a copy of the shared one."""
    home = Path(os.environ.get("DAGSTER_HOME") or PROJECT_ROOT / ".dagster_home")
    home.mkdir(exist_ok=True)
    if ad_hoc:
        shared, home = home, home / AD_HOC_HOME
        home.mkdir(exist_ok=True)
        settings = shared / "dagster.yaml"
        if settings.exists() and not (home / "dagster.yaml").exists():
            (home / "dagster.yaml").write_bytes(settings.read_bytes())
    os.environ["DAGSTER_HOME"] = str(home.resolve())
    return home


def suites_file() -> Path:
    """The suites file: $RAG_EVAL_SUITES, else data/suites.yaml."""
    return Path(os.environ.get("RAG_EVAL_SUITES") or PROJECT_ROOT / "data" / "suites.yaml")


def resolve_suite(suite_name: str | None, config: str | None):
    """The suite a command works on: ``--config FILE`` (its listed suite, or an ad-hoc suite named from the
    file), else ``--suite NAME``, else $RAG_EVAL_CONFIG as ad-hoc, else the sample. Raises UsageError."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.suites import ad_hoc_suite, load_suites

    if config and suite_name:
        raise UsageError("give --suite or --config, not both")
    try:
        listed = load_suites(suites_file())
    except ConfigError as exc:
        if not (config or os.environ.get("RAG_EVAL_CONFIG")):
            raise UsageError(str(exc)) from None
        listed = []
    config = config or (None if suite_name else os.environ.get("RAG_EVAL_CONFIG"))
    if config:
        return ad_hoc_suite(config, listed)
    name = suite_name or DEFAULT_SUITE
    for suite in listed:
        if suite.name == name:
            return suite
    raise UsageError(f"unknown suite {name!r}: {suites_file()} lists {', '.join(s.name for s in listed)}"
                     " (or give --config FILE)")


def output_root() -> Path:
    """The folder holding every suite's output folder: $RAG_EVAL_OUTPUT_DIR, else ``outputs/`` in the project."""
    return Path(os.environ.get("RAG_EVAL_OUTPUT_DIR") or PROJECT_ROOT / "outputs")


def suite_folder(suite, output: str | None) -> Path:
    """The output folder of ``suite`` (absolute): ``--output`` (the suite's own folder) when given, else
    ``$RAG_EVAL_OUTPUT_DIR/<suite>``, else ``outputs/<suite>`` in the project."""
    if output:
        return Path(output).resolve()
    return Path(output_root(), suite.name).resolve()


def seconds(text: str) -> float:
    """An argparse ``type``: a finite number of seconds >= 0 (``nan``, ``inf`` and negatives are refused:
    a wait of NaN seconds would never end). Raises ArgumentTypeError (argparse: exit 2)."""
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return value


def usable_output_folder(folder: Path, suite) -> None:
    """Check, before anything runs, that ``folder`` can be ``suite``'s output folder, and claim it.

    Creates it when absent. Raises UsageError (one line, exit 2) when it is a file, cannot be created,
    is not writable, or belongs to another suite (``core.suites.claim_output_folder``)."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.suites import claim_output_folder

    if folder.exists() and not folder.is_dir():
        raise UsageError(f"--output {folder} is a file, not a folder; give a folder (it is created if absent)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"output folder {folder} cannot be created ({exc.strerror or type(exc).__name__})") from None
    import tempfile

    try:  # a real write (permissions, a read-only mount, an immutable folder: root passes os.access checks)
        fd, probe = tempfile.mkstemp(prefix=".rag-eval-write-probe.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise UsageError(f"output folder {folder} is not writable ({exc.strerror or type(exc).__name__}); give a "
                         "folder this user can write") from None
    try:
        claim_output_folder(folder, suite.name, suite.config_path, write=False)  # written with the first table
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    except OSError as exc:
        raise UsageError(f"output folder {folder} cannot be written ({exc.strerror or type(exc).__name__})") from None


def judge_resource(config_path: str | Path | None = None) -> JudgeResource:
    """The judge resource for a suite's configuration (``judge:`` there; RAG_EVAL_JUDGE ... override it).

    Raises UsageError when it is misconfigured."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.defs.judging import select_judge_resource

    try:
        return select_judge_resource(config_path=str(config_path) if config_path else None)
    except (ConfigError, ValueError) as exc:
        raise UsageError(f"judge: {exc}") from None


def add_suite_options(p, *, output_help: str | None = None) -> None:
    """``--suite`` / ``--config`` (and ``--output`` when ``output_help`` is given) as ``run`` reads them."""
    p.add_argument("--suite", help=f"a suite listed in data/suites.yaml or $RAG_EVAL_SUITES (default: {DEFAULT_SUITE})")
    p.add_argument("--config", help="an evaluation YAML instead of a listed suite (default: $RAG_EVAL_CONFIG); "
                                    "unless listed, it is its own suite (adhoc_<name>_<hash>) with its own assets, "
                                    "history and baseline")
    if output_help is not None:
        p.add_argument("--output", help=output_help)
