"""Content tokens of a claim or a context sentence, as the embedded judge compares them.

NFKC, accents stripped, case folded, "n't" → " not"; dates, numbers in words and units rewritten by
:func:`~rag_eval_pipeline.core.judges.numbers.normalise_quantities`; words of 2+ letters not in
:data:`STOPWORDS` or :data:`NEGATIONS`, stemmed with Snowball (PyStemmer, Porter's Snowball
algorithms for Spanish and English) in the text's language; numbers as in :func:`canonical_number`
and dates with their year and month; each Han/kana character a token; NegEx-style negation scope
(Chapman et al. 2001). Also the names of a text (:func:`entities`) and its plain words.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from rag_eval_pipeline.core.judges.numbers import canonical_number, normalise_quantities

#: Entries kept by the per-text caches below (least recently used first out). A cache entry of a whole
#: context chunk (:func:`surface_words`) weighs ~5 KB, one of a sentence or claim (:func:`tokens`) ~1 KB:
#: at 200,000 entries each they held ~1.5 GB once a suite had judged 40,000 questions (bench/bench_scale.py,
#: the judge step's peak memory growing with the number of distinct chunks judged). These sizes keep the
#: reuse that matters, within one answer and between the systems' answers to one question (judged one after
#: the other: core/judging.py), in ~60 MB.
TEXT_CACHE_SIZE = 32_768
CHUNK_CACHE_SIZE = 4_096

#: Tokens after a negation word that it negates, stopping at clause punctuation (NegEx's window:
#: Chapman et al., "A simple algorithm for identifying negated findings and diseases in discharge
#: summaries", J. Biomed. Inform. 34(5), 2001).
NEGATION_SCOPE = 5

#: Function words (accents stripped, case folded) ignored when matching: Spanish and English.
STOPWORDS: frozenset[str] = frozenset(
    """
    a al algo algun alguna algunas alguno algunos ante antes aquel aquella aquellas aquellos aqui
    asi aun cada como con contra cual cuales cuando cuanto de del desde donde durante e el ella
    ellas ello ellos en entre era eran eres es esa esas ese eso esos esta estaba estaban estado
    estan estar estas este esto estos estoy fue fueron fui ha habia habian haber han has hasta hay
    he la las le les lo los mas me mediante mi mis mucho muchos muy nos nosotros o os otra otras
    otro otros para pero poco por porque pues que quien quienes se sea sean segun ser si sido
    siempre sobre sois somos son soy su sus suya suyo tal tambien tan tanto te tenia tiene tienen
    tras tu tus u un una unas uno unos usted ustedes vosotros y ya yo
    about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up upon very was we were what when where
    which while who whom whose why will with would you your yours yourself yourselves
    yes sure ok okay well oh si claro vale bueno yeah yep really indeed absolutely definitely
    exactly actually basically wow haha lol hmm um uh
    """.split()
)
#: Negation words (accents stripped, case folded); polarity = any of them present.
NEGATIONS: frozenset[str] = frozenset(
    """
    no not never none nobody nothing neither nor without cannot
    nunca jamas sin ningun ninguno ninguna ningunos ningunas nadie nada ni tampoco
    """.split()
)
#: The most frequent function words of each language (folded): a text is Spanish when it has more
#: of :data:`ES_MARKERS` than of :data:`EN_MARKERS` (:func:`language_of`; the claim splitter's
#: ``morphology.is_spanish`` counts the same words).
ES_MARKERS = frozenset("el la los las de del que y en es un una por con para se al son lo esta".split())
EN_MARKERS = frozenset("the a an of and to is in it for on with are that this be by".split())

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?P<date>\bd\d{{4}}(?:m\d{{2}}(?:d\d{{2}})?)?\b|\bm\d{{2}}d\d{{2}}\b)"
    rf"|(?P<code>\b(?=[^\W\d_]*\d)(?=\d*[^\W\d_]{{1,}}\d)[^\W_]+\b)"
    rf"|(?P<num>\d+(?:[.,]\d+)*)|(?P<cjk>[{_CJK}])"
    rf"|(?P<word>[^\W\d_{_CJK}]+)|(?P<punct>[,;:.!?()\[\]{{}}\"«»“”。！？，；：])"
)
_NOT_ONLY = re.compile(r"\s+(?:only|just|merely|solo|solamente|unicamente)\b")
_NUMBER_ABBR = re.compile(r"\b(?:no|nº|n°|num|nos)\.\s*(?=\d)")
_NT = re.compile(r"n['’]t\b")
@dataclass(frozen=True)
class Tokens:
    """Content tokens of one text: ``words`` (stemmed), ``numbers`` (numbers and date tokens),
    ``negated`` (content tokens found only inside a negation scope), ``negation_heads`` (the first
    content token of each negation scope: what the negation denies, "benefit" in "shows no benefit
    for poisoning")."""

    words: frozenset[str]
    numbers: frozenset[str]
    negated: frozenset[str]
    language: str = "english"
    has_negation: bool = False
    negation_heads: frozenset[str] = frozenset()

    @property
    def content(self) -> frozenset[str]:
        """Words and numbers together (the tokens *lexical* recall counts)."""
        return self.words | self.numbers


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _fold(text: str) -> str:
    if text.isascii():  # NFKC and NFKD leave ASCII as it is, and it has no combining mark
        t = text
    else:
        t = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
        t = "".join(ch for ch in t if not unicodedata.combining(ch))
    t = _NT.sub(" not", t.casefold())
    return normalise_quantities(_NUMBER_ABBR.sub(" ", t))


@lru_cache(maxsize=2)
def _stemmer(language: str):
    import Stemmer

    return Stemmer.Stemmer(language)


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def language_of(text: str) -> str | None:
    """"spanish" or "english" by counting function words (:data:`ES_MARKERS`, :data:`EN_MARKERS`)
    among the folded words of ``text``; None when they tie (a name-only claim such as "Ada Lovelace
    escribió poemas."). Never raises; cached."""
    plain = re.findall(r"[^\W\d_]+", _fold(text))
    es = sum(w in ES_MARKERS for w in plain)
    en = sum(w in EN_MARKERS for w in plain)
    return None if es == en else ("spanish" if es > en else "english")


def tokens(text: str, language: str | None = None) -> Tokens:
    """Content tokens of ``text`` (rules in the module docstring), stemmed for ``language``
    ("spanish" / "english"; None: detected from the text). A claim is tokenised in the language of
    the sentence it is compared with, so both sides share one stemmer. Never raises; cached."""
    return _tokens(text, language or language_of(text) or "english")


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def _tokens(text: str, language: str) -> Tokens:
    folded = _fold(text)
    matches = list(_TOKEN.finditer(folded))
    stem = _stemmer(language).stemWord
    words: set[str] = set()
    numbers: set[str] = set()
    in_scope: set[str] = set()
    out_scope: set[str] = set()
    scope = 0
    has_negation = False
    heads: set[str] = set()
    want_head = False  # the next content token inside a fresh negation scope is its head
    for m in matches:
        if m.group("punct") is not None:
            scope = 0
            want_head = False
            continue
        if m.group("date") is not None:
            tok = m.group("date")
            # a date also states its year, its month and its day of the year: "born in 1935" and
            # "on January 8" vs "(january 8, 1935 - ...)"
            numbers.add(tok)
            if tok.startswith("d"):
                numbers.update({tok[1:5], tok[:8]} | ({tok[5:]} if len(tok) == 11 else set()))
        elif m.group("code") is not None:
            tok = m.group("code")  # a letter-digit code is a name: "p53", "co2", "a1"
            words.add(tok)
        elif m.group("num") is not None:
            tok = canonical_number(m.group("num"))
            numbers.add(tok)
        elif m.group("cjk") is not None:
            tok = m.group("cjk")
            words.add(tok)
        else:
            w = m.group("word")
            if w in NEGATIONS:
                nxt = folded[m.end():m.end() + 12]
                if not _NOT_ONLY.match(nxt):  # "not only X but Y", "no solo X sino Y" assert X
                    scope = NEGATION_SCOPE
                    has_negation = True
                    want_head = True
                continue
            if len(w) < 2 or w in STOPWORDS:
                scope = max(scope - 1, 0)
                continue
            tok = stem(w)
            words.add(tok)
        (in_scope if scope > 0 else out_scope).add(tok)
        if want_head and scope > 0:
            heads.add(tok)
        want_head = False
        scope = max(scope - 1, 0)
    return Tokens(frozenset(words), frozenset(numbers), frozenset(in_scope - out_scope), language, has_negation,
                  frozenset(heads))


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def entities(text: str) -> frozenset[str]:
    """Names in ``text`` (folded): capitalised words after the first word ("Canarias", "Dock"),
    acronyms ("UK") and letter-digit codes ("A1", "D1"). Output: a frozenset of folded strings
    (empty for an empty text); never raises; cached. A capitalisation heuristic, as the
    named-entity cue of FActScore's atomic facts; the first word is left out because a sentence
    starts with a capital anyway."""
    out = set()
    for i, m in enumerate(re.finditer(r"[^\W_]+", text)):
        w = m.group()
        has_digit = any(ch.isdigit() for ch in w)
        has_alpha = any(ch.isalpha() for ch in w)
        if (has_digit and has_alpha) or (i > 0 and w[:1].isupper() and len(w) > 1):
            out.add(_fold_word(w))
    return frozenset(out)


@lru_cache(maxsize=CHUNK_CACHE_SIZE)
def surface_words(text: str) -> frozenset[str]:
    """Every word (run of letters and digits) of ``text`` folded (NFKC, accents stripped, case
    folded), unstemmed, stopwords kept. Output: a frozenset of str; never raises; cached."""
    return frozenset(_fold_word(w) for w in re.findall(r"[^\W_]+", text))


def _fold_word(w: str) -> str:
    if w.isascii():  # the same result, without the two normalisations (ASCII is their fixed point)
        return w.casefold()
    t = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", w).casefold())
    return "".join(ch for ch in t if not unicodedata.combining(ch))


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def stem_surfaces(text: str, language: str) -> dict[str, str]:
    """Stem → the first folded surface word of ``text`` that has it (content words only, as in
    :func:`tokens` with ``language``): the word to embed when a stem must be compared by meaning."""
    stem = _stemmer(language).stemWord
    out: dict[str, str] = {}
    for m in _TOKEN.finditer(_fold(text)):
        w = m.group("word")
        if w is None or len(w) < 2 or w in STOPWORDS or w in NEGATIONS:
            continue
        out.setdefault(stem(w), w)
    return out


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def stem_sequence(text: str, language: str) -> tuple[str, ...]:
    """The stems of ``text``'s content words in text order, repeats kept (the words of
    :func:`tokens` with ``language``, numbers and dates left out): positions for word alignment."""
    stem = _stemmer(language).stemWord
    return tuple(stem(w) for m in _TOKEN.finditer(_fold(text))
                 if (w := m.group("word")) is not None and len(w) >= 2 and w not in STOPWORDS
                 and w not in NEGATIONS)


@lru_cache(maxsize=TEXT_CACHE_SIZE)
def aligned_span(sentence: str, claim: str, language: str, margin: int) -> str:
    """The part of ``sentence`` that ``claim`` speaks of: from its first to its last word whose
    stem (in ``language``) is a word of the claim, widened by ``margin`` words on each side; an
    exact substring of ``sentence``. The whole sentence when ``margin`` < 0 or no word is shared."""
    if margin < 0:
        return sentence
    stem = _stemmer(language).stemWord
    wanted = _tokens(claim, language).words
    spans = [(m.start(), m.end(), stem(_fold_word(m.group()))) for m in re.finditer(r"[^\W_]+", sentence)]
    hits = [k for k, (_, _, st) in enumerate(spans) if st in wanted]
    if not hits:
        return sentence
    a, b = max(0, hits[0] - margin), min(len(spans) - 1, hits[-1] + margin)
    return sentence[spans[a][0]:spans[b][1]]


def stem_word(word: str, language: str) -> str:
    """The Snowball stem (PyStemmer; Porter's Snowball algorithms) of one folded word in
    ``language`` ("spanish" / "english"). Output: str. Raises KeyError for another language."""
    return _stemmer(language).stemWord(word)
