"""How a table is declared: an Arrow schema with a description per column, a version, and a fingerprint.

Each table is one :func:`declare` call in ``core/tables.py``: its name, its schema version, a line
saying what one row is, which versions it depends on (corpus, golden set, judge) and its columns,
each a :func:`column` (an Arrow field: type, nullability, and a one-line description in the field
metadata under ``description``: units, range, what null means). Everything else is derived from that
one declaration: the polars schema a frame is checked against (:func:`conform`), the Parquet file
metadata (``core/table_files.py``), the column reference in ``docs/tables.md`` and the fingerprint
that ties a schema change to a version bump.

Versions. ``core/table_versions.json`` records, for every table and version, the fingerprint of its
columns (name, Arrow type, nullability; descriptions excluded). A test fails when a table's columns
differ from the fingerprint recorded for its current version: the message says how to bump it.
``python -m rag_eval_pipeline.core.table_schema --record`` records the fingerprint of a new version
(it never overwrites the fingerprint of a version already recorded).

Polars stays the dataframe library: :data:`SCHEMAS`-style polars schemas come from the Arrow schema
(``TableSpec.polars``), and the Arrow types are those polars writes (``large_string``,
``large_list``), so a frame converts without copying. Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import cast

import polars as pl
import pyarrow as pa

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.registry import Registry

STRING = pa.large_string()
INT32 = pa.int32()
INT64 = pa.int64()
FLOAT64 = pa.float64()
BOOL = pa.bool_()
DATE = pa.date32()
UTC_MICROSECONDS = pa.timestamp("us", tz="UTC")

#: What a table's rows depend on; each becomes a file metadata key (``core/table_files.py``).
DEPENDS_ON = ("corpus", "golden", "judge")
DESCRIPTION = "description"
VERSIONS_FILE = Path(__file__).with_name("table_versions.json")
DOCS_PAGE = "docs/tables.md"


def list_of(item: pa.DataType) -> pa.DataType:
    """An Arrow list of ``item``: ``large_list``, as polars holds lists, with its values named ``element``,
    as Parquet's list type names them (so a file read back with pyarrow has exactly the declared schema)."""
    return pa.large_list(pa.field("element", item))


def struct(**fields: pa.DataType) -> pa.DataType:
    """An Arrow struct with nullable ``fields`` in the given order."""
    return pa.struct([pa.field(name, tp) for name, tp in fields.items()])


def column(name: str, type: pa.DataType, description: str, *, nullable: bool = True) -> pa.Field:
    """One declared column: an Arrow field with ``description`` (one line) in its metadata.

    ``nullable=False``: a null in this column stops the write (:func:`conform`). Raises ValueError for
    an empty or multi-line description."""
    if not description or "\n" in description:
        raise ValueError(f"column {name!r}: the description must be one non-empty line")
    return pa.field(name, type, nullable=nullable, metadata={DESCRIPTION: description})


@dataclass(frozen=True)
class TableSpec:
    """One table. ``version``: its schema version (an integer from 1; bump it with any change of a
    column's name, order, type or nullability). ``description``: what one row is. ``depends_on``: which
    of :data:`DEPENDS_ON` its rows depend on (each becomes a file metadata key). ``schema``: the Arrow
    schema, one field per column with its description."""

    name: str
    version: int
    description: str
    depends_on: tuple[str, ...]
    schema: pa.Schema = field(repr=False)

    @cached_property
    def polars(self) -> pl.Schema:
        """The polars schema of the table (what :func:`conform` checks a frame against)."""
        return pl.Schema(_empty_frame(self.schema).schema)

    @property
    def metric_table(self) -> bool:
        """True when the table has a ``metric`` column: its files carry each metric's definition."""
        return "metric" in self.schema.names

    @property
    def required(self) -> tuple[str, ...]:
        """The columns declared not nullable."""
        return tuple(f.name for f in self.schema if not f.nullable)

    def describe(self, name: str) -> str:
        """The one-line description of column ``name``. Raises KeyError for an unknown column."""
        return self.schema.field(name).metadata[DESCRIPTION.encode()].decode()

    def fingerprint(self) -> list[str]:
        """The columns as ``"name: arrow type"`` (``" not null"`` appended where required), in order:
        what a version bump is about. Descriptions are left out (rewording one changes no reader)."""
        return [f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in self.schema]


