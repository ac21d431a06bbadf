"""The passages a judge reads for a system's retrieved or cited ids: one chunk per chunk id, and, for a
system whose ids are document ids (``chunk_map: {doc_ids: true}``), every chunk of the document.

A document-id system's ids reach ``rag_runs`` as the document's first chunk (``core/systems/id_mapping.py``:
that is the documented mapping for *retrieval ranking*, trec_eval-style, where one document is one
ranked item). For *judging* (faithfulness evidence, ``core/judging.py``) and *citation support*
(``core/citations/judging.py``) the system retrieved and cited the whole document, so a chunk id of a
document-id system stands for all of that document's chunks in the frozen snapshot, in chunk order,
each a passage of its own (as a chunk-id system retrieving those chunks would pass them). A chunk-id
system's passages are exactly its chunk ids, unchanged. No cap: a long document gives the judge all its
chunks (the judge's input grows with the document). Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

import polars as pl


class JudgingEvidence:
    """Chunk ids → the chunk ids (and texts) a judge reads for them, per system (module docstring).

    Build it once per snapshot: ``JudgingEvidence(snapshot, doc_id_systems)`` with ``snapshot`` a
    corpus_snapshot frame (chunk_id, text; doc_id and chunk_index are read when ``doc_id_systems`` is
    not empty, chunk order falling back to chunk_id without chunk_index) and ``doc_id_systems`` the names
    of systems whose ids are document ids. ``texts`` is the chunk id → text map of the snapshot, ``doc_of``
    its chunk id → document id map.
    """

    def __init__(self, snapshot: pl.DataFrame, doc_id_systems: Collection[str] = ()):
        self.texts: dict[str, str] = (dict(zip(snapshot["chunk_id"].to_list(), snapshot["text"].to_list()))
                                      if "text" in snapshot.columns else {})  # no text column: ids only
        self.doc_id_systems = frozenset(doc_id_systems)
        #: chunk id -> its document id (the snapshot's ``doc_id``; without that column, the part before ``#``)
        self.doc_of: dict[str, str] = (dict(zip(snapshot["chunk_id"].to_list(), snapshot["doc_id"].to_list()))
                                       if "doc_id" in snapshot.columns
                                       else {c: c.rsplit("#", 1)[0] for c in snapshot["chunk_id"].to_list()})
        self._document: dict[str, tuple[str, ...]] = {}  # chunk id -> every chunk id of its document, in order
        if not self.doc_id_systems or "doc_id" not in snapshot.columns:
            return
        order = ["doc_id", "chunk_index"] if "chunk_index" in snapshot.columns else ["doc_id", "chunk_id"]
        docs: dict[str, list[str]] = {}
        for cid, doc in snapshot.sort(order).select("chunk_id", "doc_id").iter_rows():
            docs.setdefault(doc, []).append(cid)
        for chunks in docs.values():
            whole = tuple(chunks)
            for cid in chunks:
                self._document[cid] = whole

    def chunk_ids(self, system: str, ids: Iterable[str]) -> list[str]:
        """The chunk ids a judge reads for ``ids`` (retrieved or cited chunk ids of ``system``, in order).

        Output: for a chunk-id system, ``ids`` unchanged (a list); for a document-id system, each id
        replaced by every chunk of its document in chunk order, a chunk listed once (its first place).
        An id not in the snapshot is kept as given (callers report it). Never raises."""
        ids = list(ids)
        if system not in self.doc_id_systems:
            return ids
        out: list[str] = []
        seen: set[str] = set()
        for cid in ids:
            for c in self._document.get(cid, (cid,)):
                if c not in seen:
                    seen.add(c)
                    out.append(c)
        return out

    def documents(self) -> pl.DataFrame:
        """The same mapping as :meth:`chunk_ids`, as a frame, for the evidence metrics of document-id systems.

        Output: columns ``chunk_id`` and ``document`` (the first chunk id of its document, in chunk order:
        one key per document), one row per chunk of the snapshot when document-id systems were named
        (empty otherwise). Two chunk ids stand for the same retrieved document exactly when their
        ``document`` is equal: a retrieved document counts as retrieving each of its chunks
        (``core/metrics/decisions.py``, ``core/metrics/claim_evidence.py``). Linear in the snapshot's
        chunks. Never raises."""
        rows = [(cid, whole[0]) for cid, whole in self._document.items()]
        return pl.DataFrame(rows, schema={"chunk_id": pl.Utf8, "document": pl.Utf8}, orient="row")


__all__ = ["JudgingEvidence"]
