"""Cohen's kappa, confusion matrix, per-class precision/recall (core/metrics/agreement.py).

Expected values are computed by hand from kappa = (p_o - p_e) / (1 - p_e) (Cohen 1960)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.core.metrics.agreement import (
    accuracy,
    cohen_kappa,
    confusion_matrix,
    per_class_precision_recall,
)


def _from_matrix(labels, m):
    """Expand a confusion matrix into two label lists (rows = a, columns = b)."""
    a, b = [], []
    for i, row in enumerate(m):
        for j, n in enumerate(row):
            a += [labels[i]] * n
            b += [labels[j]] * n
    return a, b


def test_textbook_two_by_two():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15.
    # p_o = 35/50 = 0.7; a says yes 25/50, b says yes 30/50;
    # p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4.
    a, b = _from_matrix(["yes", "no"], [[20, 5], [10, 15]])
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    labels, m = confusion_matrix(a, b, ["yes", "no"])
    assert m == [[20, 5], [10, 15]]
    assert accuracy(a, b) == pytest.approx(0.7)
    pr = per_class_precision_recall(a, b, ["yes", "no"])
    assert pr["yes"] == {"precision": pytest.approx(20 / 30), "recall": pytest.approx(20 / 25),
                         "support": 25, "predicted": 30}
    assert pr["no"]["precision"] == pytest.approx(15 / 20)
    assert pr["no"]["recall"] == pytest.approx(15 / 25)


def test_three_classes_by_hand():
    # matrix [[10,2,0],[1,8,1],[0,3,5]], n = 30: p_o = 23/30; rows 12,10,8; columns 11,13,6;
    # p_e = (12*11 + 10*13 + 8*6) / 900 = 310/900; kappa = (690 - 310) / (900 - 310) = 380/590.
    a, b = _from_matrix(["x", "y", "z"], [[10, 2, 0], [1, 8, 1], [0, 3, 5]])
    assert cohen_kappa(a, b) == pytest.approx(380 / 590)
    assert cohen_kappa(a, b) == pytest.approx(0.6440677966)


def test_limits():
    assert cohen_kappa(["a", "b", "a"], ["a", "b", "a"]) == 1.0
    a, b = _from_matrix([0, 1], [[0, 5], [5, 0]])  # p_o = 0, p_e = 0.5 -> -1
    assert cohen_kappa(a, b) == pytest.approx(-1.0)
    a, b = _from_matrix([0, 1], [[5, 5], [5, 5]])  # p_o = p_e = 0.5 -> 0
    assert cohen_kappa(a, b) == pytest.approx(0.0)
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # p_e = 1: undefined


def test_default_label_order_and_errors():
    labels, m = confusion_matrix(["b", "a", "b"], ["b", "b", "a"])
    assert labels == ["a", "b"] and m == [[0, 1], [1, 1]]
    with pytest.raises(ValueError):
        confusion_matrix(["a"], ["a", "b"])
    with pytest.raises(ValueError):
        confusion_matrix([], [])
    with pytest.raises(ValueError):
        confusion_matrix(["a"], ["c"], labels=["a", "b"])
    with pytest.raises(ValueError):
        accuracy(["a"], [])
    pr = per_class_precision_recall(["a", "a"], ["a", "a"], ["a", "b"])
    assert pr["b"] == {"precision": None, "recall": None, "support": 0, "predicted": 0}


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("abc")), min_size=1, max_size=60))
def test_kappa_symmetric_and_bounded(pairs):
    a = [p[0] for p in pairs]
    b = [p[1] for p in pairs]
    k1, k2 = cohen_kappa(a, b), cohen_kappa(b, a)
    if k1 is None:
        assert k2 is None
    else:
        assert k1 == pytest.approx(k2)
        assert -1.0 - 1e-12 <= k1 <= 1.0 + 1e-12
