"""What every corpus source declares, and its registry.

A corpus source (``documents_dir``, ``beir``, ``squad_v2``, ...) is one module of
``core/sources/corpus/`` that registers a :class:`CorpusSource` in :data:`CORPUS_SOURCES`: its name,
whether ``corpus.path`` is a file or a folder, its default chunking, its document loader, its
question loader when it carries its own questions (a benchmark with qrels), and its documentation.
Configuration loading (``corpus.source``, ``corpus.path``, ``golden.path``) and the pipeline's
``load_documents`` / ``build_golden`` read the registry. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.registry import Registry

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

__all__ = ["CORPUS_SOURCES", "CorpusSource", "register"]


@dataclass(frozen=True)
class CorpusSource:
    """A registered corpus source.

    ``name``: the value of ``corpus.source``. ``path_is``: ``"file"`` or ``"folder"`` (checked when
    the configuration loads). ``default_chunking``: the chunking strategy when ``corpus.chunking.strategy``
    is unset (``"paragraphs"`` or ``"document"``: one chunk per document keeps document-level qrels
    valid). ``documents(path, split)``: the documents frame (``core/corpus.py`` schema).
    ``questions(path, split)``: the raw golden frame of a source that carries its own questions (None
    otherwise: ``golden.path`` is then required). ``snapshot(path)``: for a source that is chunked
    already (the team's own chunks), the ``corpus_snapshot`` table itself; ``corpus.chunking`` then
    does not apply and ``documents`` is not called (None: the documents are chunked here).
    ``doc``: one paragraph for the configuration page. ``order``: its place in lists and messages.
    ``reads_split``: it reads ``corpus.split`` (a benchmark with one qrels file per split); for the
    others the key is refused when the configuration loads.
    """

    name: str
    path_is: str
    default_chunking: str
    documents: Callable[[Path, str], pl.DataFrame]
    doc: str
    questions: Callable[[Path, str], pl.DataFrame] | None = None
    order: int = 100
    snapshot: Callable[[Path], pl.DataFrame] | None = None
    reads_split: bool = False

    @property
    def own_questions(self) -> bool:
        """Whether the source carries its own golden questions."""
        return self.questions is not None


#: Every corpus source, one module each in ``core/sources/corpus/`` (imported on first use).
CORPUS_SOURCES: Registry[CorpusSource] = Registry("corpus source", package="rag_eval_pipeline.core.sources.corpus")


def register(source: CorpusSource) -> CorpusSource:
    """Register ``source`` (its module calls this once at import). Raises RegistryError for a second one,
    ValueError for a ``path_is`` other than file / folder."""
    if source.path_is not in ("file", "folder"):
        raise ValueError(f"corpus source {source.name!r}: path_is must be 'file' or 'folder'")
    return CORPUS_SOURCES.register(source)
