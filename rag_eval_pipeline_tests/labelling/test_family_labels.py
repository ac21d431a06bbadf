"""The labelling page for the verdict families: citation support (a claim and only the chunks it cites)
and nugget coverage (a reference nugget and the answer), over HTTP on 127.0.0.1, into the family label
file that judge calibration reads per family."""

import json

import yaml

from rag_eval_pipeline.core.citations.judging import judge_citations
from rag_eval_pipeline.core.completeness import judge_nuggets
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.judges.human import read_human_label_rows
from rag_eval_pipeline.core.metrics.calibration_families import calibrate_families
from rag_eval_pipeline.labelling.session import LabellingSession
from rag_eval_pipeline_tests.core.citations.helpers import ScriptedJudge, golden, run, runs, snapshot
from rag_eval_pipeline_tests.labelling.test_labelling_page import get, post, serve  # noqa: F401 - fixture

CHUNKS = {"d#0": {"text": "Alpha holds in every case."}, "d#1": {"text": "Delta holds at times."},
          "d#2": {"text": "Unrelated text about shipping."}}
NUGGETS = [{"claim_id": "c1", "text": "Alpha holds.", "supporting": ["d#0"]},
           {"claim_id": "c2", "text": "Delta holds.", "supporting": ["d#1"], "importance": "okay"}]


def evaluation(tmp_path):
    rag = runs(run("q1", "Alpha holds [1]. Delta holds [2].", ["d#0", "d#1", "d#2"], system="A"))
    gold = golden({"question_id": "q1", "question": "What holds?", "claims": NUGGETS})
    snap = snapshot(CHUNKS)
    judge = ScriptedJudge({("Alpha holds.", frozenset({"d#0"})): "SUPPORTED",
                           ("Alpha holds.", frozenset({"answer"})): "SUPPORTED"})
    claims, cites = judge_citations(rag, snap, gold, judge)
    nuggets = judge_nuggets(rag, gold, judge)
    out = tmp_path / "out"
    out.mkdir()
    from rag_eval_pipeline.core.tables import empty

    for name, df in (("rag_runs", rag), ("golden_set", gold), ("corpus_snapshot", snap),
                     ("judge_labels", empty("judge_labels")), ("citation_claims", claims), ("citations", cites),
                     ("nugget_labels", nuggets)):
        df.write_parquet(out / f"{name}.parquet")
    cfg = {"corpus": {"source": "documents_dir", "path": "docs"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "A", "kind": "reference"}],
           "calibration": {"human_labels": "labels.jsonl", "level": "response"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    (tmp_path / "docs").mkdir()
    return load_config(tmp_path / "config.yaml"), out, claims, nuggets


def test_citation_support_page_shows_the_cited_chunks_alone_and_writes_family_rows(tmp_path, serve):  # noqa: F811
    cfg, out, claims, nuggets = evaluation(tmp_path)
    s = LabellingSession(cfg, out, "ana", family="citation_support")
    assert s.labels_path == tmp_path / "family_labels.jsonl"  # the default: beside calibration.human_labels
    assert sorted(it.claim for it in s.sample) == ["Alpha holds.", "Delta holds."]
    base = serve(s)
    url, page = get(base + "/")
    pos = int(url.rsplit("/", 1)[1])
    item = s.sample[pos]
    assert "Cited chunks" in page and "Do the cited chunks, alone, support the claim?" in page
    shown = {c for c in CHUNKS if f'data-chunk-id="{c}"' in page}
    assert shown == set(item.passages.split("|"))  # only what the claim cites, never the other retrieved chunks
    body = {"pos": pos, "verdict": "PARTIAL", "note": "", "quote": "", "content_sha256": item.content_sha256}
    code, reply = post(base + "/api/label", body)
    assert code == 400 and "quote" in reply["error"]
    quote = CHUNKS[item.passages]["text"][:11]
    code, reply = post(base + "/api/label", {**body, "verdict": "SUPPORTED", "quote": quote})
    assert code == 200 and reply["ok"]
    (row,) = [json.loads(line) for line in s.labels_path.read_text().splitlines()]
    assert (row["family"], row["passages"], row["claim_id"], row["verdict"]) == (
        "citation_support", item.passages, item.claim_id, "SUPPORTED")
    rows, _ = read_human_label_rows(s.labels_path)
    (cal,) = [r for r in calibrate_families(rows, claims, nuggets) if r.level == "citation_support"]
    assert cal.n == 1 and cal.judge == "scripted"


def test_nugget_coverage_page_shows_the_nugget_and_the_answer(tmp_path, serve):  # noqa: F811
    cfg, out, _, _ = evaluation(tmp_path)
    s = LabellingSession(cfg, out, "ana", family="nugget_coverage")
    base = serve(s)
    _, page = get(base + "/item/0")
    item = s.sample[0]
    assert "Does the answer state this nugget?" in page and "id=chunks" not in page
    assert "Alpha holds. Delta holds." in page and "[1]" not in page  # the answer as the judge read it
    code, reply = post(base + "/api/label", {"pos": 0, "verdict": "PARTIAL", "note": "", "quote": "Alpha holds",
                                             "content_sha256": item.content_sha256})
    assert code == 200
    (row,) = read_human_label_rows(s.labels_path)[0]
    assert (row["family"], row["passages"], row["verdict"]) == ("nugget_coverage", "answer", "PARTIAL")
