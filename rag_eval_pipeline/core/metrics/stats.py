"""Interval estimates and paired significance tests used by every aggregate metric.

Pure numpy/scipy; no polars, no Dagster. Three public functions:

- :func:`wilson_interval` - score interval for a proportion (Wilson 1927).
- :func:`bootstrap_mean_ci` - seeded percentile bootstrap over questions for a mean
  (Efron & Tibshirani 1993, ch. 13).
- :func:`paired_randomisation_test` - two-sided sign-flip randomisation test on paired
  per-question differences (Fisher's randomisation test as recommended for IR evaluation by
  Smucker, Allan & Carterette 2007, and as implemented by ranx), with a paired-bootstrap interval.

The resampling helpers (:func:`resample_indices`, :func:`bootstrap_means`) are shared with
``core/metrics/summary.py``: a summary group that holds every question, all evaluable, gets
exactly ``bootstrap_mean_ci`` of its values in question_id order with the same seed (up to
round-off).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

# Resampling is done in blocks whose index matrix holds at most this many elements, so memory
# stays bounded (about 32 MB per block) whatever the number of questions or resamples.
_BLOCK_ELEMENTS = 4_000_000


def _check_confidence(confidence: float) -> float:
    if not (0.0 < float(confidence) < 1.0):
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    return float(confidence)


def _z(confidence: float) -> float:
    from scipy.stats import norm  # ~1 s of imports: only where an interval is computed

    return float(norm.ppf(1.0 - (1.0 - confidence) / 2.0))


def _clean(values: Sequence[float | None] | np.ndarray) -> np.ndarray:
    """Return a float64 1-D array with None and NaN removed."""
    if not isinstance(values, np.ndarray):
        values = [np.nan if v is None else v for v in values]
    arr = np.asarray(values, dtype=np.float64).ravel()
    return arr[~np.isnan(arr)]


def wilson_interval(successes: float, n: float, confidence: float = 0.95) -> tuple[float | None, float | None]:
    """Wilson score interval for a binomial proportion.

    Input: ``successes`` (0 <= successes <= n; an integer count, or the sum of 0/1 indicators),
    ``n`` (number of trials, >= 0), ``confidence`` in (0, 1).
    Output: ``(low, high)`` with 0 <= low <= successes/n <= high <= 1; ``(None, None)`` when
    ``n == 0`` (not evaluable is not zero).
    Raises ValueError for a negative ``n``, ``successes`` outside [0, n], or a confidence outside (0, 1).
    Source: E. B. Wilson, "Probable inference, the law of succession, and statistical inference",
    JASA 22 (1927); no continuity correction, so it matches
    ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")``.
    """
    confidence = _check_confidence(confidence)
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes!r}, n={n!r}")
    if n == 0:
        return None, None
    low, high = wilson_arrays(np.array([successes], float), np.array([n], float), confidence)
    return float(low[0]), float(high[0])


def wilson_arrays(successes: np.ndarray, n: np.ndarray, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised :func:`wilson_interval` over equal-length float arrays (n > 0 everywhere).

    Output: two float64 arrays ``(low, high)`` clipped to [0, 1]; NaN where ``n <= 0``.
    Raises ValueError for a confidence outside (0, 1). Source: Wilson (1927).
    """
    confidence = _check_confidence(confidence)
    z = _z(confidence)
    s = np.asarray(successes, dtype=np.float64)
    m = np.asarray(n, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = s / m
        z2 = z * z
        denom = 1.0 + z2 / m
        centre = (p + z2 / (2.0 * m)) / denom
        half = (z / denom) * np.sqrt(np.maximum(p * (1.0 - p) / m + z2 / (4.0 * m * m), 0.0))
        low = np.clip(centre - half, 0.0, 1.0)
        high = np.clip(centre + half, 0.0, 1.0)
    # the exact bounds at p = 0 and p = 1 (round-off otherwise leaves 1e-17 instead of 0)
    low = np.where(s == 0, 0.0, low)
    high = np.where(s == m, 1.0, high)
    bad = ~(m > 0)
    low[bad] = np.nan
    high[bad] = np.nan
    return low, high


def resample_indices(n: int, n_resamples: int, seed: int, min_rows: int = 1) -> Iterator[np.ndarray]:
    """Yield the bootstrap resamples of ``n`` items as blocks of index matrices.

    Each block is an int64 array of shape (rows, n) whose row r lists the items drawn, with
    replacement, in one resample of size n; the rows of all blocks together number
    ``n_resamples``. The draws come from ``numpy.random.default_rng(seed)`` and depend only on
    ``(n, n_resamples, seed)``, so the same question set gets the same resamples everywhere.
    Yields nothing when ``n`` or ``n_resamples`` is 0. Blocks hold at most about 4 million
    indices (memory stays bounded for any n), or ``min_rows`` resamples when that is more: a caller whose
    work per block grows with n (copies of n-row matrices) keeps the number of blocks from growing with n.
    The draws do not depend on the block size (numpy's generator yields the same stream however it is cut).
    Source: Efron & Tibshirani (1993), ch. 6.
    """
    if n <= 0 or n_resamples <= 0:
        return
    rng = np.random.default_rng(seed)
    rows = max(1, min(n_resamples, max(min_rows, _BLOCK_ELEMENTS // n)))
    done = 0
    while done < n_resamples:
        b = min(rows, n_resamples - done)
        yield rng.integers(0, n, size=(b, n))
        done += b


def bootstrap_means(values: np.ndarray, n_resamples: int, seed: int) -> np.ndarray:
    """Bootstrap means of one or many equal-length samples, sharing one set of resamples.

    Input: ``values`` of shape (n,) or (g, n), finite floats. Output: shape (n_resamples,) or
    (g, n_resamples): the mean of each resample of each sample. Up to round-off the result does
    not depend on ``g``: for a few samples the resampled values are gathered, for many the
    resamples are turned into count matrices and applied with one matrix product per block.
    The resamples are :func:`resample_indices` ``(n, n_resamples, seed)``. Source: Efron &
    Tibshirani (1993), ch. 6.
    """
    v = np.asarray(values, dtype=np.float64)
    one = v.ndim == 1
    v2 = v[None, :] if one else v
    g, n = v2.shape
    out = np.empty((g, n_resamples), dtype=np.float64)
    col = 0
    for idx in resample_indices(n, n_resamples, seed):
        b = idx.shape[0]
        if g <= 2:
            for i in range(g):
                out[i, col:col + b] = v2[i][idx].mean(axis=1)
        else:
            flat = (idx + (np.arange(b) * n)[:, None]).ravel()
            counts = np.bincount(flat, minlength=b * n).reshape(b, n).astype(np.float64)
            out[:, col:col + b] = (v2 @ counts.T) / n
        col += b
    return out[0] if one else out


def _percentile_bounds(means: np.ndarray, confidence: float) -> tuple[np.ndarray, np.ndarray]:
    alpha = 1.0 - confidence
    q = np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=-1)
    return q[0], q[1]


def bootstrap_mean_ci(values: Sequence[float | None] | np.ndarray, confidence: float = 0.95,
                      n_resamples: int = 2000, seed: int = 0) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval for the mean of per-question values.

    Input: ``values``, a sequence or array of floats (None and NaN are dropped: not evaluable is
    not a value); ``confidence`` in (0, 1); ``n_resamples`` >= 1; ``seed`` for
    ``numpy.random.default_rng``. Questions are resampled with replacement, ``n_resamples`` times.
    Output: ``(low, high)``, the alpha/2 and 1-alpha/2 quantiles (linear interpolation) of the
    resampled means, within [min(values), max(values)]; ``(None, None)`` when no value is left.
    The same inputs and seed always give the same interval.
    Raises ValueError for a confidence outside (0, 1) or ``n_resamples`` < 1.
    Source: B. Efron & R. J. Tibshirani, *An Introduction to the Bootstrap* (1993), ch. 13.
    """
    confidence = _check_confidence(confidence)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    arr = _clean(values)
    if arr.size == 0:
        return None, None
    means = bootstrap_means(arr, n_resamples, seed)
    low, high = _percentile_bounds(means, confidence)
    return float(low), float(high)


def paired_randomisation_test(a: Sequence[float | None] | np.ndarray, b: Sequence[float | None] | np.ndarray,
                              n_permutations: int = 10000, seed: int = 0, confidence: float = 0.95,
                              n_resamples: int = 2000) -> dict:
    """Two-sided paired randomisation (sign-flip) test of mean(a - b) = 0, with a bootstrap interval.

    Input: ``a`` (candidate) and ``b`` (baseline), equal-length sequences of per-question values
    in the same question order; a pair where either side is None/NaN is dropped.
    ``n_permutations`` >= 1 random sign flips of the differences, drawn from
    ``numpy.random.default_rng(seed)``; ``confidence`` and ``n_resamples`` set the paired
    percentile bootstrap interval of the mean difference (same seed).
    Output: dict with ``diff`` (mean of a - b), ``p_value`` in (0, 1] computed as
    (1 + #{|flipped mean| >= |observed mean|}) / (1 + n_permutations), ``ci_low``, ``ci_high``,
    ``wins`` (a > b), ``ties``, ``losses`` (a < b) and ``n`` (pairs kept). With no pair left,
    ``diff``, ``p_value`` and the interval are None and the counts 0.
    Raises ValueError when ``a`` and ``b`` differ in length, or for ``n_permutations`` < 1.
    Source: Fisher's randomisation test as compared for IR by M. D. Smucker, J. Allan &
    B. Carterette, "A comparison of statistical significance tests for information retrieval
    evaluation", CIKM 2007 (the ranx ``fisher`` test); Monte Carlo p-value with the observed
    statistic counted (Phipson & Smyth 2010); interval by Efron & Tibshirani (1993).
    """
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations!r}")
    xa = np.asarray([np.nan if v is None else v for v in a], dtype=np.float64)
    xb = np.asarray([np.nan if v is None else v for v in b], dtype=np.float64)
    if xa.shape != xb.shape:
        raise ValueError(f"a and b must be paired: lengths {xa.size} and {xb.size} differ")
    keep = ~(np.isnan(xa) | np.isnan(xb))
    d = xa[keep] - xb[keep]
    n = int(d.size)
    result: dict[str, float | None] = {
        "diff": None, "p_value": None, "ci_low": None, "ci_high": None,
        "wins": int((d > 0).sum()), "ties": int((d == 0).sum()), "losses": int((d < 0).sum()), "n": n}
    if n == 0:
        return result
    observed = float(d.sum())
    # relative tolerance so that a flip equal to the observed statistic up to round-off counts
    threshold = abs(observed) - 1e-12 * max(abs(observed), float(np.abs(d).sum()), 1e-300)
    rng = np.random.default_rng(seed)
    rows = max(1, min(n_permutations, _BLOCK_ELEMENTS // n))
    extreme = 0
    done = 0
    while done < n_permutations:
        m = min(rows, n_permutations - done)
        signs = rng.integers(0, 2, size=(m, n), dtype=np.int8).astype(np.float64) * 2.0 - 1.0
        extreme += int((np.abs(signs @ d) >= threshold).sum())
        done += m
    low, high = bootstrap_mean_ci(d, confidence=confidence, n_resamples=n_resamples, seed=seed)
    result.update(diff=observed / n, p_value=(extreme + 1) / (n_permutations + 1),
                  ci_low=low, ci_high=high)
    return result
