"""The embedded judge's decision on one claim: from the claim's evidence against every candidate
sentence to a verdict, a verbatim quote, a one-line reason and the graded ``support_score``; and the
answer-level aggregation of those scores (:func:`answer_support`: the weakest claim).

Split out of :mod:`~rag_eval_pipeline.core.judges.rule_based` (the judge; rules there).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from rag_eval_pipeline.core.judges.base import ClaimVerdict
from rag_eval_pipeline.core.judges.evidence import Evidence, decide, extras_left, opposed, support_score
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.judges.rule_claims import fixed_reason, matching_text
from rag_eval_pipeline.core.judges.rule_context import ContextSentence, passage_recall
from rag_eval_pipeline.core.judges.tokens import tokens


def claim_verdict(cid: str, claim: str, row: list[Evidence], sentences: list[ContextSentence],
                  contexts: list[str], params: dict) -> ClaimVerdict:
    """The verdict on one claim from its evidence row (one :class:`Evidence` per candidate sentence,
    aligned with ``sentences``; :func:`~rag_eval_pipeline.core.judges.evidence.decide` with
    ``params`` on each): SUPPORTED with the best supporting sentence quoted verbatim (checked by
    :func:`quote_in_context` against ``contexts``), else CONTRADICTED with the best contradicting
    sentence, else NOT_MENTIONED with the reason (an extra detail, or what the best sentence lacks);
    a question or first-person claim is NOT_MENTIONED whatever the evidence. Best sentence: highest
    lexical, then semantic, then earliest. ``support_score`` in [0, 1]
    (:func:`~rag_eval_pipeline.core.judges.evidence.support_score`). Output: a ClaimVerdict with
    claim_id ``cid``. Never raises for a row as long as ``sentences`` (at least one). Source: Ragas
    faithfulness's claim verification (Es et al., EACL 2024 demo) with FEVER's three labels
    (Thorne et al., NAACL 2018)."""
    p = params
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


#: How many of an answer's weakest claims :func:`answer_support` averages: fitted on BEGIN dev (ROC AUC
#: for "fully attributable" of 1 - the score, over k in {1, 2, 3}: 0.9450, 0.9451, 0.9435; the mean
#: of all claims 0.9417), never on the evaluation sets.
WEAKEST_CLAIMS = 2


def answer_support(scores: Iterable[float | None], k: int = WEAKEST_CLAIMS) -> float | None:
    """The graded support of a whole answer: the mean ``support_score`` of its ``k`` weakest claims.

    Input: the ``support_score`` of each of the answer's claims (floats in [0, 1]; None, a claim
    without a graded score, is skipped); ``k`` >= 1 (default :data:`WEAKEST_CLAIMS`). Output: the
    mean of the ``k`` lowest scores (of all of them when fewer), a float in [0, 1]; None when no
    claim has a score (no claims, or a judge that gives none: not evaluable, never 0). Raises
    ValueError for ``k`` < 1.

    Why the weakest claims and not all: an answer is attributable only when *all* of it is
    supported (AIS, Rashkin et al., Computational Linguistics 49(4), 2023; BEGIN's "fully
    attributable", Dziri et al., TACL 2022; this judge's holistic YES needs every claim
    SUPPORTED), so one unsupported claim makes it unfaithful however many others are supported. The
    mean of all claims (FActScore's and Ragas faithfulness's share of supported claims) measures
    *how much* is supported: in a long answer it dilutes one unsupported claim among many
    (docs/judges.md, graded support). ``k`` = 1 is the minimum.
    """
    if isinstance(k, bool) or int(k) < 1:
        raise ValueError(f"k must be a whole number >= 1, got {k!r}")
    present = sorted(float(s) for s in scores if s is not None)
    if not present:
        return None
    low = present[: int(k)]
    return sum(low) / len(low)
