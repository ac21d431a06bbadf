"""The embedded default judge: a lexical-overlap BASELINE, not a semantic judge.

It follows the claim-by-claim procedure of seed ``004_292fd69c3d96947d.txt`` (decompose, verify
each claim three ways, cite the context literally) with rules instead of a model, so that the
pipeline runs with no server and no network. Its numbers are a floor to compare model judges
against, not a measure of truth: paraphrases it cannot see are NOT_MENTIONED, and any answer that
reuses the context's words is SUPPORTED whether or not it says the same thing.

For each claim (:func:`~rag_eval_pipeline.core.judges.claims.split_claims`) and each sentence of
each retrieved context (:func:`~rag_eval_pipeline.core.judges.claims.sentence_spans`):

- **Tokens.** NFKC, accents stripped, case folded, "n't" → " not"; words are letter runs of 2+
  characters not in :data:`STOPWORDS` (Spanish + English function words) or :data:`NEGATIONS`,
  with one final "s" dropped from words of 4+ letters (not "ss"); numbers are digit runs with
  their separators read as in :func:`canonical_number` ("No. 5" / "Nº 5" is a number, not a
  negation); each Han/kana character is a token.
- **Negation scope.** A word of :data:`NEGATIONS` negates the next :data:`NEGATION_SCOPE` (5)
  tokens, stopwords included, up to clause punctuation (``, ; : . ! ? ( ) [ ] " « »``), as in
  NegEx (Chapman et al. 2001). A content token is *negated* when it occurs only inside such
  scopes. Claim and sentence **disagree on negation** when a token they share is negated in one
  and not in the other.
- **recall** = |claim tokens ∩ sentence tokens| / |claim tokens| (sets; words and numbers).
  **word_recall** is the same over words only.
- **SUPPORTED** when some sentence has recall ≥ ``support_threshold``, contains every number of
  the claim, and does not disagree with it on negation.
  The quote is that whole sentence, an exact substring of the context, and it must pass
  :func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`. Best sentence: highest recall,
  then highest precision (shared / sentence tokens), then earliest (context rank, position).
- **CONTRADICTED** otherwise, when some sentence has word_recall ≥ ``contradiction_threshold``
  and either a number conflict (the claim has a number the sentence lacks and the sentence has a
  number the claim lacks) or a disagreement on negation.
- **NOT_MENTIONED** otherwise (also for a claim with no content token, e.g. "Yes.").

Whole answer (seed ``003_9cfbf16fe7b371c5.txt`` labels): YES if every claim is SUPPORTED, NO if
any is CONTRADICTED or none is SUPPORTED, PARTIAL otherwise
(:func:`~rag_eval_pipeline.core.judges.base.holistic_label`).

``prompt_sha256`` is the sha256 of :meth:`RuleBasedJudge.description` serialised as canonical
JSON (sorted keys, no spaces), so a change of threshold, word list or rule changes it.
Known blind spots: synonyms and paraphrase; negation beyond the 5-token window or expressed
without a negation word ("failed to", "lacks"); antonyms; support spread over two sentences;
answers only meaningful with the question ("Yes", "Delhi").
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict, holistic_label
from rag_eval_pipeline.core.judges.claims import ABBREVIATIONS, sentence_spans, split_claims
from rag_eval_pipeline.core.judges.quotes import quote_in_context

JUDGE_NAME = "rule_based_lexical"
JUDGE_MODEL = "rule_based_lexical-v1"
#: Fixed before looking at any benchmark (3 of 4 content tokens of a claim found in one sentence).
DEFAULT_SUPPORT_THRESHOLD = 0.75
DEFAULT_CONTRADICTION_THRESHOLD = 0.75
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
    """.split()
)
#: Negation words (accents stripped, case folded); polarity = any of them present.
NEGATIONS: frozenset[str] = frozenset(
    """
    no not never none nobody nothing neither nor without cannot
    nunca jamas sin ningun ninguno ninguna ningunos ningunas nadie nada ni tampoco
    """.split()
)

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?P<num>\d+(?:[.,]\d+)*)|(?P<cjk>[{_CJK}])|(?P<word>[^\W\d_{_CJK}]+)"
    r"|(?P<punct>[,;:.!?()\[\]{}\"«»“”。！？，；：])"
)
_NUMBER_ABBR = re.compile(r"\b(?:no|nº|n°|num|nos)\.\s*(?=\d)")
_NT = re.compile(r"n['’]t\b")
_SEP = re.compile(r"[.,]")


