"""Read a golden question set (JSONL or Parquet) and validate it against a corpus snapshot.

File format (one JSON object per line, or one Parquet row per question)
----------------------------------------------------------------------
====================  ==========================================================================
field                 meaning
====================  ==========================================================================
question_id           required, non-empty string, unique in the file (ids are read as Unicode NFC:
                      an NFD twin of an id is the same id, so a repeat)
question              required, non-empty string
answerability         required: ``answerable`` / ``absent`` / ``clarify``
relevant              list of chunk ids ``"doc_id#n"`` (grade 1) or ``{"chunk_id": ..., "grade": g}``
                      (g a whole number from 0 to 2147483647; 0 = judged not relevant). Default ``[]``.
relevant_docs         relevance judged per document: doc ids (grade 1) or ``{"doc_id": ..., "grade": g}``,
                      instead of or beside ``relevant``; retrieval is then also scored at document
                      level (``docs/METRICS.md``, "Document-level relevance"). Default ``[]``.
reference_answer      string or null: the answer a person who knows the content wrote
claims                list of ``{"claim_id", "text", "supporting": [chunk ids], "importance"}``: the
                      factual units of the reference answer, each with the chunks a person checked
                      support it. ``claim_id`` defaults to ``c1``, ``c2``, ... in list order.
                      ``importance`` (optional): ``vital`` (default) or ``okay``, the claim's weight
                      as a nugget (completeness: vital nuggets must be in a good answer, okay ones
                      are worthwhile; TREC 2024 RAG's AutoNuggetizer). Default ``[]``.
split                 required: ``dev`` (tuning) or ``test`` (held out for accepting changes)
segments              object ``{"key": value}`` or list of ``"key=value"`` strings; stored as sorted
                      ``"key=value"`` tags. Default ``[]``.
user_groups           list of groups the asking user belongs to (matched against chunk ``acl``).
                      Default ``["customers"]``.
notes, golden_version optional; ignored (``golden_version`` is recomputed)
====================  ==========================================================================

Any other field is an error. Blank lines are skipped; a BOM and CRLF are repaired.

Rules checked by :func:`validate_golden` (definitions: SQuAD 2.0's answerable / unanswerable questions,
Rajpurkar, Jia & Liang, ACL 2018, with a third class for questions that need clarification, Aliannejadi
et al., SIGIR 2019; graded relevance as TREC qrels; claim-to-chunk support as ALCE's citations, Gao et
al., EMNLP 2023): question ids are unique; every relevant and
supporting chunk id exists in the snapshot; an ``absent`` question has no relevant ids and no claims;
an ``answerable`` question has at least one relevant id with grade >= 1, and at least one of those is
readable by its ``user_groups`` (otherwise, for that user, the answer is absent from the authorised
corpus and it must be labelled ``absent``); a ``clarify`` question may have relevant ids or none;
every claim cites at least one supporting chunk.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError, RecordErrors
from rag_eval_pipeline.core.sources._records import (
    INT32_MAX,
    Fields,
    int_in_range,
    normalise_id,
    read_records,
    short_repr,
    twin_note,
)

GOLDEN_RAW_SCHEMA = pl.Schema({k: v for k, v in tables.SCHEMAS["golden_set"].items() if k != "golden_version"})
DEFAULT_USER_GROUPS = ("customers",)
_ALLOWED_KEYS = tuple(GOLDEN_RAW_SCHEMA) + ("notes", "golden_version")
_CANONICAL_HEADER = "golden_set/v1"


def empty_golden_raw() -> pl.DataFrame:
    """An empty golden_raw frame (the golden_set schema minus ``golden_version``)."""
    return pl.DataFrame(schema=GOLDEN_RAW_SCHEMA)


def segment_tags(value, fields: Fields, field: str = "segments") -> list[str]:
    """Normalise segments to sorted ``"key=value"`` tags.

    Input: a mapping of key to scalar, a list of ``"key=value"`` strings, or None. Output: sorted list.
    Raises InputError (via ``fields``) for another shape, an empty key, a key holding '=' or a key
    given twice.
    """
    if value is None:
        return []
    tags: list[str] = []
    if isinstance(value, dict):
        for key, val in value.items():
            if not isinstance(key, str) or not key.strip() or "=" in key:
                raise fields.error(f"{field}.{key}", "expected a non-empty segment key without '='")
            if isinstance(val, bool):
                val = "true" if val else "false"
            elif val is None or not isinstance(val, (str, int, float)):
                raise fields.error(f"{field}.{key}", f"got {short_repr(val)}; expected a string or number")
            tags.append(f"{key.strip()}={str(val).strip()}")
    elif isinstance(value, list):
        for i, tag in enumerate(value):
            if not isinstance(tag, str) or "=" not in tag or not tag.split("=", 1)[0].strip():
                raise fields.error(f"{field}[{i}]", f"got {short_repr(tag)}; expected a 'key=value' string")
            key, val = tag.split("=", 1)
            tags.append(f"{key.strip()}={val.strip()}")
    else:
        raise fields.error(field, f"got {type(value).__name__}; expected an object of key: value or a list of "
                                  "'key=value' strings")
    keys = [t.split("=", 1)[0] for t in tags]
    for key in keys:
        if keys.count(key) > 1:
            raise fields.error(field, f"segment key {key!r} given twice; expected each key once")
    return sorted(tags)


def _relevant(value, fields: Fields) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fields.error("relevant", f"got {type(value).__name__}; expected a list of chunk ids or "
                                       "{chunk_id, grade} objects")
    out: list[dict] = []
    seen: dict[str, str] = {}  # NFC chunk id -> id as written
    for i, item in enumerate(value):
        chunk_id: object  # checked to be a non-empty string below
        if isinstance(item, str):
            chunk_id, grade = item, 1
        elif isinstance(item, dict):
            extra = sorted(k for k in item if k not in ("chunk_id", "grade"))
            if extra:
                raise fields.error(f"relevant[{i}]", f"unknown key(s) {short_repr(extra)}; expected chunk_id and grade")
            chunk_id, grade = item.get("chunk_id"), item.get("grade", 1)
            if grade is None:
                grade = 1
        else:
            raise fields.error(f"relevant[{i}]", f"got {short_repr(item)}; expected a chunk id string or "
                                                 "{chunk_id, grade} object")
        if not isinstance(chunk_id, str) or not chunk_id.strip():
            raise fields.error(f"relevant[{i}].chunk_id", f"got {short_repr(chunk_id)}; expected a chunk id 'doc_id#n'")
        if not int_in_range(grade, 0):
            raise fields.error(f"relevant[{i}].grade", f"got {short_repr(grade)}; expected a whole number >= 0 and "
                                                       f"<= {INT32_MAX}")
        written, chunk_id = chunk_id, normalise_id(chunk_id)
        if chunk_id in seen:
            note = twin_note(seen[chunk_id], written)
            raise fields.error(f"relevant[{i}]", f"chunk {chunk_id!r} listed twice{note}; expected each chunk once")
        seen[chunk_id] = written
        out.append({"chunk_id": chunk_id, "grade": int(grade)})
    return out


def _relevant_docs(value, fields: Fields) -> list[dict]:
    """``relevant_docs``: doc ids (grade 1) or ``{doc_id, grade}`` objects, each document once (NFC)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise fields.error("relevant_docs", f"got {type(value).__name__}; expected a list of doc ids or "
                                            "{doc_id, grade} objects")
    out: list[dict] = []
    seen: dict[str, str] = {}
    for i, item in enumerate(value):
        where = f"relevant_docs[{i}]"
        doc_id: object  # checked below: a non-blank string
        if isinstance(item, str):
            doc_id, grade = item, 1
        elif isinstance(item, dict):
            extra = sorted(k for k in item if k not in ("doc_id", "grade"))
            if extra:
                raise fields.error(where, f"unknown key(s) {short_repr(extra)}; expected doc_id and grade")
            doc_id, grade = item.get("doc_id"), item.get("grade", 1)
            grade = 1 if grade is None else grade
        else:
            raise fields.error(where, f"got {short_repr(item)}; expected a doc id string or {{doc_id, grade}} object")
        if not isinstance(doc_id, str) or not doc_id.strip():
            raise fields.error(f"{where}.doc_id", f"got {short_repr(doc_id)}; expected a document id")
        if not int_in_range(grade, 0):
            raise fields.error(f"{where}.grade", f"got {short_repr(grade)}; expected a whole number >= 0 and "
                                                 f"<= {INT32_MAX}")
        written, doc_id = doc_id, normalise_id(doc_id.strip())
        if doc_id in seen:
            raise fields.error(where, f"document {doc_id!r} listed twice{twin_note(seen[doc_id], written)}; expected "
                                      "each document once")
        seen[doc_id] = written
        out.append({"doc_id": doc_id, "grade": int(grade)})
    return out


