"""Typed configuration sections: frozen dataclasses read and checked by one generic parser.

A section is a frozen dataclass; each field is one key of the YAML file, declared with :func:`key`:
its default (none: the key is required), its documentation, and its checks in the field's metadata
(a :class:`Key`: numeric range ``low``/``high``, a sanity ``cap``, ``choices``, the environment
variable that overrides it, a ``when`` condition on a sibling key, an extra ``check``; the checks several
sections share are in :mod:`rag_eval_pipeline.core.section_checks`). The field's
annotation is its type: ``bool``, ``int``, ``float``, ``str``, ``Path`` (resolved against the
configuration's folder), ``X | None``, ``tuple[X, ...]`` (a YAML list), ``Mapping[str, X]`` (a YAML
mapping), another section (a nested mapping), or ``object`` (any JSON-like value, kept as is).

:func:`parse_section` reads one mapping into a section: an unknown key, a missing required key, a
value of the wrong type or out of range is a :class:`~rag_eval_pipeline.core.section_errors.SectionError` (a
ConfigError) naming the file, the line of the key (from :func:`rag_eval_pipeline.core.yamlio.load_yaml_located`),
the section and the key, with at most 80 characters of the value. A section class may define ``validate(self,
ctx) -> Self | None`` for rules that span its fields (``ctx`` is the
:class:`~rag_eval_pipeline.core.section_errors.At` of the section; its
``fail(key, message)`` builds a located error). Messages keep the configuration's established forms:
``judge.repeats must be an integer in [1, 100], got 'two'``, ``gates.thresholds[0].max_abs_drop must
be a finite number >= 0.0, got nan``, ``unknown key(s) ['splt'] in corpus; expected only [...]``.

Why frozen dataclasses rather than pydantic models: the core stays free of a library that reaches it
only through Dagster, the messages stay the product's (file, line, key; values cut to 80
characters), and the sections are the documentation: :func:`rag_eval_pipeline.core.kind_docs.describe` lists
every key with its type, default and doc, in the words of the messages (:func:`type_text`, :func:`range_text`),
which the docs pages are checked against. Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.section_errors import At, SectionError, shown, unknown_keys

S = TypeVar("S")

__all__ = ["Key", "env_keys", "fields_of", "key", "number_text", "parse_section", "plain_value", "range_text",
           "read_value", "section_keys", "type_text", "value_from_env"]


@dataclass(frozen=True)
class Key:
    """What a field accepts besides its type.

    ``doc``: one line for the documentation table. ``low``/``high`` (with ``low_open``/``high_open``):
    the range of a number (the message says the range); ``cap``: a sanity bound above the meaningful
    range (the message says the bound and ``cap_why``). ``choices``: the allowed values, or a
    function returning them (a registry's names). ``env``: the environment variable that overrides
    the key (empty = unset). ``when``: ``(sibling, values)``, the key applies only when the sibling
    key has one of ``values``. ``check``: ``fn(value) -> problem or None`` for anything else (the
    problem completes ``"<key> <problem>"``). ``noun``: how a one-sided number is named in messages.
    ``items``: a :class:`Key` applied to each item of a list or each value of a mapping.
    ``internal``: not read from the file (set by the loader). ``coerce_text``: a scalar (string,
    number) is read as its text. ``expected``: what a value of the wrong type is told it must be
    (default from the type: "a list", "a mapping", "a string", ...).
    """

    doc: str = ""
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    cap: float | None = None
    cap_why: str = ""
    choices: tuple | Callable[[], tuple] | None = None
    env: str | None = None
    when: tuple[str, tuple] | None = None
    check: Callable[[Any], str | None] | None = None
    noun: str = "finite number"
    items: Key | None = None
    internal: bool = False
    coerce_text: bool = False
    expected: str | None = None

    def allowed(self) -> tuple | None:
        """The allowed values (``choices`` called when it is a function)."""
        return self.choices() if callable(self.choices) else self.choices


def key(default: Any = MISSING, *, default_factory: Callable[[], Any] | None = None, **meta: Any) -> Any:
    """A section field: ``default`` (omit it for a required key) and the :class:`Key` settings."""
    md = {"key": Key(**meta)}
    if default_factory is not None:
        return field(default_factory=default_factory, metadata=md)
    if default is MISSING:
        return field(metadata=md)
    return field(default=default, metadata=md)


def _meta(f: dataclasses.Field) -> Key:
    return f.metadata.get("key") or Key()


def fields_of(cls: type) -> list[tuple[dataclasses.Field, Any, Key]]:
    """``(field, resolved type, Key)`` of every field of section ``cls`` that the file may set."""
    hints = typing.get_type_hints(cls)
    return [(f, hints[f.name], _meta(f)) for f in dataclasses.fields(cls) if f.init and not _meta(f).internal]


def section_keys(cls: type) -> tuple[str, ...]:
    """The YAML keys of section ``cls``, in declaration order."""
    return tuple(f.name for f, _, _ in fields_of(cls))


# ------------------------------------------------------------------------------------------------
# values


def number_text(v: float) -> str:
    """A number as messages and the docs tables write it: a float by its ``repr`` (``0.0``, ``1e-06``: the
    shortest text that reads back to the same float), an int (or a bool) by ``str`` (``100``).

    Input: an int or a float (any value: NaN and infinities as ``nan``, ``inf``). Output: the text. Raises
    nothing. Source: Python's ``float.__repr__`` (shortest round-trip repr, since Python 3.1)."""
    return repr(v) if isinstance(v, float) else str(v)


def range_text(k: Key) -> str:
    """The range of a number key in words: ``in [1, 100]``, ``in (0.0, 1.0]`` (a parenthesis: that bound is
    open, ``low_open``/``high_open``), ``>= 0.0``, ``< 5``; ``""`` when ``k`` sets neither ``low`` nor ``high``.

    Input: a :class:`Key`. Output: the text the refusal of an out-of-range value and the docs tables share
    (bounds by :func:`number_text`). Raises nothing. Source: the usual mathematical interval notation (a
    bracket includes its bound, a parenthesis excludes it)."""
    if k.low is not None and k.high is not None:
        lo, hi = ("(" if k.low_open else "["), (")" if k.high_open else "]")
        return f"in {lo}{number_text(k.low)}, {number_text(k.high)}{hi}"
    if k.low is not None:
        return f"{'>' if k.low_open else '>='} {number_text(k.low)}"
    if k.high is not None:
        return f"{'<' if k.high_open else '<='} {number_text(k.high)}"
    return ""


def type_text(tp: Any) -> str:
    """What a field's type is called in messages and the docs tables: ``int``, ``float or null``, ``list of
    str``, ``mapping of int``, ``mapping`` (a nested section), ``path``, ``JSON value``; the alternatives of a
    union joined by `` or `` (a value no alternative reads is told it must be one of them).

    Input: a resolved annotation (``typing.get_type_hints`` of a section). Output: the text. Raises nothing.
    Source: the annotation is read with ``typing.get_origin`` / ``typing.get_args`` (Python's typing module);
    the words are YAML's (mapping, list, null: YAML 1.2 core schema)."""
    optional, tp = _optional(tp)
    origin, args = _origin(tp)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(type_text(a) for a in args)
    elif dataclasses.is_dataclass(tp):
        text = "mapping"
    elif origin is tuple:
        text = f"list of {type_text(args[0]) if args else 'values'}"
    elif origin in (Mapping, dict) or tp in (dict, Mapping):
        text = f"mapping of {type_text(args[1])}" if len(args) == 2 else "mapping"
    elif tp is Path:
        text = "path"
    elif tp in (object, Any):
        text = "JSON value"
    else:
        text = getattr(tp, "__name__", str(tp))
    return text + (" or null" if optional else "")


def _in_range(v: float, k: Key) -> bool:
    if k.low is not None and (v < k.low or (k.low_open and v == k.low)):
        return False
    return not (k.high is not None and (v > k.high or (k.high_open and v == k.high)))


def _finite(value: int | float) -> bool:
    """True for a number that is a finite float; an integer with no float (10**400) is not."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _number(value: Any, k: Key, at: At, integer: bool) -> int | float:
    rng = range_text(k)
    if integer:
        what = f"an integer {rng}".rstrip()
        typed = isinstance(value, int) and not isinstance(value, bool)
    else:
        two_sided = k.low is not None and k.high is not None
        what = (f"a number {rng}" if two_sided else f"a {k.noun} {rng}").rstrip()
        typed = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
    if not typed:
        cap = f" (and at most {number_text(k.cap)})" if k.cap is not None else ""
        raise at.error(f"must be {what}, got {shown(value)}{cap}")
    if not _in_range(value, k):
        raise at.error(f"must be {what}, got {shown(value)}")
    if k.cap is not None and value > k.cap:
        why = f" ({k.cap_why})" if k.cap_why else ""
        raise at.error(f"must be at most {number_text(k.cap)}{why}, got {shown(value)}")
    return value if integer else float(value)


def _origin(tp: Any) -> tuple[Any, tuple]:
    return typing.get_origin(tp), typing.get_args(tp)


def _optional(tp: Any) -> tuple[bool, Any]:
    origin, args = _origin(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return True, rest[0] if len(rest) == 1 else functools.reduce(operator.or_, rest)
    return False, tp


def plain_value(value: Any) -> Any:
    """A JSON-like copy of a YAML value: every mapping rebuilt as a ``dict`` with ``str`` keys, every list or tuple
    as a ``list``, scalars kept as they are (what an ``object`` field holds, and how the docs tables show a
    default that is a list or a mapping).

    Input: any value the YAML loader returns or a section declares as a default. Output: dicts, lists and the
    scalars of ``value``. Raises nothing. Source: the JSON data model (RFC 8259: objects with string names,
    arrays, scalars)."""
    if isinstance(value, Mapping):
        return {str(k): plain_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    return value


def read_value(value: Any, tp: Any, k: Key, at: At) -> Any:
    """``value`` as type ``tp`` under the rules of ``k``; raises SectionError located at ``at``."""
    try:
        return _read(value, tp, k, at)
    except _WrongType as exc:
        raise at.error(f"must be {k.expected or exc.expected}, got {shown(value)}") from None


class _WrongType(Exception):
    def __init__(self, expected: str):
        super().__init__(expected)
        self.expected = expected


def _read(value: Any, tp: Any, k: Key, at: At) -> Any:
    optional, tp = _optional(tp)
    if value is None:
        if optional:
            return None
        raise at.error(f"must be set, got {shown(value)}")
    origin, args = _origin(tp)
    if origin in (typing.Union, types.UnionType):
        # the first alternative whose shape fits the value reads it (and its refusal is the message)
        for arm in args:
            try:
                return _read(value, arm, k, at)
            except _WrongType:
                continue
        raise _WrongType(" or ".join(type_text(a) for a in args))
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        out: Any = parse_section(tp, value, at)
    elif tp is bool:
        if not isinstance(value, bool):
            raise _WrongType("true or false")
        out = value
    elif tp is int:
        out = _number(value, k, at, integer=True)
    elif tp is float:
        out = _number(value, k, at, integer=False)
    elif tp is str:
        if k.coerce_text and isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            raise _WrongType("a string")
        out = value
    elif tp is Path:
        if not isinstance(value, str) or not value.strip():
            raise _WrongType("a path")
        p = Path(value)
        out = p if p.is_absolute() or at.base_dir is None else (at.base_dir / p).resolve()
    elif origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise _WrongType("a list")
        item_tp = args[0] if args else object
        ik = k.items or Key()
        out = tuple(read_value(v, item_tp, ik, at.child(i)) for i, v in enumerate(value))
    elif origin in (Mapping, dict, typing.Mapping) or tp in (dict, Mapping):
        if not isinstance(value, Mapping):
            raise _WrongType("a mapping")
        val_tp = args[1] if len(args) == 2 else object
        ik = k.items or Key()
        out = {}
        for name, v in value.items():
            if not isinstance(name, str):
                raise at.error(f"has a key {shown(name)} that is not a string")
            out[name] = read_value(v, val_tp, ik, at.child(name))
    elif tp is object or tp is Any:
        out = plain_value(value)
    else:  # pragma: no cover - a section declared with a type this parser does not read
        raise TypeError(f"section field {at.label}: unsupported type {tp!r}")
    choices = k.allowed()
    if choices is not None and out not in choices:
        raise at.error(f"must be one of {choices}, got {shown(value)}")
    if k.check is not None:
        problem = k.check(out)
        if problem:
            raise at.error(problem)
    return out


def value_from_env(raw: str, var: str, tp: Any) -> Any:
    """An environment variable's text as the field's type; ConfigError ``VAR='x': expected ...``."""
    _, tp = _optional(tp)
    if tp is float:
        try:
            return float(raw)
        except ValueError:
            raise ConfigError(f"{var}={shown(raw)}: expected a number") from None
    if tp is int:
        try:
            return int(raw)
        except ValueError:
            raise ConfigError(f"{var}={shown(raw)}: expected an integer") from None
    if tp is bool:
        if raw.strip().lower() in ("1", "true", "yes", "on"):
            return True
        if raw.strip().lower() in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{var}={shown(raw)}: expected true or false")
    if tp is Path:
        return str(Path(raw).resolve())
    return raw


def parse_section(cls: type[S], raw: Any, at: At, *, extra_keys: tuple[str, ...] = (),
                  preset: Mapping[str, Any] | None = None, env_error: type[ConfigError] = ConfigError) -> S:
    """Read the mapping ``raw`` into section ``cls`` (a frozen dataclass declared with :func:`key`).

    Input: the YAML value (None: the section is absent, every default applies), where it is
    (:class:`At`), ``extra_keys`` the caller reads itself (allowed, not passed to ``cls``), ``preset``
    values of internal fields (set by the caller, e.g. a system's ``name`` and ``kind``), and
    ``env_error`` the error class for a bad environment value.
    With ``at.environ``, a field whose :class:`Key` names an ``env`` variable takes the variable's
    value when it is set and not empty (the message then names the variable instead of the file).
    Output: a ``cls`` instance (after its ``validate`` hook, when it has one).
    Raises :class:`SectionError` for a value that is not a mapping, an unknown key (every key of the
    section listed), a key that does not apply (``when``), a missing required key, a value of the
    wrong type, out of range or not among the choices; ConfigError (unlocated, naming the variable)
    for an environment value that is not of the field's type.
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise at.error(f"must be a mapping, got {shown(raw)}")
    specs = fields_of(cls)
    declared = [f.name for f, _, _ in specs]
    known = set(declared) | set(extra_keys)
    unknown = [str(k) for k in raw if k not in known]
    if unknown:
        raise at.error(unknown_keys(unknown, declared + list(extra_keys), at.label), path=at.path + (unknown[0],),
                       label="")
    values: dict[str, Any] = {}
    for f, tp, k in specs:
        if k.when is not None:
            sibling, allowed = k.when
            current = raw.get(sibling, _default(cls, sibling))
            if f.name in raw and current not in allowed:
                applies = [ff.name for ff, _, kk in specs if kk.when is None or current in kk.when[1]]
                raise at.error(f"key {f.name!r} applies only when {sibling} is one of {list(allowed)}, and "
                               f"{sibling} is {current!r} here; expected only {applies}",
                               path=at.path + (f.name,), label=at.label)
        child = at.child(f.name)
        var = k.env
        env_value = at.environ.get(var) if (var and at.environ is not None) else None
        if var and env_value:  # set and not empty
            try:
                value = value_from_env(env_value, var, tp)
            except ConfigError as exc:
                raise env_error(str(exc)) from None
            child = dataclasses.replace(child, label=var, source=Path("<environment>"), lines={})
            try:
                values[f.name] = read_value(value, tp, k, child)
            except SectionError as exc:  # the variable is at fault, not the file: say only the variable
                raise env_error(exc.problem) from None
            continue
        if f.name in raw:
            values[f.name] = read_value(raw[f.name], tp, k, child)
        elif f.default is MISSING and f.default_factory is MISSING:
            raise at.error(f"missing key {at.label + '.' if at.label else ''}{f.name}", label="")
    values.update(preset or {})
    out = cls(**values)
    hook = getattr(out, "validate", None)
    if callable(hook):
        checked = hook(at)
        if checked is not None:
            out = checked
    return out


def _default(cls: type, name: str) -> Any:
    for f in dataclasses.fields(cls):
        if f.name == name:
            if f.default is not MISSING:
                return f.default
            if f.default_factory is not MISSING:
                return f.default_factory()
    return None


def env_keys(cls: type) -> dict[str, str]:
    """``{key: environment variable}`` for the fields of ``cls`` that a variable overrides."""
    return {f.name: k.env for f, _, k in fields_of(cls) if k.env}