def canonical_number(tok: str) -> str:
    """Canonical form of a number token so that "3,5" == "3.5" and "1.000" == "1,000" == "1000".

    Input: digits with optional "." / "," separators (``\\d+([.,]\\d+)*``). Output: a string.
    Rules: both separators present → the last is the decimal mark, the others group thousands;
    one separator kind, several times, every later group 3 digits → thousands ("1.234.567" →
    "1234567"), otherwise an identifier with "." ("1.2.3"); one separator followed by exactly 3
    digits after a non-zero 1-3 digit group → thousands ("1,000" → "1000"; so "3.500" reads as
    3500); any other single separator → decimal mark ("3,5" → "3.5"). No rounding, no leading-zero
    removal: the numbers of a claim must match exactly. Never raises.
    """
    seps = _SEP.findall(tok)
    if not seps:
        return tok
    groups = _SEP.split(tok)
    if len(set(seps)) == 2:
        return "".join(groups[:-1]) + "." + groups[-1]
    if len(seps) >= 2:
        if all(len(g) == 3 for g in groups[1:]):
            return "".join(groups)
        return ".".join(groups)
    a, b = groups
    if len(b) == 3 and 1 <= len(a) <= 3 and a != "0":
        return a + b
    return a + "." + b


@dataclass(frozen=True)
class _Tokens:
    words: frozenset[str]
    numbers: frozenset[str]
    negated: frozenset[str]  # content tokens found only inside a negation scope

    @property
    def content(self) -> frozenset[str]:
        return self.words | self.numbers


def _fold(text: str) -> str:
    t = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    t = "".join(ch for ch in t if not unicodedata.combining(ch))
    t = _NT.sub(" not", t.casefold())
    return _NUMBER_ABBR.sub(" ", t)


def _tokens(text: str) -> _Tokens:
    words: set[str] = set()
    numbers: set[str] = set()
    in_scope: set[str] = set()
    out_scope: set[str] = set()
    scope = 0
    for m in _TOKEN.finditer(_fold(text)):
        if m.group("punct") is not None:
            scope = 0
            continue
        if m.group("num") is not None:
            tok = canonical_number(m.group("num"))
            numbers.add(tok)
        elif m.group("cjk") is not None:
            tok = m.group("cjk")
            words.add(tok)
        else:
            w = m.group("word")
            if w in NEGATIONS:
                scope = NEGATION_SCOPE
                continue
            if len(w) < 2 or w in STOPWORDS:
                scope = max(scope - 1, 0)
                continue
            if len(w) >= 4 and w.endswith("s") and not w.endswith("ss"):
                w = w[:-1]
            tok = w
            words.add(tok)
        (in_scope if scope > 0 else out_scope).add(tok)
        scope = max(scope - 1, 0)
    return _Tokens(frozenset(words), frozenset(numbers), frozenset(in_scope - out_scope))


@dataclass(frozen=True)
class _Sentence:
    context: int
    index: int
    text: str
    tokens: _Tokens


