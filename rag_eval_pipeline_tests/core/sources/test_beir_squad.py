"""BEIR and SQuAD 2.0 readers (core/sources/beir.py, squad.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA, chunk_documents
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.beir import load_beir
from rag_eval_pipeline.core.sources.golden import GOLDEN_RAW_SCHEMA, validate_golden
from rag_eval_pipeline.core.sources.squad import load_squad_v2, squad_split


def make_beir(root: Path, qrels: str) -> Path:
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "T1", "text": "Uno."}, {"_id": "d2", "title": "Solo título", "text": ""}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n", encoding="utf-8")
    qs = [{"_id": "1", "text": "¿uno?"}, {"_id": "2", "text": "¿dos?"}, {"_id": "3", "text": "¿tres?"}]
    (root / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in qs) + "\n", encoding="utf-8")
    (root / "qrels" / "test.tsv").write_text(qrels, encoding="utf-8")
    return root


def test_small_beir_folder(tmp_path):
    root = make_beir(tmp_path / "mini", "query-id\tcorpus-id\tscore\n2\td1\t1\n2\td2\t2\n1\td2\t0\n")
    docs, raw = load_beir(root)
    assert docs.schema == DOCUMENTS_SCHEMA and raw.schema == GOLDEN_RAW_SCHEMA
    assert docs["text"].to_list() == ["Uno.", "Solo título"]
    assert raw["question_id"].to_list() == ["2"]  # query 1 only has a score-0 row; query 3 is not judged
    assert raw.row(0, named=True)["relevant"] == [{"chunk_id": "d1#0", "grade": 1}, {"chunk_id": "d2#0", "grade": 2}]
    assert raw["split"].to_list() == ["test"] and raw["segments"].to_list() == [["source=beir"]]
    snap = chunk_documents(docs, strategy="document")
    assert validate_golden(raw, snap, root).height == 1


@pytest.mark.parametrize("qrels,line,field", [
    ("query-id\tcorpus-id\tscore\n1\td9\t1\n", 2, "corpus-id"),
    ("query-id\tcorpus-id\tscore\n9\td1\t1\n", 2, "query-id"),
    ("query-id\tcorpus-id\tscore\n1\td1\tyes\n", 2, "score"),
    ("query-id\tcorpus-id\tscore\n1\td1\n", 2, "qrels"),
    ("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td1\t1\n", 3, "corpus-id"),
])
def test_bad_beir_qrels(tmp_path, qrels, line, field):
    root = make_beir(tmp_path / "mini", qrels)
    with pytest.raises(InputError) as exc:
        load_beir(root)
    err = exc.value
    assert err.path == str(root / "qrels" / "test.tsv") and err.line == line and err.field == field
    assert f"line {line}" in str(err) and "expected" in str(err)


def test_missing_beir_split(tmp_path):
    root = make_beir(tmp_path / "mini", "query-id\tcorpus-id\tscore\n")
    with pytest.raises(InputError, match="qrels file not found"):
        load_beir(root, split="dev")


def test_scifact_test_split(datasets_dir):
    docs, raw = load_beir(datasets_dir / "scifact_beir", split="test")
    assert docs.height == 5183
    assert raw.height == 300
    rel = raw.explode("relevant").unnest("relevant")
    assert rel.height == 339
    assert rel["chunk_id"].str.ends_with("#0").all() and (rel["grade"] == 1).all()
    assert set(raw["answerability"]) == {"answerable"} and set(raw["split"]) == {"test"}
    snap = chunk_documents(docs, strategy="document")
    assert snap.height == 5183
    golden = validate_golden(raw, snap, datasets_dir / "scifact_beir")
    assert golden.height == 300


def test_scifact_train_split_is_dev(datasets_dir):
    _, raw = load_beir(datasets_dir / "scifact_beir", split="train")
    assert raw.height == 809 and set(raw["split"]) == {"dev"}


def test_squad_v2_subset(datasets_dir):
    path = datasets_dir / "squad_v2_dev" / "official_ids_subset" / "dev-v2.0.json"
    docs, raw = load_squad_v2(path)
    assert docs.height == 87
    assert raw.height == 626
    counts = dict(zip(*raw["answerability"].value_counts().to_dict(as_series=False).values()))
    assert counts == {"absent": 333, "answerable": 293}
    absent = raw.filter(pl.col("answerability") == "absent")
    assert (absent["relevant"].list.len() == 0).all()
    assert absent["segments"].list.eval(pl.element().str.starts_with("near_paragraph=")).list.any().all()
    answerable = raw.filter(pl.col("answerability") == "answerable")
    assert (answerable["relevant"].list.len() == 1).all()
    assert answerable["reference_answer"].is_not_null().all()
    first = raw.row(0, named=True)
    assert first["question_id"] == "56ddde6b9a695914005b9628"
    assert first["relevant"] == [{"chunk_id": "Normans_p0#0", "grade": 1}]
    assert first["reference_answer"] == "France"
    assert "title=Normans" in first["segments"]
    n_dev = raw.filter(pl.col("split") == "dev").height
    assert 0.4 * 626 < n_dev < 0.6 * 626
    for cls in ("absent", "answerable"):
        assert set(raw.filter(pl.col("answerability") == cls)["split"]) == {"dev", "test"}
    assert load_squad_v2(path)[1].equals(raw)
    assert load_squad_v2(path, split_seed=1)[1]["split"].to_list() != raw["split"].to_list()
    snap = chunk_documents(docs, strategy="document")
    assert validate_golden(raw, snap, path).height == 626


def test_squad_split_is_deterministic():
    assert squad_split("abc") == squad_split("abc")
    assert {squad_split(str(i)) for i in range(20)} == {"dev", "test"}


def _squad(path: Path, qas: list[dict]) -> Path:
    path.write_text(json.dumps({"version": "v2.0", "data": [
        {"title": "Art", "paragraphs": [{"context": "Texto del párrafo.", "qas": qas}]}]}), encoding="utf-8")
    return path


def test_squad_hostile_inputs(tmp_path):
    bad = _squad(tmp_path / "a.json", [{"id": "x", "question": "q?", "answers": [{"text": "t", "answer_start": 0}],
                                        "is_impossible": True}])
    with pytest.raises(InputError) as exc:
        load_squad_v2(bad)
    assert exc.value.field == "data[0].paragraphs[0].qas[0].answers" and str(bad) in str(exc.value)
    bad = _squad(tmp_path / "b.json", [{"id": "x", "question": "q?", "answers": [], "is_impossible": False}])
    with pytest.raises(InputError, match="without answer text"):
        load_squad_v2(bad)
    bad = _squad(tmp_path / "c.json", [{"id": "x", "question": "q?", "answers": [], "is_impossible": True},
                                       {"id": "x", "question": "q2?", "answers": [], "is_impossible": True}])
    with pytest.raises(InputError, match="repeated"):
        load_squad_v2(bad)
    (tmp_path / "d.json").write_text('{"data": [', encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_squad_v2(tmp_path / "d.json")
    assert exc.value.field == "json" and exc.value.line == 1
