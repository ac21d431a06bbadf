"""The regression gate and ``promotion``: a candidate replaces the baseline only when every blocking check passes.

``gate_results`` computes the verdict once per run (``core.gates.compute_gate_verdict``); the
report and ``regression_cases`` read that table. The blocking check sits on ``gate_verdict``, the
small asset that decides promotion: Dagster skips everything downstream of a failed blocking check,
so only ``promotion`` hangs below it and the report is still written on a night the gate fails.
"""


import datetime as dt

import dagster as dg
import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.baseline import BASELINE_DIR, BaselineDamaged, read_baseline, with_file_hashes
from rag_eval_pipeline.core.gates import (
    GateVerdict,
    PromotedBaseline,
    compute_gate_verdict,
    regression_case_status,
    run_manifest,
    unchanged_since_promotion,
)
from rag_eval_pipeline.core.metrics.names import metric_label
from rag_eval_pipeline.core.report.decision import NO_GATE
from rag_eval_pipeline.core.report.markdown import markdown_table
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore


def load_baseline(store: TableStore) -> PromotedBaseline | None:
    """The promoted baseline (manifest, metric_summary, question_metrics), or None before the first promotion.

    Raises BaselineDamaged when it was promoted but is now missing, edited or unreadable (``core/baseline.py``)."""
    return read_baseline(store.path(BASELINE_DIR).parent)


def damaged_verdict(cfg, reason: str) -> GateVerdict:
    """The verdict when the promoted baseline is damaged: one blocking ``baseline_damaged`` row per candidate
    (or for the system to promote), no comparison at all, so nothing can be promoted against another reference."""
    systems = list(cfg.candidate_systems) or [cfg.gates.promote or "baseline"]
    return GateVerdict(results=[], errors=[f"{s}: the promoted baseline is damaged: {reason}" for s in systems],
                       baseline=None, baseline_source="damaged", noise={}, promote=cfg.gates.promote,
                       error_status="baseline_damaged")


def gates_markdown(gates: pl.DataFrame) -> str:
    """A Markdown table of gate results: candidate, baseline, difference, p-value, wins/ties/losses, status."""
    from rag_eval_pipeline.core.metrics.names import level_label

    f = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
    return markdown_table(["system", "metric", "candidate", "baseline", "diff", "95% CI", "p", "W/T/L", "status"], [
        [r["system"], level_label(r["metric"], r["k"], r.get("level")), f(r["candidate"]), f(r["baseline"]),
         f(r["difference"]), "" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
         f(r["p_value"]), f"{r['wins']}/{r['ties']}/{r['losses']}", r["status"]]
        for r in gates.iter_rows(named=True)])


