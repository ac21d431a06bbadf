"""Shared readers for record files (JSONL / Parquet) and field checks that raise located InputErrors.

Private to ``core/sources``. Every error names the file, the line (JSONL: physical line number,
1-based; Parquet: row number, 1-based) and the field.
"""

from __future__ import annotations

import errno
import math
import os
import stat
import unicodedata
from pathlib import Path
from typing import Any, Literal, overload

import polars as pl

from rag_eval_pipeline.core.corpus import twin_note  # noqa: F401  (used by the readers through this module)
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json

JSONL_SUFFIXES = (".jsonl", ".ndjson")
PARQUET_SUFFIXES = (".parquet",)
#: The range of the Int32 columns (ranks, grades): a value outside it would overflow on write.
INT32_MAX = 2**31 - 1
_REPR_LIMIT = 80

_FILE_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISDIR, "a folder"))


def short_repr(value: Any, limit: int = _REPR_LIMIT) -> str:
    """``repr(value)`` cut to about ``limit`` characters (an error message never quotes a whole huge value).

    Output: the repr, or its first ``limit`` characters followed by ``... (N characters)``.
    An int too long to print in full is described by its digit count. Raises nothing.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 3 * limit:
        try:
            return f"an integer of {len(str(abs(value)))} digits"
        except ValueError:  # beyond sys.get_int_max_str_digits()
            return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def file_kind(mode: int) -> str | None:
    """What a non-regular file is ("a named pipe (FIFO)", "a socket", ...), or None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _FILE_KINDS if test(mode)), "not a regular file")


def _open_without_blocking(p: str, expected: str) -> int:
    """A read-only, non-blocking descriptor of ``p``; InputError (field ``file``) for a missing file, a
    dangling link, a link loop or another OS error."""
    try:
        return os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        what = "dangling symbolic link" if os.path.islink(p) else "file not found"
        raise InputError(f"{what}; expected {expected}", path=p, field="file") from None
    except OSError as exc:
        reason = "symbolic link loop" if exc.errno == errno.ELOOP else (exc.strerror or type(exc).__name__)
        raise InputError(f"cannot be opened ({reason}); expected {expected}", path=p, field="file") from None


def _refuse_irregular(kind: str | None, p: str, expected: str) -> None:
    if kind is not None:
        raise InputError(f"{kind}, not a regular file; expected {expected} (only regular files are read)",
                         path=p, field="file")


def read_regular_file(path: str | Path, expected: str = "a file") -> bytes:
    """Read the bytes of a regular file without ever blocking on a special one.

    Input: a path (symbolic links are followed); ``expected`` names what should be there (for the
    message). Output: the file's bytes. The file is opened non-blocking and checked with ``fstat``
    before it is read, so a named pipe, socket or device is refused at once instead of waiting for a
    writer (or reading forever).
    Raises InputError (file, field ``file``) for a missing file, a symbolic link loop or a dangling
    link, another OS error, or anything that is not a regular file (naming what it is).
    """
    p = str(path)
    fd = _open_without_blocking(p, expected)
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        _refuse_irregular(kind, p, expected)
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as exc:
        raise InputError(f"cannot be read ({exc.strerror or type(exc).__name__}); expected {expected}", path=p,
                         field="file") from None
    finally:
        os.close(fd)


def read_regular_file_check(path: str | Path, expected: str = "a file") -> None:
    """Check, without reading it and without blocking, that ``path`` is a regular file (for a reader that
    then streams it). Raises InputError as :func:`read_regular_file` does."""
    p = str(path)
    fd = _open_without_blocking(p, expected)
    try:
        kind = file_kind(os.fstat(fd).st_mode)
    finally:
        os.close(fd)
    _refuse_irregular(kind, p, expected)


def normalise_id(value: str) -> str:
    """An identifier in Unicode normalisation form NFC (a file name saved on macOS arrives as NFD).

    Input: str. Output: ``unicodedata.normalize("NFC", value)``. Definition: Unicode Standard Annex #15.
    """
    return unicodedata.normalize("NFC", value)


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


