"""rag-eval: run a suite's evaluation, estimate what judging costs, serve the reports.

``rag-eval run`` materialises every asset of one suite (job ``full_evaluation``; default suite: the
sample) against the project's Dagster instance (``.dagster_home``, shared with ``dagster dev``), prints
where the Parquet tables are, a summary (value, numerator/denominator, n, 95% interval, judge errors),
one line per check, the gate verdict, whether promotion happened and where ``report.html`` is.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SUITE = "sample"
DEFAULT_METRICS = (("recall", 5), ("P", 5), ("success", 5), ("ndcg_cut", 10), ("recip_rank", None), ("map", None),
                   ("claim_evidence_availability", 5), ("coverage", None), ("answer_without_evidence_rate", None),
                   ("false_abstention_rate", None), ("abstention_without_evidence", None), ("faithfulness", None),
                   ("faithfulness_holistic", None), ("reference_token_recall", None), ("run_error_rate", None),
                   ("latency_ms_p50", None), ("latency_ms_p95", None))
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_LOCKED = 0, 1, 2, 3
EXIT_CODES = """exit codes:
  0  the run succeeded and every blocking check passed (warnings do not count)
  1  a step failed or a blocking check failed
  2  usage or configuration error, before any run starts: a bad option, an unknown suite, a configuration
     that does not load, a suite whose data folder is absent, a misconfigured judge (RAG_EVAL_JUDGE ...)
  3  another run is writing the same output folder (rag-eval run --wait-s N waits for it)
  137  SIGTERM or Ctrl-C and the run did not stop within 3 s: the watchdog killed it (the folder stays as it was)"""
ALL_EXIT_CODES = """exit codes (rag-eval COMMAND --help lists each command's own):
  0  run: succeeded, every blocking check passed; estimate: printed; serve, label, serve-reference: stopped
  1  run: a step or a blocking check failed; estimate, label, serve-reference: bad input data (file, line, field)
  2  any command: a usage or configuration mistake, before anything starts (a bad option, an unknown suite, a
     configuration that does not load, a suite whose data is absent, a misconfigured judge, a port in use)
  3  run: another run is writing the same output folder
  137  run: stopped by the SIGTERM watchdog"""
ESTIMATE_EXIT_CODES = """exit codes:
  0  the estimate was printed
  1  bad input data (corpus, golden set, a run log): the message names the file, line and field
  2  usage or configuration error: a bad option, an unknown suite, a configuration that does not load,
     a misconfigured judge (RAG_EVAL_JUDGE ...)"""
SERVE_EXIT_CODES = """exit codes:
  0  stopped cleanly (Ctrl-C or SIGTERM)
  2  usage error: a bad option, an unknown suite, a folder that does not exist, a port in use"""
LABEL_EXIT_CODES = """exit codes:
  0  stopped cleanly (Ctrl-C or SIGTERM)
  1  a data mistake: the suite's tables are not written yet (rag-eval run first), a bad label file,
     nothing to label for your groups
  2  usage or configuration error: a bad option, an unknown suite, a configuration that does not load or
     has no calibration section, a port in use"""
SERVE_REFERENCE_EXIT_CODES = """exit codes:
  0  stopped cleanly (Ctrl-C or SIGTERM)
  1  bad corpus data: the message names the file, line and field
  2  usage or configuration error: a bad option, a configuration that does not load, a system that is
     unknown or not of kind reference, a port in use"""


class UsageError(Exception):
    """A mistake on the command line or in the environment: one line on stderr, exit 2."""


# --- shared helpers ---------------------------------------------------------------------------------

def _dagster_home() -> None:
    """Use the project's .dagster_home (shared with ``dagster dev``) unless DAGSTER_HOME is set."""
    if not os.environ.get("DAGSTER_HOME"):
        home = PROJECT_ROOT / ".dagster_home"
        home.mkdir(exist_ok=True)
        os.environ["DAGSTER_HOME"] = str(home)


def suites_file() -> Path:
    """The suites file: $RAG_EVAL_SUITES, else data/suites.yaml."""
    return Path(os.environ.get("RAG_EVAL_SUITES") or PROJECT_ROOT / "data" / "suites.yaml")


def resolve_suite(suite_name: str | None, config: str | None):
    """The suite a command works on: ``--config FILE`` (its listed suite, or an ad-hoc suite named from the
    file), else ``--suite NAME``, else $RAG_EVAL_CONFIG as ad-hoc, else the sample. Raises UsageError."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.suites import ad_hoc_suite, load_suites

    if config and suite_name:
        raise UsageError("give --suite or --config, not both")
    try:
        listed = load_suites(suites_file())
    except ConfigError as exc:
        if not (config or os.environ.get("RAG_EVAL_CONFIG")):
            raise UsageError(str(exc)) from None
        listed = []
    config = config or (None if suite_name else os.environ.get("RAG_EVAL_CONFIG"))
    if config:
        return ad_hoc_suite(config, listed)
    name = suite_name or DEFAULT_SUITE
    for suite in listed:
        if suite.name == name:
            return suite
    raise UsageError(f"unknown suite {name!r}: {suites_file()} lists {', '.join(s.name for s in listed)}"
                     " (or give --config FILE)")


def suite_folder(suite, output: str | None) -> Path:
    """The output folder of ``suite`` (absolute): ``--output`` (the suite's own folder) when given, else
    ``$RAG_EVAL_OUTPUT_DIR/<suite>``, else ``outputs/<suite>`` in the project."""
    if output:
        return Path(output).resolve()
    return Path(output_root(), suite.name).resolve()


def output_root() -> Path:
    """The folder holding every suite's output folder: $RAG_EVAL_OUTPUT_DIR, else ``outputs/`` in the project."""
    return Path(os.environ.get("RAG_EVAL_OUTPUT_DIR") or PROJECT_ROOT / "outputs")


def judge_resource(config_path=None):
    """The judge resource for a suite's configuration (``judge:`` there; RAG_EVAL_JUDGE ... override it).

    Raises UsageError when it is misconfigured."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.defs.judging import select_judge_resource

    try:
        return select_judge_resource(config_path=str(config_path) if config_path else None)
    except (ConfigError, ValueError) as exc:
        raise UsageError(f"judge: {exc}") from None


def metric_label(metric: str, k: int | None) -> str:
    """The trec_eval-style name of a (metric, k) row: ("recall", 5) -> "recall_5"; ("map", None) -> "map"."""
    return metric if k is None else f"{metric}_{k}"


def is_judge_based(metric: str) -> bool:
    """Whether a metric's value comes from the judge (faithfulness*, answer/context relevance, correctness)."""
    from rag_eval_pipeline.core.metrics.calibration import judge_based_metrics

    return bool(judge_based_metrics([metric]))


def format_summary(summary, metrics=DEFAULT_METRICS) -> str:
    """Render the overall rows of a metric_summary table as aligned text, one line per system and metric.

    Judge-based values carry ``judge errors N``: answers the judge could not label, left out of n."""
    import polars as pl

    rows = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
    order = {metric_label(m, k): i for i, (m, k) in enumerate(metrics)}
    rows = rows.with_columns(
        pl.struct("metric", "k")
        .map_elements(lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8)
        .alias("label")
    ).filter(pl.col("label").is_in(list(order)))
    rows = rows.with_columns(pl.col("label").replace_strict(order, default=99).alias("_o")).sort("system", "_o")
    has_errors = "judge_errors" in rows.columns
    out = [f"{'system':<22} {'metric':<30} {'value':>8} {'num/den':>13} {'n':>5}  {'judge errors':>12}  95% CI"]
    for r in rows.iter_rows(named=True):
        value = "null" if r["value"] is None else f"{r['value']:.4f}"
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['ci_method']}"
        nd = f"{r['numerator']:g}/{r['denominator']:g}"
        errors = ""
        if is_judge_based(r["metric"]):
            errors = str(r["judge_errors"]) if has_errors and r["judge_errors"] is not None else "unknown"
        out.append(f"{r['system']:<22} {r['label']:<30} {value:>8} {nd:>13} {r['n']:>5}  {errors:>12}  {ci}")
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


# --- rag-eval run -----------------------------------------------------------------------------------

def check_lines(result, job) -> list[str]:
    """One line per check of the job: passed / warned / FAILED (blocking or not) / not run; then, for each
    check that did not pass, its metadata in full (never cut)."""
    import dagster as dg

    graph = job.asset_layer.asset_graph
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    lines, details = [], []
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.path, k.name)):
        spec = graph.get_check_spec(key)
        name = f"{key.asset_key.to_user_string()}:{key.name}"
        e = evaluations.get((key.asset_key, key.name))
        if e is None:
            word, note = "not run", "an upstream step failed"
        elif e.passed:
            word, note = "passed", ""
        elif e.severity == dg.AssetCheckSeverity.WARN:
            word, note = "warned", "a warning: cannot block"
        else:
            word, note = "FAILED", "blocking: stops promotion" if spec.blocking else "not blocking"
        lines.append(f"  {word:<8} {name}" + (f"  ({note})" if note else ""))
        if e is not None and not e.passed:
            details.append(f"\n{'WARNING' if e.severity == dg.AssetCheckSeverity.WARN else 'FAILED'} check {name}")
            for k, v in e.metadata.items():
                text = str(getattr(v, "value", v))
                if "\n" in text.strip():  # a Markdown table: from its own line
                    details.append(f"  {k}:\n" + "\n".join("    " + line for line in text.strip().splitlines()))
                elif text not in ("[]", "{}", ""):
                    details.append(f"  {k}: {text}")
    return lines + details


