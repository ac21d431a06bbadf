"""``rag-eval run --junit-xml --summary-md``: read back with a standard XML parser, and the Markdown's numbers
against the run's own tables (gate_results.parquet, decision.json, report.html)."""

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

import polars as pl
import pytest
import yaml

from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict

REPORT_URL = "http://127.0.0.1:9/reports/report.html"  # nothing listens: only the links' text is checked
# Blocking checks of the sample's chain: the calibration check is defined non-blocking there (no gate is
# judge-based) and golden_evidence_is_current can only warn; the other eight can block (README, "Checks").
BLOCKING = {"answer_judgements:every_answer_has_a_judgement", "corpus_snapshot:chunk_ids_unique",
            "gate_verdict:no_regression_against_baseline", "gate_verdict:run_errors_within_share",
            "golden_set:golden_consistent_with_snapshot",
            "judge_labels:judge_error_share", "judge_labels:verdicts_in_allowed_set",
            "metric_summary:denominators_consistent", "rag_runs:every_question_has_a_run_row"}


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """The sample with one extra gate no system can pass (recall_5 >= 0.99) and one non-blocking gate."""
    tmp = tmp_path_factory.mktemp("ci")
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] += [{"metric": "recall_5", "min_value": 0.99},
                                   {"metric": "map", "min_value": 0.99, "blocking": False}]
    config = tmp / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    out = tmp / "out"
    env = cli_env(dagster_home(tmp), RAG_EVAL_OUTPUT_DIR=str(out))
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                           "--junit-xml", str(tmp / "ci" / "junit.xml"), "--summary-md", str(tmp / "ci" / "summary.md"),
                           "--report-url", REPORT_URL], env=env, cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=600)
    [folder] = [p for p in out.iterdir() if p.name.startswith("adhoc_config_")]
    return proc, folder, tmp / "ci"


def test_exit_1_and_both_files_written(failing_run):
    proc, folder, ci = failing_run
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert f"junit xml: {ci / 'junit.xml'}" in proc.stdout and f"summary markdown: {ci / 'summary.md'}" in proc.stdout
    assert "verdict: FAIL — " in proc.stdout
    # the CLI names what blocked promotion (the two recall_5 floors) and says the stored baseline stays
    assert re.search(r"^promotion: not promoted: 2 blocking failure\(s\) stop bm25_k10; the stored baseline "
                     r"\(none yet\) stays; blocked by gate bm25_k10/recall_5 \(below_floor\), gate "
                     r"team_rag/recall_5 \(below_floor\)$", proc.stdout, flags=re.M), proc.stdout[-3000:]
    # the gate line counts gates, and says the verdict's count also includes checks and steps
    assert "of them failed blocking (the verdict's blocking failures also count failed checks and steps" in proc.stdout


def test_junit_has_one_case_per_gate_and_per_blocking_check(failing_run):
    _proc, folder, ci = failing_run
    gates = pl.read_parquet(folder / "gate_results.parquet")
    root = ET.parse(ci / "junit.xml").getroot()
    assert root.tag == "testsuites"
    [suite] = root.findall("testsuite")
    cases = suite.findall("testcase")
    gate_cases = [c for c in cases if c.get("classname").startswith("gates.")]
    check_cases = [c for c in cases if c.get("classname").startswith("checks.")]
    assert len(gate_cases) == gates.height
    # the gate check's outcome is the gate cases': it is not a case of its own when they are in the file
    gate_check = "gate_verdict:no_regression_against_baseline"
    assert {f"{c.get('classname').split('/', 1)[1]}:{c.get('name')}" for c in check_cases} == BLOCKING - {gate_check}
    assert int(suite.get("tests")) == len(cases) == gates.height + len(BLOCKING) - 1

    def label(r):
        return r["metric"] + ("" if r["k"] is None else f"_{r['k']}")

    by_name = {(c.get("classname"), c.get("name")): c for c in gate_cases}
    assert len(by_name) == len(gate_cases)  # unique names: the second recall_5 threshold is "#2"
    seen: dict = {}
    for r in gates.iter_rows(named=True):
        seen[(r["system"], label(r))] = nth = seen.get((r["system"], label(r)), 0) + 1
        case = by_name[(f"gates.{r['system']}", f"{label(r)} (split test)" + (f" #{nth}" if nth > 1 else ""))]
        failure = case.find("failure")
        if r["blocking"] and not r["passed"]:
            assert failure is not None and failure.get("message") == f"{r['status']}: {r['reason']}"
        else:
            assert failure is None
        if not r["blocking"] and not r["passed"]:  # the non-blocking map floor: a warning, the case passes
            assert case.find("system-out").text.startswith(f"WARNING: {r['status']}: ")
    failed_gates = gates.filter(pl.col("blocking") & ~pl.col("passed")).height
    assert failed_gates == 2  # recall_5 >= 0.99 fails for bm25_k10 (0.6316 on test) and team_rag (0.8684)
    # each failing blocking gate is one failure: 2 in all (this test used to expect 3, the blocking gate check
    # counting the same two gate failures a second time)
    assert int(suite.get("failures")) == failed_gates == len(suite.findall("testcase/failure"))
    props = {p.get("name"): p.get("value") for p in suite.findall("properties/property")}
    assert props["verdict"] == "fail" and props["split"] == "test"


