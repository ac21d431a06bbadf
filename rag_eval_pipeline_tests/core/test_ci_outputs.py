"""JUnit XML and the pull-request summary on hand-made inputs (the CLI test reads them back from a real run)."""

import xml.etree.ElementTree as ET

import polars as pl
import pytest

from rag_eval_pipeline.core.report.ci import JUnitCase, gate_cases, junit_xml, summary_markdown
from rag_eval_pipeline.core.tables import SCHEMAS


def _gates(rows):
    return pl.DataFrame(rows, schema=SCHEMAS["gate_results"])


ROWS = [
    {"system": "cand", "metric": "recall", "k": 5, "candidate": 0.5, "baseline": 0.75, "difference": -0.25,
     "ci_low": -0.4, "ci_high": -0.1, "p_value": 0.01, "wins": 0, "ties": 3, "losses": 5, "status": "regression",
     "reason": "drop 0.2500 > allowed 0.05 <&> (p = 0.0100)", "blocking": True, "passed": False,
     "regressed_questions": ["q1", "q2"], "n": 8, "n_baseline": 9, "n_candidate_errors": 1,
     "candidate_all": 0.52, "baseline_all": 0.7},
    {"system": "cand", "metric": "map", "k": None, "candidate": 0.6, "baseline": 0.6, "difference": 0.0,
     "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0, "wins": 0, "ties": 8, "losses": 0, "status": "pass",
     "reason": "difference +0.0000 within thresholds", "blocking": True, "passed": True, "regressed_questions": []},
    {"system": "cand", "metric": "ndcg_cut", "k": 10, "candidate": 0.5, "baseline": 0.7, "difference": -0.2,
     "ci_low": None, "ci_high": None, "p_value": 0.02, "wins": 0, "ties": 6, "losses": 2, "status": "regression",
     "reason": "below", "blocking": False, "passed": False, "regressed_questions": ["q2"]},
    # a floor breach: nothing changed on the shared questions, yet it failed (listed, not counted as unchanged)
    {"system": "cand", "metric": "recall", "k": 10, "candidate": 0.4, "baseline": 0.4, "difference": 0.0,
     "ci_low": 0.0, "ci_high": 0.0, "p_value": 1.0, "wins": 0, "ties": 8, "losses": 0, "status": "below_floor",
     "reason": "0.4000 is below the floor 0.5", "blocking": True, "passed": False, "regressed_questions": [],
     "n": 8, "n_baseline": 8, "n_candidate_errors": 0},
]


def test_junit_cases_counts_and_escaping():
    cases = gate_cases(_gates(ROWS), "test") + [JUnitCase("checks.s/a", "c", "error", "the check raised: x"),
                                                JUnitCase("checks.s/a", "d", "skipped", "not run: upstream")]
    root = ET.fromstring(junit_xml("rag-eval s (job)", cases, {"verdict": "fail"}).split("\n", 1)[1])
    [suite] = root.findall("testsuite")
    # 4 gate cases + 2 check cases; 2 blocking gates failed (recall_5, recall_10), 1 check raised, 1 check did
    # not run (skipped)
    assert [suite.get(k) for k in ("tests", "failures", "errors", "skipped")] == ["6", "2", "1", "1"]
    floor = suite.find("testcase[@name='recall_10 (split test)']/failure")
    assert floor.get("message") == "below_floor: 0.4000 is below the floor 0.5"
    assert suite.find("testcase[@name='recall_10 (split test)']/properties/property[@name='status']") is not None
    assert suite.find("testcase[@name='d']/skipped").get("message") == "not run: upstream"
    assert suite.find("testcase[@name='d']/error") is None and suite.find("testcase[@name='d']/failure") is None
    failure = suite.find("testcase[@name='recall_5 (split test)']/failure")
    assert failure.get("message") == "regression: drop 0.2500 > allowed 0.05 <&> (p = 0.0100)"  # escaped, read back
    # the body says which questions the figures are over, and labels the own-question means apart
    assert failure.text.startswith("over n 8 of 9; 1 candidate error: candidate 0.5000, baseline 0.7500, "
                                   "difference -0.2500, p 0.0100, W/T/L 0/3/5; own means over all questions (not the "
                                   "gate's figures): candidate 0.5200, baseline 0.7000;")
    assert suite.find("testcase[@name='map (split test)']/failure") is None
    warn = suite.find("testcase[@name='ndcg_cut_10 (split test)']/system-out")
    assert warn.text.startswith("WARNING: regression: below")
    assert suite.find("properties/property[@name='verdict']").get("value") == "fail"
    with pytest.raises(ValueError):
        junit_xml("s", [JUnitCase("a", "b", "ignored")])