class RuleBasedJudge:
    """Lexical-overlap baseline judge (rules in the module docstring).

    Construct with ``support_threshold`` and ``contradiction_threshold`` in (0, 1] (defaults
    0.75, fixed a priori); ValueError otherwise. Attributes ``name`` ("rule_based_lexical"),
    ``model`` ("rule_based_lexical-v1"), ``prompt_sha256`` (sha256 of :meth:`description`).
    Deterministic: the same input always gives the same judgement.
    """

    name = JUDGE_NAME
    model = JUDGE_MODEL

    def __init__(
        self,
        support_threshold: float = DEFAULT_SUPPORT_THRESHOLD,
        contradiction_threshold: float = DEFAULT_CONTRADICTION_THRESHOLD,
    ):
        for label, v in (("support_threshold", support_threshold),
                         ("contradiction_threshold", contradiction_threshold)):
            if not 0.0 < float(v) <= 1.0:
                raise ValueError(f"{label} must be in (0, 1], got {v!r}")
        self.support_threshold = float(support_threshold)
        self.contradiction_threshold = float(contradiction_threshold)
        canonical = json.dumps(self.description(), sort_keys=True, ensure_ascii=False,
                               separators=(",", ":"))
        self.prompt_sha256 = hashlib.sha256(canonical.encode("utf-8")).hexdigest()

    def description(self) -> dict:
        """Every parameter and rule of this judge as a JSON-serialisable dict (hashed into
        ``prompt_sha256``). Output keys: judge, model, thresholds, word lists, rule names."""
        return {
            "judge": self.name,
            "model": self.model,
            "support_threshold": self.support_threshold,
            "contradiction_threshold": self.contradiction_threshold,
            "stopwords": sorted(STOPWORDS),
            "negations": sorted(NEGATIONS),
            "abbreviations": sorted(ABBREVIATIONS),
            "tokens": "NFKC+NFKD strip accents, casefold, n't->not; words >=2 letters minus "
                      "stopwords/negations, drop final s if len>=4 and not ss; numbers "
                      "canonical_number ('no.'/'num.' before a digit dropped); CJK per character",
            "negation": f"scope of {NEGATION_SCOPE} tokens after a negation word, cut at clause "
                        "punctuation; a token is negated when it only occurs in scope; "
                        "disagreement = a shared token negated on one side only",
            "score": "recall=|claim&sentence|/|claim| over words+numbers; word_recall over words",
            "supported": "recall>=support_threshold and claim numbers subset of sentence numbers "
                         "and no negation disagreement; quote=whole sentence; quote_in_context",
            "contradicted": "word_recall>=contradiction_threshold and (number conflict or "
                            "negation disagreement)",
            "best": "max recall, then precision, then earliest context/sentence",
            "claims": "claims.split_claims",
            "sentences": "claims.sentence_spans(hard_newlines=False, split_semicolons=False, "
                         "split_glued=True)",
            "holistic": "base.holistic_label",
        }

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement:
        """Judge ``answer`` against ``contexts`` (retrieved chunk texts, rank order).

        ``question`` is not used by this judge. Output: status "no_claims" (no claim in the
        answer), "no_retrieval" (no context with text), else "judged" with one ClaimVerdict per
        claim (claim_id "c1", "c2", ... in answer order) and a YES/PARTIAL/NO holistic label.
        Never raises for string inputs.
        """
        claims = split_claims(answer)
        if not claims:
            return AnswerJudgement("no_claims", [], None)
        sentences = self._sentences(contexts)
        if not sentences:
            return AnswerJudgement("no_retrieval", [], None)
        verdicts = [self._judge_claim(f"c{n}", c, sentences, contexts)
                    for n, c in enumerate(claims, start=1)]
        return AnswerJudgement("judged", verdicts, holistic_label([v.verdict for v in verdicts]))

    @staticmethod
    def _sentences(contexts: list[str]) -> list[_Sentence]:
        out = []
        for ci, ctx in enumerate(contexts or []):
            if not ctx:
                continue
            for si, (s, e) in enumerate(sentence_spans(ctx)):
                out.append(_Sentence(ci, si, ctx[s:e], _tokens(ctx[s:e])))
        return out

    def _judge_claim(self, cid: str, claim: str, sentences: list[_Sentence],
                     contexts: list[str]) -> ClaimVerdict:
        c = _tokens(claim)
        content = c.content
        if not content:
            return ClaimVerdict(cid, claim, "NOT_MENTIONED", None, False,
                                "no content word or number in the claim to match")
        best_sup = best_any = best_con = None
        for order, s in enumerate(sentences):
            st = s.tokens
            shared = content & st.content
            recall = len(shared) / len(content)
            precision = len(shared) / len(st.content) if st.content else 0.0
            key = (recall, precision, -order)
            if best_any is None or key > best_any[0]:
                best_any = (key, s)
            numbers_ok = c.numbers <= st.numbers
            flipped = frozenset(t for t in shared if (t in c.negated) != (t in st.negated))
            neg_ok = not flipped
            if recall >= self.support_threshold and numbers_ok and neg_ok:
                if best_sup is None or key > best_sup[0]:
                    best_sup = (key, s)
                continue
            if c.words:
                word_recall = len(c.words & st.words) / len(c.words)
                conflict = bool(c.numbers - st.numbers) and bool(st.numbers - c.numbers)
                if word_recall >= self.contradiction_threshold and (conflict or not neg_ok):
                    ckey = (word_recall, precision, -order)
                    if best_con is None or ckey > best_con[0]:
                        best_con = (ckey, s, conflict, flipped)
        if best_sup is not None:
            (recall, _, _), s = best_sup
            if quote_in_context(s.text, contexts):
                return ClaimVerdict(
                    cid, claim, "SUPPORTED", s.text, True,
                    f"content-token recall {recall:.2f} >= {self.support_threshold:g} in context "
                    f"{s.context + 1}, sentence {s.index + 1}; numbers and negation agree",
                )
        if best_con is not None:
            (word_recall, _, _), s, conflict, flipped = best_con
            why = []
            if conflict:
                why.append(f"numbers differ (claim {sorted(c.numbers - s.tokens.numbers)}, "
                           f"context {sorted(s.tokens.numbers - c.numbers)})")
            if flipped:
                why.append(f"negation differs on {sorted(flipped)}")
            return ClaimVerdict(
                cid, claim, "CONTRADICTED", s.text, quote_in_context(s.text, contexts),
                f"word recall {word_recall:.2f} >= {self.contradiction_threshold:g} in context "
                f"{s.context + 1}, sentence {s.index + 1}, but " + " and ".join(why),
            )
        (recall, _, _), s = best_any
        missing = sorted(content - s.tokens.content)
        shown = ", ".join(missing[:8]) + (", ..." if len(missing) > 8 else "")
        return ClaimVerdict(
            cid, claim, "NOT_MENTIONED", None, False,
            f"best content-token recall {recall:.2f} (context {s.context + 1}, sentence "
            f"{s.index + 1}); support needs {self.support_threshold:g}, all numbers and the same "
            f"negation; missing: {shown or 'none'}",
        )
