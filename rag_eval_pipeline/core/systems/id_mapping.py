"""Your system's ids, or its passage texts, as the snapshot's chunk ids: one mapping for every kind.

Every system kind (``logged``, ``http``, ``python``, ``traces``) builds its rows through the same
mapper (:class:`IdMapper`), so a team can evaluate a system whose retriever names chunks in its own
way. Configuration, per system (``chunk_map``, optional):

- a file path: a JSONL or Parquet file of ``{"document_id": <your id>, "chunk_id": <snapshot chunk
  id>}`` records (a relative path is resolved against the configuration's folder);
- or a mapping with any of ``file`` (as above), ``strip_prefix`` (a text removed from the front of
  every id that starts with it: ``"kb://"`` turns ``kb://faq#3`` into ``faq#3``) and ``doc_ids``
  (``true``: the ids are document ids; each maps to the document's first chunk, and the system's
  chunk-level retrieval rows are null with status ``doc_ids_only``: score it with ``relevant_docs``;
  judging and citation support read that chunk as all its document's chunks, ``doc_evidence.py``).

How one id is read (:meth:`IdMapper.chunk`): the file's entry when it has one; else the id after
``strip_prefix``; with ``doc_ids``, that id is a document id; without, it is used as is when it is
a chunk id of the snapshot, and an id naming a document that has exactly one chunk maps to that
chunk. An id that still names no chunk is an error at its file, line and field.

A hit that carries passage ``text`` and no id (a log or reply hit ``{"text": ..., "score": ...}``,
a trace document with ``document.content`` and no ``document.id``) is aligned to the snapshot
(:meth:`IdMapper.text`): first by exact text, then by normalised text (Unicode NFKC, case folded,
whitespace collapsed, surrounding whitespace and quotes removed); when several chunks share the
text, the first by (doc_id, chunk_index). A passage that matches no chunk is left out of the
ranking (the hits after it move up), counted (``unmatched_texts``) and listed with its question and
position (``unmatched_examples``, first 50), so the share of unmatched passages is visible in the
run's metadata and in ``rag-eval run`` / ``rag-eval check``.

Two hits that map to one chunk (two of your ids on one snapshot chunk, or two chunks of one
document with ``doc_ids``) keep the first and count the rest (``duplicates_dropped``).
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.section_errors import did_you_mean

CHUNK_MAP_KEYS = ("file", "strip_prefix", "doc_ids")
_LISTED = 50
_QUOTES = "\"'“”‘’«»"


def parse_chunk_map(value: Any, *, where: str, base_dir: Path | None = None, check_file: bool = True
                    ) -> dict[str, Any] | None:
    """A ``chunk_map`` setting in its one normalised form: ``{"file", "strip_prefix", "doc_ids"}``.

    Input: the configuration's value (None, a path string, or a mapping with keys of
    :data:`CHUNK_MAP_KEYS`; an already normalised dict is returned equal), ``where`` (the file and
    system, for messages), ``base_dir`` (a relative ``file`` is resolved against it), ``check_file``
    (the file must exist). Output: None when unset, else a dict with ``file`` (absolute path string
    or None), ``strip_prefix`` (non-empty string or None), ``doc_ids`` (bool).
    Raises ConfigError naming ``where`` and the key for an unknown key, a value of the wrong type or
    a file that does not exist.
    """
    if value is None:
        return None
    if isinstance(value, str):
        value = {"file": value}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: chunk_map must be a file path or a mapping with {list(CHUNK_MAP_KEYS)}, got "
                          f"{type(value).__name__}")
    unknown = sorted(str(k) for k in value if k not in CHUNK_MAP_KEYS)
    if unknown:
        hint = did_you_mean(unknown, CHUNK_MAP_KEYS, "chunk_map")
        raise ConfigError(f"{where}: unknown key(s) {unknown} in chunk_map{hint}; expected only {list(CHUNK_MAP_KEYS)}")
    out: dict[str, Any] = {"file": None, "strip_prefix": None, "doc_ids": False}
    file = value.get("file")
    if file is not None:
        if not isinstance(file, str) or not file.strip():
            raise ConfigError(f"{where}: chunk_map.file must be a path, got {file!r}")
        path = Path(file)
        if not path.is_absolute() and base_dir is not None:
            path = (base_dir / path).resolve()
        if check_file and not path.is_file():
            raise ConfigError(f"{where}: chunk_map file {path} not found; expected a JSONL or Parquet file of "
                              "{document_id, chunk_id} records (a relative path is resolved against the "
                              "configuration's folder)")
        out["file"] = str(path)
    prefix = value.get("strip_prefix")
    if prefix is not None:
        if not isinstance(prefix, str) or not prefix:
            raise ConfigError(f"{where}: chunk_map.strip_prefix must be a non-empty string, got {prefix!r}")
        out["strip_prefix"] = prefix
    doc_ids = value.get("doc_ids", False)
    if not isinstance(doc_ids, bool):
        raise ConfigError(f"{where}: chunk_map.doc_ids must be true or false, got {doc_ids!r}")
    out["doc_ids"] = doc_ids
    if out == {"file": None, "strip_prefix": None, "doc_ids": False}:
        raise ConfigError(f"{where}: chunk_map sets nothing; expected a file, strip_prefix or doc_ids: true")
    return out


def _setting(spec: Any, name: str) -> Any:
    """A key of a system: an attribute of a typed section, or an item of a plain mapping (tests)."""
    return spec.get(name) if isinstance(spec, Mapping) else getattr(spec, name, None)


def chunk_map_of(spec: Any, *, base_dir: Path | None = None, check_file: bool = True) -> dict[str, Any] | None:
    """A system's ``chunk_map`` in the normalised form of :func:`parse_chunk_map` (None when unset).

    Input: a typed system section (its ``chunk_map`` a ``ChunkMapConfig``, a path, or None) or a plain
    mapping (the YAML form). Raises ConfigError as :func:`parse_chunk_map`."""
    value = _setting(spec, "chunk_map")
    if value is None:
        return None
    if not isinstance(value, (str, Path, Mapping)):  # the typed section's ChunkMapConfig
        value = {"file": None if value.file is None else str(value.file), "strip_prefix": value.strip_prefix,
                 "doc_ids": value.doc_ids}
    elif isinstance(value, Path):
        value = str(value)
    return parse_chunk_map(value, where=f"system {_setting(spec, 'name')!r}", base_dir=base_dir, check_file=check_file)


def doc_ids_only(spec: Any) -> bool:
    """Whether a system's ``chunk_map`` says its ids are document ids (``doc_ids: true``)."""
    cm = chunk_map_of(spec, check_file=False)
    return bool(cm and cm["doc_ids"])


