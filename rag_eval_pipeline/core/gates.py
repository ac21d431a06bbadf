"""Promotion gates: per-metric thresholds against a baseline, decided with a paired test over questions.

Source: seed 000 (accept a change on a held-out split, criteria fixed before results are seen) and
seed 001 (reject a change that materially lowers recall or claim evidence availability even when an
aggregate improves); the paired randomisation test follows Smucker, Allan & Carterette (2007).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from rag_eval_pipeline.core.config import Threshold
from rag_eval_pipeline.core.errors import EvalError


class VersionMismatchError(EvalError):
    """Candidate and baseline were evaluated on different golden or corpus versions."""


@dataclass
class GateResult:
    """The outcome of one threshold for one candidate system.

    ``status`` is one of: ``pass``, ``regression`` (breach the paired test calls real, or a floor),
    ``inconclusive`` (breach, but the paired test cannot tell it from chance: fails when
    ``block_inconclusive``, the default, since a material drop on a small test split is not
    evidence of safety), ``within_noise`` (breach smaller than the judge's own resolution: passes),
    ``not_evaluable`` (a value is null: fails closed when blocking).
    """

    system: str
    metric: str
    k: int | None
    candidate: float | None
    baseline: float | None
    difference: float | None
    status: str
    reason: str
    blocking: bool
    p_value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    wins: int = 0
    ties: int = 0
    losses: int = 0
    regressed_questions: list[str] = field(default_factory=list)

    block_inconclusive: bool = True

    @property
    def passed(self) -> bool:
        return self.status in ("pass", "within_noise") or (self.status == "inconclusive" and not self.block_inconclusive)


def check_versions(candidate: dict, baseline: dict) -> None:
    """Raise VersionMismatchError naming both versions when golden or corpus versions differ.

    Inputs: dicts with ``golden_version`` and ``corpus_version`` keys.
    """
    for key in ("golden_version", "corpus_version"):
        if candidate.get(key) != baseline.get(key):
            raise VersionMismatchError(
                f"cannot compare runs: candidate {key} {candidate.get(key)!r} differs from baseline "
                f"{key} {baseline.get(key)!r}"
            )


def _value(summary: pl.DataFrame, system: str, split: str, metric: str, k: int | None) -> float | None:
    rows = summary.filter(
        (pl.col("system") == system) & (pl.col("split") == split) & (pl.col("segment") == "all")
        & (pl.col("metric") == metric)
        & (pl.col("k").is_null() if k is None else pl.col("k") == k)
    )
    return rows["value"][0] if rows.height else None


def _per_question(qm: pl.DataFrame, system: str, split: str, metric: str, k: int | None) -> pl.DataFrame:
    return qm.filter(
        (pl.col("system") == system) & (pl.col("metric") == metric)
        & ((pl.col("split") == split) if split != "all" else pl.lit(True))
        & (pl.col("k").is_null() if k is None else pl.col("k") == k)
    ).select("question_id", "value")


def evaluate_gates(
    candidate_system: str,
    candidate_summary: pl.DataFrame,
    candidate_qm: pl.DataFrame,
    baseline_system: str,
    baseline_summary: pl.DataFrame,
    baseline_qm: pl.DataFrame,
    thresholds: list[Threshold],
    split: str = "test",
    alpha: float = 0.05,
    n_permutations: int = 10000,
    seed: int = 0,
    noise_resolution: dict[str, float] | None = None,
    block_inconclusive: bool = True,
) -> list[GateResult]:
    """Apply each threshold to the candidate against the baseline on ``split``.

    Inputs: metric_summary and question_metrics tables for candidate and baseline (they may be the
    same tables when both systems ran together). Output: one :class:`GateResult` per threshold.
    A drop beyond ``max_abs_drop`` or ``max_rel_drop`` is a regression when the paired two-sided
    randomisation test over the questions both systems answered gives p < ``alpha`` and the drop is
    larger than the judge's noise resolution for that metric (``noise_resolution``); otherwise it is
    ``inconclusive`` (blocking unless ``block_inconclusive`` is False). A value under ``min_value`` (over it, for lower-is-better metrics) is always a
    regression. A null candidate or baseline value is ``not_evaluable``.
    """
    from rag_eval_pipeline.core.metrics.stats import paired_randomisation_test

    results = []
    for t in thresholds:
        cand = _value(candidate_summary, candidate_system, split, t.metric, t.k)
        base = _value(baseline_summary, baseline_system, split, t.metric, t.k)
        res = GateResult(candidate_system, t.metric, t.k, cand, base, None, "pass", "", t.blocking,
                         block_inconclusive=block_inconclusive)
        known = candidate_summary.filter(pl.col("metric") == t.metric)
        if candidate_summary.height and not known.filter(
                pl.col("k").is_null() if t.k is None else pl.col("k") == t.k).height:
            # no row for any system or split: a metric this evaluation does not compute (a typo, or a
            # k missing), not an empty denominator
            res.status = "not_evaluable"
            ks = sorted(set(known["k"].drop_nulls().to_list()))
            if known.height:
                res.reason = (f"metric {t.metric!r} is computed at k in {ks}, not at k={t.k}" if ks else
                              f"metric {t.metric!r} has no cut-off k; expected no k, got k={t.k}")
            else:
                res.reason = (f"unknown metric {t.metric!r}: this evaluation computes "
                              f"{sorted(set(candidate_summary['metric'].to_list()))}")
            results.append(res)
            continue
        if cand is None or (base is None and t.min_value is None):
            res.status, res.reason = "not_evaluable", "candidate or baseline value is null (empty denominator)"
            results.append(res)
            continue
        sign = 1.0 if t.higher_is_better else -1.0
        if t.min_value is not None and sign * (cand - t.min_value) < 0:
            res.status = "regression"
            res.reason = f"{cand:.4f} is {'below' if t.higher_is_better else 'above'} the floor {t.min_value}"
        if base is None:
            results.append(res)
            continue
        res.difference = cand - base
        drop = sign * (base - cand)
        breaches = []
        if t.max_abs_drop is not None and drop > t.max_abs_drop + 1e-12:
            breaches.append(f"drop {drop:.4f} > allowed {t.max_abs_drop}")
        if t.max_rel_drop is not None and base != 0 and drop / abs(base) > t.max_rel_drop + 1e-12:
            breaches.append(f"relative drop {drop / abs(base):.2%} > allowed {t.max_rel_drop:.0%}")
        a = _per_question(candidate_qm, candidate_system, split, t.metric, t.k)
        b = _per_question(baseline_qm, baseline_system, split, t.metric, t.k)
        paired = a.join(b, on="question_id", suffix="_base").drop_nulls()
        if paired.height:
            test = paired_randomisation_test(
                paired["value"].to_numpy(), paired["value_base"].to_numpy(), n_permutations=n_permutations, seed=seed
            )
            res.p_value, res.ci_low, res.ci_high = test["p_value"], test["ci_low"], test["ci_high"]
            res.wins, res.ties, res.losses = test["wins"], test["ties"], test["losses"]
            if not t.higher_is_better:
                res.wins, res.losses = res.losses, res.wins
            worse = paired.filter(sign * (pl.col("value") - pl.col("value_base")) < 0)
            res.regressed_questions = sorted(worse["question_id"].to_list())
        if breaches and res.status != "regression":
            noise = (noise_resolution or {}).get(t.metric)
            if noise is not None and drop <= noise:
                res.status = "within_noise"
                res.reason = "; ".join(breaches) + f", but within the judge's noise resolution {noise:.4f}"
            elif res.p_value is not None and res.p_value >= alpha:
                res.status = "inconclusive"
                res.reason = "; ".join(breaches) + f", but the paired test gives p = {res.p_value:.3f} >= {alpha}"
            else:
                res.status = "regression"
                res.reason = "; ".join(breaches) + (f" (p = {res.p_value:.4f})" if res.p_value is not None else "")
        elif not breaches and res.status == "pass":
            res.reason = f"difference {res.difference:+.4f} within thresholds"
        results.append(res)
    return results
