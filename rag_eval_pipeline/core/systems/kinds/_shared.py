"""Keys several kinds share (not a kind: modules starting with ``_`` are not registered)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.section_checks import check_nonblank
from rag_eval_pipeline.core.sections import Key, key
from rag_eval_pipeline.core.systems.base import SystemSpec

#: Phrases that make an answer an abstention when the system gives no decision of its own
#: (traces, or a mapped reply without a decision path). Matched case-insensitively as substrings.
DEFAULT_ABSTAIN_PHRASES = ("i don't know", "i do not know", "cannot answer", "can't answer",
                           "no tengo información", "no lo sé", "no puedo responder")


@dataclass(frozen=True)
class ChunkMapConfig:
    """``chunk_map`` as a mapping: how the system's ids become the snapshot's chunk ids
    (``core/systems/id_mapping.py``). ``file``: a JSONL/Parquet file of ``{document_id, chunk_id}``
    records; ``strip_prefix``: a text removed from the front of every id that starts with it;
    ``doc_ids``: the ids are document ids (for retrieval each maps to the document's first chunk, for
    judging and citation support to all its chunks, ``core/systems/doc_evidence.py``; the system's
    chunk-level rows are then null, ``doc_ids_only``). At least one is set; the file must exist."""

    file: Path | None = key(None, doc="JSONL/Parquet of {document_id: <your id>, chunk_id: <snapshot chunk id>}")
    strip_prefix: str | None = key(None, check=check_nonblank, doc="removed from the front of every id that has it")
    doc_ids: bool = key(False, doc="the ids are document ids: score the system with relevant_docs")

    def validate(self, at):
        """The section as it is, once at least one setting is given and the file exists; else a located
        SectionError."""
        if self.file is None and self.strip_prefix is None and not self.doc_ids:
            raise at.error("sets nothing; expected a file, strip_prefix or doc_ids: true")
        if self.file is not None and not self.file.is_file():
            raise at.child("file").error(f"{self.file} not found; expected a JSONL or Parquet file of {{document_id, "
                                         "chunk_id} records (a relative path is resolved against the "
                                         "configuration's folder)")
        return None


@dataclass(frozen=True, kw_only=True)
class IdMappedSpec(SystemSpec):
    """A system whose retrieved (and cited) ids are read through the id mapping: ``chunk_map`` (a file
    path, or a :class:`ChunkMapConfig` mapping) for a system that names chunks its own way; passages
    given as text without ids are aligned to the snapshot by text whatever ``chunk_map`` says."""

    chunk_map: Path | ChunkMapConfig | None = key(
        None, doc="your ids -> the snapshot's chunk ids: a file of {document_id, chunk_id}, or "
                  "{file, strip_prefix, doc_ids}; null: the ids are the snapshot's")

    def validate(self, at):
        """The section with a bare ``chunk_map`` path read as the file form (:class:`ChunkMapConfig`, whose
        checks it passes), or None when there is nothing to change. Raises SectionError."""
        if isinstance(self.chunk_map, Path):
            cm = ChunkMapConfig(file=self.chunk_map)
            cm.validate(at.child("chunk_map"))
            return dataclasses.replace(self, chunk_map=cm)
        return None


@dataclass(frozen=True, kw_only=True)
class AnswerTextSpec(IdMappedSpec):
    """A system whose replies may carry an answer without a decision: ``abstain_phrases`` decide it."""

    abstain_phrases: tuple[str, ...] = key(
        DEFAULT_ABSTAIN_PHRASES, items=Key(check=check_nonblank),
        doc="an answer containing one (case-insensitive) is an abstention when the system gives no decision")

    def validate(self, at):
        """The section with its abstain phrases stripped of surrounding spaces (once, here) and its
        ``chunk_map`` in its one form (:meth:`IdMappedSpec.validate`)."""
        out = IdMappedSpec.validate(self, at) or self
        return dataclasses.replace(out, abstain_phrases=tuple(p.strip() for p in self.abstain_phrases))


nonblank = check_nonblank  # the problem with a blank string (a header or attribute name), or None


def mapped_files(spec) -> tuple[str, ...]:
    """The ``chunk_map`` file of a system, as a path string (for the on-change sensor), or ()."""
    cm = getattr(spec, "chunk_map", None)
    file = getattr(cm, "file", None)
    return (str(file),) if file is not None else ()
