"""``evaluation_report``: the run as pages people read (report.md, report.html, trend.html beside the tables).

The pages come from :mod:`rag_eval_pipeline.core.report`; this module gathers their inputs. The report
leads with the run's decision (``core.report.decision``): verdict, what promotion does, every blocking
failure, the comparison split, the judge's calibration and errors; the same decision goes to the asset
metadata (first entries) and to ``decision.json`` beside the tables (the CLI's CI outputs read it).

Order of the steps and why the report can state the promotion outcome: the gate table
(``gate_results``) is upstream; the blocking gate check sits on ``gate_verdict`` below it, and
``promotion`` runs after that check and after this report (it declares ``evaluation_report`` as a dependency,
so the report reads the stored baseline before promotion replaces it), from the same gate table and the same
calibration. The report does
not wait on the calibration check or the checks on ``gate_verdict`` (a failed blocking check skips everything
downstream, and the report must be written on exactly such a night): it computes the same calibration table
with ``defs.calibration.compute_calibration`` and decides it with ``core.metrics.calibration_status``, and
the run-error share with ``core.systems.error_reasons.error_share_failures``, the functions the checks
themselves call. So a check that fails in the UI fails in the report too (named in its blocking failures),
the report says what the promotion step does, and the ``promotion`` asset and the CLI record what it did.

The viewer groups (whose access the pages respect: a restricted chunk's text never appears) come from
the configuration section ``report: {viewer_groups: [...]}`` (default ``["customers"]``). Every table it
reads is a declared input, ``metric_history`` included: in the full job the report runs after
``metric_history`` and includes this run; a quick evaluation (which never appends to the history) reads
its suite's full ``metric_history`` (none before the first full run). The promoted baseline's manifest
and the hand-label file are read from the external assets ``<suite>/promoted_baseline`` and
``<suite>/calibration_labels``; the calibration history is ``judge_calibration``'s own file, read
without depending on that asset (so that its check cannot skip the report). A full evaluation also
keeps its per-question tables under ``history/<run_id>/`` so that ``rag-eval compare night:DATE`` can
pair a past night question by question. :func:`build` declares the asset for a suite's scope.

Links: with ``RAG_EVAL_REPORT_URL`` set in the process that materialises, the materialisation carries
``report_url``; with it set where the code location runs, :func:`link_report_assets` puts
``latest_report`` (the suite's report page on ``rag-eval serve``) in the asset's definition, so the UI
links to it whoever launched the run (the CLI included).
"""


import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import dagster as dg

from rag_eval_pipeline.core import storage
from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.metrics.names import KEY_METRICS, metric_label
from rag_eval_pipeline.core.storage import write_text_atomic
from rag_eval_pipeline.defs.calibration import HISTORY_FILE, compute_calibration
from rag_eval_pipeline.defs.resources import REPORT_URL_ENV, EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import QUICK, SuiteScope

if TYPE_CHECKING:
    import polars as pl

    from rag_eval_pipeline.core.report.decision import Decision
else:
    pl = lazy_module("polars")

STAGE = "reports"

TREND_METRICS = tuple(metric_label(m, k) for m, k in KEY_METRICS)  # the metric registry's key metrics
REPORT_FILES = ("report.md", "report.html", "trend.html")
#: Where a full evaluation keeps its per-question tables, one folder per run id (for ``rag-eval compare``).
RUN_ARCHIVE = storage.RUN_ARCHIVE
ARCHIVED_TABLES = ("metric_summary", "question_metrics", "rag_runs", "judge_labels")
REPORT_ASSET = "evaluation_report"


def viewer_groups(settings: EvalSettings) -> tuple[str, ...]:
    """The groups the report is written for: ``report.viewer_groups`` of the configuration, default ("customers",)
    (checked when the configuration loads)."""
    return tuple(settings.config.report.viewer_groups)


def headline_markdown(headline: list[dict]) -> str:
    """A Markdown table of the report's headline rows: system, metric, value, num/den, n, 95% CI, judge errors
    (beside every judge-based value; "—" for the others), band."""
    from rag_eval_pipeline.core.report import markdown_table
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


