"""Read a folder of documents (one file per document) into the ``documents`` frame.

Folder layout
-------------
- Every ``*.md`` / ``*.txt`` file directly in the folder is one document; ``doc_id`` is the file
  name without its extension (``return-policy.md`` → ``return-policy``), in Unicode NFC (a name
  saved on macOS arrives as NFD: ``guía.md`` in either form is the doc_id ``guía``, and two files
  whose names differ only in normalisation are one doc_id twice, an error). Sub-folders are not read.
- Only regular files are read (a symbolic link to one is followed). A named pipe, socket or device,
  a symbolic link loop or a dangling link with a document's name is an error naming it; it is never
  opened for a blocking read.
- Names starting with ``.`` or ``_`` (files or folders) are ignored: use ``_notes.md`` for a file
  that must sit beside the corpus without being part of it.
- Any other file or folder is an error naming it (a stray ``.pdf`` or ``.docx`` is not silently
  skipped: the corpus would then differ from what its author believes it is).

File format
-----------
UTF-8 text. A leading BOM is removed and CRLF / CR line ends become LF, silently (these two repairs
do not change what a reader sees). An optional YAML front-matter block opens on the first line with
``---`` and closes with a line ``---`` (or ``...``); it is a mapping with these keys, all optional:

=============  =========================================================  ==================
key            meaning                                                     default
=============  =========================================================  ==================
title          human title                                                 the doc_id
doc_type       free label (policy, warranty, guide, ...)                   null
language       language tag such as ``es`` or ``en``                       null
status         ``active`` / ``withdrawn`` / ``replaced``                   ``active``
replaced_by    doc_id of the newer document; required iff ``replaced``     null
acl            list of groups allowed to read it; absent/empty = everyone  ``[]``
valid_from     ISO date (YYYY-MM-DD)                                       null
valid_to       ISO date, not before ``valid_from``                         null
=============  =========================================================  ==================

Any other key is an error (a misspelt ``replaced_by`` must not pass unnoticed). The text after the
block is the document body; paragraphs are separated by blank lines (see ``core/corpus.py``).
``source`` is ``<folder name>/<file name>`` so that it does not depend on where the folder lives.

Validity and the test user's permissions are frozen with the documents, so that withdrawn / replaced
documents and permissions can be segments of their own (docs/METRICS.md).
"""

from __future__ import annotations

import datetime as _dt
import re
from pathlib import Path

import polars as pl
import yaml

from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA, conform_documents, empty_documents
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources._records import (
    decode_utf8,
    normalise_id,
    read_regular_file,
    short_repr,
    twin_note,
)
from rag_eval_pipeline.core.tables import CHUNK_STATUS
from rag_eval_pipeline.core.yamlio import load_yaml_text

DOC_SUFFIXES = (".md", ".txt")
FRONT_MATTER_KEYS = ("title", "doc_type", "language", "status", "replaced_by", "acl", "valid_from", "valid_to")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def _ignored(name: str) -> bool:
    return name.startswith(".") or name.startswith("_")


def _key_line(fm_lines: list[str], key: str, first_line: int) -> int:
    """Line number (1-based, in the file) of ``key:`` inside the front matter, or its opening line."""
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*:")
    for i, line in enumerate(fm_lines):
        if pattern.match(line):
            return first_line + i
    return first_line - 1


def _parse_date(value, path: str, line: int, field: str) -> _dt.date | None:
    if value is None or value == "":
        return None
    if isinstance(value, _dt.datetime):
        raise InputError(f"got a date-time {value!r}; expected a date YYYY-MM-DD", path=path, line=line, field=field)
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise InputError(f"got {short_repr(value)}; expected an ISO date YYYY-MM-DD", path=path, line=line, field=field)


