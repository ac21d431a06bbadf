"""Table files: written with their Arrow schema and metadata, checked for their schema version when read."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rag_eval_pipeline.core.corpus import corpus_version
from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.storage import WriteContext, read_table, write_parquet_atomic
from rag_eval_pipeline.core.table_files import SchemaVersionError, read_file_metadata
from rag_eval_pipeline.core.table_schema import MIGRATIONS
from rag_eval_pipeline.core.tables import SCHEMAS, spec_of


def _snapshot() -> pl.DataFrame:
    text = "Returns are accepted within 30 days."
    return pl.DataFrame([{
        "chunk_id": "policy#0", "doc_id": "policy", "chunk_index": 0, "text": text, "title": "Returns",
        "source": "policy.md", "doc_type": "policy", "language": "en", "status": "active", "replaced_by": None,
        "acl": [], "valid_from": dt.date(2026, 1, 1), "valid_to": None,
        "sha256": hashlib.sha256(text.encode()).hexdigest()}], schema=SCHEMAS["corpus_snapshot"])


def _golden() -> pl.DataFrame:
    return pl.DataFrame([{
        "question_id": "q1", "golden_version": "g-1", "question": "How long can I return?",
        "answerability": "answerable", "relevant": [{"chunk_id": "policy#0", "grade": 1}],
        "reference_answer": "30 days", "claims": [], "split": "test", "segments": [], "user_groups": []}],
        schema=SCHEMAS["golden_set"])


def _labels() -> pl.DataFrame:
    row = {"system": "bm25", "question_id": "q1", "claim_id": "c0", "claim": "30 days", "verdict": "SUPPORTED",
           "quote": "30 days", "quote_found": True, "justification": "quoted", "judge": "rule_based",
           "judge_model": "rules-v2", "prompt_sha256": "ab" * 32, "repeat": 0, "error": None}
    return pl.DataFrame([row, {**row, "claim_id": "c1", "repeat": 1}], schema=SCHEMAS["judge_labels"])


def _question_metrics() -> pl.DataFrame:
    rows = [("recall", 5, 1.0, "ok"), ("answer_without_evidence_rate", None, None, "not_in_denominator"),
            ("faithfulness", None, 1.0, "ok")]
    return pl.DataFrame([{"system": "bm25", "question_id": "q1", "split": "test", "metric": m, "k": k, "value": v,
                          "numerator": v, "denominator": None if v is None else 1.0, "status": s,
                          "ranking_mode": "system" if m == "recall" else None} for m, k, v, s in rows],
                        schema=SCHEMAS["question_metrics"])


@pytest.fixture()
def run_folder(tmp_path):
    """A folder holding a run's upstream tables, written as the IO manager writes them."""
    ctx = WriteContext(run_id="run-1", suite="sample", lineage_dir=tmp_path)
    write_parquet_atomic(_snapshot(), tmp_path / "corpus_snapshot.parquet", "corpus_snapshot", ctx)
    write_parquet_atomic(_golden(), tmp_path / "golden_set.parquet", "golden_set", ctx)
    write_parquet_atomic(_labels(), tmp_path / "judge_labels.parquet", "judge_labels", ctx)
    return tmp_path


def test_a_file_carries_the_declared_arrow_schema_and_its_descriptions(run_folder) -> None:
    schema = pq.read_schema(run_folder / "golden_set.parquet")
    declared = spec_of("golden_set").schema
    assert schema.remove_metadata().equals(declared.remove_metadata(), check_metadata=True)
    assert schema.field("split").metadata[b"description"] == b"dev (tuning) or test (held out for accepting changes)"
    assert schema.field("question_id").nullable is False and schema.field("reference_answer").nullable is True
    # the Parquet schema itself says required / optional (what DuckDB and Spark read)
    parquet = pq.ParquetFile(run_folder / "golden_set.parquet").schema
    assert "required binary field_id=-1 question_id (String)" in str(parquet)
    assert "optional binary field_id=-1 reference_answer (String)" in str(parquet)


