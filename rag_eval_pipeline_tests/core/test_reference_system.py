"""The built-in reference RAG system and its extractive answerer."""

from __future__ import annotations

import hashlib
import json

import polars as pl
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.generation import extractive
from rag_eval_pipeline.core.generation.extractive import ExtractiveAnswerer, split_sentences
from rag_eval_pipeline.core.reference_system import run_reference_system
from rag_eval_pipeline.core.systems.kinds.reference import resolve_retriever_config

# A small invented Spanish corpus (a fictional shop's handbook).
CHUNKS = [
    # chunk_id, text, status, acl
    ("tienda#0", "La garantía de la lavadora Nimbus dura dos años. Cubre piezas y mano de obra.",
     "active", []),
    ("tienda#1", "Los pedidos se envían en un plazo de tres días laborables.", "active", []),
    ("tienda#2", "La garantía de la lavadora Nimbus dura cinco años.", "withdrawn", []),
    ("rrhh#0", "Las vacaciones del personal son veintidós días hábiles al año.", "active", ["rrhh"]),
]
QUESTIONS = [
    # question_id, question, user_groups
    ("q1", "¿Cuántos años dura la garantía de la lavadora Nimbus?", []),
    ("q2", "¿Cuántos días de vacaciones tiene el personal?", []),
    ("q3", "¿Cuántos días de vacaciones tiene el personal?", ["rrhh"]),
    ("q4", "¿Qué color tiene el logotipo de la empresa?", ["rrhh"]),
]
SYSTEM = {
    "name": "bm25_extractive",
    "retriever": {"type": "bm25", "language": "spanish", "stopwords": "es", "k": 10},
    "generator": {"type": "extractive", "abstain_threshold": 0.4, "context_k": 3},
    "prompt_version": "none",
}


def snapshot(chunks=CHUNKS) -> pl.DataFrame:
    rows = [
        {
            "chunk_id": cid, "doc_id": cid.split("#")[0], "chunk_index": int(cid.split("#")[1]),
            "text": text, "title": cid.split("#")[0], "source": "test", "doc_type": "manual",
            "language": "es", "status": status, "replaced_by": None, "acl": acl,
            "valid_from": None, "valid_to": None,
            "sha256": hashlib.sha256(text.encode()).hexdigest(),
        }
        for cid, text, status, acl in chunks
    ]
    return tables.conform(pl.DataFrame(rows, schema=tables.SCHEMAS["corpus_snapshot"]), "corpus_snapshot")


def golden(questions=QUESTIONS) -> pl.DataFrame:
    rows = [
        {
            "question_id": qid, "golden_version": "g1", "question": q, "answerability": "answerable",
            "relevant": [], "reference_answer": None, "claims": [], "split": "test",
            "segments": [], "user_groups": groups,
        }
        for qid, q, groups in questions
    ]
    return tables.conform(pl.DataFrame(rows, schema=tables.SCHEMAS["golden_set"]), "golden_set")


def run(system=SYSTEM, snap=None, gold=None) -> pl.DataFrame:
    return run_reference_system(
        snapshot() if snap is None else snap, golden() if gold is None else gold, system, "c1", "g1"
    )


def by_qid(df: pl.DataFrame) -> dict[str, dict]:
    return {r["question_id"]: r for r in df.iter_rows(named=True)}


# ------------------------------------------------------------------ the extractive answerer


def test_split_sentences_are_verbatim_substrings():
    text = "Dura dos años. ¿Y el envío? Tres días.\nNueva línea (p. ej. aquí) sigue. 3 piezas."
    spans = split_sentences(text)
    sents = [text[a:b] for a, b in spans]
    assert sents == ["Dura dos años.", "¿Y el envío?", "Tres días.", "Nueva línea (p. ej. aquí) sigue.",
                     "3 piezas."]
    assert split_sentences("") == [] and split_sentences("   ") == []


def test_answers_above_threshold_with_a_literal_quote():
    a = ExtractiveAnswerer(abstain_threshold=0.5)
    chunks = [("c1", "Returns are free. Product A may be returned within 30 days."),
              ("c2", "Shipping takes two days.")]
    res = a.answer("How many days to return product A?", chunks)
    assert res.decision == "answer"
    assert res.answer == "Product A may be returned within 30 days."
    assert res.answer in chunks[0][1]
    assert res.citations == ["c1"]
    # question terms {day, return, product} ("how", "many", "to" are stopwords, "A" is one letter)
    assert res.evidence == pytest.approx(1.0)


