"""``kind: reference``: the built-in RAG (BM25 / dense / hybrid retrieval + the extractive answerer),
run in process over the evaluated snapshot. Implementation: ``core/reference_system.py``."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.plain_names import CHUNK_STATUS
from rag_eval_pipeline.core.retrieval.bm25 import METHODS, stemmer_languages
from rag_eval_pipeline.core.section_checks import check_short_text
from rag_eval_pipeline.core.section_errors import shown
from rag_eval_pipeline.core.sections import Key, key
from rag_eval_pipeline.core.systems.base import (
    Deployment,
    SystemKind,
    SystemRun,
    SystemSpec,
    register,
)
from rag_eval_pipeline.core.systems.records import RunContext

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

RETRIEVER_TYPES = ("bm25", "dense", "hybrid")
#: Longest retriever / generator block of a system, as JSON (the manifest stores it on every row).
MAX_BLOCK_CHARS = 20_000
# Snowball language name -> bm25s stopword list, for the default "stopwords"
STOPWORDS_FOR = {
    "english": "en", "spanish": "es", "german": "de", "french": "fr", "dutch": "nl",
    "portuguese": "pt", "italian": "it", "russian": "ru", "swedish": "sv", "norwegian": "no",
    "turkish": "tr", "danish": "da",
}
_LEXICAL, _DENSE, _HYBRID = ("type", ("bm25", "hybrid")), ("type", ("dense", "hybrid")), ("type", ("hybrid",))


def _language(value: str) -> str | None:
    languages = stemmer_languages()
    return None if value in languages else f"must be one of {languages}, got {shown(value)}"


def _block_size(block: Any) -> str | None:
    size = len(json.dumps(block.as_json(), default=str))
    return None if size <= MAX_BLOCK_CHARS else f"is {size} characters as JSON; expected at most {MAX_BLOCK_CHARS}"


def _statuses(value: Any) -> str | None:
    # every value is checked, whatever the shape: a single misspelt string would index nothing
    values = (value,) if isinstance(value, str) else tuple(value)
    if not values:
        return f"must name at least one of {CHUNK_STATUS}"
    bad = [v for v in values if v not in CHUNK_STATUS]
    return f"must be one of {CHUNK_STATUS}, got {shown(bad[0])}" if bad else None


@dataclass(frozen=True, kw_only=True)
class RetrieverConfig:
    """``retriever`` of a reference system; :meth:`resolved` is the manifest stored on every row."""

    type: str = key("bm25", choices=RETRIEVER_TYPES, doc="bm25 (bm25s + PyStemmer), dense or hybrid (RRF of both)")
    k: int = key(10, low=1, doc="hits recorded per question")
    index_status: tuple[str, ...] | str = key(("active",), items=Key(choices=CHUNK_STATUS), check=_statuses,
                                              doc="chunk statuses that are indexed")
    with_title: bool = key(True, doc="index title + text (answers quote text only)")
    language: str = key("english", choices=stemmer_languages, doc="BM25 stemmer (a Snowball algorithm of "
                        "PyStemmer); the generator's default language")
    stopwords: str | tuple[str, ...] | None = key("auto", when=_LEXICAL,
                                                  doc="a bm25s list name or words; auto: the language's list")
    k1: float = key(1.5, low=0.0, when=_LEXICAL, doc="BM25 k1")
    b: float = key(0.75, low=0.0, high=1.0, when=_LEXICAL, doc="BM25 b")
    method: str = key("lucene", choices=METHODS, when=_LEXICAL, doc="bm25s scoring variant")
    model: str = key("all-MiniLM-L6-v2", when=_DENSE, doc="sentence-transformers model")
    device: str = key("cpu", when=_DENSE, doc="torch device")
    batch_size: int = key(64, low=1, when=_DENSE, doc="encoding batch size")
    k_rrf: float = key(60.0, low=0.0, when=_HYBRID, doc="reciprocal rank fusion constant")
    depth: int | None = key(None, when=_HYBRID, doc="hits fused from each side, >= k; default max(k, 100)")

    def validate(self, at):
        """Refuse a hybrid ``depth`` below ``k`` (fewer hits fused than recorded); SectionError at ``at``."""
        if self.depth is not None and self.depth < self.k:
            raise at.fail("depth", f"must be an integer >= k ({self.k}), got {self.depth!r}")
        return None

    def resolved(self) -> dict[str, Any]:
        """The configuration with every default that applies to its type filled in (stored as JSON on
        every row): type, k, index_status (sorted), with_title, language; for bm25/hybrid stopwords,
        k1, b, method; for dense/hybrid model, device, batch_size; for hybrid k_rrf, depth."""
        status = [self.index_status] if isinstance(self.index_status, str) else list(self.index_status)
        out: dict[str, Any] = {"type": self.type, "k": self.k, "index_status": sorted(set(status)),
                               "with_title": self.with_title, "language": self.language}
        if self.type in ("bm25", "hybrid"):
            sw = self.stopwords
            out["stopwords"] = STOPWORDS_FOR.get(self.language) if sw == "auto" else (
                list(sw) if isinstance(sw, tuple) else sw)
            out.update(k1=float(self.k1), b=float(self.b), method=self.method)
        if self.type in ("dense", "hybrid"):
            out.update(model=self.model, device=self.device, batch_size=int(self.batch_size))
        if self.type == "hybrid":
            out.update(k_rrf=float(self.k_rrf), depth=self.depth if self.depth is not None else max(self.k, 100))
        return out

    def as_json(self) -> dict[str, Any]:
        """The block as JSON values (its size is checked against :data:`MAX_BLOCK_CHARS`): :meth:`resolved`."""
        return self.resolved()


@dataclass(frozen=True, kw_only=True)
class GeneratorConfig:
    """``generator`` of a reference system: the extractive answerer (``core/generation/extractive.py``)."""

    type: str = key("extractive", choices=("extractive",), doc="the reference system has only extractive")
    abstain_threshold: float = key(0.4, low=0.0, high=1.0, doc="abstain below this share of question terms")
    context_k: int = key(3, low=1, doc="chunks the answerer reads")
    max_sentences: int = key(1, low=1, doc="sentences in an answer")
    language: str | None = key(None, check=_language,
                               doc="default: the retriever's language; else one of the retriever's languages")
    stopwords: str | tuple[str, ...] | None = key("auto", doc="a bm25s list name or words; auto: the language's")

    def as_json(self) -> dict[str, Any]:
        """Every key and its value, as JSON values (stored on every row with the generator's version)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True, kw_only=True)
class ReferenceSystem(SystemSpec):
    """A ``kind: reference`` system."""

    retriever: RetrieverConfig = key(default_factory=RetrieverConfig, check=_block_size,
                                     doc="type, k, language, with_title, index_status; per type: see the table below")
    generator: GeneratorConfig = key(default_factory=GeneratorConfig, check=_block_size,
                                     doc="type extractive, abstain_threshold, context_k, max_sentences, language, "
                                         "stopwords")
    prompt_version: str = key("none", coerce_text=True, check=check_short_text, doc="stored on every row")


def resolve_retriever_config(cfg: dict[str, Any] | None) -> dict[str, Any]:
    """Fill in the defaults of a retriever configuration (the manifest stored on every row).

    Input: the ``retriever`` mapping (None = all defaults, BM25). Output: a new dict with every key
    that applies to its type (``RetrieverConfig.resolved``). Raises ConfigError for an unknown
    type or key, or a bad value.
    """
    from pathlib import Path

    from rag_eval_pipeline.core.section_errors import At
    from rag_eval_pipeline.core.sections import parse_section

    return parse_section(RetrieverConfig, cfg, At(Path("<retriever>"), label="retriever")).resolved()


def run(spec: ReferenceSystem, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """Answer every golden question in process (needs ``ctx.snapshot``)."""
    from rag_eval_pipeline.core.reference_system import run_reference_system

    if ctx.snapshot is None:
        raise ValueError("the reference system needs the corpus snapshot in its RunContext")
    return SystemRun(run_reference_system(ctx.snapshot, golden, spec, ctx.corpus_version, ctx.golden_version))


KIND = register(SystemKind(
    example={"name": "bm25_k5", "kind": "reference", "retriever": {"type": "bm25", "language": "spanish", "k": 5},
             "generator": {"abstain_threshold": 0.5}},
    name="reference", section=ReferenceSystem, run=run, order=10,
    doc="The built-in RAG, run in process: BM25 (bm25s + PyStemmer), dense (sentence-transformers) or hybrid "
        "(reciprocal rank fusion) retrieval over the chunks the question's user_groups may read, then a "
        "deterministic extractive answerer that quotes the best-matching sentence or abstains. A transparent "
        "baseline that needs no server.",
))
