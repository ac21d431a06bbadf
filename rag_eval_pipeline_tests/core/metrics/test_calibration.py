"""Judge calibration against hand labels: kappa by hand, mappings, null kappa, stale / missing."""

import json

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.metrics.calibration import (
    calibrate,
    calibrate_all,
    calibration_table,
    confusion_markdown,
    judge_based_metrics,
    read_label_file,
    resolve_mapping,
    results_from_frame,
    results_to_frame,
)
from rag_eval_pipeline.core.tables import conform

S, C, N, E = "SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "JUDGE_ERROR"
KEY = ("j", "m", "h")


def judge_labels(rows, key=KEY) -> pl.DataFrame:
    """rows: (system, question_id, claim_id, verdict[, repeat])."""
    recs = []
    for r in rows:
        s, q, c, v = r[:4]
        rep = r[4] if len(r) > 4 else 0
        recs.append({"system": s, "question_id": q, "claim_id": c, "claim": "x", "verdict": v, "quote": None,
                     "quote_found": v == S, "justification": "", "judge": key[0], "judge_model": key[1],
                     "prompt_sha256": key[2], "repeat": rep, "error": "boom" if v == E else None,
                     "support_score": None})
    df = pl.DataFrame(recs, schema_overrides={"repeat": pl.Int32, "quote": pl.Utf8, "error": pl.Utf8,
                                              "support_score": pl.Float64})
    return conform(df, "judge_labels")


def human(rows, claim=True) -> pl.DataFrame:
    if claim:
        return pl.DataFrame(rows, schema=["system", "question_id", "claim_id", "verdict"], orient="row")
    return pl.DataFrame(rows, schema=["system", "question_id", "verdict"], orient="row")


def textbook():
    """The 2 x 2 textbook example (50 items): both yes 20, human yes / judge no 5,
    human no / judge yes 10, both no 15. p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4."""
    pairs = [(S, S)] * 20 + [(S, N)] * 5 + [(N, S)] * 10 + [(N, N)] * 15
    h = human([("s", f"q{i}", f"q{i}:c1", hv) for i, (hv, _) in enumerate(pairs)])
    j = judge_labels([("s", f"q{i}", f"q{i}:c1", jv) for i, (_, jv) in enumerate(pairs)])
    return h, j


def test_textbook_kappa_by_hand():
    h, j = textbook()
    res = calibrate(h, j)
    assert res.n == 50
    assert res.kappa == pytest.approx(0.4)
    assert res.kappa_reason is None
    assert res.agreement == pytest.approx(0.7)
    assert res.agreement_ci_low < 0.7 < res.agreement_ci_high
    assert res.labels == [S, C, N]
    assert res.confusion == [[20, 0, 5], [0, 0, 0], [10, 0, 15]]
    assert res.per_label[S]["precision"] == pytest.approx(20 / 30)
    assert res.per_label[S]["recall"] == pytest.approx(20 / 25)
    assert res.per_label[N]["precision"] == pytest.approx(15 / 20)
    assert res.per_label[N]["recall"] == pytest.approx(15 / 25)
    assert res.per_label[C] == {"precision": None, "recall": None, "support": 0, "predicted": 0}
    assert res.key == KEY and res.mapping["judge_rule"] == "label"


def test_binary_mapping_at_claim_level():
    h, j = textbook()
    binary = {"judge": {S: "yes", C: "no", N: "no"}, "human": {S: "yes", C: "no", N: "no"}}
    res = calibrate(h, j, binary)
    assert res.labels == ["yes", "no"]
    assert res.confusion == [[20, 5], [10, 15]]
    assert res.kappa == pytest.approx(0.4)


def test_three_way_kappa_by_hand():
    # people: S S S C ; judge: S N S C  (+ a judge error, excluded)
    h = human([("s", "q1", "q1:c1", S), ("s", "q1", "q1:c2", S), ("s", "q2", "q2:c1", S), ("s", "q3", "q3:c1", C)])
    j = judge_labels([("s", "q1", "q1:c1", S), ("s", "q1", "q1:c2", N), ("s", "q2", "q2:c1", S),
                      ("s", "q3", "q3:c1", C), ("s", "q4", "q4:c0", E)])
    res = calibrate(h, j)
    # p_o = 3/4; marginals people S 3/4, C 1/4; judge S 1/2, C 1/4, N 1/4 -> p_e = 3/8 + 1/16 = 7/16
    assert res.kappa == pytest.approx((3 / 4 - 7 / 16) / (1 - 7 / 16))
    assert res.n_excluded_judge == 1
    assert res.n_human_only == 0 and res.n_judge_only == 0