def test_abstains_below_threshold():
    a = ExtractiveAnswerer(abstain_threshold=0.4)
    chunks = [("c1", "Product A may be returned within 30 days.")]
    # terms {long, warranti, product}; only "product" is covered: 1/3 < 0.4
    res = a.answer("How long is the warranty of product B?", chunks)
    assert res.decision == "abstain"
    assert res.answer is None and res.citations == []
    assert 0 < res.evidence < 0.4
    # the same question answers when the threshold is lowered under its evidence
    low = ExtractiveAnswerer(abstain_threshold=res.evidence)
    assert low.answer("How long is the warranty of product B?", chunks).decision == "answer"


def test_abstains_without_context_or_content_terms_and_never_clarifies():
    a = ExtractiveAnswerer()
    assert a.answer("What is the refund period?", []).decision == "abstain"
    assert a.answer("What is it?", [("c", "It is what it is.")]).decision == "abstain"  # all stopwords
    assert "never produces the decision \"clarify\"" in extractive.__doc__
    for q in ("Can I return it?", "Which one?", "Product A return days?"):
        assert a.answer(q, [("c", "Product A may be returned within 30 days.")]).decision in (
            "answer", "abstain")


def test_context_k_and_tie_order():
    a = ExtractiveAnswerer(abstain_threshold=0.1, context_k=1)
    chunks = [("c1", "Cats purr."), ("c2", "Cats purr loudly at night.")]
    res = a.answer("Do cats purr at night?", chunks)
    assert res.citations == ["c1"]  # c2 is beyond context_k
    a2 = ExtractiveAnswerer(abstain_threshold=0.1, context_k=2)
    assert a2.answer("Do cats purr?", chunks).citations == ["c1"]  # tie -> higher-ranked chunk
    assert a2.answer("Do cats purr at night?", chunks).citations == ["c2"]


def test_max_sentences_adds_new_terms_only():
    a = ExtractiveAnswerer(abstain_threshold=0.1, max_sentences=2)
    chunks = [("c1", "Warranty lasts two years. Warranty covers parts."), ("c2", "Labour is covered too.")]
    res = a.answer("Does the warranty cover labour?", chunks)
    assert res.answer.split(" ")[0] == "Warranty"
    assert res.citations[-1] == "c2" and "Labour is covered too." in res.answer


@pytest.mark.parametrize("kw", [{"abstain_threshold": 1.5}, {"abstain_threshold": -0.1},
                                {"context_k": 0}, {"max_sentences": 0}, {"language": "klingon"},
                                {"stopwords": "xx"}])
def test_answerer_bad_config(kw):
    with pytest.raises(ConfigError):
        ExtractiveAnswerer(**kw)


# ------------------------------------------------------------------ run_reference_system


def test_run_schema_manifest_and_answers():
    df = run()
    assert df.schema == tables.SCHEMAS["rag_runs"]
    assert df["question_id"].to_list() == ["q1", "q2", "q3", "q4"]
    rows = by_qid(df)
    q1 = rows["q1"]
    assert q1["decision"] == "answer"
    assert q1["answer"] == "La garantía de la lavadora Nimbus dura dos años."
    assert q1["citations"] == ["tienda#0"]
    assert q1["retrieved"][0] == {"chunk_id": "tienda#0", "score": q1["retrieved"][0]["score"], "rank": 1}
    assert [h["rank"] for h in q1["retrieved"]] == list(range(1, len(q1["retrieved"]) + 1))
    assert all(h["score"] > 0 for r in rows.values() for h in r["retrieved"])
    for r in rows.values():
        assert r["system"] == "bm25_extractive"
        assert (r["corpus_version"], r["golden_version"]) == ("c1", "g1")
        assert (r["model"], r["prompt_version"]) == ("none", "none")
        assert r["generator"].startswith("extractive-v1 ")
        assert json.loads(r["generator"].split(" ", 1)[1])["abstain_threshold"] == 0.4
        assert r["decision"] in ("answer", "abstain")
        assert (r["error"] is None) == (r["decision"] != "error")
    cfg = json.loads(q1["retriever"])
    assert q1["retriever"] == json.dumps(cfg, sort_keys=True)
    assert cfg["type"] == "bm25" and cfg["language"] == "spanish" and cfg["k"] == 10
    assert cfg["index_status"] == ["active"]


