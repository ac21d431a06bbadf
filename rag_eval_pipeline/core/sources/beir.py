"""Read a dataset in the BEIR layout (corpus.jsonl, queries.jsonl, qrels/<split>.tsv).

Mapping
-------
- ``corpus.jsonl``: one line ``{"_id", "title", "text", ...}`` per document → one document
  (doc_id = ``_id``; text = ``text``, or ``title`` when ``text`` is empty). Chunk these with strategy
  ``"document"``, so that the single chunk of each document is ``doc_id#0`` and the document-level
  qrels apply to it unchanged.
- ``qrels/<split>.tsv``: header ``query-id  corpus-id  score`` then one judgment per line. Rows with
  score >= 1 become relevant chunks ``{corpus-id}#0`` with grade = score; rows with score <= 0
  (judged not relevant) are dropped, as trec_eval treats them. A query keeps its rows in file order.
- ``queries.jsonl``: only the queries named in the qrels file are kept, in order of first appearance
  in the qrels. Each is ``answerable`` (BEIR has no unanswerable queries); reference answer and
  claims are empty (BEIR holds no answer text); user_groups is empty (public data).
- split: ``test`` for BEIR's ``test`` qrels (the held-out set), ``dev`` for any other qrels file
  (``train``, ``dev``), which is used for tuning. Segment tags: ``source=beir``.

Relevance ids as in BEIR (Thakur et al., NeurIPS 2021 Datasets and Benchmarks); the dataset is described in
../shared/datasets/scifact_beir/PROVENANCE.md.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA, conform_documents
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources._records import decode_utf8, read_jsonl
from rag_eval_pipeline.core.sources.golden import GOLDEN_RAW_SCHEMA


def _read_qrels(path: Path) -> list[tuple[int, str, str, int]]:
    if not path.is_file():
        raise InputError("qrels file not found; expected a BEIR qrels TSV", path=str(path))
    text = decode_utf8(path.read_bytes(), str(path))
    rows: list[tuple[int, str, str, int]] = []
    seen: dict[tuple[str, str], int] = {}
    for i, line in enumerate(text.split("\n")):
        lineno = i + 1
        if not line.strip():
            continue
        parts = line.split("\t")
        if lineno == 1 and parts[0].strip().lower() in ("query-id", "query_id", "qid"):
            continue
        if len(parts) != 3:
            raise InputError(f"got {len(parts)} tab-separated fields; expected query-id, corpus-id, score",
                             path=str(path), line=lineno, field="qrels")
        qid, did, score_text = (p.strip() for p in parts)
        if not qid or not did:
            raise InputError("empty query-id or corpus-id; expected both", path=str(path), line=lineno,
                             field="query-id" if not qid else "corpus-id")
        try:
            score = int(score_text)
        except ValueError:
            raise InputError(f"got {score_text!r}; expected an integer relevance score", path=str(path),
                             line=lineno, field="score") from None
        if (qid, did) in seen:
            raise InputError(f"judgment ({qid}, {did}) repeated (first on line {seen[(qid, did)]}); expected one row "
                             "per query and document", path=str(path), line=lineno, field="corpus-id")
        seen[(qid, did)] = lineno
        rows.append((lineno, qid, did, score))
    return rows


def load_beir(path: str | Path, split: str = "test") -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read a BEIR-format dataset folder.

    Input: the folder holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv``; the qrels
    split to use (``test``, ``train``, ``dev``...).
    Output: (documents frame as in docs/CONTRACTS.md, one row per corpus line in file order;
    golden_raw frame, one answerable question per judged query; mapping in the module docstring).
    Raises InputError naming the file, line and field for: a missing file; bad UTF-8 or JSON; a corpus
    line without ``_id`` or with a repeated ``_id``; a document with neither text nor title; a qrels
    row that is malformed, repeated, or names an unknown query or document; a judged query with empty
    text.
    Definition: BEIR's qrels (Thakur et al. 2021): relevant chunk ids per question.
    """
    root = Path(path)
    if not root.is_dir():
        raise InputError("folder not found; expected a BEIR dataset folder", path=str(root))
    corpus_path, queries_path = root / "corpus.jsonl", root / "queries.jsonl"
    qrels_path = root / "qrels" / f"{split}.tsv"
    source = f"beir:{root.name}"

    docs: dict[str, dict] = {}
    for line, rec in read_jsonl(corpus_path):
        doc_id = rec.get("_id")
        if isinstance(doc_id, int) and not isinstance(doc_id, bool):
            doc_id = str(doc_id)
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise InputError(f"got {doc_id!r}; expected a document id", path=str(corpus_path), line=line, field="_id")
        if doc_id in docs:
            raise InputError(f"document id {doc_id!r} repeated; expected unique ids", path=str(corpus_path),
                             line=line, field="_id")
        if "#" in doc_id:
            raise InputError(f"document id {doc_id!r} holds '#'; expected an id without '#'", path=str(corpus_path),
                             line=line, field="_id")
        title = rec.get("title") or ""
        text = rec.get("text") or ""
        if not isinstance(title, str) or not isinstance(text, str):
            raise InputError("expected string title and text", path=str(corpus_path), line=line, field="text")
        body = text if text.strip() else title
        if not body.strip():
            raise InputError(f"document {doc_id!r} has neither text nor title; expected some text",
                             path=str(corpus_path), line=line, field="text")
        docs[doc_id] = {
            "doc_id": doc_id, "title": title.strip() or None, "text": body, "source": source, "doc_type": None,
            "language": None, "status": "active", "replaced_by": None, "acl": [], "valid_from": None,
            "valid_to": None,
        }

    queries: dict[str, tuple[int, str]] = {}
    for line, rec in read_jsonl(queries_path):
        qid = rec.get("_id")
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not qid.strip():
            raise InputError(f"got {qid!r}; expected a query id", path=str(queries_path), line=line, field="_id")
        if qid in queries:
            raise InputError(f"query id {qid!r} repeated; expected unique ids", path=str(queries_path), line=line,
                             field="_id")
        text = rec.get("text")
        queries[qid] = (line, text if isinstance(text, str) else "")

    relevant: dict[str, list[dict]] = {}
    for line, qid, did, score in _read_qrels(qrels_path):
        if qid not in queries:
            raise InputError(f"query {qid!r} is not in {queries_path.name}; expected a known query id",
                             path=str(qrels_path), line=line, field="query-id")
        if did not in docs:
            raise InputError(f"document {did!r} is not in {corpus_path.name}; expected a known document id",
                             path=str(qrels_path), line=line, field="corpus-id")
        if score <= 0:
            continue
        relevant.setdefault(qid, []).append({"chunk_id": f"{did}#0", "grade": score})

    out_split = "test" if split == "test" else "dev"
    rows = []
    for qid, rels in relevant.items():
        qline, text = queries[qid]
        if not text.strip():
            raise InputError(f"query {qid!r} has empty text; expected the query", path=str(queries_path), line=qline,
                             field="text")
        rows.append({
            "question_id": qid, "question": text, "answerability": "answerable", "relevant": rels,
            "reference_answer": None, "claims": [], "split": out_split, "segments": ["source=beir"],
            "user_groups": [],
        })
    documents = conform_documents(pl.DataFrame(list(docs.values()), schema=DOCUMENTS_SCHEMA))
    golden_raw = pl.DataFrame(rows, schema=GOLDEN_RAW_SCHEMA)
    return documents, golden_raw
