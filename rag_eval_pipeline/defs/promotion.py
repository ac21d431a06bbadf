"""The regression gate and ``promotion``: a candidate replaces the baseline only when every blocking check passes.

``gate_results`` computes the verdict once per run (``core.gates.compute_gate_verdict``); the
report and ``regression_cases`` read that table. The blocking check sits on ``gate_verdict``, the
small asset that decides promotion: Dagster skips everything downstream of a failed blocking check,
so only ``promotion`` hangs below it and the report is still written on a night the gate fails.
``gate_results`` and ``gate_verdict`` are computed in the aggregate stage (``defs/aggregate.py``);
:func:`build` declares ``regression_cases``, ``promotion`` and the promoted baseline.

The promoted baseline (``<suite folder>/baseline/``) is not an asset of a run: ``promotion`` writes it,
and the next run's gates and report read it. It is declared as the external asset
``<suite>/promoted_baseline``, which the lineage draws into ``gate_results`` and ``evaluation_report``;
``promotion`` reports a materialisation of it (system, promotion time) each time it writes one.

``promotion`` depends on ``evaluation_report`` (a declared dependency, not an ordering that happens to hold):
the report reads the stored baseline before promotion replaces it, so the report compares with the same
baseline as the gates and states what promotion then does (promote, keep, blocked), which is what the CLI
prints. The report cannot come after ``promotion`` instead: ``promotion`` hangs below the blocking checks,
and the report must be written on the very night they fail.
The checks on ``gate_verdict`` fail in the UI while the report is still written; the report decides them
with the same functions (``defs/report.py``: ``run_decision``), so it names each failing check as a blocking
failure and never says "promote" for a candidate they block.
``regression_cases`` adds to its own previous materialisation (read from the suite's folder); what it computes
is ``core/regressions.py``.
"""


import datetime as dt
from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.metrics.names import level_label
from rag_eval_pipeline.core.storage import BASELINE_DIR  # the suite folder's names are declared there
from rag_eval_pipeline.defs.report import REPORT_ASSET
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl

    from rag_eval_pipeline.core.gates import GateVerdict, PromotedBaseline
else:
    pl = lazy_module("polars")

STAGE = "promotion"
NO_REGRESSION_DESCRIPTION = ("Every blocking gate passes: no regression beyond its threshold that the paired test "
                             "calls real, no floor breached, no comparison across golden or corpus versions.")


def load_baseline(store: TableFolder) -> "PromotedBaseline | None":
    """The promoted baseline (manifest, metric_summary, question_metrics), or None before the first promotion.

    Raises BaselineDamaged when it was promoted but is now missing, edited or unreadable (``core/baseline.py``)."""
    from rag_eval_pipeline.core.baseline import read_baseline
    return read_baseline(store.path(BASELINE_DIR).parent)


def damaged_verdict(cfg, reason: str) -> "GateVerdict":
    """The verdict when the promoted baseline is damaged: one blocking ``baseline_damaged`` row per candidate
    (or for the system to promote), no comparison at all, so nothing can be promoted against another reference."""
    from rag_eval_pipeline.core.gates import GateVerdict
    systems = list(cfg.candidate_systems) or [cfg.gates.promote or "baseline"]
    return GateVerdict(results=[], errors=[f"{s}: the promoted baseline is damaged: {reason}" for s in systems],
                       baseline=None, baseline_source="damaged", noise={}, promote=cfg.gates.promote,
                       error_status="baseline_damaged")


def gates_markdown(gates: pl.DataFrame) -> str:
    """A Markdown table of gate results: candidate and baseline means over the n questions both evaluated, their
    difference, interval, p-value, wins/ties/losses (all over those n), n compared, status."""
    from rag_eval_pipeline.core.gates import compared_words
    from rag_eval_pipeline.core.metrics.names import level_label
    from rag_eval_pipeline.core.report.markdown import markdown_table

    f = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
    return markdown_table(["system", "metric", "candidate", "baseline", "diff", "n compared", "95% CI", "p", "W/T/L",
                           "status"], [
        [r["system"], level_label(r["metric"], r["k"], r.get("level")), f(r["candidate"]), f(r["baseline"]),
         f(r["difference"]), compared_words(r.get("n"), r.get("n_baseline"), r.get("n_candidate_errors")),
         "" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
         f(r["p_value"]), f"{r['wins']}/{r['ties']}/{r['losses']}", r["status"]]
        for r in gates.iter_rows(named=True)])


