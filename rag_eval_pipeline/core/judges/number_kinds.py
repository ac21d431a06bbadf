"""What a number counts: two numbers conflict only when they are of the same kind.

A number's *kind* is "name" when a hyphen joins it to a word ("kinesin-8", "IL-6", "3-kinase": part
of a name, never in conflict), when it stands in a hyphenated word that starts with a letter
("miR-142-5P"), or when it follows an acronym ("BRCA 1", "COVID 19"; not a year: "WHO 2019");
"year" for a whole number from 1000 to 2100 (and the year of a date), else the stem of the first
content word after it in its clause ("12 weeks" → "week", "30 %" → "percent",
"3 million inhabitants" → "inhabit"), else None (a bare number: "the total was 7"). A claim's number
that its sentence lacks conflicts with a sentence number of its own kind that the claim lacks; a
bare claim number conflicts with any number the claim lacks, as before kinds existed. So "12 weeks"
conflicts with "52 weeks" and 1928 with 1932, but a year does not conflict with the counts of a
number-dense sentence, and the 8 of "kinesin-8 protein" does not conflict with the 5 of "kinesin-5
family". Source: quantity alignment by the quantity's unit and counted noun, as in quantitative
fact checking (Roy, Vieira & Roth, TACL 2015, "Reasoning about quantities in natural language").
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_eval_pipeline.core.judges.tokens import _TOKEN, STOPWORDS, _fold, _stemmer, canonical_number

#: A number joined to a letter by a hyphen, before or after it (in the text as written).
_NAMED = re.compile(r"(?<=[^\W\d_])-(\d+)(?![.,]?\d)|(?<![\d.,])(\d+)-(?=[^\W\d_])")
#: A number of one to three digits after an acronym and a space ("BRCA 1", "COVID 19"): a name's
#: number, as with a hyphen (a four-digit year after an acronym stays a year: "WHO 2019").
_ACRONYM_NUMBER = re.compile(r"\b[A-Z][A-Z0-9]+\s(\d{1,3})\b(?![.,]?\d)")
#: A hyphenated word that starts with a letter ("miR-142-5P"): every number in it is the name's.
_CHAIN = re.compile(r"\b[^\W\d_]\w*(?:-\w+)+")
_DIGITS = re.compile(r"\d+")
#: How many tokens after a number are searched for the word it counts (stopwords skipped).
LOOKAHEAD = 3


def _year(n: str) -> bool:
    return n.isdigit() and len(n) == 4 and 1000 <= int(n) <= 2100


@lru_cache(maxsize=50_000)
def number_kinds(text: str, language: str) -> dict[str, frozenset[str | None]]:
    """{canonical number: the kinds it has in ``text``} (module docstring). Input: a text and its
    language ("english" / "spanish", for the stemmer). Dates give their year token kind "year".
    Output: a dict (empty when the text has no number); never raises."""
    stem = _stemmer(language).stemWord
    matches = list(_TOKEN.finditer(_fold(text)))
    named = {canonical_number(a or b) for a, b in _NAMED.findall(text)} | {
        canonical_number(n) for n in _ACRONYM_NUMBER.findall(text)} | {
        canonical_number(n) for chain in _CHAIN.findall(text) for n in _DIGITS.findall(chain)}
    out: dict[str, set[str | None]] = {}
    for i, m in enumerate(matches):
        if m.group("date") is not None:
            tok = m.group("date")
            if tok.startswith("d"):
                out.setdefault(tok[1:5], set()).add("year")
            continue
        if m.group("num") is None:
            continue
        n = canonical_number(m.group("num"))
        kind: str | None = None
        if n in named:
            kind = "name"  # "kinesin-8", "IL-6", "3-kinase": part of a name, not a quantity
        elif _year(n):
            kind = "year"
        else:
            for nxt in matches[i + 1:i + 1 + LOOKAHEAD]:
                if nxt.group("punct") is not None or nxt.group("num") is not None or nxt.group("date") is not None:
                    break
                w = nxt.group("word") or nxt.group("code")
                if w and len(w) >= 2 and w not in STOPWORDS:
                    kind = stem(w)
                    break
        out.setdefault(n, set()).add(kind)
    return {n: frozenset(k) for n, k in out.items()}


def kinds_conflict(claim: str, sentence: str, language: str, claim_numbers: frozenset[str],
                   sentence_numbers: frozenset[str]) -> bool:
    """True when a number of the claim that the sentence lacks meets, in the sentence, a number of
    the same kind that the claim lacks (a bare claim number: any number the claim lacks; a number
    of a name conflicts with nothing and nothing conflicts with it). Input:
    the two texts, their language and their number tokens
    (:class:`~rag_eval_pipeline.core.judges.tokens.Tokens` ``numbers``). Output: bool; never raises."""
    missing = claim_numbers - sentence_numbers
    others = sentence_numbers - claim_numbers
    if not missing or not others:
        return False
    ck = number_kinds(claim, language)
    sk = number_kinds(sentence, language)
    other_kinds: set[str | None] = set()
    for n in others:
        other_kinds |= sk.get(n, frozenset({None}))
    other_kinds.discard("name")
    for n in missing:
        kinds = ck.get(n, frozenset({None})) - {"name"}
        if None in kinds or kinds & other_kinds:
            return True
    return False
