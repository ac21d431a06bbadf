"""Evaluation suites: named configurations evaluated side by side, listed in one YAML file.

A suite is one evaluation configuration (corpus, golden set, systems, gates) under a name. The suites
file (``data/suites.yaml``) maps each name to its configuration file and says whether the nightly
schedule runs it::

    suites:
      sample:  {config: sample/config.yaml, nightly: true}
      scifact: {config: configs/scifact.yaml, nightly: true}

Relative paths are resolved against the suites file's folder. A name is the suite's asset key prefix
and its output folder, so it must be a valid Dagster name (letters, digits, underscores; not
starting with a digit). Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.errors import ConfigError, EvalError
from rag_eval_pipeline.core.yamlio import load_yaml

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUITE_KEYS = ("config", "nightly", "description")
RESERVED_NAMES = ("quick", "baseline", "trec")  # folder names inside a suite's output folder


@dataclass(frozen=True)
class Suite:
    """One suite: ``name`` (asset key prefix and output sub-folder), ``config_path`` (absolute),
    ``nightly`` (the nightly schedule runs it), ``description`` (free text shown in the UI),
    ``ad_hoc`` (True for a configuration file given on the command line, not listed in the suites file)."""

    name: str
    config_path: Path
    nightly: bool = False
    description: str = ""
    ad_hoc: bool = False


def file_sha256(path: str | Path) -> str:
    """Hex sha256 of a file's bytes (64 characters). Raises OSError when it cannot be read."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def load_suites(path: str | Path) -> list[Suite]:
    """Read a suites file.

    Input: path of a YAML file with a top-level ``suites`` mapping of name -> {config, nightly,
    description}. Output: the suites in file order. Raises ConfigError naming the file and the suite
    for a missing file, bad YAML, an invalid or reserved name, an unknown key, a missing ``config``,
    a ``nightly`` that is not a boolean or two suites with one configuration file.
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"suites file {path} does not exist")
    try:
        raw = load_yaml(path) or {}  # a repeated key, an alias bomb or a huge file is an error naming the line
    except EvalError as exc:
        raise ConfigError(str(exc)) from exc
    if not isinstance(raw, dict) or set(raw) - {"suites"} or not isinstance(raw.get("suites"), dict):
        raise ConfigError(f"{path}: expected one top-level key 'suites' mapping suite names to "
                          "{config: FILE, nightly: true|false}")
    suites, seen_configs = [], {}
    for name, entry in raw["suites"].items():
        where = f"{path}: suite {name!r}"
        if not isinstance(name, str) or not NAME_RE.match(name) or name in RESERVED_NAMES:
            raise ConfigError(f"{where}: a suite name must be letters, digits and underscores, not starting with "
                              f"a digit, and not one of {list(RESERVED_NAMES)}")
        if isinstance(entry, str):
            entry = {"config": entry}
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping {{config: FILE, nightly: true|false}}, "
                              f"got {type(entry).__name__}")
        unknown = sorted(set(entry) - set(SUITE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}; expected only {list(SUITE_KEYS)}")
        if not isinstance(entry.get("config"), str) or not entry["config"]:
            raise ConfigError(f"{where}: missing key config (the evaluation configuration file)")
        nightly = entry.get("nightly", False)
        if not isinstance(nightly, bool):
            raise ConfigError(f"{where}: nightly must be true or false, got {nightly!r}")
        config_path = (path.parent / entry["config"]).resolve()
        if config_path in seen_configs:
            raise ConfigError(f"{where}: configuration {config_path} is already suite {seen_configs[config_path]!r}")
        seen_configs[config_path] = name
        suites.append(Suite(name=name, config_path=config_path, nightly=nightly,
                            description=str(entry.get("description") or "")))
    if not suites:
        raise ConfigError(f"{path}: no suites listed")
    return suites


def ad_hoc_suite(config_path: str | Path, known: list[Suite] = ()) -> Suite:
    """The suite for a configuration file given on the command line.

    Output: the listed suite with that configuration file when there is one; else a suite named
    ``adhoc_<file stem>_<8 hex of the path's sha256>``, so two files never share assets, history or a
    promoted baseline with each other or with a listed suite.
    """
    config_path = Path(config_path).resolve()
    for suite in known:
        if suite.config_path == config_path:
            return suite
    stem = re.sub(r"[^A-Za-z0-9_]", "_", config_path.stem)[:40] or "config"
    digest = hashlib.sha256(str(config_path).encode("utf-8")).hexdigest()[:8]
    return Suite(name=f"adhoc_{stem}_{digest}", config_path=config_path, nightly=False,
                 description=f"ad-hoc configuration {config_path}", ad_hoc=True)


def missing_data(config_path: str | Path) -> str | None:
    """Why a suite cannot run here, or None: its ``corpus.path`` (or ``golden.path``) does not exist.

    Input: the configuration's file path (relative paths are resolved against the file's folder).
    Output: a one-line reason naming the resolved path, or None (also when the file does not parse:
    loading the configuration then reports that). Raises nothing.
    """
    try:
        raw = load_yaml(config_path)
    except (EvalError, OSError):
        return None
    if not isinstance(raw, dict):
        return None
    base = Path(config_path).resolve().parent
    for section in ("corpus", "golden"):
        value = raw.get(section).get("path") if isinstance(raw.get(section), dict) else None
        if isinstance(value, str) and value:
            resolved = (base / value).resolve()
            if not resolved.exists():
                return f"{section}.path {resolved} not found (set in {Path(config_path).resolve()})"
    return None
