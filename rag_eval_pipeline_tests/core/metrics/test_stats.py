"""Wilson interval, percentile bootstrap and paired randomisation test, checked against scipy and
against values computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from rag_eval_pipeline.core.metrics.stats import (
    bootstrap_mean_ci,
    bootstrap_means,
    paired_randomisation_test,
    wilson_interval,
)


def wilson_by_hand(k: int, n: int, z: float) -> tuple[float, float]:
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def test_wilson_one_third_by_hand():
    z = 1.959963984540054  # norm.ppf(0.975)
    low, high = wilson_interval(1, 3)
    # centre = (1/3 + z^2/6) / (1 + z^2/3); half = z/(1+z^2/3) * sqrt(2/27 + z^2/36)
    want_low, want_high = wilson_by_hand(1, 3, z)
    assert low == pytest.approx(want_low, abs=1e-12) and high == pytest.approx(want_high, abs=1e-12)
    assert low == pytest.approx(0.0614919, abs=1e-6) and high == pytest.approx(0.7923404, abs=1e-6)


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 5), (5, 5), (1, 3), (3, 6), (7, 40), (123, 1000)])
@pytest.mark.parametrize("conf", [0.8, 0.95, 0.99])
def test_wilson_matches_scipy(k, n, conf):
    want = sps.binomtest(k, n).proportion_ci(confidence_level=conf, method="wilson")
    low, high = wilson_interval(k, n, conf)
    assert low == pytest.approx(want.low, abs=1e-12)
    assert high == pytest.approx(want.high, abs=1e-12)


@given(st.integers(1, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
@settings(max_examples=100, deadline=None)
def test_wilson_contains_estimate(kn):
    k, n = kn
    low, high = wilson_interval(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_wilson_empty_and_invalid():
    assert wilson_interval(0, 0) == (None, None)
    with pytest.raises(ValueError):
        wilson_interval(4, 3)
    with pytest.raises(ValueError):
        wilson_interval(1, 3, confidence=1.0)


def test_bootstrap_is_seeded_and_deterministic():
    x = np.random.default_rng(7).random(200)
    assert bootstrap_mean_ci(x, seed=3) == bootstrap_mean_ci(list(x), seed=3)
    assert bootstrap_mean_ci(x, seed=3) != bootstrap_mean_ci(x, seed=4)


def test_bootstrap_close_to_scipy_percentile():
    x = np.random.default_rng(1).normal(0.6, 0.2, size=300)
    ours = bootstrap_mean_ci(x, n_resamples=4000, seed=0)
    ref = sps.bootstrap((x,), np.mean, method="percentile", n_resamples=4000, random_state=0).confidence_interval
    se = x.std(ddof=1) / math.sqrt(x.size)
    # two Monte Carlo estimates of the same quantiles: agree to a small fraction of the standard error
    assert ours[0] == pytest.approx(ref.low, abs=0.1 * se)
    assert ours[1] == pytest.approx(ref.high, abs=0.1 * se)
    assert ours[0] < x.mean() < ours[1]


def test_bootstrap_edge_cases():
    assert bootstrap_mean_ci([]) == (None, None)
    assert bootstrap_mean_ci([None, float("nan")]) == (None, None)
    assert bootstrap_mean_ci([0.4]) == (0.4, 0.4)
    assert bootstrap_mean_ci([0.2, 0.2, 0.2]) == pytest.approx((0.2, 0.2))
    low, high = bootstrap_mean_ci([0.0, 1.0, None, 1.0])  # the None is dropped
    assert 0.0 <= low <= 2 / 3 <= high <= 1.0
    with pytest.raises(ValueError):
        bootstrap_mean_ci([1.0], n_resamples=0)


def test_bootstrap_means_shared_resamples_agree_with_single():
    x = np.random.default_rng(2).random((5, 50))
    many = bootstrap_means(x, 300, seed=9)
    for i in range(5):
        assert np.allclose(many[i], bootstrap_means(x[i], 300, seed=9), rtol=0, atol=1e-12)


def scipy_paired_p(a, b):
    res = sps.permutation_test(
        (a, b), lambda x, y, axis: np.mean(x - y, axis=axis), permutation_type="samples",
        vectorized=True, n_resamples=np.inf, alternative="two-sided",
    )
    return res.pvalue


def test_randomisation_p_value_matches_scipy_exact():
    a = np.array([0.5, 0.7, 0.2, 0.9, 0.4, 0.8, 0.6, 0.3, 0.55, 0.65])
    b = np.array([0.4, 0.5, 0.3, 0.6, 0.4, 0.5, 0.5, 0.1, 0.5, 0.7])
    want = scipy_paired_p(a, b)  # exact over 2^10 sign flips
    res = paired_randomisation_test(a, b, n_permutations=20000, seed=0)
    tol = 4 * math.sqrt(want * (1 - want) / 20000) + 1 / 20000
    assert res["p_value"] == pytest.approx(want, abs=tol)
    assert res["diff"] == pytest.approx(float(np.mean(a - b)))
    assert (res["wins"], res["ties"], res["losses"], res["n"]) == (7, 1, 2, 10)
    assert res["ci_low"] <= res["diff"] <= res["ci_high"]


def test_randomisation_clear_difference_and_no_difference():
    rng = np.random.default_rng(5)
    base = rng.random(60)
    res = paired_randomisation_test(base + 0.2, base, n_permutations=2000)
    assert res["p_value"] == pytest.approx(1 / 2001)  # every flip is smaller than the observed one
    assert res["ci_low"] == pytest.approx(0.2) and res["ci_high"] == pytest.approx(0.2)
    same = paired_randomisation_test(base, base, n_permutations=500)
    assert same["diff"] == 0.0 and same["p_value"] == 1.0 and same["ties"] == 60


def test_randomisation_drops_null_pairs_and_handles_empty():
    res = paired_randomisation_test([1.0, None, 0.0], [0.0, 1.0, float("nan")], n_permutations=100)
    assert res["n"] == 1 and res["wins"] == 1
    empty = paired_randomisation_test([], [])
    assert empty["n"] == 0 and empty["p_value"] is None and empty["diff"] is None
    with pytest.raises(ValueError):
        paired_randomisation_test([1.0], [1.0, 2.0])


def test_randomisation_is_seeded():
    a = np.random.default_rng(3).random(30)
    b = np.random.default_rng(4).random(30)
    assert paired_randomisation_test(a, b, seed=1) == paired_randomisation_test(a, b, seed=1)
