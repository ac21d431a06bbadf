"""Chunking a documents frame into the frozen ``corpus_snapshot`` table, and hashing it.

The snapshot is what every later stage points at: golden relevant ids, retrieved ids and claim
support ids are all ``chunk_id`` values of the form ``doc_id#n``. Freezing and versioning the
document set (with its validity dates and permissions) before any question is labelled is the first
step of a Cranfield-style test collection (E. M. Voorhees, "The Philosophy of Information Retrieval
Evaluation", CLEF 2001, LNCS 2406); chunk ids stay stable within a run and name their document and
position, as the segment ids of TREC RAG 2024's segmented MS MARCO V2.1 corpus do, and a chunking
experiment that changes them needs the golden set re-annotated on purpose.

Text normalisation (applied by every reader before chunking, and again here): a leading UTF-8 BOM
(U+FEFF) is removed and CRLF / lone CR line ends become LF. Nothing else in the text is changed.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import re

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.plain_names import CHUNKING_STRATEGIES
from rag_eval_pipeline.core.table_schema import conform_columns

_DOCUMENT_COLUMNS: dict[str, pl.DataType | type[pl.DataType]] = {
    "doc_id": pl.Utf8,
    "title": pl.Utf8,
    "text": pl.Utf8,
    "source": pl.Utf8,
    "doc_type": pl.Utf8,
    "language": pl.Utf8,
    "status": pl.Utf8,
    "replaced_by": pl.Utf8,
    "acl": pl.List(pl.Utf8),
    "valid_from": pl.Date,
    "valid_to": pl.Date,
}
#: Schema of the intermediate ``documents`` frame (docs/CONTRACTS.md). Not persisted.
DOCUMENTS_SCHEMA = pl.Schema(_DOCUMENT_COLUMNS)

STRATEGIES = CHUNKING_STRATEGIES  # declared in core.plain_names, which the configuration imports
_CANONICAL_HEADER = "corpus_snapshot/v1"
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n")
# A sentence ends with . ! ? or … (optionally followed by closing quotes/brackets), then whitespace.
_SENTENCE_END = re.compile(r"[.!?…][\"'»”’)\]]*(\s+)")


def normalise_text(text: str) -> str:
    """Remove a leading BOM and turn CRLF / CR line ends into LF.

    Input: any str. Output: the same text with only those two repairs. Raises nothing.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def empty_documents() -> pl.DataFrame:
    """An empty documents frame with :data:`DOCUMENTS_SCHEMA`."""
    return pl.DataFrame(schema=DOCUMENTS_SCHEMA)


def conform_documents(df: pl.DataFrame) -> pl.DataFrame:
    """Check a documents frame against :data:`DOCUMENTS_SCHEMA`; return it in declared column order.

    All-null / empty-list literal columns are cast to the declared type. Raises SchemaError naming the
    column when one is missing, extra or of another dtype.
    """
    return conform_columns(df, DOCUMENTS_SCHEMA, "documents frame")


def split_paragraphs(text: str) -> list[str]:
    """Split normalised text on blank lines (a line holding only spaces/tabs counts as blank).

    Input: str. Output: the non-empty paragraphs, each stripped of surrounding whitespace, in order.
    """
    return _paragraphs(normalise_text(text))


def _paragraphs(text: str) -> list[str]:
    parts = _PARAGRAPH_BREAK.split(text)
    return [p.strip() for p in parts if p.strip()]


def _sentences(text: str) -> list[str]:
    """Split text after each sentence end; the whitespace between sentences is dropped."""
    out, start = [], 0
    for m in _SENTENCE_END.finditer(text):
        out.append(text[start:m.start(1)])
        start = m.end()
    out.append(text[start:])
    return [s for s in out if s]


