"""Read a SQuAD 2.0 JSON file (``version``, ``data[].title``, ``data[].paragraphs[].context``,
``qas[].id/question/answers/is_impossible``) into documents and golden questions.

Mapping
-------
- Every paragraph is one document, ``doc_id`` = ``<title>_p<index>`` (index of the paragraph within
  its article, from 0; characters other than letters, digits, ``_ . -`` in the title become ``_``).
  Chunk with strategy ``"document"``: the paragraph is the single chunk ``doc_id#0``. language ``en``,
  doc_type ``wikipedia_paragraph``, no acl.
- An answerable question (``is_impossible`` false) → ``answerable``, relevant = its paragraph's chunk
  (grade 1), reference_answer = the first answer's text.
- An unanswerable question (``is_impossible`` true) → ``absent`` with no relevant ids: the paragraph
  it was written against does not hold the answer (the near-miss negatives of "Know What You Don't
  Know", Rajpurkar, Jia & Liang, ACL 2018). That paragraph is recorded in the segment
  tag ``near_paragraph=<doc_id>``; reference_answer is null.
- split: ``dev`` or ``test`` from sha256(f"{split_seed}:{question_id}") (first 8 hex digits, even →
  dev, odd → test): deterministic, about half each, independent of file order.
- segments: ``source=squad_v2``, ``title=<article title>``; user_groups empty (public data).
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.corpus import DOCUMENTS_SCHEMA, conform_documents
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.sources._records import decode_utf8
from rag_eval_pipeline.core.sources.golden import GOLDEN_RAW_SCHEMA

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")


def squad_split(question_id: str, split_seed: int = 0) -> str:
    """``dev`` or ``test`` for a question id: parity of the first 8 hex digits of
    sha256(f"{split_seed}:{question_id}"). Deterministic; about 50/50."""
    digest = hashlib.sha256(f"{split_seed}:{question_id}".encode()).hexdigest()
    return "dev" if int(digest[:8], 16) % 2 == 0 else "test"


def load_squad_v2(path: str | Path, split_seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Read a SQuAD 2.0 JSON file.

    Input: the path of a SQuAD 2.0 file (e.g. ``dev-v2.0.json``); ``split_seed`` for the dev/test
    assignment. Output: (documents frame as in docs/CONTRACTS.md, one row per paragraph in file
    order; golden_raw frame, one row per question in file order; mapping in the module docstring).
    Raises InputError naming the file and the field (the JSON path, e.g.
    ``data[0].paragraphs[3].qas[2].answers``; line is null because the file is one JSON document) for:
    a missing file, bad UTF-8 or JSON, a missing ``data`` list, a paragraph without context, a
    question without id or text, a repeated question id, an answerable question without answers, an
    unanswerable one with answers.
    Definition: SQuAD 2.0 (Rajpurkar, Jia & Liang, ACL 2018): answerable vs absent questions.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found; expected a SQuAD 2.0 JSON file", path=str(p))
    text = decode_utf8(p.read_bytes(), str(p))
    try:
        data = strict_json(text)
    except JsonError as exc:
        raise InputError(f"{exc.msg} at column {exc.colno}; expected a SQuAD 2.0 JSON file"
                         if exc.colno is not None else f"{exc.msg}; expected a SQuAD 2.0 JSON file",
                         path=str(p), line=exc.lineno, field="json") from None
    articles = data.get("data") if isinstance(data, dict) else None
    if not isinstance(articles, list):
        raise InputError("no 'data' list; expected the SQuAD 2.0 layout", path=str(p), field="data")

    def err(field: str, message: str) -> InputError:
        return InputError(message, path=str(p), field=field)

    docs: list[dict] = []
    rows: list[dict] = []
    doc_ids: set[str] = set()
    qids: set[str] = set()
    for a, article in enumerate(articles):
        title = article.get("title") if isinstance(article, dict) else None
        if not isinstance(title, str) or not title.strip():
            raise err(f"data[{a}].title", f"got {title!r}; expected the article title")
        safe_title = _UNSAFE.sub("_", title.strip())
        for i, para in enumerate(article.get("paragraphs") or []):
            where = f"data[{a}].paragraphs[{i}]"
            context = para.get("context") if isinstance(para, dict) else None
            if not isinstance(context, str) or not context.strip():
                raise err(f"{where}.context", "missing or empty; expected the paragraph text")
            doc_id = f"{safe_title}_p{i}"
            if doc_id in doc_ids:
                raise err(f"{where}", f"document id {doc_id!r} produced twice (two articles with the same title?); "
                                      "expected unique titles")
            doc_ids.add(doc_id)
            docs.append({
                "doc_id": doc_id, "title": title, "text": context, "source": f"squad_v2:{p.name}",
                "doc_type": "wikipedia_paragraph", "language": "en", "status": "active", "replaced_by": None,
                "acl": [], "valid_from": None, "valid_to": None,
            })
            for j, qa in enumerate(para.get("qas") or []):
                qwhere = f"{where}.qas[{j}]"
                qid = qa.get("id") if isinstance(qa, dict) else None
                if not isinstance(qid, str) or not qid.strip():
                    raise err(f"{qwhere}.id", f"got {qid!r}; expected a question id")
                if qid in qids:
                    raise err(f"{qwhere}.id", f"question id {qid!r} repeated; expected unique ids")
                qids.add(qid)
                question = qa.get("question")
                if not isinstance(question, str) or not question.strip():
                    raise err(f"{qwhere}.question", "missing or empty; expected the question text")
                impossible = bool(qa.get("is_impossible", False))
                answers = qa.get("answers") or []
                segments = ["source=squad_v2", f"title={title}"]
                if impossible:
                    if answers:
                        raise err(f"{qwhere}.answers", "is_impossible is true but answers are given; expected []")
                    rows.append({
                        "question_id": qid, "question": question, "answerability": "absent", "relevant": [],
                        "reference_answer": None, "claims": [], "split": squad_split(qid, split_seed),
                        "segments": sorted(segments + [f"near_paragraph={doc_id}"]), "user_groups": [],
                    })
                else:
                    first = answers[0].get("text") if answers and isinstance(answers[0], dict) else None
                    if not isinstance(first, str) or not first.strip():
                        raise err(f"{qwhere}.answers", "an answerable question without answer text; expected at "
                                                       "least one answer")
                    rows.append({
                        "question_id": qid, "question": question, "answerability": "answerable",
                        "relevant": [{"chunk_id": f"{doc_id}#0", "grade": 1}], "reference_answer": first,
                        "claims": [], "split": squad_split(qid, split_seed), "segments": sorted(segments),
                        "user_groups": [],
                    })
    documents = conform_documents(pl.DataFrame(docs, schema=DOCUMENTS_SCHEMA))
    golden_raw = pl.DataFrame(rows, schema=GOLDEN_RAW_SCHEMA)
    return documents, golden_raw
