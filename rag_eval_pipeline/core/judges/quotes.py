"""Literal quote verification: is the judge's quote really in the retrieved text?

A literal quote of the context is the condition for a SUPPORTED verdict (attribution to identified
sources, Rashkin et al., Computational Linguistics 2023; ALCE's citation checks, Gao et al., EMNLP 2023);
the project design ("a link is not support") requires that this is checked by code, not taken
from the judge. The check is literal *after* a normalisation that only removes differences of
typography, never of wording:

- Unicode NFKC (full-width forms, ligatures, "…" → "...", non-breaking spaces → spaces);
- removal of invisible characters (soft hyphen, zero-width space/joiners, BOM);
- every quotation mark and apostrophe (' " ‘ ’ ‚ ‛ “ ” „ ‟ « » ‹ › ` ´ ′ ″ 「 」 『 』) → ``'``;
- every dash and minus (‐ ‑ ‒ – — ― − ﹘ ﹣) → ``-``;
- Unicode case folding; every run of whitespace → one space; leading/trailing space removed.

Accents, punctuation other than quotes/dashes, and word order are kept: "ano" does not match "año",
and a quote stitched together with "..." from two places is not found.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from functools import lru_cache

_QUOTES = "'\"‘’‚‛“”„‟«»‹›`´′″「」『』＂＇"
_DASHES = "‐‑‒–—―−﹘﹣－"
_INVISIBLE = "\u00ad\u200b\u200c\u200d\u2060\ufeff"
_TRANSLATE: dict[int, str | None] = {ord(c): "'" for c in _QUOTES}
_TRANSLATE.update({ord(c): "-" for c in _DASHES})
_TRANSLATE.update({ord(c): None for c in _INVISIBLE})
_WS = re.compile(r"\s+")


def normalise_text(s: str | None) -> str:
    """Normalise text for literal comparison (rules in the module docstring).

    Input: a string (None → ""). Output: the normalised string (may be ""). Never raises.
    Idempotent: ``normalise_text(normalise_text(x)) == normalise_text(x)``.
    """
    if not s:
        return ""
    t = unicodedata.normalize("NFKC", s).translate(_TRANSLATE).casefold()
    # casefold can produce characters NFKC would change again (rare); normalise once more.
    t = unicodedata.normalize("NFKC", t).translate(_TRANSLATE)
    return _WS.sub(" ", t).strip()


def quote_in_context(quote: str | None, contexts: Iterable[str | None]) -> bool:
    """True when the normalised ``quote`` is a substring of one normalised context.

    Input: the judge's quote (None, "" or whitespace-only → False) and the retrieved chunk texts
    (None entries are skipped). Output: bool. A quote spanning two chunks is not found (each chunk
    is searched on its own). Never raises. Source: module docstring (a claim cannot be SUPPORTED
    without a literal quote).
    """
    q = normalise_text(quote)
    if not q:
        return False
    return any(q in _normalised_context(c) for c in contexts if c)


@lru_cache(maxsize=4096)
def _normalised_context(text: str) -> str:
    """:func:`normalise_text` of a context, computed once per text: every claim of every answer that
    retrieved it is checked against it (the judge's candidates, then ``judge_runs`` again)."""
    return normalise_text(text)
