"""Golden set reader and validator (core/sources/golden.py)."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA, chunk_documents
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.documents import load_documents_dir
from rag_eval_pipeline.core.sources.golden import load_golden, validate_golden


@pytest.fixture(scope="module")
def snapshot() -> pl.DataFrame:
    base = {"title": "T", "source": "corpus/x.md", "doc_type": "policy", "language": "es", "status": "active",
            "replaced_by": None, "valid_from": dt.date(2025, 1, 1), "valid_to": None}
    docs = pl.DataFrame([
        {**base, "doc_id": "pol", "text": "Plazo de 30 días.\n\nEtiqueta prepagada.", "acl": []},
        {**base, "doc_id": "int", "text": "Código ZX-INTERNAL-7731.", "acl": ["support-staff"]},
    ], schema=DOCUMENTS_SCHEMA)
    return chunk_documents(docs)


def rec(qid="q1", **kw) -> dict:
    out = {"question_id": qid, "question": "¿Plazo?", "answerability": "answerable", "relevant": ["pol#0"],
           "reference_answer": "30 días", "claims": [{"claim_id": "c1", "text": "30 días", "supporting": ["pol#0"]}],
           "split": "dev", "segments": {"lang": "es"}}
    out.update(kw)
    return out


def write_jsonl(path: Path, records: list, raw_lines: list[str] | None = None) -> Path:
    lines = [json.dumps(r, ensure_ascii=False) for r in records] + (raw_lines or [])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def err_of(fn, *args) -> InputError:
    with pytest.raises(InputError) as exc:
        fn(*args)
    return exc.value


def assert_names(err: InputError, file: Path, line: int, field: str) -> None:
    msg = str(err)
    assert err.path == str(file) and str(file) in msg
    assert err.line == line and f"line {line}" in msg
    assert err.field == field and repr(field) in msg
    assert "expected" in msg


def test_reads_and_normalises(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [
        rec(relevant=[{"chunk_id": "pol#0", "grade": 3}, "pol#1"], segments={"lang": "es", "phrasing": "natural"}),
        rec("q2", answerability="absent", relevant=[], claims=[], reference_answer=None, split="test",
            segments=["lang=en"], user_groups=["support-staff"]),
        rec("q3", answerability="clarify", relevant=[], claims=[]),
    ])
    raw = load_golden(f)
    assert raw.height == 3
    row = raw.row(0, named=True)
    assert row["relevant"] == [{"chunk_id": "pol#0", "grade": 3}, {"chunk_id": "pol#1", "grade": 1}]
    assert row["segments"] == ["lang=es", "phrasing=natural"]
    assert row["user_groups"] == ["customers"]
    assert raw.row(1, named=True)["user_groups"] == ["support-staff"]
    golden = validate_golden(raw, snapshot, f)
    assert golden.columns == list(tables.SCHEMAS["golden_set"])
    assert golden["golden_version"].n_unique() == 1 and len(golden["golden_version"][0]) == 64


def test_malformed_json_line(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [rec()], ['{"question_id": "q2", "question": }'])
    assert_names(err_of(load_golden, f), f, 2, "json")


def test_cut_off_last_line(tmp_path):
    f = tmp_path / "g.jsonl"
    f.write_text(json.dumps(rec()) + "\n" + json.dumps(rec("q2"))[:40], encoding="utf-8")
    err = err_of(load_golden, f)
    assert_names(err, f, 2, "json")
    assert "cut off" in str(err)


def test_line_that_is_not_an_object(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), ["q2"]])
    assert_names(err_of(load_golden, f), f, 2, "json")


@pytest.mark.parametrize("field,value", [
    ("answerability", "unknown"),
    ("question", "   "),
    ("split", "train"),
    ("question_id", ""),
])
def test_bad_field_values(tmp_path, field, value):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2", **{field: value})])
    assert_names(err_of(load_golden, f), f, 2, field)


def test_missing_split_and_unknown_field(tmp_path):
    r = rec()
    del r["split"]
    f = write_jsonl(tmp_path / "g.jsonl", [r])
    assert_names(err_of(load_golden, f), f, 1, "split")
    f = write_jsonl(tmp_path / "g2.jsonl", [rec(answerabilty="absent")])
    assert_names(err_of(load_golden, f), f, 1, "answerabilty")


def test_bad_grade_and_repeated_relevant(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(relevant=[{"chunk_id": "pol#0", "grade": -1}])])
    assert_names(err_of(load_golden, f), f, 1, "relevant[0].grade")
    f = write_jsonl(tmp_path / "g2.jsonl", [rec(relevant=["pol#0", "pol#0"])])
    assert_names(err_of(load_golden, f), f, 1, "relevant[1]")


def test_bad_segments(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(segments=["lang"])])
    assert_names(err_of(load_golden, f), f, 1, "segments[0]")


def test_duplicate_question_ids_name_both_lines(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2"), rec()])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 3, "question_id")
    assert "line 1" in str(err)


def test_lines_are_physical_lines_when_blank_lines_exist(tmp_path, snapshot):
    f = tmp_path / "g.jsonl"
    f.write_text("\n" + json.dumps(rec()) + "\n\n" + json.dumps(rec("q2", relevant=["pol#7"])) + "\n",
                 encoding="utf-8")
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 4, "relevant[0]")


def test_relevant_missing_from_snapshot(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2", relevant=["pol#9"])])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 2, "relevant[0]")
    assert "pol#9" in str(err) and "#0..#1" in str(err)


def test_absent_with_relevant_ids(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(answerability="absent", claims=[])])
    assert_names(err_of(validate_golden, load_golden(f), snapshot, f), f, 1, "relevant")


def test_absent_with_claims(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(answerability="absent", relevant=[])])
    assert_names(err_of(validate_golden, load_golden(f), snapshot, f), f, 1, "claims")


def test_answerable_without_relevant(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(relevant=[], claims=[])])
    assert_names(err_of(validate_golden, load_golden(f), snapshot, f), f, 1, "relevant")
    f = write_jsonl(tmp_path / "g2.jsonl", [rec(relevant=[{"chunk_id": "pol#0", "grade": 0}], claims=[])])
    assert_names(err_of(validate_golden, load_golden(f), snapshot, f), f, 1, "relevant")


def test_claim_citing_unknown_chunk(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(claims=[{"claim_id": "c1", "text": "x", "supporting": ["otro#0"]}])])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 1, "claims[0].supporting[0]")
    assert "no document 'otro'" in str(err)


def test_claim_without_support(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(claims=[{"text": "x", "supporting": []}])])
    assert_names(err_of(validate_golden, load_golden(f), snapshot, f), f, 1, "claims[0].supporting")


def test_clarify_may_have_no_relevant(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(answerability="clarify", relevant=[], claims=[])])
    assert validate_golden(load_golden(f), snapshot, f).height == 1


def test_restricted_answer_is_absent_for_other_users(tmp_path, snapshot):
    staff = rec(relevant=["int#0"], claims=[], user_groups=["support-staff"])
    f = write_jsonl(tmp_path / "g.jsonl", [staff])
    assert validate_golden(load_golden(f), snapshot, f).height == 1
    customer = rec(relevant=["int#0"], claims=[])
    f = write_jsonl(tmp_path / "g2.jsonl", [customer])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 1, "relevant")
    assert "'absent'" in str(err)


def test_golden_version_is_a_content_hash(tmp_path, snapshot):
    a = write_jsonl(tmp_path / "a.jsonl", [rec(), rec("q2")])
    b = write_jsonl(tmp_path / "b.jsonl", [rec("q2"), rec()])
    c = write_jsonl(tmp_path / "c.jsonl", [rec(), rec("q2", question="¿Plazo exacto?")])
    va = validate_golden(load_golden(a), snapshot, a)["golden_version"][0]
    vb = validate_golden(load_golden(b), snapshot, b)["golden_version"][0]
    vc = validate_golden(load_golden(c), snapshot, c)["golden_version"][0]
    assert va == vb != vc


def test_parquet_round_trip(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2", answerability="absent", relevant=[], claims=[])])
    golden = validate_golden(load_golden(f), snapshot, f)
    pq = tmp_path / "g.parquet"
    golden.write_parquet(pq)
    again = validate_golden(load_golden(pq), snapshot, pq)
    assert again.equals(golden)


def test_parquet_rows_are_named(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2")])
    pq = tmp_path / "g.parquet"
    load_golden(f).with_columns(pl.when(pl.col("question_id") == "q2").then(pl.lit("maybe"))
                                .otherwise(pl.col("answerability")).alias("answerability")).write_parquet(pq)
    assert_names(err_of(load_golden, pq), pq, 2, "answerability")


def test_sample_golden_validates(sample_dir):
    snap = chunk_documents(load_documents_dir(sample_dir / "corpus"))
    path = sample_dir / "golden.jsonl"
    golden = validate_golden(load_golden(path), snap, path)
    assert golden.height >= 36
    by = Counter(zip(golden["answerability"], golden["split"]))
    for cls in tables.ANSWERABILITY:
        for split in tables.SPLITS:
            assert by[(cls, split)] >= 3, (cls, split)
    assert abs(golden.filter(pl.col("split") == "dev").height - golden.height / 2) <= 3
    tags = Counter(t for seg in golden["segments"] for t in seg)
    for tag in ("lang=es", "lang=en", "acl=restricted", "doc_status=replaced", "doc_status=withdrawn",
                "near_miss=product", "phrasing=keyword"):
        assert tags[tag] >= 1, tag
    restricted = golden.filter(pl.col("segments").list.contains("acl=restricted"))
    assert set(restricted["answerability"]) == {"answerable", "absent"}
    for row in golden.iter_rows(named=True):
        if row["answerability"] == "answerable":
            assert row["claims"], row["question_id"]
        if "acl=restricted" in row["segments"] and row["answerability"] == "absent":
            assert row["user_groups"] == ["customers"]


# ------------------------------------------------------------------ grades in range, ids in NFC

@pytest.mark.parametrize("grade, shown", [(2**31, "2147483648"), (1e300, "1e+300"), (-1, "-1"), (2.5, "2.5")])
def test_grade_outside_int32_is_refused_where_it_is_read(tmp_path, grade, shown):
    # 2**31 used to overflow to null ("got None"), 1e300 to a bare OverflowError
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2", relevant=[{"chunk_id": "pol#0", "grade": grade}])])
    err = err_of(load_golden, f)
    assert_names(err, f, 2, "relevant[0].grade")
    assert f"got {shown};" in str(err) and "<= 2147483647" in str(err)


def test_grade_at_the_int32_maximum_is_kept(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(relevant=[{"chunk_id": "pol#0", "grade": 2147483647}])])
    golden = validate_golden(load_golden(f), snapshot, f)
    assert golden["relevant"][0].to_list() == [{"chunk_id": "pol#0", "grade": 2147483647}]


@pytest.fixture(scope="module")
def accented_snapshot() -> pl.DataFrame:
    base = {"title": "T", "source": "corpus/x.md", "doc_type": "policy", "language": "es", "status": "active",
            "replaced_by": None, "valid_from": None, "valid_to": None, "acl": []}
    return chunk_documents(pl.DataFrame([{**base, "doc_id": "gu\u00eda", "text": "Envío en 24 horas."}],
                                        schema=DOCUMENTS_SCHEMA))


def test_nfd_ids_in_the_golden_set_resolve_to_the_nfc_snapshot(tmp_path, accented_snapshot):
    nfd = "gui\u0301a#0"
    f = write_jsonl(tmp_path / "g.jsonl", [rec("pregunta-gui\u0301a", relevant=[nfd],
                                               claims=[{"text": "24 horas", "supporting": [nfd]}])])
    golden = validate_golden(load_golden(f), accented_snapshot, f)
    assert golden["question_id"].to_list() == ["pregunta-gu\u00eda"]
    assert golden["relevant"][0].to_list() == [{"chunk_id": "gu\u00eda#0", "grade": 1}]
    assert golden["claims"][0].to_list()[0]["supporting"] == ["gu\u00eda#0"]


def test_question_ids_differing_only_in_normalisation_are_duplicates_with_code_points(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec("gu\u00eda"), rec("gui\u0301a")])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, 2, "question_id")
    msg = str(err)
    assert "duplicate question_id, first seen on line 1" in msg
    assert "U+0067 U+0075 U+00ED U+0061" in msg and "U+0067 U+0075 U+0069 U+0301 U+0061" in msg


def test_relevant_twins_are_one_chunk_listed_twice(tmp_path):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(relevant=["gu\u00eda#0", "gui\u0301a#0"])])
    err = err_of(load_golden, f)
    assert_names(err, f, 1, "relevant[1]")
    assert "listed twice" in str(err) and "U+0301" in str(err)


def test_claim_importance_defaults_to_vital_and_only_okay_changes_the_version(tmp_path, snapshot):
    """A nugget's importance (vital | okay, default vital): reading it keeps the version of a golden set
    written before importance existed; marking a claim okay changes it."""
    claims = [{"claim_id": "c1", "text": "30 días", "supporting": ["pol#0"]}]
    plain = write_jsonl(tmp_path / "a.jsonl", [rec(claims=claims)])
    vital = write_jsonl(tmp_path / "b.jsonl", [rec(claims=[{**claims[0], "importance": "vital"}])])
    okay = write_jsonl(tmp_path / "c.jsonl", [rec(claims=[{**claims[0], "importance": "okay"}])])
    got = {p.name: validate_golden(load_golden(p), snapshot, p) for p in (plain, vital, okay)}
    assert [g["claims"][0][0]["importance"] for g in got.values()] == ["vital", "vital", "okay"]
    versions = [g["golden_version"][0] for g in got.values()]
    assert versions[0] == versions[1] != versions[2]
    # the version of the claims written without importance is the one computed before importance existed:
    # sha256 of the header and the canonical JSON row, recomputed here without any importance key
    import hashlib

    g = load_golden(plain)
    columns = [c for c in g.columns if c != "relevant_docs"]  # nor relevant_docs, which it does not use
    row = [g.row(0, named=True)[c] for c in columns]
    row[columns.index("claims")] = claims
    h = hashlib.sha256(b"golden_set/v1\n" + json.dumps(row, ensure_ascii=False, separators=(",", ":"),
                                                       sort_keys=True).encode() + b"\n").hexdigest()
    assert versions[0] == h


def test_an_unknown_claim_importance_is_named(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2", claims=[{"text": "x", "supporting": ["pol#0"],
                                                                      "importance": "essential"}])])
    assert_names(err_of(load_golden, f), f, 2, "claims[0].importance")


# --- relevance judged per document (relevant_docs) ------------------------------------------------------

def test_relevant_docs_read_graded_and_checked_against_the_snapshot(tmp_path, snapshot):
    f = write_jsonl(tmp_path / "g.jsonl", [
        rec("q1", relevant=[], claims=[], relevant_docs=["pol", {"doc_id": "int", "grade": 0}]),
        rec("q2", relevant_docs=[{"doc_id": "pol", "grade": 3}]),
    ])
    golden = validate_golden(load_golden(f), snapshot, f)
    assert golden["relevant_docs"].to_list() == [[{"doc_id": "pol", "grade": 1}, {"doc_id": "int", "grade": 0}],
                                                 [{"doc_id": "pol", "grade": 3}]]


@pytest.mark.parametrize("record, line, field, message", [
    (rec(relevant=[], claims=[], relevant_docs=["nowhere"]), 1, "relevant_docs[0]", "document 'nowhere' is not in"),
    (rec(relevant=[], claims=[], relevant_docs=["pol#0"]), 1, "relevant_docs[0]", "'pol#0' is a chunk id"),
    (rec(relevant=["pol"], claims=[]), 1, "relevant[0]", "'pol' is a document id: list it in relevant_docs"),
    (rec(answerability="absent", relevant=[], claims=[], relevant_docs=["pol"]), 1, "relevant_docs",
     "an absent question lists relevant documents"),
    (rec(relevant=[], claims=[], relevant_docs=[{"doc_id": "pol", "grade": 0}]), 1, "relevant",
     "no relevant chunk (or document, relevant_docs) with grade >= 1"),
    (rec(relevant=[], claims=[], relevant_docs=["int"]), 1, "relevant_docs", "expected answerability 'absent'"),
])
def test_bad_document_relevance_names_line_and_field(tmp_path, snapshot, record, line, field, message):
    f = write_jsonl(tmp_path / "g.jsonl", [record])
    err = err_of(validate_golden, load_golden(f), snapshot, f)
    assert_names(err, f, line, field)
    assert message in str(err)


@pytest.mark.parametrize("value, field, message", [
    ("pol", "relevant_docs", "expected a list of doc ids"),
    (["pol", "pol"], "relevant_docs[1]", "document 'pol' listed twice"),
    ([{"doc": "pol"}], "relevant_docs[0]", "unknown key(s)"),
    ([{"doc_id": "pol", "grade": -1}], "relevant_docs[0].grade", "expected a whole number >= 0"),
])
def test_malformed_relevant_docs_are_refused_where_read(tmp_path, value, field, message):
    f = write_jsonl(tmp_path / "g.jsonl", [rec(relevant_docs=value)])
    err = err_of(load_golden, f)
    assert_names(err, f, 1, field)
    assert message in str(err)


def test_golden_version_moves_with_relevant_docs_only_when_some_question_has_them(tmp_path, snapshot):
    from rag_eval_pipeline.core.sources.golden import golden_version

    f = write_jsonl(tmp_path / "g.jsonl", [rec(), rec("q2")])
    golden = validate_golden(load_golden(f), snapshot, f)
    raw = golden.drop("golden_version")
    # a set written before relevant_docs existed (no column) keeps its version: the empty column is not hashed
    assert golden_version(raw) == golden_version(raw.drop("relevant_docs")) == golden["golden_version"][0]
    with_docs = write_jsonl(tmp_path / "h.jsonl", [rec(relevant_docs=["pol"]), rec("q2")])
    assert validate_golden(load_golden(with_docs), snapshot, with_docs)["golden_version"][0] != golden_version(raw)