def _read_one(file: Path, folder_name: str) -> tuple[dict, int | None]:
    """Parse one document file. Output: (document row, line of ``replaced_by`` or None)."""
    path = str(file)
    data = read_regular_file(file, "a regular .md/.txt file")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(
            f"binary file: NUL byte at byte offset {nul}; expected UTF-8 text",
            path=path, line=data.count(b"\n", 0, nul) + 1, field="encoding",
        )
    text = decode_utf8(data, path)
    lines = text.split("\n")
    meta: dict = {}
    fm_lines: list[str] = []
    body_first_line = 1
    if lines and lines[0].strip() == "---":
        close = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), None)
        if close is None:
            raise InputError("front matter opened with '---' is never closed; expected a closing '---' line",
                             path=path, line=1, field="front_matter")
        fm_lines = lines[1:close]
        body_first_line = close + 2
        try:
            loaded = load_yaml_text("\n".join(fm_lines), source=path, line_offset=1)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = mark.line + 2 if mark is not None else 1
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise InputError(f"front matter is not valid YAML ({problem}); expected 'key: value' lines",
                             path=path, line=line, field="front_matter") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise InputError(f"front matter is a {type(loaded).__name__}; expected a mapping of keys to values",
                             path=path, line=2, field="front_matter")
        meta = loaded
        body = "\n".join(lines[close + 1:])
    else:
        body = text

    def where(key: str) -> int:
        return _key_line(fm_lines, key, 2)

    for key in meta:
        if key not in FRONT_MATTER_KEYS:
            raise InputError(f"unknown front-matter key {key!r}; expected one of {list(FRONT_MATTER_KEYS)}",
                             path=path, line=where(str(key)), field=str(key))

    def text_field(key: str, default=None) -> str | None:
        value = meta.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InputError(f"got {type(value).__name__} {short_repr(value)}; expected a string", path=path,
                             line=where(key), field=key)
        value = str(value).strip()
        return value or default

    doc_id = normalise_id(file.stem)
    title = text_field("title", doc_id)
    doc_type = text_field("doc_type")
    language = text_field("language")
    if language is not None and not _LANGUAGE.match(language):
        raise InputError(f"got {short_repr(language)}; expected a language tag such as 'es' or 'en'", path=path,
                         line=where("language"), field="language")
    status = text_field("status", "active")
    if status not in CHUNK_STATUS:
        raise InputError(f"unknown status {short_repr(status)}; expected one of {list(CHUNK_STATUS)}", path=path,
                         line=where("status"), field="status")
    replaced_by = text_field("replaced_by")
    replaced_by = None if replaced_by is None else normalise_id(replaced_by)
    if status == "replaced" and replaced_by is None:
        raise InputError("status is 'replaced' but replaced_by is missing; expected the doc_id of the newer document",
                         path=path, line=where("status"), field="replaced_by")
    if status != "replaced" and replaced_by is not None:
        raise InputError(f"replaced_by is set but status is {status!r}; expected replaced_by only with status "
                         "'replaced'", path=path, line=where("replaced_by"), field="replaced_by")
    if replaced_by == doc_id:
        raise InputError("replaced_by points to the document itself; expected another doc_id", path=path,
                         line=where("replaced_by"), field="replaced_by")
    acl_raw = meta.get("acl")
    if acl_raw is None:
        acl: list[str] = []
    elif isinstance(acl_raw, list) and all(isinstance(g, str) and g.strip() for g in acl_raw):
        acl = sorted({g.strip() for g in acl_raw})
    else:
        raise InputError(f"got {short_repr(acl_raw)}; expected a list of group names, e.g. [support-staff]", path=path,
                         line=where("acl"), field="acl")
    valid_from = _parse_date(meta.get("valid_from"), path, where("valid_from"), "valid_from")
    valid_to = _parse_date(meta.get("valid_to"), path, where("valid_to"), "valid_to")
    if valid_from and valid_to and valid_to < valid_from:
        raise InputError(f"valid_to {valid_to} is before valid_from {valid_from}; expected valid_from <= valid_to",
                         path=path, line=where("valid_to"), field="valid_to")
    if not body.strip():
        raise InputError("empty document: no text after the front matter; expected at least one paragraph",
                         path=path, line=body_first_line, field="text")
    row = {
        "doc_id": doc_id, "title": title, "text": body.strip("\n"),
        "source": normalise_id(f"{folder_name}/{file.name}"),
        "doc_type": doc_type, "language": language, "status": status, "replaced_by": replaced_by,
        "acl": acl, "valid_from": valid_from, "valid_to": valid_to,
    }
    return row, (where("replaced_by") if replaced_by else None)


def _front_matter_lines(file: Path) -> list[str]:
    """The front-matter lines of a document (those between the opening and closing ``---``), or []."""
    lines = decode_utf8(read_regular_file(file), str(file)).split("\n")
    if not lines or lines[0].strip() != "---":
        return []
    close = next((i for i in range(1, len(lines)) if lines[i].strip() in ("---", "...")), len(lines))
    return lines[1:close]