def test_n_zero_gives_null_kappa_never_zero():
    h = human([("s", "q1", "q1:c1", S)])
    j = judge_labels([("s", "q9", "q9:c1", S)])
    res = calibrate(h, j)
    assert res.n == 0 and res.kappa is None and res.agreement is None
    assert "n = 0" in res.kappa_reason
    assert res.n_human_only == 1 and res.n_judge_only == 1
    empty = calibrate(h, j.head(0))
    assert empty.kappa is None and empty.key == (None, None, None)


def test_constant_rater_gives_null_kappa():
    # people constant: kappa undefined
    h = human([("s", f"q{i}", f"q{i}:c1", S) for i in range(4)])
    j = judge_labels([("s", f"q{i}", f"q{i}:c1", v) for i, v in enumerate([S, S, N, S])])
    res = calibrate(h, j)
    assert res.kappa is None and "people gave every item" in res.kappa_reason
    assert res.agreement == pytest.approx(0.75)
    # judge constant while people vary: the formula gives exactly 0, which is not a measurement
    h2 = human([("s", f"q{i}", f"q{i}:c1", v) for i, v in enumerate([S, N, N, S])])
    j2 = judge_labels([("s", f"q{i}", f"q{i}:c1", S) for i in range(4)])
    res2 = calibrate(h2, j2)
    assert res2.kappa is None and "the judge gave every item" in res2.kappa_reason


def test_response_level_with_begin_labels():
    # q1: all claims supported -> attributable; q2: one not mentioned -> not; q3: judge error -> excluded
    j = judge_labels([("m", "q1", "q1:c1", S), ("m", "q1", "q1:c2", S), ("m", "q2", "q2:c1", S),
                      ("m", "q2", "q2:c2", N), ("m", "q3", "q3:c1", S), ("m", "q3", "q3:c2", E),
                      ("m", "q4", "q4:c1", N)])
    h = human([("m", "q1", "Fully attributable"), ("m", "q2", "Not fully attributable"),
               ("m", "q3", "Fully attributable"), ("m", "q4", "Fully attributable"),
               ("m", "q5", "Not fully attributable")], claim=False)
    res = calibrate(h, j, None, level="response")
    assert res.labels == ["attributable", "not_attributable"]
    assert res.n == 3  # q1, q2, q4
    assert res.confusion == [[1, 1], [0, 1]]
    assert res.n_excluded_judge == 1 and res.n_human_only == 2  # q3 (judge error) and q5 (not judged)
    # p_o = 2/3; people att 2/3, not 1/3; judge att 1/3, not 2/3 -> p_e = 2/9 + 2/9 = 4/9
    assert res.kappa == pytest.approx((2 / 3 - 4 / 9) / (1 - 4 / 9))
    assert res.mapping["human"]["Fully attributable"] == "attributable"


def test_response_level_holistic_rule_and_human_claim_aggregation():
    j = judge_labels([("m", "q1", "q1:c1", S), ("m", "q1", "q1:c2", N), ("m", "q2", "q2:c1", C)])
    h = human([("m", "q1", "q1:c1", S), ("m", "q1", "q1:c2", S), ("m", "q2", "q2:c1", N)])
    mapping = {"judge_rule": "holistic", "judge": {"YES": "ok", "PARTIAL": "partial", "NO": "bad"},
               "human_rule": "holistic", "human": {"YES": "ok", "PARTIAL": "partial", "NO": "bad"},
               "labels": ["ok", "partial", "bad"]}
    res = calibrate(h, j, mapping, level="response")
    assert res.confusion == [[0, 1, 0], [0, 0, 0], [0, 0, 1]]


def test_unmapped_label_raises_and_none_excludes():
    h = human([("m", "q1", "Generic"), ("m", "q2", "Fully attributable")], claim=False)
    j = judge_labels([("m", "q1", "q1:c1", S), ("m", "q2", "q2:c1", S)])
    with pytest.raises(InputError, match="Generic"):
        calibrate(h, j, level="response")
    m = resolve_mapping(None, "response")
    m["human"]["Generic"] = None
    res = calibrate(h, j, m, level="response")
    assert res.n == 1 and res.n_excluded_human == 1


