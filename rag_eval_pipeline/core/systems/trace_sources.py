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
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openinference.semconv.trace import SpanAttributes

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.sources._records import read_regular_file_check, short_repr
from rag_eval_pipeline.core.systems.records import MAX_ANSWER_CHARS

#: Longest line of an OTLP JSON or Phoenix JSON Lines file (one span batch): a longer one is an error.
MAX_LINE_BYTES = 64 * 2**20
#: A line is read in pieces of this size, so a refused line costs one copy of MAX_LINE_BYTES, not two.
LINE_PIECE_BYTES = 2**20

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS


#: Longest trace, span or parent id kept as written (OTLP ids are 32 / 16 hex digits): a longer one is an error.
MAX_ID_CHARS = 128
#: How much of a JSON file ``format: auto`` reads to tell OTLP JSON from a Phoenix export.
SNIFF_BYTES = 1 << 20


@dataclass
class Span:
    """One span as read from a trace file, in one shape for both sources.

    ``trace_id`` / ``span_id`` / ``parent_id``: lower-case hex (OTLP) or the export's own ids, at most
    :data:`MAX_ID_CHARS` characters (``parent_id`` None for a span without a parent); ``name``: at most
    200 characters; ``start_ns`` / ``end_ns``: nanoseconds since the epoch, None when absent;
    ``status_code``: ``OK``, ``ERROR`` or ``UNSET``; ``status_message``: at most ``MAX_ANSWER_CHARS``
    characters; ``attributes``: flat OpenInference keys (``retrieval.documents.0.document.id``) to values
    (string values cut one character past ``MAX_ANSWER_CHARS``; lists and objects as read); ``source``:
    ``file ..., line N`` for messages."""

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


class _IdTooLong(ValueError):
    pass


def _checked_id(value: Any) -> str:
    """An id as text, refused past :data:`MAX_ID_CHARS` characters (it is listed in metadata and messages)."""
    text = value if isinstance(value, str) else str(value) if isinstance(value, int) else short_repr(value)
    if len(text) > MAX_ID_CHARS:
        raise _IdTooLong(f"an id of {len(text)} characters ({text[:40]!r}...); expected at most {MAX_ID_CHARS} "
                         "(OTLP ids are 32 or 16 hex digits)")
    return text


def _hex_id(value: Any, size: int) -> str | None:
    """A trace/span id as lower-case hex: OTLP/JSON writes hex; protobuf's JSON mapping base64.
    Raises _IdTooLong past :data:`MAX_ID_CHARS` characters."""
    if value in (None, ""):
        return None
    text = _checked_id(value)
    if re.fullmatch(r"[0-9a-fA-F]+", text) and len(text) == 2 * size:
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) == size else text


def _otlp_value(v: Any) -> Any:
    """One OTLP/JSON ``AnyValue``. Raises ValueError / TypeError for a value of the wrong type (the caller
    locates it)."""
    if not isinstance(v, dict):
        return v
    if "stringValue" in v:
        return v["stringValue"]
    if "intValue" in v:
        return _int_value(v["intValue"], "intValue")
    if "doubleValue" in v:
        value = v["doubleValue"]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise TypeError(f"doubleValue is a JSON {type(value).__name__}; expected a number")
        return float(value)
    if "boolValue" in v:
        if not isinstance(v["boolValue"], bool):
            raise TypeError(f"boolValue is {short_repr(v['boolValue'])}; expected true or false")
        return v["boolValue"]
    if "arrayValue" in v:
        return [_otlp_value(x) for x in _list((v["arrayValue"] or {}).get("values"), "arrayValue.values")]
    if "kvlistValue" in v:
        return {_key(kv): _otlp_value(kv.get("value", {}))
                for kv in _list((v["kvlistValue"] or {}).get("values"), "kvlistValue.values")}
    if "bytesValue" in v:
        return v["bytesValue"]
    return None


