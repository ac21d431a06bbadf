"""Question shards through Dagster (``defs/shards.py``): the partitioned shard layer, the merge that reads every
partition, and ``rag-eval run`` on the sample split in 3 shards giving the unsplit run's tables."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.shards import shard_of
from rag_eval_pipeline.core.suites import Suite, ad_hoc_suite
from rag_eval_pipeline.defs.factory import full_evaluation_keys
from rag_eval_pipeline.defs.location import build_definitions, check_suite
from rag_eval_pipeline.defs.schedules import FULL, QUICK_JOB, SHARDS_JOB, job_name
from rag_eval_pipeline.defs.scope import SHARDED_TABLES
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config, sample_config_dict
from rag_eval_pipeline_tests.deploy.tables import parquet_tables

PER_QUESTION = {f"{t}.parquet" for t in SHARDED_TABLES}


def _defs(tmp_path: Path, shards: int):
    folder = tmp_path / f"cfg{shards}"
    folder.mkdir()
    suite = ad_hoc_suite(str(sample_config(folder, shards=shards)), [])
    defs = build_definitions([check_suite(suite)], output_dir=str(tmp_path / "out"), executor="in_process")
    return suite.name, defs


def test_a_sharded_suite_has_one_partitioned_step_per_stage_and_a_merge_reading_every_partition(tmp_path):
    name, defs = _defs(tmp_path, 3)
    shards_job = defs.resolve_job_def(job_name(name, SHARDS_JOB))
    assert shards_job.partitions_def.get_partition_keys() == ["0", "1", "2"]
    graph = shards_job.asset_layer.asset_graph
    shard_keys = set(shards_job.asset_layer.executable_asset_keys)
    assert shard_keys == {dg.AssetKey([name, "shards", t]) for t in SHARDED_TABLES}
    assert {graph.get(k).partitions_def.get_partition_keys() == ["0", "1", "2"] for k in shard_keys} == {True}
    # the shard steps: rag_runs, judging, citations, question_metrics (one op each, Dagster's static partitions)
    assert sorted(n.name for n in shards_job.graph.node_defs) == sorted(
        f"{name}__shards__{s}" for s in ("rag_runs", "judging", "citations", "question_metrics"))
    # the full evaluation and the quick one are not partitioned; the merge maps every shard into its step
    for kind in (FULL, QUICK_JOB):
        job = defs.resolve_job_def(job_name(name, kind))
        assert job.partitions_def is None
        assert all(job.asset_layer.asset_graph.get(k).partitions_def is None
                   for k in job.asset_layer.executable_asset_keys)
    merge = next(a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.node_def.name ==
                 f"{name}__merge_shards")
    assert {k: type(merge.get_partition_mapping(k)) for k in merge.dependency_keys} == {
        dg.AssetKey([name, "shards", t]): dg.AllPartitionMapping for t in SHARDED_TABLES}
    assert set(merge.keys) == {dg.AssetKey([name, t]) for t in SHARDED_TABLES}
    # the checks of the per-question tables sit on the merged tables
    full = defs.resolve_job_def(job_name(name, FULL))
    checks = {f"{k.asset_key.path[-1]}:{k.name}" for k in full.asset_layer.asset_graph.asset_check_keys}
    assert {"rag_runs:every_question_has_a_run_row", "judge_labels:verdicts_in_allowed_set",
            "answer_judgements:every_answer_has_a_judgement"} <= checks
    keys, _ = full_evaluation_keys(defs, name)  # what the nightly schedule selects: no shard asset
    assert not [k for k in keys if "shards" in k.path]


def test_a_nightly_sharded_suite_is_left_out_of_the_nightly_schedule_and_says_why(tmp_path):
    sharded = Suite("big", sample_config(tmp_path, shards=2), nightly=True)
    defs = build_definitions([check_suite(sharded)], output_dir=str(tmp_path / "out"), executor="in_process")
    schedule = defs.resolve_schedule_def("nightly_full_evaluation")
    assert "no nightly suite" in schedule.description
    said = defs.metadata["not_in_nightly_schedule"].value
    assert list(said) == ["big"] and "shards: 2" in said["big"] and "backfill" in said["big"]


def test_shards_1_is_the_unpartitioned_chain(tmp_path):
    name, defs = _defs(tmp_path, 1)
    with pytest.raises(Exception, match=SHARDS_JOB):
        defs.resolve_job_def(job_name(name, SHARDS_JOB))
    assert not [a for a in defs.assets if isinstance(a, dg.AssetsDefinition) and a.partitions_def is not None]


def _run(config: Path, out: Path, home: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                             "--output", str(out)], cwd=REPO_ROOT, env=cli_env(home), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _golden_with_docs_in_one_shard(tmp_path: Path) -> tuple[Path, dict]:
    """The sample's golden set with ``relevant_docs`` on q02 alone (shard 2 of 3: core/test_shards.py works it
    out), so shards 0 and 1 hold no question with ``relevant_docs`` while the suite is scored at document level
    (every question then judged by its relevant chunks' documents); and the sample's gates plus one on
    ``recall_5`` at document level."""
    cfg = sample_config_dict()
    rows = [json.loads(line) for line in Path(cfg["golden"]["path"]).read_text(encoding="utf-8").splitlines()
            if line.strip()]
    for row in rows:
        if row["question_id"] == "q02":  # its first relevant chunk is returns-a1-en#1, of document returns-a1-en
            assert row["relevant"][0]["chunk_id"] == "returns-a1-en#1"
            row["relevant_docs"] = [{"doc_id": "returns-a1-en", "grade": 2}]
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    gates = dict(cfg["gates"])
    gates["thresholds"] = [*gates["thresholds"], {"metric": "recall_5", "level": "doc", "max_abs_drop": 0.05}]
    return golden, gates


@pytest.mark.slow  # two full runs of the sample (~50 s each on the shared 2-core machine), side by side
def test_the_sample_in_3_shards_gives_the_unsplit_run_s_tables(tmp_path):
    # one shard without any relevant_docs: every level the whole golden set is scored at must be scored in it too
    assert shard_of("q02", 3) == 2
    golden, gates = _golden_with_docs_in_one_shard(tmp_path)
    configs = {}
    for n in (1, 3):
        (tmp_path / f"c{n}").mkdir()
        configs[n] = sample_config(tmp_path / f"c{n}", shards=n, golden={"path": str(golden)}, gates=gates)
    procs = {n: _run(configs[n], tmp_path / f"out{n}", dagster_home(tmp_path / f"h{n}")) for n in (1, 3)}
    logs = {n: p.communicate(timeout=900)[0] for n, p in procs.items()}
    for n, p in procs.items():
        assert p.returncode == 0, logs[n][-3000:]
    assert "question shard 2 of 3: succeeded" in logs[3] and "question shard" not in logs[1]
    one, three = parquet_tables(tmp_path / "out1"), parquet_tables(tmp_path / "out3")
    shard_files = {k: v for k, v in three.items() if k.startswith("shards/")}
    three = {k: v for k, v in three.items() if not k.startswith("shards/")}
    assert one.keys() == three.keys()
    for name in sorted(one):
        a, b = one[name], three[name]
        if Path(name).name in PER_QUESTION:
            # the merged per-question tables hold the same rows, shard 0's first (not the unsplit step's order)
            a, b = a.sort(pl.all(), nulls_last=True), b.sort(pl.all(), nulls_last=True)
        assert a.equals(b), f"{name} differs between shards: 1 and shards: 3"
    # every downstream table equal row for row (the aggregate, gates, calibration, history, regression cases)
    for name in ("metric_summary.parquet", "gate_results.parquet", "judge_variance.parquet",
                 "judge_calibration.parquet", "metric_history.parquet", "regression_cases.parquet"):
        assert name in one and one[name].height > 0
    # document-level rows of every golden question, shard 0's and 1's included, and a gate that reads them
    qm, n_golden = one["question_metrics.parquet"], one["golden_set.parquet"].height
    doc = qm.filter((pl.col("level") == "doc") & (pl.col("metric") == "recall") & (pl.col("k") == 5))
    assert doc.select("system", "question_id").unique().height == doc["system"].n_unique() * n_golden
    assert {shard_of(q, 3) for q in doc["question_id"]} == {0, 1, 2}
    assert one["gate_results.parquet"].filter(pl.col("level") == "doc").height > 0
    # each shard's file holds its own questions only, and the shards hold every golden question once
    golden = one["golden_set.parquet"]["question_id"]
    seen = []
    for key in ("0", "1", "2"):
        runs = shard_files[f"shards/rag_runs/{key}.parquet"]
        qs = runs["question_id"].unique().to_list()
        assert qs and all(shard_of(q, 3) == int(key) for q in qs)
        seen += qs
    assert sorted(seen) == sorted(golden.to_list())


@pytest.mark.parametrize("command", ["check", "estimate", "run"])
def test_a_bad_shards_value_stops_every_command_with_one_line_and_exit_2(tmp_path, monkeypatch, capsys, command):
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path)))
    config = sample_config(tmp_path, shards=0)
    assert main([command, "--config", str(config), *(["--output", str(tmp_path / "o")] if command == "run" else [])]) \
        == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"rag-eval: {config}, line ") and line.endswith(": shards must be an integer in [1, 1024], "
                                                                           "got 0")
    assert not (tmp_path / "o").exists()


def test_check_and_estimate_say_how_the_golden_set_splits(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DAGSTER_HOME", str(dagster_home(tmp_path)))
    config = sample_config(tmp_path, shards=3)
    # the sample's questions counted per shard with hashlib directly (first 16 hex digits = first 8 bytes)
    golden = pl.read_ndjson(yaml.safe_load(config.read_text(encoding="utf-8"))["golden"]["path"])["question_id"]
    sizes = [sum(1 for q in golden if int(hashlib.sha256(q.encode()).hexdigest()[:16], 16) % 3 == s) for s in range(3)]
    assert sum(sizes) == 52
    for command in ("check", "estimate"):
        assert main([command, "--config", str(config)]) == 0
        said = capsys.readouterr().out
        assert f"question shards: 3 (questions per shard: {sizes[0]}, {sizes[1]}, {sizes[2]})" in said


def test_denominators_consistent_fails_when_a_level_holds_fewer_questions_than_another():
    from rag_eval_pipeline.defs.metrics import denominators_consistent

    def summary(n_doc: int) -> pl.DataFrame:
        # recall@5 of one system, 7 of 8 questions relevant-found at each level: value = 7/8 (by hand)
        return pl.DataFrame({"system": ["s", "s"], "split": ["all", "all"], "segment": ["all", "all"],
                             "metric": ["recall", "recall"], "k": [5, 5], "level": ["chunk", "doc"],
                             "value": [7 / 8, 7 / n_doc], "numerator": [7.0, 7.0], "denominator": [8.0, float(n_doc)],
                             "n": [8, n_doc]})
    assert denominators_consistent(summary(8)).passed
    check = denominators_consistent(summary(7))  # each rate consistent alone; the doc level lost a question
    assert not check.passed
    assert check.metadata["levels_not_scored"].value == [
        {"system": "s", "problem": "questions_differ", "metric": "recall", "k": 5,
         "n_by_level": {"chunk": 8, "doc": 7}}]
