"""Imported RAG run logs (core/sources/run_logs.py)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.corpus import chunk_documents, corpus_version
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.documents import load_documents_dir
from rag_eval_pipeline.core.sources.golden import load_golden, validate_golden
from rag_eval_pipeline.core.sources.run_logs import load_run_log

CV, GV = "c" * 64, "g" * 64


def rec(qid="q1", **kw) -> dict:
    out = {"question_id": qid,
           "retrieved": [{"chunk_id": "a#0", "score": 0.9, "rank": 1}, {"chunk_id": "a#1", "score": 0.5, "rank": 2}],
           "decision": "answer", "answer": "30 días.", "citations": ["a#0"]}
    out.update(kw)
    return out


def write(path: Path, lines: list) -> Path:
    text = "\n".join(item if isinstance(item, str) else json.dumps(item) for item in lines) + "\n"
    path.write_text(text, encoding="utf-8")
    return path


def load(path: Path, system="team"):
    return load_run_log(path, system, CV, GV)


def error(path: Path) -> InputError:
    with pytest.raises(InputError) as exc:
        load(path)
    return exc.value


def assert_names(err: InputError, file: Path, line: int, field: str) -> None:
    msg = str(err)
    assert err.path == str(file) and str(file) in msg
    assert err.line == line and f"line {line}" in msg
    assert err.field == field and repr(field) in msg
    assert "expected" in msg


def test_reads_a_log(tmp_path):
    f = write(tmp_path / "r.jsonl", [
        rec(model="m1", prompt_version="v7", retriever={"k": 5, "type": "bm25"}, generator="g", system="team",
            corpus_version=CV, golden_version=GV, metadata={"latency_ms": 12}),
        rec("q2", retrieved=[], decision="abstain", answer=None, citations=[]),
        rec("q3", retrieved=[], decision="error", answer=None, citations=[], error="timeout"),
    ])
    runs = load(f)
    assert runs.columns == list(tables.SCHEMAS["rag_runs"])
    assert runs["question_id"].to_list() == ["q1", "q2", "q3"]
    assert runs["system"].unique().to_list() == ["team"]
    assert runs["corpus_version"].unique().to_list() == [CV]
    assert runs["golden_version"].unique().to_list() == [GV]
    row = runs.row(0, named=True)
    assert row["retriever"] == '{"k":5,"type":"bm25"}' and row["model"] == "m1"
    assert row["retrieved"] == [{"chunk_id": "a#0", "score": 0.9, "rank": 1},
                                {"chunk_id": "a#1", "score": 0.5, "rank": 2}]
    assert runs.row(1, named=True)["retrieved"] == []
    assert runs.row(2, named=True)["error"] == "timeout"


def test_rank_defaults_to_list_order_and_hits_sort_by_rank(tmp_path):
    f = write(tmp_path / "r.jsonl", [
        rec(retrieved=[{"chunk_id": "b#0"}, "c#0"]),
        rec("q2", retrieved=[{"chunk_id": "x#0", "score": 0.1, "rank": 3},
                             {"chunk_id": "y#0", "score": 0.9, "rank": 1}]),
    ])
    runs = load(f)
    assert runs.row(0, named=True)["retrieved"] == [{"chunk_id": "b#0", "score": None, "rank": 1},
                                                   {"chunk_id": "c#0", "score": None, "rank": 2}]
    assert [h["chunk_id"] for h in runs.row(1, named=True)["retrieved"]] == ["y#0", "x#0"]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_score(tmp_path, token):
    line = json.dumps(rec("q2")).replace('"score": 0.5', f'"score": {token}')
    f = write(tmp_path / "r.jsonl", [rec(), line])
    err = error(f)
    assert_names(err, f, 2, "retrieved[1].score")
    assert "finite" in str(err)


def test_cut_off_mid_line(tmp_path):
    f = tmp_path / "r.jsonl"
    f.write_text(json.dumps(rec()) + "\n" + json.dumps(rec("q2"))[:55], encoding="utf-8")
    err = error(f)
    assert_names(err, f, 2, "json")
    assert "cut off" in str(err)


def test_malformed_line_in_the_middle(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(), "{not json", rec("q3")])
    assert_names(error(f), f, 2, "json")


def test_same_chunk_twice(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(retrieved=[{"chunk_id": "a#0", "rank": 1}, {"chunk_id": "a#0", "rank": 2}])])
    err = error(f)
    assert_names(err, f, 1, "retrieved[1].chunk_id")
    assert "twice" in str(err)


@pytest.mark.parametrize("ranks,field", [
    ([0, 1], "retrieved[0].rank"),
    ([1, -2], "retrieved[1].rank"),
    ([1, 1], "retrieved[1].rank"),
    ([1.5, 2], "retrieved[0].rank"),
    ([1, None], "retrieved[1].rank"),
])
def test_bad_ranks(tmp_path, ranks, field):
    hits = [{"chunk_id": f"a#{i}", **({"rank": r} if r is not None else {})} for i, r in enumerate(ranks)]
    f = write(tmp_path / "r.jsonl", [rec(retrieved=hits)])
    assert_names(error(f), f, 1, field)


def test_unknown_decision(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(), rec("q2", decision="refuse")])
    err = error(f)
    assert_names(err, f, 2, "decision")
    assert "abstain" in str(err)


def test_missing_required_fields(tmp_path):
    r = rec()
    del r["retrieved"]
    f = write(tmp_path / "r.jsonl", [r])
    assert_names(error(f), f, 1, "retrieved")
    r = rec()
    del r["decision"]
    f = write(tmp_path / "r2.jsonl", [r])
    assert_names(error(f), f, 1, "decision")


def test_answer_decision_needs_text_and_error_needs_error_decision(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(answer="  ")])
    assert_names(error(f), f, 1, "answer")
    f = write(tmp_path / "r2.jsonl", [rec(error="boom")])
    assert_names(error(f), f, 1, "error")


def test_corpus_version_mismatch_names_both(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(corpus_version="old123")])
    err = error(f)
    assert_names(err, f, 1, "corpus_version")
    assert "old123" in str(err) and CV in str(err)


def test_golden_version_and_system_mismatch(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(golden_version="old")])
    assert_names(error(f), f, 1, "golden_version")
    f = write(tmp_path / "r2.jsonl", [rec(system="other")])
    err = error(f)
    assert_names(err, f, 1, "system")
    assert "'other'" in str(err) and "'team'" in str(err)


def test_duplicate_question_and_unknown_field(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(), rec()])
    err = error(f)
    assert_names(err, f, 2, "question_id")
    assert "line 1" in str(err)
    f = write(tmp_path / "r2.jsonl", [rec(retreived=[])])
    assert_names(error(f), f, 1, "retreived")


def test_parquet_log(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(), rec("q2", decision="clarify", answer="¿Cuál?")])
    runs = load(f)
    pq = tmp_path / "r.parquet"
    runs.drop("corpus_version", "golden_version").write_parquet(pq)
    assert load(pq).equals(runs)
    bad = runs.with_columns(pl.lit("maybe").alias("decision")).drop("corpus_version", "golden_version")
    bad.write_parquet(tmp_path / "bad.parquet")
    assert_names(error(tmp_path / "bad.parquet"), tmp_path / "bad.parquet", 1, "decision")


def test_unsupported_suffix(tmp_path):
    f = tmp_path / "r.csv"
    f.write_text("x", encoding="utf-8")
    with pytest.raises(InputError, match="unsupported file type"):
        load(f)


def test_sample_team_log(sample_dir):
    snap = chunk_documents(load_documents_dir(sample_dir / "corpus"))
    golden = validate_golden(load_golden(sample_dir / "golden.jsonl"), snap, sample_dir / "golden.jsonl")
    cv, gv = corpus_version(snap), golden["golden_version"][0]
    runs = load_run_log(sample_dir / "runs" / "team_rag.jsonl", "team_rag", cv, gv)
    assert set(runs["question_id"]) == set(golden["question_id"])
    decisions = runs["decision"].value_counts()
    counts = dict(zip(decisions["decision"], decisions["count"]))
    assert counts["error"] == 1 and counts["clarify"] >= 1 and counts["abstain"] >= 3
    chunk_ids = set(snap["chunk_id"])
    for hits, cites in zip(runs["retrieved"].to_list(), runs["citations"].to_list()):
        assert all(h["chunk_id"] in chunk_ids for h in hits)
        assert set(cites) <= chunk_ids
    assert runs.filter(pl.col("retrieved").list.len() == 0).height >= 1


# ------------------------------------------------------------------ values in range, ids in NFC

NFC_ID = "gu\u00eda#0"   # 'guía#0' with the precomposed í (U+00ED)
NFD_ID = "gui\u0301a#0"  # the same text with i + combining acute (U+0069 U+0301)


def test_rank_beyond_int32_is_refused_where_it_is_read(tmp_path):
    # 2147483648 = 2**31 does not fit the Int32 rank column (it used to become null and be written)
    f = write(tmp_path / "r.jsonl", [rec(), rec("q2", retrieved=[{"chunk_id": "a#0", "rank": 2147483648}])])
    err = error(f)
    assert_names(err, f, 2, "retrieved[0].rank")
    assert "got 2147483648" in str(err) and "<= 2147483647" in str(err)


def test_rank_at_the_int32_maximum_is_kept_exactly(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(retrieved=[{"chunk_id": "a#0", "rank": 2147483647},
                                                    {"chunk_id": "a#1", "rank": 1}])])
    hits = load(f)["retrieved"][0].to_list()
    assert [(h["chunk_id"], h["rank"]) for h in hits] == [("a#1", 1), ("a#0", 2147483647)]


def test_score_beyond_a_float_is_refused_with_a_short_message(tmp_path):
    f = tmp_path / "r.jsonl"
    line = json.dumps(rec(retrieved=[{"chunk_id": "a#0", "score": 0.5, "rank": 1}])).replace("0.5", "9" * 500)
    f.write_text(line + "\n", encoding="utf-8")
    err = error(f)
    assert_names(err, f, 1, "retrieved[0].score")
    assert "an integer of 500 digits" in str(err) and len(str(err)) < 400


def test_nfd_chunk_and_question_ids_are_read_as_nfc(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec("q\u0301", retrieved=[{"chunk_id": NFD_ID, "rank": 1}], citations=[NFD_ID])])
    runs = load_run_log(f, "team", CV, GV, known_chunks={NFC_ID})  # the snapshot holds the NFC id
    assert runs["question_id"].to_list() == ["q\u0301"]  # no precomposed form exists: NFC keeps it
    assert runs["retrieved"][0].to_list()[0]["chunk_id"] == NFC_ID
    assert runs["citations"][0].to_list() == [NFC_ID]


def test_nfd_question_id_is_stored_as_nfc(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec("pregunta-gui\u0301a")])
    assert load(f)["question_id"].to_list() == ["pregunta-gu\u00eda"]


def test_nfc_and_nfd_twins_are_one_chunk_twice_with_code_points(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(retrieved=[{"chunk_id": NFC_ID, "rank": 1}, {"chunk_id": NFD_ID, "rank": 2}])])
    err = error(f)
    assert_names(err, f, 1, "retrieved[1].chunk_id")
    msg = str(err)
    assert "retrieved twice" in msg and "differ only in Unicode normalisation" in msg
    assert "U+00ED" in msg and "U+0069 U+0301" in msg


def test_question_logged_in_nfc_and_nfd_is_logged_twice(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec("gu\u00eda"), rec("gui\u0301a")])
    err = error(f)
    assert_names(err, f, 2, "question_id")
    assert "logged twice (first on line 1)" in str(err) and "U+00ED" in str(err) and "U+0301" in str(err)


def test_citation_twins_are_a_repeat(tmp_path):
    f = write(tmp_path / "r.jsonl", [rec(retrieved=[], citations=[NFC_ID, NFD_ID])])
    err = error(f)
    assert_names(err, f, 1, "citations[1]")
    assert "U+0069 U+0301" in str(err)


def test_a_named_pipe_as_log_is_refused_without_blocking(tmp_path):
    import os

    fifo = tmp_path / "r.jsonl"
    os.mkfifo(fifo)
    err = error(fifo)
    assert "named pipe" in str(err) and err.path == str(fifo)


def test_rank_beyond_int32_in_a_parquet_log_names_the_row(tmp_path):
    f = tmp_path / "r.parquet"
    pl.DataFrame({"question_id": ["q1", "q2"], "decision": ["abstain", "abstain"],
                  "retrieved": [[{"chunk_id": "a#0", "rank": 1}], [{"chunk_id": "a#0", "rank": 2**31}]]},
                 schema={"question_id": pl.Utf8, "decision": pl.Utf8,
                         "retrieved": pl.List(pl.Struct({"chunk_id": pl.Utf8, "rank": pl.Int64}))}).write_parquet(f)
    err = error(f)
    assert_names(err, f, 2, "retrieved[0].rank")
    assert "got 2147483648" in str(err)
