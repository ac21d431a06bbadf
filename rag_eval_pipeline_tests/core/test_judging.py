"""judge_runs (core/judging.py): statuses, zero judge calls, error isolation, quote enforcement."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import DOWNGRADE_PREFIX, count_downgraded, judge_runs
from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
from rag_eval_pipeline.core.tables import SCHEMAS, conform

CHUNKS = {
    "lib#0": "La biblioteca municipal abre de lunes a viernes de 9 a 20 horas. "
             "Los sábados abre de 10 a 14 horas.",
    "lib#1": "Cada socio puede llevarse hasta 6 libros durante 21 días. El préstamo se puede "
             "renovar una vez por internet. El carné de socio es gratuito para los empadronados.",
}


def _snapshot() -> pl.DataFrame:
    return pl.DataFrame({"chunk_id": list(CHUNKS), "text": list(CHUNKS.values())})


def _run(qid, decision="answer", answer="Abre los sábados.", hits=(("lib#0", 1),), system="s"):
    return {
        "system": system, "question_id": qid,
        "retrieved": [{"chunk_id": c, "score": 1.0 / r, "rank": r} for c, r in hits],
        "decision": decision, "answer": answer, "citations": [],
        "error": "boom" if decision == "error" else None,
        "corpus_version": "cv", "golden_version": "gv", "retriever": "{}", "generator": "g",
        "model": "m", "prompt_version": "p",
    }


def _runs(*rows) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SCHEMAS["rag_runs"])


class CountingJudge:
    """Wraps a judge function and counts calls; records the arguments of each call."""

    name, model, prompt_sha256 = "counting", "counting-v0", "0" * 64

    def __init__(self, fn=None):
        self.calls: list[tuple[str, str, list[str]]] = []
        self.fn = fn or (lambda q, a, ctx: RuleBasedJudge().judge(q, a, ctx))

    def judge(self, question, answer, contexts):
        self.calls.append((question, answer, list(contexts)))
        return self.fn(question, answer, contexts)


def test_statuses_without_judge_calls():
    runs = _runs(
        _run("q_abs", decision="abstain", answer="No lo sé."),
        _run("q_cla", decision="clarify", answer="¿Qué sede?"),
        _run("q_err", decision="error", answer=None),
        _run("q_noret", answer="Abre los sábados.", hits=()),
        _run("q_blank", answer="   "),
        _run("q_null", answer=None),
    )
    judge = CountingJudge()
    labels, answers = judge_runs(runs, _snapshot(), judge, repeats=2)
    assert judge.calls == []
    assert labels.height == 0
    assert answers.height == 12
    got = {(r["question_id"], r["repeat"]): r["status"] for r in answers.iter_rows(named=True)}
    for rep in (0, 1):
        assert got[("q_abs", rep)] == "abstained"
        assert got[("q_cla", rep)] == "clarify"
        assert got[("q_err", rep)] == "run_error"
        assert got[("q_noret", rep)] == "no_retrieval"
        assert got[("q_blank", rep)] == "no_claims"
        assert got[("q_null", rep)] == "no_claims"
    assert answers["n_claims"].to_list() == [0] * 12
    assert set(answers["judge"]) == {"counting"}
    conform(labels, "judge_labels")
    conform(answers, "answer_judgements")


def test_judge_finding_no_claims():
    judge = CountingJudge()
    labels, answers = judge_runs(_runs(_run("q1", answer="...")), _snapshot(), judge)
    assert len(judge.calls) == 1
    assert answers["status"].to_list() == ["no_claims"] and labels.height == 0


def test_one_raising_item_does_not_abort_the_others():
    def fn(q, a, ctx):
        if "explota" in a:
            raise RuntimeError("model timed out")
        return RuleBasedJudge().judge(q, a, ctx)

    runs = _runs(
        _run("q1", answer="Los sábados abre de 10 a 14 horas."),
        _run("q2", answer="Esto explota."),
        _run("q3", answer="Tiene cafetería."),
    )
    judge = CountingJudge(fn)
    labels, answers = judge_runs(runs, _snapshot(), judge)
    assert len(judge.calls) == 3
    assert answers["status"].to_list() == ["judged", "judge_error", "judged"]
    assert answers["n_claims"].to_list() == [1, None, 1]
    err = labels.filter(pl.col("question_id") == "q2").row(0, named=True)
    assert err["claim_id"] == "q2:c0"
    assert err["claim"] == "Esto explota."
    assert err["verdict"] == "JUDGE_ERROR"
    assert err["error"] == "RuntimeError: model timed out"
    assert err["quote_found"] is False
    assert labels.filter(pl.col("question_id") != "q2")["error"].null_count() == 2
    assert labels.filter(pl.col("question_id") == "q1")["verdict"].to_list() == ["SUPPORTED"]
    # the reason is on the answer's own row too, not only on the claim row or stderr
    assert answers["error"].to_list() == [None, "RuntimeError: model timed out", None]


def test_claim_ids_repeats_and_identity_columns():
    judge = RuleBasedJudge()
    runs = _runs(_run("q1", answer="Los sábados abre de 10 a 14 horas. Tiene cafetería.",
                      hits=(("lib#0", 1), ("lib#1", 2))))
    labels, answers = judge_runs(runs, _snapshot(), judge, repeats=3)
    assert labels.height == 6
    assert labels.filter(pl.col("repeat") == 0)["claim_id"].to_list() == ["q1:c1", "q1:c2"]
    assert sorted(set(labels["repeat"].to_list())) == [0, 1, 2]
    assert answers["repeat"].to_list() == [0, 1, 2]
    assert set(labels["judge"]) == {"rule_based"}
    assert set(labels["judge_model"]) == {judge.model}
    assert set(labels["prompt_sha256"]) == {judge.prompt_sha256}
    assert labels.schema == SCHEMAS["judge_labels"]
    assert answers.schema == SCHEMAS["answer_judgements"]


def test_contexts_in_rank_order_and_question_text_passed():
    judge = CountingJudge()
    runs = _runs(_run("q1", hits=(("lib#1", 2), ("lib#0", 1))))
    judge_runs(runs, _snapshot(), judge, questions={"q1": "¿Cuándo abre?"})
    assert judge.calls == [("¿Cuándo abre?", "Abre los sábados.", [CHUNKS["lib#0"], CHUNKS["lib#1"]])]
    judge2 = CountingJudge()
    judge_runs(runs, _snapshot(), judge2,
               questions=pl.DataFrame({"question_id": ["q1"], "question": ["¿Y?"]}))
    assert judge2.calls[0][0] == "¿Y?"
    judge3 = CountingJudge()
    judge_runs(runs, _snapshot(), judge3)
    assert judge3.calls[0][0] == ""


def _fixed(*claims, status="judged"):
    return lambda q, a, ctx: AnswerJudgement(status, list(claims), None)


def test_unverified_supported_quote_is_downgraded():
    claims = (
        ClaimVerdict("x", "Abre los sábados.", "SUPPORTED", "Los sábados abre de 10 a 14 horas.", True, "ok"),
        ClaimVerdict("y", "Abre los domingos.", "SUPPORTED", "Los domingos abre de 10 a 14 horas.", True, "lo dice"),
        # differs only in case, spacing and quote/dash typography: still found
        ClaimVerdict("z", "Horario.", "SUPPORTED", "LOS  SÁBADOS abre de 10 a 14 horas", True, "ok"),
        ClaimVerdict("w", "Es caro.", "SUPPORTED", None, True, "sin cita"),
        ClaimVerdict("v", "Cierra.", "CONTRADICTED", "No está en el texto.", True, "inventado"),
    )
    labels, answers = judge_runs(_runs(_run("q1")), _snapshot(), CountingJudge(_fixed(*claims)))
    rows = labels.to_dicts()
    assert [r["verdict"] for r in rows] == ["SUPPORTED", "NOT_MENTIONED", "SUPPORTED", "NOT_MENTIONED", "CONTRADICTED"]
    assert [r["quote_found"] for r in rows] == [True, False, True, False, False]
    assert rows[1]["justification"] == DOWNGRADE_PREFIX + "lo dice"
    assert rows[3]["justification"].startswith(DOWNGRADE_PREFIX)
    assert count_downgraded(labels) == 2
    assert [r["claim_id"] for r in rows] == ["q1:c1", "q1:c2", "q1:c3", "q1:c4", "q1:c5"]
    assert answers["status"].to_list() == ["judged"] and answers["n_claims"].to_list() == [5]
    qm = faithfulness_question_metrics(labels, answers)
    val = dict(zip(qm["metric"], qm["value"]))
    assert val["faithfulness"] == pytest.approx(2 / 5)
    assert val["quote_downgrade_rate"] == pytest.approx(2 / 5)


def test_quote_in_unretrieved_chunk_is_not_found():
    claim = ClaimVerdict("x", "Presta 6 libros.", "SUPPORTED", "hasta 6 libros durante 21 días", True, "ok")
    labels, _ = judge_runs(_runs(_run("q1", hits=(("lib#0", 1),))), _snapshot(), CountingJudge(_fixed(claim)))
    assert labels["verdict"].to_list() == ["NOT_MENTIONED"]
    assert count_downgraded(labels) == 1


def test_malformed_judge_results_become_judge_errors():
    outputs = {
        "uno.": "not a judgement",
        "dos.": AnswerJudgement("weird", [], None),
        "tres.": AnswerJudgement("judge_error", [], None),
        "cuatro.": AnswerJudgement("judged", [
            ClaimVerdict("a", "A.", "MAYBE", None, False, ""),
            ClaimVerdict("b", "B.", "JUDGE_ERROR", None, False, ""),
        ], None),
    }
    runs = _runs(*(_run(f"q{i}", answer=a) for i, a in enumerate(outputs, start=1)))
    labels, answers = judge_runs(runs, _snapshot(), CountingJudge(lambda q, a, ctx: outputs[a]))
    assert answers["status"].to_list() == ["judge_error"] * 4
    assert set(labels["verdict"]) == {"JUDGE_ERROR"}
    errs = dict(zip(labels["claim_id"], labels["error"]))
    assert "not AnswerJudgement" in errs["q1:c0"]
    assert "unknown status" in errs["q2:c0"]
    assert "without claim verdicts" in errs["q3:c0"]
    assert "unknown verdict 'MAYBE'" in errs["q4:c1"]
    assert "without a reason" in errs["q4:c2"]
    assert answers["n_claims"].to_list() == [None, None, None, 2]


def test_input_errors():
    judge = RuleBasedJudge()
    with pytest.raises(InputError, match="not in the corpus snapshot"):
        judge_runs(_runs(_run("q1", hits=(("nope#0", 1),))), _snapshot(), judge)
    with pytest.raises(InputError, match="duplicate"):
        judge_runs(_runs(_run("q1"), _run("q1")), _snapshot(), judge)
    with pytest.raises(InputError, match="decision"):
        judge_runs(_runs(_run("q1", decision="maybe")), _snapshot(), judge)
    with pytest.raises(ValueError):
        judge_runs(_runs(_run("q1")), _snapshot(), judge, repeats=0)
    with pytest.raises(SchemaError):
        judge_runs(_runs(_run("q1")).drop("answer"), _snapshot(), judge)
    with pytest.raises(SchemaError):
        judge_runs(_runs(_run("q1")), _snapshot().drop("text"), judge)


def test_end_to_end_five_of_six():
    answer = (
        "La biblioteca municipal abre de lunes a viernes de 9 a 20 horas. "
        "Los sábados abre de 10 a 14 horas. Cada socio puede llevarse hasta 6 libros. "
        "El préstamo se puede renovar una vez por internet. "
        "El carné de socio es gratuito para los empadronados. También tiene cafetería."
    )
    runs = _runs(_run("q1", answer=answer, hits=(("lib#0", 1), ("lib#1", 2))),
                 _run("q2", decision="abstain", answer=None))
    labels, answers = judge_runs(runs, _snapshot(), RuleBasedJudge())
    qm = faithfulness_question_metrics(labels, answers)
    f = qm.filter(pl.col("metric") == "faithfulness").sort("question_id")
    assert f["value"].to_list()[0] == pytest.approx(5 / 6)
    assert f["numerator"].to_list() == [5.0, None] and f["denominator"].to_list() == [6.0, None]
    assert f["status"].to_list() == ["ok", "abstained"]


def test_two_systems_with_the_same_answer_on_the_same_passages_cost_one_judge_call():
    # s1 and s2 answered q1 alike on the same chunk: one call, both get its labels; s3 differs: its own call
    judge = CountingJudge()
    runs = _runs(_run("q1", system="s1"), _run("q1", system="s2"),
                 _run("q1", system="s3", answer="Abre los domingos."))
    labels, judgements = judge_runs(runs, _snapshot(), judge)
    assert [a for _, a, _ in judge.calls] == ["Abre los sábados.", "Abre los domingos."]
    by_system = {s: labels.filter(pl.col("system") == s).drop("system") for s in ("s1", "s2")}
    assert by_system["s1"].height > 0 and by_system["s1"].equals(by_system["s2"])
    assert judgements["system"].to_list() == ["s1", "s2", "s3"]