def read_jsonl(path: str | Path) -> list[tuple[int, dict]]:
    """Read a JSON Lines file.

    Output: (line number, object) for every non-blank line, in file order. A BOM and CRLF are repaired.
    Raises InputError (file, line) for a missing file, bad UTF-8, a line that is not valid JSON (the
    last line, without its newline, is reported as cut off), a repeated key, or a value that is not a
    JSON object.
    """
    p = Path(path)
    data = read_regular_file(p, "a JSON Lines file")
    text = decode_utf8(data, str(p))
    lines = text.split("\n")
    ends_with_newline = text.endswith("\n")
    out: list[tuple[int, dict]] = []
    last_content = max((i for i, text_line in enumerate(lines) if text_line.strip()), default=-1)
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        lineno = i + 1
        try:
            obj = strict_json(raw)
        except JsonError as exc:
            if exc.reason == "malformed" and i == last_content and not ends_with_newline:
                raise InputError(
                    f"the last line is cut off ({exc.msg.removeprefix('malformed JSON: ')} at column {exc.colno}, "
                    "and the file does not end with a newline); expected one complete JSON object per line",
                    path=str(p), line=lineno, field="json",
                ) from None
            if exc.reason == "malformed":
                raise InputError(f"{exc.msg} at column {exc.colno}; expected one JSON object per line",
                                 path=str(p), line=lineno, field="json") from None
            if exc.reason == "repeated_key":
                raise InputError(f"{exc.msg.split(';')[0]}; expected unique keys", path=str(p), line=lineno,
                                 field="json") from None
            raise InputError(f"{exc}; expected one JSON object per line", path=str(p), line=lineno,
                             field="json") from None
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=str(p), line=lineno,
                             field="json")
        out.append((lineno, obj))
    return out


def read_parquet_rows(path: str | Path) -> list[tuple[int, dict]]:
    """Read a Parquet file as (row number from 1, row dict). Raises InputError when unreadable."""
    p = Path(path)
    if not p.is_file():
        if p.exists() or p.is_symlink():
            read_regular_file(p, "a Parquet file")  # raises, naming what is there instead
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

    def __init__(self, record: dict, path: str | None, line: int | None):
        self.record, self.path, self.line = record, path, line

    def error(self, field: str, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line, field=field)

    def check_keys(self, allowed: tuple[str, ...] | set[str]) -> None:
        unknown = sorted(k for k in self.record if k not in allowed)
        if unknown:
            from rag_eval_pipeline.core.section_errors import did_you_mean

            raise self.error(unknown[0], f"unknown field(s) {unknown}{did_you_mean(unknown, sorted(allowed))}; "
                                         f"expected only {sorted(allowed)}")

    def present(self, field: str) -> bool:
        return self.record.get(field) is not None

    @overload
    def string(self, field: str, *, required: Literal[True], non_empty: bool = False,
               choices: tuple[str, ...] | None = None, default: str | None = None) -> str: ...

    @overload
    def string(self, field: str, *, required: bool = False, non_empty: bool = False,
               choices: tuple[str, ...] | None = None, default: str | None = None) -> str | None: ...

    def string(self, field: str, *, required: bool = False, non_empty: bool = False,
               choices: tuple[str, ...] | None = None, default: str | None = None) -> str | None:
        value = self.record.get(field)
        if value is None:
            if required:
                raise self.error(field, "missing; expected a string")
            return default
        if not isinstance(value, str):
            raise self.error(field, f"expected a string, got {type(value).__name__} {short_repr(value)}")
        if non_empty and not value.strip():
            raise self.error(field, "empty; expected a non-empty string")
        if choices is not None and value not in choices:
            raise self.error(field, f"unknown value {short_repr(value)}; expected one of {list(choices)}")
        return value

    def string_list(self, field: str, *, default: list[str] | None = None, unique: bool = False) -> list[str]:
        value = self.record.get(field)
        if value is None:
            return list(default or [])
        if not isinstance(value, list):
            raise self.error(field, f"expected a list of strings, got {type(value).__name__}")
        for i, item in enumerate(value):
            if not isinstance(item, str) or not item.strip():
                raise self.error(f"{field}[{i}]", f"expected a non-empty string, got {short_repr(item)}")
        if unique:
            seen = set()
            for i, item in enumerate(value):
                if item in seen:
                    raise self.error(f"{field}[{i}]", f"{short_repr(item)} appears twice; expected unique values")
                seen.add(item)
        return list(value)


def finite_number(value: Any) -> bool:
    """True for an int or float that is finite as a 64-bit float (bool is not a number here; an int too
    large for a float, such as 10**400, is not finite)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def is_int(value: Any) -> bool:
    """True for an int (not bool), or a float with an integral value."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def int_in_range(value: Any, low: int, high: int = INT32_MAX) -> bool:
    """True for a whole number (see :func:`is_int`) with ``low <= value <= high`` (default high: the Int32
    maximum, 2147483647, the range of the rank and grade columns)."""
    return is_int(value) and low <= value <= high
