"""One evaluation run as pages people read: the sections of the report and :func:`build_report`.

Read a run by its mean faithfulness in four bands, then open the questions with low faithfulness
and read, for each, the question, the answer and the previews of the chunks that were retrieved;
one run is noisy, so compare against the judge's own noise before acting on a difference.
Retrieval failure and abstention are shown side by side, never blended. Every metric's definition
is in ``docs/METRICS.md``. Restricted text is withheld by the policy in
:mod:`rag_eval_pipeline.core.report.access`. Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from rag_eval_pipeline.core.config_sections import DEFAULT_KAPPA_FLOOR
from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.metrics.calibration_status import CalibrationStatus, calibration_status
from rag_eval_pipeline.core.metrics.doc_level import metric_levels, primary_level_rows, sole_level
from rag_eval_pipeline.core.metrics.names import level_label
from rag_eval_pipeline.core.report.access import ReportAccess
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
    metric_label,
)
from rag_eval_pipeline.core.report.blocks import (
    Block,
    Cell,
    fmt,
    fmt_count,
    fmt_when,
    heading,
    num_cell,
    para,
    short_sha,
    value_cell,
)
from rag_eval_pipeline.core.report.context import EvidenceRank, evidence_ranks
from rag_eval_pipeline.core.report.decision import Decision, decision_blocks, no_gate_words, split_questions
from rag_eval_pipeline.core.report.html import escape_html, html_page, render_html, toc
from rag_eval_pipeline.core.report.markdown import render_markdown
from rag_eval_pipeline.core.report.questions import WORST_N, regressed_questions, worst_questions
from rag_eval_pipeline.core.report.trend import metric_labels, trend_svg

_NEEDED: dict[str, tuple[str, ...]] = {
    "metric_summary": ("system", "split", "segment", "metric", "k", "value", "numerator", "denominator", "n",
                       "n_not_evaluable", "ci_low", "ci_high", "ci_method", "judge_errors", "ranking_mode",
                       "small_segment"),
    "question_metrics": ("system", "question_id", "metric", "k", "value", "status"),
    "rag_runs": ("system", "question_id", "retrieved", "decision", "answer", "citations", "error",
                 "corpus_version", "golden_version", "retriever", "generator", "model", "prompt_version"),
    "golden_set": ("question_id", "golden_version", "question", "answerability", "relevant", "reference_answer",
                   "claims", "split", "segments"),
    "corpus_snapshot": ("chunk_id", "text", "title", "status", "acl"),
    "judge_labels": ("system", "question_id", "claim_id", "claim", "verdict", "quote", "quote_found",
                     "justification", "judge", "judge_model", "prompt_sha256", "repeat", "error"),
    "answer_judgements": ("system", "question_id", "status", "judge", "judge_model", "prompt_sha256", "repeat"),
}


def _need(df: pl.DataFrame | None, table: str) -> None:
    if df is None:
        raise SchemaError(f"table {table!r} is required for the report")
    missing = [c for c in _NEEDED[table] if c not in df.columns]
    if missing:
        raise SchemaError(f"table {table!r}: missing columns {missing} needed by the report")


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


# --------------------------------------------------------------------------------------------
# the report


@dataclass(frozen=True)
class Report:
    """A rendered report.

    ``markdown`` and ``html`` hold the same content (the HTML is one self-contained page: inline CSS,
    no script, no external asset). ``headline`` is one row per (system, metric label) of the summary
    table: system, metric, value (float or None), numerator, denominator, n, n_not_evaluable, ci_low,
    ci_high, judge_errors (int for a judge-based metric, None otherwise), band (the band's label; "judge
    not calibrated" when the judge is not calibrated; None when no band applies). ``judge_calibrated``
    says whether the judge passed calibration (the run's :class:`CalibrationStatus`), ``why_not_calibrated``
    why not.
    ``withheld`` counts texts withheld by the access rule, ``restricted_chunks`` the chunk previews hidden.
    """

    markdown: str
    html: str
    headline: list[dict[str, Any]]
    withheld: int
    restricted_chunks: int
    judge_calibrated: bool = False
    why_not_calibrated: str = ""



def build_report(
    summary: pl.DataFrame,
    question_metrics: pl.DataFrame,
    rag_runs: pl.DataFrame,
    golden: pl.DataFrame,
    snapshot: pl.DataFrame,
    judge_labels: pl.DataFrame,
    answer_judgements: pl.DataFrame,
    calibration: pl.DataFrame | None = None,
    variance: pl.DataFrame | None = None,
    gates: Sequence[dict] | None = None,
    history: pl.DataFrame | None = None,
    viewer_groups: Sequence[str] | str = ("customers",),
    worst_n: int = WORST_N,
    *,
    baseline_manifest: dict | None = None,
    generated_at: dt.datetime | None = None,
    trend_metrics: Sequence[str | tuple[str, int | None]] = ("faithfulness", "recall_5", "false_abstention_rate"),
    trend_href: str | None = "trend.html",
    kappa_floor: float | None = DEFAULT_KAPPA_FLOOR,
    decision: Decision | None = None,
    gate_split: str | None = None,
    suite: str | None = None,
    citation_claims: pl.DataFrame | None = None,
    citations: pl.DataFrame | None = None,
    nugget_labels: pl.DataFrame | None = None,
    calibration_check: CalibrationStatus | None = None,
    run: Mapping[str, Any] | None = None,
) -> Report:
    """Render one evaluation run as Markdown and as a self-contained HTML page.

    Inputs (polars frames with the ``core.tables`` schemas): ``summary`` (metric_summary),
    ``question_metrics``, ``rag_runs``, ``golden`` (golden_set), ``snapshot`` (corpus_snapshot),
    ``judge_labels``, ``answer_judgements``; optional ``calibration`` (judge_calibration table),
    ``variance`` (judge_variance table), ``gates`` (list of dicts with keys system, metric, k,
    candidate, baseline, difference, p_value (or p), wins, ties, losses, status, reason; e.g.
    ``gate_results.to_dicts()``), ``history`` (metric_history), ``baseline_manifest`` (the promoted
    baseline's manifest.json), ``viewer_groups`` (the reader's groups; a single str counts as one
    group), ``worst_n`` (questions per system and list), ``generated_at`` (shown in the header),
    ``trend_metrics`` (labels drawn inline from ``history``), ``trend_href`` (link to the trend page,
    None for none), ``kappa_floor`` (the configuration's ``calibration.kappa_floor``), ``decision`` (the
    run's :class:`~rag_eval_pipeline.core.report.decision.Decision`: the first section when given),
    ``gate_split`` (the split the gates compare on, named on the comparison table; default the
    decision's, else "test"), ``suite`` (named in the title), ``calibration_check`` (the calibration
    check's :class:`~rag_eval_pipeline.core.metrics.calibration_status.CalibrationStatus`; default the
    decision's; without either, :func:`~rag_eval_pipeline.core.metrics.calibration_status.calibration_status`
    of ``calibration`` at ``kappa_floor``, configured when a calibration table is given). The bands and
    the "judge not calibrated" readings follow that one status, so they never disagree with the decision.
    ``citation_claims`` / ``citations`` / ``nugget_labels``: the citation and completeness tables (the
    "Citations and completeness" section and the per-question detail of which claim cites what and which
    nuggets an answer left out). ``run``: what the run decided on, shown first in the "Run" section (the
    ``decision.json`` keys ``run_id`` and ``inputs.config_sha256``: the Dagster run and the configuration's
    sha256), so a report names the run it describes.

    Output: a :class:`Report`. Sections: the decision (verdict, promotion, blocking failures, comparison
    split, judge calibration, judge errors: the first screen); run header (systems and their manifests,
    corpus and golden versions, judge, model and prompt sha256, ranking mode, viewer groups); per system the headline
    metrics (value, numerator/denominator, n, not-evaluable count, 95% CI, small-segment flag, the
    judge-error count beside every judge-based value, the interpretation band beside faithfulness,
    read only when the judge passed calibration (else "judge not calibrated") and never "healthy"
    with judge errors); retrieval failures and abstentions side by side, with the context-window
    misses (evidence retrieved only below the generator's ``context_k``); a per-segment breakdown; the
    worst questions (lowest faithfulness, answered-absent, false abstention, run errors) with question,
    decision, answer, claims with verdict and quote, and chunk previews; the judge's calibration and
    noise; the baseline comparison; the history. Every table names the split it covers. The questions
    that regressed against the baseline on a gated metric get a card too (anchor ``q-<system>-<question>``,
    :func:`question_anchor`). A null value is shown as "not evaluable" with its
    counts, never as 0. Every text is escaped (``html.escape`` in both renderings); restricted text is
    withheld by the rule in the module docstring.

    Raises SchemaError when a required table is None or misses a column; ValueError when
    ``worst_n`` < 0. Definitions: ``docs/METRICS.md`` (bands, retrieval failure versus abstention).
    """
    for df, name in ((summary, "metric_summary"), (question_metrics, "question_metrics"), (rag_runs, "rag_runs"),
                     (golden, "golden_set"), (snapshot, "corpus_snapshot"), (judge_labels, "judge_labels"),
                     (answer_judgements, "answer_judgements")):
        _need(df, name)
    if worst_n < 0:
        raise ValueError(f"worst_n must be >= 0, got {worst_n}")
    # the summary table shows every level (``recall_5`` and ``recall_5 (doc)``); every other part one number per
    # (system, metric, k): chunk level when a metric has it, else document level
    by_level = summary
    summary, question_metrics = primary_level_rows(summary), primary_level_rows(question_metrics)
    if history is not None:
        history = primary_level_rows(history)
    viewer = (viewer_groups,) if isinstance(viewer_groups, str) else tuple(viewer_groups)
    access = ReportAccess(snapshot, viewer)
    systems = sorted(set(rag_runs["system"].to_list()) | set(summary["system"].to_list()))

    split = gate_split or (decision.split if decision is not None else "test")
    blocks: list[Block] = []
    if decision is not None:
        blocks += decision_blocks(decision)
    blocks += _header(summary, rag_runs, golden, snapshot, judge_labels, answer_judgements, systems, viewer,
                      access, generated_at, baseline_manifest, run or {})
    status = calibration_check or (decision.calibration if decision is not None else None)
    if status is None:
        status = calibration_status(calibration, configured=calibration is not None,
                                    kappa_floor=DEFAULT_KAPPA_FLOOR if kappa_floor is None else kappa_floor,
                                    gated_metrics=())
    calibrated, why_not = status.passed, status.why_not
    ranks = evidence_ranks(rag_runs, golden, snapshot)
    headline_blocks, headline = _headline(by_level, systems, calibrated, why_not)
    blocks += headline_blocks
    blocks += _decisions(summary, systems, ranks)
    citations_at = len(blocks)  # "Citations and completeness" goes here, once the texts are checked for leaks
    blocks += _gates(gates, baseline_manifest, summary, split, golden, decision.thresholds if decision else None)
    blocks += _judge_trust(calibration, variance, calibrated, why_not)
    blocks += _segments(summary, systems)
    blocks += _history(history, trend_metrics, trend_href)
    from rag_eval_pipeline.core.citations.judging import citation_detail
    from rag_eval_pipeline.core.completeness import omitted_nuggets
    from rag_eval_pipeline.core.report.citations import citation_section, nugget_texts

    detail = citation_detail(citation_claims, citations) if citation_claims is not None and citations is not None \
        else None
    omitted = omitted_nuggets(nugget_labels) if nugget_labels is not None else None
    worst = worst_questions(question_metrics, rag_runs, golden, judge_labels, systems, worst_n, access, ranks,
                            regressed=regressed_questions(gates or []), citation_detail=detail, omitted=omitted)
    access.want(*nugget_texts(nugget_labels))
    # the worst questions go last: they are long; their texts are checked for leaks in one pass
    access.finalize()
    if citations is not None or nugget_labels is not None:
        blocks[citations_at:citations_at] = citation_section(summary, systems, citations, nugget_labels, golden,
                                                             access, worst_n)
    blocks += worst(access)

    title = "RAG evaluation report" + (f" — {suite}" if suite else "")
    md = f"# {title}\n\n" + render_markdown(blocks)
    body = f"<h1>{escape_html(title)}</h1>\n" + toc(blocks) + "\n" + render_html(blocks)
    return Report(markdown=md, html=html_page(title, body), headline=headline, withheld=access.withheld,
                  restricted_chunks=access.hidden_previews, judge_calibrated=calibrated, why_not_calibrated=why_not)


def _header(summary, rag_runs, golden, snapshot, judge_labels, answer_judgements, systems, viewer, access,
            generated_at, baseline_manifest, run) -> list[Block]:
    blocks: list[Block] = [heading("Run", 2),
                           Block("note", text="What was evaluated: versions, judge, systems and their configuration.")]
    facts = []
    if run.get("run_id"):
        facts.append(["Dagster run", str(run["run_id"])])
    if run.get("config_sha256"):
        facts.append(["configuration sha256", str(run["config_sha256"])])
    if generated_at is not None:
        facts.append(["generated at", generated_at.isoformat(timespec="seconds")])
    corpus_versions = sorted({v for v in rag_runs["corpus_version"].to_list() if v})
    golden_versions = sorted({v for v in golden["golden_version"].to_list() if v})
    facts.append(["corpus version", ", ".join(corpus_versions) or "unknown"])
    facts.append(["corpus", f"{snapshot.height} chunks, {len(access.restricted)} restricted for this viewer"])
    facts.append(["golden version", ", ".join(golden_versions) or "unknown"])
    splits = dict(golden.group_by("split").len().iter_rows()) if golden.height else {}
    classes = dict(golden.group_by("answerability").len().iter_rows()) if golden.height else {}
    facts.append(["golden questions", f"{golden.height} (" + ", ".join(f"{k} {v}" for k, v in sorted(splits.items()))
                  + "; " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())) + ")"])
    judges = (judge_labels.select("judge", "judge_model", "prompt_sha256")
              .vstack(answer_judgements.select("judge", "judge_model", "prompt_sha256"))
              .unique().sort("judge", "judge_model", nulls_last=True))
    for j in judges.iter_rows(named=True):
        facts.append(["judge", f"{j['judge']} · model {j['judge_model']} · prompt sha256 {j['prompt_sha256']}"])
    if not judges.height:
        facts.append(["judge", "no judged answer"])
    repeats = answer_judgements["repeat"].n_unique() if answer_judgements.height else 0
    facts.append(["judge repeats", str(repeats)])
    modes = sorted({m for m in summary["ranking_mode"].to_list() if m})
    facts.append(["ranking mode", ", ".join(modes) or "unknown"])
    facts.append(["viewer groups", ", ".join(viewer) or "(none: only chunks open to everyone are shown)"])
    if baseline_manifest:
        facts.append(["promoted baseline", f"{baseline_manifest.get('system')} (promoted "
                                           f"{baseline_manifest.get('promoted_at', '?')})"])
    blocks.append(Block("table", headers=["", ""], rows=facts, css="meta"))

    rows = []
    first = rag_runs.group_by("system", maintain_order=True).first()
    for r in first.sort("system").iter_rows(named=True):
        n = rag_runs.filter(pl.col("system") == r["system"]).height
        rows.append([r["system"], str(n), r["generator"] or "", r["model"] or "", r["prompt_version"] or "",
                     Cell(r["retriever"] or "", title="retriever configuration"), short_sha(r["corpus_version"])])
    blocks.append(heading("Systems", 3))
    blocks.append(Block("table", headers=["system", "runs", "generator", "model", "prompt version", "retriever",
                                          "corpus"], rows=rows))
    return blocks


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


def _headline(summary: pl.DataFrame, systems: list[str], calibrated: bool, why_not: str
              ) -> tuple[list[Block], list[dict]]:
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


def _decisions(summary: pl.DataFrame, systems: list[str], ranks: dict[tuple[str, str], EvidenceRank]) -> list[Block]:
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


def _segments(summary: pl.DataFrame, systems: list[str]) -> list[Block]:
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




def _judge_trust(calibration: pl.DataFrame | None, variance: pl.DataFrame | None, calibrated: bool,
                 why_not: str) -> list[Block]:
    blocks = [heading("Judge calibration and noise", 2),
              para("The judge passed calibration: its numbers may be read." if calibrated else
                   f"Judge not calibrated: {why_not}. Read judge-based metrics as provisional.",
                   css=None if calibrated else "na")]
    if calibration is None or not calibration.height:
        blocks.append(para("No calibration table: the judge has not been compared with human labels.", css="na"))
    else:
        rows = []
        for r in calibration.iter_rows(named=True):
            state = "missing" if r.get("missing") else ("stale" if r.get("stale") else "current")
            css = "na" if state != "current" else None
            kappa = (fmt(r.get("kappa"), 3) if r.get("kappa") is not None
                     else f"null ({r.get('kappa_reason') or 'no reason given'})")
            if state == "stale":  # another judge's κ: never read as this judge's
                kappa += (f" (made for {r.get('calibrated_judge')} / {r.get('calibrated_judge_model')} / "
                          f"{short_sha(r.get('calibrated_prompt_sha256'))}, not this judge)")
            agree = "—" if r.get("agreement") is None else (
                f"{r['agreement']:.3f}" + ("" if r.get("agreement_ci_low") is None else
                                           f" [{r['agreement_ci_low']:.3f}, {r['agreement_ci_high']:.3f}]"))
            rows.append([r.get("level") or "", f"{r.get('judge')} / {r.get('judge_model')}",
                         short_sha(r.get("prompt_sha256")), Cell(state, css=css),
                         num_cell(str(r.get("n") if r.get("n") is not None else "—")),
                         Cell(kappa, css=None if r.get("kappa") is not None else "na"), agree,
                         r.get("calibrated_at") or "—"])
        blocks.append(Block("table", headers=["level", "judge / model", "prompt", "calibration", "n", "Cohen's kappa",
                                              "agreement [95% CI]", "calibrated at"], rows=rows))
        if any(r.get("missing") or r.get("stale") for r in calibration.iter_rows(named=True)):
            blocks.append(Block("note", text="A judge not calibrated against people for this exact model and "
                                             "prompt gives numbers nobody has checked: read judge-based metrics "
                                             "as provisional."))
    if variance is None or not variance.height:
        blocks.append(para("No judge-variance table.", css="na"))
        return blocks
    rows = []
    for r in variance.iter_rows(named=True):
        single = (r.get("n_repeats") or 0) < 2
        rows.append([r.get("system") or "", num_cell(str(r.get("n_repeats"))),
                     f"{r.get('n_flipped')}/{r.get('n_items')}",
                     fmt(r.get("flip_rate"), 3) if r.get("flip_rate") is not None else Cell("not evaluable", css="na"),
                     f"{fmt(r.get('faithfulness_min'), 3)}–{fmt(r.get('faithfulness_max'), 3)}",
                     Cell("unknown (single repeat)", css="na") if single or r.get("resolution") is None
                     else num_cell(fmt(r.get("resolution"), 4))])
    blocks.append(Block("table", headers=["system", "repeats", "flipped / items", "flip rate", "faithfulness min–max",
                                          "resolution"], rows=rows))
    rule = next((r.get("rule") for r in variance.iter_rows(named=True) if r.get("rule")), None)
    blocks.append(Block("note", text="Resolution: the smallest faithfulness difference the judge can tell from its "
                                     "own noise" + (f" ({rule})" if rule else "") + ". A difference below it is "
                                     "noise; with one repeat the noise is unknown: judge again (2 or more repeats) "
                                     "before acting on a small change. Definitions: "
                                     + definition_ref("judge_variance") + "."))
    return blocks


def _gate_judge_errors(summary: pl.DataFrame, system: str, metric: str, k: int | None) -> int | None:
    """The candidate's judge errors for a judge-based gated metric (split test when summarised, else all)."""
    for split in ("test", "all"):
        rows = summary.filter((pl.col("system") == system) & (pl.col("metric") == metric) & (pl.col("split") == split)
                              & (pl.col("segment") == "all")
                              & (pl.col("k").is_null() if k is None else (pl.col("k") == k)))
        if rows.height:
            return int(rows["judge_errors"].fill_null(0).sum())
    return None


def _gates(gates: Sequence[dict] | None, baseline_manifest: dict | None, summary: pl.DataFrame, split: str,
           golden: pl.DataFrame, thresholds: int | None = None) -> list[Block]:
    n_split = split_questions(golden, split)
    blocks = [heading(f"Comparison with the baseline (split {split})", 2),
              Block("note", text=f"Every gate compares on split {split} ({n_split} golden questions), not on all "
                                 "questions: values here differ from the summary above, which covers split all.")]
    if baseline_manifest:
        rows = [[k, str(v)] for k, v in sorted(baseline_manifest.items())]
        blocks.append(para("Promoted baseline:"))
        blocks.append(Block("table", headers=["", ""], rows=rows, css="meta"))
    if gates is None:
        blocks.append(para("No gate results given."))
        return blocks
    if not gates:
        words = no_gate_words(thresholds)  # "no gate configured" only when gates.thresholds is empty
        blocks.append(para(words[0].upper() + words[1:] + "."))
        return blocks
    rows = []
    for g in gates:
        k = g.get("k")
        p = g.get("p_value", g.get("p"))
        wtl = g.get("wtl") or f"{g.get('wins', 0)}/{g.get('ties', 0)}/{g.get('losses', 0)}"
        status = str(g.get("status") or "")
        diff = g.get("difference")
        candidate = (num_cell(fmt(g.get("candidate"))) if g.get("candidate") is not None
                     else Cell("not evaluable", css="na"))
        if is_judge_based(str(g.get("metric"))):
            errors = _gate_judge_errors(summary, str(g.get("system")), str(g.get("metric")), k)
            candidate.text += f" · judge errors {'?' if errors is None else errors}"
        rows.append([g.get("system") or "", level_label(str(g.get("metric")), k, g.get("level")), candidate,
                     (num_cell(fmt(g.get("baseline"))) if g.get("baseline") is not None
                      else Cell("not evaluable", css="na")),
                     num_cell(f"{diff:+.4f}") if diff is not None else Cell("—", css="na"),
                     num_cell(fmt(p)) if p is not None else Cell("—"), wtl,
                     Cell(status, css=f"status-{status}"), g.get("reason") or ""])
    blocks.append(Block("table", headers=["system", "metric", "candidate", "baseline", "difference", "p", "W/T/L",
                                          "status", "reason"], rows=rows))
    blocks.append(Block("note", text="p: two-sided paired randomisation test over the questions both systems answered; "
                                     "W/T/L: questions where the candidate is better / equal / worse; a judge-based "
                                     "candidate value carries its judge-error count. Definitions: "
                                     + definition_ref("gates") + "."))
    return blocks


def _history(history: pl.DataFrame | None, trend_metrics, trend_href: str | None) -> list[Block]:
    blocks = [heading("History (split all)", 2)]
    if history is None or not history.height:
        blocks.append(para("No history yet: this is the first recorded run."))
        return blocks
    runs = history.select("run_id", "evaluated_at").unique().sort("evaluated_at")
    blocks.append(para(f"{runs.height} recorded run(s), from {fmt_when(runs['evaluated_at'][0])} to "
                     f"{fmt_when(runs['evaluated_at'][-1])}."))
    if trend_href:
        blocks.append(Block("link", text="Every run, metric by metric:", href=trend_href))
    last_two = runs["run_id"].to_list()[-2:]
    with_errors = "judge_errors" in history.columns
    rows = []
    hist = history.with_columns(pl.struct("metric", "k").map_elements(
        lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8).alias("_label"))
    for label in metric_labels(trend_metrics):
        for system in sorted(hist["system"].unique().to_list()):
            sel = hist.filter((pl.col("_label") == label) & (pl.col("system") == system))
            vals = {r["run_id"]: r["value"] for r in sel.iter_rows(named=True)}
            if not vals:
                continue
            errors = ({r["run_id"]: r["judge_errors"] for r in sel.iter_rows(named=True)}
                      if with_errors and is_judge_based(label) else None)

            def shown(run_id: str | None, v: float | None, none_text: str, *,
                  errors: dict | None = errors) -> Cell:
                if v is None:
                    return Cell(none_text, css="na" if none_text != "—" else None)
                cell = num_cell(fmt(v))
                if errors is not None:
                    count = errors.get(run_id)
                    cell.text += f" · judge errors {count if count is not None else '?'}"
                return cell

            latest = vals.get(last_two[-1])
            prev = vals.get(last_two[0]) if len(last_two) == 2 else None
            change = "—" if latest is None or prev is None else f"{latest - prev:+.4f}"
            doc = "level" in sel.columns and set(sel["level"].to_list()) == {"doc"}  # scored per document only
            rows.append([system, label + (" (doc)" if doc else ""),
                         shown(last_two[0] if len(last_two) == 2 else None, prev, "—"),
                         shown(last_two[-1], latest, "not evaluable"), num_cell(change)])
    if rows:
        blocks.append(Block("table", headers=["system", "metric", "previous run", "latest run", "change"], rows=rows))
        if not with_errors and any(is_judge_based(label) for label in metric_labels(trend_metrics)):
            blocks.append(Block("note", text="The history does not record judge errors per run: read judge-based "
                                             "trends with the judge-error counts of the summary above."))
    for label in metric_labels(trend_metrics):
        svg = trend_svg(history, label)
        if svg:
            doc = "level" in hist.columns and set(hist.filter(pl.col("_label") == label)["level"].to_list()) == {"doc"}
            blocks.append(Block("svg", svg=svg, text=f"{label}{' (doc)' if doc else ''} over the recorded runs, one "
                                                     "line per system."))
    return blocks

