"""``corpus.source: squad_v2``: a SQuAD 2.0 JSON file (``core/sources/squad.py``)."""

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
    """Every paragraph as a document."""
    from rag_eval_pipeline.core.sources.squad import load_squad_v2

    return load_squad_v2(path)[0]


def questions(path: Path, split: str) -> pl.DataFrame:
    """Every question; ``is_impossible`` ones are ``absent``."""
    from rag_eval_pipeline.core.sources.squad import load_squad_v2

    return load_squad_v2(path)[1]


SOURCE = register(CorpusSource(
    name="squad_v2", path_is="file", default_chunking="document", documents=documents, questions=questions,
    order=30,
    doc="A SQuAD 2.0 JSON file (Rajpurkar et al. 2018): each paragraph becomes a document, each question a golden "
        "question; unanswerable (is_impossible) questions become absent.",
))
