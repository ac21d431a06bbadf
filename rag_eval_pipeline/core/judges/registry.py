"""Judge types: what each declares, their registry, and the one validator of the ``judge`` section.

A judge type (``rule_based``, ``openai_compatible``, ``human``, ...) is one module of
``core/judges/types/`` that registers a :class:`JudgeType` in :data:`JUDGE_TYPES`: its name, its own
typed configuration section (the keys only it reads, e.g. a model endpoint's ``base_url``), the
checks of a complete setup (a model judge without a URL is refused at load), its builder, whether it
makes calls, and its documentation. The keys every judge shares (``repeats``, ``max_error_share``,
the transport's ``timeout_s`` ...) are :class:`~rag_eval_pipeline.core.config_sections.JudgeConfig`'s.

:func:`resolve_judge` is the one validator of the ``judge`` section and of its environment overrides
(:func:`judge_env`: ``RAG_EVAL_JUDGE`` picks the type; each key may name its variable). The model
transport reads its bounds from the same declarations (``core/judges/transport.py``), so a value the
configuration accepts is one the transport accepts. Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.config_sections import JudgeConfig
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.registry import Registry
from rag_eval_pipeline.core.section_errors import At, shown
from rag_eval_pipeline.core.sections import env_keys, parse_section, section_keys

TYPE_ENV = "RAG_EVAL_JUDGE"
API_KEY_ENV = "RAG_EVAL_JUDGE_API_KEY"

__all__ = ["API_KEY_ENV", "JUDGE_TYPES", "TYPE_ENV", "JudgeConfigError", "JudgeType", "build_judge",
           "judge_config_from_json", "judge_config_to_json", "judge_env", "register", "resolve_judge"]


class JudgeConfigError(ConfigError, ValueError):
    """The judge cannot be built from the configuration and environment (unknown name, missing URL,
    model or label file). A ConfigError (one line, exit status of a configuration error) and, for
    callers written before it existed, a ValueError."""


@dataclass(frozen=True)
class NoSettings:
    """The section of a judge type that reads no key of its own."""


@dataclass(frozen=True)
class JudgeType:
    """A registered judge type.

    ``name``: the value of ``judge.type`` / ``RAG_EVAL_JUDGE``. ``section``: the frozen dataclass of
    its own keys (:class:`NoSettings` when none). ``build(config, api_key)``: the judge (an object of
    the ``Judge`` protocol, ``core/judges/base.py``) for a resolved :class:`JudgeConfig`; ``api_key`` is
    the ``RAG_EVAL_JUDGE_API_KEY`` value for judges that call an endpoint, never read from a file.
    ``check(config, origin, source)``: raises JudgeConfigError when the setup is incomplete
    (``origin`` says where the type was chosen, ``source`` is the configuration file, for the
    message). ``makes_calls``: it calls a model (``rag-eval
    estimate`` asks it for its cost). ``doc``: a paragraph for the judges page. ``order``: its place
    in lists and messages.
    """

    name: str
    build: Callable[[JudgeConfig, str | None], Judge]
    doc: str
    section: type = NoSettings
    check: Callable[[JudgeConfig, str, str], None] | None = None
    makes_calls: bool = False
    order: int = 100


#: Every judge type, one module each in ``core/judges/types/`` (imported on first use).
JUDGE_TYPES: Registry[JudgeType] = Registry("judge type", package="rag_eval_pipeline.core.judges.types")


def register(judge_type: JudgeType) -> JudgeType:
    """Register ``judge_type`` (its module calls this once at import). Raises RegistryError for a second one."""
    if not dataclasses.is_dataclass(judge_type.section):
        raise TypeError(f"judge type {judge_type.name!r}: its section must be a dataclass")
    return JUDGE_TYPES.register(judge_type)


def judge_env() -> dict[str, str]:
    """``{key: environment variable}`` of every judge setting a variable overrides: ``type``, the
    shared keys and every judge type's own keys (variable wins over the file; empty = unset)."""
    out = {"type": TYPE_ENV, **env_keys(JudgeConfig)}
    for jt in JUDGE_TYPES:
        for name, var in env_keys(jt.section).items():
            out.setdefault(name, var)
    return out


def _type_keys() -> dict[str, list[str]]:
    return {jt.name: list(section_keys(jt.section)) for jt in JUDGE_TYPES}


