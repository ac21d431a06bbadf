"""What a Parquet file of the pipeline says about itself, and how a file is checked when it is read.

Every table file is written through pyarrow with the table's Arrow schema (types, nullability, a
one-line description per column in the field metadata) and file-level key-value metadata, all keys
prefixed ``rag_eval.`` (values are UTF-8 strings; JSON where noted):

``table``, ``schema_version`` (integer), ``description`` (what one row is), ``columns`` (JSON
``{column: description}``, for readers that ignore the Arrow schema: DuckDB, Spark), ``product_version``
(the ``rag_eval_pipeline`` package version), ``written_at`` (ISO 8601 UTC), ``suite`` and ``run_id``
(the Dagster run that wrote the file; empty outside a suite or a run); where the table depends on them
(``TableSpec.depends_on``): ``corpus_version``, ``golden_version`` and ``judge`` (JSON list of
``{judge, judge_model, prompt_sha256}``); for a table with a ``metric`` column, ``metrics`` (JSON
``{metric: {family, definition, source, judge_based, higher_is_better}}`` for every registered metric
in the file, from ``core/metrics/names.py``). An empty value means "not known to the writer".

Provenance is resolved per key, first found wins: the writer's :class:`WriteContext` (the asset's own
metadata), the table that defines the key (``corpus_snapshot`` → corpus version, ``golden_set`` →
golden version, ``judge_labels`` / ``answer_judgements`` → judge keys, from their rows), the footer of
that defining table in the run's folder (``WriteContext.lineage_dir``: the files this run read), then
the table's own column when it holds one value.

Reading (:func:`check_and_read`): a file of the table's current schema version is read as is; an
older one is migrated (registered ``@migration`` steps, then missing nullable columns added as null)
with a one-line message naming the file and both versions; a file of a newer version, of another
table, or one that cannot be migrated is refused with :class:`SchemaVersionError`. A file without the
metadata (written before schema versions existed) is version 0. Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.table_schema import MIGRATIONS, TableSpec, conform
from rag_eval_pipeline.core.tables import spec_of  # importing tables declares every table

PREFIX = "rag_eval."
JUDGE_FIELDS = ("judge", "judge_model", "prompt_sha256")
#: The table whose rows define each provenance key.
DEFINED_BY = {"corpus": "corpus_snapshot", "golden": "golden_set", "judge": "judge_labels"}
_JUDGE_TABLES = ("judge_labels", "answer_judgements")
log = logging.getLogger("rag_eval_pipeline.tables")


class SchemaVersionError(InputError, SchemaError):
    """A table file written with another schema version (or holding another table) that cannot be read
    as the current version. The message names the file and both versions."""


@dataclass(frozen=True)
class WriteContext:
    """What the writer knows about a file it writes. ``run_id``: the Dagster run id; ``suite``: the
    suite name; ``lineage_dir``: the folder of the run's upstream tables (their footers give the
    corpus and golden versions and the judge key); the rest override the lookup when given."""

    run_id: str = ""
    suite: str = ""
    lineage_dir: Path | None = None
    corpus_version: str | None = None
    golden_version: str | None = None
    judge: tuple[tuple[str | None, str | None, str | None], ...] | None = None

    @classmethod
    def of(cls, run_id: str | None, suite: str | None, lineage_dir: str | Path | None,
           metadata: Mapping[str, Any] | None = None) -> WriteContext:
        """A context from a step: ``metadata`` is the asset's output metadata, read for ``corpus_version``,
        ``golden_version`` and ``judge_key`` (a ``{judge, judge_model, prompt_sha256}`` mapping or a list of
        them); values may be wrapped (anything with ``.value``). Never raises for odd metadata."""
        md = {k: getattr(v, "value", v) for k, v in (metadata or {}).items()}
        judge = md.get("judge_key")
        if isinstance(judge, Mapping):
            judge = [judge]
        keys = None
        if isinstance(judge, list) and all(isinstance(j, Mapping) for j in judge):
            keys = tuple(sorted({_judge_key(j) for j in judge},
                                key=lambda t: tuple(x or "" for x in t)))
        return cls(run_id=run_id or "", suite=suite or "", lineage_dir=Path(lineage_dir) if lineage_dir else None,
                   corpus_version=_str_or_none(md.get("corpus_version")),
                   golden_version=_str_or_none(md.get("golden_version")), judge=keys)


def _judge_key(entry: Mapping[str, Any]) -> tuple[str | None, str | None, str | None]:
    """(judge, judge_model, prompt_sha256) of one ``judge_key`` entry of a file's metadata."""
    judge, model, prompt = (_str_or_none(entry.get(f)) for f in JUDGE_FIELDS)
    return judge, model, prompt


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


