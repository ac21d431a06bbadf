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
- the root span of a trace (documented rule, never silent): the span without a parent
  (``parentSpanId`` / ``parent_id`` empty). A span whose parent is not in the trace is an *orphan*:
  never a root while a real root exists; counted (``orphan_spans``) and listed. When a trace has
  several spans without a parent (two roots; a Phoenix export written without its ``parent_id``
  column makes every span one), the root is the one that starts first, then the one that ends
  last (the span that encloses the others), then the smallest span id; the trace is counted
  (``ambiguous_root_traces``) and listed with its candidates. When no span lacks a parent (the
  root was not exported), the same order picks among the orphans; counted as ``rootless_traces``.
  ``rag_runs`` logs a warning whenever one of these counts is not zero.
- retrieval: the RETRIEVER span (``openinference.span.kind``; the last one to start when there are
  several: what the generator saw) gives ``retrieval.documents.N.document.id`` / ``.score``, ranked
  by N. A document id maps to a chunk id as every kind's ids do (``core/systems/id_mapping.py``:
  ``chunk_map`` file or rule, else as is when it is a chunk id of the snapshot, else the one chunk
  of a one-chunk document); anything else is an InputError. A document without ``document.id`` but
  with ``document.content`` is aligned to the snapshot by its text (unmatched ones counted).
- the answer is the root span's ``output.value`` (at most ``records.MAX_ANSWER_CHARS`` characters, and
  at most ``records.MAX_RETRIEVED`` retrieval documents: past either the row is an ``error`` row,
  ``decision_rule`` ``too_large``). An ``output.value`` that is not a string (an OTLP ``arrayValue``,
  ``kvlistValue``, number or boolean) is an ``error`` row, ``decision_rule`` ``not_text``:
  OpenInference's output.value is the answer text, and no other shape is turned into one. Only the
  attributes used here are kept while reading, so a large export (prompts, messages) is read in
  bounded memory. The decision: ``decision_attribute`` when
  configured and present (``attribute``); else ``error`` when the root span's status is ERROR
  (``span_status``); else the rule of ``records.decide`` (``empty_output``, ``abstain_phrase``,
  ``default_answer``). ``decision_rule`` in ``rag_runs`` records which.
- ``latency_ms`` is the root span's duration (null when a time is missing, or when the span ends before
  it starts: counted as ``negative_latency_traces`` and listed); ``model`` the first LLM span's
  ``llm.model_name``; ``prompt_version`` its ``llm.prompt_template.version`` (each at most 200
  characters; a list or object as its repr). Attribute values quoted in the import's metadata (an
  unmatched question id) are cut to 80 characters; ids longer than 128 characters stop the import.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.sources._records import normalise_id, short_repr
from rag_eval_pipeline.core.systems.id_mapping import IdMapper
from rag_eval_pipeline.core.systems.id_mapping import load_chunk_map_file as load_chunk_map  # noqa: F401 (old name)
from rag_eval_pipeline.core.systems.records import MAX_ANSWER_CHARS, MAX_RETRIEVED, RunContext, decide, error_row
from rag_eval_pipeline.core.systems.trace_sources import DOCS, KIND, Span, read_spans, wanted_attributes

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.traces import TracesSystemConfig

_DOC_KEY = re.compile(re.escape(DOCS) + r"\.(\d+)\.(.+)$")
_LISTED = 50
_LABEL_CHARS = 200  # model, prompt_version (the prompt_version a configuration may give is bounded alike)
_SHOWN_CHARS = 80  # an attribute value quoted in the import's metadata


@dataclass
class TraceImport:
    """The rows and the bookkeeping of one import (``info`` goes into the ``rag_runs`` metadata)."""

    rows: list[dict]
    info: dict[str, Any] = field(default_factory=dict)


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
                node = strict_json(node)
            except JsonError:
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


def _enclosing_first(s: Span) -> tuple:
    return (s.start_ns is None, s.start_ns or 0, -(s.end_ns or 0), s.span_id)


