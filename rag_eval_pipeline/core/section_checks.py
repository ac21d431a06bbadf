"""The value checks several sections share, each a :class:`rag_eval_pipeline.core.sections.Key` ``check``.

A system's name (stored on every row and used in file names: :func:`check_name`), a label stored on every row
(a version, a model name: :func:`check_short_text`, at most :data:`MAX_NAME_CHARS` characters), a string that
must not be blank (:func:`check_nonblank`) and a ``package.module:function`` reference
(:func:`check_callable_target`). Each returns the problem, which completes ``"<key> <problem>"`` in the
parser's located error, or None. Nothing here imports Dagster.
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.section_errors import shown

#: Longest name or version string stored on every row (system names, prompt_version, a judge's model).
MAX_NAME_CHARS = 200
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")

__all__ = ["MAX_NAME_CHARS", "check_callable_target", "check_name", "check_nonblank", "check_short_text"]


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