def gate_results(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
                 metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame, rag_runs: pl.DataFrame,
                 golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
                 judge_variance: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per (candidate, gated metric): candidate vs baseline on the gate split, paired test, verdict.

    Computed once per run; ``gate_verdict`` (promotion), ``regression_cases`` and ``evaluation_report`` read it.
    ``question_metrics`` is scanned: only the gated metrics' rows are read."""
    from rag_eval_pipeline.core.baseline import BaselineDamaged
    from rag_eval_pipeline.core.gates import compute_gate_verdict
    cfg = settings.config
    try:
        promoted = load_baseline(store)
    except BaselineDamaged as exc:  # loud and blocking: never a quiet change of reference
        context.log.error(str(exc))
        verdict = damaged_verdict(cfg, str(exc))
    else:
        gated = question_metrics.filter(pl.col("metric").is_in(sorted({t.metric for t in cfg.thresholds})))
        verdict = compute_gate_verdict(cfg, metric_summary, gated.collect(engine="streaming"), rag_runs, golden_set,
                                       corpus_snapshot, judge_variance, promoted)
    gates = verdict.frame()
    return dg.Output(gates, metadata={
        "baseline": verdict.baseline or "none (first run: floors only)",
        "baseline_source": {"promoted": "promoted", "configured": "configured system in this run",
                            "none": "none", "damaged": "DAMAGED: promoted baseline missing or edited (blocking)"}[
            verdict.baseline_source],
        "split": cfg.gate_split,
        "unchanged_since_promotion": dg.MetadataValue.json(verdict.unchanged),
        "judge_noise_resolution": dg.MetadataValue.json(verdict.noise),
        "blocking_failures": len(verdict.blocking_failures),
        "gates": dg.MetadataValue.md(gates_markdown(gates)),
    })


def gate_verdict(context: dg.AssetExecutionContext, settings: EvalSettings, gate_results: pl.DataFrame,
                 rag_runs: pl.DataFrame | None = None, golden_set: pl.DataFrame | None = None) -> dg.Output[dict]:
    """Whether ``gates.promote`` may become the baseline: the gate table's blocking failures, and the system.

    ``promote`` (the configured candidate; the metadata names it ``candidate``: it is promoted only when nothing
    blocks it) is null when no candidate is configured; ``unchanged_since_promotion`` when the
    candidate is already the promoted baseline (promotion then keeps the stored one); ``manifest`` what
    the candidate ran (``core.gates.run_manifest`` of ``rag_runs`` and ``golden_set``), the manifest
    ``promotion`` stores (null without a candidate or without those tables); ``gates`` the gate rows evaluated."""
    from rag_eval_pipeline.core.gates import run_manifest
    from rag_eval_pipeline.core.regressions import failed_gates
    cfg = settings.config
    failures = failed_gates(gate_results)
    promote = cfg.gates.promote
    rows = gate_results.filter(pl.col("system") == promote) if promote else gate_results.clear()
    unchanged = rows.height > 0 and rows["status"].eq("unchanged_since_promotion").any()
    manifest = run_manifest(rag_runs, golden_set, promote) if promote and rag_runs is not None \
        and golden_set is not None else None
    verdict = {"promote": promote, "passed": not failures, "blocking_failures": failures,
               "unchanged_since_promotion": bool(unchanged), "manifest": manifest, "gates": gate_results.height}
    return dg.Output(verdict, metadata={
        "candidate": promote or "none (no candidate configured)", "passed": not failures,
        "blocking_failures": dg.MetadataValue.json(failures),
        "unchanged_since_promotion": bool(unchanged),
    })


def no_regression_against_baseline(gate_verdict: dict, gate_results: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.regressions import failed_gates
    failed = failed_gates(gate_results)
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "failed": dg.MetadataValue.json(failed),
            "candidate": gate_verdict.get("promote") or "none",
            "gates": dg.MetadataValue.md(gates_markdown(gate_results)),
            "regressed_questions": dg.MetadataValue.json({
                f"{r['system']}/{r['metric']}": r["regressed_questions"][:50]
                for r in gate_results.iter_rows(named=True) if r["regressed_questions"]}),
        },
    )


RUN_ERRORS_DESCRIPTION = ("No system's share of errored runs (decision error: a failed call, a timeout, a trace "
                          "reporting an error) is above gates.max_run_error_share: errors are reported apart from the "
                          "retrieval and decision rates, and too many of them block promotion.")


