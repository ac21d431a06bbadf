"""Decision metrics: coverage, answer without evidence, false abstention, retrieval failure vs
abstention, clarifications and errors (definitions: docs/METRICS.md). Expected values are
recomputed by hand from the definitions."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.metrics.decisions import (
    DECISION_METRICS,
    decision_question_metrics,
    evidence_chunks,
    unknown_run_questions,
)
from rag_eval_pipeline.core.tables import SCHEMAS


def golden_frame(rows: list[dict]) -> pl.DataFrame:
    """Build a golden_set frame; ``relevant`` may list chunk ids or (chunk_id, grade) pairs,
    ``claims`` lists (claim_id, supporting ids)."""
    out = []
    for r in rows:
        rel = [
            {"chunk_id": x, "grade": 1} if isinstance(x, str) else {"chunk_id": x[0], "grade": x[1]}
            for x in r.get("relevant", [])
        ]
        claims = [{"claim_id": c, "text": f"claim {c}", "supporting": list(s)} for c, s in r.get("claims", [])]
        out.append({
            "question_id": r["question_id"],
            "golden_version": "g1",
            "question": f"question {r['question_id']}?",
            "answerability": r["answerability"],
            "relevant": rel,
            "reference_answer": None,
            "claims": claims,
            "split": r.get("split", "test"),
            "segments": r.get("segments", []),
            "user_groups": r.get("user_groups", []),
        })
    return pl.DataFrame(out, schema=SCHEMAS["golden_set"])


def runs_frame(rows: list[dict]) -> pl.DataFrame:
    """Build a rag_runs frame from (system, question_id, decision, retrieved ids) dicts."""
    out = []
    for r in rows:
        hits = [{"chunk_id": c, "score": 1.0 / (i + 1), "rank": i + 1} for i, c in enumerate(r.get("retrieved", []))]
        out.append({
            "system": r.get("system", "s1"),
            "question_id": r["question_id"],
            "retrieved": hits,
            "decision": r["decision"],
            "answer": "text" if r["decision"] == "answer" else None,
            "citations": [],
            "error": "boom" if r["decision"] == "error" else None,
            "corpus_version": "c1",
            "golden_version": "g1",
            "retriever": "{}",
            "generator": "gen",
            "model": "m",
            "prompt_version": "p1",
        })
    return pl.DataFrame(out, schema=SCHEMAS["rag_runs"])


def rate(qm: pl.DataFrame, metric: str, system: str = "s1") -> tuple[float | None, int, int]:
    """(value, numerator, denominator) aggregated the way summarise does: null when empty."""
    vals = qm.filter((pl.col("metric") == metric) & (pl.col("system") == system))["value"].drop_nulls()
    num, den = int(vals.sum()), vals.len()
    return (num / den if den else None), num, den


def seed_example():
    """Three answerable (answer, answer, abstain), three absent (answer, abstain, abstain)."""
    golden = golden_frame([
        {"question_id": "a1", "answerability": "answerable", "relevant": ["d1#0"]},
        {"question_id": "a2", "answerability": "answerable", "relevant": ["d1#1"]},
        {"question_id": "a3", "answerability": "answerable", "relevant": ["d2#0"]},
        {"question_id": "n1", "answerability": "absent"},
        {"question_id": "n2", "answerability": "absent"},
        {"question_id": "n3", "answerability": "absent"},
    ])
    runs = runs_frame([
        {"question_id": "a1", "decision": "answer", "retrieved": ["d1#0"]},
        {"question_id": "a2", "decision": "answer", "retrieved": ["d1#1"]},
        {"question_id": "a3", "decision": "abstain", "retrieved": ["d9#0"]},
        {"question_id": "n1", "decision": "answer", "retrieved": ["d1#0"]},
        {"question_id": "n2", "decision": "abstain", "retrieved": []},
        {"question_id": "n3", "decision": "abstain", "retrieved": []},
    ])
    return golden, runs


def test_seed_example_rates():
    golden, runs = seed_example()
    qm = decision_question_metrics(runs, golden)
    assert rate(qm, "coverage") == (0.5, 3, 6)
    assert rate(qm, "answer_without_evidence_rate") == (pytest.approx(1 / 3), 1, 3)
    assert rate(qm, "false_abstention_rate") == (pytest.approx(1 / 3), 1, 3)
    assert rate(qm, "run_error_rate") == (0.0, 0, 6)
    # the abstention on a3 had no evidence in context: a retrieval failure, not a generator error
    assert rate(qm, "abstention_without_evidence") == (1.0, 1, 1)
    assert rate(qm, "abstention_with_evidence") == (0.0, 0, 1)
    assert rate(qm, "evidence_retrieved") == (pytest.approx(2 / 3), 2, 3)


def test_output_shape_and_columns():
    golden, runs = seed_example()
    qm = decision_question_metrics(runs, golden)
    want = [c for c in SCHEMAS["question_metrics"] if c not in ("split", "level")]  # level: added by the pipeline
    assert qm.columns == want
    assert dict(qm.schema) == {c: SCHEMAS["question_metrics"][c] for c in want}
    assert qm.height == 6 * len(DECISION_METRICS)
    assert set(qm["metric"]) == set(DECISION_METRICS)
    assert qm["k"].null_count() == qm.height and qm["ranking_mode"].null_count() == qm.height
    ok = qm.filter(pl.col("status") == "ok")
    assert set(ok["value"]) <= {0.0, 1.0}
    assert (ok["numerator"] == ok["value"]).all() and (ok["denominator"] == 1.0).all()
    nulls = qm.filter(pl.col("status") != "ok")
    assert nulls["value"].null_count() == nulls.height
    assert nulls["denominator"].null_count() == nulls.height


def test_empty_denominators_are_null_not_zero():
    # only answerable questions: answer-without-evidence has no denominator
    golden = golden_frame([{"question_id": "a1", "answerability": "answerable", "relevant": ["d#0"]}])
    runs = runs_frame([{"question_id": "a1", "decision": "answer", "retrieved": ["d#0"]}])
    qm = decision_question_metrics(runs, golden)
    assert rate(qm, "answer_without_evidence_rate") == (None, 0, 0)
    assert rate(qm, "clarify_asked_rate") == (None, 0, 0)
    assert rate(qm, "abstention_with_evidence") == (None, 0, 0)
    row = qm.filter(pl.col("metric") == "answer_without_evidence_rate").row(0, named=True)
    assert row["value"] is None and row["status"] == "not_in_denominator"


def test_errors_counted_apart_and_never_in_a_rate():
    golden = golden_frame([
        {"question_id": "a1", "answerability": "answerable", "relevant": ["d#0"]},
        {"question_id": "a2", "answerability": "answerable", "relevant": ["d#1"]},
        {"question_id": "n1", "answerability": "absent"},
        {"question_id": "c1", "answerability": "clarify"},
    ])
    runs = runs_frame([
        {"question_id": "a1", "decision": "answer", "retrieved": ["d#0"]},
        {"question_id": "a2", "decision": "error", "retrieved": ["d#1"]},
        {"question_id": "n1", "decision": "error"},
        {"question_id": "c1", "decision": "error"},
    ])
    qm = decision_question_metrics(runs, golden)
    assert rate(qm, "run_error_rate") == (0.75, 3, 4)
    assert rate(qm, "coverage") == (1.0, 1, 1)
    assert rate(qm, "false_abstention_rate") == (0.0, 0, 1)
    assert rate(qm, "answer_without_evidence_rate") == (None, 0, 0)
    assert rate(qm, "clarify_asked_rate") == (None, 0, 0)
    assert rate(qm, "evidence_retrieved") == (1.0, 1, 1)  # a2 errored: not counted, even with a hit
    err = qm.filter((pl.col("question_id") == "a2") & (pl.col("metric") != "run_error_rate"))
    statuses = dict(zip(err["metric"], err["status"]))
    assert statuses["coverage"] == "run_error" and statuses["false_abstention_rate"] == "run_error"
    assert statuses["evidence_retrieved"] == "run_error"
    assert err["value"].null_count() == err.height


def test_clarifications_reported_apart():
    golden = golden_frame([
        {"question_id": "a1", "answerability": "answerable", "relevant": ["d#0"]},
        {"question_id": "a2", "answerability": "answerable", "relevant": ["d#1"]},
        {"question_id": "n1", "answerability": "absent"},
        {"question_id": "c1", "answerability": "clarify"},
        {"question_id": "c2", "answerability": "clarify"},
        {"question_id": "c3", "answerability": "clarify"},
        {"question_id": "c4", "answerability": "clarify"},
    ])
    runs = runs_frame([
        {"question_id": "a1", "decision": "answer", "retrieved": ["d#0"]},
        {"question_id": "a2", "decision": "clarify", "retrieved": ["d#1"]},
        {"question_id": "n1", "decision": "clarify"},
        {"question_id": "c1", "decision": "clarify"},
        {"question_id": "c2", "decision": "clarify"},
        {"question_id": "c3", "decision": "answer"},
        {"question_id": "c4", "decision": "abstain"},
    ])
    qm = decision_question_metrics(runs, golden)
    # clarify questions never enter the binary rates
    assert rate(qm, "coverage") == (pytest.approx(1 / 3), 1, 3)
    # clarify on an answerable question: not answered, but not an abstention either
    assert rate(qm, "false_abstention_rate") == (0.0, 0, 2)
    assert rate(qm, "answer_without_evidence_rate") == (0.0, 0, 1)
    assert rate(qm, "clarify_on_binary_rate") == (pytest.approx(2 / 3), 2, 3)
    assert rate(qm, "clarify_asked_rate") == (0.5, 2, 4)
    assert rate(qm, "clarify_answered_rate") == (0.25, 1, 4)
    assert rate(qm, "clarify_abstained_rate") == (0.25, 1, 4)
    c_rows = qm.filter(pl.col("question_id").str.starts_with("c") & pl.col("metric").is_in(
        ["coverage", "false_abstention_rate", "answer_without_evidence_rate"]))
    assert set(c_rows["status"]) == {"not_in_denominator"}


def test_retrieval_failure_vs_generator_abstention():
    golden = golden_frame([
        {"question_id": "q1", "answerability": "answerable", "relevant": ["d1#0"]},  # abstain, evidence there
        {"question_id": "q2", "answerability": "answerable", "relevant": ["d2#0"]},  # abstain, evidence missed
        {"question_id": "q3", "answerability": "answerable", "relevant": ["d3#0"]},  # abstain, evidence missed
        {"question_id": "q4", "answerability": "answerable", "relevant": ["d4#0"]},  # answer, evidence there
        # graded 0 is judged not relevant; the claim's supporting chunk is evidence
        {"question_id": "q5", "answerability": "answerable", "relevant": [("d5#0", 0)],
         "claims": [("c1", ["d5#1"])]},
    ])
    runs = runs_frame([
        {"question_id": "q1", "decision": "abstain", "retrieved": ["x#0", "d1#0"]},
        {"question_id": "q2", "decision": "abstain", "retrieved": ["x#0"]},
        {"question_id": "q3", "decision": "abstain", "retrieved": []},
        {"question_id": "q4", "decision": "answer", "retrieved": ["d4#0"]},
        {"question_id": "q5", "decision": "abstain", "retrieved": ["d5#0", "d5#1"]},
    ])
    qm = decision_question_metrics(runs, golden)
    by = {(r["question_id"], r["metric"]): r for r in qm.iter_rows(named=True)}
    assert by[("q1", "abstention_with_evidence")]["value"] == 1.0
    assert by[("q1", "abstention_without_evidence")]["value"] == 0.0
    assert by[("q2", "abstention_without_evidence")]["value"] == 1.0
    assert by[("q3", "abstention_without_evidence")]["value"] == 1.0
    assert by[("q4", "abstention_with_evidence")]["status"] == "not_in_denominator"
    assert by[("q4", "evidence_retrieved")]["value"] == 1.0
    assert by[("q5", "evidence_retrieved")]["value"] == 1.0
    assert by[("q5", "abstention_with_evidence")]["value"] == 1.0
    assert rate(qm, "false_abstention_rate") == (0.8, 4, 5)
    assert rate(qm, "abstention_with_evidence") == (0.5, 2, 4)
    assert rate(qm, "abstention_without_evidence") == (0.5, 2, 4)
    assert rate(qm, "evidence_retrieved") == (0.6, 3, 5)


def test_answerable_without_evidence_chunks_is_no_relevant():
    golden = golden_frame([{"question_id": "q1", "answerability": "answerable"}])
    runs = runs_frame([{"question_id": "q1", "decision": "abstain", "retrieved": ["a#0"]}])
    qm = decision_question_metrics(runs, golden)
    by = {r["metric"]: r for r in qm.iter_rows(named=True)}
    assert by["evidence_retrieved"]["status"] == "no_relevant"
    assert by["abstention_with_evidence"]["status"] == "no_relevant"
    assert by["false_abstention_rate"]["value"] == 1.0


def test_unknown_and_missing_runs():
    golden, runs = seed_example()
    extra = runs_frame([{"question_id": "zz", "decision": "answer"}])
    runs = pl.concat([runs.filter(pl.col("question_id") != "a3"), extra])
    qm = decision_question_metrics(runs, golden)
    assert "zz" not in set(qm["question_id"])
    assert unknown_run_questions(runs, golden).to_dicts() == [{"system": "s1", "question_id": "zz"}]
    a3 = qm.filter(pl.col("question_id") == "a3")
    assert set(a3["status"]) == {"missing_run", "not_in_denominator"}
    assert a3.filter(pl.col("metric") == "coverage")["status"][0] == "missing_run"
    assert a3.filter(pl.col("metric") == "run_error_rate")["status"][0] == "missing_run"
    assert rate(qm, "coverage") == (0.6, 3, 5)


def test_several_systems_each_get_every_question():
    golden, runs = seed_example()
    runs2 = runs.with_columns(pl.lit("s2").alias("system"), pl.lit("answer").alias("decision"))
    qm = decision_question_metrics(pl.concat([runs, runs2]), golden)
    assert rate(qm, "coverage", "s2") == (1.0, 6, 6)
    assert rate(qm, "answer_without_evidence_rate", "s2") == (1.0, 3, 3)
    assert rate(qm, "coverage", "s1") == (0.5, 3, 6)


def test_acl_unreadable_evidence_does_not_count():
    golden = golden_frame([
        {"question_id": "q1", "answerability": "answerable", "relevant": ["hr#0"], "user_groups": ["sales"]},
        {"question_id": "q2", "answerability": "answerable", "relevant": ["hr#0"], "user_groups": ["hr"]},
    ])
    snapshot = pl.DataFrame({"chunk_id": ["hr#0"], "acl": [["hr"]]})
    ev = evidence_chunks(golden, snapshot).sort("question_id")
    assert ev["evidence"].to_list() == [[], ["hr#0"]]
    assert evidence_chunks(golden).sort("question_id")["evidence"].to_list() == [["hr#0"], ["hr#0"]]
    runs = runs_frame([
        {"question_id": "q1", "decision": "abstain", "retrieved": ["hr#0"]},
        {"question_id": "q2", "decision": "abstain", "retrieved": ["hr#0"]},
    ])
    qm = decision_question_metrics(runs, golden, snapshot)
    by = {(r["question_id"], r["metric"]): r for r in qm.iter_rows(named=True)}
    assert by[("q1", "evidence_retrieved")]["status"] == "no_relevant"
    assert by[("q2", "abstention_with_evidence")]["value"] == 1.0


@pytest.mark.parametrize("field,bad", [("decision", "maybe"), ("answerability", "unknown")])
def test_bad_values_raise(field, bad):
    golden, runs = seed_example()
    if field == "decision":
        runs = runs.with_columns(pl.when(pl.col("question_id") == "a1").then(pl.lit(bad))
                                 .otherwise(pl.col("decision")).alias("decision"))
    else:
        golden = golden.with_columns(pl.when(pl.col("question_id") == "a1").then(pl.lit(bad))
                                     .otherwise(pl.col("answerability")).alias("answerability"))
    with pytest.raises(InputError, match=field):
        decision_question_metrics(runs, golden)


def test_duplicate_run_raises():
    golden, runs = seed_example()
    with pytest.raises(InputError, match="a1"):
        decision_question_metrics(pl.concat([runs, runs.filter(pl.col("question_id") == "a1")]), golden)


def test_no_runs_gives_empty_frame():
    golden, runs = seed_example()
    qm = decision_question_metrics(runs.clear(), golden)
    assert qm.height == 0 and "value" in qm.columns


def test_evidence_judged_per_document_is_any_chunk_of_a_relevant_document():
    """relevant_docs: every chunk of a document with grade > 0 is evidence (grade 0 is judged not relevant);
    so a retrieval failure is told from an abstention at document level too."""
    golden = golden_frame([
        {"question_id": "q1", "answerability": "answerable"},
        {"question_id": "q2", "answerability": "answerable"},
    ]).with_columns(pl.Series("relevant_docs", [[{"doc_id": "returns", "grade": 2}],
                                                [{"doc_id": "returns", "grade": 0}, {"doc_id": "faq", "grade": 1}]],
                              dtype=SCHEMAS["golden_set"]["relevant_docs"]))
    snapshot = pl.DataFrame({"chunk_id": ["r-1", "r-2", "f-1"], "doc_id": ["returns", "returns", "faq"],
                             "acl": [[], [], []]})
    ev = evidence_chunks(golden, snapshot).sort("question_id")
    assert ev["evidence"].to_list() == [["r-1", "r-2"], ["f-1"]]
    runs = runs_frame([
        {"question_id": "q1", "decision": "abstain", "retrieved": ["r-2"]},   # evidence retrieved: generator error
        {"question_id": "q2", "decision": "abstain", "retrieved": ["r-1"]},   # only the grade-0 document: no evidence
    ])
    by = {(r["question_id"], r["metric"]): r["value"] for r in
          decision_question_metrics(runs, golden, snapshot).iter_rows(named=True)}
    assert by[("q1", "abstention_with_evidence")] == 1.0 and by[("q2", "abstention_without_evidence")] == 1.0