def gate_lines(out: Path, rewritten: bool) -> list[str]:
    """The gate verdict from this run's gate_results table, with every failing gate's reason in full."""
    import polars as pl

    path = out / "gate_results.parquet"
    if not rewritten:
        return ["gate verdict: not evaluated (gate_results was not written by this run)"]
    gates = pl.read_parquet(path)
    failed = gates.filter(pl.col("blocking") & ~pl.col("passed"))
    if gates.height == 0:
        return ["gate verdict: no gate configured"]
    head = (f"gate verdict: {'FAIL' if failed.height else 'pass'} ({gates.height} gate(s), {failed.height} blocking "
            f"failure(s); every gate in {path} and in the report)")
    return [head] + [f"  {r['system']}/{metric_label(r['metric'], r['k'])}: {r['status']}: {r['reason']}"
                     for r in failed.iter_rows(named=True)]


def promotion_line(result, suite: str, quick: bool) -> str:
    """Whether this run promoted a baseline, read from the ``<suite>/promotion`` materialisation's metadata:
    promoted, kept (the candidate is already the promoted baseline: nothing written), no candidate
    configured, or not promoted (the asset did not run)."""
    if quick:
        return "promotion: none (the quick evaluation never promotes)"
    for event in result.get_asset_materialization_events():
        if event.asset_key is not None and event.asset_key.path == [suite, "promotion"]:
            md = {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}
            system = md.get("promoted_system")
            if md.get("unchanged_since_promotion") is True:
                return (f"promotion: kept: {system} is already the promoted baseline (unchanged since promotion at "
                        f"{md.get('promoted_at')}; nothing written)")
            if "unchanged_since_promotion" not in md:  # promotion writes it whenever a candidate is configured
                return "promotion: none (no candidate configured: gates.promote is not set)"
            return f"promotion: promoted {system} as the baseline"
    return "promotion: not promoted (a blocking check failed or a step failed)"


