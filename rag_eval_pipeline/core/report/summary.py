"""The report's summary sections, read from ``metric_summary`` at split all: the headline metrics per system
(with the faithfulness bands, read only when the judge passed calibration), retrieval failures and
abstentions side by side, and the per-segment breakdown. Definitions: ``docs/METRICS.md``. Nothing here
imports Dagster.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.metrics.doc_level import metric_levels, sole_level
from rag_eval_pipeline.core.metrics.names import level_label
from rag_eval_pipeline.core.report.bands import (
    BANDED_METRICS,
    BANDS,
    DECISION_METRICS,
    HEADLINE_METRICS,
    METRIC_NOTES,
    SEGMENT_METRICS,
    definition_ref,
    interpretation_band,
    is_judge_based,
)
from rag_eval_pipeline.core.report.blocks import Block, Cell, fmt_count, heading, num_cell, para, value_cell
from rag_eval_pipeline.core.report.context import EvidenceRank

__all__ = ["decisions_section", "headline_section", "segments_section"]


def _pick_k(summary: pl.DataFrame, metric: str, preferred: int | None) -> int | None:
    """``preferred`` when the summary has it for ``metric``; else the largest k below it, else the smallest."""
    ks = sorted({k for k in summary.filter(pl.col("metric") == metric)["k"].to_list() if k is not None})
    if preferred is None or not ks:
        return None if not ks else (preferred if preferred in ks else ks[-1])
    if preferred in ks:
        return preferred
    below = [k for k in ks if k < preferred]
    return below[-1] if below else ks[0]


def _summary_rows(summary: pl.DataFrame, split: str, segment: str) -> dict[tuple[str, str, int | None], dict]:
    rows = summary.filter((pl.col("split") == split) & (pl.col("segment") == segment))
    return {(r["system"], r["metric"], r["k"]): r for r in rows.iter_rows(named=True)}


def _band_reading(value: float, ci: tuple[float | None, float | None], judge_errors: int, calibrated: bool,
                  why_not: str) -> tuple[str, str | None, str | None]:
    """(reading, css, headline band) of one banded value: the band only when the judge passed
    calibration; never the top band's "healthy" while judge errors exist."""
    band = interpretation_band(min(max(value, 0.0), 1.0))
    if band is None:
        return "", None, None
    if not calibrated:
        return (f"judge not calibrated ({why_not}): the bands are not read; see the judge's calibration below",
                "na", "judge not calibrated")
    if judge_errors and band is BANDS[0]:
        return (f"{band.label} over the judged claims only: {judge_errors} judge error(s) left out; judge them "
                "again before reading this band", "na", f"{band.label} ({judge_errors} judge errors)")
    reading = f"{band.label}: {band.name} — {band.reading}"
    if judge_errors:
        reading += f" ({judge_errors} judge error(s) left out)"
    lo_v, hi_v = ci
    if lo_v is not None and hi_v is not None:
        lo = interpretation_band(min(max(lo_v, 0.0), 1.0))
        hi = interpretation_band(min(max(hi_v, 0.0), 1.0))
        if lo is not None and hi is not None and lo != hi:
            reading += f" (the 95% CI spans bands {lo.label} to {hi.label})"
    return reading, band.css, band.label


