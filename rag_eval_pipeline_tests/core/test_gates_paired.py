"""A gate's thresholds, interval, p and W/T/L are about one quantity: the paired mean difference over the
questions both systems evaluated. Expected values are worked out by hand in the comments."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.config import Threshold
from rag_eval_pipeline.core.gates import GATE_STATUSES, PASSING_STATUSES, compared_words, evaluate_gates, gate_frame


def _tables(cand: dict[str, float | None], base: dict[str, float | None], errored: set[str] = frozenset(),
            metric: str = "recall", k: int | None = 5):
    """question_metrics and metric_summary (``metric`` at ``k``, default recall@5; split test) for systems ``cand``
    and ``base``; a None value
    is a null row whose status is ``run_error`` when the question is in ``errored``, else ``no_relevant``. The
    summary's value is each side's mean over its own non-null questions (as core.metrics.summary computes it)."""
    rows = [(s, q, v) for s, values in (("cand", cand), ("base", base)) for q, v in values.items()]
    qm = pl.DataFrame({
        "system": [r[0] for r in rows], "question_id": [r[1] for r in rows], "split": ["test"] * len(rows),
        "metric": [metric] * len(rows), "k": pl.Series([k] * len(rows), dtype=pl.Int32),
        "value": pl.Series([r[2] for r in rows], dtype=pl.Float64),
        "status": ["ok" if r[2] is not None else "run_error" if r[0] == "cand" and r[1] in errored else "no_relevant"
                   for r in rows]})

    def mean(values):
        got = [v for v in values.values() if v is not None]
        return sum(got) / len(got) if got else None

    summary = pl.DataFrame({"system": ["cand", "base"], "split": ["test"] * 2, "segment": ["all"] * 2,
                            "metric": [metric] * 2, "k": pl.Series([k, k], dtype=pl.Int32),
                            "value": [mean(cand), mean(base)]})
    return qm, summary


def _gate(cand, base, threshold, errored=frozenset()):
    (res,) = _gates(cand, base, [threshold], errored)
    return res


def _gates(cand, base, thresholds, errored=frozenset()):
    qm, summary = _tables(cand, base, errored, thresholds[0].metric, thresholds[0].k)
    return evaluate_gates("cand", summary, qm, "base", summary, qm, thresholds, n_permutations=2000)


def test_the_users_repro_a_candidate_worse_on_every_shared_question_does_not_pass_on_a_dropped_zero():
    # 11 questions. Baseline: q1..q10 = 1.0, q11 = 0.0 -> its own mean 10/11 = 0.909091.
    # Candidate: q1 = 0.0 (a loss), q2..q10 = 1.0 (9 ties), q11 errored (null) -> its own mean 9/10 = 0.9.
    # The old gate: 0.9 - 0.909091 = -0.009091, a drop under 0.05: pass. The paired set is q1..q10 (n 10 of 11,
    # 1 candidate error): candidate mean 9/10 = 0.9, baseline mean 10/10 = 1.0, difference -0.1 = a drop of 0.10
    # > 0.05. W/T/L 0/9/1; the sign-flip test over one non-zero difference gives p = 1 -> inconclusive (blocks
    # by default).
    base = {f"q{i}": 1.0 for i in range(1, 11)} | {"q11": 0.0}
    cand = {"q1": 0.0} | {f"q{i}": 1.0 for i in range(2, 11)} | {"q11": None}
    res = _gate(cand, base, Threshold(metric="recall", k=5, max_abs_drop=0.05), errored={"q11"})
    assert res.candidate_all == pytest.approx(0.9) and res.baseline_all == pytest.approx(10 / 11)
    assert (res.n, res.n_baseline, res.n_candidate_errors) == (10, 11, 1)
    assert res.candidate == pytest.approx(0.9) and res.baseline == pytest.approx(1.0)
    assert res.difference == pytest.approx(-0.1)
    assert (res.wins, res.ties, res.losses) == (0, 9, 1)
    assert res.ci_low - 1e-12 <= res.difference <= res.ci_high + 1e-12  # the difference lies in its own interval
    assert res.status == "inconclusive" and not res.passed
    assert res.reason.startswith("drop 0.1000 > allowed 0.05 over n 10 of 11; 1 candidate error")
    assert res.compared_words() == "n 10 of 11; 1 candidate error"


def test_the_converse_a_candidate_identical_on_every_shared_question_passes():
    # 5 questions. Baseline: q1..q4 = 1.0, q5 = 0.0 -> own mean 0.8. Candidate: q1..q4 = 1.0 (identical), q5 no
    # value (not evaluable, not an error) -> own mean 1.0. Old gate on a lower-is-better view would call this a
    # change; here with max_abs_drop 0.02 the paired drop over q1..q4 is 0 -> pass, W/T/L 0/4/0, n 4 of 5 (one
    # question without a candidate value, no candidate error).
    base = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0, "q5": 0.0}
    cand = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 1.0, "q5": None}
    res = _gate(cand, base, Threshold(metric="recall", k=5, max_abs_drop=0.02))
    assert res.status == "pass" and res.difference == pytest.approx(0.0)
    assert (res.wins, res.ties, res.losses) == (0, 4, 0)
    assert (res.n, res.n_baseline, res.n_candidate_errors) == (4, 5, 0)
    assert res.compared_words() == "n 4 of 5; 1 without a candidate value"
    assert res.candidate == pytest.approx(1.0) and res.baseline == pytest.approx(1.0)


def test_the_relative_drop_is_relative_to_the_baselines_mean_on_the_shared_questions():
    # Baseline q1..q4 = 0.5, q5 = 0.0; candidate q1..q4 = 0.45, q5 errored. Shared q1..q4: baseline mean 0.5,
    # candidate 0.45, drop 0.05 = 10% of 0.5 > 8% allowed. (Against the baseline's own mean 0.4 it would be
    # 12.5% of a different quantity; against the all-questions difference 0.45 - 0.4 it would be a rise.)
    base = {"q1": 0.5, "q2": 0.5, "q3": 0.5, "q4": 0.5, "q5": 0.0}
    cand = {"q1": 0.45, "q2": 0.45, "q3": 0.45, "q4": 0.45, "q5": None}
    res = _gate(cand, base, Threshold(metric="recall", k=5, max_rel_drop=0.08), errored={"q5"})
    assert res.difference == pytest.approx(-0.05)
    assert "relative drop 10.00% > allowed 8%" in res.reason
    # four losses of equal size: the sign-flip p = 2/16 exactly in theory (all-same or all-flipped signs reach
    # |mean| 0.05); with 2000 Monte Carlo draws it is about 0.125 >= 0.05 -> inconclusive, still blocking
    assert res.status == "inconclusive" and res.p_value == pytest.approx(0.125, abs=0.03)


def test_a_floor_breach_is_below_floor_not_a_regression_and_reads_the_candidates_own_mean():
    # Candidate q1 = 1, q2 = 0, q3 errored -> own mean 0.5 < floor 0.6. Baseline identical on q1, q2 (and q3 = 1):
    # the paired difference is 0 with W/T/L 0/2/0: nothing regressed, yet the floor blocks.
    base = {"q1": 1.0, "q2": 0.0, "q3": 1.0}
    cand = {"q1": 1.0, "q2": 0.0, "q3": None}
    res = _gate(cand, base, Threshold(metric="recall", k=5, min_value=0.6), errored={"q3"})
    assert res.status == "below_floor" and not res.passed and res.blocking
    assert res.reason == "0.5000 (its mean over its own evaluable questions) is below the floor 0.6"
    assert res.difference == pytest.approx(0.0) and (res.wins, res.ties, res.losses) == (0, 2, 0)
    assert "below_floor" in GATE_STATUSES and "below_floor" not in PASSING_STATUSES
    frame = gate_frame([res], [])
    assert frame["status"].to_list() == ["below_floor"] and frame["n_candidate_errors"].to_list() == [1]


def test_no_shared_question_is_not_evaluable_not_a_pass():
    # The candidate errored on both questions the baseline has a value for (q1, q2) and has a value only on q3,
    # where the baseline has none: both own means exist (1.0 and 0.5), yet no pair -> not evaluable, n 0 of 2.
    res = _gate({"q1": None, "q2": None, "q3": 1.0}, {"q1": 1.0, "q2": 0.0, "q3": None},
                Threshold(metric="recall", k=5, max_abs_drop=0.05), errored={"q1", "q2"})
    assert res.status == "not_evaluable" and res.difference is None and res.n == 0
    assert "n 0 of 2; 2 candidate errors" in res.reason


def test_compared_words_by_hand():
    assert compared_words(None, None, None) == ""
    assert compared_words(19, 19, 0) == "n 19"
    assert compared_words(10, 12, 1) == "n 10 of 12; 1 candidate error, 1 without a candidate value"


def test_a_rise_from_a_baseline_of_0_breaches_max_rel_drop_on_a_lower_is_better_metric():
    # The tester's suite: the baseline never abstains (12 questions at 0), the candidate falsely abstains on 8 of 12
    # (q01..q08 = 1, q09..q12 = 0). Paired over 12: candidate 8/12 = 0.6667, baseline 0, difference +0.6667, a rise
    # of a lower-is-better rate; relative to 0 it is infinite, so it breaches max_rel_drop 0.10. W/T/L 0/4/8. The
    # sign-flip test over eight equal non-zero differences: only all-same or all-flipped signs reach |mean| 8/12,
    # p = 2/2^8 = 0.0078 (Monte Carlo, 2000 draws: about that) < 0.05 -> regression.
    qs = [f"q{i:02d}" for i in range(1, 13)]
    base = {q: 0.0 for q in qs}
    cand = {q: (1.0 if i < 8 else 0.0) for i, q in enumerate(qs)}
    res = _gate(cand, base, Threshold(metric="false_abstention_rate", max_rel_drop=0.10))
    assert res.difference == pytest.approx(8 / 12) and res.baseline == 0.0
    assert (res.wins, res.ties, res.losses) == (0, 4, 8)
    assert res.status == "regression" and not res.passed
    assert res.p_value == pytest.approx(2 / 256, abs=0.006)
    assert res.reason.startswith("rise 0.6667 from 0 (relative change undefined, any rise breaches max_rel_drop "
                                 "10%) over n 12")
    # no change from 0 passes: both never abstain -> difference 0, not a breach
    still = _gate(base, base, Threshold(metric="false_abstention_rate", max_rel_drop=0.10))
    assert still.status == "pass" and still.difference == 0.0


def test_a_floor_is_evaluated_on_the_candidates_own_mean_when_no_question_is_shared():
    # The candidate errored on q1..q3 and has recall 1 on q4..q6; the baseline has recall 1 on q1..q3 and errored
    # (null) on q4..q6. No pair: n 0 of 3, 3 candidate errors. The drop gate has nothing to compare (not
    # evaluable); the floor reads the candidate's own mean 3/3 = 1.0 >= 0.5 -> pass, with the counts.
    cand = {"q1": None, "q2": None, "q3": None, "q4": 1.0, "q5": 1.0, "q6": 1.0}
    base = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": None, "q5": None, "q6": None}
    drop, floor = _gates(cand, base, [Threshold(metric="recall_5", max_abs_drop=0.05),
                                      Threshold(metric="recall_5", min_value=0.5)], errored={"q1", "q2", "q3"})
    assert drop.status == "not_evaluable" and "(n 0 of 3; 3 candidate errors)" in drop.reason
    assert floor.status == "pass" and floor.passed and floor.candidate_all == 1.0
    assert (floor.n, floor.n_baseline, floor.n_candidate_errors) == (0, 3, 3)
    assert floor.reason == ("1.0000 (its mean over its own evaluable questions) meets the floor 0.5; no question "
                            "shared with the baseline (n 0 of 3; 3 candidate errors), none needed")
    # a floor breached with no shared question is still below_floor: q6 = 0 gives an own mean 2/3 < 0.9
    cand_low = cand | {"q6": 0.0}
    (low,) = _gates(cand_low, base, [Threshold(metric="recall_5", min_value=0.9)], errored={"q1", "q2", "q3"})
    assert low.status == "below_floor" and low.reason.startswith("0.6667 (its mean over its own evaluable questions) "
                                                                 "is below the floor 0.9")


def test_a_candidate_that_errored_on_every_question_is_not_evaluable_with_its_counts():
    # 4 questions, the candidate errored on all (own mean: empty denominator, null); the baseline 1, 1, 0, 1.
    # n 0 of 4, 4 candidate errors: the counts are filled and said, for the drop gate and the floor alike.
    base = {"q1": 1.0, "q2": 1.0, "q3": 0.0, "q4": 1.0}
    cand = {q: None for q in base}
    for t in (Threshold(metric="recall_5", max_abs_drop=0.05), Threshold(metric="recall_5", min_value=0.5)):
        res = _gate(cand, base, t, errored=set(base))
        assert res.status == "not_evaluable" and not res.passed
        assert (res.n, res.n_baseline, res.n_candidate_errors) == (0, 4, 4)
        assert res.reason == ("the candidate's value is null (empty denominator: no evaluable question); "
                              "n 0 of 4; 4 candidate errors")


def test_min_value_on_a_lower_is_better_metric_is_a_ceiling_and_says_so():
    # false_abstention_rate, candidate 1, 0, 0, 0 -> own mean 0.25 > 0.1 allowed: beyond the bound, status
    # below_floor (the one status for "outside min_value"), worded as a ceiling. Baseline identical: difference 0.
    base = {"q1": 1.0, "q2": 0.0, "q3": 0.0, "q4": 0.0}
    res = _gate(dict(base), base, Threshold(metric="false_abstention_rate", min_value=0.1))
    assert res.status == "below_floor" and not res.passed
    assert res.reason == ("0.2500 (its mean over its own evaluable questions) is above the ceiling 0.1 (min_value "
                          "on a lower-is-better metric is its worst allowed value)")
    # at 0.3 the same mean is within the ceiling: pass
    assert _gate(dict(base), base, Threshold(metric="false_abstention_rate", min_value=0.3)).status == "pass"
