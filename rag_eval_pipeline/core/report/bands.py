"""What the report shows and how it reads a value: the headline metrics, their notes, and the
interpretation bands of a faithfulness mean.

The bands (definitions in ``docs/METRICS.md``, section faithfulness): >= 0.85, 0.65-0.84,
0.50-0.64, < 0.50, read as the half-open intervals [0.85, 1], [0.65, 0.85), [0.50, 0.65), [0, 0.50).
Nothing here imports Dagster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

HEADLINE_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("P", 5), ("success", 5), ("ndcg_cut", 10), ("recip_rank", None), ("map", None),
    ("claim_evidence_availability", 5), ("evidence_retrieved", None), ("coverage", None),
    ("answer_without_evidence_rate", None), ("false_abstention_rate", None),
    ("abstention_with_evidence", None), ("abstention_without_evidence", None),
    ("faithfulness", None), ("faithfulness_holistic", None), ("contradicted_claim_rate", None),
    ("judge_error_rate", None), ("run_error_rate", None),
)
#: Metrics of the "retrieval failure versus abstention" table.
DECISION_METRICS: tuple[str, ...] = (
    "evidence_retrieved", "false_abstention_rate", "abstention_with_evidence", "abstention_without_evidence",
    "answer_without_evidence_rate", "coverage", "run_error_rate",
)
#: Metrics of the per-segment breakdown.
SEGMENT_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("evidence_retrieved", None), ("coverage", None), ("false_abstention_rate", None),
    ("answer_without_evidence_rate", None), ("faithfulness", None),
)
#: Metrics the interpretation bands apply to (a mean faithfulness score).
BANDED_METRICS: frozenset[str] = frozenset({"faithfulness", "faithfulness_holistic"})
#: Lower-is-better metrics (a rising line is bad).
LOWER_IS_BETTER: frozenset[str] = frozenset({
    "answer_without_evidence_rate", "false_abstention_rate", "contradicted_claim_rate", "judge_error_rate",
    "run_error_rate", "quote_downgrade_rate", "abstention_with_evidence",
})
METRIC_NOTES: dict[str, str] = {
    "recall": "share of a question's relevant chunks found in the top k",
    "P": "share of the top k that is relevant",
    "success": "1 when any relevant chunk is in the top k",
    "ndcg_cut": "graded ranking quality of the top k",
    "recip_rank": "1 / rank of the first relevant chunk",
    "map": "mean average precision",
    "claim_evidence_availability": "share of golden claims with a supporting chunk in the top k",
    "evidence_retrieved": "answerable questions where any evidence chunk was retrieved, at any rank",
    "coverage": "answered share of the answerable and absent questions",
    "answer_without_evidence_rate": "absent questions answered anyway (lower is better)",
    "false_abstention_rate": "answerable questions the system abstained on (lower is better)",
    "abstention_with_evidence": ("abstentions on answerable questions with the evidence in the context: "
                                 "a generator miss"),
    "abstention_without_evidence": "abstentions on answerable questions without the evidence: a retrieval failure",
    "faithfulness": "SUPPORTED claims / judged claims, per answer, averaged",
    "faithfulness_holistic": "whole-answer score YES 1 / PARTIAL 0.5 / NO 0, averaged",
    "contradicted_claim_rate": "CONTRADICTED claims / judged claims (lower is better)",
    "judge_error_rate": "claim rows the judge failed on (lower is better)",
    "run_error_rate": "questions whose run failed (lower is better)",
}


@dataclass(frozen=True)
class Band:
    """One interpretation band of a faithfulness mean: ``low`` <= value < next band's low."""

    label: str  # the range as written in the definitions, e.g. "0.65–0.84"
    low: float
    name: str  # short name
    reading: str  # what to do, in this project's words
    css: str


BANDS: tuple[Band, ...] = (
    Band("≥ 0.85", 0.85, "healthy", "unsupported claims are rare", "band-good"),
    Band("0.65–0.84", 0.65, "room to improve",
         "tighten the instruction against unsupported statements, or revisit how many chunks reach the generator",
         "band-fair"),
    Band("0.50–0.64", 0.50, "frequent unsupported claims",
         "read the worst questions below claim by claim and fix the most common failure first", "band-poor"),
    Band("below 0.50", 0.0, "broken",
         "something basic is wrong: suspect the judge itself, or a prompt that constrains nothing", "band-bad"),
)
_BAND_EPS = 1e-9


def interpretation_band(value: float | None) -> Band | None:
    """The interpretation band of a faithfulness value.

    Input: a float in [0, 1], or None/NaN. Output: the :class:`Band` (label "≥ 0.85" for 0.85 and above,
    "0.65–0.84" for [0.65, 0.85), "0.50–0.64" for [0.50, 0.65), "below 0.50" under that), or None for a
    null/NaN value (not evaluable has no band). A tolerance of 1e-9 absorbs float rounding at the
    edges (17/20 lands in the top band). Raises ValueError for a value outside [0, 1].
    Source: ``docs/METRICS.md``, section faithfulness (how to read the mean).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if value < -_BAND_EPS or value > 1 + _BAND_EPS:
        raise ValueError(f"a faithfulness value lies in [0, 1], got {value!r}")
    for band in BANDS:
        if value + _BAND_EPS >= band.low:
            return band
    return BANDS[-1]  # pragma: no cover - the last band starts at 0


def metric_label(metric: str, k: int | None) -> str:
    """The trec_eval-style name of a (metric, k) row: ("recall", 5) -> "recall_5"; ("map", None) -> "map"."""
    return metric if k is None else f"{metric}_{k}"



#: Where users read every metric's definition, denominator, null rule and public source.
DEFINITIONS_DOC = "docs/METRICS.md"
#: Metric names whose values come from a judge (a model, a rule or a person), by prefix.
JUDGE_BASED_PREFIXES: tuple[str, ...] = (
    "faithfulness", "contradicted_claim_rate", "quote_downgrade_rate", "judge_error_rate", "answer_relevance",
    "answer_relevancy", "context_relevance", "answer_correctness", "correctness",
)


def is_judge_based(metric: str) -> bool:
    """True when ``metric``'s value comes from judge labels (see :data:`JUDGE_BASED_PREFIXES`). Never raises."""
    return isinstance(metric, str) and metric.startswith(JUDGE_BASED_PREFIXES)


def definition_ref(metric: str | None = None) -> str:
    """Where a metric is defined: ``docs/METRICS.md#<metric>`` (the base name, lower case, as the
    section's anchor), or ``docs/METRICS.md`` for None. Never raises."""
    return DEFINITIONS_DOC if not metric else f"{DEFINITIONS_DOC}#{metric.lower()}"
