"""``rag-eval run``: materialise one suite's job in process and print what it found."""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from rag_eval_pipeline.cli.check import preflight
from rag_eval_pipeline.cli.common import (
    UsageError,
    add_suite_options,
    dagster_home,
    judge_resource,
    output_root,
    resolve_suite,
    seconds,
    suite_folder,
    usable_output_folder,
)
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED, EXIT_LOCKED, EXIT_OK, epilog
from rag_eval_pipeline.cli.run_output import (
    blocking_names,
    check_lines,
    format_summary,
    gate_lines,
    id_mapping_lines,
    promotion_line,
    run_error_lines,
    stopped_by,
    verdict_line,
)

NAME = "run"
#: ``--log-level``: the console logger's level (Dagster's engine events are DEBUG: quiet by default).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


def run(args: argparse.Namespace) -> int:
    """``rag-eval run``: one suite's job in process, then the summary. Exit codes: see ``cli/exit_codes.py``.

    A listed suite's run is recorded in the Dagster instance the UI reads; an ad-hoc configuration's in its own
    (see :func:`~rag_eval_pipeline.cli.common.dagster_home`)."""
    suite = resolve_suite(args.suite, args.config)
    dagster_home(ad_hoc=suite.ad_hoc)
    import dagster as dg

    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.locking import OutputLock, OutputLocked, end_on_signal
    from rag_eval_pipeline.core.storage import read_table
    from rag_eval_pipeline.defs.location import build_definitions, check_suite
    from rag_eval_pipeline.defs.schedules import CLI_LOGGER_DEFS, QUICK_JOB, job_name

    try:  # a bad configuration is one line here, not a failed run with a stack trace in its log
        loaded = check_suite(suite)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    judge = judge_resource(suite.config_path)
    suite_dir = suite_folder(suite, args.output)
    # what rag-eval check finds (bad data, an unimportable callable, a damaged baseline) stops here: one line
    # each, no Dagster run
    status = preflight(loaded.config, quick=args.job == QUICK_JOB, output=suite_dir)
    if status != EXIT_OK:
        return status
    usable_output_folder(suite_dir, suite)  # a file, a read-only folder or another suite's folder: exit 2 here
    defs = build_definitions([loaded], output_dir=str(output_root().resolve()),
                             suite_dirs={suite.name: str(suite_dir)}, judge=judge, executor="in_process")
    quick = args.job == QUICK_JOB
    # the CLI's console logger: no stack trace on stderr for a user's input mistake (the UI keeps its event log)
    job = defs.resolve_job_def(job_name(suite.name, args.job)).with_logger_defs(CLI_LOGGER_DEFS)
    out = suite_dir / "quick" if quick else suite_dir
    resources = defs.resources or {}  # build_definitions always binds the suite's settings resource
    tags = {**resources[f"{suite.name}__settings"].run_tags(), "rag_eval/trigger": "rag-eval run"}
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
        console = {"config": {"log_level": args.log_level}}  # INFO: no engine events (they are DEBUG)
        run_config = {"loggers": {"console": console}}
        result: Any
        with dg.DagsterInstance.get() as instance:
            if loaded.config.shards > 1 and not quick:  # every question shard, then the rest (cli/run_shards.py)
                from rag_eval_pipeline.cli.run_shards import execute_sharded

                result = execute_sharded(defs, suite.name, job, instance=instance, run_id=run_id, tags=tags,
                                         run_config=run_config)
            else:
                result = job.execute_in_process(instance=instance, raise_on_error=False, run_id=run_id, tags=tags,
                                                run_config=run_config)
    finally:
        lock.release()
    failed_checks = [e for e in result.get_asset_check_evaluations()
                     if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]

    def stale(p: Path) -> bool:  # left by an earlier run: this one failed before rewriting it (or never writes it)
        return before.get(p.name) == identity(p)
    from rag_eval_pipeline.cli.ci_output import check_cases, extra_failures, step_failures

    failed_steps, raised_checks = step_failures(result, job, suite.name)  # steps named as the user knows them
    checks = check_cases(result, job, raised_checks)
    print(f"\nrun {result.run_id} ({args.job}): {'succeeded' if result.success else 'FAILED'}")
    for line in failed_steps:  # the reason first: the check list below only says what did not run
        print(line)
    print(f"suite {suite.name} (job {job.name}): configuration {suite.config_path} "
          f"(sha256 {tags['rag_eval/config_sha256'][:12]})")
    print(f"tables: {out}")
    for p in sorted(out.glob("*.parquet")):
        print(f"  {p.name}" + ("  (from an earlier run, not rewritten by this one)" if stale(p) else ""))
    summary_path = out / "metric_summary.parquet"
    if summary_path.exists() and not stale(summary_path):
        print("\n" + format_summary(read_table(summary_path, "metric_summary")))
    elif summary_path.exists():
        print("\nno summary: this run did not rewrite metric_summary.parquet (the file there is from an earlier run)")
    runs_path = out / "rag_runs.parquet"
    if runs_path.exists() and not stale(runs_path):
        for block in (run_error_lines(runs_path), id_mapping_lines(result, suite.name)):
            if block:
                print("\n" + "\n".join(block))
    print("\nchecks:")
    print("\n".join(check_lines(result, job)))
    gates_path = out / "gate_results.parquet"
    decision_path = out / "decision.json"
    decision_rewritten = decision_path.exists() and not stale(decision_path)
    # a stopped decision (defs/stopped.py: the run stopped before its report) is not the report's: "not decided"
    stopped_decision = decision_rewritten and stopped_before_report(decision_path)
    decision_rewritten = decision_rewritten and not stopped_decision
    extra = extra_failures(checks, failed_steps, decision_rewritten)
    print("\n" + verdict_line(decision_path if decision_rewritten else None, extra, stopped_by(failed_steps, checks)))
    # the gate counts (not a second verdict); failing gates are listed under the verdict when it was decided
    print("\n".join(gate_lines(out, gates_path.exists() and not stale(gates_path), len(loaded.config.thresholds),
                               listed=decision_rewritten)))
    gates_rewritten = gates_path.exists() and not stale(gates_path)
    promotion = promotion_line(result, suite.name, quick, decision_path if decision_rewritten else None,
                               blocking_names(out, gates_rewritten, checks, failed_steps))
    print(promotion)
    report = out / "report.html"
    if report.exists() and not stale(report):
        url = os.environ.get("RAG_EVAL_REPORT_URL")
        print(f"report: {report}" + (f"  (served at {url.rstrip('/')}/ by rag-eval serve)" if url else
                                     "  (rag-eval serve shows it in a browser)"))
    else:
        previous = out / "previous" / "report.html"
        earlier = (f" (the one at {report} is from an earlier run)" if report.exists() else
                   f" (the last one written is kept at {previous})" if previous.exists() else "")
        print(f"report: not written by this run{earlier}")
        if stopped_decision:
            print(f"decision: {decision_path} says this run (fail, not promoted) stopped before its report")
    # a check that raised is said once, with its error; a blocking check that failed is in the check lines above,
    # a failed step under the run line
    for line in [f"check {c.classname[len('checks.'):]}:{c.name}: {c.message}" for c in checks
                                if c.outcome == "error" and c.details]:
        print("\n" + line)
    if args.junit_xml or args.summary_md:
        from rag_eval_pipeline.cli.ci_output import write_ci_outputs

        # a check's own step is told apart by its step key: its case already says why it failed
        for line in write_ci_outputs(args, result, job, out, suite.name, promotion, decision_rewritten,
                                     gates_path.exists() and not stale(gates_path), checks, failed_steps):
            print(line)
    return EXIT_OK if result.success and not failed_checks else EXIT_FAILED