def _claims(value, fields: Fields) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise fields.error("claims", f"got {type(value).__name__}; expected a list of claim objects")
    out: list[dict] = []
    ids: set[str] = set()
    for i, item in enumerate(value):
        where = f"claims[{i}]"
        if not isinstance(item, dict):
            raise fields.error(where, f"got {short_repr(item)}; expected an object with claim_id, text, supporting")
        extra = sorted(k for k in item if k not in ("claim_id", "text", "supporting", "importance"))
        if extra:
            raise fields.error(where, f"unknown key(s) {short_repr(extra)}; expected claim_id, text, supporting, "
                                      "importance")
        claim_id = item.get("claim_id")
        if claim_id is None:
            claim_id = f"c{i + 1}"
        if not isinstance(claim_id, str) or not claim_id.strip():
            raise fields.error(f"{where}.claim_id", f"got {short_repr(claim_id)}; expected a non-empty string")
        if claim_id in ids:
            raise fields.error(f"{where}.claim_id", f"claim id {short_repr(claim_id)} used twice; expected unique ids")
        ids.add(claim_id)
        text = item.get("text")
        if not isinstance(text, str) or not text.strip():
            raise fields.error(f"{where}.text", f"got {short_repr(text)}; expected the claim as a non-empty string")
        supporting = item.get("supporting")
        if supporting is None:
            supporting = []
        if not isinstance(supporting, list):
            raise fields.error(f"{where}.supporting", f"got {short_repr(supporting)}; expected a list of chunk ids")
        first: dict[str, str] = {}  # NFC chunk id -> id as written
        for j, cid in enumerate(supporting):
            if not isinstance(cid, str) or not cid.strip():
                raise fields.error(f"{where}.supporting[{j}]", f"got {short_repr(cid)}; expected a chunk id 'doc_id#n'")
            nfc = normalise_id(cid)
            if nfc in first:
                raise fields.error(f"{where}.supporting[{j}]", f"{nfc!r} listed twice{twin_note(first[nfc], cid)}; "
                                                               "expected each chunk once")
            first[nfc] = cid
        importance = item.get("importance")
        if importance is None:
            importance = "vital"
        if importance not in tables.NUGGET_IMPORTANCE:
            raise fields.error(f"{where}.importance", f"got {short_repr(importance)}; expected one of "
                                                      f"{list(tables.NUGGET_IMPORTANCE)} (default vital)")
        out.append({"claim_id": claim_id, "text": text, "supporting": list(first), "importance": importance})
    return out


