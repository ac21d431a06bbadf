"""Every persisted table has a declared schema, and a write with a wrong column or type is refused."""

from __future__ import annotations

import datetime as dt

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.storage import write_parquet_atomic
from rag_eval_pipeline.core.tables import SCHEMAS, conform

#: Tables that were persisted without a declared schema; each must now be checked on write.
PERSISTED = ("answer_quality", "judge_calibration", "judge_variance", "metric_history", "regression_cases",
             "calibration_history", "ppi_estimates")

_SAMPLE = {pl.Utf8: "x", pl.Int32: 1, pl.Int64: 1, pl.Float64: 0.5, pl.Boolean: True, pl.Date: dt.date(2026, 1, 1)}


def _one_row(table: str) -> pl.DataFrame:
    row = {}
    for name, dtype in SCHEMAS[table].items():
        row[name] = (dt.datetime(2026, 1, 1, tzinfo=dt.UTC) if isinstance(dtype, pl.Datetime)
                     else _SAMPLE[dtype])
    return pl.DataFrame([row], schema=SCHEMAS[table])


@pytest.mark.parametrize("table", PERSISTED)
def test_a_valid_row_is_written(tmp_path, table) -> None:
    path = write_parquet_atomic(_one_row(table), tmp_path / f"{table}.parquet", table=table)
    assert pl.read_parquet(path).schema == SCHEMAS[table]


@pytest.mark.parametrize("table", PERSISTED)
def test_a_wrong_type_is_refused_before_writing(tmp_path, table) -> None:
    df = _one_row(table)
    column = next(c for c, t in SCHEMAS[table].items() if t != pl.Utf8)
    bad = df.with_columns(pl.col(column).cast(pl.Utf8))
    target = tmp_path / f"{table}.parquet"
    with pytest.raises(SchemaError, match=rf"table '{table}': column '{column}' has dtype"):
        write_parquet_atomic(bad, target, table=table)
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("table", PERSISTED)
def test_a_missing_or_extra_column_is_refused(tmp_path, table) -> None:
    df = _one_row(table)
    first = df.columns[0]
    with pytest.raises(SchemaError, match=rf"table '{table}': missing columns \['{first}'\]"):
        write_parquet_atomic(df.drop(first), tmp_path / "t.parquet", table=table)
    with pytest.raises(SchemaError, match=r"unexpected columns \['surprise'\]"):
        conform(df.with_columns(pl.lit(1).alias("surprise")), table)


def test_producers_build_the_declared_schemas() -> None:
    from rag_eval_pipeline.core.answer_quality import _SCHEMA as QUALITY
    from rag_eval_pipeline.core.metrics.calibration import HISTORY_SCHEMA, TABLE_SCHEMA
    from rag_eval_pipeline.core.metrics.variance import variance_table

    assert dict(SCHEMAS["answer_quality"]) == dict(QUALITY)
    assert SCHEMAS["calibration_history"] == HISTORY_SCHEMA
    assert SCHEMAS["judge_calibration"] == TABLE_SCHEMA
    assert variance_table(pl.DataFrame(schema=SCHEMAS["judge_labels"])).schema == SCHEMAS["judge_variance"]


def test_every_parquet_asset_has_a_declared_schema() -> None:
    """The IO manager checks a frame against SCHEMAS[asset name]; an undeclared asset would go unchecked."""
    from rag_eval_pipeline.definitions import defs

    parquet_assets = set()
    for spec in defs.resolve_all_asset_specs():
        if "parquet" in spec.kinds:
            parquet_assets.add(spec.key.path[-1])
    assert parquet_assets, "no parquet asset found"
    assert sorted(parquet_assets - set(SCHEMAS)) == []


def test_a_list_of_structs_written_before_a_field_existed_gets_it_as_null():
    """golden_set claims without ``importance`` (a frame built before the field existed) conform, the missing
    field null; any other struct mismatch is still an error."""
    import polars as pl

    from rag_eval_pipeline.core.errors import SchemaError
    from rag_eval_pipeline.core.tables import SCHEMAS, conform

    row = {"question_id": "q", "golden_version": "g", "question": "?", "answerability": "answerable",
           "relevant": [], "reference_answer": None, "split": "dev", "segments": [], "user_groups": []}
    schema = {k: v for k, v in SCHEMAS["golden_set"].items() if k != "claims"}
    df = pl.DataFrame([row], schema=schema).with_columns(
        pl.Series("claims", [[{"claim_id": "c1", "text": "t", "supporting": ["a#0"]}]]))
    out = conform(df, "golden_set")
    assert out["claims"].to_list() == [[{"claim_id": "c1", "text": "t", "supporting": ["a#0"], "importance": None}]]
    bad = df.with_columns(pl.Series("claims", [[{"claim_id": "c1", "text": 3, "supporting": ["a#0"]}]]))
    with pytest.raises(SchemaError, match="claims"):
        conform(bad, "golden_set")