def _table(md: str, heading: str) -> list[list[str]]:
    after = md.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(after) if line.startswith("|"))
    lines = []
    for line in after[start:]:
        if not line.startswith("|"):
            break
        lines.append(line)
    return [[c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]] for line in lines[2:]]


def test_summary_numbers_are_the_gate_tables(failing_run):
    _proc, folder, ci = failing_run
    md = (ci / "summary.md").read_text(encoding="utf-8")
    decision = json.loads((folder / "decision.json").read_text(encoding="utf-8"))
    gates = pl.read_parquet(folder / "gate_results.parquet")
    assert md.splitlines()[0].endswith(": FAIL")
    # the promotion line says what blocked it and that the stored baseline stays, as the report does: the two
    # recall_5 >= 0.99 floors (bm25_k10 0.6316 and team_rag 0.8684 on test), below_floor, not "regression"
    assert ("**Promotion:** not promoted: 2 blocking failure(s) stop bm25_k10; the stored baseline (none yet) stays; "
            "blocked by gate bm25_k10/recall_5 (below_floor), gate team_rag/recall_5 (below_floor)") in md
    for failure in decision["blocking_failures"]:
        assert f"- {failure.replace('|', chr(92) + '|')}" in md

    rows = _table(md, "#### Changed or failing gated metrics (split test)")
    moved = pl.col("difference").is_not_null() & (pl.col("difference").abs() > 1e-12)
    changed = gates.filter(moved | ~pl.col("passed"))
    assert len(rows) == changed.height > 0
    for r, row in zip(changed.iter_rows(named=True), rows):
        system, metric, baseline, candidate, diff, compared, ci, p, status = row
        assert (system, status) == (r["system"], r["status"])
        assert metric == r["metric"] + ("" if r["k"] is None else f"_{r['k']}")
        assert compared.startswith(f"n {r['n']}")
        assert float(baseline) == pytest.approx(r["baseline"], abs=5e-5)
        assert float(candidate) == pytest.approx(r["candidate"], abs=5e-5)
        assert float(diff) == pytest.approx(r["candidate"] - r["baseline"], abs=1e-4)
        assert float(p) == pytest.approx(r["p_value"], abs=5e-5)
    # every passed row not listed is counted once: unchanged (difference 0) or not compared (no difference)
    same = gates.filter(~moved & pl.col("passed") & pl.col("difference").is_not_null()).height
    uncompared = gates.filter(pl.col("passed") & pl.col("difference").is_null()).height
    assert same + uncompared + changed.height == gates.height
    assert f"{same} passed gated metric(s) unchanged (difference 0); {uncompared} passed without a comparison" in md
    assert set(gates.filter(pl.col("metric") == "recall")["status"]) >= {"below_floor"}

    # the regressed questions: per (system, question) the gated metrics it regressed on, most first
    expected: dict[tuple[str, str], set[str]] = {}
    for r in gates.iter_rows(named=True):
        for q in r["regressed_questions"]:
            expected.setdefault((r["system"], q), set()).add(r["metric"] + ("" if r["k"] is None else f"_{r['k']}"))
    rows = _table(md, "#### Top regressed questions")
    assert rows and len(rows) == min(10, len(expected))
    counts = [len(row[2].split(", ")) for row in rows]
    assert counts == sorted(counts, reverse=True)
    html = (folder / "report.html").read_text(encoding="utf-8")
    for system, question, metrics in rows:
        qid = re.match(r"\[([^\]]+)\]", question).group(1)
        assert set(metrics.split(", ")) == expected[(system, qid)]
        anchor = re.search(r"\(([^)]+)\)", question).group(1)
        assert anchor == f"{REPORT_URL}#q-{system}-{qid}"
        assert f'id="q-{system}-{qid}"' in html  # the link lands on the question's card in the report
