"""The ``traces`` kind: OpenTelemetry traces that follow the OpenInference semantic conventions.

Sources (``path``: a file, or a folder whose ``*.jsonl``, ``*.json`` and ``*.parquet`` files are read
in name order; ``format`` ``auto`` tells them apart):

- ``otlp_json``: the OpenTelemetry Collector file exporter, one ``ExportTraceServiceRequest`` JSON
  object per line (OTLP/JSON: ``resourceSpans[].scopeSpans[].spans[]``, hex ``traceId`` /
  ``spanId``, typed ``attributes`` values);
- ``phoenix``: an Arize Phoenix spans export (``get_spans_dataframe()`` written as Parquet or JSON
  Lines): one span per row, ``context.trace_id``, ``context.span_id``, ``parent_id``,
  ``start_time``, ``end_time``, ``status_code``, ``status_message`` and ``attributes.*`` columns
  (nested values such as ``attributes.retrieval.documents`` are flattened to OpenInference keys).

Rules (OpenInference names, from ``openinference-semantic-conventions``):

- one trace is one question. It is matched by ``question_id_attribute`` (looked up on the root span,
  then the other spans; a dotted name descends into a JSON attribute such as ``metadata``), or,
  when that is not configured or absent, by the root span's ``input.value`` (or its ``question`` /
  ``query`` / ``input`` member when it is a JSON object) equal to a golden question after Unicode
  NFKC, case folding and whitespace collapsing. Unmatched traces and golden questions without a
  trace are counted and listed; a question without a trace gets an ``error`` row (``no_trace``).
  Two traces for one question: the later root span is kept, the other counted as a duplicate.
- retrieval: the RETRIEVER span (``openinference.span.kind``; the last one to start when there are
  several: what the generator saw) gives ``retrieval.documents.N.document.id`` / ``.score``, ranked
  by N. A document id maps to a chunk id by ``chunk_map`` (JSONL/Parquet with ``document_id``,
  ``chunk_id``), else as is when it is a chunk id of the snapshot (``doc_id#n``), else to
  ``doc_id#0`` when the document has exactly one chunk; anything else is an InputError.
- the answer is the root span's ``output.value``. The decision: ``decision_attribute`` when
  configured and present (``attribute``); else ``error`` when the root span's status is ERROR
  (``span_status``); else the rule of ``records.decide`` (``empty_output``, ``abstain_phrase``,
  ``default_answer``). ``decision_rule`` in ``rag_runs`` records which.
- ``latency_ms`` is the root span's duration; ``model`` the first LLM span's ``llm.model_name``;
  ``prompt_version`` its ``llm.prompt_template.version``.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources._records import decode_utf8, read_records
from rag_eval_pipeline.core.systems.records import RunContext, decide, error_row

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS
_DOC_KEY = re.compile(re.escape(DOCS) + r"\.(\d+)\.(.+)$")
_LISTED = 50


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    status_code: str  # OK / ERROR / UNSET
    status_message: str | None
    attributes: dict[str, Any]
    source: str  # file and line, for messages


@dataclass
class TraceImport:
    """The rows and the bookkeeping of one import (``info`` goes into the ``rag_runs`` metadata)."""

    rows: list[dict]
    info: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- reading


def _hex_id(value: Any, size: int) -> str | None:
    """A trace/span id as lower-case hex: OTLP/JSON writes hex; protobuf's JSON mapping base64."""
    if value in (None, ""):
        return None
    text = str(value)
    if re.fullmatch(r"[0-9a-fA-F]+", text) and len(text) == 2 * size:
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) == size else text