def report_url(base_url: str | None, base_dir: str | Path, path: str | Path) -> str | None:
    """The URL of ``path`` on the ``rag-eval serve`` server at ``base_url`` (which serves ``base_dir``):
    ``<base_url>/<path relative to base_dir>``; None when ``base_url`` is empty or the path lies outside."""
    base_url = (base_url or "").strip().rstrip("/")
    if not base_url:
        return None
    try:
        rel = Path(path).resolve().relative_to(Path(base_dir).resolve())
    except ValueError:
        return None
    return f"{base_url}/{quote(rel.as_posix())}"


def link_report_assets(assets: list, base_dir: str | Path, folder: str | Path) -> list:
    """One suite's ``assets`` with the definition metadata ``latest_report`` (a URL) on its ``evaluation_report``
    (and its quick evaluation's). ``base_dir``: the folder ``rag-eval serve`` serves; ``folder``: the suite's.

    Read where the code location loads: when ``RAG_EVAL_REPORT_URL`` is set there, each report asset's
    definition links to ``<url>/<suite folder relative to base_dir>/report.html``, the page ``rag-eval
    serve`` serves, whoever materialised it (the UI, the schedule or ``rag-eval run`` in another shell,
    into the same output folder). Unchanged when the variable is unset. Raises nothing.
    """
    base_url = os.environ.get(REPORT_URL_ENV, "")
    if not base_url.strip():
        return assets

    def spec_fn(spec: dg.AssetSpec) -> dg.AssetSpec:
        if spec.key.path[-1] != REPORT_ASSET:
            return spec
        sub = Path(folder, QUICK) if QUICK in spec.key.path[:-1] else Path(folder)
        url = report_url(base_url, base_dir, sub / "report.html")
        if url is None:
            return spec
        return spec.merge_attributes(metadata={"latest_report": dg.MetadataValue.url(url)})

    return list(dg.map_asset_specs(spec_fn, assets))


def decision_inputs(settings: EvalSettings, golden_set: pl.DataFrame | None = None,
                    rag_runs: pl.DataFrame | None = None) -> dict:
    """What a decision was decided on, for ``decision.json``'s ``inputs``: ``config_path`` and ``config_sha256``
    (the configuration file's bytes now; "unreadable" when it cannot be read), ``golden_version`` (the golden
    set's) and ``corpus_version`` (the run rows' corpus versions: one string, a sorted list when they differ);
    None for a table not given (a run that stopped before reading it). Raises nothing."""
    from rag_eval_pipeline.core.suites import file_sha256

    try:
        sha = file_sha256(settings.config_path)
    except OSError:
        sha = "unreadable"
    golden = (str(golden_set["golden_version"][0]) if golden_set is not None and golden_set.height
              and "golden_version" in golden_set.columns else None)
    corpus: str | list[str] | None = None
    if rag_runs is not None and "corpus_version" in rag_runs.columns:
        versions = sorted({str(v) for v in rag_runs["corpus_version"].to_list() if v is not None})
        corpus = versions[0] if len(versions) == 1 else (versions or None)
    return {"config_path": settings.config_path, "config_sha256": sha, "golden_version": golden,
            "corpus_version": corpus}


def baseline_words(manifest: dict | None, configured: str | None) -> str:
    if manifest:
        return (f"{manifest.get('system')}, the promoted baseline (promoted {manifest.get('promoted_at', '?')}, "
                f"run {manifest.get('run_id', '?')})")
    if configured:
        return f"{configured}, the configured baseline system in this run (nothing promoted yet)"
    return "no baseline: only the absolute floors (min_value) apply"