def parse_golden_record(record: dict, path: str, line: int) -> dict:
    """Check and normalise one golden record (format in the module docstring).

    Output: a dict with the golden_raw columns. Raises InputError naming file, line and field.
    """
    f = Fields(record, path, line)
    f.check_keys(_ALLOWED_KEYS)
    qid = f.string("question_id", required=True, non_empty=True).strip()  # NFC in validate_golden
    question = f.string("question", required=True, non_empty=True)
    answerability = f.string("answerability", required=True, choices=tables.ANSWERABILITY)
    split = f.string("split", required=True, choices=tables.SPLITS)
    reference = f.string("reference_answer")
    groups = record.get("user_groups")
    user_groups = f.string_list("user_groups", unique=True) if groups is not None else list(DEFAULT_USER_GROUPS)
    return {
        "question_id": qid,
        "question": question,
        "answerability": answerability,
        "relevant": _relevant(record.get("relevant"), f),
        "relevant_docs": _relevant_docs(record.get("relevant_docs"), f),
        "reference_answer": reference,
        "claims": _claims(record.get("claims"), f),
        "split": split,
        "segments": segment_tags(record.get("segments"), f),
        "user_groups": sorted(user_groups),
    }


def load_golden(path: str | Path) -> pl.DataFrame:
    """Read a golden set file.

    Input: a ``.jsonl`` / ``.ndjson`` or ``.parquet`` path (format in the module docstring).
    Output: the golden_raw frame (the ``golden_set`` schema of core/tables.py minus ``golden_version``),
    one row per question in file order; chunk ids in Unicode NFC, question ids as written (repeats,
    NFC/NFD twins included, are reported by :func:`validate_golden`, with their code points).
    Raises InputError naming the file, the line (Parquet: row) and the field for: a missing file or
    one that is not a regular file; bad UTF-8; a malformed JSON line or a cut-off last line; a
    non-object line; an unknown field; a missing or empty question_id; an empty question; an unknown
    answerability; a missing or unknown split; a grade outside 0..2147483647; a malformed relevant /
    claims / segments / user_groups value.
    Definition: module docstring (SQuAD 2.0's classes plus clarification; TREC qrels grades).
    """
    p = Path(path)
    rows = []
    bad = RecordErrors()  # every bad record is named (check prints them all), not only the first
    for line, rec in read_records(p):
        try:
            rows.append(parse_golden_record(rec, str(p), line))
        except InputError as exc:
            bad.add(exc)
    bad.raise_any()
    if not rows:
        return empty_golden_raw()
    return pl.DataFrame(rows, schema=GOLDEN_RAW_SCHEMA)


