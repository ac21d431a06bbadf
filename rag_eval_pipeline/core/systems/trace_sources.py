"""Reading OpenTelemetry spans from disk: OTLP JSON (the Collector's file exporter) and Phoenix exports.

Both become :class:`Span` records with flat OpenInference attribute keys
(``retrieval.documents.0.document.id``), so the matching in ``traces.py`` sees one shape.
OTLP/JSON (OpenTelemetry protocol specification, "JSON Protobuf Encoding"): trace and span ids are
hex strings (protobuf's own JSON mapping, base64, is accepted too), attribute values typed
``AnyValue`` objects. Phoenix (``get_spans_dataframe()``): one span per row with ``context.trace_id``,
``context.span_id``, ``parent_id``, ``start_time``, ``end_time``, ``status_code``,
``status_message``, ``span_kind`` and ``attributes.*`` columns (or one nested ``attributes`` object).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openinference.semconv.trace import SpanAttributes

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources._records import decode_utf8, read_records

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS


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
            value = value.replace(tzinfo=dt.UTC)
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