def run_decision(settings: EvalSettings, store: TableFolder, gate_results: pl.DataFrame, golden_set: pl.DataFrame,
                 rag_runs: pl.DataFrame, corpus_snapshot: pl.DataFrame, judge_labels: pl.DataFrame,
                 manifest: dict | None, citation_claims: pl.DataFrame | None = None,
                 nugget_labels: pl.DataFrame | None = None,
                 quick: bool = False) -> "tuple[Decision, pl.DataFrame | None]":
    """(the run's :class:`Decision`, the calibration table it used: None when it could not be computed).

    The calibration is computed as the ``judge_calibration`` asset computes it (no history written) and
    decided by ``core.metrics.calibration_status`` as the calibration check decides it; a label file that
    cannot be read makes the calibration state "error" (blocking where a gate is judge-based), not a
    failed report. The run-error check (``run_errors_within_share``) is decided by
    ``core.systems.error_reasons.error_share_failures``, the function the check calls: a candidate that check
    blocks is "fail" / "blocked" here too, the check named in ``blocking_failures``."""
    from rag_eval_pipeline.core.gates import unchanged_since_promotion
    from rag_eval_pipeline.core.labelling import current_content_hashes
    from rag_eval_pipeline.core.metrics.calibration_status import calibration_status
    from rag_eval_pipeline.core.pipeline import doc_id_systems
    from rag_eval_pipeline.core.report.decision import RUN_ERRORS_CHECK, decide, judge_errors_by_system, split_questions
    from rag_eval_pipeline.core.systems.error_reasons import error_share_failures
    cfg = settings.config
    section = cfg.calibration
    error = None
    try:
        hashes = (current_content_hashes(rag_runs, golden_set, corpus_snapshot, judge_labels, section.level,
                                         doc_id_systems=doc_id_systems(cfg))
                  if section.configured else None)
        table, _fresh, _human = compute_calibration(section, judge_labels, store.read(HISTORY_FILE), hashes,
                                                    citation_claims=citation_claims, nugget_labels=nugget_labels)
    except EvalError as exc:
        table, error = None, str(exc)
    status = calibration_status(table, configured=section.configured, kappa_floor=section.kappa_floor,
                                gated_metrics=[t.metric for t in cfg.thresholds], error=error,
                                min_labels=section.min_labels)
    # the run-error check on gate_verdict stops promotion, not the report: decided here by the function it calls
    failed_checks = {RUN_ERRORS_CHECK: error_share_failures(rag_runs, cfg.gates.max_run_error_share)}
    split = cfg.gate_split
    n_split = split_questions(golden_set, split)
    decision = decide(gate_results, status, split=split, split_questions=n_split,
                      baseline=baseline_words(manifest, cfg.baseline_system), promote=cfg.gates.promote,
                      quick=quick, systems=sorted(set(rag_runs["system"].to_list())),
                      stored_baseline=(f"{manifest.get('system')}, promoted {manifest.get('promoted_at', '?')}"
                                       if manifest else None),
                      judge_errors=judge_errors_by_system(judge_labels),
                      unchanged=unchanged_since_promotion(rag_runs, golden_set, cfg.gates.promote, manifest),
                      thresholds=len(cfg.thresholds), failed_checks=failed_checks)
    return decision, table


def archive_run(store: TableFolder, run_id: str, history: pl.DataFrame | None,
                tables: dict[str, pl.DataFrame | pl.LazyFrame]) -> Path:
    """Keep this run's per-question tables under ``history/<run_id>/`` (with ``run.json``: run id, evaluated
    at, night), for ``rag-eval compare night:DATE``; returns the folder. The night and time are those
    ``metric_history`` recorded for the run (now, when it has none)."""
    rows = history.filter(pl.col("run_id") == run_id) if history is not None and history.height else None
    when = rows["evaluated_at"][0] if rows is not None and rows.height else dt.datetime.now(dt.UTC)
    for name, df in tables.items():
        if isinstance(df, pl.LazyFrame):  # a scanned table: the file this run wrote, copied as it is
            store.copy_file(store.path(f"{name}.parquet"), RUN_ARCHIVE, run_id, f"{name}.parquet")
        else:
            store.write(df, RUN_ARCHIVE, run_id, f"{name}.parquet", table=name)
    store.write_json({"run_id": run_id, "evaluated_at": when.isoformat(), "night": when.date().isoformat(),
                      "tables": sorted(tables)}, RUN_ARCHIVE, run_id, "run.json")
    return store.path(RUN_ARCHIVE, run_id)


DESCRIPTION = ("The run as pages people read: report.md, report.html (self-contained) and trend.html beside the "
               "Parquet tables, leading with the decision (verdict, promotion, blocking failures, comparison split, "
               "judge calibration and errors); restricted chunk text is withheld for the configured viewer groups.")