def _split_long(paragraph: str, max_chars: int) -> list[str]:
    """Cut a paragraph longer than ``max_chars`` into pieces of at most ``max_chars`` characters.

    Sentences (ending in . ! ? …) are packed greedily; a single sentence longer than ``max_chars`` is
    cut at the last whitespace before the limit, or hard at the limit when it has none.
    """
    if len(paragraph) <= max_chars:
        return [paragraph]
    sentences = _sentences(paragraph)
    pieces: list[str] = []
    current = ""
    for sentence in sentences:
        while len(sentence) > max_chars:
            if current:
                pieces.append(current)
                current = ""
            cut = sentence.rfind(" ", 0, max_chars + 1)
            if cut <= 0:
                cut = max_chars
            pieces.append(sentence[:cut].rstrip())
            sentence = sentence[cut:].lstrip()
        if not sentence:
            continue
        candidate = f"{current} {sentence}" if current else sentence
        if len(candidate) <= max_chars:
            current = candidate
        else:
            pieces.append(current)
            current = sentence
    if current:
        pieces.append(current)
    return pieces


def chunk_text(text: str, strategy: str = "paragraphs", max_chars: int = 1200, merge_below: int = 0) -> list[str]:
    """Cut one document's text into chunk texts.

    Input: the document text; ``strategy`` "paragraphs" (split on blank lines; a paragraph longer than
    ``max_chars`` is split on sentence boundaries) or "document" (the whole stripped text is one
    chunk, never split: for datasets whose relevance labels are per document, such as BEIR and SQuAD);
    ``merge_below``: when > 0, a paragraph shorter than this many characters is joined (with a blank
    line) to the paragraphs after it while the result stays within ``max_chars``. The default 0 keeps
    one paragraph per chunk, so ``doc_id#n`` is paragraph n counted from 0.
    Output: list of non-empty chunk texts (empty when the text is blank). Raises ConfigError for an
    unknown strategy or a non-positive ``max_chars``.
    """
    if strategy not in STRATEGIES:
        raise ConfigError(f"chunking strategy {strategy!r} is unknown; expected one of {list(STRATEGIES)}")
    if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars <= 0:
        raise ConfigError(f"chunking max_chars must be a positive integer, got {max_chars!r}")
    text = normalise_text(text)
    if strategy == "document":
        stripped = text.strip()
        return [stripped] if stripped else []
    paragraphs = _paragraphs(text)
    if merge_below > 0:
        merged: list[str] = []
        for para in paragraphs:
            if merged and len(merged[-1]) < merge_below and len(merged[-1]) + 2 + len(para) <= max_chars:
                merged[-1] = f"{merged[-1]}\n\n{para}"
            else:
                merged.append(para)
        paragraphs = merged
    chunks: list[str] = []
    for para in paragraphs:
        chunks.extend(_split_long(para, max_chars))
    return chunks


def chunk_documents(documents: pl.DataFrame, strategy: str = "paragraphs", max_chars: int = 1200,
                    merge_below: int = 0) -> pl.DataFrame:
    """Chunk a documents frame into the ``corpus_snapshot`` table.

    Input: a documents frame (:data:`DOCUMENTS_SCHEMA`, docs/CONTRACTS.md); ``strategy``,
    ``max_chars`` and ``merge_below`` as in :func:`chunk_text`.
    Output: one row per chunk, schema ``corpus_snapshot`` (core/tables.py), sorted by doc_id then
    chunk_index; ``doc_id`` and ``replaced_by`` in Unicode NFC (Unicode Standard Annex #15);
    ``chunk_id`` = ``f"{doc_id}#{n}"`` with n counted from 0 within the document; every
    document column is copied onto its chunks; ``sha256`` is the hex sha256 of the UTF-8 chunk text.
    Raises InputError (file = the document's ``source``, field ``text``) for a document whose text is
    empty after normalisation, InputError (field ``doc_id``) for a missing, duplicate (after NFC: two
    ids that differ only in normalisation are shown with their code points) or '#'-holding doc_id,
    SchemaError for a frame of the wrong shape, ConfigError for a bad strategy / max_chars.
    Definition: a frozen, versioned document set (Voorhees 2002) with stable chunk ids (module docstring).
    """
    documents = conform_documents(documents)
    if strategy not in STRATEGIES:
        raise ConfigError(f"chunking strategy {strategy!r} is unknown; expected one of {list(STRATEGIES)}")
    # Ids in NFC whatever the source (an NFD name from macOS and its NFC twin are one doc_id)
    documents = documents.with_columns(pl.col("doc_id").alias("_written")).with_columns(
        pl.col("doc_id").str.normalize("NFC"), pl.col("replaced_by").str.normalize("NFC"))
    rows: dict[str, list] = {name: [] for name in tables.SCHEMAS["corpus_snapshot"]}
    seen: dict[str, tuple[str | None, str]] = {}  # NFC doc_id -> (source, doc_id as written)
    for doc in documents.sort("doc_id", "_written", nulls_last=True).iter_rows(named=True):
        doc_id, source = doc["doc_id"], doc["source"]
        if not doc_id:
            raise InputError("document without a doc_id; expected a non-empty string", path=source, field="doc_id")
        if "#" in doc_id:
            raise InputError(f"doc_id {doc_id!r} holds '#', which separates doc_id and chunk number in chunk ids",
                             path=source, field="doc_id")
        if doc_id in seen:
            note = twin_note(seen[doc_id][1], doc["_written"])
            raise InputError(f"doc_id {doc_id!r} appears twice (also from {seen[doc_id][0]}){note}; expected unique "
                             "doc ids", path=source, field="doc_id")
        seen[doc_id] = (source, doc["_written"])
        pieces = chunk_text(doc["text"] or "", strategy, max_chars, merge_below)
        if not pieces:
            raise InputError(f"document {doc_id!r} is empty; expected some text", path=source, field="text")
        for n, piece in enumerate(pieces):
            rows["chunk_id"].append(f"{doc_id}#{n}")
            rows["chunk_index"].append(n)
            rows["text"].append(piece)
            rows["sha256"].append(hashlib.sha256(piece.encode("utf-8")).hexdigest())
            for col in DOCUMENTS_SCHEMA:
                if col != "text":  # doc_id and replaced_by as normalised above
                    rows[col].append(doc[col])
    snapshot = pl.DataFrame(rows, schema=tables.SCHEMAS["corpus_snapshot"])
    return tables.conform(snapshot, "corpus_snapshot")


