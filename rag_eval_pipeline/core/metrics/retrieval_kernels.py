"""One small kernel per retrieval measure, and the registry that names them.

Each kernel takes the :class:`~rag_eval_pipeline.core.metrics.ranking.PreparedRankings` of a run and
a cutoff (None for uncut measures) and returns a :class:`Measured`: per evaluated (system, question)
pair the value, the numerator and denominator where the measure is a ratio of counts, and the mask
of pairs where it is not evaluable (null, status ``no_relevant``). Definitions follow trec_eval 10.0
(``m_<name>.c``); ``docs/METRICS.md`` gives each one with its denominator and null rule. A new
measure is one function here with ``@kernel("name")`` and its name in ``core/metrics/names.py``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rag_eval_pipeline.core.metrics.ranking import PreparedRankings


@dataclass(frozen=True)
class Measured:
    """Per-pair ``value`` (float64), ``numerator`` / ``denominator`` (None when the measure is not a
    ratio of counts) and ``null`` (None when the measure is evaluable everywhere)."""

    value: np.ndarray
    numerator: np.ndarray | None = None
    denominator: np.ndarray | None = None
    null: np.ndarray | None = None


Kernel = Callable[[PreparedRankings, "int | None"], Measured]
#: Measure name -> kernel.
KERNELS: dict[str, Kernel] = {}


def kernel(name: str) -> Callable[[Kernel], Kernel]:
    """Register ``fn`` as the kernel of measure ``name`` (a name of ``core.metrics.names.MEASURES``)."""

    def register(fn: Kernel) -> Kernel:
        KERNELS[name] = fn
        return fn

    return register


def _cutoff(k: int | None) -> int:
    """The cutoff of a cut measure (``cut=True`` in ``names.py``: the caller passes every k of ``metrics.ks``).
    Raises ValueError when it is None, a caller's mistake."""
    if k is None:
        raise ValueError("a cut measure needs a cutoff k")
    return k