def find_root(spans: list[Span]) -> tuple[Span, str, list[str]]:
    """The root span of one trace by the documented rule (module docstring).

    Input: the trace's spans (non-empty). Output: (root, how, notes): ``how`` is ``single`` (one span
    without a parent), ``ambiguous`` (several: the earliest-starting, longest one is taken) or
    ``rootless`` (none: the same order among orphans); ``notes`` lists the orphan spans (``span_id
    (parent P not in the trace)``) and, when ambiguous, the candidates. Raises nothing."""
    ids = {s.span_id for s in spans}
    parentless = [s for s in spans if not s.parent_id]
    orphans = [s for s in spans if s.parent_id and s.parent_id not in ids]
    notes = [f"orphan span {s.span_id} (parent {s.parent_id} not in the trace)" for s in orphans]
    if len(parentless) == 1:
        return parentless[0], "single", notes
    if parentless:
        ranked = sorted(parentless, key=_enclosing_first)
        notes.append(f"{len(parentless)} spans without a parent: {[s.span_id for s in ranked][:10]}; root "
                     f"{ranked[0].span_id} (starts first, ends last)")
        return ranked[0], "ambiguous", notes
    ranked = sorted(orphans or spans, key=_enclosing_first)
    notes.append(f"no span without a parent; root {ranked[0].span_id} (the earliest orphan)")
    return ranked[0], "rootless", notes


def _question_text(root: Span) -> str | None:
    value = root.attributes.get(SpanAttributes.INPUT_VALUE)
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            obj = strict_json(value)
        except JsonError:
            return value
        for key in ("question", "query", "input"):
            if isinstance(obj, dict) and isinstance(obj.get(key), str):
                return obj[key]
    return value if isinstance(value, str) else None


