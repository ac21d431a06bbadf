"""The configuration is typed and checked when it loads: every mistake names the file and the key.

Each case here was accepted before and failed (or silently did something else) only when its asset
ran, after judging.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.core.config import (
    CALIBRATION_LEVELS,
    CHUNKING_STRATEGIES,
    JudgeConfigError,
    load_config,
)
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.section_checks import MAX_NAME_CHARS
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict


def write(tmp_path: Path, cfg: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def edited(tmp_path: Path, edit) -> Path:
    cfg = sample_config_dict()
    edit(cfg)
    return write(tmp_path, cfg)


def threshold(**limits):
    def edit(cfg):
        cfg["gates"]["thresholds"] = [{"metric": "recall_5", **limits}]
    return edit


@pytest.mark.parametrize("edit, message", [
    # issue: each of these loaded and failed only when its asset ran
    (lambda c: c["calibration"].update(kappa_floor=5),
     r"calibration.kappa_floor must be a number in \[-1.0, 1.0\], got 5"),
    (lambda c: c["calibration"].update(level="sentence"),
     r"calibration.level must be one of \('claim', 'response'\), got 'sentence'"),
    (lambda c: c["report"].update(viewer_groups="customers"),
     r"report.viewer_groups must be a list of group names, got 'customers'"),
    (lambda c: c["judge"].update(repeats="two"), r"judge.repeats must be an integer in \[1, 100\], got 'two'"),
    # an unknown promote wrote an empty baseline with null versions
    (lambda c: c["gates"].update(promote="nosuchsystem"),
     r"gates.promote 'nosuchsystem' is not one of gates.candidate_systems"),
    # a system that is configured but not a candidate would become the baseline without any gate
    (lambda c: c["gates"].update(promote="bm25_k5"), r"gates.promote 'bm25_k5' is not one of gates.candidate_systems"),
    # thresholds that switched a gate off (NaN, infinity) or were read as text
    (threshold(max_abs_drop=math.nan), r"gates.thresholds\[0\].max_abs_drop must be a finite number >= 0.0, got nan"),
    (threshold(max_abs_drop=math.inf), r"gates.thresholds\[0\].max_abs_drop must be a finite number >= 0.0, got inf"),
    (threshold(max_abs_drop=-1), r"gates.thresholds\[0\].max_abs_drop must be a finite number >= 0.0, got -1"),
    (threshold(max_abs_drop="0.05"), r"gates.thresholds\[0\].max_abs_drop must be a finite number >= 0.0, got '0.05'"),
    (threshold(max_rel_drop=math.nan), r"gates.thresholds\[0\].max_rel_drop must be a number in \[0.0, 1.0\], got nan"),
    (threshold(max_rel_drop=-1), r"gates.thresholds\[0\].max_rel_drop must be a number in \[0.0, 1.0\], got -1"),
    (threshold(max_rel_drop="0.05"),
     r"gates.thresholds\[0\].max_rel_drop must be a number in \[0.0, 1.0\], got '0.05'"),
    (threshold(min_value=math.nan), r"gates.thresholds\[0\].min_value must be a finite number >= 0.0, got nan"),
    (threshold(min_value=-math.inf), r"gates.thresholds\[0\].min_value must be a finite number >= 0.0, got -inf"),
    (threshold(min_value=-1), r"gates.thresholds\[0\].min_value must be a finite number >= 0.0, got -1"),
    (threshold(min_value="0.05"), r"gates.thresholds\[0\].min_value must be a finite number >= 0.0, got '0.05'"),
    (threshold(max_abs_drop=True), r"gates.thresholds\[0\].max_abs_drop must be a finite number >= 0.0, got True"),
    (threshold(max_abs_drop=0.05, higher_is_better="false"),
     r"gates.thresholds\[0\].higher_is_better must be true or false, got 'false'"),
    (threshold(max_abs_drop=0.05, blocking="no"), r"gates.thresholds\[0\].blocking must be true or false, got 'no'"),
    (threshold(), r"gates.thresholds\[0\] \(recall_5\) sets no limit"),
    (lambda c: c["gates"].update(block_inconclusive="false"), r"gates.block_inconclusive must be true or false"),
    # an empty list read as "every system but the baseline": the opposite of what it says
    (lambda c: c["gates"].update(candidate_systems=[], promote=None),
     r"gates.candidate_systems must list at least one system; leave the key out for every system but the baseline$"),
    (lambda c: c["gates"].update(split="holdout"), r"gates.split must be one of \('dev', 'test', 'all'\)"),
    (lambda c: c["metrics"].update(complete="yes please"), r"metrics.complete must be true or false"),
    (lambda c: c.update(report="customers"), r"report must be a mapping, got 'customers'"),
    (lambda c: c["judge"].update(timeout_s=0), r"judge.timeout_s must be a finite number > 0.0, got 0"),
    (lambda c: c["judge"].update(max_retries=-1), r"judge.max_retries must be an integer in \[0, 20\], got -1"),
    (lambda c: c["judge"].update(backoff_s=math.nan), r"judge.backoff_s must be a number in \[0.0, 300.0\], got nan"),
    (lambda c: c["judge"].update(api_key="sk-x"), r"judge.api_key is not read from a file"),
    (lambda c: c["judge"].update(type="gpt"),
     r"judge.type 'gpt': expected one of rule_based, openai_compatible, human"),
    (lambda c: c["corpus"].update(chunking={"strategy": "sentences"}),
     r"corpus.chunking.strategy must be one of \('paragraphs', 'document'\)"),
    (lambda c: c["corpus"].update(splt="test"), r"unknown key\(s\) \['splt'\] in corpus"),
    (lambda c: c["systems"][0].update(name="../escape"), r"systems\[0\].name '../escape' contains '/'"),
    (lambda c: c["systems"][0].update(prompt_version=["v1", "v2"]), r"systems\[0\].prompt_version must be a string"),
    (lambda c: c.update(schedule={"cron": "nightly"}), r"schedule.cron must be a cron expression of five fields"),
    (lambda c: c["systems"][0]["retriever"].update(stopwords=["palabra"] * 5000),
     r"systems\[0\].retriever is \d+ characters as JSON; expected at most 20000"),
    (lambda c: c["calibration"].update(human_labels="/"),  # a folder; a file not yet written is allowed
     r"calibration.human_labels /: not a regular file"),
])
def test_a_mistake_is_an_error_at_load_naming_file_and_key(tmp_path, edit, message):
    path = edited(tmp_path, edit)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path, environ={})
    assert str(path) in str(info.value)


def test_a_missing_corpus_folder_is_an_error_at_load(tmp_path):
    path = edited(tmp_path, lambda c: c["corpus"].update(path=str(tmp_path / "nowhere")))
    with pytest.raises(ConfigError, match=rf"corpus.path {tmp_path / 'nowhere'}: folder not found") as info:
        load_config(path, environ={})
    assert str(path) in str(info.value)
    # squad_v2 reads one file: a folder there is named as the wrong kind of thing
    path = edited(tmp_path, lambda c: c["corpus"].update(source="squad_v2", path=str(tmp_path)))
    with pytest.raises(ConfigError, match="file not a file"):
        load_config(path, environ={})


def test_a_huge_version_string_is_refused_not_stored_on_every_row(tmp_path):
    # 28 MB in the file: refused by the file-size cap before YAML parsing
    path = edited(tmp_path, lambda c: c["systems"][0].update(prompt_version="PLACEHOLDER"))
    path.write_text(path.read_text(encoding="utf-8").replace("PLACEHOLDER", "x" * 28_000_000), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"file is \d+ bytes; expected at most 1048576 bytes of YAML") as info:
        load_config(path, environ={})
    assert len(str(info.value)) < 500
    # long enough to be stored on every row, small enough for the file
    path = edited(tmp_path, lambda c: c["systems"][0].update(prompt_version="x" * 100_000))
    with pytest.raises(ConfigError, match=rf"systems\[0\].prompt_version is 100000 characters long; expected at most "
                                          rf"{MAX_NAME_CHARS}") as info:
        load_config(path, environ={})
    assert len(str(info.value)) < 500
    path = edited(tmp_path, lambda c: c["systems"][0].update(name="s" * (MAX_NAME_CHARS + 1)))
    with pytest.raises(ConfigError, match=r"systems\[0\].name is 201 characters long"):
        load_config(path, environ={})


def test_a_second_gates_key_is_an_error_naming_file_line_and_key(tmp_path):
    text = (SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8")
    first = next(i for i, line in enumerate(text.splitlines(), 1) if line.startswith("gates:"))
    text += "\ngates:\n  baseline_system: team_rag\n  thresholds: []\n"
    second = len((SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8").splitlines()) + 2
    path = tmp_path / "config.yaml"
    for name in ("corpus", "runs", "golden.jsonl", "human_labels.jsonl"):
        (tmp_path / name).symlink_to(SAMPLE_DIR / name)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    msg = str(info.value)
    assert f"file {path}, line {second}, field 'gates'" in msg
    assert f"repeated key 'gates' (first at line {first})" in msg


def test_the_sample_loads_into_typed_sections():
    cfg = load_config(SAMPLE_DIR / "config.yaml", environ={})
    assert cfg.calibration.configured and cfg.calibration.level == "response" and cfg.calibration.kappa_floor == 0.4
    assert cfg.calibration.human_labels == SAMPLE_DIR / "human_labels.jsonl"
    assert cfg.report.viewer_groups == ("customers",)
    assert cfg.gates.promote == "bm25_k10" and cfg.gates.candidate_systems == ("bm25_k10", "team_rag")
    assert cfg.corpus.path == SAMPLE_DIR / "corpus" and cfg.golden.path == SAMPLE_DIR / "golden.jsonl"
    assert (cfg.judge.type, cfg.judge.type_source) == ("rule_based", "config")
    assert (cfg.judge.timeout_s, cfg.judge.max_retries, cfg.judge.backoff_s) == (30.0, 3, 1.0)
    assert not hasattr(cfg, "raw")  # the shell reads typed fields, never the parsed YAML


def test_transport_defaults_without_a_judge_section(tmp_path):
    path = edited(tmp_path, lambda c: c.pop("judge"))
    j = load_config(path, environ={}).judge
    assert (j.type, j.type_source, j.timeout_s, j.max_retries, j.backoff_s, j.concurrency) == (
        "rule_based", "default", 30.0, 3, 1.0, 4)


def test_the_environment_overrides_the_judge_section(tmp_path):
    path = edited(tmp_path, lambda c: c["judge"].update(type="openai_compatible", base_url="http://127.0.0.1:9/v1",
                                                        model="judge-a", timeout_s=12))
    j = load_config(path, environ={}).judge
    assert (j.type, j.type_source, j.base_url, j.model, j.timeout_s) == (
        "openai_compatible", "config", "http://127.0.0.1:9/v1", "judge-a", 12.0)
    env = {"RAG_EVAL_JUDGE_MODEL": "judge-b", "RAG_EVAL_JUDGE_TIMEOUT_S": "2.5", "RAG_EVAL_JUDGE_MAX_RETRIES": "0",
           "RAG_EVAL_JUDGE_BACKOFF_S": "0.25", "RAG_EVAL_JUDGE_CONCURRENCY": "8"}
    j = load_config(path, environ=env).judge
    assert (j.model, j.timeout_s, j.max_retries, j.backoff_s, j.concurrency) == ("judge-b", 2.5, 0, 0.25, 8)
    assert set(j.from_env) == set(env)
    j = load_config(path, environ={"RAG_EVAL_JUDGE": "rule_based"}).judge
    assert (j.type, j.type_source) == ("rule_based", "RAG_EVAL_JUDGE")


@pytest.mark.parametrize("env, message", [
    ({"RAG_EVAL_JUDGE": "gpt4"},
     r"^RAG_EVAL_JUDGE='gpt4': expected one of rule_based, openai_compatible, human, python$"),
    ({"RAG_EVAL_JUDGE": "openai_compatible"},
     r"^RAG_EVAL_JUDGE=openai_compatible needs RAG_EVAL_JUDGE_BASE_URL, RAG_EVAL_JUDGE_MODEL to be set"),
    ({"RAG_EVAL_JUDGE": "openai_compatible", "RAG_EVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"},
     r"needs RAG_EVAL_JUDGE_MODEL to be set"),
    ({"RAG_EVAL_JUDGE": "human"}, r"^judge type human needs RAG_EVAL_HUMAN_LABELS"),
    ({"RAG_EVAL_JUDGE": "human", "RAG_EVAL_HUMAN_LABELS": "/nonexistent/labels.jsonl"},
     r"label file /nonexistent/labels.jsonl \(RAG_EVAL_HUMAN_LABELS\) not found"),
    ({"RAG_EVAL_JUDGE_TIMEOUT_S": "soon"}, r"^RAG_EVAL_JUDGE_TIMEOUT_S='soon': expected a number$"),
    ({"RAG_EVAL_JUDGE_TIMEOUT_S": "-3"}, r"^RAG_EVAL_JUDGE_TIMEOUT_S must be a finite number > 0.0, got -3.0$"),
    ({"RAG_EVAL_JUDGE_MAX_RETRIES": "3.5"}, r"^RAG_EVAL_JUDGE_MAX_RETRIES='3.5': expected an integer$"),
])
def test_a_judge_the_environment_cannot_build_is_one_line_at_load(env, message):
    with pytest.raises(JudgeConfigError, match=message) as info:
        load_config(SAMPLE_DIR / "config.yaml", environ=env)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ConfigError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize("edit, message", [
    # these loaded and failed mid-run (an Int32 overflow of the k column; a bootstrap that never ends)
    (lambda c: c["metrics"].update(ks=[1, 2**32]),
     r"metrics.ks\[1\] must be at most 2147483647 \(the k column is a 32-bit integer\), got 4294967296"),
    (lambda c: c["metrics"].update(bootstrap_resamples=10**9),
     r"metrics.bootstrap_resamples must be at most 100000 \(more only costs memory and time\), got 1000000000"),
    (lambda c: c["metrics"].update(bootstrap_resamples=1e9),
     r"metrics.bootstrap_resamples must be an integer >= 1, got 1000000000.0 \(and at most 100000\)"),
    (lambda c: c["metrics"].update(ks=[]), r"metrics.ks must list at least one value"),
    # a gate on a cut-off metric without k loaded, then was not_evaluable (a hard FAIL) on every run
    (lambda c: c["gates"].update(thresholds=[{"metric": "recall", "max_abs_drop": 0.1}]),
     r"gates.thresholds\[0\] \(recall\) is computed at a cut-off: expected k, one of metrics.ks \[1, 3, 5, 10\] "
     r"\(k: 5, or in the name: recall_5\)$"),
    (lambda c: c["gates"].update(thresholds=[{"metric": "claim_evidence_availability", "min_value": 0.5}]),
     r"gates.thresholds\[0\] \(claim_evidence_availability\) is computed at a cut-off: expected k"),
])
def test_cut_offs_and_resamples_beyond_their_bounds_are_refused_at_load(tmp_path, edit, message):
    path = edited(tmp_path, edit)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{path}, line ")


def test_the_config_constants_match_the_modules_that_use_them():
    from rag_eval_pipeline.core.corpus import STRATEGIES
    from rag_eval_pipeline.core.metrics.calibration import LEVELS

    assert CALIBRATION_LEVELS == LEVELS and CHUNKING_STRATEGIES == STRATEGIES


def test_the_dagster_shell_never_parses_the_raw_yaml():
    offenders = [str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "rag_eval_pipeline" / "defs").glob("*.py")
                 if ".raw.get(" in p.read_text(encoding="utf-8") or "config.raw" in p.read_text(encoding="utf-8")]
    assert offenders == []


def test_a_gate_on_a_cut_off_metric_without_k_names_the_thresholds_line(tmp_path):
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] = [{"metric": "recall_5", "max_abs_drop": 0.05}, {"metric": "P", "max_abs_drop": 0.1}]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    line = next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "metric: P" in text)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value) == (f"{path}, line {line}: gates.thresholds[1] (P) is computed at a cut-off: expected k, "
                               "one of metrics.ks [1, 3, 5, 10] (k: 5, or in the name: P_5)")


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in text)


def test_corpus_split_is_refused_where_the_source_reads_no_split(tmp_path):
    # documents_dir and squad_v2 read no split: corpus.split was accepted and ignored
    cfg = sample_config_dict()
    cfg["corpus"]["split"] = "dev"
    path = write(tmp_path, cfg)
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value) == (f"{path}, line {_line_of(path, 'split: dev')}: corpus.split applies only to a corpus "
                               "source that reads splits (beir); corpus.source is documents_dir here")


def test_a_key_of_another_judge_type_is_refused_unless_the_environment_switched_the_type(tmp_path):
    # judge: {type: rule_based, base_url: ...} loaded and dropped base_url
    path = edited(tmp_path, lambda c: c["judge"].update(type="rule_based", base_url="http://127.0.0.1:9/v1"))
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    assert str(info.value) == (f"{path}, line {_line_of(path, 'base_url:')}: judge.base_url applies only to "
                               "judge.type openai_compatible, and judge.type is rule_based here")
    # a file written for a model judge, switched to the rule-based one by RAG_EVAL_JUDGE: still accepted
    path = edited(tmp_path, lambda c: c["judge"].update(type="openai_compatible", base_url="http://127.0.0.1:9/v1",
                                                        model="m"))
    j = load_config(path, environ={"RAG_EVAL_JUDGE": "rule_based"}).judge
    assert (j.type, j.type_source, j.base_url) == ("rule_based", "RAG_EVAL_JUDGE", None)


def test_from_env_lists_only_the_variables_that_set_the_chosen_judge(tmp_path):
    # RAG_EVAL_JUDGE_BASE_URL belongs to openai_compatible: with the rule-based judge it set nothing
    env = {"RAG_EVAL_JUDGE_BASE_URL": "http://127.0.0.1:9/v1", "RAG_EVAL_JUDGE_TIMEOUT_S": "2.5"}
    j = load_config(SAMPLE_DIR / "config.yaml", environ=env).judge
    assert j.type == "rule_based" and j.from_env == ("RAG_EVAL_JUDGE_TIMEOUT_S",)


def test_an_unknown_judge_type_in_the_file_names_its_line(tmp_path):
    path = edited(tmp_path, lambda c: c["judge"].update(type="gpt"))
    with pytest.raises(JudgeConfigError) as info:
        load_config(path, environ={})
    assert str(info.value).startswith(f"{path}, line {_line_of(path, 'type: gpt')}: judge.type 'gpt': expected one "
                                      "of rule_based, openai_compatible, human")


def test_a_misspelt_gate_metric_is_quoted_as_written_with_the_closest_names(tmp_path):
    # recal_5 was reported as "'recal' is not a metric" (the name after its _5 was split off), with no hint
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] = [{"metric": "recal_5", "max_abs_drop": 0.05}]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path, environ={})
    message = str(info.value)
    assert "gates.thresholds[0].metric" in message and "'recal_5' is not a metric this pipeline computes" in message
    assert "did you mean 'recall_5'" in message  # one letter missing: difflib's ratio 12/13 ≈ 0.92