@lru_cache(maxsize=1)
def product_version() -> str:
    """The installed ``rag_eval_pipeline`` version ("unknown" when it is not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rag_eval_pipeline")
    except PackageNotFoundError:
        return "unknown"


def read_file_metadata(path: str | Path) -> dict[str, str]:
    """The file-level key-value metadata of a Parquet file (decoded; the ``ARROW:schema`` blob left out).

    Reads the footer only. Raises InputError naming the file when it is not a readable Parquet file."""
    try:
        raw = pq.read_schema(path).metadata or {}
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file ({type(exc).__name__}: {exc})", path=str(path)) from None
    return {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items() if k != b"ARROW:schema"}


def _footer(folder: Path | None, table: str, key: str) -> str | None:
    if folder is None:
        return None
    path = folder / f"{table}.parquet"
    if not path.is_file():
        return None
    try:
        return read_file_metadata(path).get(PREFIX + key)
    except InputError:
        return None


def _single(df: pl.DataFrame, name: str) -> str | None:
    if name not in df.columns:
        return None
    values = df[name].drop_nulls().unique()
    return str(values[0]) if values.len() == 1 else None


def _judge_keys(df: pl.DataFrame) -> list[dict[str, str | None]] | None:
    sha = "prompt_sha256" if "prompt_sha256" in df.columns else "judge_prompt_sha256"
    if not {"judge", "judge_model", sha} <= set(df.columns) or not df.height:
        return None
    rows = df.select("judge", "judge_model", sha).unique().sort(pl.all(), nulls_last=True).rows()
    return [dict(zip(JUDGE_FIELDS, r)) for r in rows]


def provenance(df: pl.DataFrame, spec: TableSpec, ctx: WriteContext) -> dict[str, str]:
    """The ``corpus_version``, ``golden_version`` and ``judge`` keys (without prefix) that ``spec`` depends
    on, resolved as the module docstring says; "" (or "[]" for judge) when nothing knows them."""
    out: dict[str, str] = {}
    if "corpus" in spec.depends_on:
        value = ctx.corpus_version
        if value is None and spec.name == DEFINED_BY["corpus"]:
            from rag_eval_pipeline.core.corpus import corpus_version

            value = corpus_version(df)
        if value is None and spec.name != DEFINED_BY["corpus"]:
            value = _footer(ctx.lineage_dir, DEFINED_BY["corpus"], "corpus_version")
        out["corpus_version"] = value or _single(df, "corpus_version") or ""
    if "golden" in spec.depends_on:
        value = ctx.golden_version
        if spec.name == DEFINED_BY["golden"]:
            value = value or _single(df, "golden_version")
        elif value is None:
            value = _footer(ctx.lineage_dir, DEFINED_BY["golden"], "golden_version")
        out["golden_version"] = value or _single(df, "golden_version") or ""
    if "judge" in spec.depends_on:
        keys = _judge_keys(df) if spec.name in _JUDGE_TABLES else None
        if keys is None and ctx.judge is not None:
            keys = [dict(zip(JUDGE_FIELDS, k)) for k in ctx.judge]
        text = None if keys is None else json.dumps(keys, sort_keys=True)
        if text is None and spec.name not in _JUDGE_TABLES:
            text = _footer(ctx.lineage_dir, DEFINED_BY["judge"], "judge")
        if text is None:
            keys = _judge_keys(df)
            text = json.dumps(keys or [], sort_keys=True)
        out["judge"] = text
    return out


def metric_definitions(df: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """``{metric: {family, definition, source, judge_based, higher_is_better}}`` for every registered
    metric named in ``df["metric"]`` (names the registry does not know, e.g. ``versions``, are left out)."""
    from rag_eval_pipeline.core.metrics.names import metric_info

    out = {}
    for name in sorted(df["metric"].drop_nulls().unique().to_list()):
        info = metric_info(name)
        if info is not None:
            out[name] = {"family": info.family, "definition": info.definition, "source": info.source,
                         "judge_based": info.judge_based, "higher_is_better": info.higher_is_better}
    return out


def file_metadata(df: pl.DataFrame, table: str, ctx: WriteContext | None = None) -> dict[str, str]:
    """Every ``rag_eval.*`` key a file of ``table`` holding ``df`` carries (the module docstring lists them).

    Raises SchemaError for an undeclared table."""
    spec = spec_of(table)
    ctx = ctx or WriteContext()
    md = {
        "table": spec.name,
        "schema_version": str(spec.version),
        "description": spec.description,
        "columns": json.dumps({f.name: spec.describe(f.name) for f in spec.schema}),
        "product_version": product_version(),
        "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "suite": ctx.suite,
        "run_id": ctx.run_id,
        **provenance(df, spec, ctx),
    }
    if spec.metric_table:
        md["metrics"] = json.dumps(metric_definitions(df), sort_keys=True)
    return {PREFIX + k: v for k, v in md.items()}


def to_arrow(df: pl.DataFrame, table: str, ctx: WriteContext | None = None) -> pa.Table:
    """``df`` conformed to ``table`` as an Arrow table with the declared schema (descriptions,
    nullability) and the file metadata. Raises SchemaError (from :func:`conform`) for a frame of
    another shape."""
    df = conform(df, table)
    schema = spec_of(table).schema.with_metadata(file_metadata(df, table, ctx))
    return df.to_arrow().cast(schema)


def to_arrow_batches(df: pl.DataFrame, table: str, ctx: WriteContext | None = None,
                     rows: int = 262_144) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """:func:`to_arrow` a slice of ``rows`` rows at a time: (the declared schema with the file metadata, the
    slices as Arrow tables). Casting to the declared schema copies the text columns; slice by slice, a table of
    millions of rows is never held twice. Conforms (and raises) before returning, as :func:`to_arrow`."""
    df = conform(df, table)
    schema = spec_of(table).schema.with_metadata(file_metadata(df, table, ctx))

    def slices() -> Iterator[pa.Table]:
        for start in range(0, max(df.height, 1), rows):
            yield df.slice(start, rows).to_arrow().cast(schema)

    return schema, slices()


def check_and_read(path: str | Path, table: str | None = None, *, columns: list[str] | None = None,
                   on_migrate: Callable[[str], None] | None = None) -> pl.DataFrame:
    """Read a table file after checking its table name and schema version.

    ``table``: the table expected (None: the one the file names, else the file's stem). ``columns``: read
    only these. ``on_migrate``: called with the one-line message when an older file is migrated
    (default: a warning on the ``rag_eval_pipeline.tables`` logger). Output: the frame in the declared
    schema of the current version. Raises SchemaVersionError (file, both versions) for a file of a newer
    version, of another table, or that no migration turns into the current version; InputError for a
    file that is not Parquet; SchemaError for an undeclared table.
    """
    path = Path(path)
    meta = read_file_metadata(path)
    named = meta.get(PREFIX + "table")
    table = table or named or path.stem
    spec = spec_of(table)
    if named and named != table:
        raise SchemaVersionError(f"holds table {named!r}, expected {table!r}", path=str(path))
    raw_version = meta.get(PREFIX + "schema_version", "0")
    try:
        version = int(raw_version)
    except ValueError:
        raise SchemaVersionError(f"table {table!r}: schema version {raw_version!r} is not an integer",
                                 path=str(path)) from None
    both = f"table {table!r} has schema version {version}, this pipeline reads version {spec.version}"
    if version == spec.version:
        df = pl.read_parquet(path, columns=columns)
        wrong = {c: str(t) for c, t in df.schema.items() if spec.polars.get(c) != t}
        if wrong:
            raise SchemaVersionError(f"{both} but its columns differ from the declaration: {wrong}", path=str(path))
        return df
    if version > spec.version:
        raise SchemaVersionError(f"{both}: written by a newer release ({meta.get(PREFIX + 'product_version')}); "
                                 "read it with that release or re-run the evaluation", path=str(path))
    df = pl.read_parquet(path)
    steps = []
    for v in range(version, spec.version):
        step = MIGRATIONS.get((table, v))
        if step is not None:
            df = step(df)
            steps.append(f"{v}->{v + 1}: {step.__name__}")
    missing = [c for c in spec.polars if c not in df.columns]
    required = [c for c in missing if c in spec.required]
    if required:
        raise SchemaVersionError(f"{both} and cannot be migrated: it lacks the not-null column(s) {required}; "
                                 "re-run the evaluation to rewrite it", path=str(path))
    df = df.with_columns([pl.lit(None, spec.polars[c]).alias(c) for c in missing])
    try:
        df = conform(df, table)
    except SchemaError as exc:
        raise SchemaVersionError(f"{both} and cannot be migrated ({exc}); re-run the evaluation to rewrite it",
                                 path=str(path)) from None
    what = "; ".join(steps + ([f"added as null: {missing}"] if missing else [])) or "its columns already match"
    message = (f"file {path}: {both}{' (written before schema versions)' if version == 0 else ''}: "
               f"migrated on read ({what}); the next write stores version {spec.version}")
    (on_migrate or log.warning)(message)
    return df.select(columns) if columns else df


def check_and_scan(path: str | Path, table: str | None = None, *, columns: list[str] | None = None,
                   on_migrate: Callable[[str], None] | None = None) -> pl.LazyFrame:
    """:func:`check_and_read`, lazily: a ``polars.LazyFrame`` over the file (``pl.scan_parquet``), so that a
    step that filters or aggregates a table of millions of rows reads only the rows and columns it keeps.
    A file of the current schema version is scanned; an older one is migrated in memory as
    :func:`check_and_read` does. Same checks and errors as :func:`check_and_read`."""
    path = Path(path)
    meta = read_file_metadata(path)
    spec = spec_of(table or meta.get(PREFIX + "table") or path.stem)
    if meta.get(PREFIX + "table") in (None, spec.name) and meta.get(PREFIX + "schema_version") == str(spec.version):
        lf = pl.scan_parquet(path)
        wrong = {c: str(t) for c, t in lf.collect_schema().items() if spec.polars.get(c) != t}
        if wrong:
            raise SchemaVersionError(f"table {spec.name!r} has schema version {spec.version} but its columns differ "
                                     f"from the declaration: {wrong}", path=str(path))
        return lf.select(columns) if columns else lf
    return check_and_read(path, table, columns=columns, on_migrate=on_migrate).lazy()
