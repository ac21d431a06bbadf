"""Shared readers for record files (JSONL / Parquet) and field checks that raise located InputErrors.

Private to ``core/sources``. Every error names the file, the line (JSONL: physical line number,
1-based; Parquet: row number, 1-based) and the field.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)


def decode_utf8(data: bytes, path: str) -> str:
    """Decode bytes as UTF-8, dropping a leading BOM and turning CRLF / CR into LF.

    Raises InputError naming the byte offset (0-based) and the line of the first invalid byte.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        shift = 3
    else:
        shift = 0
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at byte offset {exc.start + shift} ({exc.reason}); "
            "expected UTF-8 text",
            path=path, line=line, field="encoding",
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _no_duplicate_keys(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Read a JSON Lines file.

    Output: (line number, object) for every non-blank line, in file order. A BOM and CRLF are repaired.
    Raises InputError (file, line) for a missing file, bad UTF-8, a line that is not valid JSON (the
    last line, without its newline, is reported as cut off), a repeated key, or a value that is not a
    JSON object.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found; expected a JSON Lines file", path=str(p))
    data = p.read_bytes()
    text = decode_utf8(data, str(p))
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    out: list[tuple[int, dict]] = []
    last_content = max((i for i, l in enumerate(lines) if l.strip()), default=-1)
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            obj = json.loads(raw, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            if i == last_content and not ends_with_newline:
                raise InputError(
                    f"the last line is cut off ({exc.msg.removesuffix(' at')} at column {exc.colno}, and the file does not end "
                    "with a newline); expected one complete JSON object per line",
                    path=str(p), line=lineno, field="json",
                ) from None
            raise InputError(
                f"malformed JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}; expected one JSON object per line",
                path=str(p), line=lineno, field="json",
            ) from None
        except ValueError as exc:
            raise InputError(f"{exc}; expected unique keys", path=str(p), line=lineno, field="json") from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=str(p), line=lineno,
                             field="json")
        out.append((lineno, obj))
    return out


def read_parquet_rows(path: str | Path) -> list[tuple[int, dict]]:
    """Read a Parquet file as (row number from 1, row dict). Raises InputError when unreadable."""
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found; expected a Parquet file", path=str(p))
    try:
        df = pl.read_parquet(p)
    except Exception as exc:  # polars raises several error types for a damaged file
        raise InputError(f"cannot read Parquet ({exc}); expected a Parquet file", path=str(p)) from None
    return [(i + 1, row) for i, row in enumerate(df.to_dicts())]


def read_records(path: str | Path) -> list[tuple[int, dict]]:
    """Read JSONL (.jsonl, .ndjson) or Parquet (.parquet) records; dispatch on the suffix.

    Raises InputError for another suffix and as :func:`read_jsonl` / :func:`read_parquet_rows`.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in JSONL_SUFFIXES:
        return read_jsonl(p)
    if suffix in PARQUET_SUFFIXES:
        return read_parquet_rows(p)
    raise InputError(f"unsupported file type {p.suffix!r}; expected .jsonl, .ndjson or .parquet", path=str(p))


class Fields:
    """Typed field access on one record; each failed check raises InputError with file, line, field."""

    def __init__(self, record: dict, path: str, line: int):
        self.record, self.path, self.line = record, path, line

    def error(self, field: str, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=field)

    def check_keys(self, allowed: tuple[str, ...] | set[str]) -> None:
        unknown = sorted(k for k in self.record if k not in allowed)
        if unknown:
            raise self.error(unknown[0], f"unknown field(s) {unknown}; expected only {sorted(allowed)}")

    def present(self, field: str) -> bool:
        return self.record.get(field) is not None

    def string(self, field: str, *, required: bool = False, non_empty: bool = False,
               choices: tuple[str, ...] | None = None, default: str | None = None) -> str | None:
        value = self.record.get(field)
        if value is None:
            if required:
                raise self.error(field, "missing; expected a string")
            return default
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {type(value).__name__} {value!r}")
        if non_empty and not value.strip():
            raise self.error(field, "empty; expected a non-empty string")
        if choices is not None and value not in choices:
            raise self.error(field, f"unknown value {value!r}; expected one of {list(choices)}")
        return value

    def string_list(self, field: str, *, default: list[str] | None = None, unique: bool = False) -> list[str]:
        value = self.record.get(field)
        if value is None:
            return list(default or [])
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of strings, got {type(value).__name__}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.error(f"{field}[{i}]", f"expected a non-empty string, got {item!r}")
        if unique:
            seen = set()
            for i, item in enumerate(value):
                if item in seen:
                    raise self.error(f"{field}[{i}]", f"{item!r} appears twice; expected unique values")
                seen.add(item)
        return list(value)


def finite_number(value: Any) -> bool:
    """True for an int or float that is finite (bool is not a number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_int(value: Any) -> bool:
    """True for an int (not bool), or a float with an integral value."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()
