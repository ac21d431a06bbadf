"""People's citation-support and nugget-coverage labels served through the same judge interface."""

import json

import pytest

from rag_eval_pipeline.core.citations.judging import judge_citations
from rag_eval_pipeline.core.completeness import judge_nuggets
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.judges.human import HumanLabelJudge, load_human_labels
from rag_eval_pipeline_tests.core.citations.helpers import golden, run, runs, snapshot

CHUNKS = {"d#0": {"text": "Alpha holds in every case."}, "d#1": {"text": "Delta holds at times."}}
NUGGETS = [{"claim_id": "c1", "text": "Alpha holds.", "supporting": ["d#0"]},
           {"claim_id": "c2", "text": "Delta holds.", "supporting": ["d#1"], "importance": "okay"}]


def write(tmp_path, rows):
    p = tmp_path / "labels.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return p


def test_labels_by_family_and_passages(tmp_path):
    path = write(tmp_path, [
        {"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "Alpha holds.", "verdict": "SUPPORTED",
         "quote": "Alpha holds", "family": "citation_support", "passages": "d#1|d#0", "annotator": "ana"},
        {"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "Alpha holds.", "verdict": "no_support",
         "family": "citation_support", "passages": "d#1", "annotator": "ana"},
        {"system": "s", "question_id": "q1", "claim_id": "c1", "claim": "Alpha holds.", "verdict": "support",
         "quote": "Alpha holds", "family": "nugget_coverage", "annotator": "ana"},
        {"system": "s", "question_id": "q1", "claim_id": "q1:c1", "claim": "Alpha holds.", "verdict": "SUPPORTED",
         "quote": "Alpha holds in every case.", "annotator": "ana"},
    ])
    judge = HumanLabelJudge.from_file(path)
    rag = runs(run("q1", "Alpha holds [1][2].", ["d#0", "d#1"]))
    gold = golden({"question_id": "q1", "claims": NUGGETS})
    claims, cites = judge_citations(rag, snapshot(CHUNKS), gold, judge)
    # the joint label (passages d#0|d#1, written in another order) serves the joint request; the label over d#1
    # alone serves that request; nobody labelled the claim against d#0 alone: a judge error, not a guess
    assert claims["verdict"].to_list() == ["SUPPORTED"]
    assert dict(zip(cites["target"], cites["support"])) == {"d#0": "JUDGE_ERROR", "d#1": "NOT_SUPPORTED"}
    assert "no citation_support label" in cites.filter(cites["target"] == "d#0")["error"][0]
    nuggets = judge_nuggets(rag, gold, judge)
    # "support" is AutoNuggetizer's spelling of SUPPORTED; c2 has no label
    assert nuggets["verdict"].to_list() == ["SUPPORTED", "JUDGE_ERROR"]
    assert set(nuggets["prompt_sha256"]) == {judge.prompt_sha256} and set(nuggets["judge"]) == {"human"}
    # the faithfulness side sees only its own label
    assert load_human_labels(path).height == 1


@pytest.mark.parametrize("row, field", [
    ({"verdict": "CONTRADICTED", "family": "nugget_coverage"}, "verdict"),
    ({"verdict": "PARTIAL", "family": "citation_support"}, "quote"),
    ({"verdict": "SUPPORTED", "quote": "x", "family": "relevance"}, "family"),
])
def test_a_bad_support_label_names_its_line_and_field(tmp_path, row, field):
    ok = {"system": "s", "question_id": "q1", "claim_id": "c1", "claim": "Alpha holds.", "verdict": "NOT_SUPPORTED",
          "family": "nugget_coverage"}
    path = write(tmp_path, [ok, {**ok, "claim_id": "c2", **row}])
    with pytest.raises(InputError) as exc:
        HumanLabelJudge.from_file(path)
    assert exc.value.line == 2 and exc.value.field == field
