"""``rag-eval run --junit-xml FILE --summary-md FILE``: the run for a CI system (rendering in
``core.report.ci``; this module reads the Dagster result and the files the run wrote)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rag_eval_pipeline.cli.common import output_root

#: The checks whose outcome the decision (decision.json) already states.
DECIDED_CHECKS = ("no_regression_against_baseline", "judge_calibrated_above_floor")


def check_cases(result, job) -> list:
    """One JUnit case per blocking check of ``job``: failed (ERROR severity), warning (WARN severity: cannot
    block), error (not run: an upstream step failed), or passed; the check's metadata ``summary`` / ``reason``
    is the message."""
    import dagster as dg

    from rag_eval_pipeline.core.report.ci import JUnitCase

    graph = job.asset_layer.asset_graph
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    cases = []
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.path, k.name)):
        if not graph.get_check_spec(key).blocking:
            continue
        e = evaluations.get((key.asset_key, key.name))
        classname = f"checks.{key.asset_key.to_user_string()}"
        if e is None:
            cases.append(JUnitCase(classname, key.name, "error", "not run: an upstream step failed"))
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


def write_ci_outputs(args, result, job, out: Path, suite: str, promotion: str, decision_rewritten: bool,
                     gates_rewritten: bool, failed_steps: list[str]) -> list[str]:
    """Write ``--junit-xml`` and ``--summary-md`` (when given) atomically; return the lines to print."""

    from rag_eval_pipeline.core.report.ci import JUnitCase, gate_cases, junit_xml, summary_markdown
    from rag_eval_pipeline.core.storage import read_table, write_text_atomic
    from rag_eval_pipeline.defs.report import report_url
    from rag_eval_pipeline.defs.resources import REPORT_URL_ENV

    promotion = promotion.removeprefix("promotion: ")
    decision = read_decision(out, decision_rewritten)
    gates = read_table(out / "gate_results.parquet", "gate_results") if gates_rewritten else None
    checks = check_cases(result, job)
    extra = [f"check {c.classname[len('checks.'):]}:{c.name}: {c.message}" for c in checks
             if c.outcome in ("failed", "error") and c.name not in DECIDED_CHECKS]
    extra += failed_steps
    verdict = "fail" if extra else decision.get("verdict")
    split = decision.get("split") or "test"
    html = out / "report.html"
    link = (args.report_url or report_url(os.environ.get(REPORT_URL_ENV), output_root(), html)
            or (str(html) if decision_rewritten and html.exists() else None))
    written = []
    if args.junit_xml:
        cases = (gate_cases(gates, split) if gates is not None else []) + checks
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
                                report_link=link, extra_failures=extra)
        path = Path(args.summary_md).resolve()
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(text, path)
        written.append(f"summary markdown: {path}")
    return written
