"""rag-eval compare's core: side syntax, metric rows with the paired test, question order, the rendered page."""

from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core.report.compare import build_comparison, compare_metrics, question_changes
from rag_eval_pipeline.core.report.compare_sides import Side, SideError, SideSpec, parse_side


def test_side_syntax(tmp_path):
    assert parse_side("baseline") == SideSpec("baseline", "", None, "baseline")
    assert parse_side("system:team_rag") == SideSpec("system", "team_rag", "team_rag", "system:team_rag")
    assert parse_side("night:2026-11-30") == SideSpec("night", "2026-11-30", None, "night:2026-11-30")
    assert parse_side("night:2026-11-30:bm25").system == "bm25"
    assert parse_side("run:5bca00c8:bm25") == SideSpec("run", "5bca00c8", "bm25", "run:5bca00c8:bm25")
    (tmp_path / "out").mkdir()
    assert parse_side(f"dir:{tmp_path / 'out'}:bm25") == SideSpec("dir", str(tmp_path / "out"), "bm25",
                                                                   f"dir:{tmp_path / 'out'}:bm25")
    assert parse_side(f"dir:{tmp_path / 'out'}").system is None
    for bad in ("team_rag", "system:", "night:30-11-2026", "week:1", "baseline:x", ""):
        with pytest.raises(SideError):
            parse_side(bad)


def _qm(rows):
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "question_id": pl.Utf8, "split": pl.Utf8, "metric": pl.Utf8,
                                      "k": pl.Int32, "value": pl.Float64}, orient="row")


def _summary(system, values):
    return pl.DataFrame([{"system": system, "split": "all", "segment": "all", "metric": m, "k": k, "value": v,
                          "numerator": None, "denominator": None, "n": 5} for (m, k), v in values.items()],
                        schema_overrides={"k": pl.Int32, "numerator": pl.Float64, "denominator": pl.Float64})


def _side(name, qm, summary, runs=None, labels=None):
    spec = SideSpec("system", name, name, f"system:{name}")
    return Side(spec, name, name, Path("."), summary, None, qm, runs, labels, "g1", "c1", [])


# Per question: recall@5 (higher is better) and false_abstention_rate (lower is better), A then B.
#   q1: recall 1 -> 0.25 (change -0.75)      q2: FAR 0 -> 1 (oriented change -1)
#   q3: recall 0 -> 1 (+1)                    q4: unchanged            q5: FAR 1 -> 0 (oriented +1), recall 0.5 -> 0.75
A_ROWS = [("a", "q1", "test", "recall", 5, 1.0), ("a", "q2", "test", "false_abstention_rate", None, 0.0),
          ("a", "q3", "dev", "recall", 5, 0.0), ("a", "q4", "dev", "recall", 5, 1.0),
          ("a", "q5", "test", "false_abstention_rate", None, 1.0), ("a", "q5", "test", "recall", 5, 0.5)]
B_ROWS = [("b", "q1", "test", "recall", 5, 0.25), ("b", "q2", "test", "false_abstention_rate", None, 1.0),
          ("b", "q3", "dev", "recall", 5, 1.0), ("b", "q4", "dev", "recall", 5, 1.0),
          ("b", "q5", "test", "false_abstention_rate", None, 0.0), ("b", "q5", "test", "recall", 5, 0.75)]


def test_questions_regressions_first_largest_change_first():
    a, b = _side("a", _qm(A_ROWS), None), _side("b", _qm(B_ROWS), None)
    changed, unchanged = question_changes(a, b, "all")
    assert [q.question_id for q in changed] == ["q2", "q1", "q3", "q5"]
    assert [q.key_change for q in changed] == [("false_abstention_rate", -1.0), ("recall_5", -0.75),
                                               ("recall_5", 1.0), ("false_abstention_rate", 1.0)]
    assert unchanged == 1  # q4
    test_only, unchanged = question_changes(a, b, "test")
    assert [q.question_id for q in test_only] == ["q2", "q1", "q5"] and unchanged == 0
    recall_only, _ = question_changes(a, b, "all", metrics=["recall_5"])
    assert [q.question_id for q in recall_only] == ["q1", "q3", "q5"]


