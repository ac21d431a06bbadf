"""What one context sentence says about one claim, and the embedded judge's decision rule on it.

Signals, per (claim, sentence) pair (tokens from :mod:`~rag_eval_pipeline.core.judges.tokens`):

- *lexical* = |claim tokens ∩ sentence tokens| / |claim tokens| (words, numbers and dates);
  *word* = the same over words only.
- *numeric*: ``numbers_ok`` when every number/date of the claim is in the sentence; a *number
  conflict* when the claim has one the sentence lacks and the sentence has one the claim lacks.
- *negation*: compared per side (NegEx scope, Chapman et al. 2001), see :func:`evidence`.
- *semantic*: cosine of the two texts' embeddings (claim as query, sentence as passage).
- **extra details**: the claim's content words that the evidence does not state. A word is stated
  when the sentence has it or a *literal counterpart* of it (a sentence word sharing its first four
  letters, or all but the last letter of a short word: "gratis" / "gratuito"), or when the
  sentence's passage (its chunk) has it: the passage is the evidence, and a sentence leaves its
  passage's subject and topic implicit (``extra_scope`` "passage"; "neighbours" narrows this to the
  chunk's first sentence and the sentence before). A unit ("días", "hours") must be in the sentence
  itself, as must every number and date (``numbers_ok``). Each remaining extra word may still be
  excused by a *word-level entailment signal*: its best cosine, over the sentence's words that the
  claim does not use, of single-word embeddings (the same encoder, passage side) is at least
  ``word_counterpart`` — a substitution ("coste" / "precio"), not an addition. An extra unit or name
  is never excused.

**The decision rule** (parameters fitted by ``bench/fit_rule_based.py`` on public data):

- a sentence *matches* the claim when ``lexical >= support_lexical``, or (a paraphrase) when
  ``semantic >= support_semantic``, the claim's names are in the chunk and ``lexical >=
  lexical_floor`` (waived across languages, where words cannot be shared);
- **SUPPORTED** when a sentence matches, every number of the claim is in it, negation agrees and
  **no extra detail is left** (every extra word excused as above): "El plazo es de 30 días."
  does not support "El plazo es de 30 días naturales." ("naturales" has no counterpart);
- **CONTRADICTED** otherwise, when a sentence matches on words only and has a number conflict or a
  negation disagreement;
- **NOT_MENTIONED** otherwise.

Sources: the claim-level verdicts and literal quote follow FActScore (Min et al., EMNLP 2023) and
RAGAS faithfulness (Es et al., EACL 2024 demos); the word-alignment signal follows BERTScore (Zhang
et al., ICLR 2020: each word matched to its most similar word of the other text by embedding
cosine).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rag_eval_pipeline.core.judges.numbers import UNITS
from rag_eval_pipeline.core.judges.tokens import Tokens

#: Canonical unit words (after :func:`~rag_eval_pipeline.core.judges.numbers.normalise_quantities`):
#: an extra unit is never excused by a similar word ("days" is not "hours").
UNIT_TOKENS: frozenset[str] = frozenset(UNITS.values())
#: Modal verbs (stems, es and en; a closed class): they hedge a fact but add no detail of it.
MODAL_STEMS: frozenset[str] = frozenset({"may", "might", "must", "shall", "pued", "deb"})
#: The decision rule's parameters; ``word_counterpart`` may be absent (then no word is excused).
PARAM_KEYS = ("support_lexical", "support_semantic", "lexical_floor")
OPTIONAL_KEYS = ("word_counterpart",)


@dataclass(frozen=True)
class Evidence:
    """What one context sentence says about one claim (module docstring): ``lexical`` and ``word``
    recall in [0, 1], ``semantic`` cosine in [-1, 1] or None when not computed, ``numbers_ok``,
    ``number_conflict``, ``negation_flipped`` (the negated tokens when the sides disagree),
    ``entities_ok`` (every name of the claim is a word of the sentence's context chunk),
    ``cross_lingual`` (claim and sentence are in different languages), ``extra`` (stems of the
    claim's extra words, in claim order), ``extra_strict`` (how many of them are units or names,
    never excused), ``counterpart`` (best word-level cosine per extra word, None until computed)."""

    lexical: float
    word: float
    semantic: float | None
    numbers_ok: bool
    number_conflict: bool
    negation_flipped: frozenset[str]
    entities_ok: bool = True
    cross_lingual: bool = False
    extra: tuple[str, ...] = ()
    extra_strict: int = 0
    counterpart: tuple[float, ...] | None = None


def literal_counterpart(a: str, b: str) -> bool:
    """Two stems that share their first four letters, or all but the last letter of the shorter
    (of at least three): "gratis" / "gratuit", "envi" / "envio"."""
    k = 0
    n = min(len(a), len(b))
    while k < n and a[k] == b[k]:
        k += 1
    return k >= 4 or (k >= 3 and k >= n - 1)


def extra_words(claim: Tokens, sentence: Tokens, names_in_chunk: frozenset[str] = frozenset(),
                claim_names: frozenset[str] = frozenset(),
                around: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], int]:
    """(extra stems in sorted order, how many are units or names) of a (claim, sentence) pair: claim
    words absent from the sentence with no literal counterpart among the sentence's other words;
    a name held by the chunk, or a word of ``around`` (the words the sentence may leave implicit, see
    the module docstring), is not extra; a unit always must be in the sentence. ``claim_names`` are
    the claim's names as stems."""
    missing = claim.words - sentence.words
    if not missing:
        return (), 0
    others = sentence.words - claim.words
    out = []
    strict = 0
    for m in sorted(missing):
        if m in names_in_chunk or m in MODAL_STEMS or (m in around and m not in UNIT_TOKENS):
            continue
        if m not in UNIT_TOKENS and any(literal_counterpart(m, u) for u in others):
            continue
        out.append(m)
        strict += m in UNIT_TOKENS or m in claim_names
    return tuple(out), strict


def evidence(claim: Tokens, sentence: Tokens, *, entities_ok: bool = True, cross_lingual: bool = False,
             extra: tuple[str, ...] = (), extra_strict: int = 0) -> Evidence:
    """The lexical, numeric and negation evidence of one (claim, sentence) pair; semantic None.

    Negation is compared per side, not per token, so that voice and scope differences do not read
    as a flip ("Lumo does not refund duties" / "duties are not refunded by Lumo"): they disagree when
    the claim has a negated token and the sentence no negation word at all, or when a token the
    sentence shares with the claim is negated and the claim has no negation word at all (the tokens
    shown are that side's). ``entities_ok``, ``cross_lingual``, ``extra``, ``extra_strict`` are
    stored as given."""
    content = claim.content
    shared = content & sentence.content
    lexical = len(shared) / len(content) if content else 0.0
    word = len(claim.words & sentence.words) / len(claim.words) if claim.words else 0.0
    if claim.negated and not sentence.has_negation:
        flipped = (claim.negated & shared) or claim.negated
    elif sentence.negated & shared and not claim.has_negation:
        flipped = sentence.negated & shared
    else:
        flipped = frozenset()
    return Evidence(
        lexical=lexical, word=word, semantic=None,
        numbers_ok=claim.numbers <= sentence.numbers,
        number_conflict=bool(claim.numbers - sentence.numbers) and bool(sentence.numbers - claim.numbers),
        negation_flipped=frozenset(flipped), entities_ok=entities_ok, cross_lingual=cross_lingual,
        extra=extra, extra_strict=extra_strict,
    )


def matches(recall: float, ev: Evidence, params: dict) -> bool:
    """The rule's "this sentence says what the claim says" (module docstring)."""
    if recall >= params["support_lexical"]:
        return True
    if ev.semantic is None or ev.semantic < params["support_semantic"] or not ev.entities_ok:
        return False
    return ev.cross_lingual or recall >= params["lexical_floor"]


def extras_left(ev: Evidence, params: dict) -> int:
    """How many extra words of the claim the sentence leaves unexcused (0 = no extra detail)."""
    if not ev.extra:
        return 0
    if ev.extra_strict or ev.counterpart is None:
        return len(ev.extra)
    tau = params.get("word_counterpart", 1.01)
    return sum(c < tau for c in ev.counterpart)


def _supported_but_extras(ev: Evidence, params: dict) -> bool:
    return ev.numbers_ok and not ev.negation_flipped and matches(ev.lexical, ev, params)


def decide(ev: Evidence, params: dict) -> str:
    """Verdict the rule gives on one sentence: SUPPORTED, CONTRADICTED or NOT_MENTIONED."""
    if _supported_but_extras(ev, params) and extras_left(ev, params) == 0:
        return "SUPPORTED"
    if (ev.number_conflict or ev.negation_flipped) and matches(ev.word, ev, params):
        return "CONTRADICTED"
    return "NOT_MENTIONED"


def needs_semantic(ev: Evidence, params: dict) -> bool:
    """True when the semantic score can change :func:`decide`'s verdict on this evidence."""
    if ev.semantic is not None or not ev.entities_ok or ev.extra_strict:
        return False
    if ev.counterpart is not None and extras_left(ev, params) and not (ev.number_conflict or ev.negation_flipped):
        return False  # extra words stay unexcused: never SUPPORTED, and nothing to contradict
    if _supported_but_extras(ev, params):
        return False
    if ev.lexical >= params["support_lexical"] and ev.word >= params["support_lexical"]:
        return False
    return ev.cross_lingual or max(ev.lexical, ev.word) >= params["lexical_floor"]


def needs_counterparts(ev: Evidence, params: dict) -> bool:
    """True when word-level counterparts of the extra words can change :func:`decide`'s verdict: the
    sentence would support the claim but for extra words that may still be excused."""
    return (bool(ev.extra) and not ev.extra_strict and ev.counterpart is None
            and params.get("word_counterpart", 1.01) <= 1.0 and _supported_but_extras(ev, params))


def with_semantic(ev: Evidence, semantic: float) -> Evidence:
    return replace(ev, semantic=semantic)


def with_counterpart(ev: Evidence, counterpart: tuple[float, ...]) -> Evidence:
    return replace(ev, counterpart=counterpart)
