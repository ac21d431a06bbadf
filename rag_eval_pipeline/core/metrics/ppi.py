"""Prediction-powered inference (PPI) for a rate measured by a judge.

A judge ``f`` labels every item of a large unlabelled set cheaply; people label a small set on
which the judge is also run. The judge's rate on the large set is biased by its errors; PPI removes
that bias with the small labelled set and gives a valid confidence interval whose width shrinks
with the large set when the judge is good (ARES, Saad-Falcon et al., NAACL 2024, uses exactly this
correction to turn judge scores on a small hand-labelled set into intervals).

Estimator, for a mean (the rate of a 0/1 outcome), with ``N`` unlabelled judge predictions
``f(X~_i)``, ``n`` labelled judge predictions ``f(X_j)`` and their human labels ``Y_j``::

    theta_hat = mean_i f(X~_i) - mean_j (f(X_j) - Y_j)          # prediction minus rectifier
    se        = sqrt( var(f(X~)) / N + var(f(X) - Y) / n )       # sample variances, ddof = 1
    interval  = theta_hat -/+ z_{1 - alpha/2} * se               # normal approximation

The two variances are the empirical variances (``ddof=1``) of the unlabelled predictions and of
the labelled differences ``f - Y``; the two samples are independent, so the variances add.

Clipping: ``theta_hat`` and both bounds are clipped to [0, 1], the range of a rate. The raw
(unclipped) values are kept in :class:`PPIResult` (``raw_estimate``, ``raw_low``, ``raw_high``).
Clipping removes only impossible values, so it never lowers the coverage of the interval.

Sources: A. N. Angelopoulos, S. Bates, C. Fannjiang, M. I. Jordan & T. Zrnic,
"Prediction-powered inference", Science 382 (2023), Algorithm 1 / Theorem 1 (mean estimation);
J. Saad-Falcon, O. Khattab, C. Potts & M. Zaharia, "ARES: An Automated Evaluation Framework for
Retrieval-Augmented Generation Systems" (2023), section 3.3 (PPI over judge scores).
Pure numpy/scipy; nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

__all__ = ["PPIResult", "ppi_rate"]


@dataclass(frozen=True)
class PPIResult:
    """A prediction-powered estimate of a rate.

    Fields: ``estimate``, ``ci_low``, ``ci_high`` (in [0, 1], or all None when not evaluable),
    ``reason`` (None when evaluable; otherwise why not), ``n_labelled``, ``n_unlabelled``,
    ``raw_estimate`` / ``raw_low`` / ``raw_high`` (before clipping to [0, 1]), ``se`` (standard
    error), ``judge_rate`` (mean judge prediction on the unlabelled set), ``rectifier``
    (mean of f - Y on the labelled set: the judge's bias), ``confidence``.
    """

    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    reason: str | None
    n_labelled: int
    n_unlabelled: int
    raw_estimate: float | None = None
    raw_low: float | None = None
    raw_high: float | None = None
    se: float | None = None
    judge_rate: float | None = None
    rectifier: float | None = None
    confidence: float = 0.95

    def as_tuple(self) -> tuple[float | None, float | None, float | None]:
        """``(estimate, ci_low, ci_high)``; ``(None, None, None)`` when not evaluable."""
        return self.estimate, self.ci_low, self.ci_high


def _as_unit_array(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    arr = np.asarray(values, dtype=np.float64).ravel()
    if arr.size and (np.isnan(arr).any() or (arr < 0).any() or (arr > 1).any()):
        bad = arr[np.isnan(arr) | (arr < 0) | (arr > 1)]
        raise ValueError(f"{name} must hold values in [0, 1] (0/1 judge predictions or labels), "
                         f"got {bad[:5].tolist()}")
    return arr


def _var(x: np.ndarray) -> float:
    """Sample variance with ddof = 1 (0 for a single value, never NaN)."""
    return float(np.var(x, ddof=1)) if x.size > 1 else 0.0


def ppi_rate(
    unlabelled_pred: Sequence[float] | np.ndarray,
    labelled_pred: Sequence[float] | np.ndarray,
    labelled_true: Sequence[float] | np.ndarray,
    confidence: float = 0.95,
) -> PPIResult:
    """Prediction-powered point estimate and normal-approximation interval for a rate.

    Inputs: ``unlabelled_pred`` — judge predictions on the large unlabelled set, shape (N,);
    ``labelled_pred`` and ``labelled_true`` — judge predictions and human labels on the small
    labelled set, shape (n,) each, same item order. Values are 0/1 (any value in [0, 1] is
    accepted, e.g. a judge's probability). ``confidence`` in (0, 1).

    Output: :class:`PPIResult` with ``estimate`` = mean(f(unlabelled)) - mean(f(labelled) -
    y(labelled)) and the interval estimate -/+ z * sqrt(var_f / N + var_delta / n) (module
    docstring; sample variances with ddof=1), clipped to [0, 1]. With ``n == 1`` or ``N == 1``
    the corresponding variance cannot be estimated; it is taken as 0 and ``reason`` says so (the
    interval is then too narrow). With ``n == 0`` or ``N == 0`` nothing is estimated:
    ``estimate``, ``ci_low``, ``ci_high`` are None and ``reason`` says which set is empty —
    never a [0, 0] interval.

    Raises ValueError when ``labelled_pred`` and ``labelled_true`` differ in length, a value
    lies outside [0, 1] or is NaN, or ``confidence`` is outside (0, 1).
    Source: Angelopoulos et al., "Prediction-powered inference", Science 2023 (mean estimation);
    ARES (Saad-Falcon et al. 2023) for its use over judge labels.
    """
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    fu = _as_unit_array(unlabelled_pred, "unlabelled_pred")
    fl = _as_unit_array(labelled_pred, "labelled_pred")
    y = _as_unit_array(labelled_true, "labelled_true")
    if fl.shape != y.shape:
        raise ValueError(f"labelled_pred and labelled_true must be paired: lengths {fl.size} and {y.size} differ")
    n, big_n = int(y.size), int(fu.size)
    if n == 0 or big_n == 0:
        empty = [name for name, size in (("labelled", n), ("unlabelled", big_n)) if size == 0]
        return PPIResult(None, None, None, f"no {' and no '.join(empty)} items: rate not evaluable",
                         n_labelled=n, n_unlabelled=big_n, confidence=float(confidence))
    delta = fl - y
    judge_rate = float(fu.mean())
    rectifier = float(delta.mean())
    raw = judge_rate - rectifier
    se = float(np.sqrt(_var(fu) / big_n + _var(delta) / n))
    z = float(norm.ppf(1.0 - (1.0 - float(confidence)) / 2.0))
    lo, hi = raw - z * se, raw + z * se
    reason = None
    single = [name for name, size in (("labelled", n), ("unlabelled", big_n)) if size == 1]
    if single:
        reason = f"one {' and one '.join(single)} item only: its variance is taken as 0, interval too narrow"

    def clip(v: float) -> float:
        return float(min(1.0, max(0.0, v)))

    return PPIResult(clip(raw), clip(lo), clip(hi), reason, n_labelled=n, n_unlabelled=big_n,
                     raw_estimate=raw, raw_low=lo, raw_high=hi, se=se, judge_rate=judge_rate,
                     rectifier=rectifier, confidence=float(confidence))