def _bad_value(file: Path, exc: ValueError) -> InputError:
    """Locate a front-matter value that YAML recognised by its shape but could not build (a date such
    as 2025-02-30, an hour 25): each line's value is loaded alone to find it. Output: the InputError."""
    key, line, value = None, None, None
    current_key = None
    for i, raw in enumerate(_front_matter_lines(file)):
        m = re.match(r"^(\s*)([^\s:#'\"][^:#]*?)\s*:(\s+(.*))?$", raw)
        if m and not m.group(1):
            current_key = m.group(2)
        candidate = (m.group(4) or "") if m else raw.strip().removeprefix("- ")
        try:
            yaml.safe_load(candidate)
        except ValueError:
            key, line, value = (m.group(2) if m else current_key), i + 2, candidate.strip()
            break
        except yaml.YAMLError:
            continue
    what = f"got {short_repr(value)}: {exc}" if value is not None else f"a value cannot be read: {exc}"
    hint = "expected a real calendar date YYYY-MM-DD" if value and re.match(r"^\d{4}-\d", value) else \
        "expected a valid value (quote it to keep it as text)"
    return InputError(f"front matter {what}; {hint}", path=str(file), line=line, field=key or "front_matter")


def load_documents_dir(path: str | Path) -> pl.DataFrame:
    """Read every document file of a folder into a documents frame.

    Input: a folder path (layout and front-matter keys in this module's docstring).
    Output: the ``documents`` frame (docs/CONTRACTS.md; columns doc_id, title, text, source, doc_type,
    language, status, replaced_by, acl list[str], valid_from Date, valid_to Date), one row per file,
    sorted by doc_id. BOM and CRLF are repaired silently.
    Raises InputError naming the file, the line and the field, with what was expected, for: a missing
    folder; a file with another extension or a sub-folder; an entry that is not a regular file (a
    named pipe, socket or device: refused without blocking) or cannot be opened (a symbolic link loop,
    a dangling link); a binary file (NUL byte, with its byte offset); text that is not UTF-8 (byte
    offset); two files with the same doc_id (``a.md`` and ``a.txt``, or two names that differ only in
    Unicode normalisation: the message gives both names' code points); front matter that is unclosed,
    not YAML, not a mapping or has an unknown key; an unknown status; ``replaced`` without
    ``replaced_by``; ``replaced_by`` on another status, pointing to itself or to an unknown doc_id; a
    bad language tag, acl or date (an impossible date such as 2025-02-30 included); an empty
    document; a folder with no documents.
    Definition: module docstring (validity, permissions, withdrawn/replaced).
    """
    folder = Path(path)
    if not folder.is_dir():
        raise InputError("folder not found; expected a folder of .md/.txt documents", path=str(folder))
    rows: list[dict] = []
    replaced_lines: dict[str, int | None] = {}
    origin: dict[str, str] = {}
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if _ignored(entry.name):
            continue
        if entry.is_dir():
            raise InputError("sub-folders are not read; expected only .md/.txt files (prefix the folder name "
                             "with '_' to keep it here)", path=str(entry), field="file")
        if entry.suffix not in DOC_SUFFIXES:
            raise InputError(f"unsupported file type {entry.suffix or '(none)'!r}; expected .md or .txt (prefix the "
                             "name with '_' to keep it here unread)", path=str(entry), field="file")
        try:
            row, rb_line = _read_one(entry, folder.name)
        except ValueError as exc:  # YAML built a value of a known shape and failed (a date 2025-02-30)
            raise _bad_value(entry, exc) from None
        if row["doc_id"] in origin:
            first = Path(origin[row["doc_id"]])
            raise InputError(f"doc_id {row['doc_id']!r} is also defined by {first}"
                             f"{twin_note(first.stem, entry.stem).replace(' ids ', ' file names ')}; expected one "
                             "file per doc_id", path=str(entry), field="doc_id")
        if "#" in row["doc_id"]:
            raise InputError("file name holds '#', which separates doc_id and chunk number; expected a name "
                             "without '#'", path=str(entry), field="doc_id")
        origin[row["doc_id"]] = str(entry)
        replaced_lines[row["doc_id"]] = rb_line
        rows.append(row)
    if not rows:
        raise InputError("no .md/.txt documents in the folder; expected at least one", path=str(folder))
    for row in rows:
        target = row["replaced_by"]
        if target is not None and target not in origin:
            raise InputError(f"replaced_by {target!r} is not a doc_id in this folder; expected one of the "
                             "folder's doc ids", path=origin[row["doc_id"]], line=replaced_lines[row["doc_id"]],
                             field="replaced_by")
    df = pl.DataFrame(rows, schema=DOCUMENTS_SCHEMA) if rows else empty_documents()
    return conform_documents(df.sort("doc_id"))