def _record_lines(source, n: int) -> list[int]:
    """Line numbers of the n records when ``source`` is the JSONL file they came from; else 1..n."""
    if source is not None:
        p = Path(source)
        if p.suffix.lower() in (".jsonl", ".ndjson") and p.is_file():
            try:
                text = p.read_bytes().decode("utf-8-sig").replace("\r\n", "\n").replace("\r", "\n")
            except UnicodeDecodeError:
                text = ""
            lines = [i + 1 for i, line in enumerate(text.split("\n")) if line.strip()]
            if len(lines) == n:
                return lines
    return list(range(1, n + 1))


def _canonical_json(row: tuple) -> str:
    return json.dumps(list(row), ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _canonical_claims(row: tuple, at: int) -> tuple:
    """The row with each claim's (at position ``at``) default importance (vital, or null) left out, so that
    a golden set written before importance existed keeps its version, and marking a claim okay changes it."""
    claims = [{k: v for k, v in c.items() if not (k == "importance" and v in (None, "vital"))}
              for c in (row[at] or [])]
    return (*row[:at], claims, *row[at + 1:])


def golden_version(golden_raw: pl.DataFrame) -> str:
    """Content hash of a golden set: sha256 over a header line and one JSON array per question
    (columns of golden_raw in declared order; a claim's default importance left out), sorted by
    question_id. Output: 64 hex chars. ``relevant_docs`` enters the hash only when some question has one,
    so a golden set without document-level relevance keeps the version it had before that column existed."""
    columns = [c for c in GOLDEN_RAW_SCHEMA if c != "relevant_docs" or has_doc_relevance(golden_raw)]
    if "relevant_docs" not in golden_raw.columns:  # a frame from before document-level relevance
        no_docs = pl.lit([], dtype=GOLDEN_RAW_SCHEMA["relevant_docs"])
        golden_raw = golden_raw.with_columns(no_docs.alias("relevant_docs"))
    df = tables.conform(golden_raw.select(list(GOLDEN_RAW_SCHEMA)).with_columns(pl.lit("").alias("golden_version")),
                        "golden_set").select(columns).sort("question_id")
    claims_at = columns.index("claims")
    h = hashlib.sha256()
    h.update((_CANONICAL_HEADER + "\n").encode())
    for row in df.iter_rows():
        h.update(_canonical_json(_canonical_claims(row, claims_at)).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


def has_doc_relevance(golden: pl.DataFrame) -> bool:
    """Whether some question of a golden frame gives ``relevant_docs`` (False when the column is absent)."""
    return "relevant_docs" in golden.columns and bool((golden["relevant_docs"].list.len().fill_null(0) > 0).any())


def with_relevant_docs(golden: pl.DataFrame) -> pl.DataFrame:
    """A golden frame with a ``relevant_docs`` column (empty lists where absent or null), for frames made
    before the column existed. Output: the same rows and columns, plus or filled ``relevant_docs``."""
    dtype = tables.SCHEMAS["golden_set"]["relevant_docs"]
    if "relevant_docs" not in golden.columns:
        return golden.with_columns(pl.lit([], dtype).alias("relevant_docs"))
    return golden.with_columns(pl.col("relevant_docs").cast(dtype).fill_null(pl.lit([], dtype)))


def normalise_golden_ids(golden_raw: pl.DataFrame) -> pl.DataFrame:
    """The same frame with ``question_id``, relevant ``chunk_id`` and claim ``supporting`` ids in Unicode NFC.

    Input/output: a golden_raw (or golden_set) frame. Definition: Unicode Standard Annex #15 (NFC).
    """
    return with_relevant_docs(golden_raw).with_columns(
        pl.col("question_id").str.normalize("NFC"),
        pl.col("relevant").list.eval(pl.element().struct.with_fields(pl.field("chunk_id").str.normalize("NFC"))),
        pl.col("relevant_docs").list.eval(pl.element().struct.with_fields(pl.field("doc_id").str.normalize("NFC"))),
        pl.col("claims").list.eval(pl.element().struct.with_fields(
            pl.field("supporting").list.eval(pl.element().str.normalize("NFC")))),
    )


def validate_golden(golden_raw: pl.DataFrame, snapshot: pl.DataFrame, source: str | Path | None = None
                    ) -> pl.DataFrame:
    """Check a golden set against a corpus snapshot and stamp its version.

    Input: a golden_raw frame (from :func:`load_golden`, ``load_beir`` or ``load_squad_v2``), the
    ``corpus_snapshot`` table, and ``source``: the file or dataset it came from (used in messages;
    when it is the JSONL file itself, rows are reported by their physical line number).
    Output: the ``golden_set`` table (core/tables.py), same rows and order, ids in Unicode NFC, a
    claim's missing ``importance`` set to ``vital``, with ``golden_version`` = :func:`golden_version`
    (a content hash of the questions, independent of row order).
    Raises InputError naming the source, the line (or row) and the field for: a duplicate
    question_id (after NFC; twins are shown with their code points); an unknown answerability or
    split; a relevant or supporting chunk id missing from the snapshot; an absent question with
    relevant ids or claims; an answerable question with no relevant id of grade >= 1, or none its
    user_groups may read (acl); a claim with no supporting id, or an importance other than vital / okay.
    SchemaError when the frame lacks golden_raw columns.
    Definition: module docstring.
    """
    if "golden_version" in golden_raw.columns:
        golden_raw = golden_raw.drop("golden_version")
    golden_raw = with_relevant_docs(golden_raw)
    golden_raw = tables.conform(golden_raw.with_columns(pl.lit("").alias("golden_version")), "golden_set"
                                ).drop("golden_version")
    written_qids = golden_raw["question_id"].to_list()
    golden_raw = normalise_golden_ids(golden_raw)
    src = str(source) if source is not None else None
    lines = _record_lines(source, golden_raw.height)
    chunk_acl = {cid: acl or [] for cid, acl in zip(snapshot["chunk_id"].to_list(), snapshot["acl"].to_list())}
    chunks_by_doc: dict[str, int] = {}
    doc_acls: dict[str, list[list[str]]] = {}
    for doc_id, acl in zip(snapshot["doc_id"].to_list(), snapshot["acl"].to_list()):
        chunks_by_doc[doc_id] = chunks_by_doc.get(doc_id, 0) + 1
        doc_acls.setdefault(doc_id, []).append(acl or [])

    def unknown_chunk(chunk_id: str) -> str:
        doc = chunk_id.rsplit("#", 1)[0]
        if "#" in chunk_id and doc in chunks_by_doc:
            hint = f"document {doc!r} has chunks #0..#{chunks_by_doc[doc] - 1}"
        elif "#" in chunk_id:
            hint = f"no document {doc!r} in the snapshot"
        elif chunk_id in chunks_by_doc:
            hint = f"{chunk_id!r} is a document id: list it in relevant_docs, or name one of its chunks"
        else:
            hint = "no chunk has that id"
        return f"chunk {chunk_id!r} is not in the corpus snapshot ({hint}); expected an existing chunk id"

    first_line: dict[str, tuple[int, int]] = {}  # question id -> (line, row index)
    for index, (line, row) in enumerate(zip(lines, golden_raw.iter_rows(named=True))):
        def err(field: str, message: str, *, row: dict = row, line: int = line) -> InputError:
            return InputError(f"question {row['question_id']!r}: {message}", path=src, line=line, field=field)

        qid = row["question_id"]
        if not qid:
            raise err("question_id", "empty; expected a non-empty id")
        if qid in first_line:
            note = twin_note(written_qids[first_line[qid][1]], written_qids[index])
            raise err("question_id", f"duplicate question_id, first seen on line {first_line[qid][0]}{note}; "
                                     "expected unique ids")
        first_line[qid] = (line, index)
        if not (row["question"] or "").strip():
            raise err("question", "empty; expected the question text")
        if row["answerability"] not in tables.ANSWERABILITY:
            raise err("answerability", f"unknown value {row['answerability']!r}; expected one of "
                                       f"{list(tables.ANSWERABILITY)}")
        if row["split"] not in tables.SPLITS:
            raise err("split", f"unknown value {row['split']!r}; expected one of {list(tables.SPLITS)}")
        relevant = row["relevant"] or []
        for i, rel in enumerate(relevant):
            if rel["chunk_id"] not in chunk_acl:
                raise err(f"relevant[{i}]", unknown_chunk(rel["chunk_id"]))
            if rel["grade"] is None or rel["grade"] < 0:
                raise err(f"relevant[{i}].grade", f"got {rel['grade']!r}; expected a whole number >= 0")
        claims = row["claims"] or []
        for i, claim in enumerate(claims):
            if claim.get("importance") not in (None, *tables.NUGGET_IMPORTANCE):
                raise err(f"claims[{i}].importance", f"got {claim['importance']!r}; expected one of "
                                                     f"{list(tables.NUGGET_IMPORTANCE)} (default vital)")
            if not claim["supporting"]:
                raise err(f"claims[{i}].supporting", "no supporting chunk; expected the chunk ids a person "
                                                     "checked support the claim")
            for j, cid in enumerate(claim["supporting"]):
                if cid not in chunk_acl:
                    raise err(f"claims[{i}].supporting[{j}]", unknown_chunk(cid))
        relevant_docs = row["relevant_docs"] or []
        for i, rel in enumerate(relevant_docs):
            if rel["doc_id"] not in chunks_by_doc:
                hint = (f"{rel['doc_id']!r} is a chunk id: list it in relevant, or name its document"
                        if rel["doc_id"] in chunk_acl else "no document has that id")
                raise err(f"relevant_docs[{i}]", f"document {rel['doc_id']!r} is not in the corpus snapshot ({hint}); "
                                                 "expected the doc_id of an existing document")
        positive = [r["chunk_id"] for r in relevant if r["grade"] >= 1]
        positive_docs = [r["doc_id"] for r in relevant_docs if r["grade"] >= 1]
        if row["answerability"] == "absent":
            if relevant:
                raise err("relevant", f"an absent question lists relevant chunks {[r['chunk_id'] for r in relevant]}; "
                                      "expected none (or label it answerable)")
            if relevant_docs:
                raise err("relevant_docs", f"an absent question lists relevant documents "
                                           f"{[r['doc_id'] for r in relevant_docs]}; expected none (or label it "
                                           "answerable)")
            if claims:
                raise err("claims", "an absent question has claims; expected none")
        elif row["answerability"] == "answerable":
            if not positive and not positive_docs:
                raise err("relevant", "an answerable question has no relevant chunk (or document, relevant_docs) with "
                                      "grade >= 1; expected at least one (or label it absent)")
            groups = set(row["user_groups"] or [])
            readable = [c for c in positive if not chunk_acl[c] or groups & set(chunk_acl[c])]
            readable += [d for d in positive_docs if any(not a or groups & set(a) for a in doc_acls[d])]
            if not readable:
                field = "relevant" if positive else "relevant_docs"
                raise err(field, f"user groups {sorted(groups)} may read none of the relevant chunks or documents "
                                 f"{positive + positive_docs}; for this user the answer is absent from the "
                                 "authorised corpus: expected answerability 'absent'")
    version = golden_version(golden_raw)
    golden_raw = golden_raw.with_columns(pl.col("claims").list.eval(pl.element().struct.with_fields(
        pl.field("importance").fill_null("vital"))))  # a claim without importance is vital
    out = golden_raw.with_columns(pl.lit(version).alias("golden_version"))
    return tables.conform(out, "golden_set")
