"""Judge repeat-to-repeat variance: flip rate, majority vote, per-repeat faithfulness, minimum resolution."""

import polars as pl
import pytest

from rag_eval_pipeline.core.config import Threshold
from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.gates import evaluate_gates
from rag_eval_pipeline.core.metrics.variance import (
    flip_rates,
    item_stability,
    majority_vote,
    minimum_resolution,
    repeat_faithfulness,
    variance_table,
)
from rag_eval_pipeline.core.tables import conform

S, C, N, E = "SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "JUDGE_ERROR"


def labels(rows, system="sys", prompt="h") -> pl.DataFrame:
    """rows: (question_id, claim_id, repeat, verdict)."""
    df = pl.DataFrame([
        {"system": system, "question_id": q, "claim_id": c, "claim": f"claim {c}", "verdict": v, "quote": None,
         "quote_found": v == S, "justification": "", "judge": "j", "judge_model": "m", "prompt_sha256": prompt,
         "repeat": r, "error": "boom" if v == E else None,
         "support_score": None}
        for q, c, r, v in rows
    ], schema_overrides={"repeat": pl.Int32, "quote": pl.Utf8, "error": pl.Utf8, "support_score": pl.Float64})
    return conform(df, "judge_labels")


# Three repeats of four claims, by hand:
#   q1:c1  S S S  -> stable, majority S
#   q1:c2  S N S  -> flipped, majority S (2/3)
#   q2:c1  S N C  -> flipped, three-way tie -> NOT_MENTIONED
#   q2:c2  N N N  -> stable, majority N
# per-repeat faithfulness: r0 3/4, r1 1/4, r2 2/4 -> spread 0.5, std 0.25
THREE = [
    ("q1", "q1:c1", 0, S), ("q1", "q1:c1", 1, S), ("q1", "q1:c1", 2, S),
    ("q1", "q1:c2", 0, S), ("q1", "q1:c2", 1, N), ("q1", "q1:c2", 2, S),
    ("q2", "q2:c1", 0, S), ("q2", "q2:c1", 1, N), ("q2", "q2:c1", 2, C),
    ("q2", "q2:c2", 0, N), ("q2", "q2:c2", 1, N), ("q2", "q2:c2", 2, N),
    ("q3", "q3:c0", 0, E),  # a judge error: not a verdict, left out everywhere
]


def test_item_stability_by_hand():
    st = item_stability(labels(THREE))
    got = {r["claim_id"]: (r["n_repeats"], r["flipped"], r["majority"]) for r in st.iter_rows(named=True)}
    assert got == {
        "q1:c1": (3, False, S), "q1:c2": (3, True, S), "q2:c1": (3, True, N), "q2:c2": (3, False, N),
    }
    share = dict(zip(st["claim_id"], st["majority_share"]))
    assert share["q1:c2"] == pytest.approx(2 / 3)
    assert share["q2:c1"] == pytest.approx(1 / 3)
    assert st.filter(pl.col("claim_id") == "q1:c2")["verdicts"].to_list() == [[S, N, S]]


def test_flip_rate_by_hand():
    fr = flip_rates(labels(THREE))
    assert fr.height == 1
    row = fr.row(0, named=True)
    assert (row["n_items"], row["n_flipped"], row["flip_rate"]) == (4, 2, 0.5)


def test_tie_between_two_verdicts_goes_to_not_mentioned():
    mv = majority_vote(labels([("q", "q:c1", 0, S), ("q", "q:c1", 1, C)]))
    assert mv["verdict"].to_list() == [N]
    assert mv["repeat"].to_list() == [-1]


def test_majority_vote_keeps_columns_and_error_only_items():
    lab = labels(THREE)
    mv = majority_vote(lab)
    assert mv.columns == lab.columns
    got = dict(zip(mv["claim_id"], mv["verdict"]))
    assert got == {"q1:c1": S, "q1:c2": S, "q2:c1": N, "q2:c2": N, "q3:c0": E}
    # columns come from a repeat that gave the majority verdict
    assert mv.filter(pl.col("claim_id") == "q1:c2")["quote_found"].to_list() == [True]


def test_per_repeat_faithfulness_and_spread():
    pr = repeat_faithfulness(labels(THREE))
    assert pr["faithfulness"].to_list() == pytest.approx([0.75, 0.25, 0.5])
    assert pr["claims"].to_list() == [4, 4, 4]
    vt = variance_table(labels(THREE)).row(0, named=True)
    assert vt["n_repeats"] == 3
    assert vt["faithfulness_spread"] == pytest.approx(0.5)
    assert vt["faithfulness_std"] == pytest.approx(0.25)
    assert vt["faithfulness_mean"] == pytest.approx(0.5)
    assert vt["resolution"] == pytest.approx(0.5)
    assert minimum_resolution(labels(THREE)) == {"faithfulness": pytest.approx(0.5)}