def headline_section(summary: pl.DataFrame, systems: list[str], calibrated: bool, why_not: str
                     ) -> tuple[list[Block], list[dict]]:
    """The "Summary (split all)" section: per system, one row per headline metric and level (value,
    numerator/denominator, n, not evaluable, 95% CI, judge errors, small-segment flag, the faithfulness band's
    reading: only when ``calibrated``, never the top band with judge errors; ``why_not`` says why not).

    Inputs: ``metric_summary`` rows (every level), the systems, the calibration verdict. Output: (blocks, the
    :class:`~rag_eval_pipeline.core.report.build.Report` ``headline`` rows). Null values read "not evaluable",
    never 0. Bands: ``docs/METRICS.md``."""
    top = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
    if "level" not in top.columns:
        top = top.with_columns(pl.lit(None, pl.Utf8).alias("level"))
    rows_by_key = {(r["system"], r["metric"], r["k"], r["level"]): r for r in top.iter_rows(named=True)}
    with_doc = bool(top.filter(pl.col("level") == "doc").height)
    blocks: list[Block] = [
        heading("Summary (split all)", 2),
        Block("note", text="All questions (split all, segment all). Value with numerator/denominator; n = questions "
                           "in the set; not evaluable = questions outside the metric's denominator (a null, never a "
                           "0). 95% CI: Wilson for 0/1 rates, percentile bootstrap otherwise. * = small segment. "
                           "judge errors = claim labels the judge failed on, beside every judge-based value. "
                           "Faithfulness bands: ≥ 0.85, 0.65–0.84, 0.50–0.64, below 0.50, read only when the judge "
                           "passed calibration and made no error. Definitions: " + definition_ref() + "."),
    ]
    if with_doc:
        blocks.append(Block("note", text="(doc) = scored per document: the golden set judges relevance per document "
                                         "(relevant_docs); each document counts once, at the rank of its first "
                                         "retrieved chunk. Definitions: "
                                         + definition_ref("document-level-relevance") + "."))
    if not calibrated:
        blocks.append(Block("note", text=f"Judge not calibrated ({why_not}): judge-based values are provisional "
                                         "and their bands are not read."))
    headline: list[dict] = []
    for system in systems:
        table_rows = []
        for metric, pref, level in [(m, p, lv) for m, p in HEADLINE_METRICS for lv in metric_levels(summary, m)]:
            k = _pick_k(summary, metric, pref)
            r = rows_by_key.get((system, metric, k, level))
            if r is None:
                continue
            label = level_label(metric, k, level)
            judge_based = is_judge_based(metric)
            judge_errors = int(r["judge_errors"] or 0) if judge_based else None
            reading, reading_css, band_label = "", None, None
            if metric in BANDED_METRICS and r["value"] is not None:
                reading, reading_css, band_label = _band_reading(r["value"], (r["ci_low"], r["ci_high"]),
                                                                 judge_errors or 0, calibrated, why_not)
            if r["value"] is None:
                value_cell = Cell("not evaluable", css="na", title="denominator 0")
                nd = Cell(f"—/{fmt_count(r['denominator'] or 0)}", css="na")
            else:
                value_cell = num_cell(f"{r['value']:.4f}")
                nd = num_cell(f"{fmt_count(r['numerator'])}/{fmt_count(r['denominator'])}")
            ci = ("—" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['ci_method']}")
            errors_cell = (Cell("—", title="not judge-based") if judge_errors is None
                           else num_cell(str(judge_errors), css="flag" if judge_errors else None))
            table_rows.append([
                Cell(label, title=f"{METRIC_NOTES.get(metric, '')} ({definition_ref(metric)})"), value_cell, nd,
                num_cell(str(r["n"])), num_cell(str(r["n_not_evaluable"]), css="na" if r["n_not_evaluable"] else None),
                Cell(ci), errors_cell, Cell("small segment" if r["small_segment"] else "",
                                            css="flag" if r["small_segment"] else None),
                Cell(reading, css=reading_css),
            ])
            headline.append({"system": system, "metric": label, "value": r["value"], "numerator": r["numerator"],
                             "denominator": r["denominator"], "n": r["n"], "n_not_evaluable": r["n_not_evaluable"],
                             "ci_low": r["ci_low"], "ci_high": r["ci_high"], "judge_errors": judge_errors,
                             "band": band_label})
        blocks.append(heading(f"{system}", 3))
        if table_rows:
            blocks.append(Block("table", headers=["metric", "value", "num/den", "n", "not evaluable", "95% CI",
                                                  "judge errors", "flags", "reading"], rows=table_rows, css="headline"))
        else:
            blocks.append(para("No summary rows for this system."))
    return blocks, headline


