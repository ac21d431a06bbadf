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
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.errors import ConfigError, EvalError
from rag_eval_pipeline.core.section_errors import did_you_mean
from rag_eval_pipeline.core.yamlio import load_yaml, load_yaml_located

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SUITE_KEYS = ("config", "nightly", "description")
RESERVED_NAMES = ("quick", "baseline", "trec")  # folder names inside a suite's output folder
#: A suite's quick evaluation lives in asset group ``<suite>_quick``: no suite name may end so.
RESERVED_SUFFIXES = ("_quick",)
#: Longest suite name: it is a folder name and part of asset keys, job, sensor and file names.
MAX_NAME_CHARS = 100
#: The hidden file recording which suite an output folder belongs to.
OWNER_FILE = ".rag-eval-suite.json"


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot be a suite name, or None. Rules: letters, digits and underscores, not starting
    with a digit; at most :data:`MAX_NAME_CHARS` characters; not one of :data:`RESERVED_NAMES`; not ending
    in :data:`RESERVED_SUFFIXES` (``sample_quick`` would share the asset group of ``sample``'s quick
    evaluation). Raises nothing."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        return "a suite name must be letters, digits and underscores, not starting with a digit"
    if len(name) > MAX_NAME_CHARS:
        return f"a suite name must be at most {MAX_NAME_CHARS} characters (got {len(name)})"
    if name in RESERVED_NAMES:
        return f"a suite name must not be one of {list(RESERVED_NAMES)} (folder names inside a suite's folder)"
    if name.endswith(RESERVED_SUFFIXES):
        return (f"a suite name must not end in {list(RESERVED_SUFFIXES)}: '{name[:-6]}'s quick evaluation is "
                f"asset group {name!r}")
    return None


def claim_output_folder(folder: str | Path, suite: str, config_path: str | Path | None = None, *,
                        write: bool = True) -> None:
    """Record that ``folder`` holds ``suite``'s outputs, or check that it already does.

    Input: the folder, the suite's name and (for the record and messages) its configuration file.
    The record is :data:`OWNER_FILE` in the folder (suite name and configuration file). A folder with no
    record is claimed (written atomically; the folder is created) when ``write`` is True; with
    ``write=False`` it is only checked (a run checks before it starts and writes the record with its
    first table, so a run refused before writing anything leaves the folder byte-identical).
    Raises ConfigError naming the folder, the suite recorded there and this one when they differ: two
    suites in one folder would overwrite each other's tables, history and promoted baseline. OSError
    when the folder cannot be written."""
    from rag_eval_pipeline.core.jsonio import JsonError
    from rag_eval_pipeline.core.jsonio import loads as strict_json
    from rag_eval_pipeline.core.storage import write_json_atomic

    folder = Path(folder)
    record = folder / OWNER_FILE
    if record.exists():
        try:
            owner = strict_json(record.read_bytes())
        except (OSError, JsonError) as exc:
            raise ConfigError(f"{record}: cannot be read ({str(exc)[:200]}); it records which suite owns "
                              f"{folder}; delete it only if {folder} holds one suite's outputs") from None
        if not isinstance(owner, dict) or owner.get("suite") != suite:
            name = owner.get("suite") if isinstance(owner, dict) else owner
            recorded = owner.get("config") if isinstance(owner, dict) else None
            # a suite claimed without a configuration file (the sample's, from the suites file) records none: say so
            theirs = f"configuration {recorded}" if recorded else "no configuration file recorded"
            ours = f" ({config_path})" if config_path is not None else ""
            raise ConfigError(f"output folder {folder} belongs to suite {name!r} (recorded in {record}, {theirs}), "
                              f"not to {suite!r}{ours}; give this suite its own --output")
        return
    if write:
        write_json_atomic({"suite": suite, "config": None if config_path is None else str(config_path)}, record)


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
    for a missing file, bad YAML, an invalid, reserved or too long name (:func:`name_problem`), an
    unknown key, a missing ``config``, a ``nightly`` that is not a boolean or two suites with one
    configuration file.
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
    suites: list[Suite] = []
    seen_configs: dict[Path, str] = {}
    for name, entry in raw["suites"].items():
        shown = name if not isinstance(name, str) or len(name) <= 60 else f"{name[:60]}... ({len(name)} characters)"
        where = f"{path}: suite {shown!r}"
        problem = name_problem(name)
        if problem:
            raise ConfigError(f"{where}: {problem}")
        if isinstance(entry, str):
            entry = {"config": entry}
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: expected a mapping {{config: FILE, nightly: true|false}}, "
                              f"got {type(entry).__name__}")
        unknown = sorted(set(entry) - set(SUITE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}{did_you_mean(unknown, SUITE_KEYS)}; "
                              f"expected only {list(SUITE_KEYS)}")
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


def ad_hoc_suite(config_path: str | Path, known: Sequence[Suite] = ()) -> Suite:
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
    """Why a suite cannot run here, or None: a path its configuration names does not exist: ``corpus.path``,
    ``golden.path``, ``calibration.human_labels`` (a wrong label path would otherwise read as "no labels"), or a
    system's ``path`` (its log or traces; a missing ``chunk_map`` file is the configuration loader's located
    error). A missing path named in the configuration is a
    configuration error (exit 2), whichever file it is.

    Input: the configuration's file path (relative paths are resolved against the file's folder).
    Output: a one-line reason naming the key, the resolved path, the configuration file and the key's line
    (``corpus.path /x/corpus not found (set in /x/config.yaml, line 2)``), or None (also when the file does not
    parse: loading the configuration then reports that). Raises nothing.
    """
    try:
        located = load_yaml_located(config_path)
    except (EvalError, OSError):
        return None
    raw = located.value
    if not isinstance(raw, dict):
        return None
    base = Path(config_path).resolve().parent
    named: list[tuple[tuple, str, object]] = []  # (key path, label, value)
    for section, key in (("corpus", "path"), ("golden", "path"), ("calibration", "human_labels")):
        entry = raw.get(section)
        named.append(((section, key), f"{section}.{key}", entry.get(key) if isinstance(entry, dict) else None))
    systems = raw.get("systems")
    for i, system in enumerate(systems if isinstance(systems, list) else []):
        if isinstance(system, dict):
            who = f" (system {system.get('name')!r})" if isinstance(system.get("name"), str) else ""
            named.append((("systems", i, "path"), f"systems[{i}].path{who}", system.get("path")))
    for where, label, value in named:
        if isinstance(value, str) and value:
            resolved = (base / value).resolve()
            if not resolved.exists():
                hint = ("; to start labelling, create it empty (`rag-eval label` appends to it)"
                        if where[0] == "calibration" else "")
                line = located.line(where)
                at = f", line {line}" if line is not None else ""
                return f"{label} {resolved} not found (set in {Path(config_path).resolve()}{at}){hint}"
    return None
    if not isinstance(raw, dict):
        return None
    base = Path(config_path).resolve().parent
    for section, key in (("corpus", "path"), ("golden", "path"), ("calibration", "human_labels")):
        entry = raw.get(section)
        value = entry.get(key) if isinstance(entry, dict) else None
        if isinstance(value, str) and value:
            resolved = (base / value).resolve()
            if not resolved.exists():
                hint = ("; to start labelling, create it empty (`rag-eval label` appends to it)"
                        if section == "calibration" else "")
                return f"{section}.{key} {resolved} not found (set in {Path(config_path).resolve()}){hint}"
    return None
