"""Where a configuration value is, and the one-line error that names it.

:class:`At` is the place of a section or value (the file, the line of each key from
:func:`rag_eval_pipeline.core.yamlio.load_yaml_located`, the YAML path and its dotted label);
:meth:`At.error` builds a :class:`SectionError` (a ConfigError) that says ``FILE, line N: LABEL PROBLEM``.
:func:`shown` cuts a quoted value to 80 characters; :func:`unknown_keys` and :func:`did_you_mean` word a key
or a name nobody declared (``unknown key(s) ['aplha'] in gates (gates.aplha: did you mean 'alpha'?); expected
only [...]``), for the section parser (:mod:`rag_eval_pipeline.core.sections`) and every reader that refuses
an unknown name. Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.yamlio import line_of
from rag_eval_pipeline.core.yamlio import shown as _shown

_SHOWN = 80

__all__ = ["At", "SectionError", "did_you_mean", "shown", "unknown_keys"]


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


class SectionError(ConfigError):
    """A configuration value refused when the file loads. ``path`` (the file), ``line`` (1-based or
    None), ``key`` (the dotted key at fault, e.g. ``systems[2].retriever.k``) and ``problem`` (the
    message without the location) are attributes, for tools that list problems (``rag-eval check``)."""

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, key: str | None = None,
                 problem: str | None = None):
        super().__init__(message)
        self.path, self.line, self.key, self.problem = path, line, key, problem or message


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