def load_chunk_map_file(path: str | Path) -> dict[str, str]:
    """A ``chunk_map`` file (JSONL or Parquet; fields ``document_id``, ``chunk_id``) as a dict (ids in NFC).

    Raises InputError naming file, line and field for a missing or empty field, an unknown field or an
    id mapped twice."""
    from rag_eval_pipeline.core.sources._records import normalise_id, read_records

    out: dict[str, str] = {}
    for line, rec in read_records(path):
        unknown = sorted(k for k in rec if k not in ("document_id", "chunk_id"))
        if unknown:
            raise InputError(f"unknown field(s) {unknown}; expected only document_id and chunk_id", path=str(path),
                             line=line, field=unknown[0])
        doc, chunk = rec.get("document_id"), rec.get("chunk_id")
        for name, value in (("document_id", doc), ("chunk_id", chunk)):
            if not isinstance(value, str) or not value:
                raise InputError(f"expected a non-empty string, got {value!r}", path=str(path), line=line, field=name)
        doc = normalise_id(str(doc))
        if doc in out:
            raise InputError(f"id {doc!r} mapped twice; expected one chunk per id", path=str(path), line=line,
                             field="document_id")
        out[doc] = normalise_id(str(chunk))
    return out


def normalise_passage(text: str) -> str:
    """The form two passage texts are compared in: NFKC, case folded, whitespace collapsed, quotes and
    surrounding whitespace removed. Definition: Unicode Standard Annex #15 (NFKC) and Python's casefold."""
    folded = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    return folded.strip(_QUOTES + " ")


