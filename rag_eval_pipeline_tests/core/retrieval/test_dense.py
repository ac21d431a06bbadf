"""Dense retrieval: top-k/ACL/tie logic with a stub encoder (always), the real model when installed."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.retrieval.dense import DenseRetriever, load_encoder


class StubEncoder:
    """Bag of lower-case letters: deterministic, no model needed."""

    def encode(self, texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True,
               show_progress_bar=False):
        out = np.zeros((len(texts), 26), dtype=np.float32)
        for i, t in enumerate(texts):
            for ch in t.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        n = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(n > 0, n, 1)


def stub(ids, texts) -> DenseRetriever:
    return DenseRetriever(encoder=StubEncoder()).index(ids, texts)


def test_exact_cosine_top_k_with_stub():
    r = stub(["x", "y", "z"], ["aaaa", "bbbb", "aabb"])
    hits = r.search(["aaa"], k=2)[0]
    assert [c for c, _ in hits] == ["x", "z"]
    assert hits[0][1] == pytest.approx(1.0)
    assert hits[1][1] == pytest.approx(1 / np.sqrt(2), rel=1e-6)


def test_ties_by_chunk_id_and_acl():
    r = stub(["c", "a", "b"], ["abc", "abc", "abc"])
    assert [c for c, _ in r.search(["abc"], k=2)[0]] == ["a", "b"]
    got = r.search(["abc", "abc", "abc"], k=3, allowed=[{"c"}, set(), None])
    assert [c for c, _ in got[0]] == ["c"]
    assert got[1] == []
    assert [c for c, _ in got[2]] == ["a", "b", "c"]


def test_missing_sentence_transformers_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # import now raises ImportError
    with pytest.raises(ConfigError, match=r"pip install -e '\.\[dense\]'"):
        load_encoder()
    with pytest.raises(ConfigError, match="dense"):
        DenseRetriever().index(["a"], ["text"])


def test_misuse():
    with pytest.raises(RuntimeError):
        DenseRetriever(encoder=StubEncoder()).search(["q"], k=1)
    with pytest.raises(ValueError):
        stub(["a"], ["x"]).search(["q"], k=0)


def test_real_model_minilm():
    pytest.importorskip("sentence_transformers")
    r = DenseRetriever()
    r.index(
        ["pets#0", "money#0", "food#0"],
        ["My kitten loves to nap on the sofa.", "Interest rates rose at the central bank.",
         "Grandma's tomato soup recipe with fresh basil."],
    )
    assert r.encode(["x"]).shape == (1, 384)
    hits = r.search(["Which animal sleeps on the couch?", "How do I cook soup?"], k=3)
    assert hits[0][0][0] == "pets#0"
    assert hits[1][0][0] == "food#0"
    assert all(-1.0 - 1e-5 <= s <= 1.0 + 1e-5 for h in hits for _, s in h)
