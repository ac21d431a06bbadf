"""``kind: langsmith``: a hand-written export in LangSmith's documented run data format
(https://docs.langchain.com/langsmith/run-data-format), and parity with the equivalent run log through
the metric tables."""

from __future__ import annotations

import json
import uuid

import polars as pl
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.pipeline import build_question_metrics, build_summary
from rag_eval_pipeline.core.sources.run_logs import load_run_log
from rag_eval_pipeline.core.systems.base import run_system, system_from_mapping
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR

HAND_WRITTEN = REPO_ROOT / "rag_eval_pipeline_tests" / "fixtures" / "langsmith" / "runs.jsonl"


def spec(path, **kw):
    return system_from_mapping({"name": "ls", "kind": "langsmith", "path": str(path), **kw}, source="test.yaml")


def test_a_hand_written_export_gives_one_row_per_question(sample):
    golden = sample.golden.head(4)  # q01..q04
    run = run_system(spec(HAND_WRITTEN), golden, sample.ctx("ls"))
    rows = {r["question_id"]: r for r in run.runs.iter_rows(named=True)}
    assert list(rows) == ["q01", "q02", "q03", "q04"]
    # q01: matched by extra.metadata.question_id; the retriever run's documents in order; 750 ms
    q01 = rows["q01"]
    assert [(h["chunk_id"], h["score"], h["rank"]) for h in q01["retrieved"]] == [
        ("devoluciones-a1#1", 0.74, 1), ("returns-a1-en#1", 0.62, 2)]
    assert (q01["decision"], q01["decision_rule"], q01["answer"]) == (
        "answer", "default_answer", "Tienes 30 días naturales desde la entrega.")
    assert q01["latency_ms"] == pytest.approx(750.0) and q01["trace_id"] == "1f0a6c52-0001-4000-8000-000000000001"
    # q02: no question id, matched by its text (case and spaces folded); "I don't know." abstains
    assert (rows["q02"]["decision"], rows["q02"]["decision_rule"], rows["q02"]["retrieved"]) == (
        "abstain", "abstain_phrase", [])
    assert rows["q02"]["latency_ms"] == pytest.approx(2000.0)
    # q03: the root run's error
    assert (rows["q03"]["decision"], rows["q03"]["decision_rule"]) == ("error", "run_error")
    assert rows["q03"]["error"] == "root run error: TimeoutError: generator timed out after 30 s"
    # q04: no trace at all
    assert (rows["q04"]["decision"], rows["q04"]["decision_rule"]) == ("error", "no_trace")
    info = run.info
    assert (info["traces"], info["unmatched_traces"], info["questions_without_trace"], info["duplicate_traces"]) == (
        4, 1, 1, 0)
    assert info["unmatched_examples"] == [{"trace_id": "4d90b132-0004-4000-8000-000000000001",
                                           "why": "no golden question matches"}]


