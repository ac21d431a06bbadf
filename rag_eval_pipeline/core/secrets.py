"""Scrubbing secrets out of everything that comes back from a live endpoint, before it is stored or shown.

One mechanism for the model judge (its API key, see ``judges/transport.py``) and the systems under test
(their ``headers_from_env`` values, see ``systems/http.py``): :func:`scrub_secret` on a text,
:func:`scrub_reply` on a parsed JSON value (every string at any depth, keys included, and the strings
read one after another, so a secret split over two fields is found too).

What is found, exactly (a secret of fewer than ``MIN_SECRET_CHARS`` characters is ignored):

- the secret as written, in any mix of upper and lower case, with zero-width characters (U+200B-U+200D,
  U+2060, U+FEFF) or soft hyphens (U+00AD) between its characters allowed;
- each character, independently, written as: JSON / JavaScript ``\\u0073`` (either case of hex; a
  surrogate pair above U+FFFF), ``\\u{73}``, Python ``\\x73`` (a character below U+0100) and
  ``\\U00000073``, a backslash before ``/ " ' \\``, URL ``%73`` (each UTF-8 byte; ``%2573`` and further
  ``%25`` layers of repeated URL-encoding; ``+`` for a space), HTML ``&#115;`` / ``&#x73;`` (the ``;``
  optional, leading zeros allowed) and ``&amp; &lt; &gt; &quot; &apos;``;
- the secret's UTF-8 bytes as base64 (standard and URL-safe alphabets, at each of the three byte
  alignments it can have inside a longer encoded text) and as hexadecimal (either case);
- a secret that is itself base64 of readable text (``Basic dXNlcjpwYXNz``) is also looked for decoded
  (``user:pass``), and so is the part after its first ``:`` (the password), when 4+ characters;
- any run of ``PREFIX_CHARS`` (12) or more consecutive characters of a longer secret, in any case (a
  reply cut in the middle of an echoed token), extended to the longest run present.

Not found: other transformations (a reversed, re-ordered or re-encrypted secret, base64 of an escaped
form, a secret spread over non-adjacent strings). A parsed JSON value is scrubbed *after* parsing, so
the escapes JSON itself undoes (``\\u``, ``\\/``) are already plain text there; the escaped forms matter
for raw bodies quoted in error messages.

With ``patterns=True`` (the default) well-known credential shapes are removed as well, whatever the
configured secret: ``Bearer <token>``, ``api key provided: <value>`` / ``api_key=<value>`` and ``sk-...``
tokens. They garble ordinary prose ("the Bearer token field", "sk-learn"), so they are for error and
status texts, never for an answer that parsed. Nothing here imports Dagster.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

#: Shorter strings are not treated as secrets: replacing them would garble ordinary text.
MIN_SECRET_CHARS = 4
#: A run of this many consecutive characters of a longer secret is treated as the secret.
PREFIX_CHARS = 12
#: Encoded forms (base64, hex) shorter than this are not looked for (too likely in ordinary text).
MIN_ENCODED_CHARS = 8

SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"),
    re.compile(r"(?i)(api[ _-]?key(?:\s+provided)?\s*[:=]\s*)[^\s\"',;]+"),
    re.compile(r"()\bsk-[A-Za-z0-9*_.\-]{4,}"),
)
_INVISIBLE = "[\u200b\u200c\u200d\u2060\ufeff\u00ad]*"
_NAMED = {"&": "amp", "<": "lt", ">": "gt", '"': "quot", "'": "apos"}
_BASE64_TEXT = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")


def _char_forms(ch: str) -> list[str]:
    """Regex alternatives for one character of a secret, written plainly or escaped (module docstring)."""
    variants = {ch}
    for v in (ch.lower(), ch.upper()):
        if len(v) == 1:
            variants.add(v)
    alts = []
    for v in sorted(variants):
        code = ord(v)
        alts.append(re.escape(v))
        if code < 0x10000:
            alts.append(rf"\\u(?i:{code:04x})")
        else:
            hi, lo = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
            alts.append(rf"\\u(?i:{hi:04x})\\u(?i:{lo:04x})")
        alts.append(rf"\\u\{{0*(?i:{code:x})\}}")
        alts.append(rf"\\U(?i:{code:08x})")
        if code < 0x100:
            alts.append(rf"\\x(?i:{code:02x})")
        if v in "/\"'\\":
            alts.append(r"\\" + re.escape(v))
        alts.append("".join(rf"%(?:25)*(?i:{b:02x})" for b in v.encode("utf-8")))
        if v == " ":
            alts.append(r"\+")
        alts.append(rf"&#0*{code};?")
        alts.append(rf"&#[xX]0*(?i:{code:x});?")
        if v in _NAMED:
            alts.append(rf"&{_NAMED[v]};")
    return alts


def _encoded_forms(secret: str) -> list[str]:
    """base64 (both alphabets, three alignments) and hex of the secret's UTF-8 bytes (module docstring)."""
    raw = secret.encode("utf-8")
    forms = {raw.hex(), raw.hex().upper()}
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw).decode("ascii")
        # keep only the characters made of the secret's bits alone: not the padding's, not a neighbour's
        inner = enc[-(-8 * pad // 6):(8 * (pad + len(raw))) // 6]
        forms.update({inner, inner.replace("+", "-").replace("/", "_")})
    return sorted((f for f in forms if len(f) >= MIN_ENCODED_CHARS), key=len, reverse=True)


@lru_cache(maxsize=64)
def _matchers(secret: str) -> tuple[re.Pattern, re.Pattern | None]:
    """(the secret plainly or escaped, its encoded forms)."""
    whole = re.compile(_INVISIBLE.join("(?:" + "|".join(_char_forms(ch)) + ")" for ch in secret))
    encoded = _encoded_forms(secret)
    # a base64 text that ends with the secret: its last character and padding go too
    enc = (re.compile("(?:" + "|".join(map(re.escape, encoded)) + ")(?:[A-Za-z0-9+/_-]?={1,2})?")
           if encoded else None)
    return whole, enc


def _same(a: str, b: str) -> bool:
    return a == b or a.lower() == b.lower()


def _run_spans(text: str, secret: str) -> list[tuple[int, int]]:
    """Spans of ``text`` holding PREFIX_CHARS+ consecutive characters of ``secret`` (any case), each
    extended to the longest run that lines up with the secret.

    Any such run holds one whole block of the secret cut at multiples of PREFIX_CHARS // 2, so only the
    blocks are searched for (``str.find``), then each hit is extended both ways."""
    if len(secret) <= PREFIX_CHARS:
        return []
    size = PREFIX_CHARS // 2
    lowered = text.lower()
    same_length = len(lowered) == len(text)
    spans = []
    for a in range(0, len(secret) - size + 1, size):
        block = secret[a:a + size].lower()
        if same_length:
            hits = []
            k = lowered.find(block)
            while k >= 0:
                hits.append(k)
                k = lowered.find(block, k + 1)
        else:
            hits = [m.start() for m in re.finditer(re.escape(block), text, re.IGNORECASE)]
        for k in hits:
            start, end, i, j = k, k + size, a, a + size
            while start > 0 and i > 0 and _same(text[start - 1], secret[i - 1]):
                start, i = start - 1, i - 1
            while end < len(text) and j < len(secret) and _same(text[end], secret[j]):
                end, j = end + 1, j + 1
            if end - start >= PREFIX_CHARS:
                spans.append((start, end))
    return spans


def _decoded_forms(secret: str) -> list[str]:
    """A base64 secret's readable decoded text and, for ``user:pass``, the password (module docstring)."""
    out = []
    for token in _BASE64_TEXT.findall(secret):
        body = token.rstrip("=")
        for alphabet in (None, b"-_"):
            try:
                raw = base64.b64decode(body + "=" * (-len(body) % 4), altchars=alphabet, validate=True)
                text = raw.decode("utf-8")
            except (binascii.Error, ValueError):
                continue
            if text and text.isprintable():
                out.append(text)
                out.append(text.partition(":")[2])
    return out


def _secrets(secret: str | Iterable[str] | None) -> list[str]:
    if not secret:
        return []
    items = [secret] if isinstance(secret, str) else list(secret)
    items = [s for s in items if isinstance(s, str) and s]
    items += [d for s in items for d in _decoded_forms(s)]
    # longest first: "Bearer sk-abc" goes before its part "sk-abc"
    return sorted({s for s in items if len(s) >= MIN_SECRET_CHARS}, key=len, reverse=True)


def secret_spans(text: str, secrets: list[str]) -> list[tuple[int, int]]:
    """Where any of ``secrets`` (already expanded by ``_secrets``) occurs in ``text``, in any form of the
    module docstring: sorted, merged ``(start, end)`` character offsets. Never raises."""
    spans: list[tuple[int, int]] = []
    for sec in secrets:
        whole, enc = _matchers(sec)
        spans += [m.span() for m in whole.finditer(text)]
        if enc is not None:
            spans += [m.span() for m in enc.finditer(text)]
        spans += _run_spans(text, sec)
    return _merge(spans)


def _replace(s: str, spans: list[tuple[int, int]], replacement: str) -> str:
    out, pos = [], 0
    for start, end in spans:
        out += [s[pos:start], replacement]
        pos = end
    return "".join(out) + s[pos:]


def _merge(spans: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _scrub(s: str, secrets: list[str], replacement: str, patterns: bool,
           extra: list[tuple[int, int]] | None = None) -> str:
    spans = secret_spans(s, secrets) if secrets else []
    if extra:
        spans = _merge(spans + extra)
    s = _replace(s, spans, replacement) if spans else s
    if patterns:
        for pat in SECRET_PATTERNS:
            s = pat.sub(lambda m: m.group(1) + replacement, s)
    return s


def scrub_secret(text: Any, secret: str | Iterable[str] | None = None, *, replacement: str = "***",
                 patterns: bool = True) -> str:
    """Return ``str(text)`` with every secret replaced by ``replacement``.

    Inputs: any value (None -> ""); ``secret``: one secret or several (each of 4+ characters; shorter
    ones are ignored); ``replacement``; ``patterns``: also remove the well-known credential shapes
    (``Bearer <token>``, ``api_key=<value>``, ``sk-...``) whatever the secret; use it on error and status
    texts only, it garbles prose. Output: str. Removes each secret in exactly the forms the module
    docstring lists (as written in any case; per-character JSON, JavaScript, Python, URL, repeated-URL
    and HTML escapes; base64, base64url and hex of the whole secret; a base64 secret decoded; any run of
    12+ of its characters); other transformations are not found. Never raises.
    """
    s = "" if text is None else str(text)
    return _scrub(s, _secrets(secret), replacement, patterns)


def _strings(node: Any, out: list[tuple[str, bool]]) -> None:
    """Every string of a JSON value in document order (a key before its value), with whether it is a key."""
    if isinstance(node, str):
        out.append((node, False))
    elif isinstance(node, dict):
        for k, v in node.items():
            if isinstance(k, str):
                out.append((k, True))
            _strings(v, out)
    elif isinstance(node, list):
        for v in node:
            _strings(v, out)


def _split_spans(items: list[tuple[str, bool]], secrets: list[str]) -> dict[int, list[tuple[int, int]]]:
    """Spans of secrets found only when consecutive strings are read as one text: once over every string,
    once over the values alone (keys skipped); mapped back to (string index -> spans in that string)."""
    strings = [s for s, _ in items]
    found: dict[int, list[tuple[int, int]]] = {}
    for members in (range(len(strings)), [i for i, (_, key) in enumerate(items) if not key]):
        members = list(members)
        if len(members) < 2:
            continue
        starts, pos = [], 0
        for i in members:
            starts.append(pos)
            pos += len(strings[i])
        text = "".join(strings[i] for i in members)
        for start, end in secret_spans(text, secrets):
            for j, i in enumerate(members):
                lo, hi = starts[j], starts[j] + len(strings[i])
                if start < hi and end > lo and not (start >= lo and end <= hi):  # crosses a boundary
                    found.setdefault(i, []).append((max(start, lo) - lo, min(end, hi) - lo))
    return found


def scrub_reply(obj: Any, secret: str | Iterable[str] | None = None, *, replacement: str = "***",
                patterns: bool = True) -> Any:
    """A parsed JSON value with :func:`scrub_secret` applied to every string (values and keys), at any depth.

    Input: any JSON value (dict, list, str, number, bool, None); parse it with ``core.jsonio.loads``
    (depth-limited) first. Output: a copy of the same shape; numbers and booleans unchanged. A key
    that holds a secret is scrubbed too (a server can echo a token as a key); when two keys of one object
    scrub to the same text, the later ones get ``#2``, ``#3``... appended, so no value is lost. The
    strings are also read one after another (all of them, then the values alone, in document order),
    and a secret split over neighbouring strings (``{"a": "tok_9f", "b": "8e7d..."}``) is removed from
    each part. Never raises.
    """
    secrets = _secrets(secret)
    extra: dict[int, list[tuple[int, int]]] = {}
    if secrets:
        items: list[tuple[str, bool]] = []
        _strings(obj, items)
        extra = _split_spans(items, secrets)
    counter = iter(range(1 << 62))

    def walk(node: Any) -> Any:
        if isinstance(node, str):
            return _scrub(node, secrets, replacement, patterns, extra.get(next(counter)))
        if isinstance(node, dict):
            out: dict = {}
            for k, v in node.items():
                key = walk(k) if isinstance(k, str) else k
                value = walk(v)
                if key in out:
                    n = 2
                    while f"{key}#{n}" in out:
                        n += 1
                    key = f"{key}#{n}"
                out[key] = value
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    return walk(obj)
