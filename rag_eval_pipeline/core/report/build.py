"""One evaluation run as pages people read: :func:`build_report` checks the tables, orders the report's
sections (each from its module of this package; the run header is here) and renders them.

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
from rag_eval_pipeline.core.metrics.doc_level import primary_level_rows
from rag_eval_pipeline.core.report.access import ReportAccess
from rag_eval_pipeline.core.report.blocks import Block, Cell, heading, short_sha
from rag_eval_pipeline.core.report.context import evidence_ranks
from rag_eval_pipeline.core.report.decision import Decision, decision_blocks
from rag_eval_pipeline.core.report.gates import gates_section
from rag_eval_pipeline.core.report.html import escape_html, html_page, render_html, toc
from rag_eval_pipeline.core.report.judge_trust import judge_trust_section
from rag_eval_pipeline.core.report.markdown import render_markdown
from rag_eval_pipeline.core.report.questions import WORST_N, regressed_questions, worst_questions
from rag_eval_pipeline.core.report.summary import decisions_section, headline_section, segments_section
from rag_eval_pipeline.core.report.trend import history_section

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
    headline_blocks, headline = headline_section(by_level, systems, calibrated, why_not)
    blocks += headline_blocks
    blocks += decisions_section(summary, systems, ranks)
    citations_at = len(blocks)  # "Citations and completeness" goes here, once the texts are checked for leaks
    blocks += gates_section(gates, baseline_manifest, summary, split, golden, decision.thresholds if decision else None)
    blocks += judge_trust_section(calibration, variance, calibrated, why_not)
    blocks += segments_section(summary, systems)
    blocks += history_section(history, trend_metrics, trend_href)
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