def decisions_section(summary: pl.DataFrame, systems: list[str],
                      ranks: dict[tuple[str, str], EvidenceRank]) -> list[Block]:
    """The "Retrieval failures and abstentions (split all)" section: the decision metrics per system, kept
    apart, and the context-window misses of ``ranks`` (evidence retrieved only below ``context_k``).

    Inputs: ``metric_summary`` (primary level), the systems, ``ranks`` from
    :func:`~rag_eval_pipeline.core.report.context.evidence_ranks`. Output: blocks. Definitions:
    ``docs/METRICS.md`` (evidence_retrieved, abstention with and without evidence)."""
    rows_by_key = _summary_rows(summary, "all", "all")
    blocks = [
        heading("Retrieval failures and abstentions (split all)", 2),
        Block("note", text="Kept apart: evidence_retrieved = answerable questions whose evidence was retrieved at "
                           "any rank; context-window misses = those whose evidence was retrieved only below the "
                           "generator's context window (context_k), so the generator never saw it; of the "
                           "abstentions on answerable questions, abstention_with_evidence had the evidence "
                           "retrieved (a generator miss, unless it was a context-window miss) and "
                           "abstention_without_evidence did not (a retrieval failure, where abstaining was right). "
                           "answer_without_evidence_rate = absent questions answered. Definitions: "
                           + definition_ref("evidence_retrieved") + "."),
    ]
    rows = []
    for system in systems:
        mine = [r for (s, _q), r in ranks.items() if s == system]
        known = [r for r in mine if r.context_k is not None]
        if not known:
            miss = Cell("context_k unknown", css="na", title="the run manifest records no context_k")
        else:
            ks = sorted({r.context_k for r in known if r.context_k is not None})
            misses = sum(r.miss for r in known)
            miss = num_cell(f"{misses}/{len(known)} (context_k {', '.join(map(str, ks))})",
                            css="flag" if misses else None, title="answerable questions with evidence")
        rows.append([system] + [value_cell(rows_by_key.get((system, m, None))) for m in DECISION_METRICS] + [miss])
    blocks.append(Block("table", headers=["system", *DECISION_METRICS, "context-window misses"], rows=rows))
    return blocks


def segments_section(summary: pl.DataFrame, systems: list[str]) -> list[Block]:
    """The "By segment (split all)" section: per system one row per segment (n, then each segment metric's
    value with numerator/denominator; judge-based values carry their judge-error count).

    Inputs: ``metric_summary`` (primary level), the systems. Output: blocks (a note when the golden set has
    no segment tags). Segments: :func:`~rag_eval_pipeline.core.metrics.segments.question_segments`."""
    blocks = [heading("By segment (split all)", 2),
              Block("note", text="Split all. Each cell: value (numerator/denominator); * = small segment (fewer "
                                 "questions than the configured minimum): read with care; judge-based values carry "
                                 "their judge-error count.")]
    seg = summary.filter((pl.col("split") == "all") & (pl.col("segment") != "all"))
    if not seg.height:
        blocks.append(para("No segment tags in the golden set."))
        return blocks
    metrics = [(m, _pick_k(summary, m, k)) for m, k in SEGMENT_METRICS]
    metrics = [(m, k) for m, k in metrics if summary.filter(pl.col("metric") == m).height]
    by_key = {(r["system"], r["segment"], r["metric"], r["k"]): r for r in seg.iter_rows(named=True)}
    n_by = {(r["system"], r["segment"]): r["n"] for r in seg.iter_rows(named=True)}
    segments = sorted(seg["segment"].unique().to_list())
    for system in systems:
        rows = []
        for s in segments:
            if (system, s) not in n_by:
                continue
            rows.append([s, num_cell(str(n_by[(system, s)]))]
                        + [value_cell(by_key.get((system, s, m, k)), is_judge_based(m)) for m, k in metrics])
        if rows:
            blocks.append(heading(system, 3))
            headers = ["segment", "n", *[level_label(m, k, sole_level(summary, m)) for m, k in metrics]]
            blocks.append(Block("table", headers=headers, rows=rows))
    return blocks
