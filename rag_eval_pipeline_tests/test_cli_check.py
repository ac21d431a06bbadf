"""``rag-eval check``: what a run would refuse, said before any run, one line per problem; and ``rag-eval run``
runs the same checks first and records no Dagster run when they fail.

The hostile catalogue (``fixtures/hostile/``), case by case, is ``test_check_catalogue.py``; here: the sample,
systems that cannot work, ``--reach``, and a log that misses a golden question."""

import json
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.core.systems.live_servers import RagFaultServer
from rag_eval_pipeline_tests.defs.subprocess_runs import dagster_home, sample_config_dict
from rag_eval_pipeline_tests.servers.local import closed_port
from rag_eval_pipeline_tests.test_check_catalogue import recorded_runs


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh DAGSTER_HOME and no variable of the developer's environment that would change the suite."""
    h = dagster_home(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    monkeypatch.setenv("RAG_EVAL_OUTPUT_DIR", str(tmp_path / "outputs"))  # check reads the output folder too
    for var in ("RAG_EVAL_CONFIG", "RAG_EVAL_SUITES", "RAG_EVAL_JUDGE"):
        monkeypatch.delenv(var, raising=False)
    return h


def _sample_with(tmp_path, systems: list[dict]) -> str:
    cfg = sample_config_dict()
    cfg["systems"] += systems
    cfg["gates"]["candidate_systems"] = ["bm25_k10", "team_rag"]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return str(path)


def test_the_sample_checks_clean_with_what_it_read(tmp_path, home, capsys):
    assert main(["check", "--config", str(SAMPLE_DIR / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "corpus: 14 documents" in out and "golden set: 52 questions, relevance judged per chunk" in out
    assert "system team_rag (logged): 52 runs read, 1 errored, 0 outside the golden set" in out
    # the sample's q26 rests on a replaced document: a warning, so the last line does not say "no problem"
    assert "warning: golden set: 1 question(s) rest on withdrawn or replaced documents" in out
    assert out.strip().splitlines()[-1].startswith("check: 1 warning(s) above, nothing that stops the run; next: ")
    assert "no problem" not in out
    assert recorded_runs(home) == 0


def test_systems_that_cannot_work_are_configuration_problems(tmp_path, home, capsys, monkeypatch):
    monkeypatch.delenv("NO_SUCH_TOKEN_FOR_TEST", raising=False)
    path = _sample_with(tmp_path, [
        {"name": "py", "kind": "python", "callable": "no_such_rag_module:answer"},
        {"name": "web", "kind": "http", "url": "http://127.0.0.1:9/answer",
         "headers_from_env": {"Authorization": "NO_SUCH_TOKEN_FOR_TEST"}},
    ])
    assert main(["check", "--config", path]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2
    # each names the configuration file and the line of the key it is about (callable, headers_from_env), and
    # the system once
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    callable_line = next(i for i, t in enumerate(lines, 1) if "no_such_rag_module" in t)
    headers_line = next(i for i, t in enumerate(lines, 1) if "headers_from_env" in t)
    assert err[0].startswith(f"rag-eval: {path}, line {callable_line}: system py (python): cannot import module "
                             "'no_such_rag_module'")
    assert f"looked in the configuration's folder {tmp_path}" in err[0]
    assert err[1].startswith(f"rag-eval: {path}, line {headers_line}: system web (http): ")
    assert "NO_SUCH_TOKEN_FOR_TEST" in err[1] and "is not set" in err[1]
    assert main(["run", "--config", path, "--output", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.strip().splitlines() == err
    assert main(["estimate", "--config", path]) == 2
    assert "cannot import module 'no_such_rag_module'" in capsys.readouterr().err
    assert recorded_runs(home) == 0


def test_reach_sends_one_request_and_says_when_nobody_answers(tmp_path, home, capsys):
    with RagFaultServer(lambda q, t, g: {}) as server:
        path = _sample_with(tmp_path, [{"name": "up", "kind": "http", "url": server.url},
                                       {"name": "down", "kind": "http",
                                        "url": f"http://127.0.0.1:{closed_port()}/answer"}])
        assert main(["check", "--config", path]) == 0  # without --reach nothing is sent
        assert server.requests == []
        capsys.readouterr()
        assert main(["check", "--config", path, "--reach"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "system down (http)" in err[0] and "cannot be reached" in err[0], err
        assert server.requests == []  # HEAD and OPTIONS never reach do_POST: the system answered nothing


def test_a_golden_question_without_a_run_row_is_a_data_problem_unless_complete(tmp_path, home, capsys):
    log = [json.loads(x) for x in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()]
    short = tmp_path / "team_rag.jsonl"
    short.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in log if r["question_id"] != "q05"),
                     encoding="utf-8")
    cfg = sample_config_dict()
    next(s for s in cfg["systems"] if s["name"] == "team_rag")["path"] = str(short)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    # the run file the row is missing from is named beside the question id (a suite may read several logs)
    assert err == [f"rag-eval: system team_rag (logged): 1 golden question(s) have no run row in {short}: ['q05']; "
                   "expected one per question (or metrics.complete: true to score them as empty retrievals, as "
                   "trec_eval -c)"]
    cfg["metrics"]["complete"] = True
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    assert main(["check", "--config", str(path)]) == 0


def test_a_log_whose_errors_are_above_the_gate_share_is_said_before_the_run(tmp_path, home, capsys):
    """Six of the 52 sample questions logged as errors: 6 / 52 = 0.115 > the default 0.10, so the run's blocking
    check run_errors_within_share would fail; check says so as a note (the run still has its metrics to show)."""
    log = [json.loads(x) for x in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()]
    already = {r["question_id"] for r in log if r.get("decision") == "error"}
    assert len(already) == 1  # the sample logs one error
    for r in [r for r in log if r["question_id"] not in already][:5]:
        r.update({"decision": "error", "error": "HTTP 503", "answer": None, "retrieved": [], "citations": []})
    path = tmp_path / "team_rag.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in log), encoding="utf-8")
    cfg = sample_config_dict()
    next(s for s in cfg["systems"] if s["name"] == "team_rag")["path"] = str(path)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    assert main(["check", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert ("warning: system team_rag (logged): 6 of 52 runs errored (share 0.115 > gates.max_run_error_share 0.1): "
            "the run's blocking check run_errors_within_share will fail") in out, out
    # the summary line comes after the warnings and never says "no problem" (q26's stale evidence warns too: 2)
    assert out.strip().splitlines()[-1].startswith("check: 2 warning(s) above, nothing that stops the run"), out
    assert "no problem" not in out
    cfg["gates"]["max_run_error_share"] = 0.2  # 0.115 is within it: no note
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    assert main(["check", "--config", str(config)]) == 0
    assert "runs errored (share" not in capsys.readouterr().out