def interrupted(error) -> bool:
    """Whether a step's ``SerializableErrorInfo`` chain is Dagster's interrupt (SIGTERM or SIGINT during the step)."""
    while error is not None:
        if error.cls_name == "DagsterExecutionInterruptedError":
            return True
        error = error.cause or error.context
    return False


def run(args: argparse.Namespace) -> int:
    """``rag-eval run``: one suite's job in process, then the summary. Exit codes: see EXIT_CODES."""
    _dagster_home()
    import dagster as dg
    import polars as pl

    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.locking import OutputLock, OutputLocked, end_on_signal
    from rag_eval_pipeline.defs.location import build_definitions, check_suite
    from rag_eval_pipeline.defs.schedules import CLI_LOGGER_DEFS, QUICK_JOB, job_name

    suite = resolve_suite(args.suite, args.config)
    try:  # a bad configuration is one line here, not a failed run with a stack trace in its log
        loaded = check_suite(suite)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    judge = judge_resource(suite.config_path)
    suite_dir = suite_folder(suite, args.output)
    defs = build_definitions([loaded], output_dir=str(output_root().resolve()),
                             suite_dirs={suite.name: str(suite_dir)}, judge=judge)
    quick = args.job == QUICK_JOB
    # the CLI's console logger: no stack trace on stderr for a user's input mistake (the UI keeps its event log)
    job = defs.resolve_job_def(job_name(suite.name, args.job)).with_logger_defs(CLI_LOGGER_DEFS)
    out = suite_dir / "quick" if quick else suite_dir
    tags = {**defs.resources["settings"].run_tags([suite.name]), "rag_eval/trigger": "rag-eval run"}
    run_id = str(uuid.uuid4())
    # One writer per output folder: execute_in_process bypasses Dagster's run queue, so the CLI holds the
    # folder lock for the whole run (the IO manager and table store re-enter it in this process).
    try:
        lock = OutputLock(suite_dir, run_id=run_id, wait_s=args.wait_s).acquire()
    except OutputLocked as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return EXIT_LOCKED
    end_on_signal()  # SIGTERM / SIGINT end the run, and free the folder, within seconds whatever step it is in

    def identity(p: Path) -> tuple[int, int]:
        st = p.stat()
        return st.st_ino, st.st_mtime_ns
    before = {p.name: identity(p) for p in out.glob("*") if p.is_file()}  # to tell this run's files from older ones
    try:
        with dg.DagsterInstance.get() as instance:
            result = job.execute_in_process(instance=instance, raise_on_error=False, run_id=run_id, tags=tags,
                                            run_config={"loggers": {"console": {"config": {"log_level": "DEBUG"}}}})
    finally:
        lock.release()
    failed_checks = [e for e in result.get_asset_check_evaluations()
                     if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]

    def stale(p: Path) -> bool:  # left by an earlier run: this one failed before rewriting it (or never writes it)
        return before.get(p.name) == identity(p)
    print(f"\nrun {result.run_id} ({args.job}): {'succeeded' if result.success else 'FAILED'}")
    print(f"suite {suite.name} (job {job.name}): configuration {suite.config_path} "
          f"(sha256 {tags['rag_eval/config_sha256'][:12]})")
    print(f"tables: {out}")
    for p in sorted(out.glob("*.parquet")):
        print(f"  {p.name}" + ("  (from an earlier run, not rewritten by this one)" if stale(p) else ""))
    summary_path = out / "metric_summary.parquet"
    if summary_path.exists() and not stale(summary_path):
        print("\n" + format_summary(pl.read_parquet(summary_path)))
    elif summary_path.exists():
        print("\nno summary: this run did not rewrite metric_summary.parquet (the file there is from an earlier run)")
    print("\nchecks:")
    print("\n".join(check_lines(result, job)))
    gates_path = out / "gate_results.parquet"
    print("\n" + "\n".join(gate_lines(out, gates_path.exists() and not stale(gates_path))))
    print(promotion_line(result, suite.name, quick))
    report = out / "report.html"
    if report.exists() and not stale(report):
        url = os.environ.get("RAG_EVAL_REPORT_URL")
        print(f"report: {report}" + (f"  (served at {url.rstrip('/')}/ by rag-eval serve)" if url else
                                     "  (rag-eval serve shows it in a browser)"))
    else:
        earlier = f" (the one at {report} is from an earlier run)" if report.exists() else ""
        print(f"report: not written by this run{earlier}")
    if not result.success:
        for ev in result.all_events:
            if ev.is_step_failure and interrupted(ev.event_specific_data.error):
                print(f"\ninterrupted (SIGTERM or Ctrl-C): the run stopped before step {ev.step_key} finished")
            elif ev.is_step_failure:
                print(f"\nstep {ev.step_key} failed: {step_error_text(ev.event_specific_data.error)[:2000]}")
    return EXIT_OK if result.success and not failed_checks else EXIT_FAILED


