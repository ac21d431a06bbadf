"""The regression gate and ``promotion``: a candidate replaces the baseline only when every blocking check passes."""


import datetime as dt
import json

import dagster as dg
import polars as pl

from rag_eval_pipeline.core.gates import VersionMismatchError, check_versions, evaluate_gates
from rag_eval_pipeline.core.report.markdown import markdown_table
from rag_eval_pipeline.core.tables import SCHEMAS
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore

BASELINE_DIR = "baseline"


def _manifest(rag_runs: pl.DataFrame, golden_set: pl.DataFrame, system: str) -> dict:
    rows = rag_runs.filter(pl.col("system") == system).head(1).to_dicts()
    row = rows[0] if rows else {}
    return {
        "system": system,
        "corpus_version": row.get("corpus_version"),
        "golden_version": golden_set["golden_version"][0] if golden_set.height else None,
        "retriever": row.get("retriever"),
        "generator": row.get("generator"),
        "model": row.get("model"),
        "prompt_version": row.get("prompt_version"),
    }


def load_baseline(store: TableStore) -> tuple[dict, pl.DataFrame, pl.DataFrame] | None:
    """The promoted baseline (manifest, metric_summary, question_metrics), or None before the first promotion."""
    manifest_path = store.path(BASELINE_DIR, "manifest.json")
    if not manifest_path.exists():
        return None
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    return manifest, store.read(BASELINE_DIR, "metric_summary.parquet"), store.read(BASELINE_DIR, "question_metrics.parquet")


def run_gates(settings: EvalSettings, store: TableStore, metric_summary: pl.DataFrame, question_metrics: pl.DataFrame,
              rag_runs: pl.DataFrame, golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
              judge_variance: pl.DataFrame):
    """Every configured candidate against the baseline: (gate results, version errors, baseline name, noise, stored?).

    The baseline is the promoted one when it exists (its per-question values restricted to the current golden
    questions and re-aggregated, so a quick subset compares like with like), else the configured
    ``gates.baseline_system`` from this run; with neither, only absolute floors apply.
    """
    from rag_eval_pipeline.core.metrics.variance import resolution_from_table
    from rag_eval_pipeline.core.pipeline import build_summary

    cfg = settings.config
    noise = resolution_from_table(judge_variance)
    stored = load_baseline(store)
    results, errors, baseline_name = [], [], None
    for cand in cfg.candidate_systems:
        cand_manifest = _manifest(rag_runs, golden_set, cand)
        if stored is not None:
            manifest, base_summary, base_qm = stored
            baseline_name = manifest["system"]
            try:
                check_versions(cand_manifest, manifest)
            except VersionMismatchError as exc:
                errors.append(f"{cand}: {exc}")
                continue
            qids = golden_set["question_id"]
            if set(base_qm["question_id"].unique()) != set(qids):
                base_qm = base_qm.filter(pl.col("question_id").is_in(qids.to_list()))
                base_summary = build_summary(cfg, base_qm, golden_set, corpus_snapshot)
        elif cfg.baseline_system:
            baseline_name, base_summary, base_qm = cfg.baseline_system, metric_summary, question_metrics
        else:
            baseline_name, base_summary, base_qm = None, metric_summary, question_metrics
        results += evaluate_gates(
            cand, metric_summary, question_metrics, baseline_name or cand, base_summary, base_qm,
            cfg.thresholds if baseline_name else [t for t in cfg.thresholds if t.min_value is not None],
            split=cfg.gate_split, seed=cfg.seed, noise_resolution=noise, alpha=cfg.alpha,
            block_inconclusive=cfg.block_inconclusive,
        )
    return results, errors, baseline_name, noise, stored is not None


GATE_INS = {"question_metrics": dg.AssetIn(), "rag_runs": dg.AssetIn(), "golden_set": dg.AssetIn(),
            "corpus_snapshot": dg.AssetIn(), "judge_variance": dg.AssetIn()}