def _int_value(value: Any, what: str) -> int:
    """An OTLP int64 (a JSON number, or a decimal string as protobuf's JSON mapping writes it)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (
            isinstance(value, str) and not re.fullmatch(r"-?\d{1,20}", value.strip())):
        raise ValueError(f"{what} is {short_repr(value)}; expected a whole number (or its decimal string)")
    return int(value)


def _list(value: Any, what: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise TypeError(f"{what} is a JSON {type(value).__name__}; expected an array")
    return value


def _key(kv: Any) -> str:
    if not isinstance(kv, dict) or not isinstance(kv.get("key"), str):
        raise TypeError(f"an attribute {short_repr(kv)} has no string 'key'; expected {{key, value}}")
    return kv["key"]


_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR", "STATUS_CODE_UNSET": "UNSET", "STATUS_CODE_OK": "OK",
           "STATUS_CODE_ERROR": "ERROR", "UNSET": "UNSET", "OK": "OK", "ERROR": "ERROR"}


def _cap(value: Any) -> Any:
    """A string attribute cut to one character past the answer bound: enough for the row bound to refuse
    it, without holding a huge value in memory."""
    if isinstance(value, str) and len(value) > MAX_ANSWER_CHARS + 1:
        return value[:MAX_ANSWER_CHARS + 1]
    return value


def _lines(path: Path):
    """(line number, decoded line) of a JSON Lines file, read one line at a time (bounded memory).

    Raises InputError (file, line) for a line longer than :data:`MAX_LINE_BYTES` or not UTF-8."""
    read_regular_file_check(path)
    with path.open("rb") as fh:
        lineno = 0
        while True:
            # in pieces of LINE_PIECE_BYTES: one readline(MAX_LINE_BYTES + 1) joins its chunks into a second
            # copy, so a refused line would cost twice the bound
            parts, size = [], 0
            while size <= MAX_LINE_BYTES:
                part = fh.readline(LINE_PIECE_BYTES)
                parts.append(part)
                size += len(part)
                if not part or part.endswith(b"\n"):
                    break
            if not size:
                return
            lineno += 1
            if size - parts[-1].endswith(b"\n") > MAX_LINE_BYTES:
                del parts
                raise InputError(f"line longer than {MAX_LINE_BYTES} bytes; expected one span batch of at most "
                                 f"{MAX_LINE_BYTES >> 20} MiB per line", path=str(path), line=lineno, field="json")
            raw = parts[0] if len(parts) == 1 else b"".join(parts)
            del parts
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(f"not valid UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start} of the "
                                 "line; expected UTF-8 text", path=str(path), line=lineno, field="encoding") from None
            yield lineno, text


def _read_otlp(path: Path, keep: Callable[[str], bool]) -> Iterator[Span]:
    for lineno, raw in _lines(path):
        if not raw.strip():
            continue
        try:
            request = strict_json(raw)
        except JsonError as exc:
            raise InputError(f"{exc}; expected one ExportTraceServiceRequest JSON object per line", path=str(path),
                             line=lineno, field="json") from None
        if not isinstance(request, dict) or "resourceSpans" not in request:
            raise InputError("not an OTLP ExportTraceServiceRequest (no 'resourceSpans'); expected the "
                             "OpenTelemetry Collector file exporter's format", path=str(path), line=lineno,
                             field="resourceSpans")
        field = "resourceSpans"
        try:
            for rs in _list(request.get("resourceSpans"), "resourceSpans"):
                field = "resourceSpans[].scopeSpans"
                if not isinstance(rs, dict):
                    raise TypeError(f"a resourceSpans item is a JSON {type(rs).__name__}; expected an object")
                for ss in _list(rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans"), "scopeSpans"):
                    if not isinstance(ss, dict):
                        raise TypeError(f"a scopeSpans item is a JSON {type(ss).__name__}; expected an object")
                    for s in _list(ss.get("spans"), "spans"):
                        field = "spans"
                        yield _otlp_span(s, path, lineno, keep)
        except (TypeError, ValueError, AttributeError) as exc:
            raise InputError(f"{exc}", path=str(path), line=lineno, field=getattr(exc, "field", field)) from None


class _FieldError(ValueError):
    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


def _otlp_span(s: Any, path: Path, lineno: int, keep: Callable[[str], bool]) -> Span:
    if not isinstance(s, dict):
        raise _FieldError("spans", f"a span is a JSON {type(s).__name__}; expected an object")
    try:
        trace_id = _hex_id(s.get("traceId"), 16)
        span_id = _hex_id(s.get("spanId"), 8)
        parent_id = _hex_id(s.get("parentSpanId"), 8)
    except _IdTooLong as exc:
        raise InputError(str(exc), path=str(path), line=lineno, field="traceId / spanId / parentSpanId") from None
    if not trace_id or not span_id:
        raise InputError("a span without traceId or spanId; expected both", path=str(path), line=lineno,
                         field="traceId")
    times = {}
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        value = s.get(key)
        try:
            times[key] = _int_value(value, key) if value not in (None, "", 0, "0") else None
        except ValueError as exc:
            raise _FieldError(key, f"span {span_id}: {exc}") from None
    status = s.get("status") or {}
    if not isinstance(status, dict):
        raise _FieldError("status", f"span {span_id}: status is a JSON {type(status).__name__}; expected an object")
    message = status.get("message")
    attributes = {}
    for a in _list(s.get("attributes"), "attributes"):
        key = _key(a)
        if keep(key):
            try:
                attributes[key] = _cap(_otlp_value(a.get("value", {})))
            except (TypeError, ValueError) as exc:
                raise _FieldError(f"attributes.{key}", f"span {span_id}: {exc}") from None
    return Span(
        trace_id=trace_id, span_id=span_id, parent_id=parent_id,
        name=str(s.get("name", ""))[:200], start_ns=times["startTimeUnixNano"], end_ns=times["endTimeUnixNano"],
        status_code=_STATUS.get(status.get("code", 0), "UNSET") if isinstance(status.get("code", 0), (int, str))
        else "UNSET",
        status_message=None if message is None else str(message)[:MAX_ANSWER_CHARS],
        attributes=attributes, source=f"file {path}, line {lineno}",
    )


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
    if isinstance(value, bool):
        raise TypeError(f"got {value!r}")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"got {value!r}")
        return int(value)
    try:
        return _time_ns(dt.datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        raise ValueError(f"got {short_repr(value)}") from None


def _phoenix_rows(path: Path) -> Iterator[tuple[int, dict]]:
    """Rows of a Phoenix export, streamed: JSON Lines one line at a time, Parquet one batch at a time."""
    if path.suffix.lower() == ".parquet":
        import polars as pl

        read_regular_file_check(path)
        n = 0
        try:
            for batch in pl.scan_parquet(path).collect_batches(chunk_size=2048):
                for row in batch.iter_rows(named=True):
                    n += 1
                    yield n, row
        except pl.exceptions.PolarsError as exc:
            raise InputError(f"cannot read Parquet ({str(exc)[:200]}); expected a Phoenix spans export",
                             path=str(path)) from None
        return
    for lineno, raw in _lines(path):
        if not raw.strip():
            continue
        try:
            row = strict_json(raw)
        except JsonError as exc:
            raise InputError(f"{exc}; expected one JSON object per line", path=str(path), line=lineno,
                             field="json") from None
        if not isinstance(row, dict):
            raise InputError(f"expected a JSON object, got {type(row).__name__}", path=str(path), line=lineno,
                             field="json")
        yield lineno, row


def _read_phoenix(path: Path, keep: Callable[[str], bool]) -> Iterator[Span]:
    for line, row in _phoenix_rows(path):
        trace_id = row.get("context.trace_id") or row.get("trace_id")
        span_id = row.get("context.span_id") or row.get("span_id")
        if not trace_id or not span_id:
            raise InputError("a span without context.trace_id or context.span_id; expected a Phoenix spans "
                             "export (get_spans_dataframe)", path=str(path), line=line, field="context.trace_id")
        spans_parent = row.get("parent_id")
        try:
            trace_id, span_id = _checked_id(trace_id), _checked_id(span_id)
            spans_parent = _checked_id(spans_parent) if spans_parent else None
        except _IdTooLong as exc:
            raise InputError(str(exc), path=str(path), line=line, field="context.trace_id / span_id / parent_id"
                             ) from None
        attrs: dict[str, Any] = {}
        if isinstance(row.get("attributes"), dict):
            _flatten("", row["attributes"], attrs)
        for key, value in row.items():
            if key.startswith("attributes."):
                name = key[len("attributes."):]
                if not keep(name):
                    continue
                if isinstance(value, str) and name == DOCS:
                    try:
                        value = strict_json(value)
                    except JsonError:
                        pass
                _flatten(name, value, attrs)
        attrs = {k: _cap(v) for k, v in attrs.items() if keep(k)}
        if "span_kind" in row and KIND not in attrs and row["span_kind"]:
            attrs[KIND] = row["span_kind"]
        status = str(row.get("status_code") or "UNSET").upper()
        times = {}
        for key in ("start_time", "end_time"):
            try:
                times[key] = _time_ns(row.get(key))
            except (TypeError, ValueError, OverflowError) as exc:
                raise InputError(f"{exc}; expected an ISO 8601 time or nanoseconds since the epoch", path=str(path),
                                 line=line, field=key) from None
        message = row.get("status_message")
        yield Span(
            trace_id=trace_id, span_id=span_id, parent_id=spans_parent,
            name=str(row.get("name") or "")[:200], start_ns=times["start_time"], end_ns=times["end_time"],
            status_code=_STATUS.get(status, "UNSET"),
            status_message=None if message is None else str(message)[:MAX_ANSWER_CHARS],
            attributes=attrs, source=f"file {path}, line {line}",
        )


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".jsonl", ".json", ".parquet"))
    if path.is_file():
        return [path]
    raise InputError("file or folder not found; expected OTLP JSON or a Phoenix spans export", path=str(path))


def _format_of(path: Path) -> str:
    """``otlp_json`` or ``phoenix`` for ``format: auto``: Parquet is a Phoenix export; a JSON file is OTLP when
    its first non-blank line names ``resourceSpans`` within the first :data:`SNIFF_BYTES` bytes (only those
    are read: a single huge line costs no more memory here than a small one)."""
    if path.suffix.lower() == ".parquet":
        return "phoenix"
    read_regular_file_check(path)
    with path.open("rb") as fh:
        head = fh.read(SNIFF_BYTES).lstrip()
    if not head:
        return "otlp_json"
    return "otlp_json" if b'"resourceSpans"' in head.split(b"\n", 1)[0] else "phoenix"


def wanted_attributes(*names: str | None) -> Callable[[str], bool]:
    """The attribute filter the importer reads with: the OpenInference attributes it uses (span kind,
    input and output values, retrieval documents, model name, prompt template version) and ``names``
    (``question_id_attribute``, ``decision_attribute``; a dotted name keeps the attribute it descends
    into). Every other attribute (prompts, messages, embeddings) is dropped as it is read."""
    exact = {KIND, SpanAttributes.INPUT_VALUE, SpanAttributes.OUTPUT_VALUE, SpanAttributes.LLM_MODEL_NAME,
             SpanAttributes.LLM_PROMPT_TEMPLATE_VERSION}
    dotted = [n for n in names if n]

    def keep(key: str) -> bool:
        if key in exact or key == DOCS or key.startswith(DOCS + "."):
            return True
        return any(key == n or n.startswith(key + ".") or key.startswith(n + ".") for n in dotted)

    return keep


def read_spans(path: str | Path, fmt: str = "auto", keep: Callable[[str], bool] | None = None) -> list[Span]:
    """Every span of an OTLP JSON file, a Phoenix export, or a folder of them (module docstring).

    Files are read one line (or Parquet batch) at a time, lines of at most :data:`MAX_LINE_BYTES`; only
    the attributes ``keep`` accepts are kept (default: all), and string attributes are cut past the
    answer bound, so memory follows the spans' useful content, not the file's size.
    Raises InputError naming the file and line for a missing path, malformed JSON (the strict reader:
    a repeated key, nesting past 128 levels), a line that is not an ExportTraceServiceRequest, a span
    without trace or span id, or a field value of the wrong type (``startTimeUnixNano: "soon"``)."""
    keep = keep or (lambda _key: True)
    spans: list[Span] = []
    for p in _files(Path(path)):
        kind = _format_of(p) if fmt == "auto" else fmt
        spans.extend(_read_otlp(p, keep) if kind == "otlp_json" else _read_phoenix(p, keep))
    return spans