def _ratio(num: np.ndarray, den: np.ndarray, null: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return num / np.where(null, 1.0, den)


@kernel("num_ret")
def num_ret(p: PreparedRankings, k: int | None = None) -> Measured:
    """Retrieved documents (``m_num_ret.c``)."""
    return Measured(p.num_ret)


@kernel("num_rel")
def num_rel(p: PreparedRankings, k: int | None = None) -> Measured:
    """Relevant documents in the qrels of the question (``m_num_rel.c``)."""
    return Measured(p.num_rel)


@kernel("num_rel_ret")
def num_rel_ret(p: PreparedRankings, k: int | None = None) -> Measured:
    """Relevant documents retrieved, whole list (``m_num_rel_ret.c``)."""
    return Measured(p.num_rel_ret)


@kernel("map")
def average_precision(p: PreparedRankings, k: int | None = None) -> Measured:
    """Sum over relevant retrieved d of P@rank(d), / num_rel (``m_map.c``)."""
    if p._rel_start is None:
        p._rel_start = _starts(p.rel_pair)
    start = p._rel_start
    nth = np.arange(p.rel_pair.size) - np.repeat(start, np.diff(np.append(start, p.rel_pair.size))) + 1
    num = np.bincount(p.rel_pair, weights=nth / p.rel_pos, minlength=p.n_pairs)
    return Measured(_ratio(num, p.num_rel, p.no_rel), num, p.num_rel, p.no_rel)


@kernel("Rprec")
def r_precision(p: PreparedRankings, k: int | None = None) -> Measured:
    """Relevant in the top num_rel / num_rel (``m_Rprec.c``)."""
    num = np.bincount(p.rel_pair[p.rel_pos <= p.num_rel[p.rel_pair]], minlength=p.n_pairs).astype(np.float64)
    return Measured(_ratio(num, p.num_rel, p.no_rel), num, p.num_rel, p.no_rel)


@kernel("bpref")
def bpref(p: PreparedRankings, k: int | None = None) -> Measured:
    """Binary preference (``m_bpref.c``; Buckley & Voorhees, SIGIR 2004): over the judged hits only, each
    relevant hit adds 1 - min(n, R) / min(N, R), n the judged non-relevant hits ranked above it, R =
    num_rel, N = judged non-relevant chunks of the question (1 when n = 0); the sum / R."""
    span = int(max(p.rel_pos.max(initial=0), p.nonrel_pos.max(initial=0))) + 1
    nonrel_keys = np.sort(p.nonrel_pair * span + p.nonrel_pos)  # by pair, then position
    above = (np.searchsorted(nonrel_keys, p.rel_pair * span + p.rel_pos)
             - np.searchsorted(nonrel_keys, p.rel_pair * span))
    r = p.num_rel[p.rel_pair]
    with np.errstate(divide="ignore", invalid="ignore"):
        term = np.where(above > 0, 1.0 - np.minimum(above, r) / np.minimum(p.num_nonrel[p.rel_pair], r), 1.0)
    num = np.bincount(p.rel_pair, weights=term, minlength=p.n_pairs)
    return Measured(_ratio(num, p.num_rel, p.no_rel), num, p.num_rel, p.no_rel)


@kernel("recip_rank")
def recip_rank(p: PreparedRankings, k: int | None = None) -> Measured:
    """1 / position of the first relevant document, 0 when none is retrieved (``m_recip_rank.c``)."""
    first = p.first_rel_pos
    return Measured(np.where(first > 0, 1.0 / np.where(first > 0, first, 1.0), 0.0), null=p.no_rel)


@kernel("recip_rank_cut")
def recip_rank_cut(p: PreparedRankings, k: int | None) -> Measured:
    """recip_rank counting only the top k (ir_measures' ``RR@k``; not a trec_eval measure)."""
    k = _cutoff(k)
    first = p.first_rel_pos
    inside = (first > 0) & (first <= k)
    return Measured(np.where(inside, 1.0 / np.where(inside, first, 1.0), 0.0), null=p.no_rel)


@kernel("P")
def precision(p: PreparedRankings, k: int | None) -> Measured:
    """Relevant in the top k / k, k the divisor even when fewer were retrieved (``m_P.c``)."""
    k = _cutoff(k)
    hits = p.hits_at(k)
    return Measured(hits / k, hits, np.full(p.n_pairs, float(k)))


@kernel("recall")
def recall(p: PreparedRankings, k: int | None) -> Measured:
    """Relevant in the top k / num_rel (``m_recall.c``)."""
    k = _cutoff(k)
    hits = p.hits_at(k)
    return Measured(_ratio(hits, p.num_rel, p.no_rel), hits, p.num_rel, p.no_rel)


@kernel("F1")
def f1(p: PreparedRankings, k: int | None) -> Measured:
    """Harmonic mean of P@k and recall@k = 2 hits_k / (k + num_rel) (``m_set_F.c`` at a cutoff)."""
    k = _cutoff(k)
    hits = p.hits_at(k)
    den = k + p.num_rel
    return Measured(2.0 * hits / den, 2.0 * hits, den, p.no_rel)


@kernel("success")
def success(p: PreparedRankings, k: int | None) -> Measured:
    """1 when a relevant document is in the top k (``m_success.c``; hit rate)."""
    k = _cutoff(k)
    hit = (p.hits_at(k) > 0).astype(np.float64)
    return Measured(hit, hit, np.ones(p.n_pairs), p.no_rel)


def _ndcg(p: PreparedRankings, k: int | None) -> Measured:
    inside = slice(None) if k is None else p.gain_pos <= k
    dcg = np.bincount(p.gain_pair[inside], weights=p.gain_disc[inside], minlength=p.n_pairs)
    idcg = p.ideal_dcg(k)
    null = p.no_gain()
    return Measured(_ratio(dcg, idcg, null), dcg, idcg, null)


@kernel("ndcg_cut")
def ndcg_cut(p: PreparedRankings, k: int | None) -> Measured:
    """DCG@k / IDCG@k, gain = judged grade > 0, discount log2(pos + 1) (``m_ndcg_cut.c``)."""
    return _ndcg(p, k)


@kernel("ndcg")
def ndcg(p: PreparedRankings, k: int | None = None) -> Measured:
    """nDCG over the whole ranking; the ideal ranking holds every judged grade > 0 (``m_ndcg.c``)."""
    return _ndcg(p, None)


def _starts(sorted_ids: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1))


__all__ = ["KERNELS", "Kernel", "Measured", "kernel"]
