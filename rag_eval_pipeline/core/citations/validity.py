"""Citation validity that needs no judge: does the cited chunk exist, was it retrieved, is it current,
may the asking user read it?

A link is not support (project design): before a citation is judged against its claim it must

1. **exist in the snapshot** (``not_in_snapshot`` otherwise: an invented or stale id);
2. **have been retrieved in this run** (``not_retrieved``: the generator never saw it; ALCE scores a
   citation outside the retrieved list 0, Gao et al., EMNLP 2023);
3. **be active** (``withdrawn``, or ``replaced`` with the replacement named: a superseded document
   is not a source a person should be sent to);
4. **be readable by the question's ``user_groups``** (``acl_restricted``: an ACL leak; the chunk's
   text is never shown, only its id).

Failures are listed in this order; a chunk not in the snapshot has only the first. A document-level
citation (``[doc_id]`` none of whose chunks was retrieved) takes the status and ACL of the
document's chunks (the first, by chunk index). Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass

import polars as pl

#: Validity failures, in the order they are listed.
VALIDITY_FAILURES = ("not_in_snapshot", "not_retrieved", "withdrawn", "replaced", "acl_restricted")


@dataclass(frozen=True)
class ChunkFacts:
    """What validity needs of one chunk (or document): ``doc_id``, ``status`` (active / withdrawn /
    replaced), ``replaced_by`` (doc id or None) and ``acl`` (groups; empty = everyone)."""

    doc_id: str
    status: str
    replaced_by: str | None
    acl: tuple[str, ...]


@dataclass(frozen=True)
class CitationCheck:
    """The validity of one citation: ``in_snapshot``, ``retrieved``, ``rank`` (1-based rank in the
    run's list, None when not retrieved), ``status`` / ``replaced_by`` (None when not in the
    snapshot), ``readable`` (None when not in the snapshot) and ``failures`` (subset of
    :data:`VALIDITY_FAILURES`, in that order). ``valid`` is True when there is no failure."""

    in_snapshot: bool
    retrieved: bool
    rank: int | None
    status: str | None
    replaced_by: str | None
    readable: bool | None
    failures: tuple[str, ...]

    @property
    def valid(self) -> bool:
        return not self.failures


class SnapshotIndex:
    """Chunk and document facts of a ``corpus_snapshot`` frame (columns chunk_id, doc_id, chunk_index,
    status, replaced_by, acl), built once and looked up per citation."""

    def __init__(self, snapshot: pl.DataFrame):
        cols = ["chunk_id", "doc_id", "status", "replaced_by", "acl"]
        order = ["doc_id", "chunk_index"] if "chunk_index" in snapshot.columns else ["doc_id", "chunk_id"]
        self.chunks: dict[str, ChunkFacts] = {}
        self.docs: dict[str, ChunkFacts] = {}
        for cid, doc, status, repl, acl in snapshot.sort(order).select(cols).iter_rows():
            facts = ChunkFacts(doc, status or "active", repl, tuple(acl or ()))
            self.chunks[cid] = facts
            self.docs.setdefault(doc, facts)
        self.texts: dict[str, str] = dict(zip(snapshot["chunk_id"].to_list(), snapshot["text"].to_list())) \
            if "text" in snapshot.columns else {}

    def facts(self, target: str, level: str = "chunk") -> ChunkFacts | None:
        """Facts of a chunk id (``level`` "chunk") or a document id (``level`` "document"), or None."""
        return (self.docs if level == "document" else self.chunks).get(target)


def check_citation(target: str, level: str, index: SnapshotIndex, ranks: Mapping[str, int],
                   user_groups: Collection[str]) -> CitationCheck:
    """Validity of one citation (module docstring).

    Inputs: the cited chunk id (or document id with ``level`` "document"), the snapshot index, the
    run's ``chunk_id -> rank`` map, the question's user groups. Output: a :class:`CitationCheck`.
    Never raises.
    """
    facts = index.facts(target, level)
    if facts is None:
        return CitationCheck(False, False, None, None, None, None, ("not_in_snapshot",))
    rank = ranks.get(target) if level == "chunk" else None
    readable = not facts.acl or bool(set(facts.acl) & set(user_groups or ()))
    failures = []
    if rank is None:
        failures.append("not_retrieved")
    if facts.status in ("withdrawn", "replaced"):
        failures.append(facts.status)
    if not readable:
        failures.append("acl_restricted")
    return CitationCheck(True, rank is not None, rank, facts.status, facts.replaced_by, readable, tuple(failures))
