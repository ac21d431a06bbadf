"""Typed configuration sections: frozen dataclasses read and checked by one generic parser.

A section is a frozen dataclass; each field is one key of the YAML file, declared with :func:`key`:
its default (none: the key is required), its documentation, and its checks in the field's metadata
(a :class:`Key`: numeric range ``low``/``high``, a sanity ``cap``, ``choices``, the environment
variable that overrides it, a ``when`` condition on a sibling key, an extra ``check``). The field's
annotation is its type: ``bool``, ``int``, ``float``, ``str``, ``Path`` (resolved against the
configuration's folder), ``X | None``, ``tuple[X, ...]`` (a YAML list), ``Mapping[str, X]`` (a YAML
mapping), another section (a nested mapping), or ``object`` (any JSON-like value, kept as is).

:func:`parse_section` reads one mapping into a section: an unknown key, a missing required key, a
value of the wrong type or out of range is a :class:`SectionError` (a ConfigError) naming the file,
the line of the key (from :func:`rag_eval_pipeline.core.yamlio.load_yaml_located`), the section and
the key, with at most 80 characters of the value. A section class may define ``validate(self,
ctx) -> Self | None`` for rules that span its fields (``ctx`` is the :class:`At` of the section; its
``fail(key, message)`` builds a located error). Messages keep the configuration's established forms:
``judge.repeats must be an integer in [1, 100], got 'two'``, ``gates.thresholds[0].max_abs_drop must
be a finite number >= 0.0, got nan``, ``unknown key(s) ['splt'] in corpus; expected only [...]``.

Why frozen dataclasses rather than pydantic models: the core stays free of a library that reaches it
only through Dagster, the messages stay the product's (file, line, key; values cut to 80
characters), and the sections are the documentation: :func:`describe` lists every key with its type,
default and doc, which the docs pages are checked against. Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.yamlio import line_of
from rag_eval_pipeline.core.yamlio import shown as _shown

S = TypeVar("S")
_SHOWN = 80
#: Longest name or version string stored on every row (system names, prompt_version, a judge's model).
MAX_NAME_CHARS = 200
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")

__all__ = ["MAX_NAME_CHARS", "At", "Key", "SectionError", "check_callable_target", "check_name", "check_nonblank",
           "check_short_text", "describe", "did_you_mean", "fields_of", "key", "parse_section", "section_keys", "shown",
           "unknown_keys"]


def shown(value: object) -> str:
    """A value for an error message: its repr, cut to 80 characters (a value may be megabytes long)."""
    return _shown(value, _SHOWN)


def did_you_mean(unknown: Sequence[str], allowed: Sequence[str], label: str = "") -> str:
    """For keys a section does not declare, the closest allowed key of each (``difflib.get_close_matches``,
    Python's standard library: ratio >= 0.6, the best one): `` (gates.aplha: did you mean 'alpha'?)``; ``""``
    when no unknown key is close to an allowed one. ``label``: the section's dotted path (``""``: the top level).
    Raises nothing."""
    hints = []
    for name in sorted(str(k) for k in unknown):
        close = difflib.get_close_matches(name, [str(a) for a in allowed], n=1)
        if close:
            hints.append(f"{label + '.' if label else ''}{name}: did you mean {close[0]!r}?")
    return f" ({'; '.join(hints)})" if hints else ""


def unknown_keys(unknown: Sequence[str], allowed: Sequence[str], label: str = "") -> str:
    """The problem text for keys a section does not declare: ``unknown key(s) ['aplha'] in gates (gates.aplha:
    did you mean 'alpha'?); expected only [...]`` (:func:`did_you_mean`; ``label`` ``""``: "in the top level").
    Raises nothing."""
    where = f"in {label}" if label else "in the top level"
    return (f"unknown key(s) {sorted(str(k) for k in unknown)} {where}{did_you_mean(unknown, allowed, label)}; "
            f"expected only {list(allowed)}")


def check_name(value: str) -> str | None:
    """The problem with a name stored on every row and used in file names (a system's), or None: blank,
    longer than :data:`MAX_NAME_CHARS`, or holding ``/``, ``\\``, a control character or a leading ``.``."""
    if not value.strip():
        return f"must be a non-empty string, got {shown(value)}"
    if len(value) > MAX_NAME_CHARS:
        return f"is {len(value)} characters long; expected at most {MAX_NAME_CHARS}"
    if _BAD_NAME.search(value) or value.startswith("."):
        return f"{shown(value)} contains '/', '\\', a control character or starts with '.'; expected a plain name"
    return None


def check_nonblank(value: str) -> str | None:
    """The problem with a blank string (a name, a header, a phrase), or None."""
    return None if value.strip() else f"must be a non-empty string, got {value!r}"


_CALLABLE_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def check_callable_target(value: str) -> str | None:
    """The problem with a ``package.module:function`` reference (the attribute part may be dotted), or None."""
    return None if _CALLABLE_TARGET.match(value) else f"must be 'package.module:function', got {value!r}"


def check_short_text(value: str) -> str | None:
    """The problem with a label stored on every row (a version, a model name): longer than
    :data:`MAX_NAME_CHARS` characters; or None."""
    if len(value) > MAX_NAME_CHARS:
        return f"is {len(value)} characters long; expected at most {MAX_NAME_CHARS}"
    return None


class SectionError(ConfigError):
    """A configuration value refused when the file loads. ``path`` (the file), ``line`` (1-based or
    None), ``key`` (the dotted key at fault, e.g. ``systems[2].retriever.k``) and ``problem`` (the
    message without the location) are attributes, for tools that list problems (``rag-eval check``)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, key: str | None = None,
                 problem: str | None = None):
        super().__init__(message)
        self.path, self.line, self.key, self.problem = path, line, key, problem or message


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
# where a value is


@dataclass(frozen=True)
class At:
    """Where a section or value is: the file (``source``), the key lines of the document, the YAML
    path (``path``), the dotted label used in messages (``label``: ``judge``, ``systems[2].retriever``),
    a ``prefix`` said before it (``systems[2] (bm25, kind reference)``), the folder relative paths are
    resolved against (``base_dir``) and the environment (``environ``; None: no overrides)."""

    source: Path
    lines: Mapping[tuple, int] = field(default_factory=dict)
    path: tuple = ()
    label: str = ""
    prefix: str = ""
    base_dir: Path | None = None
    environ: Mapping[str, str] | None = None

    def line(self, path: tuple | None = None) -> int | None:
        """The file line of ``path`` (default: this value's), or of its nearest enclosing key
        (:func:`rag_eval_pipeline.core.yamlio.line_of`)."""
        return line_of(self.lines, self.path if path is None else path)

    def child(self, name: str | int, label: str | None = None) -> At:
        """The place of key ``name`` (or list index) inside this value."""
        if label is None:
            label = f"{self.label}[{name}]" if isinstance(name, int) else (
                f"{self.label}.{name}" if self.label else str(name))
        return dataclasses.replace(self, path=self.path + (name,), label=label)

    def error(self, problem: str, path: tuple | None = None, label: str | None = None) -> SectionError:
        """A located error: ``FILE, line N: PREFIX: LABEL PROBLEM`` (LABEL omitted when ``label=""``)."""
        line = self.line(path)
        where = f"{self.source}, line {line}" if line is not None else f"{self.source}"
        lab = self.label if label is None else label
        text = f"{lab} {problem}" if lab else problem
        prefix = f"{self.prefix}: " if self.prefix else ""
        return SectionError(f"{where}: {prefix}{text}", path=str(self.source), line=line, key=lab or None,
                            problem=text)

    def fail(self, name: str, problem: str) -> SectionError:
        """A located error about key ``name`` of this section."""
        c = self.child(name)
        return c.error(problem)


# ------------------------------------------------------------------------------------------------
# values


def _num(v: float) -> str:
    return repr(v) if isinstance(v, float) else str(v)


def _range_text(k: Key, integer: bool) -> str:
    if k.low is not None and k.high is not None:
        lo, hi = ("(" if k.low_open else "["), (")" if k.high_open else "]")
        return f"in {lo}{_num(k.low)}, {_num(k.high)}{hi}"
    if k.low is not None:
        return f"{'>' if k.low_open else '>='} {_num(k.low)}"
    if k.high is not None:
        return f"{'<' if k.high_open else '<='} {_num(k.high)}"
    return ""


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
    rng = _range_text(k, integer)
    if integer:
        what = f"an integer {rng}".rstrip()
        typed = isinstance(value, int) and not isinstance(value, bool)
    else:
        two_sided = k.low is not None and k.high is not None
        what = (f"a number {rng}" if two_sided else f"a {k.noun} {rng}").rstrip()
        typed = isinstance(value, (int, float)) and not isinstance(value, bool) and _finite(value)
    if not typed:
        cap = f" (and at most {_num(k.cap)})" if k.cap is not None else ""
        raise at.error(f"must be {what}, got {shown(value)}{cap}")
    if not _in_range(value, k):
        raise at.error(f"must be {what}, got {shown(value)}")
    if k.cap is not None and value > k.cap:
        why = f" ({k.cap_why})" if k.cap_why else ""
        raise at.error(f"must be at most {_num(k.cap)}{why}, got {shown(value)}")
    return value if integer else float(value)


def _origin(tp: Any) -> tuple[Any, tuple]:
    return typing.get_origin(tp), typing.get_args(tp)


def _optional(tp: Any) -> tuple[bool, Any]:
    origin, args = _origin(tp)
    if origin in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return True, rest[0] if len(rest) == 1 else functools.reduce(operator.or_, rest)
    return False, tp


def _plain(value: Any) -> Any:
    """A JSON-like copy of a YAML value (dicts and lists rebuilt, scalars kept)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
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
        raise _WrongType(" or ".join(_type_text(a) for a in args))
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
        out = _plain(value)
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


# ------------------------------------------------------------------------------------------------
# documentation


def _type_text(tp: Any) -> str:
    optional, tp = _optional(tp)
    origin, args = _origin(tp)
    if origin in (typing.Union, types.UnionType):
        text = " or ".join(_type_text(a) for a in args)
    elif dataclasses.is_dataclass(tp):
        text = "mapping"
    elif origin is tuple:
        text = f"list of {_type_text(args[0]) if args else 'values'}"
    elif origin in (Mapping, dict) or tp in (dict, Mapping):
        text = f"mapping of {_type_text(args[1])}" if len(args) == 2 else "mapping"
    elif tp is Path:
        text = "path"
    elif tp in (object, Any):
        text = "JSON value"
    else:
        text = getattr(tp, "__name__", str(tp))
    return text + (" or null" if optional else "")


def _default_text(value: Any) -> str:
    import json

    if value is None:
        return "null"
    if isinstance(value, (bool, int, float, str)):
        return f"`{json.dumps(value) if isinstance(value, bool) else value}`"
    return f"`{json.dumps(_plain(value), ensure_ascii=False)}`"


def describe(cls: type) -> list[dict[str, str]]:
    """One row per key of section ``cls``: ``key``, ``type``, ``default`` (``required`` when none),
    ``doc`` (with the range, choices and variable appended). For documentation tables and the test
    that keeps the docs pages in step with the sections."""
    rows = []
    for f, tp, k in fields_of(cls):
        if f.default is not MISSING:
            default = _default_text(f.default)
        elif f.default_factory is not MISSING:
            d = f.default_factory()
            default = "its keys' defaults" if dataclasses.is_dataclass(d) else _default_text(d)
        else:
            default = "required"
        notes = [k.doc] if k.doc else []
        rng = _range_text(k, typing.get_origin(tp) is None and tp is int)
        if rng and (k.low is not None or k.high is not None):
            notes.append(rng)
        if k.cap is not None:
            notes.append(f"at most {_num(k.cap)}")
        if k.choices is not None:
            notes.append("one of " + ", ".join(f"`{c}`" for c in k.allowed() or ()))
        if k.when is not None:
            notes.append(f"only with {k.when[0]} " + " / ".join(f"`{v}`" for v in k.when[1]))
        if k.env:
            notes.append(f"variable `{k.env}` overrides it")
        rows.append({"key": f.name, "type": _type_text(tp), "default": default, "doc": "; ".join(notes)})
    return rows


def markdown_table(cls: type) -> str:
    """:func:`describe` as a Markdown table (``| key | type | default | meaning |``)."""
    head = "| key | type | default | meaning |\n|---|---|---|---|\n"
    return head + "\n".join(f"| `{r['key']}` | {r['type']} | {r['default']} | {r['doc']} |" for r in describe(cls))
