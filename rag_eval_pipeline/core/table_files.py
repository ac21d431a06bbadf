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

Provenance: a table that has the key's own column (``corpus_version`` / ``golden_version`` in
``rag_runs``, ``golden_set``) takes the value from its rows, so the metadata always describes the rows;
the write is refused (SchemaError, nothing written) when the rows hold several values or one that
differs from the writer's :class:`WriteContext` (in ``metric_history``, whose rows span runs, the
writing run's value, which the rows must hold). Otherwise, first found wins: the writer's
:class:`WriteContext` (the asset's own metadata), the table that defines the key (``corpus_snapshot``
→ corpus version, ``judge_labels`` / ``answer_judgements`` → judge keys, from their rows), then the
footer of that defining table in the run's folder (``WriteContext.lineage_dir``: the files this run
read).

Reading (:func:`check_and_read`): a file of the table's current schema version is checked as a write
is (every declared column, no other, declared types, no null where not null, no NaN); an older one is
migrated (registered ``@migration`` steps, then missing nullable columns added as null) with a one-line
message naming the file and both versions; a file of a newer version, of another table, one that
cannot be migrated or one that fails those checks is refused with :class:`SchemaVersionError`. A file without the
metadata (written before schema versions existed) is version 0. Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.lazy import lazy_module

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa
    import pyarrow.parquet as pq

    from rag_eval_pipeline.core.table_schema import TableSpec
else:
    pl = lazy_module("polars")
    pa = lazy_module("pyarrow")
    pq = lazy_module("pyarrow.parquet")

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


def _from_rows(df: pl.DataFrame, spec: TableSpec, name: str, given: str | None) -> str | None:
    """The value of provenance key ``name`` for a file of ``spec`` holding ``df``: taken from the rows when
    the table has that column (the metadata must describe the rows), else ``given`` (the writer's context;
    None: look further). Raises SchemaError, before anything is written, when the rows hold several values
    (except in a table of several runs, ``run_id`` column: there the writing run's value, which the rows
    must hold) or one that differs from ``given``."""
    if name not in spec.polars or name not in df.columns:
        return given
    values = sorted({str(v) for v in df[name].drop_nulls().to_list()})
    if not values:
        return given
    if len(values) > 1:
        if "run_id" in spec.polars:  # metric_history: rows of several runs
            if given is not None and given not in values:
                raise SchemaError(f"table {spec.name!r}: this run's {name} {given!r} is in none of the rows "
                                  f"(they hold {values[:5]}); nothing was written")
            return given
        raise SchemaError(f"table {spec.name!r}: column {name!r} holds several values {values[:5]}; a file "
                          f"describes one {name}, nothing was written")
    if given is not None and given != values[0]:
        raise SchemaError(f"table {spec.name!r}: the rows say {name} {values[0]!r} but the writer says {given!r}; "
                          "the file's metadata must describe its rows, nothing was written")
    return values[0]


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
        value = _from_rows(df, spec, "corpus_version", ctx.corpus_version)
        if value is None and spec.name == DEFINED_BY["corpus"]:
            from rag_eval_pipeline.core.corpus import corpus_version

            value = corpus_version(df)
        if value is None:
            value = _footer(ctx.lineage_dir, DEFINED_BY["corpus"], "corpus_version")
        out["corpus_version"] = value or ""
    if "golden" in spec.depends_on:
        value = _from_rows(df, spec, "golden_version", ctx.golden_version)
        if value is None and spec.name != DEFINED_BY["golden"]:
            value = _footer(ctx.lineage_dir, DEFINED_BY["golden"], "golden_version")
        out["golden_version"] = value or ""
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
    from rag_eval_pipeline.core.tables import spec_of
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
    from rag_eval_pipeline.core.table_schema import conform
    from rag_eval_pipeline.core.tables import spec_of
    df = conform(df, table)
    schema = spec_of(table).schema.with_metadata(file_metadata(df, table, ctx))
    return df.to_arrow().cast(schema)


def _read_current(path: Path, spec: TableSpec, columns: list[str] | None) -> pl.DataFrame:
    """A file whose metadata says the current version, checked like a write (:func:`conform`): every
    declared column there and no other, declared types, no null in a not-null column, no NaN. With
    ``columns`` the set of columns is checked from the footer and the values of those read only."""
    from rag_eval_pipeline.core.table_schema import check_values
    def refuse(what: str) -> SchemaVersionError:
        return SchemaVersionError(f"table {spec.name!r}, schema version {spec.version} (the current one): {what}; "
                                  "the file does not match its declared schema (edited or written by another "
                                  "tool): re-run the evaluation to rewrite it", path=str(path))

    try:
        names = pq.read_schema(path).names
    except (OSError, pa.ArrowException) as exc:
        raise InputError(f"not a readable Parquet file ({type(exc).__name__}: {exc})", path=str(path)) from None
    missing = [c for c in spec.polars if c not in names]
    extra = [c for c in names if c not in spec.polars]
    if missing or extra:
        raise refuse(f"it lacks the column(s) {missing}" if not extra else
                     f"its columns differ from the declaration (missing {missing}, unexpected {extra})")
    df = pl.read_parquet(path, columns=columns)
    wrong = {c: str(t) for c, t in df.schema.items() if spec.polars.get(c) != t}
    if wrong:
        raise refuse(f"its columns differ from the declaration: {wrong}")
    try:
        check_values(df, spec.name)
    except SchemaError as exc:
        raise refuse(str(exc).removeprefix(f"table {spec.name!r}: ")) from None
    return df


