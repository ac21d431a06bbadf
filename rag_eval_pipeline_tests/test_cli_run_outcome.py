"""``rag-eval run`` on the sample, in real subprocesses: a quiet stderr, and one promotion outcome everywhere.

What a person reads after ``rag-eval run`` (README, quick start): the summary on stdout and, on stderr, only
the steps' own messages (Dagster's engine events are DEBUG and stay out unless ``--log-level DEBUG``). The
promotion outcome is the same in the CLI's ``promotion:`` line, the report (report.md, decision.json) and the
files promotion writes (``promotion.json``, ``baseline/manifest.json``): the report is written before the
promotion step (a declared dependency) and compares with the baseline the gates compared with, not with the
one this run promotes.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict

pytestmark = pytest.mark.slow  # three runs of the sample's full evaluation

# The CLI's promotion line (cli/run_output.py: promotion_line) -> the decision's action (core/report/decision.py)
CLI_WORD_TO_ACTION = {"promoted": "promote", "kept": "keep", "not promoted": "blocked", "none": "none"}
# Dagster's engine events: DEBUG-level event log lines that must not reach a person's terminal by default
ENGINE_EVENTS = ("RUN_START", "ENGINE_EVENT", "STEP_START", "STEP_INPUT", "STEP_OUTPUT", "LOADED_INPUT",
                 "HANDLED_OUTPUT", "STEP_SUCCESS", "ASSET_MATERIALIZATION", "RESOURCE_INIT_STARTED",
                 "LOGS_CAPTURED", "ASSET_CHECK_EVALUATION", "RUN_SUCCESS")


def _run(env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)


def _outcome(proc: subprocess.CompletedProcess, folder: Path) -> dict:
    """The promotion outcome as each place states it."""
    [cli] = re.findall(r"^promotion: (promoted|kept|not promoted|none)\b", proc.stdout, flags=re.M)
    [run_id] = re.findall(r"^run (\S+) \(full_evaluation\)", proc.stdout, flags=re.M)
    decision = json.loads((folder / "decision.json").read_text(encoding="utf-8"))
    [report_line] = [ln for ln in (folder / "report.md").read_text(encoding="utf-8").splitlines()
                     if ln.startswith("Promotion: ")]
    [compared] = [ln for ln in (folder / "report.md").read_text(encoding="utf-8").splitlines()
                  if ln.startswith("| compared with |")]
    return {"cli": CLI_WORD_TO_ACTION[cli], "run_id": run_id, "decision": decision["promotion_action"],
            "decision_run": decision["run_id"], "report": report_line, "compared": compared}


def _manifest(folder: Path) -> dict:
    return json.loads((folder / "baseline" / "manifest.json").read_text(encoding="utf-8"))


def test_run_is_quiet_and_report_cli_and_promotion_files_state_one_outcome(tmp_path):
    out = tmp_path / "outputs"
    env = cli_env(dagster_home(tmp_path), RAG_EVAL_OUTPUT_DIR=str(out))
    folder = out / "sample"
    promote = yaml.safe_load((SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8"))["gates"]["promote"]

    # 1. a fresh folder: nothing promoted yet, every gate passes -> the candidate is promoted
    first = _run(env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    noise = [ln for ln in first.stderr.splitlines() if " - DEBUG - " in ln or any(e in ln for e in ENGINE_EVENTS)]
    assert noise == [], f"{len(noise)} DEBUG/engine-event lines on stderr, e.g. {noise[:3]}"
    assert " - dagster - " not in first.stdout  # the event log never mixes into the summary
    # stderr: the steps' own INFO lines only: corpus version 1, judging progress every 16 of 156 answers (9) and
    # done (1), calibration 1, report 1, promotion 1 = 14; a little room for a warning, none for the event log
    # (about 300 lines at DEBUG)
    assert len(first.stderr.splitlines()) <= 20, first.stderr
    one = _outcome(first, folder)
    assert one["cli"] == one["decision"] == "promote", one
    assert one["report"].startswith(f"Promotion: promotes {promote} as the baseline"), one
    assert one["decision_run"] == one["run_id"]
    promoted = json.loads((folder / "promotion.json").read_text(encoding="utf-8"))
    manifest = _manifest(folder)
    assert promoted["system"] == manifest["system"] == promote
    assert promoted["run_id"] == manifest["run_id"] == one["run_id"]  # written by this run, after its report
    # the report compared with what the gates compared with (nothing promoted before this run), not with the
    # baseline this run has just promoted
    assert "nothing promoted yet" in one["compared"] and one["run_id"] not in one["compared"], one

    # 2. the same run again: the candidate is already the promoted baseline -> kept, nothing written
    second = _run(env)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    two = _outcome(second, folder)
    assert two["cli"] == two["decision"] == "keep", two
    assert two["report"].startswith(f"Promotion: kept: {promote} is already the promoted baseline"), two
    assert _manifest(folder) == manifest  # the stored baseline (promoted by run 1) is unchanged
    assert f"run {one['run_id']}" in two["compared"], two  # compared with run 1's promoted baseline

    # 3. an ad-hoc configuration whose floor fails: blocked in the CLI and the report, nothing promoted
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] = [{"metric": "recall_5", "min_value": 0.99}]
    config = tmp_path / "failing.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    failing = tmp_path / "failing_out"
    third = _run(env, "--config", str(config), "--output", str(failing))
    assert third.returncode == 1, third.stdout[-3000:] + third.stderr[-3000:]
    three = _outcome(third, failing)
    assert three["cli"] == three["decision"] == "blocked", three
    # the floor applies to both candidates (bm25_k10, team_rag; bm25_k5 is the baseline system) and neither
    # reaches 0.99 on the gate split (on all questions they retrieve 25.5/35 and 32/34 of the relevant chunks)
    assert re.match(rf"Promotion: not promoted: 2 blocking failure\(s\) stop {promote}; the stored baseline "
                    r"\(none yet\) stays", three["report"]), three
    assert not (failing / "baseline").exists() and not (failing / "promotion.json").exists()
