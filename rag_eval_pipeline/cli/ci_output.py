"""``rag-eval run --junit-xml FILE --summary-md FILE``: the run for a CI system (rendering in
``core.report.ci``; this module reads the Dagster result and the files the run wrote)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rag_eval_pipeline.cli.common import output_root

# GATE_CHECK: the blocking check on the gate table (its outcome is the gate cases' outcome); DECIDED_CHECKS: the
# checks whose outcome the decision (decision.json) states, each failing one among its blocking failures
from rag_eval_pipeline.core.report.decision import DECIDED_CHECKS, GATE_CHECK


def check_step_keys(job) -> dict[str, object]:
    """``{step key: AssetCheckKey}`` of every check of ``job``: the step that runs the check (a check's own
    step, told apart from the assets' steps by its key, never by the wording of its error)."""
    layer = job.asset_layer
    return {str(layer.get_op_output_handle(key).node_handle): key for key in layer.asset_graph.asset_check_keys}


def step_failures(result, job, suite: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The failed steps of a run: (one line per failed step that is not a check's own step, ``{check step key:
    error text}``). A check's step fails when the check raised or when a blocking check failed (Dagster then
    fails it); the check's JUnit case says so, so it is not a second failure. An interrupted step reads
    "interrupted (SIGTERM or Ctrl-C) ...". ``suite``: name the steps as the user knows them (``golden_set``,
    not ``sample__golden_set``: :func:`~rag_eval_pipeline.cli.run_output.step_name`); None keeps the step keys."""
    from rag_eval_pipeline.cli.run_output import interrupted, step_error_text, step_name

    def name(step_key: str) -> str:
        return step_name(step_key, suite) if suite else step_key

    checks = check_step_keys(job)
    lines: list[str] = []
    by_check: dict[str, str] = {}
    for ev in result.all_events:
        if not ev.is_step_failure:
            continue
        error = ev.event_specific_data.error
        if interrupted(error):
            lines.append(f"interrupted (SIGTERM or Ctrl-C): the run stopped before step {name(ev.step_key)} finished")
        elif ev.step_key in checks:
            by_check[ev.step_key] = step_error_text(error)[:2000]
        else:
            lines.append(f"step {name(ev.step_key)} failed: {step_error_text(error)[:2000]}")
    return lines, by_check


def check_cases(result, job, raised: dict[str, str] | None = None) -> list:
    """One JUnit case per blocking check of ``job``: failed (ERROR severity), warning (WARN severity: cannot
    block), error (the check raised: ``raised`` maps its step key to the error, from :func:`step_failures`),
    skipped (not run: an upstream step failed; not a failure), or passed; the check's metadata ``summary`` /
    ``reason`` is the message."""
    import dagster as dg

    from rag_eval_pipeline.core.report.ci import JUnitCase

    graph = job.asset_layer.asset_graph
    steps = {key: step for step, key in check_step_keys(job).items()}
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    cases = []
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.path, k.name)):
        if not graph.get_check_spec(key).blocking:
            continue
        e = evaluations.get((key.asset_key, key.name))
        classname = f"checks.{key.asset_key.to_user_string()}"
        if e is None:
            error = (raised or {}).get(steps.get(key, ""))
            cases.append(JUnitCase(classname, key.name, "error", f"the check raised: {error}", error) if error
                         else JUnitCase(classname, key.name, "skipped", "not run: an upstream step failed"))
            continue
        md = {k: str(getattr(v, "value", v)) for k, v in e.metadata.items()}
        message = md.get("reason") or md.get("summary") or (e.description or "")
        details = "\n".join(f"{k}: {v}" for k, v in md.items())
        if e.passed:
            cases.append(JUnitCase(classname, key.name, "passed", md.get("summary", ""), details))
        elif e.severity == dg.AssetCheckSeverity.WARN:
            cases.append(JUnitCase(classname, key.name, "warning", message or "warning", details))
        else:
            cases.append(JUnitCase(classname, key.name, "failed", message or "failed", details))
    return cases


def read_decision(out: Path, rewritten: bool) -> dict:
    """decision.json of this run, or a "fail" decision saying the report was not written by it."""
    path = out / "decision.json"
    if rewritten and path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    return {"verdict": "fail", "why": "the run stopped before its report and decision were written",
            "blocking_failures": [], "warnings": [], "calibration": {"line": "unknown (not computed by this run)"},
            "judge_errors_line": "unknown", "split": None, "split_questions": None, "baseline": "unknown"}


def extra_failures(checks: list, failed_steps: list[str], decided: bool = True) -> list[str]:
    """The blocking failures the decision did not see: every failed or errored check case it does not decide
    (:data:`DECIDED_CHECKS`; every one when this run did not write its decision: ``decided`` false), then every
    failed step (:func:`step_failures`). A check that did not run (``skipped``: a step upstream of it failed) is
    not a failure: :func:`not_run_checks` lists them.
    They make the verdict FAIL in the CLI line, the JUnit file and the summary alike
    (``core.report.ci.final_verdict``)."""
    return [f"check {c.classname[len('checks.'):]}:{c.name}: {c.message}" for c in checks
            if c.outcome in ("failed", "error") and not (decided and c.name in DECIDED_CHECKS)] + list(failed_steps)


def not_run_checks(checks: list) -> list[str]:
    """The blocking checks that did not run because a step upstream of them failed (``skipped`` cases of
    :func:`check_cases`), as ``<asset>:<check>``: the summary lists them as "not run", never as failures."""
    return [f"{c.classname[len('checks.'):]}:{c.name}" for c in checks if c.outcome == "skipped"]


def write_ci_outputs(args, result, job, out: Path, suite: str, promotion: str, decision_rewritten: bool,
                     gates_rewritten: bool, checks: list, failed_steps: list[str]) -> list[str]:
    """Write ``--junit-xml`` and ``--summary-md`` (when given) atomically; return the lines to print.

    ``checks``: :func:`check_cases` of the run; ``failed_steps``: the steps that failed outside any check.
    In the JUnit file each blocking gate that failed is one failure: the gate check
    (``no_regression_against_baseline``), whose outcome is the gate cases', is left out whenever the gate
    cases are there."""
    from rag_eval_pipeline.core.report.ci import JUnitCase, final_verdict, gate_cases, junit_xml, summary_markdown
    from rag_eval_pipeline.core.storage import read_table, write_text_atomic
    from rag_eval_pipeline.defs.report import report_url
    from rag_eval_pipeline.defs.resources import REPORT_URL_ENV

    promotion = promotion.removeprefix("promotion: ")
    decision = read_decision(out, decision_rewritten)
    gates = read_table(out / "gate_results.parquet", "gate_results") if gates_rewritten else None
    extra = extra_failures(checks, failed_steps, decision_rewritten)
    verdict, _why = final_verdict(decision, extra)
    split = decision.get("split") or "test"
    html = out / "report.html"
    link = (args.report_url or report_url(os.environ.get(REPORT_URL_ENV), output_root(), html)
            or (str(html) if decision_rewritten and html.exists() else None))
    written = []
    if args.junit_xml:
        gated = gate_cases(gates, split) if gates is not None else []
        # the gate check's failure is the failed gate cases' (counted once); without them it stays
        cases = gated + [c for c in checks if not (gated and c.name == GATE_CHECK)]
        cases += [JUnitCase("rag-eval", "run", "error", f) for f in failed_steps]
        xml = junit_xml(f"rag-eval {suite} ({job.name})", cases, {
            "verdict": verdict, "suite": suite, "job": job.name, "run_id": result.run_id, "promotion": promotion,
            "split": split})
        path = Path(args.junit_xml).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(xml, path)
        written.append(f"junit xml: {path} ({len(cases)} test cases)")
    if args.summary_md:
        text = summary_markdown(decision, gates, title=f"rag-eval {suite} ({job.name})", promotion=promotion,
                                report_link=link, extra_failures=extra, not_run=not_run_checks(checks))
        path = Path(args.summary_md).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(text, path)
        written.append(f"summary markdown: {path}")
    return written