def test_single_repeat_resolution_unknown():
    one = labels([r for r in THREE if r[2] == 0])
    vt = variance_table(one).row(0, named=True)
    assert vt["n_repeats"] == 1 and vt["resolution"] is None and vt["flip_rate"] is None
    assert vt["faithfulness_std"] is None
    assert minimum_resolution(one) == {}


def test_resolution_is_the_largest_over_systems():
    a = labels(THREE, system="a")
    b = labels([("q", "q:c1", 0, S), ("q", "q:c2", 0, S), ("q", "q:c1", 1, S), ("q", "q:c2", 1, N)], system="b")
    vt = variance_table(pl.concat([a, b]))
    assert dict(zip(vt["system"], vt["resolution"])) == {"a": pytest.approx(0.5), "b": pytest.approx(0.5)}
    b2 = labels([("q", "q:c1", 0, S), ("q", "q:c2", 0, S), ("q", "q:c1", 1, S), ("q", "q:c2", 1, S),
                 ("q", "q:c3", 0, S), ("q", "q:c3", 1, N), ("q", "q:c4", 0, N), ("q", "q:c4", 1, N)], system="b")
    assert minimum_resolution(pl.concat([a, b2])) == {"faithfulness": pytest.approx(0.5)}
    assert minimum_resolution(b2) == {"faithfulness": pytest.approx(0.25)}


def test_empty_and_bad_input():
    assert minimum_resolution(labels(THREE).head(0)) == {}
    assert variance_table(labels(THREE).head(0)).height == 0
    with pytest.raises(SchemaError, match="repeat"):
        flip_rates(labels(THREE).drop("repeat"))


def _summary(system, value):
    return pl.DataFrame({"system": [system], "split": ["test"], "segment": ["all"], "metric": ["faithfulness"],
                         "k": pl.Series([None], dtype=pl.Int32), "value": [value]})


def _every_question(cand, cand_value, base, base_value, n=30):
    """question_metrics and metric_summary where every one of ``n`` questions has the system's one value."""
    qids = [f"q{i}" for i in range(n)]
    qm = pl.DataFrame({
        "system": [cand] * n + [base] * n, "question_id": qids * 2, "split": ["test"] * (2 * n),
        "metric": ["faithfulness"] * (2 * n), "k": pl.Series([None] * (2 * n), dtype=pl.Int32),
        "value": [cand_value] * n + [base_value] * n,
    })
    return qm, pl.concat([_summary(cand, cand_value), _summary(base, base_value)])


def test_resolution_feeds_the_gates_noise_margin():
    qm, summary = _every_question("cand", 0.6, "base", 0.9)
    t = [Threshold(metric="faithfulness", max_abs_drop=0.05)]
    noisy = evaluate_gates("cand", summary, qm, "base", summary, qm, t, n_permutations=200,
                           noise_resolution=minimum_resolution(labels(THREE)))
    assert noisy[0].status == "within_noise"
    strict = evaluate_gates("cand", summary, qm, "base", summary, qm, t, n_permutations=200,
                            noise_resolution=minimum_resolution(labels([r for r in THREE if r[2] == 0])))
    assert strict[0].status == "regression"


def test_a_worse_lower_is_better_metric_is_a_rise_not_a_drop():
    # 30 questions, every one 0.6 for the baseline and 0.9 for the candidate: +0.3 on an error-like
    # metric (lower is better) is 0.3 worse; on a higher-is-better one the same values are 0.3 better.
    qm, summary = _every_question("cand", 0.9, "base", 0.6)
    lower = [Threshold(metric="faithfulness", max_abs_drop=0.05, max_rel_drop=0.1, higher_is_better=False)]
    [res] = evaluate_gates("cand", summary, qm, "base", summary, qm, lower, n_permutations=200)
    assert res.status == "regression"
    assert "rise (lower is better) 0.3000 > allowed 0.05" in res.reason, res.reason
    assert "relative rise (lower is better) 50.00% > allowed 10%" in res.reason, res.reason  # 0.3 / 0.6
    assert "drop" not in res.reason
    higher = [Threshold(metric="faithfulness", max_abs_drop=0.05)]
    [res] = evaluate_gates("cand", summary, qm, "base", summary, qm, higher, n_permutations=200)
    assert res.status != "regression" and "rise" not in (res.reason or "")
