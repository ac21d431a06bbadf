"""core/label_file.py: the label choices of each level and the label file (append, relabel, undo, refusals)."""

from __future__ import annotations

import json
import os

import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.label_file import LabelFile, label_options
from rag_eval_pipeline.core.labelling import build_items
from rag_eval_pipeline_tests.core.test_labelling import tables


def test_label_options():
    assert label_options("claim", None) == [("SUPPORTED", "SUPPORTED"), ("CONTRADICTED", "CONTRADICTED"),
                                            ("NOT_MENTIONED", "NOT_MENTIONED")]
    assert label_options("response", None) == [("attributable", "attributable"),
                                               ("not_attributable", "not_attributable")]
    begin = {"human": {"Fully attributable": "attributable", "Not fully attributable": "not_attributable"}}
    assert label_options("response", begin) == [("Fully attributable", "attributable"),
                                                ("Not fully attributable", "not_attributable")]
    with pytest.raises(ValueError, match="human_rule"):
        label_options("response", {"human_rule": "all_supported"})


def test_label_file_append_replace_undo(tmp_path):
    runs, golden, snap, judge = tables()
    a1, a2 = build_items(runs, golden, snap, judge, "response")[:2]
    path = tmp_path / "labels.jsonl"
    path.write_text('{"system": "A", "question_id": "q2", "verdict": "attributable", "annotator": "bob"}\n')
    f = LabelFile(path, "response")
    f.record(a1, "not_attributable", "alice", note="  refunds not in context ")
    f.record(a2, "attributable", "alice")
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert len(lines) == 3 and lines[0]["annotator"] == "bob"
    assert set(lines[1]) == {"system", "question_id", "verdict", "annotator", "labelled_at", "content_sha256", "note"}
    assert (lines[1]["question_id"], lines[1]["verdict"], lines[1]["note"]) == ("q1", "not_attributable",
                                                                                 "refunds not in context")
    assert lines[1]["content_sha256"] == a1.content_sha256
    f.record(a1, "attributable", "alice")  # relabel: the line is replaced in place, not duplicated
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [(r["question_id"], r["annotator"], r["verdict"]) for r in lines] == [
        ("q2", "bob", "attributable"), ("q1", "alice", "attributable"), ("q2", "alice", "attributable")]
    removed = f.remove_last("alice")
    assert removed["question_id"] == "q2"
    assert [json.loads(x)["annotator"] for x in path.read_text().splitlines()] == ["bob", "alice"]
    assert f.remove_last("carol") is None
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_label_file_refusals(tmp_path):
    runs, golden, snap, judge = tables()
    claim_item = build_items(runs, golden, snap, judge, "claim")[0]
    f = LabelFile(tmp_path / "c.jsonl", "claim")
    with pytest.raises(InputError, match="quote"):
        f.record(claim_item, "SUPPORTED", "alice")
    line = f.record(claim_item, "SUPPORTED", "alice", quote="Returns are free")
    assert line["claim_id"] == "q1:c1" and line["claim"] == "Returns are free." and line["quote"] == "Returns are free"
    with pytest.raises(InputError, match=r"\.jsonl"):
        LabelFile(tmp_path / "labels.csv", "claim")
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"system": "A", "question_id": "q2", "verdict": "attributable"}\n{"system": "A"')
    with pytest.raises(InputError, match="line 2"):
        LabelFile(cut, "response").rows()
