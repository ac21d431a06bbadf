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
  chunk's first sentence and the sentence before). The passage excuses only a word the sentence
  leaves out, not one it replaces: when the sentence holds another content word in the claim word's
  aligned place (between the sentence positions of the claim word's shared neighbours,
  :func:`substituted`), only the sentence itself can excuse it, so "Globex was founded in 1990" does
  not state "Acme was founded in 1990" although the passage names Acme elsewhere. A unit ("días",
  "hours") must be in the sentence itself, as must every number and date (``numbers_ok``) and
  every quantifier, ordinal or comparison marker (:data:`QUANTIFIERS`: "both", "all", "only",
  "first", "than", "ambos", "todos", "solo", ...: they say how many or which one, as a number
  does). Each remaining extra word may still be excused by a *word-level entailment signal*: its
  best cosine, over the sentence's words that the claim does not use, of single-word embeddings
  (the same encoder, passage side) is at least ``word_counterpart`` — a substitution ("coste" /
  "precio"), not an addition. An extra unit or name is never excused; a word of the claim is a
  name also when its chunk capitalises it inside a sentence, or when the sentence has a name in its
  aligned place ("Acme" where the sentence says "Globex").

**The decision rule** (parameters fitted by ``bench/fit_rule_based.py`` on public data):

- a sentence *matches* the claim when ``lexical >= support_lexical``, or (a paraphrase) when
  ``semantic >= support_semantic``, the claim's names are in the chunk and ``lexical >=
  lexical_floor`` (waived across languages, where words cannot be shared);
- **SUPPORTED** when a sentence matches, every number of the claim is in it, negation and direction agree and
  **no extra detail is left** (every extra word excused as above): "El plazo es de 30 días."
  does not support "El plazo es de 30 días naturales." ("naturales" has no counterpart);
- **CONTRADICTED** otherwise, when a sentence matches on words only and has a number conflict, a
  negation disagreement or a direction word pointing the other way ("higher" / "lower",
  :mod:`~rag_eval_pipeline.core.judges.direction`; a negation and a direction that both differ
  cancel);
- **NOT_MENTIONED** otherwise.

Sources: the claim-level verdicts and literal quote follow FActScore (Min et al., EMNLP 2023) and
RAGAS faithfulness (Es et al., EACL 2024 demos); the word-alignment signal follows BERTScore (Zhang
et al., ICLR 2020: each word matched to its most similar word of the other text by embedding
cosine).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from rag_eval_pipeline.core.judges.direction import polarity
from rag_eval_pipeline.core.judges.numbers import UNITS
from rag_eval_pipeline.core.judges.tokens import Tokens