def add_run(sub) -> None:
    """Register ``rag-eval run`` and its options on the subparsers ``sub``."""
    from rag_eval_pipeline.defs.schedules import FULL, QUICK_JOB

    p = sub.add_parser("run", help="materialise one suite's job and print the summary, checks, gates, promotion",
                       description="Materialise one suite's job in process and print the summary, one line per check, "
                                   "the gate verdict, whether promotion happened and where report.html is.",
                       epilog=EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", help=f"a suite listed in data/suites.yaml or $RAG_EVAL_SUITES (default: {DEFAULT_SUITE})")
    p.add_argument("--config", help="an evaluation YAML instead of a listed suite (default: $RAG_EVAL_CONFIG); "
                                    "unless listed, it is its own suite (adhoc_<name>_<hash>) with its own assets, "
                                    "history and baseline")
    p.add_argument("--job", default=FULL, choices=[FULL, QUICK_JOB],
                   help="full_evaluation (default) or quick_evaluation (a fixed subset, its own assets, "
                        "never promotes)")
    p.add_argument("--output", help="the suite's output folder (default: outputs/<suite>/, or "
                                    "$RAG_EVAL_OUTPUT_DIR/<suite>/)")
    p.add_argument("--wait-s", type=float, default=0.0,
                   help="when another run is writing the output folder, wait up to this many seconds for it "
                        "(default 0: exit 3 at once)")
    p.set_defaults(func=run)


# --- rag-eval estimate ------------------------------------------------------------------------------

def estimate(args: argparse.Namespace) -> int:
    """Dry run of the judge: how many calls and prompt tokens judging this configuration would cost.

    Builds the snapshot, golden set and runs (no Dagster run, nothing written) and asks the configured
    judge (``RAG_EVAL_JUDGE``) for its estimate; makes no judge call.
    """
    _dagster_home()
    from rag_eval_pipeline.core.errors import ConfigError, EvalError
    from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
    from rag_eval_pipeline.core.judges.base import EstimatesCost
    from rag_eval_pipeline.core.pipeline import build_golden, build_runs, build_snapshot
    from rag_eval_pipeline.core.systems.estimate import offline_systems, system_call_lines
    from rag_eval_pipeline.defs.location import check_suite

    suite = resolve_suite(args.suite, args.config)
    try:  # as `run` checks it: the same one line for a suite whose data is absent
        cfg = check_suite(suite).config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    judge = judge_resource(suite.config_path).get_judge()
    try:
        snapshot, version = build_snapshot(cfg)
        golden = build_golden(cfg, snapshot)
        offline = offline_systems(cfg)  # live systems are not called by a dry run
        runs = build_runs(cfg, snapshot, golden, version, offline) if offline else None
    except EvalError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return EXIT_FAILED
    for line in system_call_lines(cfg, golden):
        print(line)
    if runs is None:
        print("judge: no offline system to estimate from (live systems' answers exist only after a run)")
        return EXIT_OK
    texts = dict(zip(snapshot["chunk_id"], snapshot["text"]))
    questions = dict(zip(golden["question_id"], golden["question"]))
    phrases = phrases_from_config(cfg.judge.abstention_phrases)
    # what judging calls the judge for: answers with a retrieval whose text does not abstain
    items = [(questions.get(r["question_id"], ""), r["answer"],
              [texts[h["chunk_id"]] for h in r["retrieved"] if h["chunk_id"] in texts])
             for r in runs.iter_rows(named=True)
             if r["decision"] == "answer" and r["retrieved"] and not abstention_phrase(r["answer"], phrases)]
    if not isinstance(judge, EstimatesCost):
        print(f"judge {judge.name}: {len(items)} answers to judge; it makes no model calls (cost 0)")
        return EXIT_OK
    est = judge.dry_run_estimate(items)
    repeats = cfg.judge.repeats
    print(f"judge {judge.name} ({judge.model}): {est['items']} answers, about {est['calls'] * repeats} calls and "
          f"{est['prompt_tokens_est'] * repeats:,} prompt tokens (characters / 4) for {repeats} repeat(s); "
          f"{est['cached_calls']} decomposition calls already cached. Faithfulness only: answer_quality adds "
          "about 4 calls per answer.")
    return EXIT_OK


def add_estimate(sub) -> None:
    """Register ``rag-eval estimate`` and its options on the subparsers ``sub``."""
    p = sub.add_parser("estimate", help="dry run: judge calls and prompt tokens a suite would cost",
                       description="Count the judge calls and prompt tokens judging a suite would cost; makes no call.",
                       epilog=ESTIMATE_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--suite", help=f"a suite listed in data/suites.yaml (default: {DEFAULT_SUITE})")
    p.add_argument("--config", help="an evaluation YAML instead of a listed suite (default: $RAG_EVAL_CONFIG)")
    p.add_argument("--output", help=argparse.SUPPRESS)
    p.set_defaults(func=estimate)


# --- rag-eval serve ---------------------------------------------------------------------------------

def serve(args: argparse.Namespace) -> int:
    """``rag-eval serve``: the report pages of the output folder on 127.0.0.1, read-only, until stopped."""
    from rag_eval_pipeline import serve as server

    if args.dir and args.suite:
        raise UsageError("give --suite or --dir, not both")
    root = output_root()
    folder = Path(args.dir) if args.dir else (root / resolve_suite(args.suite, None).name if args.suite else root)
    if not folder.is_dir():
        raise UsageError(f"folder {folder.resolve()} not found (run rag-eval run first, or give --dir)")
    if not server.port_free(args.port):
        raise UsageError(server.port_in_use_message(args.port))
    server.serve(folder, port=args.port)
    return EXIT_OK


def add_serve(sub) -> None:
    """Register ``rag-eval serve`` and its options on the subparsers ``sub``."""
    from rag_eval_pipeline.serve import DEFAULT_PORT, port_number

    p = sub.add_parser("serve", help="serve the report pages on http://127.0.0.1 (read-only) for the UI's links",
                       description="Serve report.html, report.md and trend.html of the output folder (every suite, or "
                                   "one) on 127.0.0.1, read-only; never the tables. Set RAG_EVAL_REPORT_URL to its "
                                   "address where the code location runs, and the report asset links to it.",
                       epilog=SERVE_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT})")
    p.add_argument("--suite", help="serve only this suite's folder (default: every suite, outputs/ or "
                                   "$RAG_EVAL_OUTPUT_DIR)")
    p.add_argument("--dir", help="serve this folder instead")
    p.set_defaults(func=serve)


# --- rag-eval label, rag-eval serve-reference (their own modules) -----------------------------------

def add_label(sub) -> None:
    """Register ``rag-eval label`` (the labelling page) on the subparsers ``sub``."""
    from rag_eval_pipeline.labelling import cli as label_cli

    p = sub.add_parser("label", help="a local page for the hand labels judge calibration needs",
                       description="Serve a local page (127.0.0.1) for hand-labelling a sample of the judge's labels "
                                   "of one suite; the labels go to its calibration.human_labels file.",
                       epilog=LABEL_EXIT_CODES, formatter_class=argparse.RawDescriptionHelpFormatter)
    label_cli.add_arguments(p)
    p.set_defaults(func=label_cli.main)


def add_serve_reference(sub) -> None:
    """Register ``rag-eval serve-reference`` (the reference system over HTTP) on the subparsers ``sub``."""
    from rag_eval_pipeline import serve_reference

    serve_reference.add_parser(sub, epilog=SERVE_REFERENCE_EXIT_CODES)
    sub.choices["serve-reference"].set_defaults(func=serve_reference.serve_reference)


# --- entry point ------------------------------------------------------------------------------------

# One function per subcommand: add yours here.
SUBCOMMANDS = [add_run, add_estimate, add_serve, add_label, add_serve_reference]


def build_parser() -> argparse.ArgumentParser:
    """The ``rag-eval`` parser: one subparser per entry of SUBCOMMANDS; its epilog lists every usage and exit code."""
    parser = argparse.ArgumentParser(prog="rag-eval", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(sub)
    usage = "\n".join("  " + " ".join(p.format_usage().split()[1:]) for p in sub.choices.values())
    parser.epilog = f"commands and their options (rag-eval COMMAND --help for each):\n{usage}\n\n{ALL_EXIT_CODES}"
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rag-eval``. Returns the process exit status (see EXIT_CODES)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the subcommand's usage, not the top level's: the option was given to it
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
