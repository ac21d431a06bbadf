"""``rag-eval``: run a job of the code location from the command line and print the summary.

``rag-eval run`` materialises every asset (job ``full_evaluation``) against the project's Dagster
instance (``.dagster_home``, shared with ``dagster dev``), prints where the Parquet tables are and a
summary (value, numerator/denominator, n, 95% interval), and exits 1 when the run failed or a blocking
check failed, so CI systems can use it directly. It exits 3, without starting a run, when another run
is writing the same output folder (``core/locking.py``; ``--wait-s N`` waits for it instead).
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_METRICS = (("recall", 5), ("P", 5), ("success", 5), ("ndcg_cut", 10), ("recip_rank", None), ("map", None),
                   ("claim_evidence_availability", 5), ("coverage", None), ("answer_without_evidence_rate", None),
                   ("false_abstention_rate", None), ("abstention_without_evidence", None), ("faithfulness", None),
                   ("faithfulness_holistic", None), ("reference_token_recall", None), ("run_error_rate", None),
                   ("latency_ms_p50", None), ("latency_ms_p95", None))


def _prepare_env(args: argparse.Namespace) -> None:
    if args.config:
        os.environ["RAG_EVAL_CONFIG"] = str(Path(args.config).resolve())
    if args.output:
        os.environ["RAG_EVAL_OUTPUT_DIR"] = str(Path(args.output).resolve())
    if not os.environ.get("DAGSTER_HOME"):
        home = PROJECT_ROOT / ".dagster_home"
        home.mkdir(exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)


def metric_label(metric: str, k: int | None) -> str:
    """The trec_eval-style name of a (metric, k) row: ("recall", 5) -> "recall_5"; ("map", None) -> "map"."""
    return metric if k is None else f"{metric}_{k}"


def format_summary(summary, metrics=DEFAULT_METRICS) -> str:
    """Render the overall rows of a metric_summary table as aligned text, one line per system and metric."""
    import polars as pl

    rows = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
    order = {metric_label(m, k): i for i, (m, k) in enumerate(metrics)}
    rows = rows.with_columns(
        pl.struct("metric", "k").map_elements(lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8).alias("label")
    ).filter(pl.col("label").is_in(list(order)))
    rows = rows.with_columns(pl.col("label").replace_strict(order, default=99).alias("_o")).sort("system", "_o")
    out = [f"{'system':<22} {'metric':<30} {'value':>8} {'num/den':>13} {'n':>5}  95% CI"]
    for r in rows.iter_rows(named=True):
        value = "null" if r["value"] is None else f"{r['value']:.4f}"
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['ci_method']}"
        nd = f"{r['numerator']:g}/{r['denominator']:g}"
        out.append(f"{r['system']:<22} {r['label']:<30} {value:>8} {nd:>13} {r['n']:>5}  {ci}")
    return "\n".join(out)


def step_error_text(error) -> str:
    """The message of a failed step: the error raised by our code (file, line, field for bad input),
    not Dagster's "Error occurred while executing op" wrapper. Input: a ``SerializableErrorInfo``."""
    parts = []
    while error is not None:
        message = error.message.strip()
        # skip Dagster's wrapper, and a cause whose text the message above already quotes (YAML errors)
        if error.cls_name != "DagsterExecutionStepExecutionError" and not (
                parts and message.split(": ", 1)[-1] in parts[-1]):
            parts.append(message)
        error = error.cause or error.context
    return "\n  caused by: ".join(parts) if parts else "(no message)"


def run(args: argparse.Namespace) -> int:
    _prepare_env(args)
    import dagster as dg
    import polars as pl

    from rag_eval_pipeline.definitions import build_resources, defs

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.locking import OutputLock, OutputLocked, end_on_signal

    job = defs.resolve_job_def(args.job)
    resources = build_resources()
    try:  # a bad configuration is one line here, not a failed run with a stack trace in its log
        load_config(resources["settings"].config_path)
    except ConfigError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return 1
    out_dir = Path(resources["store"].base_dir)
    run_id = str(uuid.uuid4())
    # One writer per output folder: execute_in_process bypasses Dagster's run queue, so the CLI holds the
    # folder lock for the whole run (the IO manager and table store re-enter it in this process).
    try:
        lock = OutputLock(out_dir, run_id=run_id, wait_s=args.wait_s).acquire()
    except OutputLocked as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return 3
    end_on_signal()  # SIGTERM / SIGINT end the run, and free the folder, within seconds whatever step it is in

    def identity(p: Path) -> tuple[int, int]:
        st = p.stat()
        return st.st_ino, st.st_mtime_ns
    before = {p.name: identity(p) for p in out_dir.glob("*.parquet")}  # to tell this run's tables from older ones
    try:
        with dg.DagsterInstance.get() as instance:
            result = job.execute_in_process(instance=instance, raise_on_error=False, run_id=run_id)
    finally:
        lock.release()
    failed_checks = [
        e for e in result.get_asset_check_evaluations()
        if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR
    ]
    print(f"\nrun {result.run_id} ({args.job}): {'succeeded' if result.success else 'FAILED'}")
    print(f"tables: {out_dir}")

    def stale(p: Path) -> bool:  # left by an earlier run: this one failed before rewriting it (or never writes it)
        return before.get(p.name) == identity(p)
    for p in sorted(out_dir.glob("*.parquet")):
        print(f"  {p.name}" + ("  (from an earlier run, not rewritten by this one)" if stale(p) else ""))
    summary_path = out_dir / "metric_summary.parquet"
    if summary_path.exists() and not stale(summary_path):
        print("\n" + format_summary(pl.read_parquet(summary_path)))
    elif summary_path.exists():
        print("\nno summary: this run did not rewrite metric_summary.parquet (the file there is from an earlier run)")
    for e in failed_checks:
        print(f"\nFAILED check {e.asset_key.to_user_string()}:{e.check_name}")
        for k, v in e.metadata.items():
            text = str(getattr(v, "value", v))
            if text not in ("[]", "{}", ""):
                print(f"  {k}: {text[:400]}")
    if not result.success:
        for ev in result.all_events:
            if ev.is_step_failure:
                print(f"\nstep {ev.step_key} failed: {step_error_text(ev.event_specific_data.error)[:2000]}")
    return 0 if result.success and not failed_checks else 1