#: Canonical unit words (after :func:`~rag_eval_pipeline.core.judges.numbers.normalise_quantities`):
#: an extra unit is never excused by a similar word ("days" is not "hours").
UNIT_TOKENS: frozenset[str] = frozenset(UNITS.values())
#: Modal verbs (stems, es and en; a closed class): they hedge a fact but add no detail of it.
MODAL_STEMS: frozenset[str] = frozenset({"may", "might", "must", "shall", "pued", "deb"})
#: Quantifiers, ordinals and the comparison marker (folded surface words, es and en; closed
#: classes): like a number they say how many or which one ("both cocktails", "all members", "only
#: on Sundays", "the first event", "younger than"), so a claim's one that the sentence lacks is an
#: added detail that no similar word excuses. Spanish "que" is left out: it is mostly a conjunction.
QUANTIFIERS: frozenset[str] = frozenset(
    "both all every each only first than ambos ambas todos todas cada solo solamente unicamente "
    "primer primera".split())
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
    never excused), ``counterpart`` (best word-level cosine per extra word, None until computed),
    ``direction_flipped`` ("claim word / sentence word" when a direction word points the other
    way, :func:`~rag_eval_pipeline.core.judges.direction.direction_flip`; None otherwise)."""

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
    direction_flipped: str | None = None
    #: The sides disagree on negation, but the negation denies a word the other side does not state
    #: (its head): no contradiction, and no support either.
    negation_unanchored: bool = False


def opposed(ev: Evidence) -> bool:
    """True when the sentence says the opposite of the claim: negation differs, or a direction
    word points the other way (:mod:`~rag_eval_pipeline.core.judges.direction`), but not both (a
    negated opposite says the same: "did not increase" / "reduced"). Never raises."""
    return bool(ev.negation_flipped) != bool(ev.direction_flipped)


def literal_counterpart(a: str, b: str) -> bool:
    """True when stems ``a`` and ``b`` are literal counterparts: they share their first four
    letters, or all but the last letter of the shorter (of at least three): "gratis" / "gratuit",
    "envi" / "envio". Input: two stems (str). Output: bool; never raises. A prefix match in the
    manner of the stemmed matching of METEOR (Banerjee & Lavie, 2005)."""
    k = 0
    n = min(len(a), len(b))
    while k < n and a[k] == b[k]:
        k += 1
    return k >= 4 or (k >= 3 and k >= n - 1)


def extra_words(claim: Tokens, sentence: Tokens, names_in_chunk: frozenset[str] = frozenset(),
                claim_names: frozenset[str] = frozenset(),
                around: frozenset[str] = frozenset(),
                taken: frozenset[str] = frozenset()) -> tuple[tuple[str, ...], int]:
    """(extra stems in sorted order, how many are units or names) of a (claim, sentence) pair.

    Input: the two sides' :class:`~rag_eval_pipeline.core.judges.tokens.Tokens` (one language);
    ``names_in_chunk`` (stems of the claim's names that the sentence's chunk states),
    ``claim_names`` (the claim's names as stems), ``around`` (stems the sentence may leave implicit:
    its passage or neighbours, module docstring) and ``taken`` (stems whose aligned place in the
    sentence holds another word: :func:`substituted`). Output: (sorted tuple of stems, count of
    units and names among them). Rules: a claim word absent from the sentence, with no literal
    counterpart among the sentence's other words, is extra; a name held by the chunk, or a word of
    ``around``, is not extra unless it is ``taken`` (the sentence states something else in its
    place: "Globex was founded in 1990" does not state "Acme was founded in 1990" because the
    passage names Acme elsewhere); a unit must always be in the sentence; a modal verb is never
    extra. Never raises. Source: FActScore (Min et al., EMNLP 2023): an atomic fact is supported
    only when the knowledge source states all of it."""
    missing = claim.words - sentence.words
    if not missing:
        return (), 0
    others = sentence.words - claim.words
    out = []
    strict = 0
    for m in sorted(missing):
        if m in MODAL_STEMS:
            continue
        if m not in taken and (m in names_in_chunk or (m in around and m not in UNIT_TOKENS)):
            continue
        if m not in UNIT_TOKENS and any(literal_counterpart(m, u) for u in others):
            continue
        out.append(m)
        strict += m in UNIT_TOKENS or m in claim_names
    return tuple(out), strict


def aligned_candidates(extra: str, claim_seq: tuple[str, ...], sentence_seq: tuple[str, ...],
                       allowed: frozenset[str], width: int) -> list[str]:
    """The sentence words an extra claim word may substitute for, by its position: the words
    between the sentence positions of its nearest shared neighbours in the claim (the claim words
    left and right of it that the sentence also has), at most ``width`` after the left one and
    ``width`` before the right one; with one neighbour, the ``width`` words on its side; with none,
    or ``width`` 0, every allowed word. Only words of ``allowed`` (sentence words the claim does
    not use) are returned, sorted. Source: monolingual word alignment by contextual evidence
    (Sultan, Bethard & Sumner, TACL 2014: a word aligns with a similar word whose neighbours are
    aligned too)."""
    if width <= 0 or extra not in claim_seq:
        return sorted(allowed)
    k = claim_seq.index(extra)
    where: dict[str, list[int]] = {}
    for i, w in enumerate(sentence_seq):
        where.setdefault(w, []).append(i)
    left = next((claim_seq[i] for i in range(k - 1, -1, -1) if claim_seq[i] in where), None)
    right = next((claim_seq[i] for i in range(k + 1, len(claim_seq)) if claim_seq[i] in where), None)
    if left is None and right is None:
        return sorted(allowed)
    spots: set[int] = set()
    for a in where.get(left, ()) if left is not None else ():
        spots.update(range(a + 1, min(a + 1 + width, len(sentence_seq))))
    for b in where.get(right, ()) if right is not None else ():
        spots.update(range(max(0, b - width), b))
    return sorted({sentence_seq[i] for i in spots} & allowed)


def substituted(missing: frozenset[str], claim_seq: tuple[str, ...], sentence_seq: tuple[str, ...],
                allowed: frozenset[str], width: int) -> dict[str, tuple[str, ...]]:
    """The words of ``missing`` (claim stems the sentence lacks) whose aligned place in the sentence
    holds a word of ``allowed`` (a sentence content word the claim does not use): the sentence
    states another word there, so the claim word is a substitution, which only the sentence itself
    (a literal or word-level counterpart) may excuse, never the rest of the passage.

    Input: stem sequences in text order (:func:`~rag_eval_pipeline.core.judges.tokens.stem_sequence`),
    ``width`` >= 1 sentence words on each side of the aligned place (as in
    :func:`aligned_candidates`). A word outside ``claim_seq``, or with no neighbour the sentence
    shares, has no aligned place and is not returned. Output: {claim stem: the sentence stems in
    its aligned place, sorted}. Never raises.
    Source: monolingual word alignment by contextual evidence (Sultan, Bethard & Sumner, TACL 2014)."""
    width = max(1, int(width))
    shared = set(sentence_seq)
    out: dict[str, tuple[str, ...]] = {}
    for m in sorted(missing):
        if m not in claim_seq:
            continue
        k = claim_seq.index(m)
        if not any(w in shared for w in claim_seq[:k] + claim_seq[k + 1:]):
            continue
        cands = aligned_candidates(m, claim_seq, sentence_seq, allowed, width)
        if cands:
            out[m] = tuple(cands)
    return out


def quantifier_extras(claim_words: frozenset[str], sentence_words: frozenset[str]) -> tuple[str, ...]:
    """The :data:`QUANTIFIERS` among ``claim_words`` (folded surface words) that ``sentence_words``
    lacks: extra details never excused. Output: a sorted tuple of folded words (empty when none);
    never raises. Source: FActScore (Min et al., EMNLP 2023): a fact is supported only when all of
    it is stated."""
    return tuple(sorted((claim_words & QUANTIFIERS) - sentence_words))


def evidence(claim: Tokens, sentence: Tokens, *, entities_ok: bool = True, cross_lingual: bool = False,
             extra: tuple[str, ...] = (), extra_strict: int = 0) -> Evidence:
    """The lexical, numeric and negation evidence of one (claim, sentence) pair; semantic None.

    Negation is compared per side, not per token, so that voice and scope differences do not read
    as a flip ("Lumo does not refund duties" / "duties are not refunded by Lumo"): they disagree when
    the claim has a negated token and the sentence no negation word at all, or when a token the
    sentence shares with the claim is negated and the claim has no negation word at all (the tokens
    shown are that side's), and the negated side's *head* (the first content token of a negation
    scope, what it denies: "benefit" in "shows no benefit for poisoning") is stated by the other
    side, or is a direction word — a negation of something the other side does not speak of
    contradicts nothing it says, and supports nothing either (``negation_unanchored``; NegEx's
    scope, Chapman et al. 2001, read from its first term).
    ``entities_ok``, ``cross_lingual``, ``extra``, ``extra_strict`` are stored as given."""
    content = claim.content
    shared = content & sentence.content
    lexical = len(shared) / len(content) if content else 0.0
    word = len(claim.words & sentence.words) / len(claim.words) if claim.words else 0.0
    if claim.negated and not sentence.has_negation:
        flipped = (claim.negated & shared) or claim.negated
        heads, other = claim.negation_heads, sentence.content
    elif sentence.negated & shared and not claim.has_negation:
        flipped = sentence.negated & shared
        heads, other = sentence.negation_heads, content
    else:
        flipped, heads, other = frozenset(), frozenset(), frozenset()
    unanchored = bool(flipped) and not _denies_stated(heads, other)
    if unanchored:
        flipped = frozenset()
    return Evidence(
        lexical=lexical, word=word, semantic=None,
        numbers_ok=claim.numbers <= sentence.numbers,
        number_conflict=bool(claim.numbers - sentence.numbers) and bool(sentence.numbers - claim.numbers),
        negation_flipped=frozenset(flipped), entities_ok=entities_ok, cross_lingual=cross_lingual,
        extra=extra, extra_strict=extra_strict, negation_unanchored=unanchored,
    )


def _denies_stated(heads: frozenset[str], other: frozenset[str]) -> bool:
    """True when a negation denies something the other side speaks of: one of its heads is among
    the other side's content tokens, or is a direction word (the direction rule compares it with
    the other side's: "did not increase" / "reduced")."""
    return bool(heads & other) or any(polarity(h) for h in heads)


def matches(recall: float, ev: Evidence, params: dict) -> bool:
    """The rule's "this sentence says what the claim says" (module docstring): ``recall`` (in
    [0, 1]: ``ev.lexical`` or ``ev.word``) reaches ``params["support_lexical"]``, or the semantic
    cosine reaches ``support_semantic`` with the claim's names in the chunk and ``recall`` at least
    ``lexical_floor`` (waived across languages). Output: bool. Raises KeyError when ``params``
    lacks a key of :data:`PARAM_KEYS`. Source: the support decision of RAGAS faithfulness (Es et
    al., EACL 2024 demos), here by thresholds fitted on BEGIN (Dziri et al., TACL 2022)."""
    if recall >= params["support_lexical"]:
        return True
    if ev.semantic is None or ev.semantic < params["support_semantic"] or not ev.entities_ok:
        return False
    return ev.cross_lingual or recall >= params["lexical_floor"]


def extras_left(ev: Evidence, params: dict) -> int:
    """How many extra words of the claim the sentence leaves unexcused: every one when a unit or
    name is among them or the word-level signal was not computed, else those whose counterpart
    cosine is below ``params["word_counterpart"]`` (absent: 1.01, none excused; NaN: not excused).
    Output: an int in [0, len(ev.extra)], 0 = no extra detail. Never raises. Source: word
    alignment by embedding cosine as in BERTScore (Zhang et al., ICLR 2020)."""
    if not ev.extra:
        return 0
    if ev.extra_strict or ev.counterpart is None:
        return len(ev.extra)
    tau = params.get("word_counterpart", 1.01)
    return sum(not c >= tau for c in ev.counterpart)  # NaN (not computed) is not excused


def _supported_but_extras(ev: Evidence, params: dict) -> bool:
    return ev.numbers_ok and not opposed(ev) and not ev.negation_unanchored and matches(ev.lexical, ev, params)


def decide(ev: Evidence, params: dict) -> str:
    """The verdict the rule gives on one (claim, sentence) pair (module docstring): "SUPPORTED",
    "CONTRADICTED" or "NOT_MENTIONED". Input: its :class:`Evidence` and the parameters
    (:data:`PARAM_KEYS`, optional ``word_counterpart``). Raises KeyError for a missing parameter.
    Source: FEVER's three labels (Thorne et al., NAACL 2018) applied per claim as in FActScore."""
    if _supported_but_extras(ev, params) and extras_left(ev, params) == 0:
        return "SUPPORTED"
    if (ev.number_conflict or opposed(ev)) and matches(ev.word, ev, params):
        return "CONTRADICTED"
    return "NOT_MENTIONED"


def support_score(verdict: str, recall: float) -> float:
    """The graded support of one claim, in [0, 1], ordered like the verdicts: CONTRADICTED 0;
    NOT_MENTIONED 0.5 x ``recall``, in [0, 0.5]; SUPPORTED 0.5 + 0.5 x ``recall``, in [0.5, 1].

    ``recall`` (in [0, 1]) is the share of the claim's content tokens (stemmed words, numbers,
    dates) stated by its best sentence: the quoted sentence for SUPPORTED, the sentence with the
    highest lexical recall otherwise. Between two answers with the same verdicts, the one whose
    claims the context states more literally scores higher: a paraphrase supported through the
    semantic signal counts less than a quote, a claim with no word in the context less than one that
    only adds a detail. Faithfulness averaged over claims (Ragas, Es et al., EACL 2024 demos) with
    this score per claim in place of 0/1 is the judge's graded faithfulness. Raises ValueError for
    another verdict (JUDGE_ERROR has no score). Source: graded verdicts as in TREC RAG's
    support assessment (full / partial / none, Thakur et al. 2025) and the lexical recall of
    ROUGE-style answer overlap."""
    r = min(1.0, max(0.0, float(recall)))
    if verdict == "SUPPORTED":
        return 0.5 + 0.5 * r
    if verdict == "NOT_MENTIONED":
        return 0.5 * r
    if verdict == "CONTRADICTED":
        return 0.0
    raise ValueError(f"no support score for verdict {verdict!r}")


def needs_semantic(ev: Evidence, params: dict) -> bool:
    """True when the semantic score can change :func:`decide`'s verdict on ``ev`` under
    ``params`` (so the encoder is asked only then): the score is not yet known, names are present,
    no unit or name is extra, the words alone do not decide and the recall reaches the floor (or
    the pair is cross-lingual). Output: bool; raises KeyError for a missing parameter."""
    if ev.semantic is not None or not ev.entities_ok or ev.extra_strict:
        return False
    if ev.counterpart is not None and extras_left(ev, params) and not (ev.number_conflict or opposed(ev)):
        return False  # extra words stay unexcused: never SUPPORTED, and nothing to contradict
    if _supported_but_extras(ev, params):
        return False
    if ev.lexical >= params["support_lexical"] and ev.word >= params["support_lexical"]:
        return False
    return ev.cross_lingual or max(ev.lexical, ev.word) >= params["lexical_floor"]


def needs_counterparts(ev: Evidence, params: dict) -> bool:
    """True when word-level counterparts of the extra words can change :func:`decide`'s verdict: the
    sentence would support the claim but for extra words that may still be excused (none a unit or
    name, not yet scored, ``word_counterpart`` at most 1). Output: bool; raises KeyError for a
    missing parameter."""
    return (bool(ev.extra) and not ev.extra_strict and ev.counterpart is None
            and params.get("word_counterpart", 1.01) <= 1.0 and _supported_but_extras(ev, params))


def with_semantic(ev: Evidence, semantic: float) -> Evidence:
    """A copy of ``ev`` with its semantic cosine (in [-1, 1]) set; ``ev`` is unchanged (frozen)."""
    return replace(ev, semantic=semantic)


def with_counterpart(ev: Evidence, counterpart: tuple[float, ...]) -> Evidence:
    """A copy of ``ev`` with the best word-level cosine of each extra word (one float per
    ``ev.extra`` entry, in [-1, 1], -2.0 when it has no candidate, NaN when not scored) set."""
    return replace(ev, counterpart=counterpart)
