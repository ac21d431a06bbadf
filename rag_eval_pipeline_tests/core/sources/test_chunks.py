"""``corpus.source: chunks``: a team's own chunks (and ids), read as they are into the snapshot."""

import datetime as dt
import hashlib
import json

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.corpus import corpus_version
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot
from rag_eval_pipeline.core.sources.chunks import load_chunks
from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

ROWS = [
    {"chunk_id": "kb-0007", "doc_id": "returns", "text": "Returns are accepted within 30 days.", "position": 1,
     "title": "Returns policy", "language": "en", "doc_type": "policy", "acl": ["customers", "staff"],
     "valid_from": "2025-01-01"},
    {"chunk_id": "kb-0003", "doc_id": "returns", "text": "Keep the receipt.\r\nIt is needed.", "position": 0,
     "title": "Returns policy", "language": "en", "doc_type": "policy"},
    {"chunk_id": "kb-0100", "doc_id": "old-returns", "text": "Returns within 14 days.", "status": "replaced",
     "replaced_by": "returns", "metadata": {"owner": "support"}},
    {"chunk_id": "kb-0101", "doc_id": "old-returns", "text": "Second part of the old policy."},
]


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_registered_as_a_source_that_is_a_file_chunked_already_without_questions(tmp_path):
    source = CORPUS_SOURCES.get("chunks")
    assert (source.path_is, source.own_questions) == ("file", False)
    path = write_jsonl(tmp_path / "chunks.jsonl", ROWS)
    assert source.snapshot(path).equals(load_chunks(path))  # the snapshot itself: nothing is chunked


def test_team_ids_kept_positions_and_metadata_read(tmp_path):
    snap = load_chunks(write_jsonl(tmp_path / "chunks.jsonl", ROWS))
    assert snap.schema == tables.SCHEMAS["corpus_snapshot"]
    # sorted by doc_id, then position (old-returns has none: file order)
    assert snap["chunk_id"].to_list() == ["kb-0100", "kb-0101", "kb-0003", "kb-0007"]
    assert snap["chunk_index"].to_list() == [0, 1, 0, 1]
    r = snap.row(3, named=True)
    assert (r["doc_id"], r["title"], r["language"], r["doc_type"], r["status"]) == (
        "returns", "Returns policy", "en", "policy", "active")
    assert r["acl"] == ["customers", "staff"] and r["valid_from"] == dt.date(2025, 1, 1) and r["valid_to"] is None
    assert r["sha256"] == hashlib.sha256(b"Returns are accepted within 30 days.").hexdigest()
    old = snap.row(0, named=True)
    assert (old["status"], old["replaced_by"], old["title"], old["source"]) == (
        "replaced", "returns", "old-returns", "chunks.jsonl")  # title defaults to the doc_id
    assert snap.row(2, named=True)["text"] == "Keep the receipt.\nIt is needed."  # CRLF repaired


def test_version_is_the_content_hash_whatever_the_order_or_format(tmp_path):
    for sub in ("a", "b", "c"):
        (tmp_path / sub).mkdir()
    a = load_chunks(write_jsonl(tmp_path / "a" / "chunks.jsonl", ROWS))
    # documents in another order, and chunks with a position in another order: the same snapshot
    b = load_chunks(write_jsonl(tmp_path / "b" / "chunks.jsonl", ROWS[2:] + [ROWS[1], ROWS[0]]))
    assert b.equals(a) and corpus_version(a) == corpus_version(b)
    parquet = tmp_path / "a.parquet"
    pl.DataFrame(ROWS, infer_schema_length=None).drop("metadata").write_parquet(parquet)
    c = load_chunks(parquet)
    assert c.drop("source").equals(a.drop("source"))
    changed = [dict(ROWS[0], text="Returns are accepted within 31 days.")] + ROWS[1:]
    assert corpus_version(load_chunks(write_jsonl(tmp_path / "c" / "chunks.jsonl", changed))) != corpus_version(a)


@pytest.mark.parametrize("edit, line, field, message", [
    (lambda rows: rows[1].pop("text"), 2, "text", "missing; expected a string"),
    (lambda rows: rows[2].update(chunk_id="kb-0007"), 3, "chunk_id", "appears twice (first on line 1)"),
    (lambda rows: rows[3].update(position=5), 3, "position", "position given on some of its chunks"),
    (lambda rows: rows[1].update(position=1), 2, "position", "position 1 repeated (also line 1)"),
    (lambda rows: rows[2].update(replaced_by="nowhere"), 3, "replaced_by", "is not a doc_id of this file"),
    (lambda rows: rows[0].update(status="gone"), 1, "status", "unknown value 'gone'"),
    (lambda rows: rows[0].update(chunk_id="kb 0007"), 1, "chunk_id", "contains whitespace"),
    (lambda rows: rows[0].update(embedding=[0.1]), 1, "embedding", "unknown field(s) ['embedding']"),
    (lambda rows: rows[0].update(valid_to="2024-12-31"), 1, "valid_to", "is before valid_from"),
    (lambda rows: rows[0].update(valid_from="2025-02-30"), 1, "valid_from", "expected an ISO date"),
    (lambda rows: rows[0].update(position=-1), 1, "position", "expected a whole number >= 0"),
])
def test_bad_chunks_name_file_line_and_field(tmp_path, edit, line, field, message):
    rows = [dict(r) for r in ROWS]
    edit(rows)
    path = write_jsonl(tmp_path / "chunks.jsonl", rows)
    with pytest.raises(InputError) as info:
        load_chunks(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), line, field), str(err)
    assert message in str(err)


def _config(tmp_path, corpus: dict, golden: bool = True) -> dict:
    cfg = {"corpus": corpus, "systems": [{"name": "s", "kind": "logged", "path": "log.jsonl"}]}
    if golden:
        cfg["golden"] = {"path": "golden.jsonl"}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_configuration_of_a_chunks_corpus(tmp_path):
    write_jsonl(tmp_path / "chunks.jsonl", ROWS)
    golden = [{"question_id": "q1", "question": "How long for returns?", "answerability": "answerable",
               "relevant": ["kb-0007"], "split": "test"}]
    write_jsonl(tmp_path / "golden.jsonl", golden)
    cfg = load_config(_config(tmp_path, {"source": "chunks", "path": "chunks.jsonl"}))
    snapshot, version = build_snapshot(cfg)
    assert version == corpus_version(load_chunks(tmp_path / "chunks.jsonl"))
    assert build_golden(cfg, snapshot)["relevant"].to_list() == [[{"chunk_id": "kb-0007", "grade": 1}]]
    with pytest.raises(ConfigError, match="corpus.path .*: file not a file"):
        load_config(_config(tmp_path, {"source": "chunks", "path": "."}))
    with pytest.raises(ConfigError, match="corpus.chunking does not apply to corpus.source chunks"):
        load_config(_config(tmp_path, {"source": "chunks", "path": "chunks.jsonl", "chunking": {"max_chars": 10}}))
    with pytest.raises(ConfigError, match="missing key golden.path"):
        load_config(_config(tmp_path, {"source": "chunks", "path": "chunks.jsonl"}, golden=False))
