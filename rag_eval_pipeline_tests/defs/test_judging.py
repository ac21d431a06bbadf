"""One source of truth for the judge: ``judge.type`` of the configuration, overridden by RAG_EVAL_JUDGE."""

import pytest
import yaml

from rag_eval_pipeline.core.config import JUDGE_ENV, JudgeConfigError, load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.definitions import build_resources
from rag_eval_pipeline.defs import judging as dj
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch):
    for var in [*JUDGE_ENV.values(), "RAG_EVAL_JUDGE_API_KEY"]:
        monkeypatch.delenv(var, raising=False)


def config(tmp_path, **judge) -> str:
    cfg = sample_config_dict()
    cfg["judge"] = {"type": "rule_based", **judge}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def test_the_configured_judge_type_is_the_one_built(tmp_path, monkeypatch):
    path = config(tmp_path, type="openai_compatible", base_url="http://127.0.0.1:9/v1", model="judge-m",
                  timeout_s=7, max_retries=1, backoff_s=0.5, concurrency=2, cache="judge_cache.sqlite")
    res = build_resources(path, str(tmp_path / "out"))["judge"]
    assert isinstance(res, dj.JudgeResource) and res.type == "openai_compatible"
    cfg = res.config()
    assert (cfg.base_url, cfg.model, cfg.timeout_s, cfg.max_retries, cfg.backoff_s, cfg.concurrency) == (
        "http://127.0.0.1:9/v1", "judge-m", 7.0, 1, 0.5, 2)
    assert cfg.cache == tmp_path / "judge_cache.sqlite"
    # the environment overrides the file, in the documented way
    monkeypatch.setenv("RAG_EVAL_JUDGE", "rule_based")
    assert build_resources(path, str(tmp_path / "out"))["judge"].type == "rule_based"
    monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
    monkeypatch.setenv("RAG_EVAL_JUDGE_TIMEOUT_S", "3")
    assert build_resources(path, str(tmp_path / "out"))["judge"].config().timeout_s == 3.0


def test_judge_misconfiguration_is_one_clear_error_before_any_run(tmp_path, monkeypatch):
    path = config(tmp_path)
    monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
    with pytest.raises(JudgeConfigError, match=r"^RAG_EVAL_JUDGE=openai_compatible needs RAG_EVAL_JUDGE_BASE_URL, "
                                              r"RAG_EVAL_JUDGE_MODEL to be set"):
        build_resources(path, str(tmp_path / "out"))
    monkeypatch.setenv("RAG_EVAL_JUDGE", "gpt-judge")
    with pytest.raises(ConfigError, match=r"^RAG_EVAL_JUDGE='gpt-judge': expected one of rule_based"):
        build_resources(path, str(tmp_path / "out"))
    with pytest.raises(JudgeConfigError):
        load_config(path)  # what the command line loads before it starts a run


def test_a_configuration_broken_elsewhere_still_gives_its_judge(tmp_path):
    cfg = sample_config_dict()
    cfg["gates"]["alpha"] = 7
    cfg["judge"] = {"type": "rule_based"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    # the code location still loads; the run reports the bad alpha when it loads the configuration
    assert dj.select_judge_resource(config_path=str(path)).type == "rule_based"
    with pytest.raises(ConfigError, match="gates.alpha"):
        load_config(path)