#: Every declared table, in declaration order (``core/tables.py`` fills it).
TABLES: Registry[TableSpec] = Registry("table")


def declare(name: str, version: int, description: str, columns: list[pa.Field],
            depends_on: tuple[str, ...] = ("corpus", "golden")) -> TableSpec:
    """Declare table ``name`` (one call per table). Returns its TableSpec.

    Raises ValueError for a version below 1, an unknown dependency, a repeated column or a column
    without description; RegistryError for a second declaration of the same name."""
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"table {name!r}: version must be an integer >= 1, got {version!r}")
    unknown = [d for d in depends_on if d not in DEPENDS_ON]
    if unknown:
        raise ValueError(f"table {name!r}: depends_on {unknown} not in {DEPENDS_ON}")
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise ValueError(f"table {name!r}: a column is declared twice in {names}")
    for c in columns:
        if not c.metadata or DESCRIPTION.encode() not in c.metadata:
            raise ValueError(f"table {name!r}: column {c.name!r} has no description (use column())")
    spec = TableSpec(name, version, description, tuple(depends_on), pa.schema(columns))
    return TABLES.register(spec)


def spec_of(table: str) -> TableSpec:
    """The declaration of ``table``. Raises SchemaError naming the known tables for an undeclared one.
    The declarations are ``core/tables.py``'s: import ``spec_of`` from there (which declares them), so that
    this module never imports its declarations (no import circle)."""
    if table not in TABLES:
        raise SchemaError(f"{table!r} is not one of this pipeline's tables ({', '.join(TABLES.names())}); "
                          "a table file is known by its rag_eval.table metadata, else by its file name: "
                          "rename the file or point at one of those tables")
    return TABLES.get(table)


def conform(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """Check ``df`` against the declared schema of ``table`` and return it in declared column order.

    Input: a polars DataFrame. Output: the same rows, columns reordered, dtypes unchanged
    (a Null-typed column, as polars infers for an all-null literal, is cast to the declared type; a
    list of structs lacking some declared struct fields, as built before a field existed, gets them as
    null).
    Raises SchemaError naming the table and column when a column is missing, extra or of another
    dtype, when a column declared not nullable holds a null, or when a float column holds NaN (null
    means "not evaluable"; NaN is never stored).
    """
    df = conform_columns(df, spec_of(table).polars, f"table {table!r}")
    check_values(df, table)
    return df


def conform_columns(df: pl.DataFrame, schema: pl.Schema, what: str) -> pl.DataFrame:
    """The column rules of :func:`conform` for any polars ``schema`` (the documents frame uses it too):
    the same columns, each of the declared dtype (a Null-typed column, or a List of Null, is cast to it).

    Output: ``df`` in ``schema``'s column order. Raises SchemaError starting with ``what`` and naming the
    columns missing or extra, or the column of another dtype."""
    missing = [c for c in schema if c not in df.columns]
    extra = [c for c in df.columns if c not in schema]
    if missing or extra:
        raise SchemaError(f"{what}: missing columns {missing}, unexpected columns {extra}")
    casts = {}
    for name, dtype in schema.items():
        got = df.schema[name]
        if got == dtype:
            continue
        if got == pl.Null or _null_inner(got, dtype):
            casts[name] = dtype
            continue
        if _struct_subset(got, dtype):  # a frame built before a struct field existed: the field is null
            df = df.with_columns(add_struct_fields(df, name, dtype))
            continue
        raise SchemaError(f"{what}: column {name!r} has dtype {got}, expected {dtype}")
    if casts:
        df = df.with_columns([pl.col(c).cast(t) for c, t in casts.items()])
    return df.select(list(schema))


def polars_type(arrow_type: pa.DataType) -> pl.DataType:
    """The polars dtype of an Arrow type as polars reads it (``large_string`` -> ``String``, a struct field by
    field): one declaration, two type systems."""
    return _empty_frame(pa.schema([pa.field("x", arrow_type)])).schema["x"]


def _empty_frame(schema: pa.Schema) -> pl.DataFrame:
    """An empty polars frame of an Arrow ``schema``. Built from ``pa.nulls(0, type)`` columns: pyarrow's
    ``Schema.empty_table`` and ``pa.array`` import pandas (0.3 s of the code location's import) to check
    for pandas objects; the declarations need no pandas."""
    table = pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)
    # an Arrow table converts to a DataFrame (from_arrow gives a Series only for an Arrow array)
    return cast(pl.DataFrame, pl.from_arrow(table))