def test_summary_changed_metrics_and_regressed_questions():
    decision = {"verdict": "fail", "why": "1 blocking failure(s)", "blocking_failures": ["gate cand/recall_5: x"],
                "warnings": [], "split": "test", "split_questions": 8, "baseline": "base",
                "calibration": {"line": "κ 0.5 ≥ floor 0.4"}, "judge_errors_line": "0 of 9 claim labels"}
    md = summary_markdown(decision, _gates(ROWS), title="rag-eval s", promotion="none", report_link="https://r/x.html")
    assert md.splitlines()[0] == "### ❌ rag-eval s: FAIL"
    # map did not change and passed: not listed; recall_5 and ndcg_cut_10 changed; recall_10 did not change but
    # failed its floor: listed, and not counted among the unchanged (1 of the 4: map)
    assert ("| cand | recall_5 | 0.7500 | 0.5000 | -0.2500 | n 8 of 9; 1 candidate error | [-0.4000, -0.1000] | "
            "0.0100 | regression |") in md
    assert "| cand | ndcg_cut_10 | 0.7000 | 0.5000 | -0.2000 | — |  | 0.0200 | regression |" in md
    assert "| cand | recall_10 | 0.4000 | 0.4000 | +0.0000 | n 8 | [+0.0000, +0.0000] | 1.0000 | below_floor |" in md
    assert "| cand | map |" not in md
    assert "1 passed gated metric(s) unchanged (difference 0); 0 passed without a comparison" in md
    # q2 regressed on two metrics, q1 on one: q2 first
    assert md.index("[q2](https://r/x.html#q-cand-q2)") < md.index("[q1](https://r/x.html#q-cand-q1)")
    assert "| cand | [q2](https://r/x.html#q-cand-q2) | recall_5, ndcg_cut_10 |" in md
    forced = summary_markdown(dict(decision, verdict="pass", blocking_failures=[]), None, title="t",
                              promotion="none", report_link=None, extra_failures=["step x failed"])
    assert forced.splitlines()[0].endswith(": FAIL") and "- step x failed" in forced


def test_junit_xml_parses_whatever_control_characters_the_texts_carry():
    # an ANSI-coloured message, a NUL and a vertical tab quoted from bad input, a bell in a class name and a
    # lone surrogate: none is allowed in XML 1.0, and any one made the whole file unparseable
    message = "\x1b[31mregression\x1b[0m: quoted \x00byte\x0b and \ud800"
    cases = [JUnitCase("gates.c\x07and", "recall_5 (split test)", "failed", message, "details \x1b[1mbold\x1b[0m"),
             JUnitCase("gates.cand", "map", "warning", "\x08warn")]
    text = junit_xml("rag-eval s\x1b[0m", cases, {"why": "a\x1fb"})
    root = ET.fromstring(text.encode("utf-8"))  # a standard parser reads it back
    [suite] = root.findall("testsuite")
    assert suite.get("name") == "rag-eval s"
    case = suite.find("testcase[@name='recall_5 (split test)']")
    # ANSI sequences are dropped; any other character outside XML 1.0 becomes U+FFFD
    assert case.get("classname") == "gates.c\ufffdand"
    assert case.find("failure").get("message") == "regression: quoted \ufffdbyte\ufffd and \ufffd"
    assert case.find("failure").text == "details bold"
    assert suite.find("testcase[@name='map']/system-out").text == "WARNING: \ufffdwarn"
    assert suite.find("properties/property[@name='why']").get("value") == "a\ufffdb"
    # tab, newline and carriage return are XML characters: kept
    ok = ET.fromstring(junit_xml("s", [JUnitCase("a", "b", "failed", "x", "l1\n\tl2\r")]).encode("utf-8"))
    assert ok.find("testsuite/testcase/failure").text == "l1\n\tl2\n"  # an XML parser reads \r as \n


def test_a_stopped_run_is_not_said_to_have_compared_on_a_split():
    # decision.json of a run that stopped before its report (cli.ci_output.read_decision): split and count unknown
    stopped = {"verdict": "fail", "why": "the run stopped before its report and decision were written",
               "blocking_failures": [], "warnings": [], "calibration": {"line": "unknown"}, "judge_errors_line": "?",
               "split": None, "split_questions": None, "baseline": "unknown"}
    md = summary_markdown(stopped, None, title="t", promotion="none", report_link=None,
                          extra_failures=["step x failed"])
    assert "None golden questions" not in md and "Compared on split" not in md
    assert "**Not compared:** the run stopped before its gates compared anything." in md
    # a split without a known count: the split, and no count
    md = summary_markdown(dict(stopped, split="dev"), None, title="t", promotion="none", report_link=None)
    assert "**Compared on split dev** with unknown." in md
