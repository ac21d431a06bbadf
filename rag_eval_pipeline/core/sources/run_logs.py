"""Import the log of an external RAG system (JSONL or Parquet) as ``rag_runs`` rows.

Log schema: one JSON object per line (or one Parquet row) per question
-----------------------------------------------------------------------
==================  ===============================================================================
field               meaning
==================  ===============================================================================
question_id         required, non-empty string; each question once per log (ids are compared in
                    Unicode NFC: an NFD twin of an id is the same id)
retrieved           required list (may be empty) of hits ``{"chunk_id", "score", "rank"}`` as the
                    system ranked them. ``chunk_id`` required (``doc_id#n`` of the evaluated
                    snapshot, read as NFC); ``score`` optional, a finite number (NaN / Infinity
                    and numbers beyond a 64-bit float are errors; missing → null); ``rank``
                    optional, a whole number from 1 to 2147483647, unique within the question.
                    Give ``rank`` on every hit or on none: without it, list order is the rank
                    (1, 2, ...). Hits are stored sorted by rank. A chunk may appear once.
                    A bare string is read as ``{"chunk_id": <string>}``. A hit may give the
                    passage ``text`` instead of ``chunk_id``: it is aligned to the snapshot's
                    chunks by text (``core/systems/id_mapping.py``); the system's own ids are
                    translated by the system's ``chunk_map``.
decision            required: ``answer`` / ``abstain`` / ``clarify`` / ``error``
answer              the final text shown to the user (required, non-empty, when decision is
                    ``answer``; optional otherwise: an abstention message or clarifying question)
citations           list of chunk ids the answer cites; default ``[]``
error               why the run failed; only allowed when decision is ``error`` (an ``error`` row
                    without it is counted as "(no reason given)"; ``check`` warns: :func:`contradictions`)
system              optional; when present it must equal the system name the log is imported as
corpus_version      optional; when present it must equal the evaluated snapshot's version
golden_version      optional; when present it must equal the evaluated golden set's version
model, prompt_version   optional strings (run manifest)
retriever, generator    optional: a string, or an object (stored as canonical JSON, sorted keys)
metadata            optional free-form object (latency, cost, trace ids ...); not stored
latency_ms          optional finite number >= 0: the system's time for this question, in ms
system_version, trace_id, decision_rule   optional strings (as in ``rag_runs``)
==================  ===============================================================================

Any other field is an error. Blank lines are skipped; a BOM and CRLF are repaired; a last line cut
off mid-object is reported as such. The fields are what a run must keep to be reproduced and
compared: corpus version, model, instructions (prompt), retriever configuration,
retrieved ids, the answer / abstain / clarify decision, final text and citations.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError, RecordErrors
from rag_eval_pipeline.core.sources._records import (
    INT32_MAX,
    Fields,
    finite_number,
    int_in_range,
    normalise_id,
    read_records,
    short_repr,
    twin_note,
)

LOG_FIELDS = ("question_id", "retrieved", "decision", "answer", "citations", "error", "system",
              "corpus_version", "golden_version", "model", "prompt_version", "retriever", "generator",
              "metadata", "latency_ms", "system_version", "trace_id", "decision_rule")


def _config_text(f: Fields, field: str) -> str | None:
    value = f.record.get(field)
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    raise f.error(field, f"got {type(value).__name__} {short_repr(value)}; expected a string or an object")


def _unknown_chunk(chunk_id: str, known_chunks) -> str:
    """Message for a chunk id outside the snapshot (only built on the error path: it scans the ids)."""
    doc = chunk_id.rsplit("#", 1)[0]
    n = sum(1 for c in known_chunks if c.rsplit("#", 1)[0] == doc)
    hint = f"document {doc!r} has chunks #0..#{n - 1}" if n else f"no document {doc!r} in the snapshot"
    return (f"chunk {chunk_id!r} is not in the corpus snapshot ({hint}); expected a chunk id of the evaluated "
            "snapshot (re-run the system on this corpus version)")


def _unknown_mapped(system_id: str, mapped: str, ids, known_chunks) -> str:
    """Message for a system id that maps to no chunk of the snapshot (with or without a chunk_map)."""
    if system_id == mapped and not ids.configured:
        return _unknown_chunk(mapped, known_chunks) if "#" in mapped else (
            f"chunk {mapped!r} is not in the corpus snapshot: {ids.describe_unknown(system_id)}")
    shown = f"{system_id!r}" + (f" (read as {mapped!r})" if mapped != system_id else "")
    return f"{shown} names no chunk of the corpus snapshot: {ids.describe_unknown(system_id)}"


def _id_shape(known_chunks, ids) -> str:
    """What a hit must give, in the words of the evaluated corpus: a chunk id shaped like the snapshot's own (an
    example, so a ``source: chunks`` corpus with ids ``acme-001`` is not told ``doc_id#n``), and, when the hit can
    be aligned by text (``ids`` given), the passage ``text`` instead."""
    example = min(known_chunks) if known_chunks else None
    shape = f"a chunk id of the corpus snapshot (like {example!r})" if example else "a chunk id 'doc_id#n'"
    if ids is not None and ids.configured:
        shape += ", as this system writes it before its chunk_map"
    return shape + (", or the passage as \"text\" (aligned to the corpus by text)" if ids is not None else "")


def _hits(f: Fields, known_chunks=None, require_scores: bool = False, ids=None) -> list[dict]:
    value = f.record.get("retrieved", ...)
    if value is ...:
        raise f.error("retrieved", "missing; expected a list of {chunk_id, score, rank} hits (may be empty)")
    if value is None:
        value = []
    if not isinstance(value, list):
        raise f.error("retrieved", f"got {type(value).__name__}; expected a list of {{chunk_id, score, rank}} hits")
    hits: list[dict] = []
    seen: dict[str, tuple[int, str]] = {}  # NFC chunk id -> (position, id as written)
    for i, hit in enumerate(value):
        where = f"retrieved[{i}]"
        if isinstance(hit, str):
            hit = {"chunk_id": hit}
        if not isinstance(hit, dict):
            raise f.error(where, f"got {short_repr(hit)}; expected an object {{chunk_id, score, rank}}")
        extra = sorted(k for k in hit if k not in ("chunk_id", "score", "rank", "text"))
        if extra:
            raise f.error(where, f"unknown key(s) {short_repr(extra)}; expected chunk_id (or text), score, rank")
        written = hit.get("chunk_id")
        passage = hit.get("text")
        if written is None and passage is not None and ids is not None:
            if not isinstance(passage, str) or not passage.strip():
                raise f.error(f"{where}.text", f"got {short_repr(passage)}; expected the passage text (or a chunk_id)")
            aligned = ids.text(passage, f.record.get("question_id") or "", i + 1)
            if aligned is None:  # counted and listed by the mapper; left out of the ranking
                continue
            written = aligned
        if not isinstance(written, str) or not written.strip():
            raise f.error(f"{where}.chunk_id", f"got {short_repr(written)}; expected {_id_shape(known_chunks, ids)}")
        chunk_id = normalise_id(written)
        if chunk_id in seen:
            at, first = seen[chunk_id]
            raise f.error(f"{where}.chunk_id", f"chunk {chunk_id!r} retrieved twice for one question (also at "
                                               f"retrieved[{at}]){twin_note(first, written)}; expected each chunk once")
        seen[chunk_id] = (i, written)
        score = hit.get("score")
        if score is not None and not finite_number(score):
            raise f.error(f"{where}.score", f"got {short_repr(score)}; expected a finite number or null")
        if score is None and require_scores:
            raise f.error(f"{where}.score", "score missing, and ranking_mode 'trec_eval' orders hits by score; "
                                            "expected a finite number on every hit (or ranking_mode 'system')")
        rank = hit.get("rank")
        if rank is not None:
            if not int_in_range(rank, 1):
                raise f.error(f"{where}.rank", f"got {short_repr(rank)}; expected a whole number >= 1 and <= "
                                               f"{INT32_MAX}")
            rank = int(rank)
        hits.append({"chunk_id": chunk_id, "score": None if score is None else float(score), "rank": rank,
                     "_at": i})
    if ids is not None:  # the system's ids -> snapshot chunk ids; two ids on one chunk keep the first
        mapped: set[str] = set()
        kept = []
        for hit in hits:
            system_id = hit["chunk_id"]
            hit["chunk_id"] = ids.chunk(system_id)
            if known_chunks is not None and hit["chunk_id"] not in known_chunks:
                raise f.error(f"retrieved[{hit['_at']}].chunk_id", _unknown_mapped(system_id, hit["chunk_id"], ids,
                                                                                   known_chunks))
            if hit["chunk_id"] in mapped:
                ids.count_duplicate()
                continue
            mapped.add(hit["chunk_id"])
            kept.append(hit)
        hits = kept
    if known_chunks is not None:  # after the repeat check: an NFC/NFD twin is reported as a repeat first
        for hit in hits:
            if hit["chunk_id"] not in known_chunks:
                raise f.error(f"retrieved[{hit['_at']}].chunk_id", _unknown_chunk(hit["chunk_id"], known_chunks))
    with_rank = sum(1 for h in hits if h["rank"] is not None)
    if 0 < with_rank < len(hits):
        missing = next(h["_at"] for h in hits if h["rank"] is None)
        raise f.error(f"retrieved[{missing}].rank", "rank given on some hits but not on this one; expected rank on "
                                                    "every hit or on none")
    if with_rank == 0:
        for hit in hits:
            hit["rank"] = hit["_at"] + 1  # list order (an unmatched passage keeps its place empty)
    else:
        index_of_rank: dict[int, int] = {}
        for hit in hits:
            if hit["rank"] in index_of_rank:
                raise f.error(f"retrieved[{hit['_at']}].rank",
                              f"rank {hit['rank']} repeated (also retrieved[{index_of_rank[hit['rank']]}]); "
                              "expected distinct ranks")
            index_of_rank[hit["rank"]] = hit["_at"]
        hits.sort(key=lambda h: h["rank"])
    for hit in hits:
        del hit["_at"]
    return hits


def _citations(f: Fields, ids=None) -> list[str]:
    """The cited chunk ids, NFC, each once (an NFD twin of an earlier citation is a repeat); with ``ids``
    (the system's id mapper) translated to snapshot chunk ids, a citation mapped onto an earlier one dropped."""
    written = f.string_list("citations")
    first: dict[str, str] = {}
    out = []
    for j, cid in enumerate(written):
        nfc = normalise_id(cid)
        if nfc in first:
            raise f.error(f"citations[{j}]", f"{nfc!r} appears twice{twin_note(first[nfc], cid)}; expected unique "
                                             "values")
        first[nfc] = cid
        out.append(nfc)
    if ids is not None:
        out = list(dict.fromkeys(ids.chunk(c) for c in out))
    return out


def parse_run_record(record: dict, path: str | None, line: int | None, system: str, corpus_version: str,
                     golden_version: str, *, known_chunks=None, require_scores: bool = False, ids=None) -> dict:
    """Check and normalise one log record (schema in the module docstring).

    ``known_chunks``: when given (a set of chunk ids of the evaluated snapshot), every retrieved and
    cited chunk id must be in it. ``require_scores``: every hit must carry a score (metrics that rank
    by score, ``ranking_mode: trec_eval``). ``ids``: the system's
    :class:`~rag_eval_pipeline.core.systems.id_mapping.IdMapper` (its ``chunk_map``, and alignment of
    hits that give ``text`` instead of ``chunk_id``); None reads ids as snapshot chunk ids.
    Output: a dict with the ``rag_runs`` columns. Raises InputError naming file, line and field.
    """
    f = Fields(record, path, line)
    f.check_keys(LOG_FIELDS)
    qid = normalise_id(f.string("question_id", required=True, non_empty=True).strip())
    logged_system = f.string("system")
    if logged_system is not None and logged_system != system:
        raise f.error("system", f"the log says system {logged_system!r} but it is imported as {system!r}; "
                                "expected the same name")
    logged_cv = f.string("corpus_version")
    if logged_cv is not None and logged_cv != corpus_version:
        raise f.error("corpus_version", f"the run used corpus version {logged_cv!r} but the evaluated snapshot is "
                                        f"{corpus_version!r}; expected the same version (re-run the system on this "
                                        "snapshot)")
    logged_gv = f.string("golden_version")
    if logged_gv is not None and logged_gv != golden_version:
        raise f.error("golden_version", f"the run used golden version {logged_gv!r} but the evaluated golden set "
                                        f"is {golden_version!r}; expected the same version")
    decision = f.string("decision", required=True, choices=tables.DECISIONS)
    answer = f.string("answer")
    if decision == "answer" and (answer is None or not answer.strip()):
        raise f.error("answer", "decision is 'answer' but the answer is missing or empty; expected the answer text")
    error = f.string("error")
    if error is not None and decision != "error":
        raise f.error("error", f"an error is logged but decision is {decision!r}; expected decision 'error'")
    if "metadata" in record and record["metadata"] is not None and not isinstance(record["metadata"], dict):
        raise f.error("metadata", f"got {type(record['metadata']).__name__}; expected an object")
    hits = _hits(f, known_chunks, require_scores, ids)
    citations = _citations(f, ids)
    if known_chunks is not None:
        for j, cid in enumerate(citations):
            if cid not in known_chunks:
                raise f.error(f"citations[{j}]", _unknown_chunk(cid, known_chunks))
    return {
        "system": system,
        "question_id": qid,
        "retrieved": hits,
        "decision": decision,
        "answer": answer,
        "citations": citations,
        "error": error,
        "corpus_version": corpus_version,
        "golden_version": golden_version,
        "retriever": _config_text(f, "retriever"),
        "generator": _config_text(f, "generator"),
        "model": f.string("model"),
        "prompt_version": f.string("prompt_version"),
        "latency_ms": _latency(f),
        "system_version": f.string("system_version"),
        "trace_id": f.string("trace_id"),
        "decision_rule": f.string("decision_rule"),
    }


def contradictions(record: dict) -> list[tuple[str, str]]:
    """What a well-formed log record says that its ``decision`` contradicts (kept by the run, but not as the
    system meant it): ``(field, message)`` pairs, empty when none. An ``error`` row's ``answer`` and ``citations``
    are never judged or scored; an ``error`` row without its ``error`` reason is counted as "(no reason given)";
    an ``abstain`` row's ``answer`` is its abstention message (allowed), but with citations it reads as an answer
    that is never judged or scored. Input: one
    record that :func:`parse_run_record` accepts. Raises nothing. Definition: the log schema (module docstring).
    """
    decision = record.get("decision")
    answer = record.get("answer")
    has_answer = isinstance(answer, str) and bool(answer.strip())
    out: list[tuple[str, str]] = []
    if decision == "error":
        if has_answer:
            out.append(("answer", "decision is 'error' but an answer is logged; an error row's answer is never "
                                  "judged (decision 'answer' if the system did answer)"))
        if record.get("citations"):
            out.append(("citations", "decision is 'error' but citations are logged; an error row's citations are "
                                     "never scored"))
        reason = record.get("error")
        if not (isinstance(reason, str) and reason.strip()):
            out.append(("error", "decision is 'error' without an error reason; it is counted as '(no reason given)' "
                                 "(add \"error\": \"<why the run failed>\")"))
    elif decision == "abstain" and has_answer and record.get("citations"):
        out.append(("citations", "decision is 'abstain' with an answer text that cites chunks; it is kept as the "
                                 "abstention message, never judged or scored as an answer (decision 'answer' if the "
                                 "system answered)"))
    return out


def abstention_messages(path: str | Path) -> tuple[int, int | None]:
    """How many ``abstain`` records of a log carry an ``answer`` text (allowed: the abstention message shown to
    the user, never judged as an answer) and the line of the first (None when none). Raises as
    :func:`read_records`."""
    lines = [line for line, r in read_records(Path(path)) if r.get("decision") == "abstain"
             and isinstance(r.get("answer"), str) and r["answer"].strip()]
    return len(lines), (lines[0] if lines else None)


def log_contradictions(path: str | Path, limit: int = 20) -> tuple[list[str], int]:
    """Every record of a log (:func:`read_records`) whose decision contradicts its other fields
    (:func:`contradictions`): up to ``limit`` lines ``file F, line N, field 'x': ...`` and the total count.
    Raises InputError as :func:`read_records` (the caller has already read the file once)."""
    lines: list[str] = []
    total = 0
    for line, record in read_records(Path(path)):
        for field, message in contradictions(record):
            total += 1
            if len(lines) < limit:
                lines.append(str(InputError(message, path=str(path), line=line, field=field)))
    return lines, total


def _latency(f: Fields) -> float | None:
    value = f.record.get("latency_ms")
    if value is None:
        return None
    if not finite_number(value) or value < 0:
        raise f.error("latency_ms", f"got {value!r}; expected a finite number of milliseconds >= 0")
    return float(value)


def load_run_log(path: str | Path, system: str, corpus_version: str, golden_version: str, *,
                 known_chunks=None, require_scores: bool = False, ids=None) -> pl.DataFrame:
    """Read a RAG system's log of answers to the golden questions.

    Input: a ``.jsonl`` / ``.ndjson`` / ``.parquet`` path (schema in the module docstring); the name
    the system is evaluated under; the corpus and golden versions being evaluated (stamped on every
    row, and compared with the log's own when it records them).
    Output: the ``rag_runs`` table (core/tables.py), one row per logged question, in file order;
    ``retrieved`` sorted by rank. An empty retrieval list is allowed.
    Raises InputError naming the file, the line (Parquet: row) and the field for: a missing file or
    other suffix; bad UTF-8; malformed JSON or a last line cut off mid-object; an unknown field; a
    missing question_id, retrieved or decision; a question logged twice; the same chunk twice in one
    retrieval list (ids are compared in Unicode NFC, and a message about two ids that differ only in
    normalisation gives their code points); a non-finite score (NaN, Infinity, an integer beyond a
    64-bit float); a rank that is not a whole number from 1 to 2147483647 (the Int32 column), is
    repeated, or is given on only some hits; an unknown decision; ``answer`` without answer text; an
    ``error`` on a decision other than ``error``; a ``system``, ``corpus_version`` or
    ``golden_version`` that differs from the one being evaluated (naming both); with ``known_chunks``
    (the snapshot's chunk ids), a retrieved or cited chunk id outside it; with ``require_scores``
    (``ranking_mode: trec_eval``), a hit without a score. Every bad record is read: one is raised alone, several
    as :class:`~rag_eval_pipeline.core.errors.InputErrors` (each, up to 20, and the count). ``ids``: as in
    :func:`parse_run_record`
    (what it mapped, aligned and left unmatched is in ``ids.stats()`` afterwards).
    Definition: module docstring (what to keep per run).
    """
    p = Path(path)
    rows: list[dict] = []
    first: dict[str, tuple[int, str]] = {}  # NFC question id -> (line, id as written)
    bad = RecordErrors()  # every bad record is named (check prints them all), not only the first
    for line, record in read_records(p):
        try:
            row = parse_run_record(record, str(p), line, system, corpus_version, golden_version,
                                   known_chunks=known_chunks, require_scores=require_scores, ids=ids)
        except InputError as exc:
            bad.add(exc)
            continue
        qid = row["question_id"]
        if qid in first:
            first_line, first_written = first[qid]
            written = str(record.get("question_id")).strip()
            bad.add(InputError(f"question {qid!r} logged twice (first on line {first_line})"
                             f"{twin_note(first_written, written)}; expected one record per question",
                               path=str(p), line=line, field="question_id"))
            continue
        first[qid] = (line, str(record.get("question_id")).strip())
        rows.append(row)
    bad.raise_any()
    if not rows:
        return tables.empty("rag_runs")
    return tables.conform(pl.DataFrame(rows, schema=tables.SCHEMAS["rag_runs"]), "rag_runs")