def test_only_unit_interval_metrics_order_the_questions_by_default():
    # q6's answer_relevance drops 5 -> 3 on the judge's 1-5 scale (-2.0); q1's recall@5 drops 1 -> 0.25 (-0.75).
    # On one ordering, a 2-point drop of a 1-5 score would outrank any 0-1 drop: answer_relevance does not
    # order the questions unless asked for; asked for, it is compared on its own.
    a_rows = [("a", "q1", "test", "recall", 5, 1.0), ("a", "q6", "test", "answer_relevance", None, 5.0)]
    b_rows = [("b", "q1", "test", "recall", 5, 0.25), ("b", "q6", "test", "answer_relevance", None, 3.0)]
    a, b = _side("a", _qm(a_rows), None), _side("b", _qm(b_rows), None)
    changed, unchanged = question_changes(a, b, "all")
    assert [(q.question_id, q.key_change) for q in changed] == [("q1", ("recall_5", -0.75))] and unchanged == 0
    asked, _ = question_changes(a, b, "all", metrics=["answer_relevance"])
    assert [(q.question_id, q.key_change) for q in asked] == [("q6", ("answer_relevance", -2.0))]


def test_the_metric_registry_declares_each_metrics_scale():
    from rag_eval_pipeline.core.metrics.names import METRICS, SCALES

    assert all(m.scale in SCALES for m in METRICS)
    assert METRICS.get("answer_relevance").scale == "score_1_5" and METRICS.get("num_ret").scale == "count"
    assert METRICS.get("latency_ms_p95").scale == "ms" and METRICS.get("recall").scale == "unit"


def test_metric_rows_difference_and_exact_paired_test():
    """recall@5 differences B - A over 4 questions: +1, +1, +1, +0.5. Of the 2^4 sign flips only all-plus and
    all-minus reach |sum| >= 3.5, so the exact two-sided p is 2/16 = 0.125 (the Monte Carlo estimate of the
    gates' test is within sampling error of it); the mean difference is 3.5/4 = 0.875 and every bootstrap
    mean lies in [0.5, 1]."""
    a_rows = [("a", f"q{i}", "all", "recall", 5, v) for i, v in enumerate([0.0, 0.0, 0.0, 0.5])]
    b_rows = [("b", f"q{i}", "all", "recall", 5, v) for i, v in enumerate([1.0, 1.0, 1.0, 1.0])]
    a = _side("a", _qm(a_rows), _summary("a", {("recall", 5): 0.125, ("map", None): 0.4}))
    b = _side("b", _qm(b_rows), _summary("b", {("recall", 5): 1.0}))
    rows = {m.label: m for m in compare_metrics(a, b, "all")}
    recall = rows["recall_5"]
    assert recall.difference == pytest.approx(0.875) and recall.direction == "better"
    assert recall.n_pairs == 4 and (recall.wins, recall.ties, recall.losses) == (4, 0, 0)
    assert recall.p_value == pytest.approx(0.125, abs=0.015)
    assert 0.5 <= recall.ci_low <= 0.875 <= recall.ci_high <= 1.0
    assert rows["map"].b is None and rows["map"].difference is None and rows["map"].n_pairs == 0


def test_the_difference_is_over_the_questions_both_sides_have_a_value_for():
    """The user's repro in small: A has recall@5 on q0..q2 = 1, 1, 0 (own mean 2/3); B has q0 = 1, q1 = 0.5 and
    no value on q2 (own mean 0.75). Own means give B - A = 0.75 - 0.6667 = +0.0833 ("better"), yet B is worse or
    equal on each of the 2 shared questions: over q0, q1 A's mean is 1, B's 0.75, B - A = -0.25 ("worse"),
    W/T/L 0/1/1, and the interval covers the difference."""
    a_rows = [("a", "q0", "all", "recall", 5, 1.0), ("a", "q1", "all", "recall", 5, 1.0),
              ("a", "q2", "all", "recall", 5, 0.0)]
    b_rows = [("b", "q0", "all", "recall", 5, 1.0), ("b", "q1", "all", "recall", 5, 0.5),
              ("b", "q2", "all", "recall", 5, None)]
    a = _side("a", _qm(a_rows), _summary("a", {("recall", 5): 2 / 3}))
    b = _side("b", _qm(b_rows), _summary("b", {("recall", 5): 0.75}))
    [row] = compare_metrics(a, b, "all", n_permutations=500)
    assert row.paired and row.n_pairs == 2 and (row.n_a, row.n_b) == (3, 2)
    assert row.a_mean == pytest.approx(1.0) and row.b_mean == pytest.approx(0.75)
    assert row.difference == pytest.approx(-0.25) and row.direction == "worse"
    assert (row.wins, row.ties, row.losses) == (0, 1, 1)
    assert row.ci_low <= row.difference <= row.ci_high
    assert row.a["value"] == pytest.approx(2 / 3) and row.b["value"] == pytest.approx(0.75)  # own means, kept


