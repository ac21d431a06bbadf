"""``rag-eval estimate``: the judge dry run makes no call and counts what judging would cost."""

from rag_eval_pipeline.cli import main
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.servers.fault_server import FaultServer


def _isolate(monkeypatch, tmp_path):
    # The CLI sets these for its own process; registering them here restores them after the test.
    monkeypatch.setenv("RAG_EVAL_CONFIG", str(SAMPLE_DIR / "config.yaml"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))


def test_estimate_with_a_model_judge_makes_no_call(monkeypatch, capsys, tmp_path):
    _isolate(monkeypatch, tmp_path)
    with FaultServer(mode="ok") as srv:
        monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
        monkeypatch.setenv("RAG_EVAL_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("RAG_EVAL_JUDGE_MODEL", "m")
        monkeypatch.setenv("RAG_EVAL_JUDGE_API_KEY", "sk-test-estimate")
        assert main(["estimate", "--config", str(SAMPLE_DIR / "config.yaml")]) == 0
        assert srv.chat_requests() == []
    out = capsys.readouterr().out
    # 90 answered runs on the sample: 28 per BM25 system (extractive) + 34 logged answers.
    assert "90 answers" in out and "calls" in out and "prompt tokens" in out
    # citations and completeness are estimated too, still without a call
    line = next(x for x in out.splitlines() if x.startswith("citations and completeness"))
    assert "citation_support" in line and "nugget_coverage" in line


def test_estimate_with_the_rule_based_judge_costs_nothing(monkeypatch, capsys, tmp_path):
    _isolate(monkeypatch, tmp_path)
    monkeypatch.setenv("RAG_EVAL_JUDGE", "rule_based")
    assert main(["estimate", "--config", str(SAMPLE_DIR / "config.yaml")]) == 0
    out = capsys.readouterr().out
    assert "makes no model calls" in out and "nugget-coverage requests" in out


def test_estimate_counts_only_answers_the_judge_is_called_for(monkeypatch, capsys, tmp_path):
    """An answer whose text abstains and an answer without retrieval make no judge call, so they are not estimated."""
    import json

    import yaml

    from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

    text = (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8")
    rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    answered = [r for r in rows if r["decision"] == "answer" and r["retrieved"]]
    answered[0]["answer"] = "No encuentro esa información en la documentación disponible."  # abstains in text
    answered[1]["retrieved"] = []  # nothing retrieved: judged "no_retrieval", no call
    log = tmp_path / "team.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    cfg = sample_config_dict()
    cfg["systems"] = [{"name": "team_rag", "kind": "logged", "path": str(log)}]
    cfg["gates"] = {"split": "test"}
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    _isolate(monkeypatch, tmp_path)
    with FaultServer(mode="ok") as srv:
        monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
        monkeypatch.setenv("RAG_EVAL_JUDGE_BASE_URL", srv.base_url)
        monkeypatch.setenv("RAG_EVAL_JUDGE_MODEL", "m")
        monkeypatch.setenv("RAG_EVAL_JUDGE_API_KEY", "sk-test-estimate")
        assert main(["estimate", "--config", str(config)]) == 0
        assert srv.chat_requests() == []
    # the sample's log answers 34 questions, each with a retrieval: 34 - 2 remain to judge
    out = capsys.readouterr().out
    assert f"{len(answered) - 2} answers" in out and len(answered) == 34
    # nugget coverage: one call per answer to a question with claims (answerable): 30 answerable questions, less
    # q08 (abstained), q24 (error) and the answer now abstaining in its text (q01); no retrieval needed: 27
    assert answered[0]["question_id"] == "q01" and "nugget_coverage 27)" in out
