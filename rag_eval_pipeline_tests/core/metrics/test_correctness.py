import polars as pl
import pytest

from rag_eval_pipeline.core.metrics.correctness import correctness_question_metrics, normalise_answer, token_scores


def test_normalisation_drops_articles_punctuation_and_case_in_both_languages():
    assert normalise_answer("¿Los 30 días, desde la entrega?") == "30 días desde entrega"
    assert normalise_answer("The Normans.") == "normans"


def test_token_f1_worked_by_hand():
    # answer tokens: tienes 30 días naturales desde entrega (6); reference: 30 días naturales desde entrega (5)
    f1, recall, common, n_a, n_r = token_scores("Tienes 30 días naturales desde la entrega",
                                                "30 días naturales desde la entrega.")
    assert (common, n_a, n_r) == (5, 6, 5)
    assert recall == 1.0
    assert f1 == pytest.approx(10 / 11)  # P = 5/6, R = 1, F1 = 2PR/(P+R)
    assert token_scores("Mumbai", "Delhi")[:2] == (0.0, 0.0)


def test_an_omission_lowers_recall_even_when_every_word_is_right():
    _, recall, common, _, n_r = token_scores("30 días", "30 días, o 60 días para defectos")
    # reference tokens: 30 días o 60 días para defectos (7); shared: 30, días (once: bag overlap)
    assert (common, n_r) == (2, 7) and recall == pytest.approx(2 / 7)


def test_only_answered_answerable_questions_with_a_reference_are_scored():
    golden = pl.DataFrame({"question_id": ["a", "b", "c"], "answerability": ["answerable", "absent", "answerable"],
                           "reference_answer": ["Delhi", None, "Delhi"]})
    runs = pl.DataFrame({"system": ["s"] * 3, "question_id": ["a", "b", "c"],
                         "decision": ["answer", "answer", "abstain"], "answer": ["It is Delhi", "x", None]})
    qm = correctness_question_metrics(runs, golden).filter(pl.col("metric") == "reference_token_recall")
    got = {r["question_id"]: (r["value"], r["status"]) for r in qm.iter_rows(named=True)}
    assert got == {"a": (1.0, "ok"), "b": (None, "not_answerable"), "c": (None, "not_answered")}
