"""Write the sample traces file, ``data/traces/team_rag.otlp.jsonl``, with the real OpenTelemetry SDK.

The sample team's RAG system (its log is ``data/sample/runs/team_rag.jsonl``) traced as an instrumented
application would be: one trace per question, a CHAIN root span (``input.value`` the question,
``output.value`` the answer, ``metadata`` the question id and the decision), a RETRIEVER child span
with ``retrieval.documents.N.document.id`` / ``.score`` / ``.content`` (OpenInference semantic
conventions, ``openinference-semantic-conventions``), and an LLM child span (``llm.model_name``,
``llm.prompt_template.version``). The retriever names chunks in its own way, ``kb://<chunk id>``,
which the configuration ``data/configs/traces.yaml`` maps back with ``chunk_map: {strip_prefix:
"kb://"}``. A run that failed (decision ``error``) ends its root span with status ERROR.

The spans are exported as the OpenTelemetry Collector's file exporter writes them: OTLP/JSON, one
``ExportTraceServiceRequest`` per line, hex trace and span ids (OTLP specification, "JSON Protobuf
Encoding"). Ids come from a seeded generator and times from the log's latency, so the file is the
same on every run of this script.

    python data/traces/make_sample_traces.py            # rewrites data/traces/team_rag.otlp.jsonl

Needs ``opentelemetry-sdk`` and ``opentelemetry-exporter-otlp-proto-common`` (the test extras).
"""

from __future__ import annotations

import base64
import json
import random
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace import Status, StatusCode, set_span_in_context

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "sample"
PREFIX = "kb://"
KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS
START_NS = 1_764_547_200_000_000_000  # 2025-12-01T00:00:00Z


class SeededIds(IdGenerator):
    """Trace and span ids from a seeded generator: the same file on every run."""

    def __init__(self, seed: int = 0):
        self._random = random.Random(seed)

    def generate_span_id(self) -> int:
        return self._random.getrandbits(64) or 1

    def generate_trace_id(self) -> int:
        return self._random.getrandbits(128) or 1


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def trace_records(records: list[dict], questions: dict[str, str], texts: dict[str, str], *,
                  id_of=lambda chunk_id: PREFIX + chunk_id, with_ids: bool = True, seed: int = 0):
    """Finished SDK spans for run-log ``records`` (one trace per record).

    ``questions``: question id -> text (the root's ``input.value``); ``texts``: chunk id -> text (the
    documents' ``document.content``); ``id_of``: the retriever's own id of a chunk; ``with_ids``: False
    leaves ``document.id`` out (the documents are then known by their text only)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(id_generator=SeededIds(seed), resource=Resource({"service.name": "team-rag"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("team-rag")
    t = START_NS
    for rec in records:
        latency_ns = int(((rec.get("metadata") or {}).get("latency_ms") or 500) * 1e6)
        root = tracer.start_span("rag_query", start_time=t)
        root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
        root.set_attribute(SpanAttributes.INPUT_VALUE, questions[rec["question_id"]])
        root.set_attribute(SpanAttributes.METADATA, json.dumps({"question_id": rec["question_id"],
                                                                "decision": rec["decision"]}))
        ctx = set_span_in_context(root)
        retriever = tracer.start_span("retrieve", context=ctx, start_time=t + 1_000_000)
        retriever.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
        retriever.set_attribute(SpanAttributes.INPUT_VALUE, questions[rec["question_id"]])
        for i, hit in enumerate(rec["retrieved"]):
            if with_ids:
                retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}", id_of(hit["chunk_id"]))
            retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", float(hit["score"]))
            retriever.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_CONTENT}", texts[hit["chunk_id"]])
        retriever.end(end_time=t + latency_ns // 3)
        llm = tracer.start_span("generate", context=ctx, start_time=t + latency_ns // 3)
        llm.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
        llm.set_attribute(SpanAttributes.LLM_MODEL_NAME, rec.get("model") or "unknown")
        llm.set_attribute(SpanAttributes.LLM_PROMPT_TEMPLATE_VERSION, rec.get("prompt_version") or "none")
        llm.end(end_time=t + latency_ns - 1_000_000)
        if rec["decision"] == "error":
            root.set_status(Status(StatusCode.ERROR, rec.get("error") or "failed"))
        elif rec.get("answer") is not None:
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, rec["answer"])
        root.end(end_time=t + latency_ns)
        t += latency_ns + 10_000_000
    return exporter.get_finished_spans()


def write_otlp_json(spans, path: Path, batch: int = 8) -> Path:
    """Spans as the Collector's file exporter writes them: one ExportTraceServiceRequest per line, hex ids."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(0, len(spans), batch):
            request = MessageToDict(encode_spans(spans[i:i + batch]))
            for rs in request["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        for key in ("traceId", "spanId", "parentSpanId"):
                            if s.get(key):
                                s[key] = base64.b64decode(s[key]).hex()
            fh.write(json.dumps(request, ensure_ascii=False) + "\n")
    return path


def sample_inputs() -> tuple[list[dict], dict[str, str], dict[str, str]]:
    """The sample team log, the golden questions' texts and the sample corpus's chunk texts."""
    sys.path.insert(0, str(HERE.parents[1]))
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.pipeline import build_snapshot

    snapshot, _ = build_snapshot(load_config(SAMPLE / "config.yaml", environ={}))
    questions = {r["question_id"]: r["question"] for r in _records(SAMPLE / "golden.jsonl")}
    return _records(SAMPLE / "runs" / "team_rag.jsonl"), questions, dict(zip(snapshot["chunk_id"], snapshot["text"]))


def main() -> int:
    records, questions, texts = sample_inputs()
    path = write_otlp_json(trace_records(records, questions, texts), HERE / "team_rag.otlp.jsonl")
    print(f"wrote {path} ({len(records)} traces)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
