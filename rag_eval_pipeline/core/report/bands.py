"""What the report shows and how it reads a value: the headline metrics, their notes, and the
interpretation bands of a faithfulness mean.

The bands (definitions in ``docs/METRICS.md``, section faithfulness): >= 0.85, 0.65-0.84,
0.50-0.64, < 0.50, read as the half-open intervals [0.85, 1], [0.65, 0.85), [0.50, 0.65), [0, 0.50).
Nothing here imports Dagster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS as HEADLINE_METRICS  # re-exported
from rag_eval_pipeline.core.metrics.names import LOWER_IS_BETTER as LOWER_IS_BETTER  # re-exported
from rag_eval_pipeline.core.metrics.names import METRICS
from rag_eval_pipeline.core.metrics.names import is_judge_based as is_judge_based  # re-exported
from rag_eval_pipeline.core.metrics.names import metric_label as metric_label  # re-exported

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
#: One line per metric for titles and trend captions: its declared definition (``core/metrics/names.py``),
#: with "(lower is better)" where that is its direction.
METRIC_NOTES: dict[str, str] = {m.name: m.definition + ("" if m.higher_is_better else " (lower is better)")
                                for m in METRICS}


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




#: Where users read every metric's definition, denominator, null rule and public source.
DEFINITIONS_DOC = "docs/METRICS.md"

def definition_ref(metric: str | None = None) -> str:
    """Where a metric is defined: ``docs/METRICS.md#<metric>`` (the base name, lower case, as the
    section's anchor), or ``docs/METRICS.md`` for None. Never raises."""
    return DEFINITIONS_DOC if not metric else f"{DEFINITIONS_DOC}#{metric.lower()}"
