"""Whether a context sentence states something: a question, or a sentence that asks "whether", does not.

"OBJECTIVE To assess whether screening leads to improvements in vision" says neither that screening
helps nor that it does not, so it can neither support nor contradict a claim about it; the embedded
judge leaves such sentences out as evidence (their words still count for the passage's recall in
the graded support). A concessive "whether or not" / "regardless of whether" ("Mortality fell,
whether or not they smoked") still states its main clause. Spanish: a sentence opened by "¿" or
ending with "?". Source: the hypothetical / question triggers of the ConText algorithm (Harkema et
al., J Biomed Inform 2009), which extends NegEx; FActScore (Min et al., EMNLP 2023) likewise counts
only declarative atomic facts.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WHETHER = re.compile(r"\bwhether\b", re.IGNORECASE)
_CONCESSIVE = re.compile(r"\bwhether\s+or\s+not\b|\b(?:regardless|irrespective)\s+of\s+whether\b", re.IGNORECASE)


@lru_cache(maxsize=50_000)
def asserts(sentence: str) -> bool:
    """False for a sentence that asks instead of stating (module docstring): it ends with "?"
    (closing quotes and brackets aside) or opens with "¿", or it holds "whether" outside a
    concessive "whether or not" / "regardless of whether". True otherwise. Input: one sentence
    (str). Output: bool; never raises."""
    t = (sentence or "").strip()
    if t.rstrip(" \"'»”)").endswith("?") or t.startswith("¿"):
        return False
    return not _WHETHER.search(_CONCESSIVE.sub(" ", t))