def estimate(args: argparse.Namespace) -> int:
    """Dry run of the judge: how many calls and prompt tokens judging this configuration would cost.

    Builds the snapshot, golden set and runs (no Dagster run, nothing written) and asks the configured
    judge (``RAG_EVAL_JUDGE``) for its estimate; makes no judge call.
    """
    _prepare_env(args)
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import EvalError
    from rag_eval_pipeline.core.judges.base import EstimatesCost
    from rag_eval_pipeline.core.pipeline import build_golden, build_runs, build_snapshot
    from rag_eval_pipeline.definitions import build_resources

    try:
        cfg = load_config(os.environ.get("RAG_EVAL_CONFIG") or PROJECT_ROOT / "data" / "sample" / "config.yaml")
        snapshot, version = build_snapshot(cfg)
        golden = build_golden(cfg, snapshot)
        from rag_eval_pipeline.core.systems.estimate import offline_systems, system_call_lines

        offline = offline_systems(cfg)  # live systems are not called by a dry run
        runs = build_runs(cfg, snapshot, golden, version, offline) if offline else None
    except EvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for line in system_call_lines(cfg, golden):
        print(line)
    if runs is None:
        print("judge: no offline system to estimate from (live systems' answers exist only after a run)")
        return 0
    judge = build_resources()["judge"].get_judge()
    texts = dict(zip(snapshot["chunk_id"], snapshot["text"]))
    questions = dict(zip(golden["question_id"], golden["question"]))
    items = [(questions.get(r["question_id"], ""), r["answer"], [texts[h["chunk_id"]] for h in r["retrieved"] if h["chunk_id"] in texts])
             for r in runs.iter_rows(named=True) if r["decision"] == "answer"]
    if not isinstance(judge, EstimatesCost):
        print(f"judge {judge.name}: {len(items)} answers to judge; it makes no model calls (cost 0)")
        return 0
    est = judge.dry_run_estimate(items)
    repeats = cfg.judge.repeats
    print(f"judge {judge.name} ({judge.model}): {est['items']} answers, about {est['calls'] * repeats} calls and "
          f"{est['prompt_tokens_est'] * repeats:,} prompt tokens (characters / 4) for {repeats} repeat(s); "
          f"{est['cached_calls']} decomposition calls already cached. Faithfulness only: answer_quality adds "
          "about 4 calls per answer.")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rag-eval``. Returns the process exit status (0 ok, 1 failed run or blocking check)."""
    parser = argparse.ArgumentParser(prog="rag-eval", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="materialise a job and print the summary")
    p_run.add_argument("--job", default="full_evaluation", choices=["full_evaluation", "quick_evaluation"])
    p_run.add_argument("--config", help="evaluation YAML (default: data/sample/config.yaml or $RAG_EVAL_CONFIG)")
    p_run.add_argument("--output", help="folder for the Parquet tables (default: outputs/ or $RAG_EVAL_OUTPUT_DIR)")
    p_run.add_argument("--wait-s", type=float, default=0.0,
                       help="when another run is writing the output folder, wait up to this many seconds for it "
                            "(default 0: exit 3 at once)")
    p_est = sub.add_parser("estimate", help="dry run: judge calls and prompt tokens this configuration would cost")
    p_est.add_argument("--config", help="evaluation YAML (default: data/sample/config.yaml or $RAG_EVAL_CONFIG)")
    p_est.add_argument("--output", help=argparse.SUPPRESS)
    from rag_eval_pipeline import serve_reference
    from rag_eval_pipeline.labelling import cli as label_cli

    label_cli.add_arguments(sub.add_parser("label", help="a local page for the hand labels judge calibration needs"))
    serve_reference.add_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "label":
        return label_cli.main(args)
    if args.command == "serve-reference":
        return serve_reference.serve_reference(args)
    if args.command == "run":
        return run(args)
    if args.command == "estimate":
        return estimate(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
