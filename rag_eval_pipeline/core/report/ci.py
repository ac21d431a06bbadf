"""What a CI system reads from a run: a JUnit XML file (one test case per gate and per blocking check) and a
compact Markdown summary fit for a pull-request comment.

JUnit XML: the de-facto schema CI systems read (GitHub, GitLab, Jenkins): ``<testsuites>`` / ``<testsuite>``
/ ``<testcase classname name>`` with ``<failure>`` (a blocking gate or check that failed), ``<error>`` (a
check that raised, a failed step), ``<skipped>`` (a check that did not run because a step upstream of it
failed: neither passed nor failed) and ``<system-out>`` (a warning: a non-blocking gate or a check with
WARN severity that did not pass; the case passes). Written with :mod:`xml.etree.ElementTree`, so every text
is escaped. Format reference: the Apache Ant JUnit report schema as documented by the JUnit 5 Console
Launcher / ``junit-platform-reporting`` (legacy XML format).

The Markdown summary: the verdict, the promotion outcome, each blocking failure, the judge's calibration,
the gated metrics that changed (candidate, baseline, difference, 95% interval, p, status: the gate table's
numbers as they are), and the questions that regressed most, each linked to its card in the report
(anchor :func:`core.report.questions.question_anchor`). Nothing here imports Dagster.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import polars as pl

from rag_eval_pipeline.core.gates import compared_words
from rag_eval_pipeline.core.metrics.names import trec_name
from rag_eval_pipeline.core.report.decision import verdict_word
from rag_eval_pipeline.core.report.markdown import markdown_table, md_text
from rag_eval_pipeline.core.report.questions import WORST_N, question_anchor, regressed_questions

#: JUnit outcomes of a case: passed, failed (<failure>), error (<error>), skipped (<skipped>: a check that did not
#: run because a step upstream of it failed; not a failure), warning (passed, with <system-out>).
OUTCOMES = ("passed", "failed", "error", "skipped", "warning")
#: ANSI escape sequences (colours, cursor moves: ECMA-48 CSI and two-character escapes), dropped from XML texts.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")
#: Characters outside XML 1.0's ``Char`` production (W3C XML 1.0, section 2.2), surrogates included.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: object) -> str:
    """``value`` as text an XML 1.0 document may hold: ANSI escape sequences dropped, every other character
    outside XML 1.0's ``Char`` (control characters but tab, newline and carriage return; lone surrogates;
    U+FFFE, U+FFFF) replaced by U+FFFD. Source: W3C XML 1.0 (Fifth Edition), section 2.2 Characters."""
    return _NOT_XML.sub("\ufffd", _ANSI.sub("", "" if value is None else str(value)))


@dataclass(frozen=True)
class JUnitCase:
    """One test case: ``classname`` (``gates.<system>`` or ``checks.<asset>``), ``name``, ``outcome``
    (:data:`OUTCOMES`), ``message`` (one line), ``details`` (the body text) and ``properties``."""

    classname: str
    name: str
    outcome: str
    message: str = ""
    details: str = ""
    properties: tuple[tuple[str, str], ...] = ()


def gate_cases(gates: pl.DataFrame, split: str) -> list[JUnitCase]:
    """One case per gate row: a blocking gate that did not pass fails; a non-blocking one that did not pass is a
    warning. Input: a ``gate_results`` table. Output: cases named ``<metric label> (split <split>)`` in class
    ``gates.<system>`` (a version mismatch: ``versions``), in the table's order; a second threshold on the same
    metric gets `` #2`` (names stay unique)."""
    cases = []
    seen: dict[tuple[str, str], int] = {}
    for r in gates.iter_rows(named=True):
        label = r["metric"] if r["metric"] == "versions" else trec_name(r["metric"], r["k"])
        seen[(r["system"], label)] = seen.get((r["system"], label), 0) + 1
        nth = seen[(r["system"], label)]
        name = f"{label} (split {split})" + (f" #{nth}" if nth > 1 else "")  # two thresholds on one metric
        fmt = lambda v: "null" if v is None else f"{v:.4f}"  # noqa: E731
        compared = compared_words(r.get("n"), r.get("n_baseline"), r.get("n_candidate_errors"))
        details = (f"over {compared or 'no compared question'}: candidate {fmt(r['candidate'])}, baseline "
                   f"{fmt(r['baseline'])}, difference {fmt(r['difference'])}, p {fmt(r['p_value'])}, W/T/L "
                   f"{r['wins']}/{r['ties']}/{r['losses']}; own means over all questions (not the gate's figures): "
                   f"candidate {fmt(r.get('candidate_all'))}, baseline {fmt(r.get('baseline_all'))}; {r['reason']}")
        outcome = "passed" if r["passed"] else ("failed" if r["blocking"] else "warning")
        props = (("status", str(r["status"])), ("blocking", str(bool(r["blocking"])).lower()))
        cases.append(JUnitCase(f"gates.{r['system']}", name, outcome,
                               f"{r['status']}: {r['reason']}", details, props))
    return cases