def _otlp_value(v: dict) -> Any:
    """One OTLP/JSON ``AnyValue``."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return int(v["intValue"])
    if "doubleValue" in v:
        return float(v["doubleValue"])
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "arrayValue" in v:
        return [_otlp_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return {kv["key"]: _otlp_value(kv.get("value", {})) for kv in (v["kvlistValue"] or {}).get("values", [])}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR", "UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}


def _read_otlp(path: Path) -> list[Span]:
    text = decode_utf8(path.read_bytes(), str(path))
    spans: list[Span] = []
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip():
            continue
        try:
            request = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise InputError(f"malformed JSON ({exc.msg} at column {exc.colno}); expected one "
                             "ExportTraceServiceRequest JSON object per line", path=str(path), line=lineno,
                             field="json") from None
        if not isinstance(request, dict) or "resourceSpans" not in request:
            raise InputError("not an OTLP ExportTraceServiceRequest (no 'resourceSpans'); expected the "
                             "OpenTelemetry Collector file exporter's format", path=str(path), line=lineno,
                             field="resourceSpans")
        for rs in request.get("resourceSpans") or []:
            for ss in (rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []):
                for s in ss.get("spans") or []:
                    trace_id = _hex_id(s.get("traceId"), 16)
                    span_id = _hex_id(s.get("spanId"), 8)
                    if not trace_id or not span_id:
                        raise InputError("a span without traceId or spanId; expected both", path=str(path),
                                         line=lineno, field="traceId")
                    status = s.get("status") or {}
                    spans.append(Span(
                        trace_id=trace_id, span_id=span_id, parent_id=_hex_id(s.get("parentSpanId"), 8),
                        name=s.get("name", ""),
                        start_ns=int(s["startTimeUnixNano"]) if s.get("startTimeUnixNano") else None,
                        end_ns=int(s["endTimeUnixNano"]) if s.get("endTimeUnixNano") else None,
                        status_code=_STATUS.get(status.get("code", 0), "UNSET"),
                        status_message=status.get("message"),
                        attributes={a["key"]: _otlp_value(a.get("value", {})) for a in s.get("attributes") or []},
                        source=f"file {path}, line {lineno}",
                    ))
    return spans


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    elif isinstance(value, list) and value and all(isinstance(x, dict) for x in value):
        for i, v in enumerate(value):
            _flatten(f"{prefix}.{i}", v, out)
    elif value is not None:
        out[prefix] = value


def _time_ns(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        return int(value.timestamp() * 1_000_000) * 1000
    if isinstance(value, (int, float)):
        return int(value)
    try:
        return _time_ns(dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return None


def _read_phoenix(path: Path) -> list[Span]:
    spans: list[Span] = []
    for line, row in read_records(path):
        trace_id = row.get("context.trace_id") or row.get("trace_id")
        span_id = row.get("context.span_id") or row.get("span_id")
        if not trace_id or not span_id:
            raise InputError("a span without context.trace_id or context.span_id; expected a Phoenix spans "
                             "export (get_spans_dataframe)", path=str(path), line=line, field="context.trace_id")
        attrs: dict[str, Any] = {}
        if isinstance(row.get("attributes"), dict):
            _flatten("", row["attributes"], attrs)
        for key, value in row.items():
            if key.startswith("attributes."):
                if isinstance(value, str) and key[len("attributes."):] == DOCS:
                    try:
                        value = json.loads(value)
                    except json.JSONDecodeError:
                        pass
                _flatten(key[len("attributes."):], value, attrs)
        if "span_kind" in row and KIND not in attrs and row["span_kind"]:
            attrs[KIND] = row["span_kind"]
        status = str(row.get("status_code") or "UNSET").upper()
        spans.append(Span(
            trace_id=str(trace_id), span_id=str(span_id), parent_id=row.get("parent_id") or None,
            name=row.get("name") or "", start_ns=_time_ns(row.get("start_time")), end_ns=_time_ns(row.get("end_time")),
            status_code=_STATUS.get(status, "UNSET"), status_message=row.get("status_message"),
            attributes=attrs, source=f"file {path}, line {line}",
        ))
    return spans


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".jsonl", ".json", ".parquet"))
    if path.is_file():
        return [path]
    raise InputError("file or folder not found; expected OTLP JSON or a Phoenix spans export", path=str(path))


def _format_of(path: Path) -> str:
    if path.suffix.lower() == ".parquet":
        return "phoenix"
    with path.open("rb") as fh:
        for raw in fh:
            if raw.strip():
                return "otlp_json" if b'"resourceSpans"' in raw else "phoenix"
    return "otlp_json"


def read_spans(path: str | Path, fmt: str = "auto") -> list[Span]:
    """Every span of an OTLP JSON file, a Phoenix export, or a folder of them (module docstring).

    Raises InputError naming the file and line for a missing path, malformed JSON, a line that is
    not an ExportTraceServiceRequest, or a span without trace or span id."""
    spans: list[Span] = []
    for p in _files(Path(path)):
        kind = _format_of(p) if fmt == "auto" else fmt
        spans.extend(_read_otlp(p) if kind == "otlp_json" else _read_phoenix(p))
    return spans


# ---------------------------------------------------------------- matching


def normalise_question(text: str | None) -> str:
    """NFKC, case-folded, whitespace collapsed: the form two question texts are compared in."""
    return " ".join(unicodedata.normalize("NFKC", text or "").casefold().split())


def lookup(attributes: dict[str, Any], name: str) -> Any:
    """An attribute by name; a dotted name also descends into a JSON object attribute
    (``metadata.question_id`` in ``metadata = '{"question_id": ...}'``). None when absent."""
    if name in attributes:
        return attributes[name]
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        head = ".".join(parts[:cut])
        if head not in attributes:
            continue
        node = attributes[head]
        if isinstance(node, str):
            try:
                node = json.loads(node)
            except json.JSONDecodeError:
                continue
        for part in parts[cut:]:
            if isinstance(node, dict) and part in node:
                node = node[part]
            else:
                node = None
                break
        if node is not None:
            return node
    return None


def _root(spans: list[Span]) -> Span:
    ids = {s.span_id for s in spans}
    roots = [s for s in spans if not s.parent_id or s.parent_id not in ids] or spans
    return min(roots, key=lambda s: (s.start_ns or 0))


def _question_text(root: Span) -> str | None:
    value = root.attributes.get(SpanAttributes.INPUT_VALUE)
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            obj = json.loads(value)
        except json.JSONDecodeError:
            return value
        for key in ("question", "query", "input"):
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                return obj[key]
    return value if isinstance(value, str) else None


class _ChunkMapper:
    """Document id -> chunk id (module docstring: chunk_map, chunk id as is, one-chunk document)."""

    def __init__(self, known_chunks, chunk_map: dict[str, str]):
        self.known = set(known_chunks or ())
        self.map = chunk_map
        self.per_doc: dict[str, list[str]] = {}
        for c in self.known:
            self.per_doc.setdefault(c.rsplit("#", 1)[0], []).append(c)

    def __call__(self, doc_id: str, where: str) -> str:
        if doc_id in self.map:
            return self.map[doc_id]
        if doc_id in self.known or not self.known:
            return doc_id
        chunks = self.per_doc.get(doc_id, [])
        if len(chunks) == 1:
            return chunks[0]
        hint = (f"document {doc_id!r} has {len(chunks)} chunks" if chunks else f"no document {doc_id!r} in the snapshot")
        raise InputError(f"{where}: document.id {doc_id!r} is not a chunk id of the snapshot ({hint}); expected "
                         "'doc_id#n', the id of a one-chunk document, or an entry in chunk_map",
                         field=f"{DOCS}.document.id")


def load_chunk_map(path: str | Path) -> dict[str, str]:
    """A ``chunk_map`` file (JSONL or Parquet; fields ``document_id``, ``chunk_id``) as a dict.
    Raises InputError naming file, line and field for a missing field or a document mapped twice."""
    out: dict[str, str] = {}
    for line, rec in read_records(path):
        doc, chunk = rec.get("document_id"), rec.get("chunk_id")
        for name, value in (("document_id", doc), ("chunk_id", chunk)):
            if not isinstance(value, str) or not value:
                raise InputError(f"expected a non-empty string, got {value!r}", path=str(path), line=line, field=name)
        if doc in out:
            raise InputError(f"document {doc!r} mapped twice; expected one chunk per document id", path=str(path),
                             line=line, field="document_id")
        out[doc] = chunk
    return out


def import_traces(spec: dict, golden: pl.DataFrame, ctx: RunContext, *, base_dir: Path | None = None) -> TraceImport:
    """Read a ``traces`` system's source and turn it into one ``rag_runs`` row per golden question.

    Input: the validated spec (``path``, ``format``, ``question_id_attribute``,
    ``decision_attribute``, ``chunk_map``, ``abstain_phrases``), the golden set (``question_id``,
    ``question``), the run context; relative paths resolve against ``base_dir``.
    Output: rows in golden order (an ``error`` row with rule ``no_trace`` where no trace matched)
    and ``info``: ``traces``, ``spans``, ``matched_by_attribute``, ``matched_by_text``,
    ``unmatched_traces`` (+ ``unmatched_examples``: trace id and why, first 50),
    ``questions_without_trace`` (+ ids, first 50), ``duplicate_traces``.
    Raises InputError (file, trace, field) for unreadable sources, a document id that maps to no
    chunk, a decision attribute outside answer/abstain/clarify/error, or a hit that fails the
    run-log rules (non-finite score, a chunk twice).
    """
    def resolve(p: str) -> Path:
        q = Path(p)
        return q if q.is_absolute() or base_dir is None else (base_dir / q).resolve()

    source = resolve(spec["path"])
    spans = read_spans(source, spec.get("format", "auto"))
    mapper = _ChunkMapper(ctx.known_chunks, load_chunk_map(resolve(spec["chunk_map"])) if spec.get("chunk_map") else {})
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    qids = golden["question_id"].to_list()
    by_text: dict[str, list[str]] = {}
    for qid, text in zip(qids, golden["question"].to_list()):
        by_text.setdefault(normalise_question(text), []).append(qid)
    golden_ids = set(qids)
    qattr = spec.get("question_id_attribute")
    chosen: dict[str, tuple[Span, list[Span]]] = {}
    unmatched: list[dict] = []
    duplicates: list[str] = []
    counts = {"attribute": 0, "text": 0}
    for trace_id in sorted(by_trace):
        group = sorted(by_trace[trace_id], key=lambda s: (s.start_ns or 0))
        root = _root(group)
        qid, how = None, None
        if qattr:
            for s in [root] + [x for x in group if x is not root]:
                value = lookup(s.attributes, qattr)
                if value is not None:
                    qid, how = str(value), "attribute"
                    break
            if qid is not None and qid not in golden_ids:
                unmatched.append({"trace_id": trace_id, "reason": f"{qattr} = {qid!r} is not a question of the "
                                                                  "evaluated golden set"})
                continue
        if qid is None:
            text = _question_text(root)
            found = by_text.get(normalise_question(text), []) if text else []
            if len(found) != 1:
                why = ("no input.value on the root span" if not text else
                       f"input.value matches {len(found)} golden questions" if found else
                       f"input.value {text[:80]!r} matches no golden question")
                unmatched.append({"trace_id": trace_id, "reason": (f"no {qattr} attribute and " if qattr else "") + why})
                continue
            qid, how = found[0], "text"
        if qid in chosen:
            previous = chosen[qid][0]
            if (root.start_ns or 0) >= (previous.start_ns or 0):
                duplicates.append(previous.trace_id)
            else:
                duplicates.append(trace_id)
                continue
        else:
            counts[how] += 1
        chosen[qid] = (root, group)

    rows = []
    for qid in qids:
        if qid not in chosen:
            rows.append(error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: no trace for this question "
                                            f"in {source}", decision_rule="no_trace"))
            continue
        root, group = chosen[qid]
        rows.append(_row(spec, ctx, qid, root, group, mapper))
    missing = [q for q in qids if q not in chosen]
    info = {"source": str(source), "traces": len(by_trace), "spans": len(spans),
            "matched_by_attribute": counts["attribute"], "matched_by_text": counts["text"],
            "unmatched_traces": len(unmatched), "unmatched_examples": unmatched[:_LISTED],
            "questions_without_trace": len(missing), "questions_without_trace_ids": missing[:_LISTED],
            "duplicate_traces": len(duplicates), "duplicate_trace_ids": duplicates[:_LISTED]}
    return TraceImport(rows=rows, info=info)


def _row(spec: dict, ctx: RunContext, qid: str, root: Span, group: list[Span], mapper: _ChunkMapper) -> dict:
    where = f"{root.source}, trace {root.trace_id}"
    retrievers = [s for s in group if str(s.attributes.get(KIND, "")).upper() == OpenInferenceSpanKindValues.RETRIEVER.value]
    hits: list[dict] = []
    if retrievers:
        span = max(retrievers, key=lambda s: (s.start_ns or 0))
        docs: dict[int, dict[str, Any]] = {}
        for key, value in span.attributes.items():
            m = _DOC_KEY.match(key)
            if m:
                docs.setdefault(int(m.group(1)), {})[m.group(2)] = value
        seen: dict[str, int] = {}
        for rank, n in enumerate(sorted(docs), start=1):
            doc = docs[n]
            doc_id = doc.get(DocumentAttributes.DOCUMENT_ID)
            if doc_id in (None, ""):
                raise InputError(f"{where}: retrieval document {n} has no {DocumentAttributes.DOCUMENT_ID}",
                                 field=f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_ID}")
            chunk = mapper(str(doc_id), where)
            if chunk in seen:
                raise InputError(f"{where}: chunk {chunk!r} retrieved twice (documents {seen[chunk]} and {n}); "
                                 "expected each chunk once", field=f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_ID}")
            seen[chunk] = n
            score = doc.get(DocumentAttributes.DOCUMENT_SCORE)
            if score is not None:
                try:
                    score = float(score)
                except (TypeError, ValueError):
                    raise InputError(f"{where}: document.score {score!r} is not a number",
                                     field=f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_SCORE}") from None
                if score != score or score in (float("inf"), float("-inf")):
                    raise InputError(f"{where}: document.score {score!r} is not finite; expected a finite number",
                                     field=f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_SCORE}")
            elif ctx.require_scores:
                raise InputError(f"{where}: document {n} has no score; ranking_mode trec_eval ranks by score",
                                 field=f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_SCORE}")
            hits.append({"chunk_id": chunk, "score": score, "rank": rank})
    answer = root.attributes.get(SpanAttributes.OUTPUT_VALUE)
    answer = None if answer is None else str(answer)
    error = None
    decision_attr = spec.get("decision_attribute")
    value = None
    if decision_attr:
        for s in [root] + [x for x in group if x is not root]:
            value = lookup(s.attributes, decision_attr)
            if value is not None:
                break
    if value is not None:
        if value not in tables.DECISIONS:
            raise InputError(f"{where}: {decision_attr} = {value!r}; expected one of {list(tables.DECISIONS)}",
                             field=decision_attr)
        decision, rule = str(value), "attribute"
        if decision == "answer" and not (answer or "").strip():
            decision, rule, error = "error", "empty_output", "decision 'answer' but the trace has no output.value"
        elif decision == "error":
            error = root.status_message or "the trace reports decision 'error'"
    elif root.status_code == "ERROR":
        decision, rule, error = "error", "span_status", f"root span status ERROR: {root.status_message or '(no message)'}"
    else:
        decision, rule, error = decide(answer, spec["abstain_phrases"])
    llm = [s for s in group if str(s.attributes.get(KIND, "")).upper() == OpenInferenceSpanKindValues.LLM.value]
    model = llm[0].attributes.get(SpanAttributes.LLM_MODEL_NAME) if llm else None
    prompt_version = llm[0].attributes.get(SpanAttributes.LLM_PROMPT_TEMPLATE_VERSION) if llm else None
    latency = (root.end_ns - root.start_ns) / 1e6 if root.end_ns and root.start_ns else None
    if ctx.known_chunks:
        for h in hits:
            if h["chunk_id"] not in ctx.known_chunks:
                raise InputError(f"{where}: chunk {h['chunk_id']!r} (from chunk_map) is not in the corpus snapshot",
                                 field=f"{DOCS}.document.id")
    return {
        "system": ctx.system, "question_id": qid, "retrieved": hits, "decision": decision,
        "answer": answer if decision != "error" else None, "citations": [], "error": error,
        "corpus_version": ctx.corpus_version, "golden_version": ctx.golden_version,
        "retriever": None, "generator": None, "model": None if model is None else str(model),
        "prompt_version": None if prompt_version is None else str(prompt_version), "latency_ms": latency,
        "system_version": None, "trace_id": root.trace_id, "decision_rule": rule,
    }