def test_lower_is_better_direction():
    a = _side("a", None, _summary("a", {("false_abstention_rate", None): 0.4}))
    b = _side("b", None, _summary("b", {("false_abstention_rate", None): 0.1}))
    [row] = compare_metrics(a, b, "all")
    assert row.difference == pytest.approx(-0.3) and row.direction == "better" and row.p_value is None


def _runs(system, answers):
    return pl.DataFrame([{"system": system, "question_id": q, "decision": "answer", "answer": text,
                          "citations": ["d#0"], "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1},
                                                              {"chunk_id": cid, "score": 0.5, "rank": 2}]}
                         for q, (text, cid) in answers.items()])


def test_page_names_the_split_and_withholds_restricted_text():
    secret = "ZX-INTERNAL-7731 staff only procedure text"
    snapshot = pl.DataFrame({"chunk_id": ["d#0", "s#0"], "text": ["public text about returns", secret],
                             "title": ["Public", "Staff"], "status": ["active", "active"],
                             "acl": [[], ["staff"]]})
    golden = pl.DataFrame({"question_id": ["q1", "q2", "q3", "q4", "q5"], "question": [f"question {i}" for i in
                                                                                      range(1, 6)],
                           "answerability": ["answerable"] * 5, "split": ["test"] * 5,
                           "relevant": [[{"chunk_id": "d#0", "grade": 1}]] * 5})
    a = _side("a", _qm(A_ROWS), _summary("a", {("recall", 5): 0.6}),
              runs=_runs("a", {q: ("public answer", "d#0") for q in ("q1", "q2", "q3", "q5")}))
    b = _side("b", _qm(B_ROWS), _summary("b", {("recall", 5): 0.7}),
              runs=_runs("b", {"q1": (secret, "s#0"), "q2": ("fine", "d#0"), "q3": ("fine", "d#0"),
                               "q5": ("fine", "d#0")}))
    c = build_comparison(a, b, split="all", golden=golden, snapshot=snapshot, viewer_groups=["customers"],
                         n_permutations=200)
    assert "## Every metric (split all)" in c.markdown and "## Question by question (split all)" in c.markdown
    assert secret not in c.markdown and "ZX-INTERNAL" not in c.html
    assert "[restricted: withheld" in c.markdown
    # the index table: questions in the order of their largest change, each linking to its card
    order = [c.html.index(f'href="#cq-{q}"') for q in ("q2", "q1", "q3", "q5")]
    assert order == sorted(order)
    assert 'id="cq-q2"' in c.html and "<script>" in c.html and 'class="sortable questions"' in c.html


@pytest.mark.parametrize("manifest, needle", [
    ("[" * 100_000 + "]" * 100_000, "nested more than 128 levels deep"),  # was a RecursionError
    ('["bm25_k10"]', "expected a JSON object naming the promoted system"),  # was an AttributeError
    ('{"system": "bm25_k10", "system": "team_rag"}', "key 'system' appears twice"),  # was the last, silently
])
def test_a_damaged_baseline_side_is_a_data_error_naming_the_manifest(tmp_path, manifest, needle):
    from rag_eval_pipeline.core.errors import InputError
    from rag_eval_pipeline.core.report.compare_sides import resolve_side

    (tmp_path / "baseline").mkdir()
    (tmp_path / "baseline" / "manifest.json").write_text(manifest, encoding="utf-8")
    with pytest.raises(InputError, match=needle) as exc:
        resolve_side(parse_side("baseline"), tmp_path)
    assert str(tmp_path / "baseline" / "manifest.json") in str(exc.value)


def test_a_baseline_side_checks_the_hashes_recorded_at_promotion(tmp_path):
    from rag_eval_pipeline.core.errors import InputError
    from rag_eval_pipeline.core.report.compare_sides import resolve_side
    from rag_eval_pipeline_tests.core.test_baseline import promote

    promote(tmp_path)
    (tmp_path / "baseline" / "question_metrics.parquet").write_bytes(b"")  # zeroed by hand
    with pytest.raises(InputError, match="question_metrics.parquet: sha256 .* differs from"):
        resolve_side(parse_side("baseline"), tmp_path)
