"""A run that stops before its report leaves no earlier run's decision in place.

``rag-eval run`` (in process) twice on a small suite: the first run is decided (report.md, report.html,
decision.json with ``promotion_action: promote``); before the second, the configuration's judge becomes a team's
``python`` judge that fails on every claim, so every claim label is JUDGE_ERROR, the blocking check
``judge_error_share`` on ``judge_labels`` (upstream of the report) fails and Dagster skips the report.
Afterwards decision.json is the second run's: verdict fail, promotion blocked, the check named with its reason,
the second run's id; the first run's report and decision are kept under ``previous/``; the exit status is 1.

Before the fix decision.json and the reports stayed the first run's (``promotion_action: promote``, the first
run's id) after the blocked second run.
"""

import json
import re

import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.test_cli_blocked_check import QUESTIONS, home, small_suite  # noqa: F401 - a fixture

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("home")]  # two in-process runs: ~35 s

HERE = "rag_eval_pipeline_tests.test_cli_stopped_decision"


def broken_judge(claim: str, passages: list[str]) -> dict:
    """A team's judge whose model is down: every call fails, so every claim label is JUDGE_ERROR."""
    raise RuntimeError("judge model unavailable")


def run_id(stdout: str) -> str:
    found = re.findall(r"^run ([0-9a-f-]{36}) \(full_evaluation\)", stdout, flags=re.M)
    assert len(found) == 1, stdout[-2000:]
    return found[0]


def test_a_run_stopped_before_its_report_leaves_a_blocked_decision_and_keeps_the_last_one(tmp_path, capfd):
    config = small_suite(tmp_path)
    runs = tmp_path / "runs.jsonl"
    # the first run: the sample system's own rows for the 7 questions (the small suite's q03 error row undone)
    qids = {json.loads(line)["question_id"] for line in (tmp_path / "golden.jsonl").read_text(
        encoding="utf-8").splitlines()}
    rows = [json.loads(line) for line in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(
        encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r["question_id"] in qids]
    assert len(rows) == QUESTIONS
    runs.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    first_status = main(["run", "--config", str(config), "--output", str(out)])
    first = capfd.readouterr()
    assert first_status == 0, first.out[-3000:] + first.err[-3000:]
    first_id = run_id(first.out)
    decided = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    # no baseline yet: the drop threshold yields no gate row, nothing blocks, so the candidate is promoted
    assert decided["promotion_action"] == "promote" and decided["run_id"] == first_id
    assert decided["stopped_before_report"] is False
    assert decided["inputs"]["config_sha256"] and decided["inputs"]["golden_version"]
    first_report = (out / "report.md").read_text(encoding="utf-8")
    assert f"| Dagster run | {first_id} |" in first_report  # the report names the run it describes
    assert f"| configuration sha256 | {decided['inputs']['config_sha256']} |" in first_report

    # the second run: every claim label JUDGE_ERROR -> share 1.0 > judge.max_error_share 0.05 (the default)
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    cfg["judge"] = {"type": "python", "callable": f"{HERE}:broken_judge"}
    config.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    status = main(["run", "--config", str(config), "--output", str(out)])
    std = capfd.readouterr()
    second_id = run_id(std.out)
    assert second_id != first_id

    assert status == 1, std.out[-3000:] + std.err[-3000:]  # EXIT_FAILED: a blocking check failed
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert decision["run_id"] == second_id, std.out[-3000:] + std.err[-4000:]
    assert decision["verdict"] == "fail" and decision["promotion_action"] == "blocked"
    assert decision["stopped_before_report"] is True
    assert decision["report_html"] is None
    [failure] = decision["blocking_failures"]
    # the check's figures: the 7 answers hold 12 claims (q01:c1, q02:c1-c2, q03:c1, q04:c1-c4, q05:c1, q06:c1-c2,
    # q07:c1), and the broken judge fails on every one: 12/12 = 1.0 > the default limit 0.05
    assert re.fullmatch(r"check (\S+/)?judge_labels:judge_error_share: .+", failure), failure
    figures = set(failure.split(": ", 1)[1].split("; "))
    assert {"judge_errors 12", "labels 12", "share 1.0", "limit 0.05"} <= figures, failure
    assert decision["promotion"].startswith("not promoted: 1 blocking failure(s) stop mine")
    # the first run's report and decision are kept aside, unchanged; no current report claims to be this run's
    kept = json.loads((out / "previous" / "decision.json").read_text(encoding="utf-8"))
    assert kept["run_id"] == first_id and kept["promotion_action"] == "promote"
    assert (out / "previous" / "report.md").read_text(encoding="utf-8") == first_report
    assert not (out / "report.md").exists() and not (out / "report.html").exists()
    # nothing was promoted by the second run: the baseline is the first run's
    manifest = json.loads((out / "baseline" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_id"] == first_id

    # the judge's reason is on the console beside the claim ids, counted (12 claims, one reason), not only in
    # judge_labels.parquet
    assert re.search(r"judge_labels:judge_error_share  \(blocking: stops promotion\)  — 12 of 12 labels are judge "
                     r"errors \(share 1\.000, limit 0\.05\): .*judge model unavailable.* × 12$", std.out,
                     flags=re.M), std.out[-4000:]
    assert re.search(r"^  error_reasons: \[.*judge model unavailable.* × 12'\]$", std.out, flags=re.M)
    assert "verdict: not decided (the run stopped before its report" in std.out
    assert f"the last one written is kept at {out / 'previous' / 'report.html'}" in std.out
    assert "Traceback" not in std.err