def gate_frame(results, errors) -> pl.DataFrame:
    """Gate results (and version errors, as status ``version_mismatch``) as a ``gate_results`` table."""
    rows = [{
        "system": r.system, "metric": r.metric, "k": r.k, "candidate": r.candidate, "baseline": r.baseline,
        "difference": r.difference, "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value,
        "wins": r.wins, "ties": r.ties, "losses": r.losses, "status": r.status, "reason": r.reason,
        "blocking": r.blocking, "passed": r.passed, "regressed_questions": r.regressed_questions,
    } for r in results]
    rows += [{"system": e.split(":", 1)[0], "metric": "versions", "status": "version_mismatch", "reason": e,
              "blocking": True, "passed": False, "wins": 0, "ties": 0, "losses": 0, "regressed_questions": []}
             for e in errors]
    return pl.DataFrame(rows, schema=SCHEMAS["gate_results"])


def gates_markdown(gates: pl.DataFrame) -> str:
    """A Markdown table of gate results: candidate, baseline, difference, p-value, wins/ties/losses, status."""
    f = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
    return markdown_table(["system", "metric", "candidate", "baseline", "diff", "95% CI", "p", "W/T/L", "status"], [
        [r["system"], r["metric"] + ("" if r["k"] is None else f"_{r['k']}"), f(r["candidate"]), f(r["baseline"]),
         f(r["difference"]), "" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]",
         f(r["p_value"]), f"{r['wins']}/{r['ties']}/{r['losses']}", r["status"]]
        for r in gates.iter_rows(named=True)])


