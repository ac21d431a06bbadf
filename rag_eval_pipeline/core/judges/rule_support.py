"""The embedded judge's support verdicts (citation support, nugget coverage): the faithfulness rule
of :mod:`~rag_eval_pipeline.core.judges.rule_based`, applied to an item and the passages it is
judged against alone, on the three-level scale of the TREC 2024 RAG track (full / partial / no
support; Thakur et al., arXiv 2504.15205) and of AutoNuggetizer (support / partial_support /
not_support; Pradeep et al., arXiv 2411.09607).

Per item (a claim and its cited chunks, or a golden nugget and the answer):

1. An item that is a question or speaks in the first person is NOT_SUPPORTED (no passage can
   support it), as in faithfulness.
2. The item is split into its claims (:func:`~rag_eval_pipeline.core.judges.rule_based.checkable_claims`;
   a nugget "30 days, counted from delivery" is two facts). Each claim goes through the judge's own
   claim-vs-passages decision (:meth:`~rag_eval_pipeline.core.judges.rule_based.RuleBasedJudge.support`,
   the faithfulness rule with its fitted parameters): a claim is *supported* when that decision is
   SUPPORTED, and *near* a sentence that holds at least ``lexical_floor`` of its content words, every
   number of the claim and the same negation (some of the claim is there, not all of it).
3. **SUPPORTED** when every claim is supported; **PARTIAL** when at least one claim is supported or
   near; **NOT_SUPPORTED** otherwise (a contradiction is named in the justification). The quote is
   the first supporting (else near) sentence, verbatim; the caller checks it in code.

``support_prompt_sha256(family)`` = sha256 of the judge's parameter hash, the family and
:data:`SUPPORT_RULE_VERSION`, so a change of either rule or parameters changes it.
"""

from __future__ import annotations

import hashlib

from rag_eval_pipeline.core.judges.base import SupportRequest, SupportVerdict
from rag_eval_pipeline.core.judges.evidence import opposed
from rag_eval_pipeline.core.judges.quotes import quote_in_context

#: Bumped when the support rule above changes (part of ``support_prompt_sha256``).
SUPPORT_RULE_VERSION = "support_rule_v1"


def support_prompt_sha256(params_sha256: str, family: str) -> str:
    """The hex sha256 that pins the embedded judge's rule for ``family`` (module docstring)."""
    return hashlib.sha256(f"{params_sha256}\n{family}\n{SUPPORT_RULE_VERSION}".encode()).hexdigest()


def rule_support(judge, request: SupportRequest) -> list[SupportVerdict]:
    """Verdicts of the embedded ``judge`` (a :class:`~rag_eval_pipeline.core.judges.rule_based.RuleBasedJudge`)
    on every item of ``request`` (rules in the module docstring): each fact of an item through the judge's
    own claim-vs-passages decision (:meth:`~rag_eval_pipeline.core.judges.rule_based.RuleBasedJudge.support`).

    Output: one SupportVerdict per item, in order, ids from ``request.item_ids`` (or "1", "2", ...).
    Never raises for string input (ImportError when the encoder's package is missing).
    """
    # the judge's own text rules (its class exposes them: this module never imports rule_based, no import circle)
    checkable_claims, context_sentences, fixed_reason = (judge.checkable_claims, judge.context_sentences,
                                                         judge.fixed_reason)
    ids = list(request.item_ids) or [str(i) for i in range(1, len(request.items) + 1)]
    passages = [p or "" for p in request.passages]
    params = judge.params
    sentences = context_sentences(passages, int(params.get("sentence_window", 1)),
                                  str(params.get("extra_scope", "passage")))
    out: list[SupportVerdict] = []
    for item_id, item in zip(ids, request.items):
        reason = fixed_reason(item)
        if reason:
            out.append(SupportVerdict(item_id, "NOT_SUPPORTED", None, reason))
            continue
        if not sentences:
            out.append(SupportVerdict(item_id, "NOT_SUPPORTED", None, "no passage text to judge against"))
            continue
        claims = checkable_claims(item) or [item]
        supported, near, contradicted = [], [], []
        for claim in claims:
            v = judge.support(claim, passages)
            if v.verdict == "SUPPORTED" and quote_in_context(v.quote, passages):
                supported.append((claim, v.quote))
                continue
            if v.verdict == "CONTRADICTED":
                contradicted.append(claim)
                continue
            (row,) = judge.evidence_table([claim], sentences)
            close = [j for j, ev in enumerate(row) if ev.lexical >= params["lexical_floor"] and ev.numbers_ok
                     and not opposed(ev)]
            if close:
                best = -max((row[j].lexical, -j) for j in close)[1]  # the highest overlap, the first on ties
                near.append((claim, sentences[best].text))
        parts = [f"{len(supported)} of {len(claims)} fact(s) supported"]
        if near:
            parts.append(f"{len(near)} in part (some words and every number, not enough for support)")
        if contradicted:
            parts.append(f"contradicted: {'; '.join(contradicted)[:200]}")
        why = ", ".join(parts)
        if len(supported) == len(claims):
            out.append(SupportVerdict(item_id, "SUPPORTED", supported[0][1], why))
        elif supported or near:
            out.append(SupportVerdict(item_id, "PARTIAL", (supported or near)[0][1], why))
        else:
            out.append(SupportVerdict(item_id, "NOT_SUPPORTED", None, why))
    return out
