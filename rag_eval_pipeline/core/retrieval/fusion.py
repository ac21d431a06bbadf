"""Reciprocal rank fusion (Cormack, Clarke & Büttcher, "Reciprocal Rank Fusion outperforms Condorcet
and individual Rank Learning Methods", SIGIR 2009).

RRF score of a document d over rankings R: sum over r in R containing d of 1 / (k_rrf + rank_r(d)),
rank counted from 1. The paper uses k = 60. Only ranks matter; the input scores are ignored except
that each ranking is taken in the order given (it is assumed sorted best first).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TypeVar

#: The id type of the rankings (chunk ids: str); the fused ranking has the same.
Id = TypeVar("Id", bound=Hashable)


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[tuple[Id, float]]],
    k_rrf: float = 60,
    top_k: int | None = None,
) -> list[tuple[Id, float]]:
    """Fuse several rankings into one.

    Input: a list of rankings, each a list of (id, score) best first (scores unused; an id repeated
    within one ranking counts only at its first, best rank); k_rrf > 0 (default 60, as in the
    paper); top_k >= 1 or None for every fused id.
    Output: (id, rrf_score) sorted by rrf_score descending, ties broken by id ascending (so ids must
    be mutually comparable, e.g. all str); rrf_score in (0, len(rankings) / (k_rrf + 1)].
    Raises ValueError for k_rrf <= 0 or top_k < 1.
    Source: Cormack, Clarke & Büttcher (SIGIR 2009), equation RRFscore(d) = sum_r 1/(k + r(d)).
    """
    if not k_rrf > 0:
        raise ValueError(f"reciprocal_rank_fusion: k_rrf must be > 0, got {k_rrf!r}")
    if top_k is not None and top_k < 1:
        raise ValueError(f"reciprocal_rank_fusion: top_k must be >= 1 or None, got {top_k!r}")
    fused: dict[Id, float] = {}
    for ranking in rankings:
        seen: set[Id] = set()
        for rank, (doc, _score) in enumerate(ranking, start=1):
            if doc in seen:
                continue
            seen.add(doc)
            fused[doc] = fused.get(doc, 0.0) + 1.0 / (k_rrf + rank)
    out = sorted(fused.items(), key=lambda item: (-item[1], item[0]))
    return out if top_k is None else out[:top_k]
