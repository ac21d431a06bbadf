"""The context side of the embedded judge: candidate evidence sentences of the retrieved chunks, the
names a chunk states, and the claim's recall in its best passage.

Split out of :mod:`~rag_eval_pipeline.core.judges.rule_based` (the judge; rules there).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from rag_eval_pipeline.core.judges.claims import sentence_spans
from rag_eval_pipeline.core.judges.rule_claims import matching_text
from rag_eval_pipeline.core.judges.tokens import (
    CHUNK_CACHE_SIZE,
    Tokens,
    entities,
    language_of,
    stem_word,
    tokens,
)


@dataclass(frozen=True)
class ContextSentence:
    """One candidate evidence span: its chunk's index (``context``), the sentence's index in the chunk,
    its text (an exact substring of the chunk), its tokens, the chunk's text and the words it may
    leave implicit."""

    context: int
    index: int
    text: str
    tokens: Tokens
    chunk: str = ""  # the whole context the sentence comes from (names are looked up there)
    around: frozenset[str] = frozenset()  # words the sentence may leave implicit (context_sentences)


def context_sentences(contexts: list[str], window: int = 1, scope: str = "passage") -> list[ContextSentence]:
    """Candidate evidence spans: every sentence of every context and, with ``window`` = 2, every
    pair of adjacent sentences of one context (an exact substring too, so it can be quoted). Each
    carries ``around``, the words a sentence may leave implicit: with ``scope`` "passage" every word
    of its chunk (the passage is the evidence); with "neighbours" the words of the chunk's first
    sentence and of the sentence before it. Split and tokenised once per chunk text."""
    out = []
    for ci, ctx in enumerate(contexts or []):
        if not ctx:
            continue
        for si, text, toks, near, whole in _chunk_sentences(ctx, window):
            out.append(ContextSentence(ci, si, text, toks, ctx, whole if scope == "passage" else near))
    return out


@lru_cache(maxsize=CHUNK_CACHE_SIZE)  # one entry per context chunk: bounded as tokens.py explains
def _chunk_sentences(ctx: str, window: int):
    spans = sentence_spans(ctx)
    lang = language_of(ctx)  # a sentence without function words takes its chunk's language
    toks = [tokens(ctx[s:e], language_of(ctx[s:e]) or lang) for s, e in spans]
    first = toks[0].words if toks else frozenset()
    whole = frozenset().union(*(t.words for t in toks)) if toks else frozenset()
    out = [(si, ctx[s:e], toks[si], first | (toks[si - 1].words if si else frozenset()), whole)
           for si, (s, e) in enumerate(spans)]
    if window >= 2:
        for si in range(len(spans) - 1):
            s, e = spans[si][0], spans[si + 1][1]
            out.append((si, ctx[s:e], tokens(ctx[s:e], language_of(ctx[s:e]) or lang),
                        first | (toks[si - 1].words if si else frozenset()), whole))
    return tuple(out)


@lru_cache(maxsize=50_000)
def acronyms(text: str) -> frozenset[str]:
    """Initials (folded) of every run of two or more capitalised words of ``text``: "United Kingdom"
    states the name "UK", "Unión Europea" the name "UE"."""
    out = set()
    for run in re.findall(r"(?:[A-ZÁÉÍÓÚÑ][^\W\d_]+(?:\s+(?:of|de|del|the)\s+|\s+)){1,5}[A-ZÁÉÍÓÚÑ][^\W\d_]+", text):
        caps = [w for w in re.findall(r"[^\W\d_]+", run) if w[:1].isupper()]
        if len(caps) >= 2:
            out.add("".join(w[0] for w in caps).casefold())
    return frozenset(out)


@lru_cache(maxsize=50_000)
def chunk_name_stems(chunk: str, language: str) -> frozenset[str]:
    """Stems (``language``) of the names of ``chunk`` (:func:`entities`: capitalised words after its
    first word, acronyms, letter-digit codes). Output: a frozenset of stems; never raises."""
    return frozenset(stem_word(n, language) for n in entities(chunk))


def passage_recall(claim: str, sentences: list[ContextSentence]) -> float:
    """The share of ``claim``'s content tokens (stemmed words, numbers, dates) that its best passage
    states: the highest, over the context chunks, of |claim tokens ∩ chunk tokens| / |claim tokens|,
    the claim tokenised in the chunk's language. A passage, not the pool of every chunk: with many
    chunks the pool states most words of any claim by chance. Input: the claim and the candidate
    sentences (:func:`context_sentences`). Output: a float in [0, 1], 0.0 for a claim with no
    content token or no sentence. Never raises. Source: ROUGE-1 recall (Lin, 2004) of the claim
    against one passage."""
    by_chunk: dict[int, tuple[str, set[str]]] = {}
    for s in sentences:
        lang, toks = by_chunk.setdefault(s.context, (s.tokens.language, set()))
        toks |= s.tokens.content
    text = matching_text(claim)
    best = 0.0
    for lang, toks in by_chunk.values():
        ct = tokens(text, lang).content
        if ct:
            best = max(best, len(ct & toks) / len(ct))
    return best


#: An embedded question ("whether", "si … o no") or a sentence that opens with a purpose infinitive
#: after an optional capitalised heading ("To assess …", "OBJECTIVE To evaluate …", "The aim of this
#: study was to …" is caught by its "whether" or not at all).
_OPEN_QUESTION = re.compile(r"\bwhether\b|^\s*(?:[A-Z]{2,}\s*[:.]?\s+)?To\s+[a-z]+\b")


@lru_cache(maxsize=CHUNK_CACHE_SIZE)
def open_question(text: str) -> bool:
    """True when a context sentence asks rather than states: it holds an embedded question
    ("whether …") or opens with a purpose infinitive ("To assess …", a study's aim). Such a
    sentence takes neither side of a negation or a direction ("To assess whether screening leads to
    improvements" says nothing of whether it does; ConText's hypothetical triggers, Harkema et al.,
    J Biomed Inform 2009). Input: the sentence. Output: bool; never raises."""
    return bool(_OPEN_QUESTION.search(text))
