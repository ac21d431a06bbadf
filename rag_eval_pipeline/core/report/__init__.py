"""Reports people read: one Markdown and one self-contained HTML page per evaluation run, and a trend page.

The package's parts: :mod:`.access` (who may read what: the access-control policy), :mod:`.bands` (headline
metrics and the faithfulness bands), :mod:`.blocks` (the document model), :mod:`.markdown` and :mod:`.html`
(the two renderings; :func:`markdown_table` is the one Markdown-table helper), :mod:`.build` (the report: its
run header, the sections in order), the sections :mod:`.summary` (headline metrics, abstentions, segments),
:mod:`.gates` (the baseline comparison), :mod:`.judge_trust` (calibration and noise), :mod:`.citations` and
:mod:`.questions`, :mod:`.trend` (the SVG trend charts and the history section), :mod:`.decision` (verdict and
promotion: the report's first section, shared with the CLI's CI outputs), :mod:`.compare` (any two runs side
by side). Nothing here imports Dagster.
"""

from rag_eval_pipeline.core.report.access import (
    LEAK_WINDOW,
    PREVIEW_CHARS,
    ReportAccess,
    find_leaks,
    readable_by,
)
from rag_eval_pipeline.core.report.bands import (
    BANDED_METRICS,
    BANDS,
    DECISION_METRICS,
    HEADLINE_METRICS,
    LOWER_IS_BETTER,
    METRIC_NOTES,
    SEGMENT_METRICS,
    Band,
    interpretation_band,
    metric_label,
)
from rag_eval_pipeline.core.report.blocks import Block, Cell
from rag_eval_pipeline.core.report.build import Report, build_report
from rag_eval_pipeline.core.report.decision import Decision, decide, decision_blocks
from rag_eval_pipeline.core.report.markdown import markdown_table
from rag_eval_pipeline.core.report.questions import question_anchor, regressed_questions
from rag_eval_pipeline.core.report.trend import trend_plot, trend_svg

__all__ = [
    "BANDED_METRICS", "BANDS", "Block", "Cell", "DECISION_METRICS", "Decision", "decide", "decision_blocks",
    "question_anchor", "regressed_questions", "HEADLINE_METRICS", "LEAK_WINDOW",
    "LOWER_IS_BETTER",
    "METRIC_NOTES", "PREVIEW_CHARS", "SEGMENT_METRICS", "Band", "Report", "ReportAccess", "build_report",
    "find_leaks", "interpretation_band", "markdown_table", "metric_label", "readable_by", "trend_plot", "trend_svg",
]
