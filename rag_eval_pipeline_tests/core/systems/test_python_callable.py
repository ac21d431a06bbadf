"""``kind: python``: parity with the in-process reference system; failures are error rows."""

import threading
import time

import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.base import system_from_mapping
from rag_eval_pipeline.core.systems.kinds.python import PythonRunner

COMPARED = [c for c in tables.SCHEMAS["rag_runs"] if c not in ("system",) + tables.RAG_RUNS_OPTIONAL]
MODULE = "rag_eval_pipeline_tests.core.systems.reference_callable"


def spec(target, **kw):
    return system_from_mapping({"name": "py", "kind": "python", "callable": target, **kw}, source="test.yaml")


@pytest.mark.parametrize("concurrency", [1, 4])
def test_python_callable_parity_with_the_reference_system(sample, concurrency):
    run = PythonRunner(spec(f"{MODULE}:answer", concurrency=concurrency)).run(sample.golden, sample.ctx("py"))
    assert run.runs.height == 52
    assert run.runs.select(COMPARED).equals(sample.reference_runs.select(COMPARED))
    assert run.runs["latency_ms"].null_count() == 0
    assert run.info["calls"] == 52 and run.info["error_rows"] == 0


def test_an_exception_is_an_error_row_with_its_message(sample):
    run = PythonRunner(spec(f"{MODULE}:fails_on_absent")).run(sample.golden, sample.ctx("py"))
    rows = {r["question_id"]: r for r in run.runs.iter_rows(named=True)}
    ref = {r["question_id"]: r for r in sample.reference_runs.iter_rows(named=True)}
    assert len(rows) == 52
    for qid, r in rows.items():
        if qid.endswith("3"):
            assert r["decision"] == "error"
            assert r["error"] == (f"system 'py', question {qid!r}: the callable raised ValueError: "
                                  f"index shard offline for {qid}")
        elif qid.endswith("7"):
            assert r["decision"] == "error" and "return value is a JSON list" in r["error"]
        else:  # the other questions are answered as in process
            assert {c: r[c] for c in COMPARED} == {c: ref[qid][c] for c in COMPARED}
    assert run.info["errors_by_kind"] == {"exception": 5, "invalid_reply": 5}


def test_a_call_past_timeout_s_is_an_error_row(sample):
    release = threading.Event()

    def slow(question_id, question, user_groups):
        if question_id == "q02":
            release.wait(5)
        return {"retrieved": [], "decision": "abstain"}

    start = time.monotonic()
    run = PythonRunner(spec(f"{MODULE}:answer", timeout_s=0.3, concurrency=2), fn=slow).run(
        sample.golden.head(4), sample.ctx("py"))
    release.set()
    assert time.monotonic() - start < 3
    assert run.runs["decision"].to_list() == ["abstain", "error", "abstain", "abstain"]
    assert "did not return within timeout_s=0.3 s" in run.runs["error"][1]


def test_an_unimportable_callable_is_a_config_error():
    with pytest.raises(ConfigError, match="no_such_module"):
        PythonRunner(spec("no_such_module:fn"))
    with pytest.raises(ConfigError, match="has no attribute 'nope'"):
        PythonRunner(spec(f"{MODULE}:nope"))


def test_a_reply_outside_the_snapshot_or_the_schema_is_an_error_row_naming_the_field(sample):
    replies = {"q01": {"retrieved": [{"chunk_id": "nope#0"}], "decision": "abstain"},
               "q02": {"retrieved": [{"chunk_id": "devoluciones-a1#1", "score": float("nan")}], "decision": "abstain"},
               "q03": {"retrieved": [], "decision": "answer"},
               "q04": {"question_id": "q99", "retrieved": [], "decision": "abstain"}}
    run = PythonRunner(spec(f"{MODULE}:answer"), fn=lambda q, text, groups: replies[q]).run(
        sample.golden.head(4), sample.ctx("py"))
    errors = run.runs["error"].to_list()
    assert run.runs["decision"].to_list() == ["error"] * 4
    assert "field 'retrieved[0].chunk_id'" in errors[0] and "not in the corpus snapshot" in errors[0]
    assert "field 'retrieved[0].score'" in errors[1]
    assert "field 'answer'" in errors[2]
    assert "'question_id' is 'q99'" in errors[3]
    assert all(e.startswith(f"system 'py', question 'q0{i}'") for i, e in enumerate(errors, start=1))
