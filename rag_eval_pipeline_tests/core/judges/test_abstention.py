"""Abstention wording in an answer logged as decision "answer" (core/judges/abstention.py), its
flag in the judge tables and its re-classification in the decision metrics."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.decisions import decision_question_metrics
from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
from rag_eval_pipeline.core.tables import SCHEMAS

ISSUE_ANSWER = "No encuentro esa información en la documentación disponible."


@pytest.mark.parametrize("answer", [
    ISSUE_ANSWER,
    "No dispongo de información sobre el pago a plazos.",
    "La documentación no dice si el altavoz tiene micrófono.",
    "I don't know.",
    "I don’t know which adapter you need.",          # curly apostrophe
    "The documents do not say whether it floats.",
    "¿Precio? No encuentro el precio de la Dock D1.",  # the first sentence is a question: not it
])
def test_abstaining_first_sentences(answer):
    got = abstention_phrase(answer)
    if answer.startswith("¿Precio?"):
        assert got is None
    else:
        assert got is not None


@pytest.mark.parametrize("answer", [
    "El plazo es de 30 días; no encuentro más detalles.",  # a fact first: an answer
    "Los documentos no incluyen el altavoz B2 en la garantía europea.",
    "I'm not sure, but the warranty lasts three years.",   # a hedge, not an abstention
    "The warranty lasts three years. I don't know about the battery.",
    "",
    None,
])
def test_answers_that_do_not_abstain(answer):
    assert abstention_phrase(answer) is None


def test_phrase_lists_from_configuration():
    phrases = phrases_from_config({"es": ["Ni idea"], "en": ["no clue"]})
    assert phrases == {"es": ("ni idea",), "en": ("no clue",)}
    assert abstention_phrase("Ni idea, la verdad.", phrases) == "ni idea"
    assert abstention_phrase(ISSUE_ANSWER, phrases) is None  # the configured lists replace the defaults
    assert abstention_phrase(ISSUE_ANSWER, phrases_from_config({})) is None  # {} turns detection off
    for bad in (["no sé"], {"es": "no sé"}, {"es": [""]}, {"es": [3]}):
        with pytest.raises(ConfigError, match="judge.abstention_phrases"):
            phrases_from_config(bad)


def _runs(rows):
    return pl.DataFrame([{
        "system": "s", "question_id": q, "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1}],
        "decision": d, "answer": a, "citations": [], "error": None, "corpus_version": "c",
        "golden_version": "g", "retriever": "{}", "generator": "g", "model": "m", "prompt_version": "p",
    } for q, d, a in rows], schema=SCHEMAS["rag_runs"])


CONTEXT = "La información de pagos no está disponible. El plazo de devolución es de 30 días."


def test_abstention_text_is_not_judged_and_is_flagged():
    runs = _runs([("q1", "answer", ISSUE_ANSWER), ("q2", "answer", "El plazo de devolución es de 30 días.")])
    snapshot = pl.DataFrame({"chunk_id": ["d#0"], "text": [CONTEXT]})
    labels, answers = judge_runs(runs, snapshot, RuleBasedJudge(semantic=False))
    status = dict(answers.select("question_id", "status").iter_rows())
    assert status == {"q1": "abstention_text_in_answer", "q2": "judged"}
    assert labels["question_id"].to_list() == ["q2"]  # no claim rows for the abstention
    qm = faithfulness_question_metrics(labels, answers)
    f1 = qm.filter((pl.col("question_id") == "q1") & (pl.col("metric") == "faithfulness")).row(0, named=True)
    assert f1["value"] is None and f1["status"] == "abstention_text_in_answer"
    _, answers_off = judge_runs(runs, snapshot, RuleBasedJudge(semantic=False), abstention_phrases={})
    assert dict(answers_off.select("question_id", "status").iter_rows())["q1"] == "judged"


def _golden(classes):
    return pl.DataFrame([{
        "question_id": q, "golden_version": "g", "question": "?", "answerability": c,
        "relevant": [{"chunk_id": "d#0", "grade": 1}] if c == "answerable" else [],
        "reference_answer": None, "claims": [], "split": "test", "segments": [], "user_groups": [],
    } for q, c in classes], schema=SCHEMAS["golden_set"])


def test_decision_metrics_count_abstention_text_as_abstention():
    # q1 answerable, abstains in words; q2 absent, abstains in words (the right behaviour);
    # q3 answerable, a real answer; q4 absent, a logged abstention.
    runs = _runs([("q1", "answer", ISSUE_ANSWER), ("q2", "answer", "I don't know."),
                  ("q3", "answer", "El plazo es de 30 días."), ("q4", "abstain", "No lo sé.")])
    golden = _golden([("q1", "answerable"), ("q2", "absent"), ("q3", "answerable"), ("q4", "absent")])
    qm = decision_question_metrics(runs, golden)

    def value(metric, q):
        return qm.filter((pl.col("metric") == metric) & (pl.col("question_id") == q))["value"][0]

    assert [value("abstention_text_in_answer", q) for q in ("q1", "q2", "q3", "q4")] == [1.0, 1.0, 0.0, None]
    assert [value("coverage", q) for q in ("q1", "q2", "q3", "q4")] == [0.0, 0.0, 1.0, 0.0]
    assert value("false_abstention_rate", "q1") == 1.0
    assert value("answer_without_evidence_rate", "q2") == 0.0
    kept = decision_question_metrics(runs, golden, text_abstention_is_abstention=False)
    assert kept.filter((pl.col("metric") == "coverage") & (pl.col("question_id") == "q1"))["value"][0] == 1.0
    assert kept.filter((pl.col("metric") == "abstention_text_in_answer")
                       & (pl.col("question_id") == "q1"))["value"][0] == 1.0


def test_configuration_key_is_accepted_and_reaches_the_phrase_lists(tmp_path):
    from rag_eval_pipeline.core.config import load_config

    cfg_path = tmp_path / "config.yaml"
    (tmp_path / "corpus").mkdir()
    (tmp_path / "golden.jsonl").write_text("", encoding="utf-8")
    cfg_path.write_text(
        "corpus: {source: documents_dir, path: corpus}\n"
        "golden: {path: golden.jsonl}\n"
        "systems: [{name: s, kind: logged, path: run.jsonl}]\n"
        "judge: {type: rule_based, abstention_phrases: {es: ['ni idea']}}\n", encoding="utf-8")
    cfg = load_config(cfg_path)
    phrases = phrases_from_config(cfg.judge.abstention_phrases)
    assert abstention_phrase("Ni idea.", phrases) == "ni idea"
    cfg_path.write_text(cfg_path.read_text(encoding="utf-8").replace("['ni idea']", "'ni idea'"), encoding="utf-8")
    with pytest.raises(ConfigError, match="judge.abstention_phrases.es must be a list"):  # checked at load
        load_config(cfg_path)
