"""A suite's resources: the run tags a run gets from each suite it writes, and the quick evaluation's folder."""

import json

import dagster as dg
import pytest

from rag_eval_pipeline.defs.resources import EvalSettings, TableStore, merge_run_tags

A = {"rag_eval/suite": "alpha", "rag_eval/config_path": "/c/a.yaml", "rag_eval/config_sha256": "aa",
     "rag_eval/output_dir": "/o/alpha"}
B = {"rag_eval/suite": "beta", "rag_eval/config_path": "/c/b.yaml", "rag_eval/config_sha256": "bb",
     "rag_eval/output_dir": "/o/beta"}


def test_run_tags_name_each_suite_a_run_writes():
    assert merge_run_tags({}, A) == A  # a run launched without tags gets the suite's
    assert merge_run_tags({**A, "rag_eval/config_sha256": "old", "other": "x"}, A) == A  # the file's sha256 now
    both = merge_run_tags(A, B)  # a run of two suites: each value, comma-separated, in one order
    assert both == {"rag_eval/suite": "alpha,beta", "rag_eval/config_path": "/c/a.yaml,/c/b.yaml",
                    "rag_eval/config_sha256": "aa,bb", "rag_eval/output_dir": "/o/alpha,/o/beta"}
    assert merge_run_tags(both, {**B, "rag_eval/config_sha256": "b2"})["rag_eval/config_sha256"] == "aa,b2"


def test_settings_of_a_suite_tag_its_runs_and_the_unprefixed_chain_does_not(tmp_path):
    config = tmp_path / "a.yaml"
    config.write_text("x: 1\n", encoding="utf-8")
    tags = EvalSettings(config_path=str(config), suite="alpha", output_dir="/o/alpha").run_tags()
    # sha256 of b"x: 1\n", worked out with `python3 -c "import hashlib; ..."` outside the code under test
    assert tags["rag_eval/config_sha256"] == "d09edadd173a8bbc233d47dcafc30cc876af2fb569812f2bbe0e92a1905bbce8"
    assert tags["rag_eval/suite"] == "alpha" and tags["rag_eval/output_dir"] == "/o/alpha"
    assert EvalSettings(config_path=str(config)).run_tags() == {}


def test_a_quick_evaluation_reads_but_never_writes_the_full_evaluations_baseline_and_history(tmp_path):
    store = TableStore(base_dir=str(tmp_path / "alpha"), serve_root=str(tmp_path))
    full, quick = store.folder_for(), store.folder_for(quick=True)
    assert quick.path("report.md") == tmp_path / "alpha" / "quick" / "report.md"
    assert quick.path("metric_history.parquet") == full.path("metric_history.parquet")
    assert quick.path("baseline", "manifest.json") == tmp_path / "alpha" / "baseline" / "manifest.json"
    full.write_json({"system": "bm25"}, "baseline", "manifest.json")
    assert json.loads(quick.path("baseline", "manifest.json").read_text(encoding="utf-8")) == {"system": "bm25"}
    with pytest.raises(dg.Failure, match="a quick evaluation never writes baseline/manifest.json"):
        quick.write_json({}, "baseline", "manifest.json")


def test_report_urls_are_relative_to_the_served_folder(tmp_path, monkeypatch):
    store = TableStore(base_dir=str(tmp_path / "alpha"), serve_root=str(tmp_path)).folder_for(quick=True)
    monkeypatch.delenv("RAG_EVAL_REPORT_URL", raising=False)
    assert store.url_for(store.path("report.html")) is None
    monkeypatch.setenv("RAG_EVAL_REPORT_URL", "http://127.0.0.1:8765/")
    assert store.url_for(store.path("report.html")) == "http://127.0.0.1:8765/alpha/quick/report.html"
    assert store.url_for(tmp_path.parent / "elsewhere.html") is None
