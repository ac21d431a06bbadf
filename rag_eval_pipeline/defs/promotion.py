"""The regression gate and ``promotion``: a candidate replaces the baseline only when every blocking check passes."""


import datetime as dt
import json

import dagster as dg
import polars as pl

from rag_eval_pipeline.core.gates import VersionMismatchError, check_versions, evaluate_gates
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


@dg.asset_check(
    asset="metric_summary", blocking=True,
    additional_ins={"question_metrics": dg.AssetIn(), "rag_runs": dg.AssetIn(), "golden_set": dg.AssetIn(),
                    "judge_variance": dg.AssetIn()},
    description="Each candidate against the promoted baseline (or the configured baseline system) on the gate split: "
                "per-metric thresholds decided by a paired randomisation test over questions.",
)
def no_regression_against_baseline(settings: EvalSettings, store: TableStore, metric_summary: pl.DataFrame,
                                   question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
                                   golden_set: pl.DataFrame, judge_variance: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.metrics.variance import resolution_from_table

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
        elif cfg.baseline_system:
            baseline_name, base_summary, base_qm = cfg.baseline_system, metric_summary, question_metrics
        else:
            baseline_name, base_summary, base_qm = None, metric_summary, question_metrics
        results += evaluate_gates(
            cand, metric_summary, question_metrics, baseline_name or cand, base_summary, base_qm,
            cfg.thresholds if baseline_name else [t for t in cfg.thresholds if t.min_value is not None],
            split=cfg.gate_split, seed=cfg.seed, noise_resolution=noise,
        )
    failed = [r for r in results if r.blocking and not r.passed]
    table = ["| system | metric | k | candidate | baseline | diff | p | W/T/L | status |", "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        f = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
        table.append(f"| {r.system} | {r.metric} | {r.k if r.k is not None else ''} | {f(r.candidate)} | {f(r.baseline)} | "
                     f"{f(r.difference)} | {f(r.p_value)} | {r.wins}/{r.ties}/{r.losses} | {r.status} |")
    return dg.AssetCheckResult(
        passed=not failed and not errors,
        metadata={
            "baseline": baseline_name or "none (first run: floors only)",
            "baseline_source": "promoted" if stored is not None else "configured system in this run",
            "split": cfg.gate_split,
            "judge_noise_resolution": dg.MetadataValue.json(noise),
            "gates": dg.MetadataValue.md("\n".join(table)),
            "failed": dg.MetadataValue.json([f"{r.system}/{r.metric}: {r.reason}" for r in failed]),
            "version_errors": dg.MetadataValue.json(errors),
            "regressed_questions": dg.MetadataValue.json(
                {f"{r.system}/{r.metric}": r.regressed_questions[:50] for r in results if r.regressed_questions}),
            "details": dg.MetadataValue.json([{
                "system": r.system, "metric": r.metric, "k": r.k, "difference": r.difference,
                "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value,
                "wins": r.wins, "ties": r.ties, "losses": r.losses, "status": r.status, "reason": r.reason,
            } for r in results]),
        },
    )


@dg.asset(group_name="promotion")
def promotion(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
              metric_summary: pl.DataFrame, question_metrics: pl.DataFrame, rag_runs: pl.DataFrame,
              golden_set: pl.DataFrame, judge_calibration: pl.DataFrame) -> dg.Output[dict]:
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