def to_arrow_batches(df: pl.DataFrame, table: str, ctx: WriteContext | None = None,
                     rows: int = 262_144) -> tuple[pa.Schema, Iterator[pa.Table]]:
    """:func:`to_arrow` a slice of ``rows`` rows at a time: (the declared schema with the file metadata, the
    slices as Arrow tables). Casting to the declared schema copies the text columns; slice by slice, a table of
    millions of rows is never held twice. Conforms (and raises) before returning, as :func:`to_arrow`."""
    from rag_eval_pipeline.core.table_schema import conform
    from rag_eval_pipeline.core.tables import spec_of
    df = conform(df, table)
    schema = spec_of(table).schema.with_metadata(file_metadata(df, table, ctx))

    def slices() -> Iterator[pa.Table]:
        for start in range(0, max(df.height, 1), rows):
            yield df.slice(start, rows).to_arrow().cast(schema)

    return schema, slices()


#: Columns of a table that its file metadata is computed from (:func:`file_metadata`): a batched write keeps
#: their distinct values only, not the rows.
_METADATA_COLUMNS = ("corpus_version", "golden_version", "judge", "judge_model", "prompt_sha256",
                     "judge_prompt_sha256", "metric", "run_id")


def metadata_digest(df: pl.DataFrame) -> pl.DataFrame:
    """The distinct combinations of ``df``'s columns that :func:`file_metadata` reads (provenance, judge keys,
    metric names): ``file_metadata(metadata_digest(df), ...)`` equals ``file_metadata(df, ...)`` for a frame
    with rows. Output: a small frame (the same columns, those present in ``df``), or ``df`` with no column
    when it has none of them."""
    cols = [c for c in _METADATA_COLUMNS if c in df.columns]
    return df.select(cols).unique() if cols else df.select([])


def batches_to_parquet(batches: Iterable[pl.DataFrame], tmp_path: str, final_path: str, table: str,
                       ctx: WriteContext | None = None, rows: int = 262_144) -> int:
    """Write the frames of ``batches`` (each conformed to ``table`` and checked as :func:`to_arrow` does,
    when it comes) as one Parquet file of ``table`` at ``final_path``, holding one batch in memory at a time.

    The file metadata names every metric of the file (and the provenance of its rows), which is known only
    when the last batch has come, and is written with the Arrow schema at the start of a Parquet file: the
    batches go to ``tmp_path`` first, then the file is copied row group by row group (``rows`` rows each) to
    ``final_path`` with the declared schema and the metadata. Output: the number of rows written. Raises
    SchemaError (from :func:`conform`) for a batch of another shape; nothing is written at ``final_path`` then.
    An empty iterable writes a file with no row."""
    from rag_eval_pipeline.core.table_schema import conform
    from rag_eval_pipeline.core.tables import spec_of

    spec = spec_of(table)
    digests: list[pl.DataFrame] = []
    total = 0
    with pq.ParquetWriter(tmp_path, spec.schema, compression="zstd") as writer:
        for batch in batches:
            batch = conform(batch, table)
            digests.append(metadata_digest(batch))
            for start in range(0, batch.height, rows):
                writer.write_table(batch.slice(start, rows).to_arrow().cast(spec.schema))
            total += batch.height
            del batch
    digest = (pl.concat(digests, how="vertical").unique() if digests
              else metadata_digest(pl.DataFrame(schema=spec.polars)))
    schema = spec.schema.with_metadata(file_metadata(digest, table, ctx))
    source = pq.ParquetFile(tmp_path)
    try:
        with pq.ParquetWriter(final_path, schema, compression="zstd") as writer:
            if source.metadata.num_row_groups == 0:
                writer.write_table(schema.empty_table())
            for i in range(source.metadata.num_row_groups):
                writer.write_table(source.read_row_group(i).cast(schema))
    finally:
        source.close()
    return total


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
    from rag_eval_pipeline.core.table_schema import MIGRATIONS, conform
    from rag_eval_pipeline.core.tables import spec_of
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
        return _read_current(path, spec, columns)
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
    from rag_eval_pipeline.core.tables import spec_of
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
