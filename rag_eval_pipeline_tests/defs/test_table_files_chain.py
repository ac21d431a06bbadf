"""The sample suite's full and quick evaluations, then every Parquet file they wrote: its metadata, and the
same rows, types and metadata through DuckDB, pyarrow and polars; the docs page's snippets run on it;
readers refuse or migrate a file of another schema version (IO manager, ``rag-eval label``)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from polars.testing import assert_frame_equal

from rag_eval_pipeline.core.metrics.names import METRICS
from rag_eval_pipeline.core.suites import load_suites
from rag_eval_pipeline.core.tables import TABLES, spec_of
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline.defs.location import build_definitions, check_suite
from rag_eval_pipeline_tests.conftest import REPO_ROOT

pytestmark = pytest.mark.slow

COMMON = ("table", "schema_version", "description", "columns", "product_version", "written_at", "suite", "run_id")


def _definitions(out: Path) -> dg.Definitions:
    suites = [s for s in load_suites(REPO_ROOT / "data" / "suites.yaml") if s.name == "sample"]
    return build_definitions([check_suite(s) for s in suites], output_dir=str(out), judge=JudgeResource())


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """Output folder, full run, quick run (one ephemeral instance)."""
    out = tmp_path_factory.mktemp("tables_out")
    defs = _definitions(out)
    instance = dg.DagsterInstance.ephemeral()
    full = defs.resolve_job_def("sample__full_evaluation").execute_in_process(instance=instance)
    quick = defs.resolve_job_def("sample__quick_evaluation").execute_in_process(instance=instance)
    assert full.success and quick.success
    return out / "sample", full, quick


def _files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.parquet"))


def _meta(path: Path) -> dict[str, str]:
    raw = pq.read_metadata(path).metadata
    return {k.decode(): v.decode() for k, v in raw.items() if k != b"ARROW:schema"}


FAMILY_TABLES = ("citation_claims", "citations", "nugget_labels")


def test_every_parquet_file_of_a_run_carries_its_metadata(sample) -> None:
    folder, full, quick = sample
    files = _files(folder)
    # the tables of both runs, the promoted baseline and the full run's per-question archive
    assert {p.relative_to(folder).parent.as_posix() for p in files} == {".", "quick", "baseline",
                                                                        f"history/{full.run_id}"}
    assert len(files) >= 30
    snapshot_md = [e.materialization.metadata for e in full.get_asset_materialization_events()
                   if e.asset_key == dg.AssetKey(["sample", "corpus_snapshot"])][0]
    corpus = snapshot_md["corpus_version"].value  # the corpus asset's own hash
    golden = pl.read_parquet(folder / "golden_set.parquet")["golden_version"].unique().to_list()
    labels = pl.read_parquet(folder / "judge_labels.parquet")
    judge = [dict(zip(("judge", "judge_model", "prompt_sha256"), r))
             for r in labels.select("judge", "judge_model", "prompt_sha256").unique().rows()]
    assert len(golden) == 1 and len(judge) == 1
    for path in files:
        md = {k.removeprefix("rag_eval."): v for k, v in _meta(path).items()}
        spec = TABLES.get(path.stem)
        where = path.relative_to(folder)
        for key in COMMON:
            assert md.get(key), (where, key)
        assert md["table"] == path.stem and md["schema_version"] == str(spec.version), where
        assert md["suite"] == "sample"
        assert md["run_id"] == (quick.run_id if where.parts[0] == "quick" else full.run_id), where
        assert set(json.loads(md["columns"])) == set(spec.schema.names)
        assert md["corpus_version"] == corpus, where
        assert ("golden_version" in md) == (path.stem != "corpus_snapshot")
        if "golden_version" in md:
            assert md["golden_version"] == golden[0], where
        assert ("judge" in md) == ("judge" in spec.depends_on), where
        if "judge" in md and path.stem in FAMILY_TABLES:
            # a verdict family's table names the judge key of its own rows (the family's prompt hash)
            rows = pl.read_parquet(path, columns=["judge", "judge_model", "prompt_sha256"]).unique()
            assert json.loads(md["judge"]) == [dict(zip(("judge", "judge_model", "prompt_sha256"), r))
                                               for r in rows.rows()], where
        elif "judge" in md:
            assert json.loads(md["judge"]) == judge, where
        assert ("metrics" in md) == ("metric" in spec.schema.names), where
        if "metrics" in md:
            names = set(pl.read_parquet(path, columns=["metric"])["metric"].unique().to_list()) & set(METRICS.names())
            defs = json.loads(md["metrics"])
            assert set(defs) == names, where
            assert all(d["definition"] and d["source"] for d in defs.values())
        # the Arrow schema with one description per column
        schema = pq.read_schema(path)
        assert schema.names == spec.schema.names
        assert all(f.metadata and f.metadata[b"description"] for f in schema), where
    summary = json.loads(_meta(folder / "metric_summary.parquet")["rag_eval.metrics"])
    assert summary["answer_without_evidence_rate"]["definition"] == "absent questions answered anyway"


_DUCKDB_TYPES = {pa.large_string(): "VARCHAR", pa.int32(): "INTEGER", pa.int64(): "BIGINT", pa.float64(): "DOUBLE",
                 pa.bool_(): "BOOLEAN", pa.date32(): "DATE", pa.timestamp("us", tz="UTC"): "TIMESTAMP WITH TIME ZONE"}


def _duckdb_type(tp: pa.DataType) -> str:
    """DuckDB's name of an Arrow type, per DuckDB's documented Parquet/Arrow type mapping."""
    if pa.types.is_large_list(tp):
        return _duckdb_type(tp.value_type) + "[]"
    if pa.types.is_struct(tp):
        return "STRUCT(" + ", ".join(f"{f.name} {_duckdb_type(f.type)}" for f in tp) + ")"
    return _DUCKDB_TYPES[tp]


def test_duckdb_pyarrow_and_polars_read_the_same_rows_types_and_metadata(sample) -> None:
    folder, _, _ = sample
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for path in _files(folder):
        spec = TABLES.get(path.stem)
        where = str(path.relative_to(folder))
        by_polars = pl.read_parquet(path)
        by_pyarrow = pl.from_arrow(pq.read_table(path))
        by_duckdb = pl.from_arrow(con.sql(f"SELECT * FROM read_parquet('{path}')").to_arrow_table())
        assert_frame_equal(by_pyarrow, by_polars)
        assert_frame_equal(by_duckdb, by_polars)
        assert by_polars.schema == spec.polars, where
        described = {name: tp.replace('"', "") for name, tp in con.execute(  # DuckDB quotes a keyword ("text")
            "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))", [str(path)]).fetchall()}
        assert described == {f.name: _duckdb_type(f.type) for f in spec.schema}, where
        repetition = dict(con.execute("SELECT name, repetition_type FROM parquet_schema(?) WHERE name IN "
                                      "(SELECT unnest(?))", [str(path), spec.schema.names]).fetchall())
        for f in spec.schema:
            if not pa.types.is_large_list(f.type):  # a list's own name repeats inside it
                assert repetition[f.name] == ("OPTIONAL" if f.nullable else "REQUIRED"), (where, f.name)
        kv = {k.decode(): v.decode() for k, v in con.execute(
            "SELECT key, value FROM parquet_kv_metadata(?)", [str(path)]).fetchall() if k != b"ARROW:schema"}
        polars_kv = {k: v for k, v in pl.read_parquet_metadata(path).items() if k != "ARROW:schema"}
        assert kv == polars_kv == _meta(path), where
        assert pq.read_schema(path).equals(pq.read_table(path).schema, check_metadata=True)


def test_the_reading_page_snippets_run_on_a_sample_run(sample, tmp_path, monkeypatch) -> None:
    """docs/tables.md's Python blocks run from a folder whose outputs/sample is this run's; the SQL block
    runs in DuckDB."""
    folder, full, _ = sample
    text = (REPO_ROOT / "docs" / "tables.md").read_text(encoding="utf-8")
    page = text.split("## Reading the tables", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(python|sql)\n(.*?)```", page, flags=re.S)
    assert [lang for lang, _ in blocks] == ["python", "sql", "python", "python"]
    (tmp_path / "outputs").mkdir()
    shutil.copytree(folder, tmp_path / "outputs" / "sample")
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    for lang, code in blocks:
        if lang == "python":
            with contextlib.redirect_stdout(printed):
                exec(compile(code, "docs/tables.md", "exec"), {})
        else:
            rows = duckdb.sql(code).fetchall()
            assert rows == [(METRICS.get("recall").definition, METRICS.get("recall").source)]
    out = printed.getvalue()
    golden = pl.read_parquet(folder / "golden_set.parquet")["golden_version"][0]
    assert f"metric_summary {spec_of('metric_summary').version} {golden}" in out  # the DuckDB block's metadata line
    assert METRICS.get("recall").definition in out
    assert "rows not evaluable: the metric's value" in out  # polars: the value column's description
    assert "value double null allowed - the metric's value" in out  # pandas: type, nullability, description
    assert "status large_string never null - ok, or why value is null" in out
    assert "rows; suite sample" in out


def _rewrite(path: Path, **changes: str) -> None:
    table = pq.read_table(path)
    meta = {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items() if k != b"ARROW:schema"}
    meta.update({f"rag_eval.{k}": v for k, v in changes.items()})
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_the_io_manager_migrates_an_older_file_and_refuses_a_newer_one(sample, tmp_path) -> None:
    folder, _, _ = sample
    out = tmp_path / "copy"
    shutil.copytree(folder, out / "sample")
    defs = _definitions(out)
    job = defs.resolve_job_def("sample__full_evaluation")
    golden = out / "sample" / "golden_set.parquet"
    rag_runs = [dg.AssetKey(["sample", "rag_runs"])]
    # a golden set written before schema versions (polars alone, no metadata): migrated, with one line
    pl.read_parquet(golden).write_parquet(golden)
    instance = dg.DagsterInstance.ephemeral()
    result = job.execute_in_process(instance=instance, asset_selection=rag_runs)
    assert result.success
    warnings = [(e.step_key, e.user_message) for e in instance.all_logs(result.run_id)
                if "migrated on read" in (e.user_message or "")]
    # one line per step that loaded it: rag_runs and the check beside it (step keys carry the suite, defs/scope.py)
    assert sorted(k for k, _ in warnings) == ["sample__rag_runs", "sample__rag_runs_every_question_has_a_run_row"]
    v = spec_of("golden_set").version
    assert {m for _, m in warnings} == {
        f"file {golden}: table 'golden_set' has schema version 0, this pipeline reads version {v} (written before "
        f"schema versions): migrated on read (1->2: _claims_with_importance); the next write stores version {v}"}
    # a golden set of a newer schema version: the step fails naming the file and both versions
    _rewrite(golden, table="golden_set", schema_version="7", product_version="9.0.0")
    result = job.execute_in_process(instance=instance, asset_selection=rag_runs, raise_on_error=False)
    assert not result.success
    failure = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"][0]
    error = failure.step_failure_data.error
    assert 'loading input "golden_set" of step "sample__rag_runs"' in error.message and error.cause.cls_name == \
        "SchemaVersionError"
    assert error.cause.message.strip() == (
        f"rag_eval_pipeline.core.table_files.SchemaVersionError: file {golden}: table 'golden_set' has schema "
        f"version 7, this pipeline reads version {v}: written by a newer release (9.0.0); read it with that release "
        "or re-run the evaluation")


def test_rag_eval_label_refuses_a_table_of_another_version_in_one_line(sample, tmp_path) -> None:
    folder, _, _ = sample
    out = tmp_path / "sample"
    shutil.copytree(folder, out)
    v = spec_of("judge_labels").version
    _rewrite(out / "judge_labels.parquet", schema_version=str(v + 1))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "label", "--suite", "sample", "--output",
                           str(out), "--labeller", "t", "--port", "1"], cwd=REPO_ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval label: file {out / 'judge_labels.parquet'}: table 'judge_labels' has schema version {v + 1}, "
        f"this pipeline reads version {v}: written by a newer release (0.1.0); read it with that release or re-run the "
        "evaluation"]


def test_rag_eval_compare_migrates_an_older_table_and_refuses_a_newer_one(sample, tmp_path) -> None:
    folder, _, _ = sample
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}

    def compare() -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "compare", f"dir:{copy}:bm25_k5",
                               f"dir:{copy}:bm25_k10", "--permutations", "50", "--out", str(tmp_path / "pages")],
                              cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)

    question_metrics = copy / "question_metrics.parquet"
    pl.read_parquet(question_metrics).write_parquet(question_metrics)  # as written before schema versions
    proc = compare()
    assert proc.returncode == 0, proc.stderr
    # one line per side (both sides read this folder)
    v = spec_of("question_metrics").version
    assert [line for line in proc.stderr.splitlines() if "migrated on read" in line] == 2 * [
        f"file {question_metrics}: table 'question_metrics' has schema version 0, this pipeline reads version {v} "
        "(written before schema versions): migrated on read (its columns already match); the next write stores "
        f"version {v}"]
    _rewrite(copy / "metric_summary.parquet", schema_version="5")
    proc = compare()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval compare: file {copy / 'metric_summary.parquet'}: table 'metric_summary' has schema version 5, this "
        f"pipeline reads version {spec_of('metric_summary').version}: written by a newer release (0.1.0); read it "
        "with that release or re-run the evaluation"]
