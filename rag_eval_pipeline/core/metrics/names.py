"""Every metric name the pipeline writes, in one module that imports no metric code.

The configuration checks gate names against :data:`PIPELINE_METRICS` and parses readable retrieval
names with :func:`parse_measure`, so it needs no metric module; the metric modules take their names
from here. Definitions, denominators and null rules of every name: ``docs/METRICS.md``.

Retrieval names are trec_eval's (``usnistgov/trec_eval``, ``m_*.c``); the cutoff is stored apart in
the ``k`` column (``recall`` with k = 5) and printed as trec_eval does (``recall_5``).
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.errors import ConfigError

# ----------------------------------------------------------------------------- retrieval (trec_eval)

#: Measures without a cutoff, in trec_eval's print order (``ndcg`` is full-depth nDCG, ``m_ndcg.c``).
UNCUT_MEASURES = ("num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank", "ndcg")
#: Measures computed at every k, in trec_eval's print order (F1 and recip_rank_cut are not trec_eval's).
CUT_MEASURES = ("P", "recall", "ndcg_cut", "success", "F1", "recip_rank_cut")
MEASURES = UNCUT_MEASURES + CUT_MEASURES
#: What the pipeline computes (and ``measures=None`` means): every measure except the cut reciprocal
#: rank and full-depth nDCG, which are computed when asked for (the trec_eval command, a ``measures``
#: list).
DEFAULT_MEASURES = tuple(m for m in MEASURES if m not in ("recip_rank_cut", "ndcg"))
#: Measures that are null (status ``no_relevant``) for a question with num_rel == 0 (the nDCGs: with
#: no judged grade > 0).
NEEDS_RELEVANT = frozenset({"recall", "F1", "success", "recip_rank", "recip_rank_cut", "map", "Rprec"})
#: Count measures: summed, not averaged, in trec_eval's ``all`` line.
COUNT_MEASURES = ("num_ret", "num_rel", "num_rel_ret")
RANKING_MODES = ("system", "trec_eval")

#: Readable names (lower case, before an optional ``@k``) -> trec_eval base name. With a cutoff,
#: ``mrr@k`` (and ``rr@k``) mean ``recip_rank_cut`` and ``ndcg@k`` means ``ndcg_cut``; without one,
#: ``mrr`` is ``recip_rank`` and ``ndcg`` is trec_eval's full-depth ``ndcg``.
ALIASES: dict[str, str] = {
    "precision": "P",
    "p": "P",
    "recall": "recall",
    "r": "recall",
    "f1": "F1",
    "f": "F1",
    "hit": "success",
    "hits": "success",
    "hit_rate": "success",
    "hitrate": "success",
    "success": "success",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "recip_rank": "recip_rank",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg_cut",
    "map": "map",
    "ap": "map",
    "rprec": "Rprec",
    "r_precision": "Rprec",
    "r-precision": "Rprec",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
}
#: An uncut base name that takes a cutoff under another name: ``mrr@10`` -> ``recip_rank_cut``.
_CUT_FORM = {"recip_rank": "recip_rank_cut", "ndcg": "ndcg_cut"}
_CUT_NAME = re.compile(r"^(?P<base>.+?)(?:[@_](?P<k>\d+))?$")

CLAIM_METRIC = "claim_evidence_availability"

# ----------------------------------------------------------------------------- other families

#: Decision metrics (abstention, clarification, run errors; SQuAD 2.0's answerable / unanswerable split).
DECISION_METRICS: tuple[str, ...] = (
    "coverage",
    "answer_without_evidence_rate",
    "false_abstention_rate",
    "clarify_on_binary_rate",
    "evidence_retrieved",
    "abstention_with_evidence",
    "abstention_without_evidence",
    "clarify_asked_rate",
    "clarify_answered_rate",
    "clarify_abstained_rate",
    "run_error_rate",
    "abstention_text_in_answer",
)
#: Claim-level faithfulness (Ragas' ``faithfulness``) and the judge's error counts beside it.
FAITHFULNESS_METRICS = (
    "faithfulness",
    "faithfulness_holistic",
    "contradicted_claim_rate",
    "quote_downgrade_rate",
    "judge_error_rate",
)
#: Token overlap with the reference answer (SQuAD's F1 and recall).
CORRECTNESS_METRICS = ("answer_token_f1", "reference_token_recall")
#: Model-judged answer quality (Ragas' answer relevancy, ARES' context relevance, correctness).
QUALITY_METRICS = ("answer_relevance", "answer_relevancy", "context_relevance", "answer_correctness",
                   "faithfulness_holistic_model")

#: Every metric name the pipeline writes to ``question_metrics`` (base names; the cutoff is ``k``).
PIPELINE_METRICS: frozenset[str] = frozenset((*DEFAULT_MEASURES, CLAIM_METRIC, *DECISION_METRICS,
                                              *FAITHFULNESS_METRICS, *CORRECTNESS_METRICS, *QUALITY_METRICS))


def trec_name(metric: str, k: int | None) -> str:
    """The trec_eval spelling of ``(metric, k)``: ``"P_5"``, ``"ndcg_cut_10"``, ``"map"``.

    Input: a base measure name and a cutoff or None. Output: ``metric`` when ``k`` is None,
    otherwise ``f"{metric}_{k}"``. Raises nothing. Source: trec_eval's measure names (``m_*.c``).
    """
    return metric if k is None else f"{metric}_{k}"


def level_label(metric: str, k: int | None, level: str | None = None) -> str:
    """A metric row's printed name: :func:`trec_name`, with `` (doc)`` for a document-level row
    (``("recall", 5, "doc")`` -> ``"recall_5 (doc)"``); chunk-level and level-less rows print bare."""
    return trec_name(metric, k) + (" (doc)" if level == "doc" else "")


def parse_measure(name: str) -> tuple[str, int | None]:
    """Parse a measure name into ``(base measure, cutoff or None)``.

    Input: a trec_eval name (``"P_5"``, ``"ndcg_cut_10"``, ``"recip_rank"``, ``"map"``, ``"ndcg"`` =
    full depth), a base name (``"recall"`` -> ``("recall", None)``, meaning "at every k"), or a
    readable alias from :data:`ALIASES` with an optional ``@k`` or ``_k`` (``"recall@5"``,
    ``"hit@1"``, ``"mrr"``, ``"mrr@10"`` -> ``("recip_rank_cut", 10)``, ``"ndcg@10"`` ->
    ``("ndcg_cut", 10)``). Cutoffs are integers >= 1.
    Raises ConfigError for an unknown name, a cutoff below 1, or a cutoff on a measure that takes
    none (``map@5``). Source: trec_eval measure names; readable aliases as ir_measures and ranx
    spell them.
    """
    raw = name.strip()
    if raw in MEASURES:
        return raw, None
    m = _CUT_NAME.match(raw)
    if not m:
        raise ConfigError(f"unknown retrieval measure {name!r}")
    base_raw, k_raw = m.group("base"), m.group("k")
    if base_raw in MEASURES:
        base = base_raw
    else:
        base = ALIASES.get(base_raw.lower())
        if base is None:
            raise ConfigError(f"unknown retrieval measure {name!r}; known: {sorted(MEASURES)} "
                              f"and aliases {sorted(ALIASES)}")
    if k_raw is None:
        return base, None
    k = int(k_raw)
    if k < 1:
        raise ConfigError(f"measure {name!r}: cutoff must be >= 1, got {k}")
    base = _CUT_FORM.get(base, base)
    if base not in CUT_MEASURES:
        raise ConfigError(f"measure {name!r}: {base!r} takes no cutoff")
    return base, k


__all__ = [
    "ALIASES", "CLAIM_METRIC", "CORRECTNESS_METRICS", "COUNT_MEASURES", "CUT_MEASURES", "DECISION_METRICS",
    "DEFAULT_MEASURES", "FAITHFULNESS_METRICS", "MEASURES", "NEEDS_RELEVANT", "PIPELINE_METRICS",
    "QUALITY_METRICS", "RANKING_MODES", "UNCUT_MEASURES", "level_label", "parse_measure", "trec_name",
]
