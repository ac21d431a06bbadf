"""``corpus.source: documents_dir``: a folder of Markdown / text documents (``core/sources/documents.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sources.corpus_base import CorpusSource, register

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")


def documents(path: Path, split: str) -> pl.DataFrame:
    """The folder's documents (``split`` is not used)."""
    from rag_eval_pipeline.core.sources.documents import load_documents_dir

    return load_documents_dir(path)


SOURCE = register(CorpusSource(
    name="documents_dir", path_is="folder", default_chunking="paragraphs", documents=documents, order=10,
    doc="A folder of .md / .txt files, doc_id = the file's stem, optional YAML front matter (title, doc_type, "
        "language, status, replaced_by, acl, valid_from, valid_to); paragraphs become chunks. The golden set "
        "comes from golden.path.",
))
