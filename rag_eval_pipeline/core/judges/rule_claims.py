"""What the embedded judge judges in an answer: its checkable claims, and the claims no context can
support (a question, the first person singular), as text compared with the context.

Split out of :mod:`~rag_eval_pipeline.core.judges.rule_based` (the judge); the rules are described
there. Sources: FActScore (Min et al., EMNLP 2023) judges declarative atomic facts only; the claims
come from :func:`~rag_eval_pipeline.core.judges.claims.split_claims`.
"""

from __future__ import annotations

import re
import unicodedata

from rag_eval_pipeline.core.judges.claims import split_claims
from rag_eval_pipeline.core.judges.tokens import tokens

#: A claim in the first person singular speaks of the speaker ("I like it", "creo que"): no
#: retrieved context can support it.
#: A word joined to another by a hyphen ("RIG-I", "type-I") is part of a name, not a pronoun.
_FIRST_PERSON = re.compile(r"(?<![\w'])(?<!\w-)"
                           r"(i|i'm|i've|i'd|i'll|me|my|myself|yo|creo que|me gusta|me encanta)"
                           r"(?![\w'])(?!-\w)(?!\.\w)", re.IGNORECASE)  # "i.c.r.": an abbreviation
_FIRST_PERSON_I = re.compile(r"(?:^|[^\w'])i\s+'(?:m|ve|d|ll)\b", re.IGNORECASE)  # tokenised "I 'm"
#: Quoted spans (titles: "I Will Always Love You", «Yo, Claudio»): not the speaker's words.
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|«[^»]*»|‘[^’]*’")


def is_question(claim: str) -> bool:
    """True when ``claim`` (str) ends with a question mark, closing quotes and brackets aside: a
    question states no fact (FActScore counts only declarative atomic facts). Never raises."""
    return claim.rstrip(" \"'»”)").endswith("?")


def checkable_claims(answer: str | None) -> list[str]:
    """The claims of ``answer`` to judge: :func:`split_claims` minus claims with neither a content
    word nor a first-person pronoun ("Yes.", "Sí.", "Absolutely!"), which state nothing. Questions
    stay: they are judged NOT_MENTIONED (a question states no fact the context could support)."""
    return [c for c in split_claims(answer) if tokens(c).content or first_person(c)]


def first_person(claim: str) -> bool:
    """True when ``claim`` speaks in the first person singular ("I think", "my", "creo que"). Not
    first person: words inside quotes (a title, "I Found You"); a capitalised "Me", "My", "Yo" inside
    the sentence (a title or a name: "Show Me Love", "Yo Gotti"); "I" after a capitalised word (a
    numeral: "World War I", "Elizabeth I")."""
    t = _QUOTED.sub(" ", unicodedata.normalize("NFKC", claim).replace("’", "'"))
    if _FIRST_PERSON_I.search(t):
        return True
    for m in _FIRST_PERSON.finditer(t):
        word = m.group(1)
        start = m.start(1)
        before = t[:start].rstrip()
        sentence_start = not before or before[-1] in ".!?¿¡:;(\"'«“-"
        prev = re.findall(r"[^\W\d_]+", before)[-1:] if before else []
        if word[0] == "I" and word[:1] == "I" and (len(word) == 1 or word[1] == "'"):
            if prev and prev[0][:1].isupper() and not sentence_start:
                continue  # "World War I": a numeral
            return True
        if word[:1].isupper() and not sentence_start:
            continue  # "Show Me Love", "Yo Gotti": a title or a name
        return True
    return False


def fixed_reason(claim: str) -> str | None:
    """Why ``claim`` is NOT_MENTIONED whatever the evidence: a one-line reason for a question
    (:func:`is_question`) or a first-person claim (:func:`first_person`), else None. Never raises."""
    if is_question(claim):
        return "a question states no fact the context could support"
    if first_person(claim):
        return ("the claim speaks of the speaker (first person singular): no retrieved context can "
                "support it")
    return None
#: The splitter's own connective when it separates a period's start ("... se cuenta desde X", "...
#: counts from X"): a word the answer did not write, so it is not matched against the context.
_SPLITTER_CONNECTIVE = re.compile(r"\s(?:se cuenta|counts)\s(?=(?:desde|a partir de|from|after)\s)", re.IGNORECASE)


def matching_text(claim: str) -> str:
    """The claim text compared with the context: ``claim`` without the connective the claim splitter
    adds when it separates a period's start ("... se cuenta desde X", "... counts from X"), a word
    the answer did not write. Output: str; never raises."""
    return _SPLITTER_CONNECTIVE.sub(" ", claim)