def check_values(df: pl.DataFrame, table: str) -> None:
    """The value rules of :func:`conform` on the declared columns ``df`` holds (a column it lacks is not
    checked): no null in a column declared not null, no NaN in a float column. Raises SchemaError naming
    the table, the column and the number of rows."""
    spec = spec_of(table)
    for name in spec.required:
        if name not in df.columns:
            continue
        nulls = df[name].null_count()
        if nulls:
            raise SchemaError(f"table {table!r}: column {name!r} is declared not null and holds null in "
                              f"{nulls} row(s) ({spec.describe(name)})")
    for name, dtype in spec.polars.items():
        if dtype in (pl.Float64, pl.Float32) and name in df.columns:
            bad = df.filter(pl.col(name).is_nan())
            if bad.height:
                raise SchemaError(
                    f"table {table!r}: column {name!r} holds NaN in {bad.height} row(s); "
                    "store null for 'not evaluable'"
                )


def _struct_subset(got: pl.DataType, want: pl.DataType) -> bool:
    """True when ``got`` and ``want`` are List(Struct) and every field of ``got`` is a field of ``want``
    with the same dtype (or Null), ``want`` having more."""
    if not (isinstance(got, pl.List) and isinstance(want, pl.List)):
        return False
    g, w = got.inner, want.inner
    if not (isinstance(g, pl.Struct) and isinstance(w, pl.Struct)):
        return False
    wf = {f.name: f.dtype for f in w.fields}
    gf = {f.name: f.dtype for f in g.fields}
    return len(gf) < len(wf) and all(n in wf and (d == wf[n] or d == pl.Null) for n, d in gf.items())


def add_struct_fields(df: pl.DataFrame, name: str, want: pl.DataType) -> pl.Expr:
    """Column ``name`` (a List of Struct) of ``df`` as ``want``: the struct fields it lacks added as null, in
    ``want``'s order. Used by :func:`conform` and by migrations that add a field."""
    got = df.schema[name]
    if not (isinstance(got, pl.List) and isinstance(got.inner, pl.Struct) and isinstance(want, pl.List)
            and isinstance(want.inner, pl.Struct)):
        raise ValueError(f"column {name!r}: expected a List of Struct, got {got} (want {want})")
    have = {f.name for f in got.inner.fields}
    fields = [pl.element().struct.field(f.name).cast(f.dtype) if f.name in have
              else pl.lit(None, f.dtype).alias(f.name) for f in want.inner.fields]
    return pl.col(name).list.eval(pl.struct(fields)).cast(want).alias(name)


def _null_inner(got: pl.DataType, want: pl.DataType) -> bool:
    """True when ``got`` is a List of Null (an empty literal list) and ``want`` is any List."""
    return isinstance(got, pl.List) and isinstance(want, pl.List) and got.inner == pl.Null


# ----------------------------------------------------------------------------- migrations

#: (table, from_version) -> function turning a frame of that version into one of the next version.
MIGRATIONS: dict[tuple[str, int], Callable[[pl.DataFrame], pl.DataFrame]] = {}


def migration(table: str, from_version: int) -> Callable:
    """Decorator registering how a ``table`` file of ``from_version`` is read as ``from_version + 1``:
    ``@migration("question_metrics", 1)`` above ``def f(df: pl.DataFrame) -> pl.DataFrame``. Needed only
    when a change is more than added nullable columns (those are read as null without one). Raises
    ValueError for a second migration of the same step."""

    def decorate(fn: Callable[[pl.DataFrame], pl.DataFrame]) -> Callable[[pl.DataFrame], pl.DataFrame]:
        if (table, from_version) in MIGRATIONS:
            raise ValueError(f"table {table!r}: a migration from version {from_version} is registered twice")
        MIGRATIONS[(table, from_version)] = fn
        return fn

    return decorate


# ----------------------------------------------------------------------------- recorded fingerprints

