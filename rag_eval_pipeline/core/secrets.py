"""Scrubbing secrets out of everything that comes back from a live endpoint, before it is stored or shown.

One mechanism for the model judge (its API key, see ``judges/transport.py``) and the systems under test
(their ``headers_from_env`` values, see ``systems/http.py``): :func:`scrub_secret` on a text,
:func:`scrub_reply` on a parsed JSON value (every string at any depth, keys included).

A secret is found however it was written back: as is, and with any of its characters escaped the ways
a server can echo it: JSON ``\\u0073`` (either case of hex), Python ``\\x73``, URL ``%73`` and HTML
``&#115;`` / ``&#x73;``. A parsed JSON value is scrubbed *after* parsing, so the escapes JSON itself
undoes (``\\u``, ``\\/``) are already plain text there; the escaped forms matter for raw bodies quoted in
error messages. With ``patterns=True`` (the default) well-known credential shapes are removed as well:
``Bearer <token>``, ``api key provided: <value>`` / ``api_key=<value>`` and ``sk-...`` tokens.
Nothing here imports Dagster.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

#: Shorter strings are not treated as secrets: replacing them would garble ordinary text.
MIN_SECRET_CHARS = 4

SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"),
    re.compile(r"(?i)(api[ _-]?key(?:\s+provided)?\s*[:=]\s*)[^\s\"',;]+"),
    re.compile(r"()\bsk-[A-Za-z0-9*_.\-]{4,}"),
)
_ESCAPE_STARTS = ("\\", "%", "&")


@lru_cache(maxsize=64)
def _escaped_form(secret: str) -> re.Pattern:
    """A pattern matching ``secret`` with any subset of its characters escaped (module docstring)."""
    parts = []
    for ch in secret:
        code = ord(ch)
        alts = [re.escape(ch)]
        if code < 0x10000:
            alts.append(rf"\\u(?i:{code:04x})")
        if code < 0x100:
            alts.append(rf"\\x(?i:{code:02x})")
            alts.append(rf"%(?i:{code:02x})")
        alts.append(rf"&#0*{code};")
        alts.append(rf"&#[xX]0*(?i:{code:x});")
        parts.append("(?:" + "|".join(alts) + ")")
    return re.compile("".join(parts))


def _secrets(secret: str | Iterable[str] | None) -> list[str]:
    if not secret:
        return []
    items = [secret] if isinstance(secret, str) else list(secret)
    # longest first: "Bearer sk-abc" goes before its part "sk-abc"
    return sorted({s for s in items if s and len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def scrub_secret(text: Any, secret: str | Iterable[str] | None = None, *, replacement: str = "***",
                 patterns: bool = True) -> str:
    """Return ``str(text)`` with every secret replaced by ``replacement``.

    Inputs: any value (None -> ""); ``secret``: one secret or several (each of 4+ characters; shorter
    ones are ignored); ``replacement``; ``patterns``: also remove the well-known credential shapes
    (module docstring). Output: str. Removes each secret as written and in every escaping of the module
    docstring. Never raises.
    """
    s = "" if text is None else str(text)
    for sec in _secrets(secret):
        s = s.replace(sec, replacement)
        if any(c in s for c in _ESCAPE_STARTS):
            s = _escaped_form(sec).sub(replacement, s)
    if patterns:
        for pat in SECRET_PATTERNS:
            s = pat.sub(lambda m: m.group(1) + replacement, s)
    return s


def scrub_reply(obj: Any, secret: str | Iterable[str] | None = None, *, replacement: str = "***",
                patterns: bool = True) -> Any:
    """A parsed JSON value with :func:`scrub_secret` applied to every string (values and keys), at any depth.

    Input: any JSON value (dict, list, str, number, bool, None); parse it with ``core.jsonio.loads``
    (depth-limited) first. Output: a copy of the same shape; numbers and booleans unchanged. A key
    that holds a secret is scrubbed too (a server can echo a token as a key). Never raises.
    """
    secrets = _secrets(secret)

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return scrub_secret(node, secrets, replacement=replacement, patterns=patterns)
        if isinstance(node, dict):
            return {(walk(k) if isinstance(k, str) else k): walk(v) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(obj)