def test_provenance_comes_from_the_tables_that_define_it(run_folder) -> None:
    snapshot = read_file_metadata(run_folder / "corpus_snapshot.parquet")
    assert snapshot["rag_eval.corpus_version"] == corpus_version(_snapshot())
    assert "rag_eval.golden_version" not in snapshot and "rag_eval.judge" not in snapshot
    assert read_file_metadata(run_folder / "golden_set.parquet")["rag_eval.golden_version"] == "g-1"
    # two repeats of one judge key: one key
    key = [{"judge": "rule_based", "judge_model": "rules-v2", "prompt_sha256": "ab" * 32}]
    assert json.loads(read_file_metadata(run_folder / "judge_labels.parquet")["rag_eval.judge"]) == key

    ctx = WriteContext(run_id="run-1", suite="sample", lineage_dir=run_folder)
    out = write_parquet_atomic(_question_metrics(), run_folder / "question_metrics.parquet", "question_metrics", ctx)
    md = read_file_metadata(out)
    assert md["rag_eval.table"] == "question_metrics"
    assert md["rag_eval.schema_version"] == str(spec_of("question_metrics").version)
    assert (md["rag_eval.suite"], md["rag_eval.run_id"]) == ("sample", "run-1")
    assert md["rag_eval.corpus_version"] == corpus_version(_snapshot())
    assert md["rag_eval.golden_version"] == "g-1"
    assert json.loads(md["rag_eval.judge"]) == key
    assert dt.datetime.fromisoformat(md["rag_eval.written_at"]).tzinfo is not None
    columns = json.loads(md["rag_eval.columns"])
    assert list(columns) == list(SCHEMAS["question_metrics"])
    assert columns["value"].endswith("null = not evaluable (status says why), never 0")


def test_a_metric_table_carries_each_metrics_definition_and_public_source(run_folder) -> None:
    out = write_parquet_atomic(_question_metrics(), run_folder / "question_metrics.parquet", "question_metrics")
    metrics = json.loads(read_file_metadata(out)["rag_eval.metrics"])
    assert sorted(metrics) == ["answer_without_evidence_rate", "faithfulness", "recall"]
    # recall is trec_eval's m_recall.c; the abstention rate SQuAD 2.0's split; faithfulness Ragas'
    assert metrics["recall"]["definition"] == "share of a question's relevant chunks found in the top k"
    assert "m_recall.c" in metrics["recall"]["source"] and metrics["recall"]["family"] == "retrieval"
    assert "SQuAD 2.0" in metrics["answer_without_evidence_rate"]["source"]
    assert metrics["answer_without_evidence_rate"]["higher_is_better"] is False
    assert "Ragas" in metrics["faithfulness"]["source"] and metrics["faithfulness"]["judge_based"] is True


def test_the_writers_context_overrides_the_lookup(run_folder) -> None:
    ctx = WriteContext.of("run-2", "sample", run_folder, {
        "judge_key": {"judge": "openai_compatible", "judge_model": "m", "prompt_sha256": "cd" * 32}})
    empty = pl.DataFrame(schema=SCHEMAS["answer_quality"])
    md = read_file_metadata(write_parquet_atomic(empty, run_folder / "answer_quality.parquet", "answer_quality", ctx))
    assert json.loads(md["rag_eval.judge"]) == [{"judge": "openai_compatible", "judge_model": "m",
                                                 "prompt_sha256": "cd" * 32}]
    assert md["rag_eval.metrics"] == "{}" and md["rag_eval.run_id"] == "run-2"


def test_a_file_of_the_current_version_is_read_as_written(run_folder) -> None:
    df = read_table(run_folder / "judge_labels.parquet")
    assert df.schema == SCHEMAS["judge_labels"] and df["claim_id"].to_list() == ["c0", "c1"]
    assert read_table(run_folder / "judge_labels.parquet", "judge_labels", columns=["verdict"]).columns == ["verdict"]


def _current_footer(tmp_path, table: str) -> dict:
    return pq.read_schema(write_parquet_atomic(pl.DataFrame(schema=SCHEMAS[table]), tmp_path / "w.parquet",
                                               table)).metadata


def test_a_file_of_the_current_version_that_lacks_columns_or_holds_nulls_is_refused(tmp_path) -> None:
    # metadata says metric_summary's current version; the file holds only `system`, with a null in it (declared
    # not null)
    meta = _current_footer(tmp_path, "metric_summary")
    path = tmp_path / "metric_summary.parquet"
    pq.write_table(pa.table({"system": pa.array([None, "s"], pa.large_string())}).replace_schema_metadata(meta), path)
    v = spec_of("metric_summary").version
    with pytest.raises(SchemaVersionError, match=rf"schema version {v} \(the current one\): it lacks the column\(s\) "
                                                 r"\['split', 'segment', 'metric'"):
        read_table(path)
    with pytest.raises(SchemaVersionError, match="lacks the column"):  # also when reading one column only
        read_table(path, columns=["system"])
    # every column there, but a null in `system` and a NaN in `value`
    full = pl.DataFrame({c: pl.Series([None], dtype=t) for c, t in SCHEMAS["metric_summary"].items()}).to_arrow()
    pq.write_table(full.replace_schema_metadata(meta), path)
    with pytest.raises(SchemaVersionError, match="column 'system' is declared not null and holds null in 1 row"):
        read_table(path)
    with pytest.raises(SchemaVersionError, match="column 'system' is declared not null"):
        read_table(path, columns=["system", "value"])
    assert read_table(path, columns=["value"])["value"].to_list() == [None]  # `system` not read: not checked
    nan = pl.from_arrow(full).with_columns(pl.lit("s").alias("system"), pl.lit(float("nan")).alias("value"))
    pq.write_table(nan.to_arrow().replace_schema_metadata(meta), path)
    with pytest.raises(SchemaVersionError, match="column 'value' holds NaN in 1 row"):
        read_table(path, columns=["system", "value"])


