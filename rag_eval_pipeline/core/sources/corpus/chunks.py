"""``corpus.source: chunks``: your own chunks, one JSONL line or Parquet row per chunk, ids kept
(``core/sources/chunks.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sources.corpus_base import CorpusSource, register

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")


def documents(path: Path, split: str) -> pl.DataFrame:
    """Not called: this source is chunked already (``snapshot``). Raises ConfigError."""
    raise ConfigError(f"corpus.source chunks ({path}) is read as chunks, not documents")


def snapshot(path: Path) -> pl.DataFrame:
    """The chunks file as the ``corpus_snapshot`` table (your chunk ids kept)."""
    from rag_eval_pipeline.core.sources.chunks import load_chunks

    return load_chunks(path)


SOURCE = register(CorpusSource(
    name="chunks", path_is="file", default_chunking="document", documents=documents, snapshot=snapshot, order=40,
    doc="Your own chunks: a JSONL or Parquet file, one record per chunk with chunk_id (yours, kept as is), doc_id, "
        "text, and optionally title, position and the documents' metadata (doc_type, language, status, "
        "replaced_by, acl, valid_from, valid_to). Nothing is re-chunked (corpus.chunking does not apply); the "
        "golden set and every system use your chunk ids. The golden set comes from golden.path.",
))
