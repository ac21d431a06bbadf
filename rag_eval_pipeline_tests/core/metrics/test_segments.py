"""core/metrics/segments.py: the segments each golden question is reported in (by hand from the rows)."""

from __future__ import annotations

import datetime as dt

import polars as pl

from rag_eval_pipeline.core.metrics.segments import question_segments
from rag_eval_pipeline.core.tables import SCHEMAS

from .test_decisions import golden_frame


def snapshot_frame(rows: list[tuple], valid_from: dict[str, dt.date] | None = None) -> pl.DataFrame:
    """(chunk_id, status, acl) rows -> corpus_snapshot; ``valid_from`` by doc id (default: none)."""
    out = []
    for chunk_id, status, acl in rows:
        doc, idx = chunk_id.split("#")
        out.append({
            "chunk_id": chunk_id, "doc_id": doc, "chunk_index": int(idx), "text": "t", "title": doc,
            "source": "mem", "doc_type": "txt", "language": "en", "status": status,
            "replaced_by": "new" if status == "replaced" else None, "acl": acl,
            "valid_from": (valid_from or {}).get(doc), "valid_to": None, "sha256": "x",
        })
    return pl.DataFrame(out, schema=SCHEMAS["corpus_snapshot"])


def segs_of(seg: pl.DataFrame, qid: str) -> set[str]:
    return set(seg.filter(pl.col("question_id") == qid)["segment"])



def test_segments_acl_and_document_status():
    snapshot = snapshot_frame([
        ("pub#0", "active", []),
        ("hr#0", "active", ["hr"]),
        ("old#0", "withdrawn", []),
        ("rep#0", "replaced", []),
        ("rep#1", "replaced", ["legal"]),
    ])
    golden = golden_frame([
        {"question_id": "q_pub", "answerability": "answerable", "relevant": ["pub#0"], "user_groups": ["sales"]},
        {"question_id": "q_hr_no", "answerability": "answerable", "relevant": ["hr#0"], "user_groups": ["sales"]},
        {"question_id": "q_hr_yes", "answerability": "answerable", "relevant": ["hr#0"], "user_groups": ["hr", "x"]},
        {"question_id": "q_old", "answerability": "answerable", "relevant": ["old#0", "pub#0"]},
        # evidence through a claim only; replaced and restricted
        {"question_id": "q_rep", "answerability": "absent", "claims": [("c1", ["rep#1"])],
         "segments": ["topic=returns", " lang=es "]},
        # golden tags acl=restricted directly; corpus finds nothing restricted
        {"question_id": "q_tag", "answerability": "clarify", "segments": ["acl=restricted", "doc_status=withdrawn"]},
        # relevant judged not relevant (grade 0) is not evidence
        {"question_id": "q_g0", "answerability": "answerable", "relevant": [("hr#0", 0), ("pub#0", 2)]},
    ])
    seg = question_segments(golden, snapshot)
    assert seg.columns == ["question_id", "segment"]
    assert seg.height == seg.unique().height
    assert segs_of(seg, "q_pub") == {"all", "answerability=answerable", "acl=readable", "doc_status=active"}
    assert segs_of(seg, "q_hr_no") == {"all", "answerability=answerable", "acl=restricted", "doc_status=active"}
    assert segs_of(seg, "q_hr_yes") == {"all", "answerability=answerable", "acl=readable", "doc_status=active"}
    assert segs_of(seg, "q_old") == {"all", "answerability=answerable", "acl=readable", "doc_status=withdrawn"}
    assert segs_of(seg, "q_rep") == {"all", "answerability=absent", "acl=restricted", "doc_status=replaced",
                                     "topic=returns", "lang=es"}
    assert segs_of(seg, "q_tag") == {"all", "answerability=clarify", "acl=restricted", "doc_status=withdrawn"}
    assert segs_of(seg, "q_g0") == {"all", "answerability=answerable", "acl=readable", "doc_status=active"}