def evaluation_report(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
                      metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame, rag_runs: pl.DataFrame,
                      golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame, judge_labels: pl.DataFrame,
                      answer_judgements: pl.DataFrame, judge_variance: pl.DataFrame,
                      gate_results: pl.DataFrame, metric_history: pl.DataFrame | None = None, *,
                      citation_claims: pl.DataFrame | None = None, citations: pl.DataFrame | None = None,
                      nugget_labels: pl.DataFrame | None = None, suite: str | None = None,
                      quick: bool = False) -> dg.Output[dict]:
    """Write report.md, report.html, trend.html and decision.json with the store; return their paths, the
    decision and the redaction counts. ``question_metrics`` is scanned: the report reads the rows of its question
    cards' metrics (``CARD_METRICS``), the run archive copies the file. ``metric_history``: the history the trend
    shows (None: none yet); ``citation_claims``, ``citations``, ``nugget_labels``: the citation and completeness
    tables the question cards show (None: none); ``suite``: the suite's name (None for the unprefixed chain);
    ``quick``: a quick evaluation's report."""
    from rag_eval_pipeline.core.baseline import BASELINE_DIR, BaselineDamaged, read_baseline_manifest
    from rag_eval_pipeline.core.report import build_report, trend_plot
    from rag_eval_pipeline.core.report.decision import DECISION_FILE, decision_blocks, verdict_word, write_decision
    from rag_eval_pipeline.core.report.markdown import render_markdown
    from rag_eval_pipeline.core.report.questions import CARD_METRICS
    cfg = settings.config
    groups = viewer_groups(settings)
    history = metric_history
    try:  # a damaged baseline is reported by the gate (baseline_damaged rows); the report just names none
        stored = read_baseline_manifest(store.path(BASELINE_DIR).parent)  # its tables are not needed here
    except BaselineDamaged as exc:
        context.log.warning(str(exc))
        stored = None
    manifest = dict(stored) if stored is not None else None
    if history is not None:
        from rag_eval_pipeline.core.metrics.doc_level import primary_level_rows

        history = primary_level_rows(history)  # the trend shows one line per (system, metric, k)
    gates, gates_source = gate_results.to_dicts(), "gate_results of this run"
    decision, calibration = run_decision(settings, store, gate_results, golden_set, rag_runs, corpus_snapshot,
                                         judge_labels, manifest, citation_claims, nugget_labels, quick=quick)

    inputs = decision_inputs(settings, golden_set, rag_runs)
    card_rows = (question_metrics.filter(pl.col("k").is_null() & pl.col("metric").is_in(list(CARD_METRICS)))
                 .collect(engine="streaming"))
    report = build_report(
        metric_summary, card_rows, rag_runs, golden_set, corpus_snapshot, judge_labels, answer_judgements,
        calibration=calibration, variance=judge_variance, gates=gates, history=history, viewer_groups=groups,
        baseline_manifest=manifest, generated_at=dt.datetime.now(dt.UTC),
        kappa_floor=cfg.calibration.kappa_floor, decision=decision, gate_split=cfg.gate_split,
        suite=suite, citation_claims=citation_claims, citations=citations, nugget_labels=nugget_labels,
        run={"run_id": context.run_id, "config_sha256": inputs["config_sha256"]},
    )
    md_path = write_text_atomic(report.markdown, store.path("report.md"))
    html_path = write_text_atomic(report.html, store.path("report.html"))
    trend_path = trend_plot(history if history is not None else pl.DataFrame(
        schema={"run_id": pl.Utf8, "evaluated_at": pl.Datetime("us", "UTC"), "system": pl.Utf8, "metric": pl.Utf8,
                "k": pl.Int32, "value": pl.Float64}), TREND_METRICS, store.path("trend.html"))
    url = report_url(os.environ.get(REPORT_URL_ENV), store.serve_root, html_path)
    decision_path = write_decision(decision, store.path(DECISION_FILE), run_id=context.run_id, suite=suite,
                                   inputs=inputs,
                                   report_html=str(html_path.resolve()), report_url=url)
    archived = None
    if not quick:
        archived = archive_run(store, context.run_id, history, {
            "metric_summary": metric_summary, "question_metrics": question_metrics, "rag_runs": rag_runs,
            "judge_labels": judge_labels})
        pruned = storage.prune_run_archive(store.path(), cfg.report.keep_runs)  # report.keep_runs newest stay
    context.log.info(f"verdict {decision.verdict}; promotion: {decision.promotion}. Report written to "
                     f"{html_path.resolve()} ({report.withheld} texts withheld, {report.restricted_chunks} restricted "
                     f"chunk previews hidden for {list(groups)})")

    calib = decision.calibration
    md: dict = {  # the decision first: the UI lists metadata in this order
        "decision": dg.MetadataValue.md(render_markdown(decision_blocks(decision))),
        "verdict": verdict_word(decision.verdict),
        "promotion": decision.promotion,
        "blocking_failures": dg.MetadataValue.json(decision.blocking_failures),
        "comparison_split": decision.split_line(),
        "judge_calibration": decision.calibration_line(),
        "judge_kappa": dg.MetadataValue.null() if calib.kappa is None else float(calib.kappa),
        "kappa_floor": calib.floor,
        "judge_errors": decision.judge_error_total[0],
    }
    if url:  # this process knows where `rag-eval serve` serves the folder (RAG_EVAL_REPORT_URL)
        md["report_url"] = dg.MetadataValue.url(url)
    md |= {
        "summary": dg.MetadataValue.md(headline_markdown(report.headline)),
        "report": dg.MetadataValue.md(report.markdown),  # the whole report, readable in the UI without a file link
        # plain text, not a link: a browser cannot open a file path from a web page
        "report_html_file": dg.MetadataValue.text(str(html_path.resolve())),
        "report_md_file": dg.MetadataValue.text(str(md_path.resolve())),
        "trend_html_file": dg.MetadataValue.text(str(trend_path.resolve())),
        "decision_file": dg.MetadataValue.text(str(decision_path.resolve())),
        "viewer_groups": dg.MetadataValue.json(list(groups)),
        "withheld_texts": report.withheld,
        "restricted_previews_hidden": report.restricted_chunks,
        "gates_source": gates_source,
        "judge_calibrated": report.judge_calibrated,
        "why_not_calibrated": report.why_not_calibrated or "calibrated",
    }
    if archived is not None:
        md["per_question_archive"] = dg.MetadataValue.text(str(archived.resolve()))
        md["archives_deleted"] = dg.MetadataValue.json(pruned)
    for r in report.headline:
        if r["value"] is not None:
            md[f"{r['system']}/{r['metric']}"] = float(r["value"])
        if r.get("judge_errors") is not None:
            md[f"{r['system']}/{r['metric']}/judge_errors"] = int(r["judge_errors"])
    return dg.Output({
        "report_md": str(md_path.resolve()), "report_html": str(html_path.resolve()),
        "trend_html": str(trend_path.resolve()), "decision": str(decision_path.resolve()),
        "verdict": decision.verdict, "promotion_action": decision.promotion_action,
        "viewer_groups": list(groups), "withheld_texts": report.withheld,
        "restricted_previews_hidden": report.restricted_chunks, "gates_source": gates_source,
    }, metadata=md)


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the report for ``scope``. A quick evaluation's report reads its suite's full
    ``metric_history`` (None before the first full run) and promoted baseline."""
    ins = scope.ins("metric_summary", "question_metrics", "rag_runs", "golden_set", "corpus_snapshot", "judge_labels",
                    "answer_judgements", "judge_variance", "gate_results", "citation_claims", "citations",
                    "nugget_labels")
    ins["metric_history"] = dg.AssetIn(key=scope.full_key("metric_history"), metadata={"allow_missing": True})
    deps = [scope.full_key("promoted_baseline")]
    if scope.calibration_labels:  # the report decides the calibration from the same hand labels
        deps.append(scope.full_key("calibration_labels"))

    @dg.asset(key=scope.key(REPORT_ASSET), ins=ins, deps=deps, kinds={"html", "markdown"},
              description=scope.describe(DESCRIPTION), required_resource_keys=scope.needs("settings", "store"),
              **scope.asset_args(STAGE))
    def report(context: dg.AssetExecutionContext, metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame,
               rag_runs: pl.DataFrame, golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
               judge_labels: pl.DataFrame, answer_judgements: pl.DataFrame, judge_variance: pl.DataFrame,
               gate_results: pl.DataFrame, citation_claims: pl.DataFrame, citations: pl.DataFrame,
               nugget_labels: pl.DataFrame, metric_history) -> dg.Output[dict]:
        return evaluation_report(context, scope.settings(context), scope.store(context), metric_summary,
                                 question_metrics, rag_runs, golden_set, corpus_snapshot, judge_labels,
                                 answer_judgements, judge_variance, gate_results, metric_history,
                                 citation_claims=citation_claims, citations=citations, nugget_labels=nugget_labels,
                                 suite=scope.suite, quick=scope.quick)

    return [report], []