def resolve_judge(section: Mapping[str, Any] | None, *, path: Path, environ: Mapping[str, str] | None = None,
                  lines: Mapping[tuple, int] | None = None) -> JudgeConfig:
    """The judge settings: the ``judge`` section of the file at ``path``, then the environment.

    Inputs: the section (a mapping or None), the configuration file (for messages and relative
    paths), ``environ`` (default ``os.environ``; see :func:`judge_env`: a set variable replaces the
    file's value), ``lines`` (the file's key lines, for messages). Output: a :class:`JudgeConfig` whose
    ``options`` is the chosen type's own section and whose ``from_env`` lists the variables that set
    it (the type, the shared keys, the chosen type's own keys). A key only another type reads is refused
    (file, line, key, the types that read it) unless ``RAG_EVAL_JUDGE`` chose the type: a deployment may
    switch a file written for another judge, whose keys are then accepted and checked; the chosen type's
    ``check`` then requires what it needs. Raises ConfigError (file, line, key) for a bad key or value in the
    section, JudgeConfigError for an unknown judge name, a bad value in a variable (naming the
    variable), a model endpoint without base URL or model, or a human judge without an existing label
    file.
    """
    environ = os.environ if environ is None else environ
    at = At(Path(path), lines or {}, path=("judge",), label="judge", base_dir=Path(path).parent, environ=environ)
    if section is not None and not isinstance(section, Mapping):
        raise at.error(f"must be a mapping, got {shown(section)}")
    raw = dict(section or {})
    if "api_key" in raw:
        raise at.fail("api_key", f"is not read from a file; set {API_KEY_ENV} in the environment")
    type_keys = _type_keys()
    own = set(section_keys(JudgeConfig))
    extra = [k for keys in type_keys.values() for k in keys if k not in own]
    common = parse_section(JudgeConfig, {k: v for k, v in raw.items() if k not in extra or k in own}, at,
                           extra_keys=tuple(dict.fromkeys(extra)), env_error=JudgeConfigError)
    # the type: the variable wins over the file
    var_type = environ.get(TYPE_ENV)
    if var_type:
        kind, type_source = var_type, TYPE_ENV
    else:
        kind, type_source = common.type, ("config" if "type" in raw else "default")
    if kind not in JUDGE_TYPES:
        expected = f"expected one of {', '.join(JUDGE_TYPES.names())}"
        if type_source == TYPE_ENV:
            raise JudgeConfigError(f"{TYPE_ENV}={shown(kind)}: {expected}")
        raise JudgeConfigError(str(at.child("type").error(f"{shown(kind)}: {expected}")))
    if type_source != TYPE_ENV:  # a key only another type reads would be dropped silently
        for name in raw:
            owners = [t for t, keys in type_keys.items() if name in keys]
            if owners and kind not in owners and name not in own:
                raise at.fail(name, f"applies only to judge.type {', '.join(owners)}, and judge.type is {kind} here")
    sections: dict[str, object] = {}
    for jt in JUDGE_TYPES:  # every type's keys are checked, whichever type is chosen
        keys = type_keys[jt.name]
        sections[jt.name] = parse_section(jt.section, {k: v for k, v in raw.items() if k in keys}, at,
                                          env_error=JudgeConfigError)
    # the variables that set the chosen judge: the type, the shared keys and the chosen type's own keys
    chosen = {"type": TYPE_ENV, **env_keys(JudgeConfig), **env_keys(JUDGE_TYPES.get(kind).section)}
    from_env = tuple(var for var in dict.fromkeys(chosen.values()) if environ.get(var))
    out = dataclasses.replace(common, type=kind, type_source=type_source, options=sections[kind], from_env=from_env)
    jt = JUDGE_TYPES.get(kind)
    if jt.check is not None:
        origin = f"{TYPE_ENV}={kind}" if type_source == TYPE_ENV else f"{path}: judge.type {kind}"
        jt.check(out, origin, str(path))
    return out


def judge_config(type: str = "rule_based", **settings: Any) -> JudgeConfig:
    """A judge configuration built in code (tests, benchmarks): ``settings`` are the shared keys and the
    type's own keys, as in a ``judge`` section. Checked like a file's section; no environment override.
    Raises ConfigError / JudgeConfigError as loading would."""
    return resolve_judge({"type": type, **settings}, path=Path("<code>"), environ={})


def where(config: JudgeConfig, name: str) -> str:
    """Where a judge setting came from, for messages: its variable when that overrode the file, else
    ``judge.<name>``."""
    var = judge_env().get(name)
    return var if var in config.from_env else f"judge.{name}"


def build_judge(config: JudgeConfig, api_key: str | None = None) -> Judge:
    """The judge of ``config`` built by its type. ``api_key``: for judges that call an endpoint (from
    ``RAG_EVAL_JUDGE_API_KEY``; never logged). Raises ConfigError for an unknown type and what the
    type's builder raises (JudgeConfigError for an incomplete setup, InputError for a bad label file)."""
    return JUDGE_TYPES.get(config.type).build(config, api_key)


# ------------------------------------------------------------------------------------------------
# a resolved configuration as JSON (the Dagster resource's config; holds no secret)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def judge_config_to_json(config: JudgeConfig) -> str:
    """``config`` as the JSON of a ``judge`` section (its shared keys and its type's own keys, paths
    absolute), which :func:`judge_config_from_json` reads back. Holds no secret: the API key is never
    part of a judge section."""
    data: dict[str, Any] = {"type": config.type}
    for name in section_keys(JudgeConfig):
        if name != "type":
            data[name] = _jsonable(getattr(config, name))
    if config.options is not None:
        for name in section_keys(type(config.options)):
            data[name] = _jsonable(getattr(config.options, name))
    return json.dumps({"settings": data, "type_source": config.type_source, "from_env": list(config.from_env)},
                      sort_keys=True)


def judge_config_from_json(text: str) -> JudgeConfig:
    """The :class:`JudgeConfig` written by :func:`judge_config_to_json`, checked again (no environment
    override: the values are already the resolved ones). Raises JudgeConfigError for a judge that can
    no longer be built (a label file that disappeared)."""
    doc = json.loads(text or "{}")
    settings = {k: v for k, v in (doc.get("settings") or {}).items() if v is not None}
    cfg = resolve_judge(settings, path=Path("<judge resource>"), environ={})
    return dataclasses.replace(cfg, type_source=doc.get("type_source", cfg.type_source),
                               from_env=tuple(doc.get("from_env", ())))
