"""``evaluation_report``: the run as pages people read (report.md, report.html, trend.html beside the tables).

The pages come from :mod:`rag_eval_pipeline.core.report`; this module gathers their inputs. The viewer
groups (whose access the pages respect: a restricted chunk's text never appears) come from the
configuration section ``report: {viewer_groups: [...]}`` (default ``["customers"]``). Every table it
reads is a declared input, ``metric_history`` included: in the full job the report runs after
``metric_history`` and includes this run; a quick evaluation (which never appends to the history)
reads its suite's full ``metric_history`` (nothing before the first full run). The gate results are
this run's ``gate_results`` table; the blocking gate check sits on ``gate_verdict`` beside it, so the
report is written even on a night when the regression gate fails. The promoted baseline's manifest is
read from the observable source ``<suite>/promoted_baseline``.
"""


import datetime as dt
import json

import dagster as dg
import polars as pl

from rag_eval_pipeline.core.report import build_report, markdown_table, trend_plot
from rag_eval_pipeline.core.storage import write_text_atomic
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SuiteScope

STAGE = "reports"

TREND_METRICS = ("faithfulness", "recall_5", "ndcg_cut_10", "evidence_retrieved", "coverage",
                 "false_abstention_rate", "answer_without_evidence_rate", "run_error_rate")
REPORT_FILES = ("report.md", "report.html", "trend.html")


def viewer_groups(settings: EvalSettings) -> tuple[str, ...]:
    """The groups the report is written for: ``report.viewer_groups`` of the configuration, default ("customers",)
    (checked when the configuration loads)."""
    return tuple(settings.config.report.viewer_groups)


def headline_markdown(headline: list[dict]) -> str:
    """A Markdown table of the report's headline rows: system, metric, value, num/den, n, 95% CI, judge errors
    (beside every judge-based value; "—" for the others), band."""
    rows = []
    for r in headline:
        if r["value"] is None:
            value, nd = f"not evaluable ({r['n_not_evaluable']} of {r['n']})", "—"
        else:
            value, nd = f"{r['value']:.4f}", f"{r['numerator']:g}/{r['denominator']:g}"
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
        errors = "—" if r.get("judge_errors") is None else r["judge_errors"]
        rows.append([r["system"], r["metric"], value, nd, r["n"], ci, errors, r["band"] or ""])
    return markdown_table(["system", "metric", "value", "num/den", "n", "95% CI", "judge errors", "band"], rows)


DESCRIPTION = ("The run as pages people read: report.md, report.html (self-contained) and trend.html beside the "
               "Parquet tables; restricted chunk text is withheld for the configured viewer groups.")


def evaluation_report(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
                      metric_summary: pl.DataFrame, question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
                      golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame, judge_labels: pl.DataFrame,
                      answer_judgements: pl.DataFrame, judge_calibration: pl.DataFrame,
                      judge_variance: pl.DataFrame, gate_results: pl.DataFrame,
                      metric_history: pl.DataFrame | None = None) -> dg.Output[dict]:
    """Write report.md, report.html and trend.html with the store; return their paths and the redaction counts.
    ``metric_history``: the history the trend shows (None: no history yet)."""
    groups = viewer_groups(settings)
    history = metric_history
    manifest_path = store.path("baseline", "manifest.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8")) if manifest_path.exists() else None
    gates, gates_source = gate_results.to_dicts(), "gate_results of this run"

    report = build_report(
        metric_summary, question_metrics, rag_runs, golden_set, corpus_snapshot, judge_labels, answer_judgements,
        calibration=judge_calibration, variance=judge_variance, gates=gates, history=history, viewer_groups=groups,
        baseline_manifest=manifest, generated_at=dt.datetime.now(dt.UTC),
        kappa_floor=settings.config.calibration.kappa_floor,
    )
    md_path = write_text_atomic(report.markdown, store.path("report.md"))
    html_path = write_text_atomic(report.html, store.path("report.html"))
    trend_path = trend_plot(history if history is not None else pl.DataFrame(
        schema={"run_id": pl.Utf8, "evaluated_at": pl.Datetime("us", "UTC"), "system": pl.Utf8, "metric": pl.Utf8,
                "k": pl.Int32, "value": pl.Float64}), TREND_METRICS, store.path("trend.html"))
    context.log.info(f"report written to {html_path.resolve()} ({report.withheld} texts withheld, "
                     f"{report.restricted_chunks} restricted chunk previews hidden for {list(groups)})")

    md: dict = {
        "summary": dg.MetadataValue.md(headline_markdown(report.headline)),
        "report": dg.MetadataValue.md(report.markdown),  # the whole report, readable in the UI without a file link
        "report_html": dg.MetadataValue.path(str(html_path.resolve())),
        "report_md": dg.MetadataValue.path(str(md_path.resolve())),
        "trend_html": dg.MetadataValue.path(str(trend_path.resolve())),
        "viewer_groups": dg.MetadataValue.json(list(groups)),
        "withheld_texts": report.withheld,
        "restricted_previews_hidden": report.restricted_chunks,
        "gates_source": gates_source,
        "judge_calibrated": report.judge_calibrated,
        "why_not_calibrated": report.why_not_calibrated or "calibrated",
    }
    for r in report.headline:
        if r["value"] is not None:
            md[f"{r['system']}/{r['metric']}"] = float(r["value"])
        if r.get("judge_errors") is not None:
            md[f"{r['system']}/{r['metric']}/judge_errors"] = int(r["judge_errors"])
    if store.url_for(html_path):  # served by `rag-eval serve` at RAG_EVAL_REPORT_URL
        md["report_url"] = dg.MetadataValue.url(store.url_for(html_path))
    return dg.Output({
        "report_md": str(md_path.resolve()), "report_html": str(html_path.resolve()),
        "trend_html": str(trend_path.resolve()), "viewer_groups": list(groups), "withheld_texts": report.withheld,
        "restricted_previews_hidden": report.restricted_chunks, "gates_source": gates_source,
    }, metadata=md)


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the report for ``scope``. A quick evaluation's report reads its suite's full
    ``metric_history`` (None before the first full run)."""
    ins = scope.ins("metric_summary", "question_metrics", "rag_runs", "golden_set", "corpus_snapshot", "judge_labels",
                    "answer_judgements", "judge_calibration", "judge_variance", "gate_results")
    ins["metric_history"] = dg.AssetIn(key=scope.full_key("metric_history"), metadata={"allow_missing": True})

    @dg.asset(key=scope.key("evaluation_report"), ins=ins, deps=[scope.full_key("promoted_baseline")],
              kinds={"html", "markdown"}, description=scope.describe(DESCRIPTION),
              required_resource_keys=scope.needs("settings", "store"), **scope.asset_args(STAGE))
    def report(context: dg.AssetExecutionContext, metric_summary: pl.DataFrame, question_metrics: pl.DataFrame,
               rag_runs: pl.DataFrame, golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
               judge_labels: pl.DataFrame, answer_judgements: pl.DataFrame, judge_calibration: pl.DataFrame,
               judge_variance: pl.DataFrame, gate_results: pl.DataFrame, metric_history) -> dg.Output[dict]:
        return evaluation_report(context, scope.settings(context), scope.store(context), metric_summary,
                                 question_metrics, rag_runs, golden_set, corpus_snapshot, judge_labels,
                                 answer_judgements, judge_calibration, judge_variance, gate_results, metric_history)

    return [report], []
