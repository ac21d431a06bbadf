"""Facts swapped inside one context sentence: which name a number belongs to.

A context sentence that joins two facts ("Acme was founded in 1985 and Globex in 1990") holds every
word and number of a claim that swaps them ("Acme was founded in 1990"), so word and number recall
alone read it as support. The sentence is split into its facts by the claim splitter
(:func:`~rag_eval_pipeline.core.judges.coordination.split_coordinated`: coordination, gapping,
relatives, with the subject carried into each), and the claim's numbers and names must be stated
together by one of them: "Globex was founded in 1990" has 1990 but not Acme, "Acme was founded in
1985" has Acme with another number. Names are bound (words the context sentence capitalises,
stopwords aside); a claim that names none is bound by its words that tell the sentence's facts
apart, those some of its facts state and others do not ("The museum opens at 9 and closes at 5":
"closes" is the second fact's, so "The museum closes at 9" takes the first fact's number; rule
version 9), when one of the facts states all the claim's numbers (a claim whose numbers several
facts state joins them, as a list item split badly does: "Ten-pin bowling are the most nine-pin"
against "… include ten-pin, nine-pin … and five-pin bowling" is not bound). Not every content word
is bound, and a claim is bound only when one fact states all its binding words, so that a fact the
splitter could not make self-contained costs nothing.

Source: the decomposition of text into atomic facts before verification, FActScore (Min et al.,
EMNLP 2023), applied to the evidence side as well as the claim.
"""

from __future__ import annotations

import re
from functools import lru_cache

from rag_eval_pipeline.core.judges.morphology import is_number
from rag_eval_pipeline.core.judges.number_kinds import number_kinds
from rag_eval_pipeline.core.judges.tokens import STOPWORDS, TEXT_CACHE_SIZE, surface_words, tokens

_WORD = re.compile(r"[^\W_]+")
#: A fact with more numbers than this is a statistic ("1.82; 95% CI, 1.07-3.08"), whose numbers
#: a claim quotes in pieces: such a sentence is not checked.
MAX_FACT_NUMBERS = 2


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def sentence_facts(text: str, language: str) -> tuple[tuple[frozenset[str], frozenset[str]], ...]:
    """The facts of a context sentence as (numbers, folded surface words) pairs, one per claim of
    :func:`~rag_eval_pipeline.core.judges.coordination.split_coordinated` (one pair when it does
    not split). Input: the sentence and its language ("spanish", "english", ...). Cached; never
    raises."""
    from rag_eval_pipeline.core.judges.coordination import split_coordinated

    return tuple((tokens(p, language).numbers, surface_words(p)) for p in split_coordinated(text))


def _flat(text: str) -> str:
    return " ".join(text.split()).strip(" .;,!?…").casefold()


def capitalised(text: str) -> frozenset[str]:
    """Folded words that ``text`` writes with a capital (any position), stopwords left out: the
    names of a context sentence. Output: frozenset of str; never raises."""
    return frozenset(w for w in surface_words(" ".join(m.group() for m in _WORD.finditer(text)
                                                        if m.group()[:1].isupper()))
                     if w not in STOPWORDS)


def telling_words(claim_words: frozenset[str],
                  facts: tuple[tuple[frozenset[str], frozenset[str]], ...]) -> frozenset[str]:
    """The claim's words that tell the sentence's facts apart: stated by some of its facts but not by
    all, stopwords and number words left out ("closes" in "The museum opens at 9 and closes at 5":
    the second fact's; "museum" is in both). They bind a claim that names nothing the sentence
    capitalises. Input: the claim's folded surface words and :func:`sentence_facts`. Output:
    frozenset of str (empty when none); never raises."""
    if not facts:
        return frozenset()
    every = frozenset.intersection(*(w for _, w in facts))
    some = frozenset.union(*(w for _, w in facts))
    return frozenset(w for w in claim_words & some - every
                     if w not in STOPWORDS and not is_number(w) and not any(ch.isdigit() for ch in w))


def swapped(claim_text: str, claim_numbers: frozenset[str], sentence_text: str, language: str) -> bool:
    """True when the context sentence states the claim's numbers and names but no one of its facts
    states them together, and a fact that names them all gives another number (module docstring).
    Input: the claim's text and canonical numbers, the sentence's text and language. Output: bool;
    False when the claim has no number but a name's ("IL-1"; :mod:`number_kinds`), neither a name
    of the sentence nor a word that tells its facts apart (:func:`telling_words`, used only when
    the claim names nothing the sentence capitalises), is a verbatim part of the sentence (a quote
    cut at a semicolon may span two of its facts), or the sentence is one fact."""
    kinds = number_kinds(claim_text, language)
    claim_numbers = frozenset(n for n in claim_numbers if kinds.get(n) != frozenset({"name"}))
    if not claim_numbers or _flat(claim_text) in _flat(sentence_text):
        return False  # a name's number ("IL-1") binds nothing; a verbatim quote swaps nothing
    claim_words = surface_words(claim_text)
    names = claim_words & capitalised(sentence_text)
    facts = sentence_facts(sentence_text, language)
    if len(facts) < 2 or any(len(nums) > MAX_FACT_NUMBERS for nums, _ in facts):
        return False  # one fact, or a fact of statistics (estimates, intervals, p-values): not bound
    if not names:
        # bound by the words that tell the facts apart, when one fact states all the claim's numbers
        # (a claim whose numbers are spread over several facts joins them: a list, a summary)
        names = telling_words(claim_words, facts)
        if not names or not any(claim_numbers <= nums for nums, _ in facts):
            return False
    if any(claim_numbers <= nums and names <= words for nums, words in facts):
        return False
    return any(names <= words and not claim_numbers <= nums and nums - claim_numbers for nums, words in facts)
