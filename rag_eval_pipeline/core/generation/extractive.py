"""A deterministic extractive answerer: the generator of the built-in reference RAG system.

It writes nothing of its own. Given a question and the retrieved chunks (best first), it splits the
chunks into sentences, scores each sentence by lexical overlap with the question and either returns
the best sentence(s) **verbatim** (so every quote taken from the answer is literally in the
retrieved context) or abstains.

Definitions (version "extractive-v1"):

* Content terms of a text: ``bm25s``' tokenisation -- lower-case, tokens matching
  ``(?u)\\b\\w\\w+\\b``, stopwords removed, Snowball-stemmed (PyStemmer); taken as a set.
  Stopwords ("auto", the default): ``bm25s``' NLTK-derived list for the language ("en_plus" for
  English, whose short "en" list keeps "what", "how", ...; "es" for Spanish, ...) plus the
  interrogatives that list lacks (``QUESTION_WORDS``: e.g. "how", "many"; "cuántos", "dónde"), which
  a question always has and an answer sentence rarely repeats.
* Evidence of a sentence s for question q: ``|terms(q) & terms(s)| / |terms(q)|``, in [0, 1]
  (the share of the question's content terms the sentence covers; unweighted). 0 when the question
  has no content term.
* The best sentence maximises evidence; ties go to the higher-ranked chunk, then the earlier
  sentence. The answer's evidence score is the best sentence's evidence.
* Decision: "abstain" when evidence < ``abstain_threshold`` (also when nothing was retrieved),
  otherwise "answer". With ``max_sentences`` > 1, further sentences are added greedily, each the one
  covering most question terms not yet covered (at least one), same tie rule; they do not change
  the evidence score.
* Sentences: a chunk is cut after ``.``, ``!``, ``?`` or ``…`` (plus closing quotes/brackets) when
  whitespace and an upper-case letter, digit or opening quote/bracket/``¿``/``¡`` follow, and at
  every line break. Abbreviations before a capitalised word ("Dr. Smith") are cut too.

This answerer never produces the decision "clarify": it does not detect ambiguous questions, so a
question that needs clarification is answered or abstained on like any other, and the decision
metrics count that against it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from rag_eval_pipeline.core.errors import ConfigError

GENERATOR_VERSION = "extractive-v1"

# Snowball language -> bm25s stopword list used by stopwords="auto"
AUTO_STOPWORDS = {
    "english": "en_plus", "spanish": "es", "german": "de", "french": "fr", "dutch": "nl",
    "portuguese": "pt", "italian": "it", "russian": "ru", "swedish": "sv", "norwegian": "no",
    "turkish": "tr", "danish": "da",
}
# interrogatives missing from those lists, removed with the stopwords (lower-case, before stemming)
QUESTION_WORDS = {
    "english": frozenset({"how", "many", "much", "whose", "whom"}),
    "spanish": frozenset({
        "qué", "cuál", "cuáles", "cual", "cuales", "cuánto", "cuánta", "cuántos", "cuántas", "cuanto",
        "cuanta", "cuantos", "cuantas", "cuándo", "cuando", "dónde", "donde", "adónde", "cómo",
        "quién", "quiénes", "quien", "quienes",
    }),
}

_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_SENT_BREAK = re.compile(
    r"[.!?…]+[\"'”’»)\]]*(?=\s+[\"'“‘«(\[¿¡]?[0-9A-ZÀ-ÖØ-ÞĀ-ſΑ-ΩА-Я])|\n"
)


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans of ``text``: list of (start, end) with ``text[start:end]`` stripped and non-empty.

    Rule: see the module docstring. Input any str (None or "" gives []).
    """
    if not text:
        return []
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_BREAK.finditer(text):
        spans.append((start, m.end()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for a, b in spans:
        seg = text[a:b]
        lead = len(seg) - len(seg.lstrip())
        trail = len(seg.rstrip())
        if trail > lead:
            out.append((a + lead, a + trail))
    return out


class TermExtractor:
    """Content terms of a text: ``bm25s`` tokenisation, stopwords removed, Snowball stemming.

    ``language``: PyStemmer algorithm name or None (no stemming); ``stopwords``: "auto" (see the
    module docstring), a ``bm25s`` list name ("en", "es", ...), a list of words, or None (keep every token). Raises
    ConfigError for unknown names.
    """

    def __init__(self, language: str | None = "english", stopwords: str | list[str] | None = "auto"):
        import bm25s.tokenization

        self._stemmer = None
        if language is not None:
            import Stemmer

            try:
                self._stemmer = Stemmer.Stemmer(language)
            except KeyError as exc:
                raise ConfigError(f"extractive: no Snowball stemmer for language {language!r}") from exc
        extra: frozenset[str] = frozenset()
        if stopwords == "auto":
            stopwords = AUTO_STOPWORDS.get(language) if language else None
            extra = QUESTION_WORDS.get(language, frozenset()) if language else frozenset()
        try:
            self._stop = frozenset(bm25s.tokenization._infer_stopwords(stopwords)) | extra
        except ValueError as exc:
            raise ConfigError(f"extractive: stopwords {stopwords!r} not known to bm25s") from exc

    def terms(self, text: str) -> frozenset[str]:
        """Set of stemmed content terms of ``text`` (possibly empty)."""
        toks = [t for t in _TOKEN.findall(text.lower()) if t not in self._stop]
        if self._stemmer is not None:
            toks = self._stemmer.stemWords(toks)
        return frozenset(toks)


@dataclass(frozen=True)
class ExtractiveAnswer:
    """Output of :meth:`ExtractiveAnswerer.answer`.

    decision: "answer" or "abstain". answer: the chosen sentences joined by one space (verbatim
    substrings of chunk texts), None on abstain. citations: chunk ids of the chosen sentences, in
    answer order, unique; [] on abstain. evidence: best sentence's evidence in [0, 1].
    best_sentence: (chunk_id, sentence) of the best sentence even on abstain, None if there is none.
    """

    decision: str
    answer: str | None
    citations: list[str] = field(default_factory=list)
    evidence: float = 0.0
    best_sentence: tuple[str, str] | None = None


class ExtractiveAnswerer:
    """Deterministic extractive answerer (see the module docstring for every definition).

    Parameters: abstain_threshold in [0, 1] (default 0.4); context_k >= 1, how many of the
    retrieved chunks (from the top) are read (default 3); max_sentences >= 1 (default 1);
    language / stopwords as in :class:`TermExtractor`. Raises ConfigError for values out of range.
    """

    version = GENERATOR_VERSION

    def __init__(
        self,
        abstain_threshold: float = 0.4,
        context_k: int = 3,
        max_sentences: int = 1,
        language: str | None = "english",
        stopwords: str | list[str] | None = "auto",
    ):
        if not isinstance(abstain_threshold, (int, float)) or not 0 <= abstain_threshold <= 1:
            raise ConfigError(f"extractive: abstain_threshold must be in [0, 1], got {abstain_threshold!r}")
        if not isinstance(context_k, int) or context_k < 1:
            raise ConfigError(f"extractive: context_k must be an integer >= 1, got {context_k!r}")
        if not isinstance(max_sentences, int) or max_sentences < 1:
            raise ConfigError(f"extractive: max_sentences must be an integer >= 1, got {max_sentences!r}")
        self.abstain_threshold = float(abstain_threshold)
        self.context_k = context_k
        self.max_sentences = max_sentences
        self._terms = TermExtractor(language, stopwords)

    def answer(self, question: str, chunks: Sequence[tuple[str, str]]) -> ExtractiveAnswer:
        """Answer ``question`` from ``chunks`` = [(chunk_id, text), ...] in rank order (best first).

        Only the first ``context_k`` chunks are read. Returns an :class:`ExtractiveAnswer`; decision
        "abstain" when no chunk is given, the question has no content term, or the best evidence is
        below ``abstain_threshold``. Never raises for well-typed input.
        """
        q_terms = self._terms.terms(question or "")
        cands = []  # (chunk_rank, sentence_pos, chunk_id, sentence, terms)
        for rank, (chunk_id, text) in enumerate(chunks[: self.context_k]):
            for pos, (a, b) in enumerate(split_sentences(text or "")):
                sent = text[a:b]
                cands.append((rank, pos, chunk_id, sent, self._terms.terms(sent) & q_terms))
        if not cands or not q_terms:
            return ExtractiveAnswer("abstain", None, [], 0.0, (cands[0][2], cands[0][3]) if cands else None)
        n_q = len(q_terms)
        # max() keeps the first of equal keys: candidates are in (chunk rank, position) order
        best = max(cands, key=lambda c: len(c[4]))
        evidence = len(best[4]) / n_q
        if evidence < self.abstain_threshold:
            return ExtractiveAnswer("abstain", None, [], evidence, (best[2], best[3]))
        chosen = [best]
        covered = set(best[4])
        while len(chosen) < self.max_sentences:
            gain, nxt = 0, None
            for c in cands:
                g = len(c[4] - covered)
                if g > gain:
                    gain, nxt = g, c
            if nxt is None:
                break
            chosen.append(nxt)
            covered |= nxt[4]
        citations = list(dict.fromkeys(c[2] for c in chosen))
        return ExtractiveAnswer(
            "answer", " ".join(c[3] for c in chosen), citations, evidence, (best[2], best[3])
        )