class IdMapper:
    """Maps one system's ids and passage texts to chunk ids of one snapshot (module docstring); thread-safe.

    Build it with :meth:`for_system`. ``stats()`` reports what it did: ``ids_as_is``, ``by_file``,
    ``by_prefix``, ``by_doc_id``, ``by_one_chunk_document``, ``text_exact``, ``text_normalised``,
    ``unmatched_texts`` and ``unmatched_examples``, ``duplicates_dropped``.
    """

    def __init__(self, snapshot: pl.DataFrame | None, chunk_map: dict[str, Any] | None = None,
                 file_map: dict[str, str] | None = None):
        self.settings = chunk_map or {"file": None, "strip_prefix": None, "doc_ids": False}
        self.file_map = file_map or {}
        self._lock = threading.Lock()
        self._counts: Counter = Counter()
        self._unmatched: list[dict[str, Any]] = []
        self.known: frozenset[str] | None = None
        self._first_chunk: dict[str, str] = {}
        self._only_chunk: dict[str, str] = {}
        self._doc_chunks: Counter = Counter()
        self._texts: list[tuple[str, str]] = []  # (chunk_id, text) in (doc_id, chunk_index) order
        self._exact: dict[str, str] | None = None  # built on the first passage to align
        self._normalised: dict[str, str] = {}
        if snapshot is None:
            return
        ordered = snapshot.select("chunk_id", "doc_id", "chunk_index", "text").sort("doc_id", "chunk_index")
        self.known = frozenset(ordered["chunk_id"].to_list())
        for cid, doc, _i, text in ordered.iter_rows():
            self._doc_chunks[doc] += 1
            self._first_chunk.setdefault(doc, cid)
            if text is not None:
                self._texts.append((cid, text))
        self._only_chunk = {d: self._first_chunk[d] for d, n in self._doc_chunks.items() if n == 1}

    def _text_index(self) -> dict[str, str]:
        with self._lock:
            if self._exact is None:
                exact: dict[str, str] = {}
                for cid, text in self._texts:
                    exact.setdefault(text, cid)
                    self._normalised.setdefault(normalise_passage(text), cid)
                self._exact = exact
            return self._exact

    @classmethod
    def for_system(cls, spec: Any, snapshot: pl.DataFrame | None, base_dir: Path | None = None) -> IdMapper:
        """The mapper of one configured system (a typed section, or a plain mapping): its ``chunk_map``
        (any accepted form) over ``snapshot``.

        Raises ConfigError for a bad ``chunk_map`` setting, InputError for a bad map file."""
        settings = chunk_map_of(spec, base_dir=base_dir)
        file_map = load_chunk_map_file(settings["file"]) if settings and settings["file"] else {}
        return cls(snapshot, settings, file_map)

    @property
    def configured(self) -> bool:
        """Whether the system has a ``chunk_map`` (file or rule)."""
        return bool(self.file_map or self.settings.get("strip_prefix") or self.settings.get("doc_ids"))

    @classmethod
    def from_chunk_ids(cls, chunk_ids, spec: Any, base_dir: Path | None = None) -> IdMapper:
        """A mapper over bare chunk ids ``doc_id#n`` (no snapshot at hand: documents read from the ids, no
        text alignment); None or empty ids read every id as is. Raises as :meth:`for_system`."""
        if not chunk_ids:
            snapshot = None
        else:
            ids = sorted(chunk_ids)
            snapshot = pl.DataFrame({"chunk_id": ids, "doc_id": [c.rsplit("#", 1)[0] for c in ids],
                                     "chunk_index": list(range(len(ids))), "text": [None] * len(ids)},
                                    schema={"chunk_id": pl.Utf8, "doc_id": pl.Utf8, "chunk_index": pl.Int64,
                                            "text": pl.Utf8})
        return cls.for_system(spec, snapshot, base_dir)

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def count_duplicate(self) -> None:
        """Record one hit dropped because an earlier hit of the question mapped to the same chunk."""
        self._count("duplicates_dropped")

    def chunk(self, system_id: str) -> str:
        """The chunk id for one of the system's ids (module docstring). The result may still be unknown to
        the snapshot (the caller reports it, with its file, line and field): with ``doc_ids`` an unknown
        document comes back as given."""
        if system_id in self.file_map:
            self._count("by_file")
            return self.file_map[system_id]
        sid = system_id
        prefix = self.settings.get("strip_prefix")
        if prefix and sid.startswith(prefix):
            sid = sid[len(prefix):]
        if self.settings.get("doc_ids"):
            if sid in self._first_chunk:
                self._count("by_doc_id")
                return self._first_chunk[sid]
            return sid
        if self.known is None or sid in self.known:
            self._count("by_prefix" if sid != system_id else "ids_as_is")
            return sid
        if sid in self._only_chunk:
            self._count("by_one_chunk_document")
            return self._only_chunk[sid]
        return sid

    def text(self, passage: str, question_id: str, position: int) -> str | None:
        """The chunk whose text is ``passage`` (exact, then normalised), or None (counted and listed:
        question, 1-based position in the system's list, the passage's first 120 characters)."""
        exact = self._text_index()
        if passage in exact:
            self._count("text_exact")
            return exact[passage]
        key = normalise_passage(passage)
        if key and key in self._normalised:
            self._count("text_normalised")
            return self._normalised[key]
        with self._lock:
            self._counts["unmatched_texts"] += 1
            if len(self._unmatched) < _LISTED:
                self._unmatched.append({"question_id": question_id, "position": position, "text": passage[:120]})
        return None

    def describe_unknown(self, system_id: str) -> str:
        """Why an id maps to no chunk, for the error message."""
        if self.settings.get("doc_ids"):
            return "it is not a doc_id of the snapshot (chunk_map doc_ids: true reads ids as document ids)"
        if self.file_map:
            return "it is not in chunk_map's file, nor a chunk id of the snapshot"
        sid = system_id.removeprefix(self.settings.get("strip_prefix") or "")
        if sid in self._first_chunk:
            return (f"document {sid!r} has {self._doc_chunks[sid]} chunks, so its id names none of them; use chunk_map "
                    "{doc_ids: true} (scored at document level), a chunk_map file, or the chunk ids")
        return "expected a chunk id of the snapshot, or a chunk_map (file, strip_prefix, doc_ids) that makes it one"

    def stats(self) -> dict[str, Any]:
        """What the mapper did so far (counts; unmatched passages listed, first 50)."""
        with self._lock:
            out: dict[str, Any] = dict(sorted(self._counts.items()))
            if self._unmatched:
                out["unmatched_examples"] = list(self._unmatched)
            return out


__all__ = ["CHUNK_MAP_KEYS", "IdMapper", "chunk_map_of", "doc_ids_only", "load_chunk_map_file", "normalise_passage",
           "parse_chunk_map"]
