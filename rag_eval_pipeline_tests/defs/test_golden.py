"""The golden stage's checks on hand-made frames."""

import polars as pl

from rag_eval_pipeline.defs.golden import golden_evidence_is_current

RELEVANT = pl.List(pl.Struct({"chunk_id": pl.Utf8, "grade": pl.Int64}))
CLAIMS = pl.List(pl.Struct({"text": pl.Utf8, "supporting": pl.List(pl.Utf8)}))
DOCS = pl.List(pl.Struct({"doc_id": pl.Utf8, "grade": pl.Int64}))


def test_evidence_judged_per_document_on_a_withdrawn_document_warns():
    # q1 judges relevance per document only: doc "old" (grade 2, withdrawn, chunks old#0 and old#1);
    # q2 per chunk on the active doc "new". Only q1's two chunks are stale.
    golden = pl.DataFrame({
        "question_id": ["q1", "q2"],
        "relevant": [[], [{"chunk_id": "new#0", "grade": 1}]],
        "claims": [[], []],
        "relevant_docs": [[{"doc_id": "old", "grade": 2}], []],
        "user_groups": [None, None],
    }, schema_overrides={"relevant": RELEVANT, "claims": CLAIMS, "relevant_docs": DOCS,
                         "user_groups": pl.List(pl.Utf8)})
    snapshot = pl.DataFrame({
        "chunk_id": ["old#0", "old#1", "new#0"], "doc_id": ["old", "old", "new"],
        "status": ["withdrawn", "withdrawn", "active"], "replaced_by": [None, None, None],
        "acl": [None, None, None],
    }, schema_overrides={"replaced_by": pl.Utf8, "acl": pl.List(pl.Utf8)})
    result = golden_evidence_is_current(golden, snapshot)
    assert result.passed is False
    listed = str(result.metadata)
    assert "q1:old#0 (withdrawn)" in listed and "q1:old#1 (withdrawn)" in listed and "q2:" not in listed