def junit_xml(suite: str, cases: Sequence[JUnitCase], properties: Mapping[str, Any] | None = None) -> str:
    """The JUnit XML document of ``cases`` as one ``<testsuite name=suite>`` inside ``<testsuites>``.

    Output: UTF-8 XML text with counts (tests, failures, errors, skipped) on both elements, the
    ``properties`` (e.g. verdict, run id) on the test suite, and per case a ``<failure>`` / ``<error>``
    (attribute ``message``, body ``details``), a ``<skipped message>`` for a case that did not run, or for a
    warning a ``<system-out>`` line. Every name and text goes through :func:`xml_text` first, so the file
    parses whatever the messages quote (ANSI colours, bytes of a bad input). Raises ValueError for an
    unknown outcome. Format: the legacy JUnit XML report
    (Ant / JUnit Platform Console Launcher).
    """
    bad = [c.outcome for c in cases if c.outcome not in OUTCOMES]
    if bad:
        raise ValueError(f"unknown JUnit outcome(s) {bad}; expected one of {OUTCOMES}")
    failures = sum(c.outcome == "failed" for c in cases)
    errors = sum(c.outcome == "error" for c in cases)
    skipped = sum(c.outcome == "skipped" for c in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors), "skipped": str(skipped)}
    t = xml_text
    root = ET.Element("testsuites", {"name": "rag-eval", **counts})
    ts = ET.SubElement(root, "testsuite", {"name": t(suite), **counts})
    if properties:
        props = ET.SubElement(ts, "properties")
        for k, v in properties.items():
            ET.SubElement(props, "property", {"name": t(k), "value": t(v)})
    for c in cases:
        tc = ET.SubElement(ts, "testcase", {"classname": t(c.classname), "name": t(c.name)})
        if c.properties:
            props = ET.SubElement(tc, "properties")
            for k, v in c.properties:
                ET.SubElement(props, "property", {"name": t(k), "value": t(v)})
        if c.outcome in ("failed", "error"):
            el = ET.SubElement(tc, "failure" if c.outcome == "failed" else "error",
                               {"message": t(c.message), "type": c.outcome})
            el.text = t(c.details or c.message)
        elif c.outcome == "skipped":
            ET.SubElement(tc, "skipped", {"message": t(c.message)})
        elif c.outcome == "warning":
            ET.SubElement(tc, "system-out").text = t(f"WARNING: {c.message}" + (f"\n{c.details}" if c.details else ""))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


_ICONS = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️"}


def final_verdict(decision: Mapping[str, Any], extra_failures: Sequence[str] = ()) -> tuple[str, str]:
    """The run's verdict and its one-line reason, as the CLI, the JUnit file and the summary all state it:
    ``("fail", "N blocking failure(s)")`` when there are ``extra_failures`` (blocking failures the decision
    did not see: a failed step, a failed check it does not decide; N counts them with the decision's own),
    else the decision's ``verdict`` and ``why``. Raises nothing."""
    if extra_failures:
        n = len(extra_failures) + len(decision.get("blocking_failures") or [])
        return "fail", f"{n} blocking failure(s)"
    return str(decision.get("verdict")), str(decision.get("why") or "")


def _num(v: float | None, sign: bool = False) -> str:
    if v is None:
        return "null"
    return f"{v:+.4f}" if sign else f"{v:.4f}"