def stopped_before_report(path: Path) -> bool:
    """Whether ``decision.json`` at ``path`` is a stopped run's (``stopped_before_report``, written by the
    failure hook of ``defs/stopped.py``), not a report's. Raises nothing (an unreadable file: False)."""
    import json

    try:
        return bool(json.loads(path.read_text(encoding="utf-8")).get("stopped_before_report"))
    except (OSError, ValueError, AttributeError):
        return False


def add(sub) -> None:
    """Register ``rag-eval run`` and its options on the subparsers ``sub``."""
    from rag_eval_pipeline.core.plain_names import FULL, QUICK_JOB

    p = sub.add_parser(NAME, help="materialise one suite's job and print the summary, checks, gates, promotion",
                       description="Materialise one suite's job in process and print the summary, one line per check, "
                                   "the run's verdict, the gates, whether promotion happened and where report.html is.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_suite_options(p)
    p.add_argument("--job", default=FULL, choices=[FULL, QUICK_JOB],
                   help="full_evaluation (default) or quick_evaluation (a fixed subset, its own assets, "
                        "never promotes)")
    p.add_argument("--output", help="the suite's output folder (default: outputs/<suite>/, or "
                                    "$RAG_EVAL_OUTPUT_DIR/<suite>/)")
    p.add_argument("--wait-s", type=seconds, default=0.0,
                   help="when another run is writing the output folder, wait up to this many seconds for it "
                        "(default 0: exit 3 at once)")
    p.add_argument("--junit-xml", metavar="FILE",
                   help="also write a JUnit XML file for CI: one test case per gate and per blocking check")
    p.add_argument("--summary-md", metavar="FILE",
                   help="also write a compact Markdown summary for a pull-request comment: verdict, promotion, "
                        "changed metrics, top regressed questions with links to the report")
    p.add_argument("--report-url", metavar="URL",
                   help="where report.html of this run can be read, for the summary's links (default: "
                        "$RAG_EVAL_REPORT_URL/<folder>/report.html when set, else the file path)")
    p.add_argument("--log-level", default="INFO", choices=LOG_LEVELS,
                   help="what of Dagster's event log goes to stderr: INFO (default: the steps' own messages, "
                        "warnings and failures), DEBUG (also every step's start, inputs, outputs and "
                        "materialisation: some 300 lines on the sample), WARNING or ERROR")
    p.set_defaults(func=run)