def code_points(value: str, limit: int = 48) -> str:
    """The code points of a string, as ``U+0067 U+0075 U+00ED``: what tells two same-looking ids apart.

    Output: at most ``limit`` code points, then ``...``. Raises nothing.
    """
    points = " ".join(f"U+{ord(ch):04X}" for ch in value[:limit])
    return points + (" ..." if len(value) > limit else "")


def twin_note(first: str, second: str) -> str:
    """'' when two ids are written identically; otherwise a note giving both ids' code points (called
    on ids whose NFC forms are equal, so they differ only in Unicode normalisation)."""
    if first == second:
        return ""
    return (f" (the two ids differ only in Unicode normalisation: {first!r} is {code_points(first)}, "
            f"{second!r} is {code_points(second)}; both are read as NFC)")


def _canonical(value):
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def corpus_version(snapshot: pl.DataFrame) -> str:
    """Content hash of a corpus snapshot.

    Input: a ``corpus_snapshot`` table. Output: 64 hex chars, the sha256 of a canonical serialisation:
    a header line, then one JSON array per chunk (every column in declared order, dates as ISO
    strings, lists kept in order), rows sorted by ``chunk_id``. The same rows in any order give the
    same version; any change to a text or to any metadata column gives a new one.
    Raises SchemaError for a table of the wrong shape, InputError for a duplicate chunk_id.
    Definition: module docstring (the corpus version records every change of the corpus).
    """
    snapshot = tables.conform(snapshot, "corpus_snapshot")
    dup = snapshot.group_by("chunk_id").len().filter(pl.col("len") > 1)
    if dup.height:
        raise InputError(f"chunk_id {dup['chunk_id'][0]!r} appears {dup['len'][0]} times; expected unique ids",
                         field="chunk_id")
    h = hashlib.sha256()
    h.update((_CANONICAL_HEADER + "\n").encode())
    # Dates become ISO strings in polars (identical to date.isoformat(), zero-padded years included), so every
    # row holds only JSON-native values and is encoded as is: the same bytes as json.dumps of the
    # _canonical() list, ~3x faster (200,000 chunks: ~3 s instead of ~10 s).
    temporal = [c for c, t in snapshot.schema.items() if t == pl.Date]
    rows = snapshot.sort("chunk_id").with_columns(pl.col(c).dt.to_string("%Y-%m-%d") for c in temporal)
    encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
    for batch in rows.iter_slices(50_000):
        h.update("".join(encode(row) + "\n" for row in batch.iter_rows()).encode("utf-8"))
    return h.hexdigest()
