"""The asset factory: each suite's definitions bound to the suite when they are built, with the suite's own
resources (its judge included), and nothing in the shell asking Dagster which step is running."""

import re
from pathlib import Path

import dagster as dg
import pytest
import yaml

from rag_eval_pipeline.core.config import JUDGE_ENV, load_config
from rag_eval_pipeline.core.suites import Suite, load_suites
from rag_eval_pipeline.defs import judging
from rag_eval_pipeline.defs.factory import suite_definitions
from rag_eval_pipeline.defs.location import build_definitions, check_suite, load_code_location
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

DEFS = Path(__file__).resolve().parents[2] / "rag_eval_pipeline" / "defs"


@pytest.fixture(autouse=True)
def _no_judge_env(monkeypatch):
    for var in [*JUDGE_ENV.values(), "RAG_EVAL_JUDGE_API_KEY", "RAG_EVAL_CONFIG"]:
        monkeypatch.delenv(var, raising=False)


def _suites(tmp_path: Path) -> Path:
    """alpha: the sample with the embedded judge; beta: the sample judged by a model endpoint."""
    sample = sample_config_dict()
    (tmp_path / "alpha.yaml").write_text(yaml.safe_dump(dict(sample, judge={"type": "rule_based"})), encoding="utf-8")
    beta = dict(sample, judge={"type": "openai_compatible", "base_url": "http://127.0.0.1:9/v1", "model": "judge-b",
                               "timeout_s": 7, "concurrency": 2})
    (tmp_path / "beta.yaml").write_text(yaml.safe_dump(beta), encoding="utf-8")
    path = tmp_path / "suites.yaml"
    path.write_text("suites:\n  alpha: {config: alpha.yaml}\n  beta: {config: beta.yaml}\n", encoding="utf-8")
    return path


def test_two_suites_with_different_judges_each_get_their_own(tmp_path):
    from rag_eval_pipeline.cli.common import judge_resource

    loaded = [check_suite(s) for s in load_suites(_suites(tmp_path))]
    defs = build_definitions(loaded, output_dir=str(tmp_path / "out"))
    alpha, beta = defs.resources["alpha__judge"], defs.resources["beta__judge"]
    assert isinstance(alpha, judging.JudgeResource) and alpha.type == "rule_based"
    assert isinstance(beta, judging.JudgeResource) and beta.type == "openai_compatible"
    cfg = beta.config()
    assert (cfg.base_url, cfg.model, cfg.timeout_s, cfg.concurrency) == ("http://127.0.0.1:9/v1", "judge-b", 7.0, 2)
    # `rag-eval run --suite beta` builds the very same judge
    assert judge_resource(tmp_path / "beta.yaml") == beta and judge_resource(tmp_path / "alpha.yaml") == alpha
    # each suite's judging step asks for its own judge, never another suite's
    for suite in ("alpha", "beta"):
        for quick in ((), ("quick",)):
            [stage] = [a for a in defs.assets if isinstance(a, dg.AssetsDefinition)
                       and dg.AssetKey([suite, *quick, "judge_labels"]) in a.keys]
            keys = stage.required_resource_keys
            assert f"{suite}__judge" in keys and not {k for k in keys if k.endswith("__judge")} - {f"{suite}__judge"}


def test_a_suite_whose_judge_is_misconfigured_is_skipped_alone(tmp_path, monkeypatch):
    suites = _suites(tmp_path)
    cfg = yaml.safe_load((tmp_path / "beta.yaml").read_text(encoding="utf-8"))
    del cfg["judge"]["base_url"]
    (tmp_path / "beta.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    monkeypatch.setenv("RAG_EVAL_SUITES", str(suites))
    monkeypatch.setenv("RAG_EVAL_OUTPUT_DIR", str(tmp_path / "out"))
    defs = load_code_location()
    assert "alpha__judge" in defs.resources and "beta__judge" not in defs.resources
    skipped = defs.metadata["skipped_suites"].value
    assert list(skipped) == ["beta"] and "base_url" in skipped["beta"]


def test_the_factory_binds_keys_folder_configuration_and_resources_to_the_suite(tmp_path):
    config = tmp_path / "alpha.yaml"
    config.write_text(yaml.safe_dump(sample_config_dict()), encoding="utf-8")
    suite = Suite(name="alpha", config_path=config)
    folder = tmp_path / "somewhere" / "alpha_out"
    defs = suite_definitions(suite, load_config(config), folder, serve_root=tmp_path / "somewhere")
    assert set(defs.resources) == {"alpha__settings", "alpha__store", "alpha__io_manager", "alpha__judge"}
    assert defs.resources["alpha__settings"].config_path == str(config)
    assert defs.resources["alpha__io_manager"].base_dir == str(folder)
    assert defs.resources["alpha__store"].base_dir == str(folder)
    keys = {k for a in defs.assets for k in (a.keys if isinstance(a, dg.AssetsDefinition) else [a.key])}
    assert keys and all(k.path[0] == "alpha" for k in keys)
    for a in defs.assets:
        if isinstance(a, dg.AssetsDefinition) and a.is_materializable:
            assert {spec.group_name for spec in a.specs} <= {"alpha", "alpha_quick"}
            assert not {k for k in a.required_resource_keys if "__" in k and not k.startswith("alpha__")}
    assert sorted(j.name for j in defs.jobs) == ["alpha__full_evaluation", "alpha__quick_evaluation"]


def test_no_step_asks_dagster_which_suite_it_runs():
    # the suite is bound when the definitions are built: no module reads the running step from ambient context
    ambient = re.compile(r"(Op|Asset)ExecutionContext\.get\(|current_prefix|\.assets_def\b")
    found = [f"{p.name}:{i}" for p in sorted(DEFS.glob("*.py"))
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if ambient.search(line)]
    assert found == []


def test_jobs_name_no_executor(tmp_path):
    # Dagster's default executor selection applies (the deployment or run config chooses); rag-eval run runs in
    # process through execute_in_process
    config = tmp_path / "alpha.yaml"
    config.write_text(yaml.safe_dump(sample_config_dict()), encoding="utf-8")
    defs = suite_definitions(Suite(name="alpha", config_path=config), load_config(config), tmp_path / "out")
    assert defs.executor is None
    assert all(j.executor_def is None for j in defs.jobs)