def test_a_bad_export_is_refused_naming_file_line_and_field(sample, tmp_path):
    lines = HAND_WRITTEN.read_text(encoding="utf-8").splitlines()
    bad = json.loads(lines[1])
    bad["outputs"]["documents"][0]["metadata"]["chunk_id"] = "no-such-doc#9"
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(bad, ensure_ascii=False)] + lines[2:]) + "\n", encoding="utf-8")
    # named where it is written: the retriever run's line and LangSmith field
    with pytest.raises(InputError, match=r"bad.jsonl, line 2, field 'outputs.documents.0.metadata.chunk_id': chunk "
                                         r"'no-such-doc#9' is not in the corpus snapshot"):
        run_system(spec(path), sample.golden.head(4), sample.ctx("ls"))
    del bad["trace_id"]
    path.write_text("\n".join([lines[0], json.dumps(bad, ensure_ascii=False)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2, field 'trace_id'"):
        run_system(spec(path), sample.golden.head(4), sample.ctx("ls"))


def as_langsmith_runs(log_lines: list[dict], questions: dict[str, str]) -> list[dict]:
    """The sample's run log written as LangSmith would have traced the same answers: a root ``chain`` run
    (question in, answer, decision and citations out; every other one carries its question id) and a
    ``retriever`` child run whose documents are the ranked hits."""
    out = []
    for i, rec in enumerate(log_lines):
        root = str(uuid.UUID(int=2 * i + 1))
        outputs = None if rec["decision"] == "error" else {
            "output": rec.get("answer"), "decision": rec["decision"], "citations": rec.get("citations", [])}
        out.append({"id": root, "trace_id": root, "parent_run_id": None, "name": "support_rag", "run_type": "chain",
                    "start_time": "2025-06-01T09:00:00", "end_time": "2025-06-01T09:00:01",
                    "inputs": {"question": questions[rec["question_id"]]}, "outputs": outputs,
                    "error": rec.get("error"),
                    "extra": {"metadata": {"question_id": rec["question_id"]} if i % 2 == 0 else {}}})
        docs = [{"page_content": "", "metadata": {"chunk_id": h["chunk_id"], "score": h["score"]}, "type": "Document"}
                for h in sorted(rec["retrieved"], key=lambda h: h.get("rank", 0))]  # no rank: list order
        out.append({"id": str(uuid.UUID(int=2 * i + 2)), "trace_id": root, "parent_run_id": root,
                    "name": "retriever", "run_type": "retriever", "start_time": "2025-06-01T09:00:00.1",
                    "end_time": "2025-06-01T09:00:00.2", "inputs": {"query": ""}, "outputs": {"documents": docs},
                    "error": None, "extra": {}})
    return out


def metric_tables(sample, runs):
    labels, judgements = tables.empty("judge_labels"), tables.empty("answer_judgements")
    qm, _ = build_question_metrics(sample.cfg, sample.snapshot, sample.golden, runs, labels, judgements)
    qm = qm.filter(pl.col("metric") != "latency_ms")
    return qm, build_summary(sample.cfg, qm, sample.golden, sample.snapshot)


def test_the_export_has_parity_with_the_equivalent_run_log(sample, tmp_path):
    log = SAMPLE_DIR / "runs" / "team_rag.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    questions = dict(sample.golden.select("question_id", "question").iter_rows())
    path = tmp_path / "langsmith_runs.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in as_langsmith_runs(records, questions)),
                    encoding="utf-8")
    run = run_system(spec(path, decision_key="outputs.decision", citations_key="outputs.citations"),
                     sample.golden, sample.ctx("team_rag"))
    logged = load_run_log(log, "team_rag", sample.corpus_version, sample.golden["golden_version"][0],
                          known_chunks=set(sample.snapshot["chunk_id"]))
    cols = ["question_id", "retrieved", "decision", "answer", "citations"]
    assert run.runs.height == logged.height == 52
    assert run.runs.select(cols).equals(logged.select(cols))
    assert run.info["unmatched_traces"] == 0 and run.info["questions_without_trace"] == 0
    qm_s, sum_s = metric_tables(sample, run.runs)
    qm_l, sum_l = metric_tables(sample, logged)
    assert qm_s.height > 0 and qm_s.equals(qm_l)
    assert sum_s.equals(sum_l)


def test_times_are_compared_as_times_not_as_text(sample, tmp_path):
    # Two traces of q01: A started 2025-06-01T10:30:00+02:00 (08:30 UTC), B at 2025-06-01T09:00:00Z (09:00 UTC).
    # B started later, so B's answer is kept; as text "10:30..." sorts after "09:00..." and A used to win.
    # Within B, two retriever runs: the one started at 11:00:01+02:00 (09:00:01 UTC) ran before the one at
    # 09:00:02Z; the later one's documents are the trace's ranking (as text, "11:00:01+02:00" used to win).
    def root(trace, start, answer):
        return {"id": trace, "trace_id": trace, "parent_run_id": None, "run_type": "chain", "name": "rag",
                "start_time": start, "end_time": None, "inputs": {"question": "x"}, "outputs": {"output": answer},
                "error": None, "extra": {"metadata": {"question_id": "q01"}}}

    def retriever(rid, trace, start, chunk):
        return {"id": rid, "trace_id": trace, "parent_run_id": trace, "run_type": "retriever", "name": "r",
                "start_time": start, "end_time": None, "inputs": {},
                "outputs": {"documents": [{"metadata": {"chunk_id": chunk, "score": 1.0}}]}, "error": None,
                "extra": {}}

    a, b = str(uuid.UUID(int=101)), str(uuid.UUID(int=102))
    runs = [root(a, "2025-06-01T10:30:00+02:00", "answer A"),
            root(b, "2025-06-01T09:00:00Z", "answer B"),
            retriever(str(uuid.UUID(int=103)), b, "2025-06-01T11:00:01+02:00", "devoluciones-a1#1"),
            retriever(str(uuid.UUID(int=104)), b, "2025-06-01T09:00:02Z", "returns-a1-en#1")]
    path = tmp_path / "times.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in runs), encoding="utf-8")
    run = run_system(spec(path), sample.golden.head(1), sample.ctx("ls"))
    [row] = run.runs.iter_rows(named=True)
    assert row["answer"] == "answer B" and [h["chunk_id"] for h in row["retrieved"]] == ["returns-a1-en#1"]
    assert run.info["duplicate_traces"] == 1
