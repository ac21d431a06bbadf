"""``judge.type: python``: a team's own ``module:function`` judge, its verdicts checked by code like every
judge's, its failures JUDGE_ERROR labels, its refusals at load."""

from __future__ import annotations

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core.config import JudgeConfigError, load_config
from rag_eval_pipeline.core.judges.registry import build_judge, judge_config
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.section_errors import SectionError
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

HERE = "rag_eval_pipeline_tests.core.judges.test_python_judge"
PASSAGES = ["El plazo es de 30 días naturales.", "Los gastos de envío son gratuitos."]


def keyword_judge(claim: str, passages: list[str]) -> dict:
    """A team's toy judge: SUPPORTED when a passage holds the claim word for word, CONTRADICTED when the claim
    prices the shipping, NOT_MENTIONED otherwise."""
    for p in passages:
        if claim.rstrip(".") in p:
            return {"verdict": "SUPPORTED", "quote": claim.rstrip("."), "justification": "word for word"}
    if "cuesta" in claim:
        return {"verdict": "CONTRADICTED", "quote": "Los gastos de envío son gratuitos."}
    return {"verdict": "NOT_MENTIONED", "quote": None}


def overconfident_judge(claim: str, passages: list[str]) -> dict:
    return {"verdict": "SUPPORTED", "quote": "a sentence no passage contains"}


def failing_judge(claim: str, passages: list[str]) -> dict:
    if "cuesta" in claim:
        raise RuntimeError("model overloaded")
    return {"verdict": "maybe", "quote": None}


def judge_of(fn: str):
    return build_judge(judge_config("python", callable=f"{HERE}:{fn}"))


def test_one_call_per_claim_and_the_verdicts_it_returns():
    j = judge_of("keyword_judge")
    assert (j.name, j.model) == ("python", f"{HERE}:keyword_judge") and len(j.prompt_sha256) == 64
    got = j.judge("¿plazo?", "El plazo es de 30 días naturales. El envío cuesta 5 euros. Puedes pagar con tarjeta.",
                  PASSAGES)
    # claims: c1 supported word for word, c2 contradicted by the second passage, c3 not in any passage
    assert got.status == "judged" and got.holistic == "NO"
    assert [(v.claim_id, v.verdict, v.quote, v.quote_found) for v in got.claims] == [
        ("c1", "SUPPORTED", "El plazo es de 30 días naturales", True),
        ("c2", "CONTRADICTED", "Los gastos de envío son gratuitos.", True),
        ("c3", "NOT_MENTIONED", None, False)]
    assert got.claims[0].justification == "word for word"
    assert j.judge("q", "El plazo es de 30 días naturales.", ["", " "]).status == "no_retrieval"
    assert j.judge("q", "Sí.", PASSAGES).status == "no_claims"


def test_a_failed_call_is_a_judge_error_label_never_a_score():
    j = judge_of("failing_judge")
    got = j.judge("q", "El plazo es de 30 días naturales. El envío cuesta 5 euros.", PASSAGES)
    assert got.status == "judge_error" and [v.verdict for v in got.claims] == ["JUDGE_ERROR", "JUDGE_ERROR"]
    assert "expected a mapping with verdict one of" in got.claims[0].error
    assert got.claims[1].error == "the judge raised RuntimeError: model overloaded"


def test_its_quotes_are_checked_by_code_like_every_judges():
    from rag_eval_pipeline.core import tables

    snapshot = tables.conform(pl.DataFrame([{
        "chunk_id": "d#0", "doc_id": "d", "chunk_index": 0, "text": PASSAGES[0], "title": None, "source": None,
        "doc_type": None, "language": None, "status": "active", "replaced_by": None, "acl": [], "valid_from": None,
        "valid_to": None, "sha256": "x"}], schema=tables.SCHEMAS["corpus_snapshot"]), "corpus_snapshot")
    runs = tables.conform(pl.DataFrame([{
        "system": "s", "question_id": "q1", "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1}],
        "decision": "answer", "answer": "El plazo es de 30 días naturales.", "citations": [], "error": None,
        "corpus_version": "c", "golden_version": "g", "retriever": None, "generator": None, "model": None,
        "prompt_version": None}], schema=tables.SCHEMAS["rag_runs"], strict=False), "rag_runs")
    labels, answers = judge_runs(runs, snapshot, judge_of("overconfident_judge"))
    # the judge said SUPPORTED with a quote the retrieved text does not hold: downgraded by code
    assert labels["verdict"].to_list() == ["NOT_MENTIONED"] and labels["quote_found"].to_list() == [False]
    labels, _ = judge_runs(runs, snapshot, judge_of("keyword_judge"))
    assert labels["verdict"].to_list() == ["SUPPORTED"] and labels["judge"].to_list() == ["python"]


def write(tmp_path, **judge):
    cfg = sample_config_dict()
    cfg["judge"] = judge
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def test_its_setup_is_checked_at_load(tmp_path):
    path = write(tmp_path, type="python")
    with pytest.raises(JudgeConfigError, match=rf"{path}: judge.type python needs RAG_EVAL_JUDGE_CALLABLE "
                                               r"\(package.module:function\) or judge.callable"):
        load_config(path, environ={})
    with pytest.raises(SectionError, match=r"judge.callable must be 'package.module:function', got 'judge.py'"):
        load_config(write(tmp_path, type="python", callable="judge.py"), environ={})
    cfg = load_config(write(tmp_path, type="rule_based"), environ={"RAG_EVAL_JUDGE": "python",
                                                                  "RAG_EVAL_JUDGE_CALLABLE": f"{HERE}:keyword_judge"})
    assert (cfg.judge.type, cfg.judge.options.callable) == ("python", f"{HERE}:keyword_judge")
    assert set(cfg.judge.from_env) == {"RAG_EVAL_JUDGE", "RAG_EVAL_JUDGE_CALLABLE"}
    with pytest.raises(JudgeConfigError, match=r"cannot import module 'no_such_module'"):
        build_judge(judge_config("python", callable="no_such_module:judge"))


def test_the_dagster_resource_builds_it_through_the_registry(tmp_path):
    from rag_eval_pipeline.defs.judging import select_judge_resource

    res = select_judge_resource(config_path=str(write(tmp_path, type="python", callable=f"{HERE}:keyword_judge")))
    assert res.type == "python" and res.api_key is None
    assert res.get_judge().judge("q", "El plazo es de 30 días naturales.", PASSAGES).claims[0].verdict == "SUPPORTED"
