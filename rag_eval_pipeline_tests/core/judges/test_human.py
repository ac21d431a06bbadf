"""Human labels: CSV / JSONL / Parquet loading, row-level errors, HumanLabelJudge."""

from __future__ import annotations

import csv
import hashlib
import json

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.judges.human import HumanLabelJudge, load_human_labels
from rag_eval_pipeline.core.tables import SCHEMAS

CTX = ["El museo abre de martes a domingo de 10 a 18 horas. La entrada general cuesta 8 euros."]
ROWS = [
    {"system": "s1", "question_id": "q1", "claim_id": "c1", "claim": "El museo abre de martes a domingo.",
     "verdict": "SUPPORTED", "quote": "El museo abre de martes a domingo", "justification": "literal",
     "annotator": "ana", "question": "¿Cuándo abre el museo?",
     "answer": "El museo abre de martes a domingo. La entrada es gratis."},
    {"system": "s1", "question_id": "q1", "claim_id": "c2", "claim": "La entrada es gratis.",
     "verdict": "contradicted", "quote": "La entrada general cuesta 8 euros", "justification": "",
     "annotator": "ana", "question": "¿Cuándo abre el museo?",
     "answer": "El museo abre de martes a domingo. La entrada es gratis."},
    {"system": "s2", "question_id": "q1", "claim_id": "c1", "claim": "Abre los lunes.",
     "verdict": "not mentioned", "quote": "", "justification": "no dice nada", "annotator": "ana",
     "question": "¿Cuándo abre el museo?", "answer": "Abre los lunes."},
]


def write_csv(path, rows, fields=None):
    fields = fields or list(rows[0])
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    return path


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_load_three_formats(tmp_path, fmt):
    path = tmp_path / f"labels.{fmt}"
    if fmt == "csv":
        write_csv(path, ROWS)
    elif fmt == "jsonl":
        write_jsonl(path, ROWS)
    else:
        pl.DataFrame(ROWS).write_parquet(path)
    df = load_human_labels(path)
    assert df.schema == SCHEMAS["judge_labels"]
    assert df["verdict"].to_list() == ["SUPPORTED", "CONTRADICTED", "NOT_MENTIONED"]
    assert df["judge"].unique().to_list() == ["human"] and df["judge_model"].unique().to_list() == ["ana"]
    assert df["prompt_sha256"].unique().to_list() == [hashlib.sha256(path.read_bytes()).hexdigest()]
    assert df["repeat"].to_list() == [0, 0, 0] and df["error"].null_count() == 3
    assert df["quote"].to_list()[2] is None


def test_minimal_columns_and_default_annotator(tmp_path):
    rows = [{k: ROWS[2][k] for k in ("system", "question_id", "claim_id", "claim", "verdict")}]
    df = load_human_labels(write_csv(tmp_path / "m.csv", rows))
    assert df["judge_model"].to_list() == ["human"] and df["quote"].to_list() == [None]


def test_csv_errors_name_file_line_field(tmp_path):
    bad = [dict(r) for r in ROWS]
    bad[1]["verdict"] = "MAYBE"
    p = write_csv(tmp_path / "bad.csv", bad)
    with pytest.raises(InputError) as e:
        load_human_labels(p)
    assert e.value.line == 3 and e.value.field == "verdict" and str(p) in str(e.value)

    bad = [dict(r) for r in ROWS]
    bad[2]["claim"] = "  "
    with pytest.raises(InputError) as e:
        load_human_labels(write_csv(tmp_path / "blank.csv", bad))
    assert (e.value.line, e.value.field) == (4, "claim")

    bad = [dict(r) for r in ROWS]
    bad[0]["quote"] = ""
    with pytest.raises(InputError, match="SUPPORTED label needs") as e:
        load_human_labels(write_csv(tmp_path / "noquote.csv", bad))
    assert (e.value.line, e.value.field) == (2, "quote")

    with pytest.raises(InputError, match="duplicate") as e:
        load_human_labels(write_csv(tmp_path / "dup.csv", ROWS + [ROWS[0]]))
    assert e.value.line == 5 and e.value.field == "claim_id"

    rows = [{k: v for k, v in r.items() if k != "verdict"} for r in ROWS]
    with pytest.raises(InputError, match="missing column") as e:
        load_human_labels(write_csv(tmp_path / "nocol.csv", rows))
    assert e.value.field == "verdict"

    rows = [{**r, "verdcit": "x"} for r in ROWS]
    with pytest.raises(InputError, match="unknown column") as e:
        load_human_labels(write_csv(tmp_path / "typo.csv", rows))
    assert e.value.field == "verdcit"

    bad = [dict(r) for r in ROWS]
    bad[1]["answer"] = "otra respuesta"
    with pytest.raises(InputError, match="answer text differs") as e:
        load_human_labels(write_csv(tmp_path / "ans.csv", bad))
    assert (e.value.line, e.value.field) == (3, "answer")


def test_csv_line_numbers_survive_multiline_fields(tmp_path):
    rows = [dict(r) for r in ROWS]
    rows[0]["justification"] = "línea uno\nlínea dos\nlínea tres"
    rows[2]["verdict"] = "???"
    with pytest.raises(InputError) as e:
        load_human_labels(write_csv(tmp_path / "ml.csv", rows))
    assert e.value.line == 6  # header 1, row 1 spans 2-4, row 2 on 5, row 3 on 6