def run_errors_within_share(settings: EvalSettings, rag_runs: pl.DataFrame) -> dg.AssetCheckResult:
    """The check ``run_errors_within_share`` (on ``gate_verdict``; :data:`RUN_ERRORS_DESCRIPTION`): passes when
    no system's share of error rows in ``rag_runs`` is above ``gates.max_run_error_share`` (0..1); metadata:
    the limit, the systems over it and every system's error counts (``core.systems.error_reasons``)."""
    from rag_eval_pipeline.core.systems.error_reasons import error_counts, error_share_failures

    limit = settings.config.gates.max_run_error_share
    counts = error_counts(rag_runs)
    over = {s: c for s, c in counts.items() if c["share"] > limit}
    failures = error_share_failures(rag_runs, limit)  # the run's decision (the report) states the same lines
    return dg.AssetCheckResult(
        passed=not failures,
        metadata={
            "reason": "; ".join(failures) if failures else f"every system's share of errored runs is within {limit:g}",
            "limit": limit,
            "over_limit": dg.MetadataValue.json(sorted(over)),
            "errors_by_system": dg.MetadataValue.json(counts),
        },
    )


def promotion(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
              metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame, rag_runs: pl.DataFrame,
              judge_calibration: pl.DataFrame, gate_verdict: dict,
              baseline_key: dg.AssetKey | None = None) -> dg.Output[dict]:
    """Store ``gates.promote`` as the promoted baseline. Runs only when every blocking check upstream passed
    (``judge_calibration`` is an input so that the calibration check, where it blocks, stops it); a new
    baseline is reported as a materialisation of the external asset ``baseline_key`` when given.

    Nothing is written when no candidate is configured, or when the candidate is the promoted baseline
    itself (the stored one, with its promotion time, stays). Raises ValueError, before writing, when
    the system has no row in this run's tables (an empty baseline would fail every later gate)."""
    from rag_eval_pipeline.core.baseline import read_baseline_manifest, with_file_hashes
    from rag_eval_pipeline.core.gates import same_run_configuration
    from rag_eval_pipeline.core.report.decision import promotion_basis
    from rag_eval_pipeline.core.storage import TableBatches, scan_slices
    cfg = settings.config
    system = gate_verdict.get("promote")
    stored_manifest = read_baseline_manifest(store.path(BASELINE_DIR).parent)  # its tables are not needed here
    if system is None:
        return dg.Output({"promoted": None}, metadata={"promoted_system": "none (no candidate configured)"})
    manifest = dict(gate_verdict["manifest"])  # run_manifest(rag_runs, golden_set, system), as gate_verdict recorded it
    # core.gates.unchanged_since_promotion on this run's tables, the function the run's decision (and so the
    # report) reads: they cannot disagree on "kept"
    if stored_manifest is not None and same_run_configuration(manifest, stored_manifest):
        context.log.info(f"{system} is already the promoted baseline (unchanged since promotion); kept as stored")
        return dg.Output(dict(stored_manifest), metadata={
            "promoted_system": system, "unchanged_since_promotion": True,
            "promoted_at": str(stored_manifest.get("promoted_at")),
            "corpus_version": str(manifest["corpus_version"]), "golden_version": str(manifest["golden_version"])})
    mine = pl.col("system") == system
    # question_metrics is scanned: this system's rows are copied slice by slice, never held whole
    qm_rows = int(question_metrics.filter(mine).select(pl.len()).collect().item())
    parts: dict[str, pl.DataFrame | TableBatches] = {
        "metric_summary": metric_summary.filter(mine),
        "question_metrics": TableBatches(scan_slices(question_metrics, mine)),
        "rag_runs": rag_runs.filter(mine)}
    empty = [name for name, df in parts.items() if (df.height if isinstance(df, pl.DataFrame) else qm_rows) == 0]
    if empty:
        raise ValueError(f"{cfg.path}: gates.promote {system!r} has no rows in {empty} of this run; "
                         "nothing was promoted (the stored baseline is unchanged)")
    manifest |= {"promoted_at": dt.datetime.now(dt.UTC).isoformat(), "run_id": context.run_id}
    for name, df in parts.items():
        store.write(df, BASELINE_DIR, f"{name}.parquet", table=name)
    # the tables' content hashes, checked whenever the baseline is read (core/baseline.py)
    manifest = with_file_hashes(manifest, store.path(BASELINE_DIR).parent)
    store.write_json(manifest, BASELINE_DIR, "manifest.json")
    basis = promotion_basis(int(gate_verdict.get("gates") or 0), len(cfg.thresholds))  # as the decision words it
    context.log.info(f"promoted {system} as the baseline: {basis}")
    if baseline_key is not None:  # the external asset promoted_baseline: what it holds now
        context.log_event(dg.AssetMaterialization(asset_key=baseline_key, metadata={
            "promoted_system": system, "promoted_at": manifest["promoted_at"], "run_id": context.run_id,
            "path": dg.MetadataValue.path(str(store.path(BASELINE_DIR).resolve()))}))
    return dg.Output(manifest, metadata={"promoted_system": system, "unchanged_since_promotion": False,
                                         "promoted_because": basis,
                                         "corpus_version": manifest["corpus_version"],
                                         "golden_version": manifest["golden_version"]})


