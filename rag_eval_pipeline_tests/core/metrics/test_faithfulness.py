"""faithfulness_question_metrics (core/metrics/faithfulness.py) on hand-built judge tables."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.judging import DOWNGRADE_PREFIX
from rag_eval_pipeline.core.metrics.faithfulness import (
    FAITHFULNESS_METRICS,
    OUTPUT_SCHEMA,
    faithfulness_question_metrics,
)
from rag_eval_pipeline.core.tables import SCHEMAS, conform

IDENT = {"judge": "j", "judge_model": "j-v1", "prompt_sha256": "0" * 64}


def _tables(spec):
    """spec: {qid: [(repeat, status, [verdicts])]}; a verdict "DOWN" is a downgraded NOT_MENTIONED."""
    labels, answers = [], []
    for qid, reps in spec.items():
        for rep, status, verdicts in reps:
            answers.append({"system": "s", "question_id": qid, "status": status,
                            "n_claims": len(verdicts), "repeat": rep, **IDENT})
            for n, v in enumerate(verdicts, start=1):
                down = v == "DOWN"
                labels.append({
                    "system": "s", "question_id": qid, "claim_id": f"{qid}:c{n}", "claim": "x",
                    "verdict": "NOT_MENTIONED" if down else v, "quote": None, "quote_found": False,
                    "justification": (DOWNGRADE_PREFIX + "j") if down else "j",
                    "repeat": rep, "error": "e" if v == "JUDGE_ERROR" else None, **IDENT,
                })
    return (pl.DataFrame(labels, schema=SCHEMAS["judge_labels"]),
            pl.DataFrame(answers, schema=SCHEMAS["answer_judgements"]))


def _metrics(spec):
    qm = faithfulness_question_metrics(*_tables(spec))
    return {(r["question_id"], r["metric"]): r for r in qm.iter_rows(named=True)}, qm


S, C, N, E = "SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "JUDGE_ERROR"


def test_five_of_six_supported():
    m, _ = _metrics({"q": [(0, "judged", [S, S, S, S, S, N])]})
    f = m[("q", "faithfulness")]
    assert f["value"] == pytest.approx(5 / 6) and round(f["value"], 4) == 0.8333
    assert (f["numerator"], f["denominator"], f["status"]) == (5.0, 6.0, "ok")
    assert m[("q", "faithfulness_holistic")]["value"] == 0.5  # PARTIAL
    assert m[("q", "contradicted_claim_rate")]["value"] == 0.0
    assert m[("q", "judge_error_rate")]["value"] == 0.0


def test_holistic_yes_and_no():
    m, _ = _metrics({"yes": [(0, "judged", [S, S])], "no_c": [(0, "judged", [S, S, C])],
                     "no_s": [(0, "judged", [N, N])]})
    assert m[("yes", "faithfulness_holistic")]["value"] == 1.0
    assert m[("no_c", "faithfulness_holistic")]["value"] == 0.0
    assert m[("no_s", "faithfulness_holistic")]["value"] == 0.0
    assert m[("no_c", "contradicted_claim_rate")]["value"] == pytest.approx(1 / 3)
    assert m[("no_c", "faithfulness")]["value"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("status", ["abstained", "clarify", "run_error", "no_retrieval", "no_claims"])
def test_not_evaluable_is_null_with_status(status):
    m, qm = _metrics({"q": [(0, status, [])]})
    for metric in FAITHFULNESS_METRICS:
        r = m[("q", metric)]
        assert r["value"] is None and r["numerator"] is None and r["denominator"] is None
        assert r["status"] == status
    assert qm["value"].null_count() == qm.height  # never 1.0 for no claims, never NaN


def test_judge_error_claims_are_excluded_and_counted():
    m, _ = _metrics({"part": [(0, "judged", [S, S, E])], "all": [(0, "judge_error", [E])]})
    assert m[("part", "faithfulness")]["value"] == 1.0
    assert m[("part", "faithfulness")]["denominator"] == 2.0
    assert m[("part", "judge_error_rate")]["value"] == pytest.approx(1 / 3)
    assert m[("part", "judge_error_rate")]["numerator"] == 1.0
    assert m[("part", "faithfulness_holistic")]["value"] == 1.0
    f = m[("all", "faithfulness")]
    assert f["value"] is None and f["status"] == "judge_error"
    assert m[("all", "faithfulness_holistic")]["status"] == "judge_error"
    assert m[("all", "judge_error_rate")]["value"] == 1.0


def test_judged_with_only_error_claims_is_judge_error():
    m, _ = _metrics({"q": [(0, "judged", [E, E])]})
    assert m[("q", "faithfulness")]["value"] is None
    assert m[("q", "faithfulness")]["status"] == "judge_error"


def test_quote_downgrades_counted():
    m, _ = _metrics({"q": [(0, "judged", [S, "DOWN", N, "DOWN"])]})
    d = m[("q", "quote_downgrade_rate")]
    assert (d["value"], d["numerator"], d["denominator"]) == (0.5, 2.0, 4.0)
    assert m[("q", "faithfulness")]["value"] == 0.25


def test_repeats_are_pooled():
    # repeat 0: 2/2 supported (YES = 1); repeat 1: 1/2 (PARTIAL = 0.5); repeat 2 failed.
    m, _ = _metrics({"q": [(0, "judged", [S, S]), (1, "judged", [S, N]), (2, "judge_error", [E])]})
    f = m[("q", "faithfulness")]
    assert (f["value"], f["numerator"], f["denominator"]) == (0.75, 3.0, 4.0)
    h = m[("q", "faithfulness_holistic")]
    assert (h["value"], h["numerator"], h["denominator"]) == (0.75, 1.5, 2.0)
    e = m[("q", "judge_error_rate")]
    assert (e["value"], e["numerator"], e["denominator"]) == (0.2, 1.0, 5.0)


def test_output_shape():
    _, qm = _metrics({"a": [(0, "judged", [S])], "b": [(0, "abstained", [])]})
    assert qm.schema == OUTPUT_SCHEMA
    assert "split" not in qm.columns
    assert qm.height == 2 * len(FAITHFULNESS_METRICS)
    assert qm["k"].null_count() == qm.height and qm["ranking_mode"].null_count() == qm.height
    assert qm["question_id"].to_list()[:len(FAITHFULNESS_METRICS)] == ["a"] * len(FAITHFULNESS_METRICS)
    conform(qm.with_columns(pl.lit("test").alias("split")), "question_metrics")


def test_empty_tables():
    qm = faithfulness_question_metrics(pl.DataFrame(schema=SCHEMAS["judge_labels"]),
                                       pl.DataFrame(schema=SCHEMAS["answer_judgements"]))
    assert qm.height == 0 and qm.schema == OUTPUT_SCHEMA


def test_input_errors():
    labels, answers = _tables({"q": [(0, "judged", [S])]})
    with pytest.raises(InputError, match="no answer_judgements row"):
        faithfulness_question_metrics(labels, answers.filter(pl.lit(False)))
    with pytest.raises(InputError, match="verdict"):
        faithfulness_question_metrics(labels.with_columns(pl.lit("MAYBE").alias("verdict")), answers)
    with pytest.raises(SchemaError):
        faithfulness_question_metrics(labels.drop("verdict"), answers)
