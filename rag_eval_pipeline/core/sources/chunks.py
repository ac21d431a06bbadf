"""A corpus of your own chunks: ``corpus.source: chunks``, one JSONL line or Parquet row per chunk.

For a team that already chunks its documents: the chunks (and their ids) are used as they are, so the
golden set and every system's log can use the ids the team's retriever returns. Nothing is re-chunked;
``corpus.chunking`` does not apply.

File format (``corpus.path`` is the file: ``.jsonl`` / ``.ndjson`` or ``.parquet``)
-----------------------------------------------------------------------------------
=============  ==========================================================================  =============
field          meaning                                                                      default
=============  ==========================================================================  =============
chunk_id       required: your id of the chunk, kept as is (read in Unicode NFC); unique     --
               in the file; no whitespace (TREC files cannot hold it)
doc_id         required: the document the chunk belongs to (NFC; no whitespace)             --
text           required, non-empty: the chunk's text (a BOM and CRLF are repaired)          --
title          the document's title                                                         the doc_id
position       the chunk's place in its document, a whole number >= 0, unique within the    file order
               document; give it on every chunk of a document or on none
doc_type       free label (policy, warranty, guide, ...)                                    null
language       language tag such as ``es`` or ``en``                                        null
status         ``active`` / ``withdrawn`` / ``replaced``                                    ``active``
replaced_by    doc_id of the newer document (a doc_id of this file); iff ``replaced``       null
acl            list of groups allowed to read the chunk; absent/empty = everyone           ``[]``
valid_from     ISO date YYYY-MM-DD (or a Parquet date)                                      null
valid_to       ISO date, not before ``valid_from``                                          null
metadata       any object; not stored (room for your own bookkeeping)                       --
=============  ==========================================================================  =============

The metadata fields mean what they mean in a documents folder (``core/sources/documents.py``). Any
other field is an error naming the file, the line (Parquet: row) and the field. ``source`` is the
file's name; ``chunk_index`` is ``position`` (or the chunk's order within its document in the file);
``sha256`` is the hex sha256 of the UTF-8 text. The corpus version is the content hash of the
resulting snapshot (``core.corpus.corpus_version``), as for every source.

The corpus-source registry knows this reader as ``chunks`` (``core/sources/corpus/chunks.py``: ``path``
is a file, nothing is chunked, no questions of its own, :func:`load_chunks` returns the snapshot).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.corpus import normalise_text
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources._records import (
    Fields,
    int_in_range,
    normalise_id,
    read_records,
    short_repr,
    twin_note,
)

CHUNK_FIELDS = ("chunk_id", "doc_id", "text", "title", "position", "doc_type", "language", "status", "replaced_by",
                "acl", "valid_from", "valid_to", "metadata")
_LANGUAGE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
_SPACE = re.compile(r"\s")


def _date(f: Fields, field: str) -> _dt.date | None:
    value = f.record.get(field)
    if value is None or value == "":
        return None
    if isinstance(value, _dt.datetime):
        raise f.error(field, f"got a date-time {short_repr(value)}; expected a date YYYY-MM-DD")
    if isinstance(value, _dt.date):
        return value
    if isinstance(value, str):
        try:
            return _dt.date.fromisoformat(value.strip())
        except ValueError:
            pass
    raise f.error(field, f"got {short_repr(value)}; expected an ISO date YYYY-MM-DD (a real calendar date)")


def _id(f: Fields, field: str) -> str:
    value = f.string(field, required=True, non_empty=True)
    if _SPACE.search(value):
        raise f.error(field, f"{short_repr(value)} contains whitespace; expected an id without spaces (TREC run and "
                             "qrels files, which trec_eval reads, cannot hold one)")
    return normalise_id(value)


def parse_chunk_record(record: dict, path: str, line: int) -> dict:
    """Check one chunk record (format in the module docstring).

    Output: a dict with ``chunk_id``, ``doc_id``, ``text``, ``title`` (None when absent),
    ``position`` (None when absent), ``doc_type``, ``language``, ``status``, ``replaced_by``,
    ``acl`` (sorted unique list), ``valid_from``, ``valid_to`` (``datetime.date`` or None).
    Raises InputError naming file, line and field for an unknown field, a missing or empty
    chunk_id / doc_id / text, an id holding whitespace, a position that is not a whole number from
    0 to 2147483647, an unknown status, replaced_by without status ``replaced`` (or the reverse) or
    pointing to its own document, a bad language tag, acl or date, valid_to before valid_from.
    """
    f = Fields(record, path, line)
    f.check_keys(CHUNK_FIELDS)
    chunk_id, doc_id = _id(f, "chunk_id"), _id(f, "doc_id")
    text = f.string("text", required=True, non_empty=True)
    text = normalise_text(text)
    position = record.get("position")
    if position is not None and not int_in_range(position, 0):
        raise f.error("position", f"got {short_repr(position)}; expected a whole number >= 0 (the chunk's place in "
                                  "its document)")
    if record.get("metadata") is not None and not isinstance(record["metadata"], dict):
        raise f.error("metadata", f"got {type(record['metadata']).__name__}; expected an object")
    title = f.string("title")
    language = f.string("language")
    if language is not None and not _LANGUAGE.match(language.strip()):
        raise f.error("language", f"got {short_repr(language)}; expected a language tag such as 'es' or 'en'")
    status = f.string("status", choices=tables.CHUNK_STATUS, default="active")
    replaced_by = f.string("replaced_by")
    replaced_by = None if replaced_by is None or not replaced_by.strip() else normalise_id(replaced_by.strip())
    if status == "replaced" and replaced_by is None:
        raise f.error("replaced_by", "status is 'replaced' but replaced_by is missing; expected the doc_id of the "
                                     "newer document")
    if status != "replaced" and replaced_by is not None:
        raise f.error("replaced_by", f"replaced_by is set but status is {status!r}; expected replaced_by only with "
                                     "status 'replaced'")
    if replaced_by == doc_id:
        raise f.error("replaced_by", "replaced_by points to the chunk's own document; expected another doc_id")
    acl = sorted({g.strip() for g in f.string_list("acl")})
    valid_from, valid_to = _date(f, "valid_from"), _date(f, "valid_to")
    if valid_from and valid_to and valid_to < valid_from:
        raise f.error("valid_to", f"valid_to {valid_to} is before valid_from {valid_from}; expected valid_from <= "
                                  "valid_to")
    doc_type = f.string("doc_type")
    return {
        "chunk_id": chunk_id, "doc_id": doc_id, "text": text,
        "title": title.strip() if title and title.strip() else None,
        "position": None if position is None else int(position),
        "doc_type": doc_type.strip() if doc_type and doc_type.strip() else None,
        "language": language.strip() if language else None, "status": status, "replaced_by": replaced_by,
        "acl": acl, "valid_from": valid_from, "valid_to": valid_to,
    }


def load_chunks(path: str | Path) -> pl.DataFrame:
    """Read a chunks file into the ``corpus_snapshot`` table.

    Input: a ``.jsonl`` / ``.ndjson`` / ``.parquet`` path (format in the module docstring).
    Output: the ``corpus_snapshot`` table (core/tables.py), one row per chunk, sorted by doc_id then
    chunk_index; ``chunk_id`` as written (NFC), ``chunk_index`` = ``position`` or the order of the
    chunk within its document in the file, ``source`` = the file's name, ``title`` = the doc_id when
    absent, ``sha256`` = hex sha256 of the UTF-8 text.
    Raises InputError naming the file, the line (Parquet: row) and the field for everything
    :func:`parse_chunk_record` refuses, for a file that is missing, unreadable, of another suffix or
    malformed (as ``read_records``), for a chunk_id given twice (two ids that differ only in Unicode
    normalisation are shown with their code points), for a position repeated within a document or
    given on only some of its chunks, for a ``replaced_by`` that is no doc_id of the file, and for a
    file without any chunk.
    """
    p = Path(path)
    source = normalise_id(p.name)
    rows: list[dict] = []
    first: dict[str, tuple[int, str]] = {}  # NFC chunk id -> (line, id as written)
    lines: dict[str, int] = {}  # doc_id -> first line
    replaced: list[tuple[int, str]] = []
    for line, record in read_records(p):
        row = parse_chunk_record(record, str(p), line)
        cid = row["chunk_id"]
        written = str(record.get("chunk_id"))
        if cid in first:
            at, was = first[cid]
            raise InputError(f"chunk_id {cid!r} appears twice (first on line {at}){twin_note(was, written)}; expected "
                             "unique chunk ids", path=str(p), line=line, field="chunk_id")
        first[cid] = (line, written)
        lines.setdefault(row["doc_id"], line)
        if row["replaced_by"] is not None:
            replaced.append((line, row["replaced_by"]))
        row["_line"] = line
        rows.append(row)
    if not rows:
        raise InputError("no chunks in the file; expected one JSON object (or Parquet row) per chunk", path=str(p))
    for line, target in replaced:
        if target not in lines:
            raise InputError(f"replaced_by {target!r} is not a doc_id of this file; expected the doc_id of the newer "
                             "document", path=str(p), line=line, field="replaced_by")
    by_doc: dict[str, list[dict]] = {}
    for row in rows:
        by_doc.setdefault(row["doc_id"], []).append(row)
    out: dict[str, list] = {name: [] for name in tables.SCHEMAS["corpus_snapshot"]}
    for doc_id in sorted(by_doc):
        chunks = by_doc[doc_id]
        given = [c for c in chunks if c["position"] is not None]
        if given and len(given) != len(chunks):
            missing = next(c for c in chunks if c["position"] is None)
            raise InputError(f"document {doc_id!r}: position given on some of its chunks but not on this one; expected "
                             "position on every chunk of a document or on none", path=str(p), line=missing["_line"],
                             field="position")
        if given:
            seen: dict[int, int] = {}
            for c in chunks:
                if c["position"] in seen:
                    raise InputError(f"document {doc_id!r}: position {c['position']} repeated (also line "
                                     f"{seen[c['position']]}); expected distinct positions within a document",
                                     path=str(p), line=c["_line"], field="position")
                seen[c["position"]] = c["_line"]
            chunks = sorted(chunks, key=lambda c: c["position"])
        for n, c in enumerate(chunks):
            out["chunk_id"].append(c["chunk_id"])
            out["doc_id"].append(doc_id)
            out["chunk_index"].append(c["position"] if given else n)
            out["text"].append(c["text"])
            out["title"].append(c["title"] or doc_id)
            out["source"].append(source)
            out["sha256"].append(hashlib.sha256(c["text"].encode("utf-8")).hexdigest())
            for col in ("doc_type", "language", "status", "replaced_by", "acl", "valid_from", "valid_to"):
                out[col].append(c[col])
    snapshot = pl.DataFrame(out, schema=tables.SCHEMAS["corpus_snapshot"])
    return tables.conform(snapshot, "corpus_snapshot")
