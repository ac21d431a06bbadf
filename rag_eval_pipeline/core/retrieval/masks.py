"""Per-query ACL filtering over an index: which positions a query may NOT return."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


class ForbiddenMasks:
    """Boolean masks over an index's positions, True where a chunk is outside a query's allowed set.

    Input: the indexed chunk ids in index order. ``forbidden(allowed)`` returns a bool array of shape
    (n_chunks,); masks are cached per distinct allowed set (up to ``max_cached``), since a golden set
    has few distinct user-group combinations. Ids in ``allowed`` that are not indexed are ignored.
    """

    def __init__(self, ids: Sequence[str], max_cached: int = 4096):
        self._pos = {c: i for i, c in enumerate(ids)}
        self._n = len(ids)
        self._cache: dict[frozenset, np.ndarray] = {}
        self._max = max_cached

    def forbidden(self, allowed: set[str] | frozenset[str]) -> np.ndarray:
        key = frozenset(allowed)
        mask = self._cache.get(key)
        if mask is None:
            mask = np.ones(self._n, dtype=bool)
            mask[[self._pos[c] for c in key if c in self._pos]] = False
            if len(self._cache) < self._max:
                self._cache[key] = mask
        return mask


def index_order(chunk_ids: Sequence[str], texts: Sequence[str]) -> tuple[list[int], list[str]]:
    """The order retrievers index chunks in: by chunk id, so results never depend on input order.

    Output: (positions into the inputs, chunk ids in that order). Raises ValueError when the two
    inputs differ in length, are empty, or a chunk id repeats.
    """
    if len(chunk_ids) != len(texts):
        raise ValueError(f"index: {len(chunk_ids)} chunk ids but {len(texts)} texts")
    if not chunk_ids:
        raise ValueError("index: no chunks to index")
    order = sorted(range(len(chunk_ids)), key=chunk_ids.__getitem__)
    ids = [chunk_ids[i] for i in order]
    if len(set(ids)) != len(ids):
        dup = next(a for a, b in zip(ids, ids[1:]) if a == b)
        raise ValueError(f"index: duplicate chunk id {dup!r}")
    return order, ids
