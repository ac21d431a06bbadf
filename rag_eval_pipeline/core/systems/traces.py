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
  by N. A document id maps to a chunk id by ``chunk_map`` (JSONL/Parquet with ``document_id``,
  ``chunk_id``), else as is when it is a chunk id of the snapshot (``doc_id#n``), else to
  ``doc_id#0`` when the document has exactly one chunk; anything else is an InputError.
- the answer is the root span's ``output.value`` (at most ``records.MAX_ANSWER_CHARS`` characters, and
  at most ``records.MAX_RETRIEVED`` retrieval documents: past either the row is an ``error`` row,
  ``decision_rule`` ``too_large``). Only the attributes used here are kept while reading, so a large
  export (prompts, messages) is read in bounded memory. The decision: ``decision_attribute`` when
  configured and present (``attribute``); else ``error`` when the root span's status is ERROR
  (``span_status``); else the rule of ``records.decide`` (``empty_output``, ``abstain_phrase``,
  ``default_answer``). ``decision_rule`` in ``rag_runs`` records which.
- ``latency_ms`` is the root span's duration; ``model`` the first LLM span's ``llm.model_name``;
  ``prompt_version`` its ``llm.prompt_template.version``.
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
from rag_eval_pipeline.core.sources._records import read_records
from rag_eval_pipeline.core.systems.records import MAX_ANSWER_CHARS, MAX_RETRIEVED, RunContext, decide, error_row
from rag_eval_pipeline.core.systems.trace_sources import DOCS, KIND, Span, read_spans, wanted_attributes

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.traces import TracesSystemConfig

_DOC_KEY = re.compile(re.escape(DOCS) + r"\.(\d+)\.(.+)$")
_LISTED = 50


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
        hint = (f"document {doc_id!r} has {len(chunks)} chunks" if chunks
                else f"no document {doc_id!r} in the snapshot")
        raise InputError(f"{where}: document.id {doc_id!r} is not a chunk id of the snapshot ({hint}); expected "
                         "'doc_id#n', the id of a one-chunk document, or an entry in chunk_map",
                         field=f"{DOCS}.document.id")


def _over_bounds(root: Span, group: list[Span]) -> str | None:
    answer = root.attributes.get(SpanAttributes.OUTPUT_VALUE)
    if isinstance(answer, str) and len(answer) > MAX_ANSWER_CHARS:
        return f"output.value has more than {MAX_ANSWER_CHARS} characters; expected at most {MAX_ANSWER_CHARS}"
    for s in group:
        docs = {m.group(1) for key in s.attributes if (m := _DOC_KEY.match(key))}
        if len(docs) > MAX_RETRIEVED:
            return (f"span {s.span_id} lists {len(docs)} retrieval documents; expected at most {MAX_RETRIEVED}")
    return None


def load_chunk_map(path: str | Path) -> dict[str, str]:
    """A ``chunk_map`` file (JSONL or Parquet; fields ``document_id``, ``chunk_id``) as a dict.
    Raises InputError naming file, line and field for a missing field or a document mapped twice."""
    out: dict[str, str] = {}
    for line, rec in read_records(path):
        for name in ("document_id", "chunk_id"):
            value = rec.get(name)
            if not isinstance(value, str) or not value:
                raise InputError(f"expected a non-empty string, got {value!r}", path=str(path), line=line, field=name)
        doc, chunk = rec["document_id"], rec["chunk_id"]
        if doc in out:
            raise InputError(f"document {doc!r} mapped twice; expected one chunk per document id", path=str(path),
                             line=line, field="document_id")
        out[doc] = chunk
    return out


def import_traces(spec: TracesSystemConfig, golden: pl.DataFrame, ctx: RunContext, *,
                  base_dir: Path | None = None) -> TraceImport:
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
    def resolve(p: str | Path) -> Path:
        q = Path(p)
        return q if q.is_absolute() or base_dir is None else (base_dir / q).resolve()

    source = resolve(spec.path)
    spans = read_spans(source, spec.format,
                       wanted_attributes(spec.question_id_attribute, spec.decision_attribute))
    mapper = _ChunkMapper(ctx.known_chunks, load_chunk_map(resolve(spec.chunk_map)) if spec.chunk_map else {})
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
    for trace_id in sorted(by_trace):
        group = sorted(by_trace[trace_id], key=lambda s: (s.start_ns or 0))
        root, how, notes = find_root(group)
        orphans = [n for n in notes if n.startswith("orphan span")]
        orphan_spans += len(orphans)
        if orphans and len(orphan_examples) < _LISTED:
            orphan_examples.append({"trace_id": trace_id, "orphans": orphans[:5]})
        if how != "single":
            shapes[how].append({"trace_id": trace_id, "rule": notes[-1]})
        qid = None
        matched_by = "attribute"  # how qid was found: by the attribute unless the text match below sets it
        if qattr:
            for s in [root] + [x for x in group if x is not root]:
                value = lookup(s.attributes, qattr)
                if value is not None:
                    qid = str(value)
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
            "rootless_traces": len(shapes["rootless"]), "rootless_examples": shapes["rootless"][:_LISTED]}
    return TraceImport(rows=rows, info=info)


def _row(spec: TracesSystemConfig, ctx: RunContext, qid: str, root: Span, group: list[Span],
         mapper: _ChunkMapper) -> dict:
    where = f"{root.source}, trace {root.trace_id}"
    too_large = _over_bounds(root, group)
    if too_large:
        row = error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: {where}: {too_large}",
                        trace_id=root.trace_id, decision_rule="too_large")
        return row
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
    decision_attr = spec.decision_attribute
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
        decision, rule = "error", "span_status"
        error = f"root span status ERROR: {root.status_message or '(no message)'}"
    else:
        decision, rule, error = decide(answer, list(spec.abstain_phrases))
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
