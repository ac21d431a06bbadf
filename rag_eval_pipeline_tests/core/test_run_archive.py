"""The per-question archive under history/<run_id>/ keeps the last report.keep_runs runs, not every run forever."""

import json

import pytest

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.storage import RUN_ARCHIVE, prune_run_archive
from rag_eval_pipeline_tests.core.test_config import edited


def _run(folder, run_id, when):
    d = folder / RUN_ARCHIVE / run_id
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"run_id": run_id, "evaluated_at": when}), encoding="utf-8")
    (d / "rag_runs.parquet").write_bytes(b"x")


def test_the_oldest_runs_beyond_keep_are_deleted_by_their_evaluation_time(tmp_path):
    # ids sort the other way round from their times: r-a is the newest, r-d the oldest
    for run_id, when in (("r-a", "2026-11-30T03:00:00+00:00"), ("r-b", "2026-11-29T03:00:00+00:00"),
                         ("r-c", "2026-11-28T05:00:00+02:00"), ("r-d", "2026-11-28T02:00:00+00:00")):
        _run(tmp_path, run_id, when)
    (tmp_path / RUN_ARCHIVE / "not-a-run").mkdir()  # no run.json: not an archive folder, never deleted
    # keep 2: r-a (Nov 30) and r-b (Nov 29) stay; r-c (Nov 28 03:00 UTC) and r-d (Nov 28 02:00 UTC) go
    assert prune_run_archive(tmp_path, keep=2) == ["r-d", "r-c"]
    assert sorted(p.name for p in (tmp_path / RUN_ARCHIVE).iterdir()) == ["not-a-run", "r-a", "r-b"]
    assert prune_run_archive(tmp_path, keep=2) == []
    assert prune_run_archive(tmp_path / "elsewhere", keep=1) == []  # no archive yet: nothing to do


def test_keep_runs_is_a_report_setting_of_at_least_one(tmp_path):
    assert load_config(edited(tmp_path, lambda c: None), environ={}).report.keep_runs == 30
    cfg = load_config(edited(tmp_path, lambda c: c["report"].update(keep_runs=5)), environ={})
    assert cfg.report.keep_runs == 5
    with pytest.raises(ConfigError, match=r"report.keep_runs must be an integer >= 1, got 0"):
        load_config(edited(tmp_path, lambda c: c["report"].update(keep_runs=0)), environ={})
