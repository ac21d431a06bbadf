"""Direction words: a claim that says a quantity went one way where its sentence says the other.

A closed class of direction words, Spanish and English (comparatives and verbs of change:
"higher" / "lower", "increase" / "decrease", "aumentó" / "disminuyó", "more" / "fewer"), each *up*
or *down*. :func:`direction_flip` finds, for each direction word of the claim, the sentence's
direction word that speaks of the same thing — the one followed (and preceded) by most of the words
that follow (and precede) the claim's direction word — and reports a flip when that word points the
other way; with no such local evidence, nothing is flipped. So "Dexamethasone decreased the risk
of vomiting but increased the risk of bleeding" flips
"Dexamethasone decreased the risk of bleeding" (a swap inside one sentence), and "higher" flips
"lower" although the word encoder scores the two as near-synonyms.

The judge treats a flip as it treats a negation that differs (contradiction on a matching sentence,
never support); a negation that differs *and* a flip cancel ("did not increase" / "reduced").

Not seen: a swap of the compared things ("A is lower than B" / "B is higher than A" reads as a
flip), directions stated without these words ("halved", "doubled"), and words outside the list.
Sources: the polarity cues of NegEx (Chapman et al., 2001) extended to direction, as in the
"increase / decrease" contradiction class of SciFact's claims (Wadden et al., EMNLP 2020).
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rag_eval_pipeline.core.judges.tokens import STOPWORDS, _stemmer

#: Folded word prefixes (a word starting with one is a direction word) and whole folded words, per
#: direction. Prefixes only where the prefix names nothing else.
_UP_PREFIXES = ("increas", "higher", "greater", "larger", "elevat", "enhanc", "exceed", "aument",
                "increment", "crec", "mayor", "superior")
_DOWN_PREFIXES = ("decreas", "lower", "smaller", "fewer", "reduc", "declin", "diminish", "disminu",
                  "descend", "desciend", "menor", "inferior")
_UP_WORDS = frozenset("rise rises rising rose risen raise raises raised raising more mas sube suben subio "
                      "subieron subir".split())
_DOWN_WORDS = frozenset("fall falls falling fell fallen drop drops dropped less menos baja bajan bajaron "
                        "bajar cae caen cayo cayeron".split())
#: How many content words on each side of a direction word tell what it speaks of.
WINDOW = 4

_WORD = re.compile(r"[^\W\d_]+")


def polarity(word: str) -> int:
    """+1 for an *up* direction word, -1 for a *down* one, 0 otherwise. Input: a folded word
    (lower case, accents stripped). Never raises."""
    if word in _UP_WORDS or word.startswith(_UP_PREFIXES):
        return 1
    if word in _DOWN_WORDS or word.startswith(_DOWN_PREFIXES):
        return -1
    return 0


def _fold(text: str) -> str:
    t = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in t if not unicodedata.combining(ch))


@lru_cache(maxsize=20_000)
def _sequence(text: str, language: str) -> tuple[tuple[str, int], ...]:
    """(stem, polarity) of every content or direction word of ``text``, in order."""
    stem = _stemmer(language).stemWord
    out = []
    for w in _WORD.findall(_fold(text)):
        p = polarity(w)
        if p or (len(w) >= 2 and w not in STOPWORDS):
            out.append((stem(w), p))
    return tuple(out)


def _context(seq: tuple[tuple[str, int], ...], i: int) -> tuple[set[str], set[str]]:
    before = {s for s, p in seq[max(0, i - WINDOW):i] if not p}
    after = {s for s, p in seq[i + 1:i + 1 + WINDOW] if not p}
    return before, after


@lru_cache(maxsize=50_000)
def direction_flip(claim: str, sentence: str, language: str) -> str | None:
    """The direction a claim states opposite to its sentence, as "claim word / sentence word", or
    None when there is none (module docstring).

    Input: the claim and the sentence texts and their language ("english" / "spanish", for the
    stems that locate what a direction word speaks of). For each direction word of the claim, the
    sentence's direction words are ranked by how many of the ``WINDOW`` content words after the
    claim word follow them in the sentence too, then by how many of the words before it precede
    them; among the best ranked, one pointing the same way means no flip, else a flip. The best
    must share a word after the claim's direction word, or, sharing none after, at least half of
    the words before it; otherwise the sentence says nothing about that direction (no flip).
    Output: str or None; never raises."""
    cseq = _sequence(claim, language)
    if not any(p for _, p in cseq):  # no direction word in the claim: nothing to flip (the sentence is not read)
        return None
    sseq = _sequence(sentence, language)
    sdirs = [(j, p) for j, (_, p) in enumerate(sseq) if p]
    if not sdirs:
        return None
    for i, (cstem, p) in enumerate(cseq):
        if not p:
            continue
        cb, ca = _context(cseq, i)
        scored = []
        for j, q in sdirs:
            sb, sa = _context(sseq, j)
            # what follows a direction word is what it speaks of ("decreased the risk of X"); what
            # precedes it (often the sentence's shared subject) only breaks ties
            scored.append(((len(ca & sa), len(cb & sb)), j, q))
        best = max(s for s, _, _ in scored)
        # local evidence: a word after the claim's direction word follows the sentence's too, or
        # (nothing after is shared) at least half of the words before it precede the sentence's
        if best[0] == 0 and not (best[1] and 2 * best[1] >= len(cb)):
            continue
        pool = [(j, q) for s, j, q in scored if s == best]
        if all(q != p for _, q in pool):
            return f"{cstem} / {sseq[pool[0][0]][0]}"
    return None