def test_majority_vote_over_repeats_or_a_chosen_repeat():
    h = human([("s", "q1", "q1:c1", S), ("s", "q2", "q2:c1", N)])
    j = judge_labels([("s", "q1", "q1:c1", S, 0), ("s", "q1", "q1:c1", N, 1), ("s", "q1", "q1:c1", S, 2),
                      ("s", "q2", "q2:c1", N, 0), ("s", "q2", "q2:c1", N, 1), ("s", "q2", "q2:c1", S, 2)])
    assert calibrate(h, j).kappa == pytest.approx(1.0)
    assert calibrate(h, j, repeat=2).agreement == pytest.approx(0.5)


def test_duplicates_and_several_judges():
    h = human([("s", "q1", "q1:c1", S), ("s", "q1", "q1:c1", N)])
    j = judge_labels([("s", "q1", "q1:c1", S)])
    with pytest.raises(InputError, match="more than once"):
        calibrate(h, j)
    h1, j1 = textbook()
    j2 = judge_labels([("s", "q0", "q0:c1", S)], key=("j", "m", "h2"))
    with pytest.raises(ValueError, match="judge keys"):
        calibrate(h1, pl.concat([j1, j2]))
    res = calibrate_all(h1, pl.concat([j1, j2]))
    assert [r.key for r in res] == [KEY, ("j", "m", "h2")]
    assert res[0].n == 50 and res[1].n == 1
    assert calibrate_all(h1, j1.head(0)) == []


def test_bad_mapping_and_columns():
    with pytest.raises(ValueError, match="level"):
        resolve_mapping(None, "sentence")
    with pytest.raises(ValueError, match="unknown keys"):
        resolve_mapping({"judges": {}}, "claim")
    with pytest.raises(ValueError, match="judge_rule"):
        resolve_mapping({"judge_rule": "label"}, "response")
    with pytest.raises(ValueError, match="judge_rule"):
        resolve_mapping({"judge_rule": "all_supported"}, "claim")
    with pytest.raises(ValueError, match="not in labels"):
        resolve_mapping({"judge": {S: "yes"}, "labels": ["no"]}, "claim")
    h, j = textbook()
    with pytest.raises(SchemaError, match="claim_id"):
        calibrate(h.drop("claim_id"), j)
    with pytest.raises(SchemaError, match="repeat"):
        calibrate(h, j.drop("repeat"))


def _result(key, kappa_pairs, at):
    h, j = textbook()
    if kappa_pairs == "none":
        h = h.with_columns(pl.lit("zz").alias("question_id"))
    return calibrate(h, j.with_columns(judge=pl.lit(key[0]), judge_model=pl.lit(key[1]), prompt_sha256=pl.lit(key[2])),
                     calibrated_at=at)


def test_calibration_table_fresh_stale_missing():
    old = _result(("j", "m", "old"), "ok", "2024-01-01T00:00:00+00:00")
    cur = _result(KEY, "ok", "2024-02-01T00:00:00+00:00")
    t = calibration_table([old, cur], current_keys=[KEY])
    row = t.row(0, named=True)
    assert (row["stale"], row["missing"], row["kappa"]) == (False, False, pytest.approx(0.4))
    assert row["calibrated_prompt_sha256"] == "h"
    # only an older prompt has been calibrated: stale, figures of the old calibration
    t = calibration_table([old], current_keys=[KEY])
    row = t.row(0, named=True)
    assert row["stale"] is True and row["missing"] is False
    assert row["calibrated_prompt_sha256"] == "old" and row["prompt_sha256"] == "h"
    # nothing at all: missing, null figures
    t = calibration_table([], current_keys=[KEY])
    row = t.row(0, named=True)
    assert row["missing"] is True and row["stale"] is False and row["kappa"] is None and row["n"] is None
    # another level only: missing at the asked level
    t = calibration_table([old], current_keys=[KEY], levels=["response"])
    assert t["missing"].to_list() == [True]


