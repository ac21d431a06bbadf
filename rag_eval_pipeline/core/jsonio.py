"""The one strict JSON reader: every JSON text the pipeline reads (a run-log line, an HTTP reply, an OTLP
line, a trace attribute, a label file line, a request body, a judge's reply) goes through :func:`loads`.

Strict means:

- **a repeated key** in one object is refused (Python's ``json`` keeps the last value silently, so
  ``{"decision": "answer", "decision": "error"}`` would mean whichever came last);
- **nesting deeper than** :data:`MAX_DEPTH` levels is refused with a located error instead of
  ``RecursionError`` (CPython's decoder recurses once per bracket: 100,000 nested brackets would
  otherwise take down the whole step that parses them, every other system's rows with it);
- **an integer beyond Python's digit limit** (``sys.get_int_max_str_digits``) is a located error, not
  a bare ``ValueError``.

``NaN`` / ``Infinity`` stay readable (RFC 8259 forbids them, but Python writes them): the field checks
that follow refuse a non-finite score with the field's name, which says more than a parse error.
Definition of the format: RFC 8259 (JSON); its section 4 leaves repeated names' behaviour to the
reader, and this reader refuses them. Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest nesting of arrays and objects accepted. Real documents stay far below it (an OTLP line with
#: key-value lists inside arrays is about 12 levels); it leaves the interpreter's recursion limit (1000)
#: room for the caller's own frames, so the depth check never meets a RecursionError first.
MAX_DEPTH = 128


class JsonError(ValueError):
    """A JSON text this reader refuses.

    Attributes: ``reason`` (``malformed`` / ``repeated_key`` / ``too_deep`` / ``bad_value``), ``msg``
    (what is wrong, without position), ``pos`` (0-based character offset or None), ``lineno`` and
    ``colno`` (1-based, or None). ``str(exc)`` is one line: the message and, when known, the position.
    """

    def __init__(self, reason: str, msg: str, doc: str | None = None, pos: int | None = None):
        self.reason, self.msg, self.pos = reason, msg, pos
        self.lineno = self.colno = None
        if doc is not None and pos is not None:
            self.lineno = doc.count("\n", 0, pos) + 1
            self.colno = pos - (doc.rfind("\n", 0, pos) + 1) + 1
        where = "" if self.colno is None else f" at line {self.lineno} column {self.colno}"
        super().__init__(f"{msg}{where}")


class _RepeatedKey(ValueError):
    pass


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            shown = key if len(key) <= 60 else key[:60] + "..."
            raise _RepeatedKey(f"key {shown!r} appears twice in one object; expected each key once")
        out[key] = value
    return out


_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> tuple[int, int | None]:
    """How deeply ``text`` nests arrays and objects, outside strings; stops at the first level past ``limit``.

    Input: a JSON text (valid or not). Output: (deepest level seen, up to ``limit + 1``; the offset of
    the bracket that went past ``limit``, or None). Strings (escapes honoured) are skipped by the regular
    expression engine, so the cost is one C-level scan plus one step per bracket. Never raises.
    """
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > limit:
                    return deepest, m.start()
        elif c in "]}":
            depth -= 1
    return deepest, None


def _may_be_deep(text: str, limit: int) -> bool:
    # fewer opening brackets than the limit cannot nest past it: the common case costs two C-level counts
    return text.count("[") + text.count("{") > limit


def value_depth(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deeply a parsed JSON value nests lists and dicts (a scalar is 0); stops once past ``limit``.

    Iterative (no recursion, whatever the depth). Output: an int up to ``limit + 1``. Never raises."""
    if type(value) not in (dict, list):
        return 0
    stack, deepest = [(value, 1)], 1
    while stack:
        node, d = stack.pop()
        if d > deepest:
            deepest = d
            if d > limit:
                return d
        for v in (node.values() if type(node) is dict else node):
            if type(v) in (dict, list):
                stack.append((v, d + 1))
    return deepest


def _too_deep(text: str, max_depth: int) -> JsonError:
    _, at = nesting_depth(text, max_depth)
    return JsonError("too_deep", f"nested more than {max_depth} levels deep (arrays and objects); expected at "
                                 f"most {max_depth}", text, at)


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON text strictly (module docstring).

    Input: str, or bytes decoded as UTF-8 (a BOM is not accepted: the callers strip it). Output: the
    value (dict, list, str, int, float, bool or None). Raises JsonError (a ValueError) with ``reason``
    ``malformed`` (with line and column), ``repeated_key``, ``too_deep`` (nesting past ``max_depth``,
    with the position of the bracket that passed it) or ``bad_value`` (an integer beyond Python's digit
    limit, bytes that are not UTF-8). Never raises RecursionError. The depth is checked on the parsed
    value (cheap: one step per container) and, when the decoder itself runs out of stack, located by a
    scan of the text.
    """
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError("bad_value", f"not UTF-8: byte 0x{text[exc.start]:02x} at byte offset "
                                         f"{exc.start}") from None
    try:
        value = json.loads(text, object_pairs_hook=_no_repeated_keys)
    except json.JSONDecodeError as exc:
        raise JsonError("malformed", f"malformed JSON: {exc.msg.removesuffix(' at')}", text, exc.pos) from None
    except _RepeatedKey as exc:
        raise JsonError("repeated_key", str(exc)) from None
    except RecursionError:  # the decoder recursed once per bracket until the interpreter's limit
        raise _too_deep(text, max_depth) from None
    except ValueError as exc:  # an integer beyond sys.get_int_max_str_digits()
        raise JsonError("bad_value", f"value cannot be read ({str(exc)[:160]})") from None
    if _may_be_deep(text, max_depth) and value_depth(value, max_depth) > max_depth:
        raise _too_deep(text, max_depth)
    return value