def test_withdrawn_chunks_are_not_indexed_unless_asked():
    assert all(h["chunk_id"] != "tienda#2" for r in run().iter_rows(named=True) for h in r["retrieved"])
    sys2 = {**SYSTEM, "retriever": {**SYSTEM["retriever"], "index_status": ["active", "withdrawn"]}}
    ids = [h["chunk_id"] for h in by_qid(run(sys2))["q1"]["retrieved"]]
    assert "tienda#2" in ids


def test_acl_never_leaks_a_restricted_chunk():
    rows = by_qid(run())
    # q2 has no group: the HR chunk is invisible, so it cannot answer from it
    assert all(h["chunk_id"] != "rrhh#0" for h in rows["q2"]["retrieved"])
    assert "rrhh#0" not in rows["q2"]["citations"]
    assert rows["q2"]["decision"] == "abstain"
    # q3 asks the same as a member of "rrhh"
    assert rows["q3"]["retrieved"][0]["chunk_id"] == "rrhh#0"
    assert rows["q3"]["decision"] == "answer" and rows["q3"]["citations"] == ["rrhh#0"]


def test_absent_answer_abstains():
    assert by_qid(run())["q4"]["decision"] == "abstain"


def test_per_question_error_does_not_abort(monkeypatch):
    real = ExtractiveAnswerer.answer

    def flaky(self, question, chunks):
        if "vacaciones" in question:
            raise RuntimeError("boom")
        return real(self, question, chunks)

    monkeypatch.setattr(ExtractiveAnswerer, "answer", flaky)
    rows = by_qid(run())
    assert rows["q2"]["decision"] == "error" and "boom" in rows["q2"]["error"]
    assert rows["q2"]["answer"] is None and rows["q2"]["citations"] == []
    assert rows["q2"]["retrieved"]  # what was retrieved before the failure is kept
    assert rows["q3"]["decision"] == "error" and rows["q3"]["retrieved"]
    assert rows["q1"]["decision"] == "answer"


def test_empty_index_abstains_everywhere():
    snap = snapshot([c for c in CHUNKS if c[2] != "active"])
    df = run(snap=snap)
    assert df["decision"].to_list() == ["abstain"] * 4
    assert all(r == [] for r in df["retrieved"].to_list())


def test_empty_golden_gives_empty_table():
    df = run(gold=golden([]))
    assert df.height == 0 and df.schema == tables.SCHEMAS["rag_runs"]


@pytest.mark.parametrize("bad", [
    {**SYSTEM, "name": ""},
    {**SYSTEM, "extra": 1},
    {**SYSTEM, "retriever": {"type": "sparse"}},
    {**SYSTEM, "retriever": {"type": "bm25", "kk": 3}},
    {**SYSTEM, "retriever": {"type": "bm25", "k": 0}},
    {**SYSTEM, "retriever": {"type": "bm25", "index_status": ["archived"]}},
    {**SYSTEM, "generator": {"type": "llm"}},
    {**SYSTEM, "generator": {"type": "extractive", "abstain_threshold": 2}},
])
def test_bad_system_config(bad):
    with pytest.raises(ConfigError):
        run(bad)


def test_resolved_config_defaults():
    cfg = resolve_retriever_config({"type": "hybrid", "k": 5})
    assert cfg["stopwords"] == "en" and cfg["k_rrf"] == 60 and cfg["depth"] == 100
    assert cfg["model"] == "all-MiniLM-L6-v2"


def test_dense_without_sentence_transformers_is_a_config_error(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setattr("rag_eval_pipeline.core.reference_system._ENCODERS", {})
    with pytest.raises(ConfigError, match=r"\[dense\]"):
        run({**SYSTEM, "retriever": {"type": "dense"}})


@pytest.mark.parametrize("rtype", ["dense", "hybrid"])
def test_dense_and_hybrid_systems(rtype):
    pytest.importorskip("sentence_transformers")
    system = {**SYSTEM, "name": rtype,
              "retriever": {"type": rtype, "language": "spanish", "k": 3}}
    rows = by_qid(run(system))
    assert rows["q1"]["retrieved"][0]["chunk_id"] == "tienda#0"
    assert rows["q1"]["decision"] == "answer"
    assert all(h["chunk_id"] != "rrhh#0" for h in rows["q2"]["retrieved"])
    assert all(len(r["retrieved"]) <= 3 for r in rows.values())
    assert json.loads(rows["q1"]["retriever"])["type"] == rtype
