"""``kind: traces``: traces made here with the real OpenTelemetry SDK and OpenInference attribute names,
exported as the OpenTelemetry Collector's file exporter writes them (OTLP/JSON, one
ExportTraceServiceRequest per line), then imported."""

import base64
import datetime as dt
import json

import polars as pl
import pytest
from google.protobuf.json_format import MessageToDict
from openinference.semconv.trace import DocumentAttributes, OpenInferenceSpanKindValues, SpanAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.pipeline import build_question_metrics, build_summary
from rag_eval_pipeline.core.sources.run_logs import load_run_log
from rag_eval_pipeline.core.systems.base import system_from_mapping
from rag_eval_pipeline.core.systems.kinds.traces import TracesRunner
from rag_eval_pipeline.core.systems.records import RunContext
from rag_eval_pipeline.core.systems.traces import normalise_question
from rag_eval_pipeline_tests.core.systems import reference_callable

KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
DOCS = SpanAttributes.RETRIEVAL_DOCUMENTS
ABSTENTION = "No lo sé: no encuentro esa información en la documentación."


class TracedRag:
    """A small RAG function instrumented by hand: a CHAIN root, a RETRIEVER and an LLM child span."""

    def __init__(self):
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = provider.get_tracer("rag-under-test")
        self.shown = {}  # question_id -> the run-log record of what the user saw

    def __call__(self, question_id, question, user_groups, *, with_id=True, decision_attr=False, fail=False):
        with self.tracer.start_as_current_span("rag_query") as root:
            root.set_attribute(KIND, OpenInferenceSpanKindValues.CHAIN.value)
            root.set_attribute(SpanAttributes.INPUT_VALUE, question)
            reply = reference_callable.answer(question_id, question, user_groups)
            meta = {"question_id": question_id} if with_id else {}
            if decision_attr:
                meta["decision"] = reply["decision"]
            if meta:
                root.set_attribute(SpanAttributes.METADATA, json.dumps(meta))
            with self.tracer.start_as_current_span("retrieve") as r:
                r.set_attribute(KIND, OpenInferenceSpanKindValues.RETRIEVER.value)
                r.set_attribute(SpanAttributes.INPUT_VALUE, question)
                for i, hit in enumerate(reply["retrieved"]):
                    r.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}", hit["chunk_id"])
                    r.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_SCORE}", hit["score"])
            with self.tracer.start_as_current_span("generate") as g:
                g.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
                g.set_attribute(SpanAttributes.LLM_MODEL_NAME, "extractive-v1")
                g.set_attribute(SpanAttributes.LLM_PROMPT_TEMPLATE_VERSION, "none")
            if fail:
                root.set_status(Status(StatusCode.ERROR, "generator crashed"))
                return
            shown = reply["answer"] if reply["decision"] == "answer" else ABSTENTION
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, shown)
        self.shown[question_id] = {"question_id": question_id, "retrieved": reply["retrieved"],
                                   "decision": reply["decision"], "answer": shown, "citations": [],
                                   "model": "extractive-v1", "prompt_version": "none"}

    def write_otlp_json(self, path, batch=7):
        """As the Collector's file exporter: one ExportTraceServiceRequest per line, hex ids."""
        spans = self.exporter.get_finished_spans()
        with path.open("w", encoding="utf-8") as fh:
            for i in range(0, len(spans), batch):
                request = MessageToDict(encode_spans(spans[i:i + batch]))
                for rs in request["resourceSpans"]:
                    for ss in rs["scopeSpans"]:
                        for s in ss["spans"]:
                            for key in ("traceId", "spanId", "parentSpanId"):
                                if s.get(key):
                                    s[key] = base64.b64decode(s[key]).hex()
                fh.write(json.dumps(request) + "\n")

    def phoenix_rows(self):
        """The spans as rows of a Phoenix spans dataframe (context.*, parent_id, attributes.*)."""
        rows = []
        for s in self.exporter.get_finished_spans():
            a = dict(s.attributes)
            docs = []
            for i in range(100):
                key = f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}"
                if key not in a:
                    break
                docs.append({"document.id": a.pop(key),
                             "document.score": a.pop(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_SCORE}")})
            row = {"name": s.name, "span_kind": a.get(KIND), "context.trace_id": f"{s.context.trace_id:032x}",
                   "context.span_id": f"{s.context.span_id:016x}",
                   "parent_id": f"{s.parent.span_id:016x}" if s.parent else None,
                   "start_time": dt.datetime.fromtimestamp(s.start_time / 1e9, dt.UTC),
                   "end_time": dt.datetime.fromtimestamp(s.end_time / 1e9, dt.UTC),
                   "status_code": s.status.status_code.name, "status_message": s.status.description}
            for k, v in a.items():
                row[f"attributes.{k}"] = json.loads(v) if k == SpanAttributes.METADATA else v
            if docs:
                row[f"attributes.{DOCS}"] = docs
            rows.append(row)
        return rows


def traces_spec(path, **kw):
    return system_from_mapping({"name": "traced", "kind": "traces", "path": str(path), **kw}, source="test.yaml")


def metric_tables(sample, runs):
    labels, judgements = tables.empty("judge_labels"), tables.empty("answer_judgements")
    qm, _ = build_question_metrics(sample.cfg, sample.snapshot, sample.golden, runs, labels, judgements)
    qm = qm.filter(pl.col("metric") != "latency_ms")
    return qm, build_summary(sample.cfg, qm, sample.golden, sample.snapshot)


@pytest.fixture(scope="module")
def traced(sample):
    rag = TracedRag()
    for i, (qid, q, groups) in enumerate(sample.golden.select("question_id", "question", "user_groups").iter_rows()):
        rag(qid, q, groups, with_id=i % 2 == 0)  # every other trace carries no question id: matched by text
    return rag


def test_otlp_json_import_has_parity_with_the_equivalent_run_log(sample, traced, tmp_path):
    path = tmp_path / "traces.jsonl"
    traced.write_otlp_json(path)
    assert len(path.read_text().splitlines()) > 1
    run = TracesRunner(traces_spec(path, question_id_attribute="metadata.question_id")).run(
        sample.golden, sample.ctx("traced"))
    log = tmp_path / "equivalent.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in traced.shown.values()), encoding="utf-8")
    logged = load_run_log(log, "traced", sample.corpus_version, sample.golden["golden_version"][0],
                          known_chunks=set(sample.snapshot["chunk_id"]))
    cols = ["question_id", "retrieved", "decision", "answer", "citations", "error", "model", "prompt_version"]
    assert run.runs.select(cols).equals(logged.select(cols))
    assert run.info["matched_by_attribute"] == 26 and run.info["matched_by_text"] == 26
    assert run.info["unmatched_traces"] == 0 and run.info["questions_without_trace"] == 0
    rules = dict(zip(run.runs["question_id"], run.runs["decision_rule"]))
    for qid, shown in traced.shown.items():
        assert rules[qid] == ("default_answer" if shown["decision"] == "answer" else "abstain_phrase")
    assert run.runs["latency_ms"].null_count() == 0 and run.runs["trace_id"].str.len_chars().unique().to_list() == [32]
    qm_t, sum_t = metric_tables(sample, run.runs)
    qm_l, sum_l = metric_tables(sample, logged)
    assert qm_t.height > 0 and qm_t.equals(qm_l)
    assert sum_t.equals(sum_l)


def test_unmatched_traces_and_questions_without_a_trace_are_counted(sample, tmp_path):
    rag = TracedRag()
    golden = sample.golden.head(6)
    rows = list(golden.select("question_id", "question", "user_groups").iter_rows())
    for qid, q, groups in rows[:4]:
        rag(qid, q, groups)
    rag("q999", "¿Dónde está mi pedido 4411?", [])                 # a question id outside the golden set
    rag("x", "una pregunta que nadie hizo", [], with_id=False)     # no id, no matching text
    rag(rows[4][0], "  " + rows[4][1].upper() + " ", [], with_id=False)  # text differs only in case/space
    path = tmp_path / "t.jsonl"
    rag.write_otlp_json(path)
    runner = TracesRunner(traces_spec(path, question_id_attribute="metadata.question_id"))
    run = runner.run(golden, sample.ctx("traced"))
    info = run.info
    assert info["traces"] == 7 and info["unmatched_traces"] == 2
    reasons = sorted(u["reason"] for u in info["unmatched_examples"])
    assert "metadata.question_id = 'q999' is not a question of the evaluated golden set" in reasons
    assert any("matches no golden question" in r for r in reasons)
    assert info["matched_by_text"] == 1 and info["matched_by_attribute"] == 4
    assert info["questions_without_trace"] == 1 and info["questions_without_trace_ids"] == [rows[5][0]]
    missing = run.runs.filter(pl.col("question_id") == rows[5][0]).row(0, named=True)
    assert (missing["decision"], missing["decision_rule"]) == ("error", "no_trace")
    assert run.runs.height == 6  # every golden question has exactly one row
    assert normalise_question("  ¿CÓMO\tva? ") == normalise_question("¿cómo va?")


def test_decision_attribute_span_status_and_one_chunk_documents(sample, tmp_path):
    rag = TracedRag()
    golden = sample.golden.head(3)
    rows = list(golden.select("question_id", "question", "user_groups").iter_rows())
    rag(*rows[0], decision_attr=True)
    rag(*rows[1], fail=True)
    rag(*rows[2])
    path = tmp_path / "t.jsonl"
    rag.write_otlp_json(path)
    run = TracesRunner(traces_spec(path, question_id_attribute="metadata.question_id",
                                   decision_attribute="metadata.decision")).run(golden, sample.ctx("traced"))
    r = run.runs.to_dicts()
    assert (r[0]["decision"], r[0]["decision_rule"]) == (rag.shown[rows[0][0]]["decision"], "attribute")
    assert (r[1]["decision"], r[1]["decision_rule"]) == ("error", "span_status")
    assert "generator crashed" in r[1]["error"]
    assert r[2]["decision_rule"] in ("default_answer", "abstain_phrase")


def test_document_ids_map_to_chunks_by_the_documented_rule(sample, tmp_path):
    single, multi = "solo", "manual"
    ctx = RunContext("traced", "cv", "gv", frozenset({"solo#0", "manual#0", "manual#1"}))
    golden = sample.golden.head(1)
    qid, q = golden["question_id"][0], golden["question"][0]

    def write(doc_ids, name):
        rag = TracedRag()
        with rag.tracer.start_as_current_span("root") as root:
            root.set_attribute(SpanAttributes.INPUT_VALUE, q)
            root.set_attribute(SpanAttributes.OUTPUT_VALUE, "respuesta")
            with rag.tracer.start_as_current_span("retrieve") as r:
                r.set_attribute(KIND, "RETRIEVER")
                for i, d in enumerate(doc_ids):
                    r.set_attribute(f"{DOCS}.{i}.{DocumentAttributes.DOCUMENT_ID}", d)
        path = tmp_path / name
        rag.write_otlp_json(path)
        return path

    run = TracesRunner(traces_spec(write([single, f"{multi}#1"], "ok.jsonl"))).run(golden, ctx)
    assert [h["chunk_id"] for h in run.runs["retrieved"][0]] == [f"{single}#0", f"{multi}#1"]
    assert run.runs["question_id"][0] == qid
    with pytest.raises(InputError, match=f"document {multi!r} has"):
        TracesRunner(traces_spec(write([multi], "bad.jsonl"))).run(golden, ctx)
    chunk_map = tmp_path / "map.jsonl"
    chunk_map.write_text(json.dumps({"document_id": "ext-17", "chunk_id": f"{multi}#0"}) + "\n", encoding="utf-8")
    run = TracesRunner(traces_spec(write(["ext-17"], "mapped.jsonl"), chunk_map=str(chunk_map))).run(golden, ctx)
    assert run.runs["retrieved"][0][0]["chunk_id"] == f"{multi}#0"


@pytest.mark.parametrize("suffix", [".parquet", ".jsonl"])
def test_phoenix_spans_export_gives_the_same_rows_as_otlp(sample, traced, tmp_path, suffix):
    otlp = tmp_path / "traces.jsonl"
    traced.write_otlp_json(otlp)
    spec = dict(question_id_attribute="metadata.question_id")
    want = TracesRunner(traces_spec(otlp, **spec)).run(sample.golden, sample.ctx("traced")).runs
    frame = pl.DataFrame(traced.phoenix_rows(), infer_schema_length=None)
    path = tmp_path / f"phoenix{suffix}"
    if suffix == ".parquet":
        frame.write_parquet(path)
    else:
        frame.write_ndjson(path)
    got = TracesRunner(traces_spec(path, **spec)).run(sample.golden, sample.ctx("traced")).runs
    cols = [c for c in want.columns if c != "latency_ms"]  # Phoenix keeps microseconds, OTLP nanoseconds
    assert got.select(cols).equals(want.select(cols))
    assert (got["latency_ms"] - want["latency_ms"]).abs().max() < 0.01


def test_malformed_otlp_line_names_file_and_line(sample, tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"resourceSpans": []}\n{"resourceSpans": [\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2.*malformed JSON"):
        TracesRunner(traces_spec(path)).run(sample.golden, sample.ctx("traced"))


def test_values_of_the_wrong_shape_are_refused_cut_or_counted(sample, tmp_path):
    rag = TracedRag()
    golden = sample.golden.head(3)
    (q0, t0, _), (q1, t1, _), (q2, t2, _) = golden.select("question_id", "question", "user_groups").iter_rows()
    with rag.tracer.start_as_current_span("rag_query") as root:  # q0: an array as the answer (20,000 strings)
        root.set_attribute(SpanAttributes.INPUT_VALUE, t0)
        root.set_attribute(SpanAttributes.METADATA, json.dumps({"question_id": q0}))
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, ["restricted words"] * 20_000)
        with rag.tracer.start_as_current_span("generate") as g:
            g.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
    with rag.tracer.start_as_current_span("rag_query") as root:  # q1: a good answer, a list as the model name
        root.set_attribute(SpanAttributes.INPUT_VALUE, t1)
        root.set_attribute(SpanAttributes.METADATA, json.dumps({"question_id": q1}))
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, "Treinta días.")
        with rag.tracer.start_as_current_span("generate") as g:
            g.set_attribute(KIND, OpenInferenceSpanKindValues.LLM.value)
            g.set_attribute(SpanAttributes.LLM_MODEL_NAME, ["m" * 300] * 3)
    with rag.tracer.start_as_current_span("rag_query") as root:  # a question id that is a list of 1,500 strings
        root.set_attribute(SpanAttributes.INPUT_VALUE, t2)
        root.set_attribute(SpanAttributes.METADATA, json.dumps({"question_id": ["x" * 50] * 1500}))
        root.set_attribute(SpanAttributes.OUTPUT_VALUE, "fine")
    path = tmp_path / "t.jsonl"
    rag.write_otlp_json(path)
    lines = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
    second_root = [s for s in lines[0]["resourceSpans"][0]["scopeSpans"][0]["spans"] if s["name"] == "rag_query"][1]
    # q1's root ends before it starts (a clock problem): its latency is null and counted
    second_root["startTimeUnixNano"], second_root["endTimeUnixNano"] = (second_root["endTimeUnixNano"],
                                                                         second_root["startTimeUnixNano"])
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    run = TracesRunner(traces_spec(path, question_id_attribute="metadata.question_id")).run(
        golden, sample.ctx("traced"))
    r = {row["question_id"]: row for row in run.runs.to_dicts()}
    assert (r[q0]["decision"], r[q0]["decision_rule"], r[q0]["answer"]) == ("error", "not_text", None)
    assert r[q0]["error"].endswith("output.value is an array of 20000 values, not a string; expected the answer "
                                   "text (OpenInference output.value)")
    assert (r[q1]["decision"], r[q1]["answer"], r[q1]["latency_ms"]) == ("answer", "Treinta días.", None)
    assert run.info["negative_latency_traces"] == 1
    assert run.info["negative_latency_trace_ids"] == [second_root["traceId"]]
    # a model name that is a list: its repr cut to 200 characters ("['mmm...", 300 m's in the first item)
    assert r[q1]["model"] == "['" + "m" * 198
    (unmatched,) = run.info["unmatched_examples"]
    # the reason quotes at most 80 characters of the value (it used to hold all 81 KB of it)
    assert unmatched["reason"].startswith("metadata.question_id is an array (['xxxxxxxx")
    assert unmatched["reason"].endswith("characters)); expected a question id") and len(unmatched["reason"]) < 200
    assert r[q2]["decision_rule"] == "no_trace"


def test_format_auto_reads_a_bounded_prefix_of_a_huge_line(tmp_path):
    import tracemalloc

    from rag_eval_pipeline.core.systems.trace_sources import SNIFF_BYTES, _format_of

    path = tmp_path / "one_line.jsonl"
    with path.open("wb") as fh:  # one 40 MiB line without a newline
        fh.write(b'\n\n{"resourceSpans": [{"pad": "')
        fh.write(b"x" * (40 << 20))
    tracemalloc.start()
    try:
        assert _format_of(path) == "otlp_json"
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * SNIFF_BYTES, peak  # it used to read the whole line: 40 MiB and more
    phoenix = tmp_path / "p.jsonl"
    phoenix.write_text('{"context.trace_id": "a", "context.span_id": "b"}\n', encoding="utf-8")
    assert _format_of(phoenix) == "phoenix"


def test_a_line_is_read_up_to_the_bound_and_a_longer_one_refused_holding_one_copy(tmp_path, monkeypatch):
    import tracemalloc

    from rag_eval_pipeline.core.systems import trace_sources

    monkeypatch.setattr(trace_sources, "MAX_LINE_BYTES", 1000)
    monkeypatch.setattr(trace_sources, "LINE_PIECE_BYTES", 100)
    path = tmp_path / "t.jsonl"
    # line 1: 1000 bytes and its newline (the bound: kept); line 2: 999 bytes at the end, no newline
    path.write_bytes(b"a" * 1000 + b"\n" + b"b" * 999)
    assert list(trace_sources._lines(path)) == [(1, "a" * 1000 + "\n"), (2, "b" * 999)]
    for body, line in ((b"c" * 1001, 1), (b"x\n" + b"d" * 1001 + b"\n", 2)):  # 1001 bytes: one past it
        path.write_bytes(body)
        with pytest.raises(InputError, match=rf"line {line}, field 'json': line longer than 1000 bytes"):
            list(trace_sources._lines(path))
    # with the real bound, a refused 100 MiB line costs about one copy of 64 MiB (one readline of the
    # bound joined its chunks into a second copy: 128 MiB)
    monkeypatch.undo()
    path.write_bytes(b"y" * (100 << 20))
    tracemalloc.start()
    try:
        with pytest.raises(InputError, match="line longer than 67108864 bytes"):
            list(trace_sources._lines(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 80 << 20, peak


def test_an_id_longer_than_128_characters_is_refused(sample, tmp_path):
    path = tmp_path / "t.jsonl"
    span = {"traceId": "f" * 200, "spanId": "1" * 16, "name": "root"}
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 1, field 'traceId / spanId / parentSpanId': an id of 200 characters"):
        TracesRunner(traces_spec(path)).run(sample.golden, sample.ctx("traced"))
