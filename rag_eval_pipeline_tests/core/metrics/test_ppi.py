"""Prediction-powered inference: hand-computed example, empty inputs, coverage over many seeds."""

import math

import numpy as np
import pytest
from scipy.stats import norm

from rag_eval_pipeline.core.metrics.ppi import ppi_rate
from rag_eval_pipeline.core.metrics.stats import wilson_interval


def test_hand_computed_example():
    # unlabelled judge predictions: mean 3/4; labelled: f = [1, 0, 1], y = [1, 0, 0] -> f - y = [0, 0, 1]
    res = ppi_rate([1, 1, 0, 1], [1, 0, 1], [1, 0, 0])
    assert res.judge_rate == pytest.approx(0.75)
    assert res.rectifier == pytest.approx(1 / 3)
    assert res.estimate == pytest.approx(0.75 - 1 / 3)
    # var(f_unlabelled, ddof=1) = 0.75 / 3 = 0.25 ; var(f - y, ddof=1) = (2/9 + 4/9) / 2 = 1/3
    se = math.sqrt(0.25 / 4 + (1 / 3) / 3)
    assert res.se == pytest.approx(se)
    z = norm.ppf(0.975)
    assert res.raw_low == pytest.approx(0.75 - 1 / 3 - z * se)
    assert res.raw_high == pytest.approx(0.75 - 1 / 3 + z * se)
    # the raw interval leaves [0, 1]: clipped
    assert (res.ci_low, res.ci_high) == (0.0, 1.0)
    assert res.reason is None and res.n_labelled == 3 and res.n_unlabelled == 4


def test_unclipped_interval_and_tuple():
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 100)
    f = y.copy()
    f[:10] = 1  # a few false positives
    fu = rng.integers(0, 2, 1000)
    res = ppi_rate(fu, f, y)
    assert 0.0 < res.ci_low < res.estimate < res.ci_high < 1.0
    assert res.as_tuple() == (res.estimate, res.ci_low, res.ci_high)
    assert res.raw_estimate == res.estimate


def test_point_estimate_clipped_to_unit_interval():
    # judge says 1 everywhere unlabelled, but under-predicts on the labelled set: raw estimate > 1
    res = ppi_rate([1, 1, 1, 1], [0, 0, 1], [1, 1, 1])
    assert res.raw_estimate == pytest.approx(1 + 2 / 3)
    assert res.estimate == 1.0 and res.ci_high == 1.0


@pytest.mark.parametrize("unl, lab_f, lab_y, word", [
    ([], [1, 0], [1, 1], "unlabelled"),
    ([1, 0], [], [], "labelled"),
    ([], [], [], "labelled and no unlabelled"),
])
def test_empty_sets_are_not_evaluable(unl, lab_f, lab_y, word):
    res = ppi_rate(unl, lab_f, lab_y)
    assert res.as_tuple() == (None, None, None)
    assert word in res.reason


def test_single_item_warns_in_reason():
    res = ppi_rate([1, 0, 1], [1], [1])
    assert res.estimate is not None and "one labelled" in res.reason


def test_invalid_inputs():
    with pytest.raises(ValueError, match="paired"):
        ppi_rate([1], [1, 0], [1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ppi_rate([2], [1], [1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        ppi_rate([1], [float("nan")], [1])
    with pytest.raises(ValueError, match="confidence"):
        ppi_rate([1], [1], [1], confidence=1.0)


def _simulate(seed: int, p: float = 0.3, n: int = 200, big_n: int = 2000, fpr: float = 0.25, fnr: float = 0.1):
    """A biased judge: it calls 25% of the negatives positive and misses 10% of the positives."""
    rng = np.random.default_rng(seed)

    def draw(m):
        y = (rng.random(m) < p).astype(float)
        flip = np.where(y == 1, rng.random(m) < fnr, rng.random(m) < fpr)
        return y, np.where(flip, 1 - y, y)

    y_l, f_l = draw(n)
    _, f_u = draw(big_n)
    return f_u, f_l, y_l


def test_coverage_near_nominal_over_many_seeds():
    p = 0.3
    covered, naive_covered = 0, 0
    seeds = range(300)
    for seed in seeds:
        f_u, f_l, y_l = _simulate(seed, p=p)
        res = ppi_rate(f_u, f_l, y_l)
        covered += res.ci_low <= p <= res.ci_high
        # the judge's own rate is biased (0.3*0.9 + 0.7*0.25 = 0.445): its Wilson interval misses the truth
        lo, hi = wilson_interval(f_u.sum(), f_u.size)
        naive_covered += lo <= p <= hi
    rate = covered / len(seeds)
    assert 0.90 <= rate <= 0.99, rate
    assert naive_covered / len(seeds) < 0.05


def test_good_judge_gives_a_narrower_interval_than_the_labels_alone():
    f_u, f_l, y_l = _simulate(7, fpr=0.02, fnr=0.02, n=100, big_n=5000)
    res = ppi_rate(f_u, f_l, y_l)
    lo, hi = wilson_interval(y_l.sum(), y_l.size)
    assert res.ci_high - res.ci_low < hi - lo