@dg.asset(group_name="promotion", kinds={"polars", "parquet"})
def gate_results(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
                 metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame, rag_runs: pl.DataFrame,
                 golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
                 judge_variance: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per (candidate, gated metric): candidate vs baseline on the gate split, paired test, verdict.

    Computed once per run; ``gate_verdict`` (promotion), ``regression_cases`` and ``evaluation_report`` read it.
    ``question_metrics`` is scanned: only the gated metrics' rows are read."""
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


def failed_gates(gate_results: pl.DataFrame) -> list[str]:
    """``"system/metric: reason"`` of every blocking gate row that did not pass (version mismatches included;
    a document-level gate's metric reads ``metric (doc)``)."""
    failed = gate_results.filter(pl.col("blocking") & ~pl.col("passed"))
    return [f"{r['system']}/{r['metric']}{' (doc)' if r.get('level') == 'doc' else ''}: {r['reason']}"
            for r in failed.iter_rows(named=True)]


@dg.asset(group_name="promotion", kinds={"json"})
def gate_verdict(context: dg.AssetExecutionContext, settings: EvalSettings,
                 gate_results: pl.DataFrame) -> dg.Output[dict]:
    """Whether ``gates.promote`` may become the baseline: the gate table's blocking failures, and the system.

    ``promote`` is null when no candidate is configured; ``unchanged_since_promotion`` when the
    candidate is already the promoted baseline (promotion then keeps the stored one)."""
    cfg = settings.config
    failures = failed_gates(gate_results)
    promote = cfg.gates.promote
    rows = gate_results.filter(pl.col("system") == promote) if promote else gate_results.clear()
    unchanged = rows.height > 0 and rows["status"].eq("unchanged_since_promotion").any()
    verdict = {"promote": promote, "passed": not failures, "blocking_failures": failures,
               "unchanged_since_promotion": bool(unchanged)}
    return dg.Output(verdict, metadata={
        "promote": promote or "none (no candidate configured)", "passed": not failures,
        "blocking_failures": dg.MetadataValue.json(failures),
        "unchanged_since_promotion": bool(unchanged),
    })


@dg.asset_check(asset=gate_verdict, blocking=True, additional_ins={"gate_results": dg.AssetIn()},
                description="Every blocking gate passes: no regression beyond its threshold that the paired test "
                            "calls real, no floor breached, no comparison across golden or corpus versions.")
def no_regression_against_baseline(gate_verdict: dict, gate_results: pl.DataFrame) -> dg.AssetCheckResult:
    failed = failed_gates(gate_results)
    return dg.AssetCheckResult(
        passed=not failed,
        metadata={
            "failed": dg.MetadataValue.json(failed),
            "promote": gate_verdict.get("promote") or "none",
            "gates": dg.MetadataValue.md(gates_markdown(gate_results)),
            "regressed_questions": dg.MetadataValue.json({
                f"{r['system']}/{r['metric']}": r["regressed_questions"][:50]
                for r in gate_results.iter_rows(named=True) if r["regressed_questions"]}),
        },
    )


@dg.asset_check(asset=gate_verdict, blocking=True, additional_ins={"rag_runs": dg.AssetIn()},
                description="No system's share of errored runs (decision error: a failed call, a timeout, a trace "
                            "reporting an error) is above gates.max_run_error_share: errors are reported apart from "
                            "the retrieval and decision rates, and too many of them block promotion.")
def run_errors_within_share(settings: EvalSettings, gate_verdict: dict, rag_runs: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.systems.error_reasons import error_counts

    limit = settings.config.gates.max_run_error_share
    counts = error_counts(rag_runs)
    over = {s: c for s, c in counts.items() if c["share"] > limit}
    return dg.AssetCheckResult(
        passed=not over,
        metadata={
            "limit": limit,
            "over_limit": dg.MetadataValue.json(sorted(over)),
            "errors_by_system": dg.MetadataValue.json(counts),
        },
    )


@dg.asset(group_name="promotion")
def promotion(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
              metric_summary: pl.DataFrame, question_metrics: pl.LazyFrame, rag_runs: pl.DataFrame,
              golden_set: pl.DataFrame, judge_calibration: pl.DataFrame, gate_verdict: dict) -> dg.Output[dict]:
    """Store ``gates.promote`` as the promoted baseline. Runs only when every blocking check upstream passed.

    Nothing is written when no candidate is configured, or when the candidate is the promoted baseline
    itself (the stored one, with its promotion time, stays). Raises ValueError, before writing, when
    the system has no row in this run's tables (an empty baseline would fail every later gate)."""
    cfg = settings.config
    system = gate_verdict.get("promote")
    stored = load_baseline(store)
    if system is None:
        return dg.Output({"promoted": None}, metadata={"promoted_system": "none (no candidate configured)"})
    manifest = run_manifest(rag_runs, golden_set, system)
    # the same function the run's decision (and so the report) reads: they cannot disagree on "kept"
    if stored is not None and unchanged_since_promotion(rag_runs, golden_set, system, stored.manifest):
        context.log.info(f"{system} is already the promoted baseline (unchanged since promotion); kept as stored")
        return dg.Output(dict(stored.manifest), metadata={
            "promoted_system": system, "unchanged_since_promotion": True,
            "promoted_at": str(stored.manifest.get("promoted_at")),
            "corpus_version": str(manifest["corpus_version"]), "golden_version": str(manifest["golden_version"])})
    mine = pl.col("system") == system
    parts: dict[str, pl.DataFrame] = {
        "metric_summary": metric_summary.filter(mine),
        "question_metrics": question_metrics.filter(mine).collect(engine="streaming"),  # scanned: this system's rows
        "rag_runs": rag_runs.filter(mine)}
    empty = [name for name, df in parts.items() if df.height == 0]
    if empty:
        raise ValueError(f"{cfg.path}: gates.promote {system!r} has no rows in {empty} of this run; "
                         "nothing was promoted (the stored baseline is unchanged)")
    manifest |= {"promoted_at": dt.datetime.now(dt.UTC).isoformat(), "run_id": context.run_id}
    for name, df in parts.items():
        store.write(df, BASELINE_DIR, f"{name}.parquet", table=name)
    # the tables' content hashes, checked whenever the baseline is read (core/baseline.py)
    manifest = with_file_hashes(manifest, store.path(BASELINE_DIR).parent)
    store.write_json(manifest, BASELINE_DIR, "manifest.json")
    basis = "no blocking failure" if cfg.thresholds else NO_GATE  # worded as the run's decision words it
    context.log.info(f"promoted {system} as the baseline: {basis}")
    return dg.Output(manifest, metadata={"promoted_system": system, "unchanged_since_promotion": False,
                                         "promoted_because": basis,
                                         "corpus_version": manifest["corpus_version"],
                                         "golden_version": manifest["golden_version"]})


#: The columns a regression case keeps across runs: the declared ``regression_cases`` schema without the
#: two that every run recomputes (``current_value``, ``status``).
REGRESSION_COLUMNS = {c: t for c, t in tables.SCHEMAS["regression_cases"].items()
                      if c not in ("current_value", "status")}


@dg.asset(group_name="promotion", kinds={"polars", "parquet"})
def regression_cases(context: dg.AssetExecutionContext, store: TableStore, question_metrics: pl.LazyFrame,
                     gate_results: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Questions that flipped worse against the baseline, kept across runs; every run reports their current state.

    A case is added the first time a candidate's per-question value on a gated metric is worse than the baseline's
    (failures are kept as regression cases). Later runs never drop it; ``status`` says whether it still
    regresses, has recovered (better than when found, by the metric's direction), or has no value now
    (``core.gates.regression_case_status``). Cases are kept for chunk-level (and level-less) rows; a
    document-level gate's regressed questions are in ``gate_results`` only.
    """
    if "level" in question_metrics.collect_schema().names():  # scanned: the schema alone, no rows read
        question_metrics = question_metrics.filter(pl.col("level").fill_null("") != "doc")
    if "level" in gate_results.columns:
        gate_results = gate_results.filter(pl.col("level").fill_null("") != "doc")
    previous = store.read("regression_cases.parquet")
    known = pl.DataFrame(schema=REGRESSION_COLUMNS) if previous is None else previous.select(list(REGRESSION_COLUMNS))
    now = dt.datetime.now(dt.UTC).isoformat()
    new_rows = []
    seen = {(r["system"], r["metric"], r["k"], r["question_id"]) for r in known.iter_rows(named=True)}
    for r in gate_results.iter_rows(named=True):
        if not r["regressed_questions"]:
            continue
        system, metric, k = r["system"], r["metric"], r["k"]
        per_q = question_metrics.filter(
            (pl.col("system") == system) & (pl.col("metric") == metric)
            & (pl.col("k").is_null() if k is None else pl.col("k") == k)
        )
        values = dict(per_q.select("question_id", "value").collect(engine="streaming").iter_rows())
        for q in r["regressed_questions"]:
            if (system, metric, k, q) not in seen:
                new_rows.append({"system": system, "metric": metric, "k": k, "question_id": q,
                                 "value_when_found": values.get(q),
                                 "first_seen_run": context.run_id, "first_seen_at": now})
    cases = pl.concat([known, pl.DataFrame(new_rows, schema=REGRESSION_COLUMNS)]) if new_rows else known
    keys = ["system", "metric", "k", "question_id"]
    current = (question_metrics.select(*keys, pl.col("value").alias("current_value"))
               .join(cases.select(keys).lazy(), on=keys, how="semi", nulls_equal=True)  # only the cases' rows
               .collect(engine="streaming"))
    cases = cases.join(current, on=keys, how="left", nulls_equal=True)
    cases = regression_case_status(cases)  # oriented by each metric's direction
    counts = dict(cases.group_by("status").len().iter_rows()) if cases.height else {}
    still = cases.filter(pl.col("status") == "still_regressed")
    return dg.Output(cases, metadata={
        "cases": cases.height, "new_cases": len(new_rows), "status": dg.MetadataValue.json(counts),
        "still_regressed": dg.MetadataValue.json(
            [f"{r['system']}/{metric_label(r['metric'], r['k'])}: {r['question_id']}"
             for r in still.head(50).iter_rows(named=True)]),
    })