def _runs(corpus: list[str], golden: list[str]) -> pl.DataFrame:
    rows = []
    for i, (c, g) in enumerate(zip(corpus, golden, strict=True)):
        row = dict.fromkeys(SCHEMAS["rag_runs"])
        row.update(system="s", question_id=f"q{i}", retrieved=[], decision="error", citations=[], corpus_version=c,
                   golden_version=g)
        rows.append(row)
    return pl.DataFrame(rows, schema=SCHEMAS["rag_runs"])


def test_the_file_metadata_describes_the_rows(run_folder) -> None:
    # the golden_set footer of the folder says g-1, the rows say C-new / G-new: the rows win
    out = write_parquet_atomic(_runs(["C-new"], ["G-new"]), run_folder / "rag_runs.parquet", "rag_runs",
                               WriteContext(lineage_dir=run_folder))
    md = read_file_metadata(out)
    assert (md["rag_eval.corpus_version"], md["rag_eval.golden_version"]) == ("C-new", "G-new")
    before = out.read_bytes()
    # the writer's context disagrees with the rows: refused, nothing written
    with pytest.raises(SchemaError, match="the rows say corpus_version 'C-new' but the writer says 'C-old'"):
        write_parquet_atomic(_runs(["C-new"], ["G-new"]), out, "rag_runs",
                             WriteContext(corpus_version="C-old", golden_version="G-new"))
    with pytest.raises(SchemaError, match=r"column 'golden_version' holds several values \['G-a', 'G-b'\]"):
        write_parquet_atomic(_runs(["C", "C"], ["G-a", "G-b"]), out, "rag_runs")
    assert out.read_bytes() == before


def test_a_table_of_several_runs_says_the_writing_runs_versions(tmp_path) -> None:
    row = {**dict.fromkeys(SCHEMAS["metric_history"]), "evaluated_at": dt.datetime(2026, 12, 1, tzinfo=dt.UTC),
           "night": dt.date(2026, 12, 1), "system": "s", "metric": "recall"}
    history = pl.DataFrame([{**row, "run_id": "r1", "corpus_version": "C1", "golden_version": "G1"},
                            {**row, "run_id": "r2", "corpus_version": "C2", "golden_version": "G1"}],
                           schema=SCHEMAS["metric_history"])
    path = tmp_path / "metric_history.parquet"
    out = write_parquet_atomic(history, path, "metric_history", WriteContext(corpus_version="C2", golden_version="G1"))
    md = read_file_metadata(out)
    assert (md["rag_eval.corpus_version"], md["rag_eval.golden_version"]) == ("C2", "G1")
    with pytest.raises(SchemaError, match="this run's corpus_version 'C3' is in none of the rows"):
        write_parquet_atomic(history, path, "metric_history", WriteContext(corpus_version="C3"))


def test_a_file_written_before_versions_is_migrated_with_one_line(tmp_path) -> None:
    path = tmp_path / "rag_runs.parquet"
    old = pl.DataFrame([{"system": "s", "question_id": "q1", "retrieved": [], "decision": "abstain", "answer": None,
                         "citations": [], "error": None, "corpus_version": "c", "golden_version": "g",
                         "retriever": None, "generator": None, "model": None, "prompt_version": None}],
                       schema={c: t for c, t in SCHEMAS["rag_runs"].items() if c not in
                               ("latency_ms", "system_version", "trace_id", "decision_rule")})
    old.write_parquet(path)  # polars alone: no rag_eval metadata, as every file before schema versions
    messages = []
    df = read_table(path, "rag_runs", on_migrate=messages.append)
    assert df.schema == SCHEMAS["rag_runs"] and df["latency_ms"].to_list() == [None]
    assert messages == [f"file {path}: table 'rag_runs' has schema version 0, this pipeline reads version 1 "
                        "(written before schema versions): migrated on read (added as null: ['latency_ms', "
                        "'system_version', 'trace_id', 'decision_rule']); the next write stores version 1"]