def test_segments_of_a_golden_set_judged_per_document():
    """Relevance given only as ``relevant_docs``: the document's chunks are the evidence of the corpus segments
    (they used to be ignored: every such question read acl=readable, doc_status=active, no doc_year)."""
    snapshot = snapshot_frame([
        ("pub#0", "active", []),
        ("pub#1", "active", []),
        ("hr#0", "active", []),
        ("hr#1", "active", ["hr"]),  # one restricted chunk makes the document's evidence restricted
        ("old#0", "withdrawn", []),
    ], valid_from={"pub": dt.date(2023, 5, 1), "old": dt.date(2021, 1, 1)})
    golden = golden_frame([
        {"question_id": "q_pub", "answerability": "answerable", "user_groups": ["sales"]},
        {"question_id": "q_hr", "answerability": "answerable", "user_groups": ["sales"]},
        {"question_id": "q_old", "answerability": "answerable", "user_groups": ["sales"]},
        {"question_id": "q_g0", "answerability": "answerable", "user_groups": ["sales"]},
    ])
    docs = {"q_pub": [("pub", 2)], "q_hr": [("hr", 1)], "q_old": [("old", 1), ("pub", 1)],
            "q_g0": [("old", 0), ("pub", 1)]}  # grade 0: judged, not relevant, not evidence
    golden = golden.with_columns(pl.Series("relevant_docs", [
        [{"doc_id": d, "grade": g} for d, g in docs[q]] for q in golden["question_id"]],
        dtype=SCHEMAS["golden_set"]["relevant_docs"]))
    seg = question_segments(golden, snapshot)
    base = {"all", "answerability=answerable"}
    # worked out by hand from the rows above: q_pub's evidence pub#0, pub#1 (active, open, valid from 2023)
    assert segs_of(seg, "q_pub") == base | {"acl=readable", "doc_status=active", "doc_year=2023"}
    # hr#1 is readable by group hr only; sales cannot read it; no valid_from for hr
    assert segs_of(seg, "q_hr") == base | {"acl=restricted", "doc_status=active"}
    # old#0 withdrawn; the newest evidence document is pub (2023)
    assert segs_of(seg, "q_old") == base | {"acl=readable", "doc_status=withdrawn", "doc_year=2023"}
    assert segs_of(seg, "q_g0") == base | {"acl=readable", "doc_status=active", "doc_year=2023"}


def test_segments_without_snapshot_and_lang_column():
    golden = golden_frame([
        {"question_id": "q1", "answerability": "answerable", "relevant": ["a#0"], "segments": ["team=x", "team=x"]},
        {"question_id": "q2", "answerability": "absent"},
    ]).with_columns(pl.Series("language", ["es", None]))
    seg = question_segments(golden)
    assert segs_of(seg, "q1") == {"all", "answerability=answerable", "team=x", "lang=es"}
    assert segs_of(seg, "q2") == {"all", "answerability=absent"}


def test_date_segment_is_the_year_of_the_newest_evidence_document():
    snapshot = snapshot_frame([("old#0", "active", []), ("new#0", "active", []), ("undated#0", "active", [])],
                              valid_from={"old": dt.date(2023, 5, 1), "new": dt.date(2025, 3, 1)})
    golden = pl.DataFrame({
        "question_id": ["both", "old_only", "undated"],
        "answerability": ["answerable"] * 3,
        "relevant": [[{"chunk_id": "old#0", "grade": 1}, {"chunk_id": "new#0", "grade": 1}],
                     [{"chunk_id": "old#0", "grade": 1}], [{"chunk_id": "undated#0", "grade": 1}]],
        "claims": [[], [], []], "segments": [[], [], []], "user_groups": [["customers"]] * 3, "split": ["test"] * 3,
    }, schema_overrides={"claims": SCHEMAS["golden_set"]["claims"], "segments": pl.List(pl.Utf8),
                         "relevant": SCHEMAS["golden_set"]["relevant"]})
    seg = question_segments(golden, snapshot)
    years = {q: {s for s in segs_of(seg, q) if s.startswith("doc_year=")} for q in ("both", "old_only", "undated")}
    assert years == {"both": {"doc_year=2025"}, "old_only": {"doc_year=2023"}, "undated": set()}
