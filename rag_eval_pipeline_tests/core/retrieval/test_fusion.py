"""Reciprocal rank fusion against hand-computed values (Cormack, Clarke & Büttcher 2009)."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.retrieval.fusion import reciprocal_rank_fusion


def test_hand_computed_example():
    a = [("a", 9.0), ("b", 5.0), ("c", 1.0)]
    b = [("b", 0.9), ("c", 0.8), ("d", 0.1)]
    got = reciprocal_rank_fusion([a, b], k_rrf=60)
    # a: 1/61; b: 1/62 + 1/61; c: 1/63 + 1/62; d: 1/63
    want = [
        ("b", 1 / 62 + 1 / 61),
        ("c", 1 / 63 + 1 / 62),
        ("a", 1 / 61),
        ("d", 1 / 63),
    ]
    assert [d for d, _ in got] == [d for d, _ in want]
    for (_, s), (_, w) in zip(got, want):
        assert s == pytest.approx(w, rel=1e-12)


def test_top_k_and_scores_ignored():
    a = [("x", -100.0), ("y", 1e9)]  # order given is the ranking; scores do not matter
    assert reciprocal_rank_fusion([a], k_rrf=1, top_k=1) == [("x", 0.5)]


def test_ties_by_id_ascending_whatever_the_input_order():
    one = reciprocal_rank_fusion([[("y", 1.0)], [("x", 1.0)]])
    two = reciprocal_rank_fusion([[("x", 1.0)], [("y", 1.0)]])
    assert one == two == [("x", 1 / 61), ("y", 1 / 61)]


def test_duplicate_within_a_ranking_counts_once_at_best_rank():
    got = reciprocal_rank_fusion([[("a", 1.0), ("a", 0.5), ("b", 0.1)]], k_rrf=60)
    assert got == [("a", 1 / 61), ("b", 1 / 63)]


def test_empty_inputs():
    assert reciprocal_rank_fusion([]) == []
    assert reciprocal_rank_fusion([[], []], top_k=5) == []


@pytest.mark.parametrize("kw", [{"k_rrf": 0}, {"k_rrf": -1}, {"top_k": 0}])
def test_bad_parameters(kw):
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([[("a", 1.0)]], **kw)