def test_a_file_that_cannot_be_migrated_is_refused_naming_the_file_and_both_versions(tmp_path) -> None:
    path = tmp_path / "question_metrics.parquet"
    _question_metrics().drop("status").write_parquet(path)  # status is declared not null: no default for it
    with pytest.raises(SchemaVersionError) as err:
        read_table(path)
    v = spec_of("question_metrics").version
    assert str(err.value) == (f"file {path}: table 'question_metrics' has schema version 0, this pipeline reads "
                              f"version {v} and cannot be migrated: it lacks the not-null column(s) ['status']; "
                              "re-run the evaluation to rewrite it")
    assert isinstance(err.value, InputError) and isinstance(err.value, SchemaError)
    _question_metrics().with_columns(pl.col("k").cast(pl.Utf8)).write_parquet(path)  # a type nobody migrates
    with pytest.raises(SchemaVersionError, match="cannot be migrated .*column 'k' has dtype String, expected Int32"):
        read_table(path)


def _with_metadata(path, **changes: str) -> None:
    table = pq.read_table(path)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items() if k != b"ARROW:schema"}
    meta.update({f"rag_eval.{k}": v for k, v in changes.items()})
    pq.write_table(table.replace_schema_metadata(meta), path)


def test_a_newer_version_or_another_table_is_refused(run_folder) -> None:
    from rag_eval_pipeline.core.tables import spec_of

    path = run_folder / "golden_set.parquet"
    v = spec_of("golden_set").version
    _with_metadata(path, schema_version=str(v + 1), product_version="9.9.9")
    with pytest.raises(SchemaVersionError, match=r"^file .*golden_set.parquet: table 'golden_set' has schema version "
                                                 rf"{v + 1}, this pipeline reads version {v}: written by a newer "
                                                 r"release \(9.9.9\)"):
        read_table(path)
    _with_metadata(path, schema_version=str(v), table="rag_runs")
    with pytest.raises(SchemaVersionError, match="holds table 'rag_runs', expected 'golden_set'"):
        read_table(path, "golden_set")
    path.write_bytes(b"not parquet")
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_table(path, "golden_set")


def test_a_registered_migration_runs_before_the_null_fill(tmp_path, monkeypatch) -> None:
    # as if ppi_estimates version 0 had called the interval columns lo / hi
    monkeypatch.setitem(MIGRATIONS, ("ppi_estimates", 0),
                        lambda df: df.rename({"lo": "ci_low", "hi": "ci_high"}))
    path = tmp_path / "ppi_estimates.parquet"
    pl.DataFrame({"system": ["s"], "rate": ["attributable"], "estimate": [0.5], "lo": [0.25], "hi": [0.75],
                  "judge_rate": [0.6], "n_labelled": [10], "n_unlabelled": [90], "reason": ["ok"]}).write_parquet(path)
    messages = []
    df = read_table(path, on_migrate=messages.append)
    assert df.row(0, named=True)["ci_low"] == 0.25 and df.row(0, named=True)["ci_high"] == 0.75
    assert "migrated on read (0->1: <lambda>)" in messages[0]


def test_the_arrow_table_is_what_pyarrow_reads_back(run_folder) -> None:
    table = pq.read_table(run_folder / "judge_labels.parquet")
    assert table.schema.field("repeat").type == pa.int32()
    assert pl.from_arrow(table).equals(_labels())


def test_a_golden_set_of_version_1_is_read_with_claim_importance_null(tmp_path) -> None:
    """golden_set 2 added ``importance`` inside each claim: a version 1 file (claims without it) is migrated on
    read, the field null (= vital), every other value as written."""
    row = _golden().head(1).to_dicts()[0]
    row["claims"] = [{"claim_id": "c1", "text": "30 days", "supporting": ["pol#0"]}]
    cols = {k: [v] for k, v in row.items()}
    table = pl.DataFrame(cols, schema={**SCHEMAS["golden_set"], "claims": pl.List(pl.Struct(
        {"claim_id": pl.Utf8, "text": pl.Utf8, "supporting": pl.List(pl.Utf8)}))}).to_arrow()
    assert table.schema.field("claims").type.value_type.names == ["claim_id", "text", "supporting"]
    meta = {"rag_eval.table": "golden_set", "rag_eval.schema_version": "1"}
    path = tmp_path / "golden_set.parquet"
    pq.write_table(table.replace_schema_metadata(meta), path)
    got = read_table(path, "golden_set")
    assert got["claims"].to_list() == [[{"claim_id": "c1", "text": "30 days", "supporting": ["pol#0"],
                                          "importance": None}]]
    assert got["question_id"].to_list() == [row["question_id"]]
