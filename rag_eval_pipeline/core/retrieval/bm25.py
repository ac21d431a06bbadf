"""Lexical retrieval with BM25, a thin wrapper around ``bm25s``.

BM25 (Robertson & Zaragoza, "The Probabilistic Relevance Framework: BM25 and Beyond", 2009);
the scoring variants are those of ``bm25s`` (Lù, "BM25S: Orders of magnitude faster lexical search
via eager sparse scoring", 2024): ``lucene`` (default), ``robertson``, ``atire``.

Tokenisation is exactly ``bm25s.tokenize``: lower-casing, the scikit-learn token pattern
``(?u)\\b\\w\\w+\\b``, optional stopword removal (``bm25s``' NLTK-derived lists) and a Snowball stemmer
from PyStemmer. What the wrapper adds:

* chunk ids instead of row numbers;
* hits that share no term with the query (score exactly 0) are never returned;
* a per-query ``allowed`` set of chunk ids (ACL filtering): forbidden chunks are removed from the
  score vector *before* the top-k is taken, so a query still gets up to ``k`` allowed hits;
* a deterministic order: score descending, ties broken by chunk id ascending (``bm25s`` itself
  leaves the order of tied scores to ``np.argpartition``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.retrieval.masks import ForbiddenMasks, index_order

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")

#: bm25s' scoring variants this wrapper offers (``bm25s.BM25(method=...)``).
METHODS = ("lucene", "robertson", "atire")


def stemmer_languages() -> tuple[str, ...]:
    """The Snowball algorithm names PyStemmer has (``Stemmer.algorithms()``): what a BM25 ``language`` may be."""
    import Stemmer

    return tuple(Stemmer.algorithms())


def _make_stemmer(language: str | None):
    """Return a PyStemmer ``Stemmer`` for ``language`` (a Snowball algorithm name), or None.

    Raises ConfigError for an unknown algorithm name.
    """
    if language is None:
        return None
    import Stemmer

    try:
        return Stemmer.Stemmer(language)
    except KeyError as exc:
        raise ConfigError(
            f"BM25 language {language!r} has no Snowball stemmer; choose one of {Stemmer.algorithms()}"
        ) from exc


class BM25Retriever:
    """BM25 over a list of chunks, searched by text queries.

    Parameters:
        language: Snowball stemmer name for PyStemmer ("english", "spanish", ...; see
            ``Stemmer.algorithms()``), or None for no stemming.
        stopwords: a ``bm25s`` stopword list name ("en", "es", "english", "spanish", ...) or None
            for none.
        k1, b: BM25 parameters (k1 >= 0, 0 <= b <= 1).
        method: "lucene" (default), "robertson" or "atire" (``bm25s`` scoring variants).

    Raises ConfigError for an unknown language, stopword list or method, or k1/b out of range.
    """

    def __init__(
        self,
        language: str | None = "english",
        stopwords: str | None = None,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
    ):
        import bm25s.tokenization

        if method not in METHODS:
            raise ConfigError(f"BM25 method {method!r} not supported; choose one of {METHODS}")
        if not (k1 >= 0):
            raise ConfigError(f"BM25 k1 must be >= 0, got {k1!r}")
        if not (0 <= b <= 1):
            raise ConfigError(f"BM25 b must be in [0, 1], got {b!r}")
        if stopwords is not None:
            try:
                bm25s.tokenization._infer_stopwords(stopwords)
            except ValueError as exc:
                raise ConfigError(f"BM25 stopwords {stopwords!r} not known to bm25s") from exc
        self.language = language
        self.stopwords = stopwords
        self.k1 = float(k1)
        self.b = float(b)
        self.method = method
        self._stemmer = _make_stemmer(language)
        self._bm25 = None
        self._ids: np.ndarray | None = None
        self._masks: ForbiddenMasks | None = None

    def tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        """Tokenise ``texts`` as the index does: list of n strings -> n lists of stemmed tokens.

        Source: ``bm25s.tokenize`` with this retriever's stopwords and stemmer.
        """
        import bm25s

        return bm25s.tokenize(
            list(texts),
            stopwords=self.stopwords,
            stemmer=self._stemmer,
            return_ids=False,
            show_progress=False,
        )

    def index(self, chunk_ids: Sequence[str], texts: Sequence[str]) -> BM25Retriever:
        """Build the index over ``texts`` (same length as ``chunk_ids``); returns self.

        Input: n unique chunk ids and n texts (n >= 1). The chunks are indexed in chunk-id order, so
        the scores and the tie order do not depend on the order given. Raises ValueError for
        lengths that differ, duplicate ids or an empty corpus.
        """
        import bm25s

        chunk_ids = list(chunk_ids)
        texts = list(texts)
        order, ids = index_order(chunk_ids, texts)
        tokens = bm25s.tokenize(
            [texts[i] for i in order],
            stopwords=self.stopwords,
            stemmer=self._stemmer,
            show_progress=False,
        )
        bm25 = bm25s.BM25(k1=self.k1, b=self.b, method=self.method)
        bm25.index(tokens, show_progress=False)
        self._bm25 = bm25
        self._ids = np.array(ids, dtype=object)
        self._masks = ForbiddenMasks(ids)
        return self

    @property
    def size(self) -> int:
        """Number of indexed chunks (0 before :meth:`index`)."""
        return 0 if self._ids is None else len(self._ids)

    def search(
        self,
        queries: Sequence[str],
        k: int,
        allowed: Sequence[set[str] | frozenset[str] | None] | None = None,
    ) -> list[list[tuple[str, float]]]:
        """Top-``k`` chunks for each query.

        Input: q query strings; k >= 1; ``allowed`` None (every chunk) or q sets of chunk ids
        (None in a position = every chunk), each restricting its query to those chunks (ids not in
        the index are ignored).
        Output: q lists of (chunk_id, score) with 0 <= len <= k, score descending, ties by chunk id
        ascending; chunks whose score is exactly 0 (no term in common with the query) and chunks
        outside ``allowed`` are never returned. A query with no indexed term gets [].
        Raises RuntimeError before :meth:`index`, ValueError for k < 1 or an ``allowed`` of another
        length than ``queries``.
        """
        if self._bm25 is None:
            raise RuntimeError("search called before index")
        if k < 1:
            raise ValueError(f"search: k must be >= 1, got {k}")
        queries = list(queries)
        if allowed is not None and len(allowed) != len(queries):
            raise ValueError(f"search: {len(queries)} queries but {len(allowed)} allowed sets")
        bm25 = self._bm25
        ids = self._ids
        out: list[list[tuple[str, float]]] = []
        for qi, tokens in enumerate(self.tokenize(queries)):
            token_ids = bm25.get_tokens_ids(tokens)
            if not token_ids:
                out.append([])
                continue
            scores = bm25.get_scores_from_ids(token_ids)
            drop = scores == 0
            if allowed is not None and allowed[qi] is not None:
                drop |= self._masks.forbidden(allowed[qi])
            scores[drop] = -np.inf
            out.append(top_k_by_score(scores, k, ids))
        return out


def top_k_by_score(scores: np.ndarray, k: int, ids: np.ndarray) -> list[tuple[str, float]]:
    """The k best finite entries of a score vector, deterministically.

    Input: ``scores`` float array (n,), -inf marks an entry that must not be returned; k >= 1;
    ``ids`` object array (n,) of chunk ids in ascending order. Output: up to k (id, score) pairs,
    score descending, ties broken by position (= chunk id) ascending -- including ties at the k-th
    place, which ``np.argpartition`` alone would resolve arbitrarily.
    """
    # Partition only the finite entries: a query usually matches a small share of a large corpus, and
    # partitioning all 200,000 scores per query cost more than the scoring itself.
    finite = np.flatnonzero(scores > -np.inf)
    n = finite.size
    if n == 0:
        return []
    fs = scores[finite]
    if k < n:
        kth = np.partition(fs, n - k)[n - k]
        keep = fs >= kth
        cand, cs = finite[keep], fs[keep]
    else:
        cand, cs = finite, fs
    order = np.lexsort((cand, -cs))[:k]
    return list(zip(ids[cand[order]].tolist(), cs[order].astype(float).tolist()))