def summary_markdown(decision: Mapping[str, Any], gates: pl.DataFrame | None, *, title: str, promotion: str,
                     report_link: str | None, extra_failures: Sequence[str] = (), top_questions: int = 10,
                     linked_per_system: int = WORST_N, not_run: Sequence[str] = ()) -> str:
    """A compact Markdown summary of a run for a pull-request comment.

    Inputs: ``decision`` (``decision.json``: verdict, blocking_failures, warnings, split_questions, split,
    baseline, calibration.line, judge_errors_line), ``gates`` (the run's ``gate_results`` table, or None),
    ``title`` (e.g. "rag-eval sample (quick_evaluation)"), ``promotion`` (what promotion did: the CLI's line),
    ``report_link`` (URL or path of report.html; question links append ``#<anchor>`` when it is a URL),
    ``extra_failures`` (blocking failures the decision did not see: a failed step or check; they make the
    verdict "fail": :func:`final_verdict`), ``top_questions`` (rows of the regressed-question list),
    ``linked_per_system`` (how many regressed questions per system the report has a card for: the report's ``worst_n``),
    ``not_run`` (the blocking checks that did not run because a step upstream of them failed, named
    ``<asset>:<check>``: listed under "Not run", never counted as failures).
    Output: Markdown text: a heading with the verdict, the promotion and calibration lines, the blocking
    failures, the checks not run, "Changed or failing gated metrics" (gate rows whose difference is not 0 or
    that did not pass: candidate, baseline, difference, n compared, 95% CI, p, status, as the gate table holds
    them, to 4 decimals; then how many passed rows are unchanged and how many were not compared) and "Top
    regressed questions" (:func:`core.report.questions.regressed_questions` order). Raises nothing for
    well-formed inputs.
    """
    verdict, why = final_verdict(decision, extra_failures)
    failures = list(extra_failures) + list(decision.get("blocking_failures") or [])
    lines = [f"### {_ICONS.get(verdict, '')} {md_text(title)}: {verdict_word(verdict)}".replace("###  ", "### "), ""]
    lines.append(f"**Verdict:** {verdict_word(verdict)} — " + md_text(why))
    lines.append("")
    lines.append(f"**Promotion:** {md_text(promotion)}")
    lines.append("")
    calibration = (decision.get("calibration") or {})
    lines.append(f"**Judge calibration:** {md_text(calibration.get('line') or 'unknown')} · **judge errors:** "
                 f"{md_text(decision.get('judge_errors_line') or 'unknown')}")
    lines.append("")
    split = decision.get("split") or "test"
    if decision.get("split") is None:  # the run stopped before its decision: nothing was compared
        lines.append("**Not compared:** the run stopped before its gates compared anything.")
    else:
        count = decision.get("split_questions")
        lines.append(f"**Compared on split {md_text(split)}**"
                     + (f" ({count} golden questions)" if count is not None else "")
                     + f" with {md_text(decision.get('baseline') or 'no baseline')}.")
    lines.append("")
    if failures:
        lines.append("**Blocking failures:**")
        lines.append("")
        lines += [f"- {md_text(f)}" for f in failures]
        lines.append("")
    if not_run:
        lines.append(f"**Not run** ({len(not_run)} blocking check(s): a step upstream of them failed; "
                     "not counted as failures):")
        lines.append("")
        lines += [f"- {md_text(c)}" for c in not_run]
        lines.append("")
    warnings = list(decision.get("warnings") or [])
    if warnings:
        lines.append("<details><summary>Warnings (" + str(len(warnings)) + ")</summary>")
        lines.append("")
        lines += [f"- {md_text(w)}" for w in warnings]
        lines += ["", "</details>", ""]
    if gates is not None and gates.height:
        moved = pl.col("difference").is_not_null() & (pl.col("difference").abs() > 1e-12)
        changed = gates.filter(moved | ~pl.col("passed"))  # a failed gate is listed even with difference 0
        same = gates.filter(~moved & pl.col("passed") & pl.col("difference").is_not_null()).height
        uncompared = gates.filter(~moved & pl.col("passed") & pl.col("difference").is_null()).height
        lines.append(f"#### Changed or failing gated metrics (split {md_text(split)})")
        lines.append("")
        if changed.height:
            lines.append(markdown_table(
                ["system", "metric", "baseline", "candidate", "difference", "n compared", "95% CI", "p", "status"],
                [[r["system"], trec_name(r["metric"], r["k"]), _num(r["baseline"]), _num(r["candidate"]),
                  _num(r["difference"], sign=True),
                  compared_words(r.get("n"), r.get("n_baseline"), r.get("n_candidate_errors")) or "—",
                  "" if r["ci_low"] is None else f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]", _num(r["p_value"]),
                  r["status"]] for r in changed.iter_rows(named=True)]))
            lines.append("")
            lines.append("baseline, candidate, difference, 95% CI and p are over the same questions: the n both "
                         "systems evaluated.")
        else:
            lines.append("No gated metric changed or failed.")
        lines.append("")
        lines.append(f"{same} passed gated metric(s) unchanged (difference 0); {uncompared} passed without a "
                     "comparison (a floor only, or no baseline).")
        lines.append("")
        regressed = regressed_questions(gates.to_dicts())
        if regressed:
            lines.append(f"#### Top regressed questions ({min(top_questions, len(regressed))} of {len(regressed)})")
            lines.append("")
            seen: dict[str, int] = {}
            rows = []
            for system, q, labels in regressed[:top_questions]:
                seen[system] = seen.get(system, 0) + 1
                anchor = question_anchor(system, q)
                link = (f"[{md_text(q)}]({report_link}#{anchor})"
                        if report_link and report_link.startswith(("http://", "https://"))
                        and seen[system] <= linked_per_system else md_text(q))
                rows.append([system, link, ", ".join(labels)])
            # links are built here (escaping them would break them); every other cell is escaped
            lines.append("| system | question | regressed on |")
            lines.append("|---|---|---|")
            lines += [f"| {md_text(s)} | {q} | {md_text(m)} |" for s, q, m in rows]
            lines.append("")
    if report_link:
        shown = f"[report.html]({report_link})" if report_link.startswith(("http://", "https://")) else (
            f"`{md_text(report_link)}`")
        lines.append(f"Report: {shown}")
    return "\n".join(lines).rstrip() + "\n"
