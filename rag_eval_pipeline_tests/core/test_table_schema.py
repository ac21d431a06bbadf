"""Tables declared as Arrow schemas: descriptions, nullability, and a version that moves with the columns."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest

from rag_eval_pipeline.core import table_schema
from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.storage import write_parquet_atomic
from rag_eval_pipeline.core.table_schema import TABLES, column, declare
from rag_eval_pipeline.core.tables import SCHEMAS, conform

REPO = Path(__file__).resolve().parents[2]


def test_every_column_of_every_table_has_a_one_line_description() -> None:
    assert len(TABLES) >= 15
    for spec in TABLES:
        assert isinstance(spec.schema, pa.Schema)
        for f in spec.schema:
            text = f.metadata[b"description"].decode()
            assert text.strip() and "\n" not in text, (spec.name, f.name)


def test_the_polars_schemas_are_the_arrow_declarations_read_by_polars() -> None:
    # Written out by hand from the declaration of rag_runs' first columns: Arrow large_string -> String,
    # large_list<struct<...>> -> List(Struct), int32 inside the struct kept.
    assert SCHEMAS["rag_runs"]["retrieved"] == pl.List(pl.Struct({"chunk_id": pl.String, "score": pl.Float64,
                                                                    "rank": pl.Int32}))
    assert SCHEMAS["metric_history"]["evaluated_at"] == pl.Datetime("us", "UTC")
    assert SCHEMAS["metric_history"]["night"] == pl.Date
    assert SCHEMAS["metric_summary"]["n"] == pl.Int64
    for spec in TABLES:
        assert list(SCHEMAS[spec.name]) == spec.schema.names


def test_a_null_in_a_column_declared_not_null_is_refused_before_writing(tmp_path) -> None:
    df = pl.DataFrame({"system": [None], "question_id": ["q1"], "split": ["dev"], "metric": ["recall"], "k": [5],
                       "value": [1.0], "numerator": [1.0], "denominator": [1.0], "status": ["ok"],
                       "ranking_mode": ["system"], "level": ["chunk"]}, schema=SCHEMAS["question_metrics"])
    target = tmp_path / "question_metrics.parquet"
    with pytest.raises(SchemaError, match=r"table 'question_metrics': column 'system' is declared not null "
                                          r"and holds null in 1 row\(s\)"):
        write_parquet_atomic(df, target, table="question_metrics")
    assert list(tmp_path.iterdir()) == []
    # a nullable column may hold null (value null = not evaluable)
    ok = df.with_columns(pl.lit("bm25").alias("system"), pl.lit(None, pl.Float64).alias("value"))
    assert conform(ok, "question_metrics")["value"].null_count() == 1


def test_an_undeclared_table_is_never_written(tmp_path) -> None:
    # the messages say what to do in a user's words, never which source file declares the tables
    with pytest.raises(SchemaError, match="'scratch' is not one of this pipeline's tables .*rename the file") as exc:
        write_parquet_atomic(pl.DataFrame({"a": [1]}), tmp_path / "x.parquet", table="scratch")
    assert "core/tables.py" not in str(exc.value)
    with pytest.raises(SchemaError, match="no table was named for this one") as exc:
        write_parquet_atomic(pl.DataFrame({"a": [1]}), tmp_path / "x.parquet")
    assert "core/tables.py" not in str(exc.value)
    assert list(tmp_path.iterdir()) == []


def test_the_polars_nested_types_are_derived_from_the_arrow_declaration() -> None:
    from rag_eval_pipeline.core import tables

    assert tables.RETRIEVED_HIT == pl.Struct({"chunk_id": pl.String, "score": pl.Float64, "rank": pl.Int32})
    assert tables.RELEVANT_ID == pl.Struct({"chunk_id": pl.String, "grade": pl.Int32})
    assert tables.RELEVANT_DOC == pl.Struct({"doc_id": pl.String, "grade": pl.Int32})
    assert tables.GOLDEN_CLAIM == pl.Struct({"claim_id": pl.String, "text": pl.String,
                                             "supporting": pl.List(pl.String), "importance": pl.String})
    assert tables.SCHEMAS["rag_runs"]["retrieved"] == pl.List(tables.RETRIEVED_HIT)


def test_a_declaration_needs_descriptions_and_a_version() -> None:
    with pytest.raises(ValueError, match="one non-empty line"):
        column("a", pa.int32(), "")
    with pytest.raises(ValueError, match="version must be an integer >= 1"):
        declare("scratch_table", 0, "nothing", [column("a", pa.int32(), "a")])
    with pytest.raises(ValueError, match="has no description"):
        declare("scratch_table", 1, "nothing", [pa.field("a", pa.int32())])
    assert "scratch_table" not in TABLES


def test_every_schema_matches_the_fingerprint_recorded_for_its_version() -> None:
    problems = table_schema.version_problems()
    assert problems == [], "\n".join(problems)


def _versions_with(tmp_path: Path, table: str, change) -> Path:
    recorded = json.loads(table_schema.VERSIONS_FILE.read_text())
    change(recorded[table][str(TABLES.get(table).version)])
    path = tmp_path / "table_versions.json"
    path.write_text(json.dumps(recorded))
    return path


def test_a_column_change_without_a_version_bump_fails_with_the_steps_to_bump(tmp_path) -> None:
    # As if question_metrics had gained a column since its current version was recorded: the recorded
    # fingerprint lacks its last column (level).
    v = TABLES.get("question_metrics").version
    path = _versions_with(tmp_path, "question_metrics", lambda fp: fp.pop())
    problems = table_schema.version_problems(path)
    assert len(problems) == 1
    msg = problems[0]
    assert msg.startswith("table 'question_metrics' changed its columns (now ['level: large_string']) "
                          f"but its schema version is still {v}")
    assert f"set version={v + 1} in declare('question_metrics', ...)" in msg
    assert f"| question_metrics | {v + 1} |" in msg and "docs/tables.md" in msg
    assert "python -m rag_eval_pipeline.core.table_schema --record" in msg
    # a type change is caught the same way
    path = _versions_with(tmp_path, "metric_summary", lambda fp: fp.__setitem__(4, "k: int64"))
    assert "was ['k: int64']" in table_schema.version_problems(path)[0]


def test_recording_never_rewrites_a_recorded_version(tmp_path) -> None:
    path = _versions_with(tmp_path, "gate_results", lambda fp: fp.pop())
    v = TABLES.get("gate_results").version
    with pytest.raises(SchemaError,
                       match=f"version {v} is recorded with other columns; to change table 'gate_results'"):
        table_schema.record(path)
    fresh = tmp_path / "fresh.json"
    added = table_schema.record(fresh)
    assert len(added) == len(TABLES) and f"metric_summary {TABLES.get('metric_summary').version}" in added
    assert table_schema.version_problems(fresh) == []


def test_the_changelog_has_a_row_for_every_recorded_table_version() -> None:
    text = (REPO / "docs" / "tables.md").read_text(encoding="utf-8")
    changelog = text.split("## Changelog", 1)[1].split("\n## ", 1)[0]
    rows = set(re.findall(r"^\| (\w+) \| (\d+) \|", changelog, flags=re.M))
    expected = {(name, v) for name, versions in table_schema.recorded_versions().items() for v in versions}
    assert expected - rows == set(), "add these rows to the changelog in docs/tables.md"
    assert {(spec.name, str(spec.version)) for spec in TABLES} <= rows