@dg.asset(group_name="promotion", kinds={"polars", "parquet"}, ins=GATE_INS | {"metric_summary": dg.AssetIn()})
def gate_results(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
                 metric_summary: pl.DataFrame, question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
                 golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
                 judge_variance: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per (candidate, gated metric): candidate vs baseline on the gate split, paired test, verdict."""
    results, errors, baseline_name, noise, promoted = run_gates(
        settings, store, metric_summary, question_metrics, rag_runs, golden_set, corpus_snapshot, judge_variance)
    gates = gate_frame(results, errors)
    return dg.Output(gates, metadata={
        "baseline": baseline_name or "none (first run: floors only)",
        "baseline_source": "promoted" if promoted else "configured system in this run",
        "split": settings.config.gate_split,
        "judge_noise_resolution": dg.MetadataValue.json(noise),
        "gates": dg.MetadataValue.md(gates_markdown(gates)),
    })


@dg.asset_check(asset=gate_results, blocking=True,
                description="Every blocking gate passes: no regression beyond its threshold that the paired test calls real, "
                            "no floor breached, no comparison across golden or corpus versions.")
def no_regression_against_baseline(gate_results: pl.DataFrame) -> dg.AssetCheckResult:
    failed = gate_results.filter(pl.col("blocking") & ~pl.col("passed"))
    return dg.AssetCheckResult(
        passed=failed.height == 0,
        metadata={
            "failed": dg.MetadataValue.json([f"{r['system']}/{r['metric']}: {r['reason']}" for r in failed.iter_rows(named=True)]),
            "gates": dg.MetadataValue.md(gates_markdown(gate_results)),
            "regressed_questions": dg.MetadataValue.json({
                f"{r['system']}/{r['metric']}": r["regressed_questions"][:50]
                for r in gate_results.iter_rows(named=True) if r["regressed_questions"]}),
        },
    )


@dg.asset(group_name="promotion")
def promotion(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
              metric_summary: pl.DataFrame, question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
              golden_set: pl.DataFrame, judge_calibration: pl.DataFrame, gate_results: pl.DataFrame) -> dg.Output[dict]:
    """Store the candidate as the promoted baseline. Runs only when every blocking check upstream passed."""
    cfg = settings.config
    system = (cfg.raw.get("gates") or {}).get("promote") or (cfg.candidate_systems[0] if cfg.candidate_systems else cfg.systems[0]["name"])
    manifest = _manifest(rag_runs, golden_set, system) | {
        "promoted_at": dt.datetime.now(dt.timezone.utc).isoformat(), "run_id": context.run_id,
    }
    store.write(metric_summary.filter(pl.col("system") == system), BASELINE_DIR, "metric_summary.parquet", table="metric_summary")
    store.write(question_metrics.filter(pl.col("system") == system), BASELINE_DIR, "question_metrics.parquet", table="question_metrics")
    store.write(rag_runs.filter(pl.col("system") == system), BASELINE_DIR, "rag_runs.parquet", table="rag_runs")
    store.write_json(manifest, BASELINE_DIR, "manifest.json")
    context.log.info(f"promoted {system} as the baseline")
    return dg.Output(manifest, metadata={"promoted_system": system, "corpus_version": manifest["corpus_version"],
                                         "golden_version": manifest["golden_version"]})


REGRESSION_COLUMNS = {
    "system": pl.Utf8, "metric": pl.Utf8, "k": pl.Int32, "question_id": pl.Utf8, "baseline_value": pl.Float64,
    "value_when_found": pl.Float64, "first_seen_run": pl.Utf8, "first_seen_at": pl.Utf8,
}


@dg.asset(group_name="promotion", kinds={"polars", "parquet"}, ins=GATE_INS)
def regression_cases(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
                     metric_summary: pl.DataFrame, question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
                     golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
                     judge_variance: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Questions that flipped worse against the baseline, kept across runs; every run reports their current state.

    A case is added the first time a candidate's per-question value on a gated metric falls below the baseline's
    (seed 000: keep failures as regressions). Later runs never drop it; ``status`` says whether it still
    regresses, has recovered, or has no value now.
    """
    results, _, _, _, _ = run_gates(settings, store, metric_summary, question_metrics, rag_runs, golden_set,
                                    corpus_snapshot, judge_variance)
    previous = store.read("regression_cases.parquet")
    known = pl.DataFrame(schema=REGRESSION_COLUMNS) if previous is None else previous.select(list(REGRESSION_COLUMNS))
    now = dt.datetime.now(dt.timezone.utc).isoformat()
    new_rows = []
    seen = {(r["system"], r["metric"], r["k"], r["question_id"]) for r in known.iter_rows(named=True)}
    for r in results:
        if not r.regressed_questions:
            continue
        per_q = question_metrics.filter(
            (pl.col("system") == r.system) & (pl.col("metric") == r.metric)
            & (pl.col("k").is_null() if r.k is None else pl.col("k") == r.k)
        )
        values = dict(per_q.select("question_id", "value").iter_rows())
        for q in r.regressed_questions:
            if (r.system, r.metric, r.k, q) not in seen:
                new_rows.append({"system": r.system, "metric": r.metric, "k": r.k, "question_id": q,
                                 "value_when_found": values.get(q),
                                 "first_seen_run": context.run_id, "first_seen_at": now})
    cases = pl.concat([known, pl.DataFrame(new_rows, schema=REGRESSION_COLUMNS)]) if new_rows else known
    current = question_metrics.select("system", "metric", "k", "question_id", pl.col("value").alias("current_value"))
    cases = cases.join(current, on=["system", "metric", "k", "question_id"], how="left", nulls_equal=True)
    cases = cases.with_columns(
        pl.when(pl.col("current_value").is_null()).then(pl.lit("no_value_now"))
        .when(pl.col("current_value") < pl.col("value_when_found") + 1e-12).then(pl.lit("still_regressed"))
        .otherwise(pl.lit("recovered")).alias("status")
    )
    counts = dict(cases.group_by("status").len().iter_rows()) if cases.height else {}
    still = cases.filter(pl.col("status") == "still_regressed")
    return dg.Output(cases, metadata={
        "cases": cases.height, "new_cases": len(new_rows), "status": dg.MetadataValue.json(counts),
        "still_regressed": dg.MetadataValue.json(
            [f"{r['system']}/{r['metric']}{'' if r['k'] is None else '_' + str(r['k'])}: {r['question_id']}"
             for r in still.head(50).iter_rows(named=True)]),
    })