def test_calibration_table_prefers_a_measured_calibration():
    measured = _result(KEY, "ok", "2024-01-01T00:00:00+00:00")
    empty_later = _result(KEY, "none", "2024-03-01T00:00:00+00:00")
    assert empty_later.n == 0
    row = calibration_table([measured, empty_later], [KEY]).row(0, named=True)
    assert row["n"] == 50 and row["calibrated_at"].startswith("2024-01")
    # n = 0 for the current key, an older key measured: stale beats "n = 0"
    other = _result(("j", "m", "old"), "ok", "2023-01-01T00:00:00+00:00")
    row = calibration_table([other, empty_later], [KEY]).row(0, named=True)
    assert row["stale"] is True
    # n = 0 only: not missing, kappa null with the reason
    row = calibration_table([empty_later], [KEY]).row(0, named=True)
    assert row["missing"] is False and row["kappa"] is None and "n = 0" in row["kappa_reason"]
    # latest of two measured calibrations wins
    newer = _result(KEY, "ok", "2024-05-01T00:00:00+00:00")
    row = calibration_table([newer, measured], [KEY]).row(0, named=True)
    assert row["calibrated_at"].startswith("2024-05")


def test_calibration_table_without_current_keys():
    a = _result(KEY, "ok", None)
    b = _result(("k", "m2", "x"), "ok", None)
    t = calibration_table([a, b])
    assert t.height == 2 and not any(t["stale"]) and not any(t["missing"])
    assert calibration_table([], current_keys=[]).height == 0


def test_history_round_trip():
    rs = [_result(KEY, "ok", "2024-01-01T00:00:00+00:00"), _result(KEY, "none", None)]
    df = results_to_frame(rs)
    assert df.height == 2 and df["kappa"][0] == pytest.approx(0.4)
    assert results_from_frame(df) == rs
    assert results_from_frame(None) == []


