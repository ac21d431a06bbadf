"""core/labelling.py: content hash, items, the access rule, the stratified sample."""

import hashlib
import json

import polars as pl

from rag_eval_pipeline.core.labelling import (
    LabelItem,
    build_items,
    content_sha256,
    current_content_hashes,
    stratified_order,
    withhold_restricted,
)
from rag_eval_pipeline.core.tables import SCHEMAS

SECRET = "Internal escalation code ZX-99 goes to tier two only, never to customers."


def tables():
    """A tiny evaluation: chunks a (public), b (public), s (support-staff only); systems A and B.

    A/q1 answers from a, b (claims: 1 SUPPORTED, 1 NOT_MENTIONED); A/q2 from a (SUPPORTED);
    B/q1 retrieved s (restricted); B/q2 answers with text copied from s although it retrieved only a;
    B/q3 has a JUDGE_ERROR only.
    """
    snap = pl.DataFrame([
        {"chunk_id": "a#0", "doc_id": "a", "chunk_index": 0, "text": "Returns are free within 30 days.",
         "title": "Returns", "source": "a.md", "doc_type": "policy", "language": "en", "status": "active",
         "replaced_by": None, "acl": [], "valid_from": None, "valid_to": None, "sha256": "x"},
        {"chunk_id": "b#0", "doc_id": "b", "chunk_index": 0, "text": "Refunds take five days.",
         "title": "Refunds", "source": "b.md", "doc_type": "policy", "language": "en", "status": "withdrawn",
         "replaced_by": None, "acl": ["customers"], "valid_from": None, "valid_to": None, "sha256": "y"},
        {"chunk_id": "s#0", "doc_id": "s", "chunk_index": 0, "text": SECRET,
         "title": "Escalation", "source": "s.md", "doc_type": "internal", "language": "en", "status": "active",
         "replaced_by": None, "acl": ["support-staff"], "valid_from": None, "valid_to": None, "sha256": "z"},
    ], schema=SCHEMAS["corpus_snapshot"])
    golden = pl.DataFrame([
        {"question_id": q, "golden_version": "g", "question": f"question {q}?", "answerability": "answerable",
         "relevant": [], "reference_answer": None, "claims": [], "split": "test", "segments": [], "user_groups": []}
        for q in ("q1", "q2", "q3")], schema=SCHEMAS["golden_set"])

    def run(system, qid, hits, answer):
        return {"system": system, "question_id": qid,
                "retrieved": [{"chunk_id": c, "score": 1.0, "rank": r} for r, c in enumerate(hits, start=1)],
                "decision": "answer", "answer": answer, "citations": [], "error": None, "corpus_version": "c",
                "golden_version": "g", "retriever": None, "generator": None, "model": None, "prompt_version": None}
    runs = pl.DataFrame([
        run("A", "q1", ["b#0", "a#0"], "Returns are free. Refunds are instant."),
        run("A", "q2", ["a#0"], "Returns are free within 30 days."),
        run("B", "q1", ["s#0", "a#0"], "Ask support."),
        run("B", "q2", ["a#0"], "Note: " + SECRET),
        run("B", "q3", ["a#0"], "Something."),
    ], schema=SCHEMAS["rag_runs"])

    def lab(system, qid, n, claim, verdict):
        return {"system": system, "question_id": qid, "claim_id": f"{qid}:c{n}", "claim": claim, "verdict": verdict,
                "quote": None, "quote_found": verdict == "SUPPORTED", "justification": "", "judge": "j",
                "judge_model": "m", "prompt_sha256": "p", "repeat": 0, "error": None}
    judge = pl.DataFrame([
        lab("A", "q1", 1, "Returns are free.", "SUPPORTED"),
        lab("A", "q1", 2, "Refunds are instant.", "NOT_MENTIONED"),
        lab("A", "q2", 1, "Returns are free within 30 days.", "SUPPORTED"),
        lab("B", "q1", 1, "Ask support.", "NOT_MENTIONED"),
        lab("B", "q2", 1, "Note: " + SECRET, "SUPPORTED"),
        lab("B", "q3", 1, "", "JUDGE_ERROR"),
    ], schema=SCHEMAS["judge_labels"])
    return runs, golden, snap, judge