def _label(value: Any) -> str | None:
    """A model name or prompt version as stored: a string or number as text, anything else (an array, an
    object) as its repr; at most :data:`_LABEL_CHARS` characters either way."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
    else:
        text = str(value) if isinstance(value, (int, float)) else short_repr(value, _LABEL_CHARS)
    return text[:_LABEL_CHARS]


def _duration_ms(root: Span) -> float | None:
    """The root span's duration in milliseconds; None when a time is missing or the span ends before it
    starts (counted as ``negative_latency_traces``: a clock problem, never a negative latency)."""
    if not root.end_ns or not root.start_ns or root.end_ns < root.start_ns:
        return None
    return (root.end_ns - root.start_ns) / 1e6


def _json_kind(value: Any) -> str:
    return {list: "an array", dict: "an object", bool: "a boolean", int: "a number", float: "a number"}.get(
        type(value), f"a {type(value).__name__}")


def _unusable(root: Span, group: list[Span]) -> tuple[str, str] | None:
    """(decision rule, reason) when the trace cannot give a row: an ``output.value`` that is not a string
    (``not_text``; OpenInference's output.value is the answer text: an array or object is never turned into
    one) or past the answer bound, too many retrieval documents (``too_large``); else None."""
    answer = root.attributes.get(SpanAttributes.OUTPUT_VALUE)
    if answer is not None and not isinstance(answer, str):
        size = f" of {len(answer)} values" if isinstance(answer, (list, dict)) else ""
        return "not_text", (f"output.value is {_json_kind(answer)}{size}, not a string; expected the answer text "
                            "(OpenInference output.value)")
    if isinstance(answer, str) and len(answer) > MAX_ANSWER_CHARS:
        return "too_large", (f"output.value has more than {MAX_ANSWER_CHARS} characters; expected at most "
                             f"{MAX_ANSWER_CHARS}")
    for s in group:
        docs = {m.group(1) for key in s.attributes if (m := _DOC_KEY.match(key))}
        if len(docs) > MAX_RETRIEVED:
            return "too_large", (f"span {s.span_id} lists {len(docs)} retrieval documents; expected at most "
                                 f"{MAX_RETRIEVED}")
    return None


def import_traces(spec: TracesSystemConfig, golden: pl.DataFrame, ctx: RunContext, *,
                  base_dir: Path | None = None) -> TraceImport:
    """Read a ``traces`` system's source and turn it into one ``rag_runs`` row per golden question.

    Input: the validated spec (``path``, ``format``, ``question_id_attribute``,
    ``decision_attribute``, ``chunk_map``, ``abstain_phrases``), the golden set (``question_id``,
    ``question``), the run context; relative paths resolve against ``base_dir``.
    Output: rows in golden order (an ``error`` row with rule ``no_trace`` where no trace matched)
    and ``info``: ``traces``, ``spans``, ``matched_by_attribute``, ``matched_by_text``,
    ``unmatched_traces`` (+ ``unmatched_examples``: trace id and why, first 50),
    ``questions_without_trace`` (+ ids, first 50), ``duplicate_traces``, ``orphan_spans``,
    ``ambiguous_root_traces``, ``rootless_traces`` (+ examples), ``negative_latency_traces`` (+ ids).
    Raises InputError (file, trace, field) for unreadable sources, a document id that maps to no
    chunk, a decision attribute outside answer/abstain/clarify/error, or a hit that fails the
    run-log rules (non-finite score, the same document id twice). Two ids that map to one chunk keep
    the first (counted by the mapper: ``ctx.ids.stats()``, or ``info["id_mapping"]``).
    """
    def resolve(p: str | Path) -> Path:
        q = Path(p)
        return q if q.is_absolute() or base_dir is None else (base_dir / q).resolve()

    source = resolve(spec.path)
    spans = read_spans(source, spec.format,
                       wanted_attributes(spec.question_id_attribute, spec.decision_attribute))
    mapper = ctx.ids or IdMapper.from_chunk_ids(ctx.known_chunks, spec, base_dir)
    by_trace: dict[str, list[Span]] = {}
    for s in spans:
        by_trace.setdefault(s.trace_id, []).append(s)
    qids = golden["question_id"].to_list()
    by_text: dict[str, list[str]] = {}
    for qid, text in zip(qids, golden["question"].to_list()):
        by_text.setdefault(normalise_question(text), []).append(qid)
    golden_ids = set(qids)
    qattr = spec.question_id_attribute
    chosen: dict[str, tuple[Span, list[Span]]] = {}
    unmatched: list[dict] = []
    duplicates: list[str] = []
    counts = {"attribute": 0, "text": 0}
    shapes: dict[str, list[dict[str, str]]] = {"ambiguous": [], "rootless": []}
    orphan_spans = 0
    orphan_examples: list[dict[str, Any]] = []
    negative: list[str] = []
    for trace_id in sorted(by_trace):
        group = sorted(by_trace[trace_id], key=lambda s: (s.start_ns or 0))
        root, how, notes = find_root(group)
        orphans = [n for n in notes if n.startswith("orphan span")]
        orphan_spans += len(orphans)
        if orphans and len(orphan_examples) < _LISTED:
            orphan_examples.append({"trace_id": trace_id, "orphans": orphans[:5]})
        if how != "single":
            shapes[how].append({"trace_id": trace_id, "rule": notes[-1]})
        if root.end_ns and root.start_ns and root.end_ns < root.start_ns:
            negative.append(trace_id)
        qid = None
        matched_by = "attribute"  # how qid was found: by the attribute unless the text match below sets it
        if qattr:
            for s in [root] + [x for x in group if x is not root]:
                value = lookup(s.attributes, qattr)
                if value is not None:
                    qid = value
                    break
            if qid is not None and (isinstance(qid, bool) or not isinstance(qid, (str, int))):
                unmatched.append({"trace_id": trace_id, "reason": f"{qattr} is {_json_kind(qid)} "
                                  f"({short_repr(qid, _SHOWN_CHARS)}); expected a question id"})
                continue
            qid = None if qid is None else str(qid)
            if qid is not None and qid not in golden_ids:
                unmatched.append({"trace_id": trace_id, "reason": f"{qattr} = {short_repr(qid, _SHOWN_CHARS)} is not "
                                                                  "a question of the evaluated golden set"})
                continue
        if qid is None:
            text = _question_text(root)
            found = by_text.get(normalise_question(text), []) if text else []
            if len(found) != 1:
                why = ("no input.value on the root span" if not text else
                       f"input.value matches {len(found)} golden questions" if found else
                       f"input.value {text[:80]!r} matches no golden question")
                unmatched.append({"trace_id": trace_id,
                                  "reason": (f"no {qattr} attribute and " if qattr else "") + why})
                continue
            qid, matched_by = found[0], "text"
        if qid in chosen:
            previous = chosen[qid][0]
            if (root.start_ns or 0) >= (previous.start_ns or 0):
                duplicates.append(previous.trace_id)
            else:
                duplicates.append(trace_id)
                continue
        else:
            counts[matched_by] += 1
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
            "duplicate_traces": len(duplicates), "duplicate_trace_ids": duplicates[:_LISTED],
            "orphan_spans": orphan_spans, "orphan_span_examples": orphan_examples,
            "ambiguous_root_traces": len(shapes["ambiguous"]), "ambiguous_root_examples": shapes["ambiguous"][:_LISTED],
            "rootless_traces": len(shapes["rootless"]), "rootless_examples": shapes["rootless"][:_LISTED],
            "negative_latency_traces": len(negative), "negative_latency_trace_ids": negative[:_LISTED],
            "id_mapping": mapper.stats()}
    return TraceImport(rows=rows, info=info)


def _row(spec: TracesSystemConfig, ctx: RunContext, qid: str, root: Span, group: list[Span],
         mapper: IdMapper) -> dict:
    where = f"{root.source}, trace {root.trace_id}"
    unusable = _unusable(root, group)
    if unusable:
        rule, reason = unusable
        return error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: {where}: {reason}",
                         trace_id=root.trace_id, decision_rule=rule)
    retrievers = [s for s in group
                  if str(s.attributes.get(KIND, "")).upper() == OpenInferenceSpanKindValues.RETRIEVER.value]
    hits: list[dict] = []
    if retrievers:
        span = max(retrievers, key=lambda s: (s.start_ns or 0))
        docs: dict[int, dict[str, Any]] = {}
        for key, value in span.attributes.items():
            m = _DOC_KEY.match(key)
            if m:
                docs.setdefault(int(m.group(1)), {})[m.group(2)] = value
        seen: dict[str, int] = {}
        written: dict[str, int] = {}
        for rank, n in enumerate(sorted(docs), start=1):
            doc = docs[n]
            doc_id = doc.get(DocumentAttributes.DOCUMENT_ID)
            field = f"{DOCS}.{n}.{DocumentAttributes.DOCUMENT_ID}"
            if doc_id in (None, ""):
                content = doc.get(DocumentAttributes.DOCUMENT_CONTENT)
                if not isinstance(content, str) or not content.strip():
                    raise InputError(f"{where}: retrieval document {n} has no {DocumentAttributes.DOCUMENT_ID} "
                                     f"(nor {DocumentAttributes.DOCUMENT_CONTENT} to align by text)", field=field)
                chunk = mapper.text(content, qid, rank)
                if chunk is None:  # counted and listed by the mapper; left out of the ranking
                    continue
            else:
                doc_id = normalise_id(str(doc_id))
                if doc_id in written:
                    raise InputError(f"{where}: document id {doc_id!r} retrieved twice (documents {written[doc_id]} "
                                     f"and {n}); expected each document once", field=field)
                written[doc_id] = n
                chunk = mapper.chunk(doc_id)
                if mapper.known and chunk not in mapper.known:
                    raise InputError(f"{where}: document.id {doc_id!r} is not a chunk id of the snapshot: "
                                     f"{mapper.describe_unknown(doc_id)}", field=field)
            if chunk in seen:
                mapper.count_duplicate()
                continue
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
    answer = root.attributes.get(SpanAttributes.OUTPUT_VALUE)  # a string or None (_unusable)
    error = None
    decision_attr = spec.decision_attribute
    value = None
    if decision_attr:
        for s in [root] + [x for x in group if x is not root]:
            value = lookup(s.attributes, decision_attr)
            if value is not None:
                break
    if value is not None:
        if not isinstance(value, str) or value not in tables.DECISIONS:
            raise InputError(f"{where}: {decision_attr} = {short_repr(value)}; expected one of "
                             f"{list(tables.DECISIONS)}", field=decision_attr)
        decision, rule = str(value), "attribute"
        if decision == "answer" and not (answer or "").strip():
            decision, rule, error = "error", "empty_output", "decision 'answer' but the trace has no output.value"
        elif decision == "error":
            error = root.status_message or "the trace reports decision 'error'"
    elif root.status_code == "ERROR":
        decision, rule = "error", "span_status"
        error = f"root span status ERROR: {root.status_message or '(no message)'}"
    else:
        decision, rule, error = decide(answer, list(spec.abstain_phrases))
    llm = [s for s in group if str(s.attributes.get(KIND, "")).upper() == OpenInferenceSpanKindValues.LLM.value]
    model = _label(llm[0].attributes.get(SpanAttributes.LLM_MODEL_NAME)) if llm else None
    prompt_version = _label(llm[0].attributes.get(SpanAttributes.LLM_PROMPT_TEMPLATE_VERSION)) if llm else None
    latency = _duration_ms(root)
    if ctx.known_chunks:
        for h in hits:
            if h["chunk_id"] not in ctx.known_chunks:
                raise InputError(f"{where}: chunk {h['chunk_id']!r} (from chunk_map) is not in the corpus snapshot",
                                 field=f"{DOCS}.document.id")
    return {
        "system": ctx.system, "question_id": qid, "retrieved": hits, "decision": decision,
        "answer": answer if decision != "error" else None, "citations": [], "error": error,
        "corpus_version": ctx.corpus_version, "golden_version": ctx.golden_version,
        "retriever": None, "generator": None, "model": model, "prompt_version": prompt_version, "latency_ms": latency,
        "system_version": None, "trace_id": root.trace_id, "decision_rule": rule,
    }
