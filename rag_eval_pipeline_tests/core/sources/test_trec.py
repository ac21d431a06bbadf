"""TREC run / qrels and BEIR qrels readers and writers (core/sources/trec.py), on trec_eval's own
test files and on small hand-written files, including the error messages (file, line, field)."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.trec import (
    NO_RETRIEVAL_DOCNO,
    read_beir_qrels,
    read_trec_qrels,
    read_trec_run,
    write_trec_qrels,
    write_trec_run,
)

RUN_SCHEMA = {"system": pl.Utf8, "question_id": pl.Utf8, "chunk_id": pl.Utf8, "score": pl.Float64,
              "rank": pl.Int32}
QRELS_SCHEMA = {"question_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int32}


@pytest.fixture(scope="module")
def fixtures(datasets_dir: Path) -> Path:
    d = datasets_dir / "trec_eval_fixtures" / "test"
    if not d.is_dir():
        pytest.skip(f"{d} not present")
    return d


def test_read_trec_eval_test_files(fixtures: Path) -> None:
    run = read_trec_run(fixtures / "results.test")
    assert dict(run.schema) == RUN_SCHEMA
    assert run.height == 1500 and run["question_id"].n_unique() == 3
    assert run.row(0) == ("STANDARD", "301", "FR940202-2-00150", 2.129133, 104)
    trunc = read_trec_run(fixtures / "results.trunc")  # junk text after the runid is ignored
    assert trunc.height == 584 and set(trunc["system"]) == {"STANDARD"}
    assert trunc.row(0) == ("STANDARD", "301", "FBIS3-27619", 2.138276, 99)
    qrels = read_trec_qrels(fixtures / "qrels.test")
    assert dict(qrels.schema) == QRELS_SCHEMA and qrels.height == 3681
    assert qrels.filter(pl.col("grade") >= 1).group_by("question_id").len().sort("question_id")["len"].to_list() == \
        [474, 77, 10]
    # same judgments plus '#' comment lines; one docno there holds a '#' inside (CR#93E-1860)
    with_comments = read_trec_qrels(fixtures / "qrels.test.with-comments")
    assert with_comments.height == qrels.height
    differ = with_comments.join(qrels, on=["question_id", "chunk_id", "grade"], how="anti")
    assert differ.rows() == [("301", "CR#93E-1860", 0)]
    graded = read_trec_qrels(fixtures / "qrels.rel_level")
    assert sorted(graded["grade"].unique().to_list()) == [-1, 0, 1, 2, 3, 4]
    comment = read_trec_run(fixtures / "results.comment.test", system="x")  # docnos hold '#'
    assert comment.height == 30100 and comment["chunk_id"].str.contains("#").all()
    assert set(comment["system"]) == {"x"}


def test_run_roundtrip(tmp_path: Path) -> None:
    run = pl.DataFrame({
        "system": ["bm25", "bm25", "bm25"], "question_id": ["q1", "q1", "q2"], "chunk_id": ["d#0", "d#1", "e#3"],
        "score": [1 / 3, -2.5e-7, 12.0], "rank": [1, 2, 1],
    }, schema=RUN_SCHEMA)
    path = tmp_path / "run.txt"
    write_trec_run(pl.concat([run, pl.DataFrame({"system": ["bm25"], "question_id": ["q3"], "chunk_id": [None],
                                                 "score": [None], "rank": [None]}, schema=RUN_SCHEMA)]), path)
    assert path.read_text().splitlines()[0] == f"q1 Q0 d#0 1 {1 / 3!r} bm25"
    back = read_trec_run(path)
    # the placeholder row of q3 (nothing retrieved) becomes one line with a docno no qrels judge,
    # so trec_eval evaluates q3 instead of leaving it out
    assert back.head(3).equals(run)
    assert back.row(3) == ("bm25", "q3", NO_RETRIEVAL_DOCNO, 0.0, 1)
    write_trec_run(run, path, run_id="other")
    assert set(read_trec_run(path)["system"]) == {"other"}
    with pytest.raises(InputError, match="whitespace"):
        write_trec_run(run.with_columns(pl.lit("a b").alias("chunk_id")), path)


def test_qrels_roundtrip(tmp_path: Path) -> None:
    qrels = pl.DataFrame({"question_id": ["q1", "q1", "q2"], "chunk_id": ["a", "b", "c"], "grade": [2, -1, 0]},
                         schema=QRELS_SCHEMA)
    path = tmp_path / "qrels.txt"
    write_trec_qrels(pl.concat([qrels, pl.DataFrame({"question_id": ["q3"], "chunk_id": [None], "grade": [None]},
                                                    schema=QRELS_SCHEMA)]), path)
    assert path.read_text() == "q1 0 a 2\nq1 0 b -1\nq2 0 c 0\n"
    assert read_trec_qrels(path).equals(qrels)


def test_blank_comment_and_crlf_lines(tmp_path: Path) -> None:
    p = tmp_path / "run"
    p.write_text("# header comment\n\n1 Q0 a 1 0.5 r\r\n   \n1\tQ0\tb\t2\t  0.25\tr extra fields\n")
    run = read_trec_run(p)
    assert run["chunk_id"].to_list() == ["a", "b"] and run["score"].to_list() == [0.5, 0.25]
    q = tmp_path / "qrels"
    q.write_text("# c\n1 0 a 1\r\n\n1 0 b 0\n")
    assert read_trec_qrels(q)["grade"].to_list() == [1, 0]


@pytest.mark.parametrize("text, line, field, what", [
    ("1 Q0 a 1 0.5 r\n1 Q0 b 2 0.4\n", 2, "runid", "got 5"),
    ("1 Q0 a\n", 1, "rank", "got 3"),
    ("\n\n1 Q0 a 1 high r\n", 3, "score", "'high'"),
    ("1 Q0 a 1 nan r\n", 1, "score", "'nan'"),
    ("1 Q0 a first 0.5 r\n", 1, "rank", "'first'"),
])
def test_run_errors_name_file_line_field(tmp_path: Path, text: str, line: int, field: str, what: str) -> None:
    p = tmp_path / "bad.run"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        read_trec_run(p)
    e = err.value
    assert (e.path, e.line, e.field) == (str(p), line, field)
    assert str(p) in str(e) and f"line {line}" in str(e) and what in str(e)


@pytest.mark.parametrize("text, line, field", [
    ("1 0 a 1\n1 0 b\n", 2, "rel"),
    ("1 0 a 1 extra\n", 1, "rel"),
    ("1 0\n", 1, "docno"),
    ("1 0 a yes\n", 1, "rel"),
])
def test_qrels_errors_name_file_line_field(tmp_path: Path, text: str, line: int, field: str) -> None:
    p = tmp_path / "bad.qrels"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        read_trec_qrels(p)
    assert (err.value.path, err.value.line, err.value.field) == (str(p), line, field)


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_trec_run(tmp_path / "nope")


def test_beir_qrels(tmp_path: Path) -> None:
    p = tmp_path / "test.tsv"
    p.write_text("query-id\tcorpus-id\tscore\nq1\tdoc 1\t1\nq1\td2\t0\n\nq2\td3\t2\n")
    q = read_beir_qrels(p)
    assert dict(q.schema) == QRELS_SCHEMA
    assert q.rows() == [("q1", "doc 1", 1), ("q1", "d2", 0), ("q2", "d3", 2)]
    bad = tmp_path / "bad.tsv"
    bad.write_text("qid\tdocid\trel\nq1\td1\t1\n")
    with pytest.raises(InputError) as err:
        read_beir_qrels(bad)
    assert (err.value.line, err.value.field) == (1, "header")
    bad.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n")
    with pytest.raises(InputError) as err:
        read_beir_qrels(bad)
    assert (err.value.line, err.value.field) == (3, "score")
    bad.write_text("query-id\tcorpus-id\tscore\nq1\td1\t0.5\n")
    with pytest.raises(InputError) as err:
        read_beir_qrels(bad)
    assert (err.value.line, err.value.field) == (2, "score")


def test_document_docnos_only_when_every_document_is_one_chunk() -> None:
    from rag_eval_pipeline.core.sources.trec import document_docnos, with_docnos

    one = pl.DataFrame({"chunk_id": ["a#0", "b#0"], "doc_id": ["a", "b"]})
    two = pl.DataFrame({"chunk_id": ["a#0", "a#1", "b#0"], "doc_id": ["a", "a", "b"]})
    assert document_docnos(two) is None  # a#0 and a#1 would collapse into one docno
    ids = document_docnos(one)
    run = pl.DataFrame({"system": ["s", "s", "s"], "question_id": ["q1", "q1", "q2"], "chunk_id": ["b#0", "a#0", None],
                        "score": [2.0, 1.0, None], "rank": [1, 2, None]}, schema=RUN_SCHEMA)
    mapped = with_docnos(run, ids)
    assert mapped["chunk_id"].to_list() == ["b", "a", None] and mapped.columns == run.columns
    assert with_docnos(run, None).equals(run)
    with pytest.raises(InputError, match="'c#0' is not in the snapshot"):
        with_docnos(run.with_columns(pl.lit("c#0").alias("chunk_id")), ids)


def test_reserved_docno_is_refused(tmp_path: Path) -> None:
    run = pl.DataFrame({"system": ["s"], "question_id": ["q1"], "chunk_id": [NO_RETRIEVAL_DOCNO], "score": [1.0],
                        "rank": [1]}, schema=RUN_SCHEMA)
    with pytest.raises(InputError, match="reserved"):
        write_trec_run(run, tmp_path / "r.txt")