def recorded_versions(path: Path = VERSIONS_FILE) -> dict[str, dict[str, list[str]]]:
    """``{table: {version (str): fingerprint}}`` as recorded in ``table_versions.json``."""
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def bump_instructions(spec: TableSpec) -> str:
    """How to bump ``spec``'s version: the three steps, as printed by the version test and ``--record``."""
    new = spec.version + 1
    return (f"to change table {spec.name!r}: (1) in rag_eval_pipeline/core/tables.py set version={new} in "
            f"declare({spec.name!r}, ...); (2) add the row '| {spec.name} | {new} | <what changed; how files "
            f"of version {spec.version} are read> |' to the changelog in {DOCS_PAGE}: added nullable columns "
            f"are read as null by themselves, anything else needs @migration({spec.name!r}, {spec.version}) "
            f"in core/tables.py; (3) run `python -m rag_eval_pipeline.core.table_schema --record` (records "
            f"the new fingerprint in core/table_versions.json) and `python -m rag_eval_pipeline.core.kind_docs` "
            f"(rewrites the column reference of {DOCS_PAGE})")


def version_problems(path: Path = VERSIONS_FILE) -> list[str]:
    """One message per table whose columns differ from what ``table_versions.json`` records for its
    version, or whose version is not recorded yet. Empty when every schema matches its version."""
    recorded = recorded_versions(path)
    problems = []
    for spec in TABLES:
        known = recorded.get(spec.name, {})
        fp = known.get(str(spec.version))
        if fp is None:
            problems.append(f"table {spec.name!r} version {spec.version} is not recorded in {path.name}: run "
                            "`python -m rag_eval_pipeline.core.table_schema --record` (and add its changelog row "
                            f"in {DOCS_PAGE})")
        elif fp != spec.fingerprint():
            added = [c for c in spec.fingerprint() if c not in fp]
            removed = [c for c in fp if c not in spec.fingerprint()]
            what = "; ".join(p for p in (f"now {added}" if added else "", f"was {removed}" if removed else "",
                                         "column order" if not added and not removed else "") if p)
            problems.append(f"table {spec.name!r} changed its columns ({what}) but its schema version is still "
                            f"{spec.version}; {bump_instructions(spec)}")
    return problems


def record(path: Path = VERSIONS_FILE) -> list[str]:
    """Record the fingerprint of every table version not yet in ``path``; returns ``table version`` of
    each recorded. Raises SchemaError (the bump instructions) when a recorded version's columns changed."""
    recorded = recorded_versions(path)
    added = []
    for spec in TABLES:
        versions = recorded.setdefault(spec.name, {})
        fp = versions.get(str(spec.version))
        if fp is None:
            versions[str(spec.version)] = spec.fingerprint()
            added.append(f"{spec.name} {spec.version}")
        elif fp != spec.fingerprint():
            raise SchemaError(f"table {spec.name!r} version {spec.version} is recorded with other columns; "
                              f"{bump_instructions(spec)}")
    path.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return added


def reference_markdown() -> str:
    """The column reference of every table (the generated block of ``docs/tables.md``)."""
    parts = []
    for spec in TABLES:
        deps = ", ".join(f"`rag_eval.{d}_version`" if d != "judge" else "`rag_eval.judge`" for d in spec.depends_on)
        head = "| column | type | null | meaning |\n|---|---|---|---|\n"
        parts.append(f"### `{spec.name}` (version {spec.version})\n\nOne row is {spec.description}. "
                     f"Its files record {deps}.\n\n{head}"
                     + "".join(f"| `{f.name}` | `{f.type}` | {'yes' if f.nullable else 'no'} | "
                               f"{spec.describe(f.name).replace('|', '/')} |\n" for f in spec.schema))
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    """``python -m rag_eval_pipeline.core.table_schema --record``: record new table versions (exit 0), or
    print why a changed table needs a version bump (exit 1). ``--check``: only report (exit 1 if any).
    Called in code, the caller has imported ``core.tables`` (the declarations)."""
    # run as ``python -m``, this file is ``__main__``: use the imported module, whose TABLES the
    # declarations fill
    from rag_eval_pipeline.core import table_schema as ts

    args = sys.argv[1:] if argv is None else argv
    if args == ["--record"]:
        try:
            added = ts.record()
        except SchemaError as exc:
            print(exc, file=sys.stderr)
            return 1
        print("recorded: " + (", ".join(added) if added else "nothing new"))
        return 0
    if args == ["--check"]:
        problems = ts.version_problems()
        for p in problems:
            print(p, file=sys.stderr)
        return 1 if problems else 0
    print("usage: python -m rag_eval_pipeline.core.table_schema --record | --check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    import rag_eval_pipeline.core.tables  # noqa: F401 - the declarations fill TABLES (of the imported module)

    sys.exit(main())