def regression_cases(context: dg.AssetExecutionContext, store: TableFolder, question_metrics: pl.LazyFrame,
                     gate_results: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Questions that flipped worse against the baseline, kept across runs; every run reports their current state.

    A case is added the first time a candidate's per-question value on a gated metric is worse than the baseline's
    (failures are kept as regression cases). Later runs never drop it; ``status`` says whether it still
    regresses, has recovered (better than when found, by the metric's direction), or has no value now
    (``core.gates.regression_case_status``). Cases are kept per level: a document-level gate's regressed
    questions (relevance judged per document) are cases of their own (``level`` doc).
    """
    from rag_eval_pipeline.core.regressions import track_regressions
    cases, new = track_regressions(store.read("regression_cases.parquet"), question_metrics, gate_results,
                                   run_id=context.run_id, now=dt.datetime.now(dt.UTC).isoformat())
    counts = dict(cases.group_by("status").len().iter_rows()) if cases.height else {}
    still = cases.filter(pl.col("status") == "still_regressed")
    return dg.Output(cases, metadata={
        "cases": cases.height, "new_cases": new, "status": dg.MetadataValue.json(counts),
        "still_regressed": dg.MetadataValue.json(
            [f"{r['system']}/{level_label(r['metric'], r['k'], r['level'])}: {r['question_id']}"
             for r in still.head(50).iter_rows(named=True)]),
    })


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of ``scope``: ``regression_cases``; in a full evaluation also ``promotion`` and the
    external asset ``promoted_baseline`` (a quick evaluation reads its suite's and never promotes)."""

    @dg.asset(key=scope.key("regression_cases"), ins=scope.ins("question_metrics", "gate_results"),
              kinds={"polars", "parquet"}, description=scope.describe(regression_cases.__doc__),
              required_resource_keys=scope.needs("store"), **scope.asset_args(STAGE))
    def regressions(context: dg.AssetExecutionContext, question_metrics: pl.LazyFrame,
                    gate_results: pl.DataFrame) -> dg.Output[pl.DataFrame]:
        return regression_cases(context, scope.store(context), question_metrics, gate_results)

    if scope.quick:
        return [regressions], []

    promoted_baseline = dg.AssetSpec(
        key=scope.key("promoted_baseline"), group_name=scope.group(STAGE), tags={"stage": STAGE},
        description="The promoted baseline (baseline/ in the suite's folder: manifest, metric_summary, "
                    "question_metrics, rag_runs of the promoted system). Not an asset of a run: promotion writes it "
                    "(and reports it here as a materialisation), the next run's gates and report read it.")

    # after the report (see the module docstring): it reads the baseline this step replaces
    @dg.asset(key=scope.key("promotion"), ins=scope.ins("metric_summary", "question_metrics", "rag_runs",
                                                        "judge_calibration", "gate_verdict"),
              deps=[scope.key(REPORT_ASSET)],
              description=scope.describe(promotion.__doc__), required_resource_keys=scope.needs("settings", "store"),
              **scope.asset_args(STAGE))
    def promote(context: dg.AssetExecutionContext, metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame,
                rag_runs: pl.DataFrame, judge_calibration: pl.DataFrame, gate_verdict: dict) -> dg.Output[dict]:
        return promotion(context, scope.settings(context), scope.store(context), metric_summary, question_metrics,
                         rag_runs, judge_calibration, gate_verdict, baseline_key=promoted_baseline.key)

    return [regressions, promoted_baseline, promote], []