def test_content_hash_is_sha256_of_the_documented_json():
    doc = '{"answer":"ans","claim":null,"contexts":["c1",null],"question":"q?","v":1}'
    assert content_sha256("q?", "ans", ["c1", None]) == hashlib.sha256(doc.encode()).hexdigest()
    base = content_sha256("q?", "ans", ["c1", "c2"])
    assert len({base, content_sha256("q!", "ans", ["c1", "c2"]), content_sha256("q?", "ans.", ["c1", "c2"]),
                content_sha256("q?", "ans", ["c2", "c1"]), content_sha256("q?", "ans", ["c1", "c2"], claim="x")}) == 5


def test_items_at_both_levels_with_the_judges_label():
    runs, golden, snap, judge = tables()
    resp = build_items(runs, golden, snap, judge, "response")
    # B/q3 has only a JUDGE_ERROR: not an item; A/q1 has a NOT_MENTIONED claim: not attributable
    assert [(it.key, it.judge_label) for it in resp] == [
        (("A", "q1"), "not_attributable"), (("A", "q2"), "attributable"), (("B", "q1"), "not_attributable"),
        (("B", "q2"), "attributable")]
    a1 = resp[0]
    assert [h["chunk_id"] for h in a1.chunks] == ["b#0", "a#0"] and a1.chunks[0]["status"] == "withdrawn"
    assert a1.content_sha256 == content_sha256("question q1?", "Returns are free. Refunds are instant.",
                                               ["Refunds take five days.", "Returns are free within 30 days."])
    claims = build_items(runs, golden, snap, judge, "claim")
    assert [it.key for it in claims][:2] == [("A", "q1", "q1:c1"), ("A", "q1", "q1:c2")]
    assert claims[1].claim == "Refunds are instant." and claims[1].judge_label == "NOT_MENTIONED"
    assert claims[1].claims == ["Returns are free.", "Refunds are instant."]
    hashes = current_content_hashes(runs, golden, snap, judge, "claim")
    assert hashes[("A", "q1", "q1:c2")] == claims[1].content_sha256
    assert current_content_hashes(runs, golden, snap, judge, "response")[("A", "q1")] == a1.content_sha256


def test_restricted_items_are_withheld_as_in_the_report():
    runs, golden, snap, judge = tables()
    items = build_items(runs, golden, snap, judge, "response")
    shown, withheld = withhold_restricted(items, snap, ["customers"])
    # B/q1 retrieved the support-staff chunk; B/q2's answer repeats its text
    assert [it.key for it in shown] == [("A", "q1"), ("A", "q2")]
    assert [it.key for it in withheld] == [("B", "q1"), ("B", "q2")]
    shown, _ = withhold_restricted(items, snap, ["customers", "support-staff"])
    assert len(shown) == 4
    shown, _ = withhold_restricted(items, snap, [])  # b#0 is customers-only
    assert [it.key for it in shown] == [("A", "q2")]


def _item(system, qid, label):
    return LabelItem(system, qid, None, "q", "a", None, [], [], [], label, content_sha256="0" * 64)


def test_stratified_order_interleaves_strata_round_robin():
    items = ([_item("A", f"q{i}", "yes") for i in range(5)] + [_item("A", f"q{i}", "no") for i in range(5, 7)]
             + [_item("B", f"q{i}", "yes") for i in range(3)])
    order = stratified_order(items, seed=0)
    strata = [(it.system, it.judge_label) for it in order]
    # strata sorted: (A, no), (A, yes), (B, yes); one each per round until a stratum runs out
    assert strata == [("A", "no"), ("A", "yes"), ("B", "yes")] * 2 + [("A", "yes"), ("B", "yes"), ("A", "yes"),
                                                                       ("A", "yes")]
    assert sorted(it.key for it in order) == sorted(it.key for it in items)
    assert [it.key for it in stratified_order(list(reversed(items)), seed=0)] == [it.key for it in order]
    within = [it.key for it in order if it.judge_label == "yes" and it.system == "A"]
    expect = sorted([("A", f"q{i}") for i in range(5)],
                    key=lambda k: hashlib.sha256(json.dumps([0, *k]).encode()).hexdigest())
    assert within == expect
    assert [it.key for it in stratified_order(items, seed=1)] != [it.key for it in order]
