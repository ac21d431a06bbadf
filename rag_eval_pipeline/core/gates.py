"""Promotion gates: per-metric thresholds against a baseline, decided with a paired test over questions.

Rules: a change is accepted on the held-out split with criteria fixed before results are seen, and a
change that materially lowers recall or claim evidence availability is rejected even when an aggregate
improves; the paired randomisation test follows Smucker, Allan & Carterette (CIKM 2007).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rag_eval_pipeline.core.config import EvalConfig, Threshold
from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.tables import SCHEMAS

#: Gate statuses that let a candidate through (``inconclusive`` too when ``block_inconclusive`` is off).
PASSING_STATUSES = ("pass", "within_noise", "unchanged_since_promotion")
#: Every status a gate row can have (``GateResult``'s docstring says what each means; the last two are the
#: rows of :class:`GateVerdict` errors).
GATE_STATUSES = ("pass", "regression", "below_floor", "inconclusive", "within_noise", "not_evaluable",
                 "unchanged_since_promotion", "version_mismatch", "baseline_damaged")
#: Manifest fields that identify what a system ran; equal fields = the same run configuration.
IDENTITY_FIELDS = ("system", "corpus_version", "golden_version", "retriever", "generator", "model", "prompt_version",
                   "system_version")


class VersionMismatchError(EvalError):
    """Candidate and baseline were evaluated on different golden or corpus versions."""


@dataclass
class GateResult:
    """The outcome of one threshold for one candidate system.

    ``candidate`` / ``baseline`` are the two sides' means over the ``n`` questions both evaluated (the
    paired set) and ``difference`` = candidate - baseline over those same questions: the figures the
    thresholds, the interval, p and W/T/L are all about. ``candidate_all`` / ``baseline_all`` are each
    side's headline mean over its own evaluable questions of the split (a floor, ``min_value``, reads
    ``candidate_all``). ``n_baseline`` = the baseline's questions with a value; ``n_candidate_errors`` =
    those the candidate could not be compared on because its run errored (``n_baseline - n`` is every
    baseline question left out; the run-error check counts the errors).

    ``status`` is one of: ``pass``, ``regression`` (breach the paired test calls real), ``below_floor``
    (the candidate's own mean is beyond ``min_value``: under it, or over it for a lower-is-better metric,
    where ``min_value`` is a ceiling; always blocks when blocking, nothing to test; evaluated even when no
    question is shared with the baseline),
    ``inconclusive`` (breach, but the paired test cannot tell it from chance: fails when
    ``block_inconclusive``, the default, since a material drop on a small test split is not
    evidence of safety), ``within_noise`` (breach smaller than the judge's own resolution: passes),
    ``not_evaluable`` (a value is null: fails closed when blocking), ``unchanged_since_promotion``
    (the candidate is the promoted baseline itself, same system, configuration and versions: there
    is nothing to compare, which passes but is not evidence of anything).
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
    level: str | None = None  # the level of the gated rows (chunk / doc); None for metrics without one
    candidate_all: float | None = None
    baseline_all: float | None = None
    n: int | None = None
    n_baseline: int | None = None
    n_candidate_errors: int | None = None

    def compared_words(self) -> str:
        """``n 10 of 11; 1 candidate error`` (how many baseline questions the gate compared, and why the
        rest were not); empty when nothing was compared against a baseline."""
        return compared_words(self.n, self.n_baseline, self.n_candidate_errors)

    @property
    def passed(self) -> bool:
        return self.status in PASSING_STATUSES or (self.status == "inconclusive" and not self.block_inconclusive)


def compared_words(n: int | None, n_baseline: int | None, n_candidate_errors: int | None) -> str:
    """``n 10 of 11; 1 candidate error``: ``n`` questions compared of the baseline's ``n_baseline``, and
    of those left out how many the candidate errored on (the rest: no candidate value, e.g. not
    evaluable for it). Empty string when ``n`` is None (no comparison). Raises nothing."""
    if n is None:
        return ""
    words = f"n {n}" + (f" of {n_baseline}" if n_baseline is not None and n_baseline != n else "")
    left = (n_baseline - n) if n_baseline is not None else 0
    errs = n_candidate_errors or 0
    parts = []
    if errs:
        parts.append(f"{errs} candidate error{'s' if errs != 1 else ''}")
    if left - errs > 0:
        parts.append(f"{left - errs} without a candidate value")
    return words + ("; " + ", ".join(parts) if parts else "")


def bound_words(t: Threshold, within: bool = False) -> str:
    """How a threshold's ``min_value`` reads for its metric's direction: ``below the floor 0.6`` for a
    higher-is-better metric; ``above the ceiling 0.1 (min_value on a lower-is-better metric is its worst
    allowed value)`` for a lower-is-better one (an error or abstention rate). ``within=True``: the bound met
    (``the floor 0.6`` / ``the ceiling 0.1 (...)``). Input: a :class:`Threshold` with ``min_value`` set;
    raises nothing. The same direction rule as the metric registry (``core/metrics/names.py``)."""
    if t.higher_is_better:
        return f"{'' if within else 'below '}the floor {t.min_value}"
    return (f"{'' if within else 'above '}the ceiling {t.min_value} (min_value on a lower-is-better metric is its "
            "worst allowed value)")


def check_versions(candidate: Mapping[str, Any], baseline: Mapping[str, Any]) -> None:
    """Raise VersionMismatchError naming both versions when golden or corpus versions differ.

    Inputs: dicts with ``golden_version`` and ``corpus_version`` keys.
    """
    for key in ("golden_version", "corpus_version"):
        if candidate.get(key) != baseline.get(key):
            raise VersionMismatchError(
                f"cannot compare runs: candidate {key} {candidate.get(key)!r} differs from baseline "
                f"{key} {baseline.get(key)!r}"
            )


def gated_level(summary: pl.DataFrame, metric: str, level: str | None) -> str | None:
    """The level a gate on ``metric`` reads: ``level`` when set; else ``chunk`` when the metric has
    chunk-level rows in ``summary``, else ``doc`` when it has document-level ones, else None (a metric
    without levels). A table without a ``level`` column has none."""
    if level is not None:
        return level
    if "level" not in summary.columns:
        return None
    present = set(summary.filter(pl.col("metric") == metric)["level"].drop_nulls().to_list())
    return "chunk" if "chunk" in present else "doc" if "doc" in present else None


def _at_level(frame: pl.DataFrame, level: str | None) -> pl.Expr:
    """Rows of ``level`` (every row when None). A table written before levels existed (no ``level``
    column, as a baseline promoted then) holds chunk-level rows only."""
    if level is None:
        return pl.lit(True)
    if "level" not in frame.columns:
        return pl.lit(level == "chunk")
    return pl.col("level") == level


def _value(summary: pl.DataFrame, system: str, split: str, metric: str, k: int | None,
           level: str | None = None) -> float | None:
    rows = summary.filter(
        (pl.col("system") == system) & (pl.col("split") == split) & (pl.col("segment") == "all")
        & (pl.col("metric") == metric)
        & (pl.col("k").is_null() if k is None else pl.col("k") == k)
        & _at_level(summary, level)
    )
    return rows["value"][0] if rows.height else None


def _per_question(qm: pl.DataFrame, system: str, split: str, metric: str, k: int | None,
                  level: str | None = None) -> pl.DataFrame:
    rows = qm.filter(
        (pl.col("system") == system) & (pl.col("metric") == metric)
        & ((pl.col("split") == split) if split != "all" else pl.lit(True))
        & (pl.col("k").is_null() if k is None else pl.col("k") == k)
        & _at_level(qm, level)
    )
    status = pl.col("status") if "status" in rows.columns else pl.lit(None, dtype=pl.String)
    return rows.select("question_id", "value", status.alias("status"))


@dataclass(frozen=True)
class PairedComparison:
    """A paired comparison of one metric over the questions both sides have a value for.

    ``n`` pairs; ``candidate_mean`` / ``baseline_mean`` each side's mean over those n questions;
    ``difference`` = mean(candidate - baseline) = candidate_mean - baseline_mean (None when n = 0); ``p_value`` of the
    two-sided paired randomisation test; ``ci_low`` / ``ci_high`` the paired-bootstrap 95% interval of
    that mean difference; ``wins`` / ``ties`` / ``losses`` = questions where the candidate is better /
    equal / worse (oriented by ``higher_is_better``); ``worse`` / ``better`` the question ids, sorted.
    """

    n: int
    difference: float | None
    p_value: float | None
    ci_low: float | None
    ci_high: float | None
    wins: int
    ties: int
    losses: int
    worse: list[str]
    better: list[str]
    candidate_mean: float | None = None
    baseline_mean: float | None = None


def paired_comparison(candidate: pl.DataFrame, baseline: pl.DataFrame, *, higher_is_better: bool = True,
                      n_permutations: int = 10000, seed: int = 0) -> PairedComparison:
    """Pair two sides' per-question values of one metric and test the mean difference.

    Inputs: two frames with ``question_id`` and ``value`` (one row per question; a null value is not
    evaluable and drops the pair), ``higher_is_better`` (orientation of wins, losses, worse and better),
    ``n_permutations`` and ``seed`` of the test. Output: a :class:`PairedComparison` over the questions
    present with a value on both sides, paired in question_id order (the same test whatever the frames' row
    order). The test and interval are
    :func:`core.metrics.stats.paired_randomisation_test` (Fisher's randomisation test as compared for IR
    by Smucker, Allan & Carterette, CIKM 2007; percentile bootstrap, Efron & Tibshirani 1993): the gates
    and ``rag-eval compare`` both call this one function. Raises ValueError for ``n_permutations`` < 1.
    """
    from rag_eval_pipeline.core.metrics.stats import paired_randomisation_test

    # pairs in question_id order: the Monte Carlo draws follow the pairs' order, so it must not depend on the
    # order a step wrote its rows in (a sharded suite's merged tables hold the shards' rows one shard after another)
    paired = (candidate.select("question_id", "value")
              .join(baseline.select("question_id", "value"), on="question_id", suffix="_base").drop_nulls()
              .sort("question_id"))
    if not paired.height:
        return PairedComparison(0, None, None, None, None, 0, 0, 0, [], [])
    test = paired_randomisation_test(paired["value"].to_numpy(), paired["value_base"].to_numpy(),
                                     n_permutations=n_permutations, seed=seed)
    wins, losses = (test["wins"], test["losses"]) if higher_is_better else (test["losses"], test["wins"])
    sign = 1.0 if higher_is_better else -1.0
    delta = sign * (pl.col("value") - pl.col("value_base"))
    return PairedComparison(
        n=test["n"], difference=test["diff"], p_value=test["p_value"], ci_low=test["ci_low"], ci_high=test["ci_high"],
        wins=wins, ties=test["ties"], losses=losses,
        worse=sorted(paired.filter(delta < 0)["question_id"].to_list()),
        better=sorted(paired.filter(delta > 0)["question_id"].to_list()),
        candidate_mean=float(paired["value"].cast(pl.Float64).sum()) / paired.height,
        baseline_mean=float(paired["value_base"].cast(pl.Float64).sum()) / paired.height)


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
    The drop is the paired mean difference over the questions of ``split`` both systems have a value
    for (the same questions the interval, p and W/T/L are computed on); ``max_rel_drop`` is relative to
    the baseline's mean over those questions. A drop beyond ``max_abs_drop`` or ``max_rel_drop`` is a
    regression when the paired two-sided randomisation test gives p < ``alpha`` and the drop is
    larger than the judge's noise resolution for that metric (``noise_resolution``); otherwise it is
    ``inconclusive`` (blocking unless ``block_inconclusive`` is False). A worsening over a baseline mean of 0
    is an infinite relative change: it breaches any ``max_rel_drop`` (no change from 0 passes). A candidate
    mean over its own evaluable questions under ``min_value`` (over it, for lower-is-better metrics: a
    ceiling) is ``below_floor``, whether or not any question is shared. A null candidate or baseline value,
    or no question evaluated by both under a drop limit, is ``not_evaluable`` (with the counts ``n``,
    ``n_baseline``, ``n_candidate_errors`` filled whenever the baseline has a value).
    """
    results = []
    for t in thresholds:
        level = gated_level(candidate_summary, t.metric, getattr(t, "level", None))
        cand = _value(candidate_summary, candidate_system, split, t.metric, t.k, level)
        base = _value(baseline_summary, baseline_system, split, t.metric, t.k, level)
        res = GateResult(candidate_system, t.metric, t.k, None, None, None, "pass", "", t.blocking,
                         block_inconclusive=block_inconclusive, level=level, candidate_all=cand, baseline_all=base)
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
        if level is not None and "level" in candidate_summary.columns and not candidate_summary.filter(
                (pl.col("metric") == t.metric) & (pl.col("level") == level)).height:
            res.status = "not_evaluable"
            res.reason = (f"metric {t.metric!r} is not scored at level {level!r} here (the golden set judges "
                          f"{sorted(set(known['level'].drop_nulls().to_list()))})")
            results.append(res)
            continue
        sign = 1.0 if t.higher_is_better else -1.0
        a = _per_question(candidate_qm, candidate_system, split, t.metric, t.k, level)
        b = _per_question(baseline_qm, baseline_system, split, t.metric, t.k, level)
        if base is not None:
            # the baseline questions the gate could not compare: no candidate value (its run errored, or the
            # question is not evaluable for it); the run-error check counts the errors themselves
            based = b.filter(pl.col("value").is_not_null())
            shared = based.join(a.filter(pl.col("value").is_not_null()), on="question_id", how="semi")
            uncompared = based.join(shared, on="question_id", how="anti")
            errored = a.filter(pl.col("status") == "run_error").select("question_id")
            res.n, res.n_baseline = shared.height, based.height
            res.n_candidate_errors = uncompared.join(errored, on="question_id", how="semi").height
        if cand is None or (base is None and t.min_value is None):
            res.status = "not_evaluable"
            side = ("the candidate's and the baseline's values are" if cand is None and base is None else
                    f"the {'candidate' if cand is None else 'baseline'}'s value is")
            res.reason = (f"{side} null (empty denominator: no evaluable question)"
                          + (f"; {res.compared_words()}" if res.n is not None else ""))
            results.append(res)
            continue
        # a floor is about the candidate's own mean over its evaluable questions (nothing to pair)
        floor_ok = t.min_value is None or sign * (cand - t.min_value) >= 0
        if not floor_ok:
            res.status = "below_floor"
            res.reason = f"{cand:.4f} (its mean over its own evaluable questions) is {bound_words(t)}"
        if base is None:
            results.append(res)
            continue
        if not res.n:
            if res.status == "pass" and t.max_abs_drop is None and t.max_rel_drop is None:
                # a floor alone needs no comparison: met on the candidate's own mean
                res.reason = (f"{cand:.4f} (its mean over its own evaluable questions) meets "
                              f"{bound_words(t, within=True)}; no question shared with the baseline "
                              f"({res.compared_words()}), none needed")
            elif res.status == "pass":
                res.status = "not_evaluable"
                res.reason = (f"no question of split {split} has a value for both the candidate and the baseline "
                              f"({res.compared_words()}): nothing to compare")
            results.append(res)
            continue
        # higher_is_better: set to the metric's own direction when the section loads (never None here)
        test = paired_comparison(a, b, higher_is_better=bool(t.higher_is_better), n_permutations=n_permutations,
                                 seed=seed)
        res.n = test.n
        res.candidate, res.baseline = test.candidate_mean, test.baseline_mean
        assert res.candidate is not None and res.baseline is not None
        res.p_value, res.ci_low, res.ci_high = test.p_value, test.ci_low, test.ci_high
        res.wins, res.ties, res.losses = test.wins, test.ties, test.losses
        res.regressed_questions = test.worse
        # the thresholds are about the same quantity as the interval, p and W/T/L: the paired mean
        # difference over the questions both systems evaluated
        res.difference = test.difference
        drop = -sign * test.difference if test.difference is not None else 0.0
        breaches = []
        # a lower-is-better metric (an error rate) gets worse by rising: say so, not "drop"
        worse = "drop" if t.higher_is_better else "rise (lower is better)"
        over = f" over {res.compared_words()}"
        if t.max_abs_drop is not None and drop > t.max_abs_drop + 1e-12:
            breaches.append(f"{worse} {drop:.4f} > allowed {t.max_abs_drop}{over}")
        if t.max_rel_drop is not None and res.baseline != 0 and drop / abs(res.baseline) > t.max_rel_drop + 1e-12:
            breaches.append(f"relative {worse} {drop / abs(res.baseline):.2%} > allowed {t.max_rel_drop:.0%}{over}")
        elif t.max_rel_drop is not None and res.baseline == 0 and drop > 1e-12:
            # a worsening from 0 is an infinite relative change: it breaches any max_rel_drop (no change passes)
            verb = "drop" if t.higher_is_better else "rise"
            breaches.append(f"{verb} {drop:.4f} from 0 (relative change undefined, any {verb} breaches "
                            f"max_rel_drop {t.max_rel_drop:.0%}){over}")
        if breaches and res.status == "below_floor":
            res.reason += "; also " + "; ".join(breaches) + f" (p = {res.p_value:.4f})"
        elif breaches:
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
        elif res.status == "pass":
            res.reason = f"difference {res.difference:+.4f} over {res.compared_words()} within thresholds"
        results.append(res)
    return results


# ------------------------------------------------------------------------------------------------
# the verdict of one run: every candidate against its baseline, computed once


@dataclass(frozen=True)
class PromotedBaseline:
    """The promoted baseline as stored: ``manifest`` (see :func:`run_manifest`, plus ``promoted_at``
    and ``run_id``), its ``metric_summary`` and ``question_metrics`` rows."""

    manifest: Mapping[str, Any]
    metric_summary: pl.DataFrame
    question_metrics: pl.DataFrame


@dataclass
class GateVerdict:
    """Every candidate against its baseline, as :func:`compute_gate_verdict` decides it.

    ``results`` (one :class:`GateResult` per candidate and threshold), ``errors`` (version
    mismatches, one string per candidate), ``baseline`` (name or None), ``baseline_source``
    ("promoted", "configured" or "none": floors only), ``noise`` (metric -> the judge's minimum
    resolution), ``unchanged`` (candidates that are the promoted baseline itself), ``promote``
    (the configured system to promote, or None).
    """

    results: list[GateResult]
    errors: list[str]
    baseline: str | None
    baseline_source: str
    noise: dict[str, float]
    unchanged: list[str] = field(default_factory=list)
    promote: str | None = None
    error_status: str = "version_mismatch"  # the status of the error rows ("baseline_damaged" for a broken one)

    @property
    def blocking_failures(self) -> list[str]:
        """``"system/metric: reason"`` for every blocking gate that failed and every version mismatch."""
        out = [f"{r.system}/{r.metric}: {r.reason}" for r in self.results if r.blocking and not r.passed]
        return out + list(self.errors)

    @property
    def passed(self) -> bool:
        """True when no blocking gate failed and no comparison crossed versions."""
        return not self.blocking_failures

    def frame(self) -> pl.DataFrame:
        """The ``gate_results`` table (``core.tables.SCHEMAS``): one row per result, then one row with
        status ``version_mismatch`` (or :attr:`error_status`) per error."""
        return gate_frame(self.results, self.errors, self.error_status)


def run_manifest(rag_runs: pl.DataFrame, golden_set: pl.DataFrame, system: str) -> dict[str, Any]:
    """What ``system`` ran in this evaluation: system, corpus and golden versions, retriever,
    generator, model, prompt version and, for a live system with ``version_header``, the version its
    replies reported (``system_version``; from its first ``rag_runs`` row; None each when it has none)."""
    rows = rag_runs.filter(pl.col("system") == system).head(1).to_dicts()
    row = rows[0] if rows else {}
    return {
        "system": system,
        "corpus_version": row.get("corpus_version"),
        "golden_version": golden_set["golden_version"][0] if golden_set.height else None,
        "retriever": row.get("retriever"),
        "generator": row.get("generator"),
        "model": row.get("model"),
        "prompt_version": row.get("prompt_version"),
        "system_version": row.get("system_version"),
    }


def same_run_configuration(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when two manifests agree on every :data:`IDENTITY_FIELDS` value (and name a system)."""
    return bool(a.get("system")) and all(a.get(k) == b.get(k) for k in IDENTITY_FIELDS)


def unchanged_since_promotion(rag_runs: pl.DataFrame, golden_set: pl.DataFrame, system: str | None,
                              stored_manifest: Mapping[str, Any] | None) -> bool:
    """Whether promoting ``system`` now would change nothing: its run manifest in this run
    (:func:`run_manifest`) equals the promoted baseline's on every :data:`IDENTITY_FIELDS` value. False with
    no system or nothing promoted. The ``promotion`` step keeps the stored baseline exactly when this is True,
    and the run's decision says so from the same function. Raises nothing."""
    if not system or stored_manifest is None:
        return False
    return same_run_configuration(run_manifest(rag_runs, golden_set, system), stored_manifest)


def gate_frame(results: list[GateResult], errors: list[str], error_status: str = "version_mismatch") -> pl.DataFrame:
    """Gate results (and version errors, as status ``version_mismatch``) as a ``gate_results`` table."""
    rows = [{
        "system": r.system, "metric": r.metric, "k": r.k, "candidate": r.candidate, "baseline": r.baseline,
        "difference": r.difference, "ci_low": r.ci_low, "ci_high": r.ci_high, "p_value": r.p_value,
        "wins": r.wins, "ties": r.ties, "losses": r.losses, "status": r.status, "reason": r.reason,
        "blocking": r.blocking, "passed": r.passed, "regressed_questions": r.regressed_questions, "level": r.level,
        "n": r.n, "n_baseline": r.n_baseline, "n_candidate_errors": r.n_candidate_errors,
        "candidate_all": r.candidate_all, "baseline_all": r.baseline_all,
    } for r in results]
    metric = "baseline" if error_status == "baseline_damaged" else "versions"
    rows += [{"system": e.split(":", 1)[0], "metric": metric, "status": error_status, "reason": e,
              "blocking": True, "passed": False, "wins": 0, "ties": 0, "losses": 0, "regressed_questions": []}
             for e in errors]
    return pl.DataFrame(rows, schema=SCHEMAS["gate_results"])


def compute_gate_verdict(
    cfg: EvalConfig,
    metric_summary: pl.DataFrame,
    question_metrics: pl.DataFrame,
    rag_runs: pl.DataFrame,
    golden_set: pl.DataFrame,
    corpus_snapshot: pl.DataFrame,
    judge_variance: pl.DataFrame,
    promoted: PromotedBaseline | None,
    n_permutations: int = 10000,
) -> GateVerdict:
    """Every configured candidate against the baseline, once per run.

    Inputs: this run's tables (``core.tables.SCHEMAS``), ``judge_variance`` (for the judge's noise
    resolution) and the promoted baseline or None. The baseline is the promoted one when it exists
    (its per-question values restricted to the current golden questions and re-aggregated, so a quick
    subset compares like with like), else ``gates.baseline_system`` from this run; with neither,
    only absolute floors apply. A candidate whose manifest equals the promoted one (same system,
    configuration, corpus and golden versions) gets ``unchanged_since_promotion`` instead of a
    vacuous pass (its floors still apply). A candidate evaluated on other golden or corpus versions
    than the promoted baseline is a version error, never compared. Output: a :class:`GateVerdict`.
    Criteria decided before results (module docstring) and the paired test of :func:`evaluate_gates`.
    """
    from rag_eval_pipeline.core.metrics.variance import resolution_from_table
    from rag_eval_pipeline.core.pipeline import build_summary

    noise = resolution_from_table(judge_variance)
    results: list[GateResult] = []
    errors: list[str] = []
    unchanged: list[str] = []
    if promoted is not None:
        baseline_name, source = str(promoted.manifest.get("system")), "promoted"
    elif cfg.baseline_system:
        baseline_name, source = cfg.baseline_system, "configured"
    else:
        baseline_name, source = None, "none"
    base_summary, base_qm = metric_summary, question_metrics
    if promoted is not None:
        base_summary, base_qm = promoted.metric_summary, promoted.question_metrics
        qids = golden_set["question_id"]
        if set(base_qm["question_id"].unique()) != set(qids):
            base_qm = base_qm.filter(pl.col("question_id").is_in(qids.to_list()))
            base_summary = build_summary(cfg, base_qm, golden_set, corpus_snapshot)
    for cand in cfg.candidate_systems:
        cand_manifest = run_manifest(rag_runs, golden_set, cand)
        if promoted is not None:
            try:
                check_versions(cand_manifest, promoted.manifest)
            except VersionMismatchError as exc:
                errors.append(f"{cand}: {exc}")
                continue
        thresholds = cfg.thresholds if baseline_name else [t for t in cfg.thresholds if t.min_value is not None]
        got = evaluate_gates(
            cand, metric_summary, question_metrics, baseline_name or cand, base_summary, base_qm, thresholds,
            split=cfg.gate_split, seed=cfg.seed, noise_resolution=noise, alpha=cfg.alpha,
            block_inconclusive=cfg.block_inconclusive, n_permutations=n_permutations,
        )
        if promoted is not None and same_run_configuration(cand_manifest, promoted.manifest):
            unchanged.append(cand)
            when = promoted.manifest.get("promoted_at") or "an earlier run"
            for r in got:
                if r.status == "pass":
                    r.status = "unchanged_since_promotion"
                    r.reason = (f"{cand} is the promoted baseline itself (same configuration, corpus and golden "
                                f"versions; promoted {when}): nothing to compare")
        results += got
    return GateVerdict(results=results, errors=errors, baseline=baseline_name, baseline_source=source, noise=noise,
                       unchanged=unchanged, promote=cfg.gates.promote)


#: The states of a regression case on a later run.
REGRESSION_CASE_STATES = ("still_regressed", "recovered", "no_value_now")


def regression_case_status(cases: pl.DataFrame) -> pl.DataFrame:
    """``cases`` with a ``status`` column: how each kept regression case stands on this run.

    Input: rows with ``metric``, ``value_when_found`` and ``current_value`` (null when the question has
    no value now). Output: the same rows plus ``status``: ``no_value_now`` for a null current value;
    ``recovered`` when the current value is better than the value the case was found with, by the
    metric's direction (the registry's ``higher_is_better``: for an error or abstention rate, lower is
    better); ``still_regressed`` otherwise (equal within 1e-12 included). Raises nothing beyond polars'
    errors for missing columns."""
    from rag_eval_pipeline.core.metrics.names import higher_is_better

    metrics = cases["metric"].unique().to_list() if cases.height else []
    lower = [m for m in metrics if not higher_is_better(m)]
    # oriented so that larger is better: a lower-is-better metric's values are negated
    sign = pl.when(pl.col("metric").is_in(lower)).then(-1.0).otherwise(1.0)
    better = sign * pl.col("current_value") > sign * pl.col("value_when_found") + 1e-12
    return cases.with_columns(
        pl.when(pl.col("current_value").is_null()).then(pl.lit("no_value_now"))
        .when(better).then(pl.lit("recovered"))
        .otherwise(pl.lit("still_regressed")).alias("status"))