def test_a_label_file_with_a_repeated_key_is_refused_naming_the_line(tmp_path):
    # the one label reader is the strict one (read_human_labels, which let polars keep the first "verdict"
    # silently, is gone): a repeated key is an error on its line, never a label
    good = {"system": "s", "question_id": "q1", "claim_id": "c1", "claim": "x", "verdict": "SUPPORTED"}
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(good)[:-1] + ', "verdict": "CONTRADICTED"}\n',
                    encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2, field 'json': not valid JSON \(key 'verdict' appears twice"):
        read_label_file(path)


def test_confusion_markdown_and_judge_based_metrics():
    md = confusion_markdown(["a", "b"], [[1, 2], [3, 4]])
    assert md.splitlines()[2] == "| a | 1 | 2 |"
    with pytest.raises(ValueError):
        confusion_markdown(["a"], [[1, 2]])
    # declared per metric in core/metrics/names.py (no longer by name prefix: "correctness" and
    # "context_relevance_5" are not metric names the pipeline writes, answer_correctness is one)
    assert judge_based_metrics(["recall", "faithfulness", "faithfulness_holistic", "answer_relevance",
                                "context_relevance", "answer_correctness", "recall_5", "P"]) == [
        "answer_correctness", "answer_relevance", "context_relevance", "faithfulness", "faithfulness_holistic"]


def test_ppi_rates_worked_by_hand():
    """Judge: q1 A, q2 A (labelled) and q3 A, q4 A, q5 N (unlabelled); people: q1 A, q2 N.

    rectifier = mean(f - y) on the labelled = ((1-1) + (1-0)) / 2 = 0.5;
    estimate = mean(f on unlabelled) - rectifier = 2/3 - 1/2 = 1/6.
    """
    from rag_eval_pipeline.core.metrics.calibration import ppi_rates

    verdicts = {"q1": "SUPPORTED", "q2": "SUPPORTED", "q3": "SUPPORTED", "q4": "SUPPORTED", "q5": "NOT_MENTIONED"}
    judge = pl.DataFrame({"system": ["s"] * 5, "question_id": list(verdicts), "claim_id": [f"{q}:c1" for q in verdicts],
                          "verdict": list(verdicts.values()), "repeat": [0] * 5,
                          "judge": ["j"] * 5, "judge_model": ["m"] * 5, "prompt_sha256": ["p"] * 5})
    human = pl.DataFrame({"system": ["s", "s"], "question_id": ["q1", "q2"],
                          "verdict": ["attributable", "not_attributable"]})
    got = {r["system"]: r for r in ppi_rates(human, judge).iter_rows(named=True)}
    assert set(got) == {"s"}
    assert got["s"]["estimate"] == pytest.approx(1 / 6)
    assert got["s"]["judge_rate"] == pytest.approx(2 / 3)
    assert (got["s"]["n_labelled"], got["s"]["n_unlabelled"]) == (2, 3)
    assert got["s"]["ci_low"] < 1 / 6 < got["s"]["ci_high"]


def test_ppi_rates_null_with_reason_when_nothing_is_unlabelled():
    from rag_eval_pipeline.core.metrics.calibration import ppi_rates

    judge = pl.DataFrame({"system": ["s"], "question_id": ["q1"], "claim_id": ["q1:c1"], "verdict": ["SUPPORTED"],
                          "repeat": [0], "judge": ["j"], "judge_model": ["m"], "prompt_sha256": ["p"]})
    human = pl.DataFrame({"system": ["s"], "question_id": ["q1"], "verdict": ["attributable"]})
    row = ppi_rates(human, judge).row(0, named=True)
    assert row["estimate"] is None and row["ci_low"] is None and row["reason"]


# --- several people, stale labels, label-file errors ---------------------------------------------------

ALICE = [S, S, S, S, S, N, N, N, N, N]
BOB = [S, S, S, S, N, N, N, N, N, S]
CAROL = [S, N, S, S, S, N, N, N, N, N]


def people(**by):
    rows = [{"system": "s", "question_id": f"q{i}", "claim_id": f"q{i}:c1", "verdict": v, "annotator": who}
            for who, vs in by.items() for i, v in enumerate(vs)]
    return pl.DataFrame(rows)


def test_two_labellers_kappa_between_people_and_pooled_judge_kappa_by_hand():
    j = judge_labels([("s", f"q{i}", f"q{i}:c1", v) for i, v in enumerate(ALICE)])
    r = calibrate(people(alice=ALICE, bob=BOB), j)
    # alice vs bob: 4 S/S, 1 S/N, 1 N/S, 4 N/N: p_o 0.8, p_e 0.5 -> kappa 0.6
    assert r.human_kappa == pytest.approx(0.6) and r.human_kappa_n == 10 and r.labellers == ["alice", "bob"]
    assert r.human_pairs == [{"a": "alice", "b": "bob", "n": 10, "kappa": pytest.approx(0.6), "agreement": 0.8,
                              "reason": None}]
    # judge = alice's labels; pooled over 20 (item, person) labels: 18 agree, marginals 10/10 -> kappa 0.8
    assert r.n == 20 and r.agreement == pytest.approx(0.9) and r.kappa == pytest.approx(0.8)
    assert r.n_judge_only == 0 and r.n_human_only == 0
    one = calibrate(people(alice=ALICE), j)
    assert one.human_kappa is None and "one labeller" in one.human_kappa_reason and one.kappa == pytest.approx(1.0)


def test_three_labellers_lights_kappa_by_hand():
    j = judge_labels([("s", f"q{i}", f"q{i}:c1", v) for i, v in enumerate(ALICE)])
    r = calibrate(people(alice=ALICE, bob=BOB, carol=CAROL), j)
    # alice-bob 0.6; alice-carol p_o 0.9, p_e 0.5 -> 0.8; bob-carol p_o 0.7, p_e 0.5 -> 0.4; mean 0.6
    assert [(p["a"], p["b"], p["kappa"]) for p in r.human_pairs] == [
        ("alice", "bob", pytest.approx(0.6)), ("alice", "carol", pytest.approx(0.8)),
        ("bob", "carol", pytest.approx(0.4))]
    assert r.human_kappa == pytest.approx(0.6)


def test_same_person_twice_on_one_item_is_refused():
    j = judge_labels([("s", "q0", "q0:c1", S)])
    with pytest.raises(InputError, match="more than once"):
        calibrate(pl.concat([people(alice=[S]), people(alice=[N])]), j)


def test_stale_labels_are_counted_listed_and_left_out():
    j = judge_labels([("s", f"q{i}", f"q{i}:c1", v) for i, v in enumerate([S, N, S, N])])
    h = pl.DataFrame({"system": ["s"] * 4, "question_id": ["q0", "q1", "q2", "q3"],
                      "claim_id": ["q0:c1", "q1:c1", "q2:c1", "q3:c1"], "verdict": [S, S, S, N],
                      "annotator": ["alice"] * 4, "content_sha256": ["a" * 64, "b" * 64, None, "d" * 64],
                      "line": [1, 2, 3, 4]})
    now = {("s", "q0", "q0:c1"): "a" * 64, ("s", "q1", "q1:c1"): "c" * 64, ("s", "q2", "q2:c1"): "e" * 64}
    r = calibrate(h, j, current_hashes=now)
    assert r.n_stale_labels == 1
    assert [(x["question_id"], x["line"]) for x in r.stale_labels] == [("q1", 2)]
    assert "changed" in r.stale_labels[0]["why"]
    # q0 (hash matches), q2 (no hash: an older label, used as before), q3 (not among the current items, e.g. a
    # quick run's subset: compared with the judge's label as before, not stale)
    assert r.n == 3 and r.agreement == 1.0
    assert calibrate(h, j).n == 4  # no current hashes given: nothing is checked
    row = results_to_frame([r]).row(0, named=True)
    assert row["n_stale_labels"] == 1 and len(__import__("json").loads(row["stale_labels"])) == 1
    assert results_from_frame(results_to_frame([r])) == [r]


def test_history_written_before_the_new_columns_still_reads():
    h, j = textbook()
    old = results_to_frame([calibrate(h, j, calibrated_at="2024-01-01")]).drop(
        "n_stale_labels", "stale_labels", "labellers", "human_kappa", "human_kappa_reason", "human_kappa_n",
        "human_pairs")
    [r] = results_from_frame(old)
    assert r.kappa == pytest.approx(0.4) and r.n_stale_labels == 0 and r.human_kappa is None


def _jsonl(path, rows):
    path.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("level,rows,line,field,match", [
    ("response", [{"system": "s", "question_id": "q1", "verdict": "attributable"},
                  {"system": "s", "question_id": "q2", "verdict": "maybe"}], 2, "verdict", "not one of"),
    ("response", [{"system": "s", "question_id": "q1", "verdict": "attributable", "annotator": "a"},
                  {"system": "s", "question_id": "q2", "verdict": "attributable", "annotator": "a"},
                  {"system": "s", "question_id": "q1", "verdict": "not_attributable", "annotator": "a"}],
     3, "question_id", "duplicate"),
    ("response", [{"system": "s", "verdict": "attributable"}], 1, "question_id", "missing"),
    ("response", [{"system": "s", "question_id": "q1", "verdict": "attributable"},
                  {"system": "s", "question_id": " ", "verdict": "attributable"}], 2, "question_id", "missing"),
    ("claim", [{"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "x", "verdict": "YES"}],
     1, "verdict", "not one of"),
    ("claim", [{"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "x", "verdict": N},
               {"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "x", "verdict": C}],
     2, "claim_id", "duplicate"),
    ("claim", [{"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "x", "verdict": N},
               {"system": "s", "question_id": "q1", "claim_id": "q1:c2", "claim": "", "verdict": N}],
     2, "claim", "missing"),
    ("claim", [{"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "x", "verdict": N,
                "content_sha256": "abc"}], 1, "content_sha256", "sha256"),
])
def test_label_file_errors_name_file_line_and_field(tmp_path, level, rows, line, field, match):
    from rag_eval_pipeline.core.metrics.calibration import read_label_file

    path = _jsonl(tmp_path / "labels.jsonl", rows)
    with pytest.raises(InputError, match=match) as e:
        read_label_file(path, level)
    assert (e.value.path, e.value.line, e.value.field) == (str(path), line, field)
    assert str(e.value).startswith(f"file {path}, line {line}, field {field!r}")


def test_label_file_two_people_on_one_item_and_older_files(tmp_path):
    from rag_eval_pipeline.core.metrics.calibration import read_label_file

    path = _jsonl(tmp_path / "labels.jsonl", [
        {"system": "s", "question_id": "q1", "verdict": "attributable", "annotator": "a", "note": "ok",
         "labelled_at": "2026-12-01T08:00:00+00:00", "content_sha256": "A" * 64},
        {"system": "s", "question_id": "q1", "verdict": "not_attributable", "annotator": "b", "extra": 1}])
    got = read_label_file(path, "response")
    assert got.select("annotator", "verdict", "content_sha256", "line").rows() == [
        ("a", "attributable", "a" * 64, 1), ("b", "not_attributable", None, 2)]
    begin = tmp_path / "begin.csv"
    begin.write_text("system,question_id,verdict\ns,q1,Fully attributable\ns,q2,Generic\n", encoding="utf-8")
    mapping = {"human": {"Fully attributable": "attributable", "Not fully attributable": "not_attributable",
                         "Generic": None}}
    assert read_label_file(begin, "response", mapping)["verdict"].to_list() == ["Fully attributable", "Generic"]
    with pytest.raises(InputError, match="line 3, field 'verdict'"):
        read_label_file(begin, "response")  # the default mapping does not know "Generic"