def test_jsonl_and_parquet_errors(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text(json.dumps(ROWS[0]) + "\n\n{not json\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid JSON") as e:
        load_human_labels(p)
    assert e.value.line == 3
    p.write_text(json.dumps(ROWS[0]) + "\n" + json.dumps([1, 2]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="JSON object") as e:
        load_human_labels(p)
    assert e.value.line == 2
    p.write_text(json.dumps({**ROWS[0], "claim": 5}) + "\n", encoding="utf-8")
    with pytest.raises(InputError) as e:
        load_human_labels(p)
    assert (e.value.line, e.value.field) == (1, "claim")

    q = tmp_path / "bad.parquet"
    pl.DataFrame([ROWS[0], {**ROWS[1], "verdict": "NOPE"}]).write_parquet(q)
    with pytest.raises(InputError, match="row 2") as e:
        load_human_labels(q)
    assert e.value.field == "verdict"

    with pytest.raises(InputError, match="unknown suffix"):
        load_human_labels(write_jsonl(tmp_path / "x.txt", ROWS))
    with pytest.raises(InputError, match="not found"):
        load_human_labels(tmp_path / "missing.csv")


def test_human_judge_serves_labels(tmp_path):
    j = HumanLabelJudge.from_file(write_jsonl(tmp_path / "h.jsonl", ROWS))
    assert isinstance(j, Judge) and j.name == "human" and j.model == "ana"
    assert j.prompt_sha256 == hashlib.sha256((tmp_path / "h.jsonl").read_bytes()).hexdigest()
    res = j.judge("¿Cuándo abre el museo?", "El museo abre de martes a domingo. La entrada es gratis.", CTX)
    assert res.status == "judged"
    assert [(c.claim_id, c.verdict, c.quote_found) for c in res.claims] == [
        ("c1", "SUPPORTED", True), ("c2", "CONTRADICTED", True)]
    assert res.holistic == "NO"
    assert j.judge("q", "Respuesta sin etiquetas.", CTX).status == "judge_error"
    assert j.judge("q", "Abre los lunes.", []).status == "no_retrieval"
    assert j.judge_for("s2", "q1").claims[0].verdict == "NOT_MENTIONED"
    err = j.judge_for("s9", "q1")
    assert err.status == "judge_error" and "no human labels" in err.claims[0].error


def test_human_judge_ambiguity_and_bind_runs(tmp_path):
    rows = [{k: r[k] for k in ("system", "question_id", "claim_id", "claim", "verdict", "quote")} for r in ROWS]
    rows.append({"system": "s3", "question_id": "q1", "claim_id": "c1", "claim": "Abre los lunes.",
                 "verdict": "CONTRADICTED", "quote": "de martes a domingo"})
    j = HumanLabelJudge.from_file(write_csv(tmp_path / "h.csv", rows))
    assert j.judge("q", "Abre los lunes.", CTX).status == "judge_error"  # no answer text known yet
    runs = pl.DataFrame({"system": ["s2", "s3", "s1"], "question_id": ["q1", "q1", "q1"],
                         "answer": ["Abre los lunes.", "Abre los lunes.", "El museo abre de martes a domingo."]})
    j.bind_runs(runs)
    amb = j.judge("q", "Abre los lunes.", CTX)
    assert amb.status == "judge_error" and amb.claims[0].error.startswith("ambiguous")
    assert j.judge("q", "El museo abre de martes a domingo.", CTX).claims[0].verdict == "SUPPORTED"


def test_human_labels_through_judge_runs(tmp_path):
    judging = pytest.importorskip("rag_eval_pipeline.core.judging")
    j = HumanLabelJudge.from_file(write_jsonl(tmp_path / "h.jsonl", ROWS))
    snap = pl.DataFrame({"chunk_id": ["m#0"], "text": CTX})
    run = {"system": "s1", "question_id": "q1", "retrieved": [{"chunk_id": "m#0", "score": 1.0, "rank": 1}],
           "decision": "answer", "answer": ROWS[0]["answer"], "citations": [], "error": None,
           "corpus_version": "cv", "golden_version": "gv", "retriever": "{}", "generator": "g", "model": "m",
           "prompt_version": "p"}
    labels, answers = judging.judge_runs(pl.DataFrame([run], schema=SCHEMAS["rag_runs"]), snap, j)
    assert labels["verdict"].to_list() == ["SUPPORTED", "CONTRADICTED"]
    assert labels["judge"].unique().to_list() == ["human"] and answers["status"].to_list() == ["judged"]


def test_two_people_on_one_claim_and_the_page_fields(tmp_path):
    bea = {**ROWS[0], "annotator": "bea", "verdict": "NOT_MENTIONED", "quote": "",
           "labelled_at": "2026-12-01T08:00:00+00:00", "content_sha256": "F" * 64, "note": "paraphrase?"}
    path = tmp_path / "two.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [ROWS[0], bea]), encoding="utf-8")
    from rag_eval_pipeline.core.judges.human import read_human_label_rows

    rows, _ = read_human_label_rows(path)
    assert [(r["annotator"], r["verdict"], r["content_sha256"], r["line"]) for r in rows] == [
        ("ana", "SUPPORTED", None, 1), ("bea", "NOT_MENTIONED", "f" * 64, 2)]
    # the judge protocol serves one label per claim: the first in file order
    judged = HumanLabelJudge(rows, "sha").judge_for("s1", "q1", CTX)
    assert [c.verdict for c in judged.claims] == ["SUPPORTED"]
    again = {**bea, "verdict": "CONTRADICTED", "quote": "x"}
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [ROWS[0], bea, again]), encoding="utf-8")
    with pytest.raises(InputError, match="duplicate .* by annotator 'bea' .*first at line 2") as e:
        read_human_label_rows(path)
    assert (e.value.line, e.value.field) == (3, "claim_id")
