"""``corpus.source: beir``: a dataset in the BEIR layout (``core/sources/beir.py``)."""

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
    """corpus.jsonl as documents."""
    from rag_eval_pipeline.core.sources.beir import load_beir

    return load_beir(path, split=split)[0]


def questions(path: Path, split: str) -> pl.DataFrame:
    """The queries judged in ``qrels/<split>.tsv``, with their relevance."""
    from rag_eval_pipeline.core.sources.beir import load_beir

    return load_beir(path, split=split)[1]


SOURCE = register(CorpusSource(
    name="beir", path_is="folder", default_chunking="document", documents=documents, questions=questions, order=20,
    reads_split=True,
    doc="A BEIR dataset folder (Thakur et al. 2021): `corpus.jsonl`, `queries.jsonl`, `qrels/<split>.tsv`; one "
        "chunk per document so the document-level qrels apply unchanged; the questions and their relevance come "
        "from the qrels of corpus.split unless golden.path is given.",
))
