"""``kind: python``: parity with the in-process reference system; failures are error rows."""

import sys
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


@pytest.mark.parametrize("messages", [False, True])
def test_an_exception_is_an_error_row_naming_its_type(sample, messages):
    run = PythonRunner(spec(f"{MODULE}:fails_on_absent", exception_messages=messages)).run(
        sample.golden, sample.ctx("py"))
    rows = {r["question_id"]: r for r in run.runs.iter_rows(named=True)}
    ref = {r["question_id"]: r for r in sample.reference_runs.iter_rows(named=True)}
    assert len(rows) == 52
    for qid, r in rows.items():
        if qid.endswith("3"):
            assert r["decision"] == "error"
            message = f": index shard offline for {qid}" if messages else ""  # the type alone by default
            assert r["error"] == f"system 'py', question {qid!r}: the callable raised ValueError{message}"
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


@pytest.mark.parametrize("timeout_s", [None, 5.0])
def test_a_callable_that_raises_timeout_error_itself_is_an_error_row_not_a_crash(sample, timeout_s):
    """Since Python 3.11 the built-in TimeoutError is concurrent.futures.TimeoutError: the callable's own
    timeout must read as the exception it is, not as the run's deadline (it used to crash without timeout_s)."""
    def gives_up(question_id, question, user_groups):
        raise TimeoutError("upstream model did not answer")

    run = PythonRunner(spec(f"{MODULE}:answer", timeout_s=timeout_s), fn=gives_up).run(
        sample.golden.head(2), sample.ctx("py"))
    assert run.runs["decision"].to_list() == ["error", "error"]
    # the type only: a message is kept with exception_messages: true
    assert run.runs["error"][0].endswith("the callable raised TimeoutError")
    assert run.info["errors_by_kind"] == {"exception": 2}


class _Quit(BaseException):
    """A BaseException of a team's own (neither Exception nor SystemExit)."""


@pytest.mark.parametrize("timeout_s", [None, 5.0])
@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize("messages", [False, True])
def test_system_exit_and_other_base_exceptions_are_error_rows_not_a_crashed_run(sample, timeout_s, concurrency,
                                                                                   messages):
    """A callable that calls ``sys.exit(3)`` (SystemExit) or raises a BaseException of its own on one question:
    that question is an ``error`` row naming the type (the message ``3`` only with ``exception_messages``), the
    other questions are answered. Before the fix SystemExit escaped the runner and the step ``rag_runs`` failed."""
    def exits(question_id, question, user_groups):
        if question_id == "q01":
            sys.exit(3)
        if question_id == "q02":
            raise _Quit("stop here")
        return {"retrieved": [], "decision": "abstain"}

    run = PythonRunner(spec(f"{MODULE}:answer", timeout_s=timeout_s, concurrency=concurrency,
                            exception_messages=messages), fn=exits).run(sample.golden.head(3), sample.ctx("py"))
    assert run.runs["decision"].to_list() == ["error", "error", "abstain"]
    assert run.runs["error"][0] == ("system 'py', question 'q01': the callable raised SystemExit"
                                    + (": 3" if messages else ""))
    assert run.runs["error"][1] == ("system 'py', question 'q02': the callable raised _Quit"
                                    + (": stop here" if messages else ""))
    assert run.info["errors_by_kind"] == {"exception": 2}


@pytest.mark.parametrize("timeout_s", [None, 5.0])
def test_keyboard_interrupt_in_the_callable_still_stops_the_run(sample, timeout_s):
    def interrupted(question_id, question, user_groups):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        PythonRunner(spec(f"{MODULE}:answer", timeout_s=timeout_s), fn=interrupted).run(
            sample.golden.head(1), sample.ctx("py"))


def test_a_module_beside_the_configuration_is_found_and_a_missing_one_says_where_it_was_looked_for(tmp_path):
    (tmp_path / "my_rag_beside_config.py").write_text("def answer(q, t, g):\n    return {}\n", encoding="utf-8")
    runner = PythonRunner(spec("my_rag_beside_config:answer"), base_dir=tmp_path)
    assert runner.system.fn.__module__ == "my_rag_beside_config"
    with pytest.raises(ConfigError, match=f"looked in the configuration's folder {tmp_path}, then PYTHONPATH"):
        PythonRunner(spec("not_beside_config:answer"), base_dir=tmp_path)


def test_a_stuck_call_does_not_time_out_the_questions_behind_it(sample):
    # concurrency 1, q01 stuck: q02-q04 used to wait in the one worker's queue and "time out" uncalled
    release, called = threading.Event(), []

    def stuck_first(question_id, question, user_groups):
        called.append(question_id)
        if question_id == "q01":
            release.wait(10)
        return {"retrieved": [], "decision": "abstain"}

    start = time.monotonic()
    try:
        run = PythonRunner(spec(f"{MODULE}:answer", timeout_s=0.3), fn=stuck_first).run(
            sample.golden.head(4), sample.ctx("py"))
        elapsed = time.monotonic() - start
    finally:
        release.set()
    assert called == ["q01", "q02", "q03", "q04"]
    assert run.runs["decision"].to_list() == ["error", "abstain", "abstain", "abstain"]
    assert run.runs["error"][0] == ("system 'py', question 'q01': timeout: the callable did not return within "
                                    "timeout_s=0.3 s")
    assert run.info["errors_by_kind"] == {"timeout": 1} and run.info["calls"] == 4
    assert elapsed < 2.0  # one deadline (0.3 s) and three quick calls


def test_questions_are_not_run_while_too_many_calls_are_stuck(sample):
    # every call hangs; concurrency 1 tolerates max(4, 2 * 1) = 4 abandoned calls: q01-q04 time out after
    # 0.2 s each, q05 and q06 are never started
    release, called = threading.Event(), []

    def hangs(question_id, question, user_groups):
        called.append(question_id)
        release.wait(10)
        return {"retrieved": [], "decision": "abstain"}

    try:
        run = PythonRunner(spec(f"{MODULE}:answer", timeout_s=0.2), fn=hangs).run(
            sample.golden.head(6), sample.ctx("py"))
    finally:
        release.set()
    assert called == ["q01", "q02", "q03", "q04"]
    errors = run.runs["error"].to_list()
    assert all(e.endswith("timeout: the callable did not return within timeout_s=0.2 s") for e in errors[:4])
    assert errors[4] == ("system 'py', question 'q05': not run: 4 earlier call(s) are still running past "
                         "timeout_s=0.2 s (workers stuck; at most 4 are left running)")
    assert run.info["errors_by_kind"] == {"timeout": 4, "not_run": 2} and run.info["calls"] == 4


def test_an_exception_message_is_cut_and_a_broken_str_is_an_error_row(sample):
    class BrokenStr(Exception):
        def __str__(self):
            raise RuntimeError("boom")

    def fails(question_id, question, user_groups):
        if question_id == "q01":
            raise ValueError("restricted " * 20_000)  # 220,000 characters
        raise BrokenStr()

    run = PythonRunner(spec(f"{MODULE}:answer", exception_messages=True), fn=fails).run(
        sample.golden.head(2), sample.ctx("py"))
    first, second = run.runs["error"].to_list()
    assert first == ("system 'py', question 'q01': the callable raised ValueError: "
                     + ("restricted " * 20_000)[:100_000] + "... (120000 more characters cut)")
    assert second == ("system 'py', question 'q02': the callable raised BrokenStr (its message could not be read: "
                      "str() raised RuntimeError)")
    run = PythonRunner(spec(f"{MODULE}:answer"), fn=fails).run(sample.golden.head(2), sample.ctx("py"))
    assert run.runs["error"].to_list() == ["system 'py', question 'q01': the callable raised ValueError",
                                           "system 'py', question 'q02': the callable raised BrokenStr"]


def test_a_timed_out_call_printing_after_the_run_is_still_captured(sample, capsys):
    printed = threading.Event()

    def late(question_id, question, user_groups):
        time.sleep(0.5)
        print("run 0000 (full_evaluation): succeeded")
        sys.stdout.writelines(["gate verdict: passed\n"])
        sys.stderr.buffer.write(b"promotion: promoted\n")
        printed.set()
        return {"retrieved": [], "decision": "abstain"}

    system = PythonRunner(spec(f"{MODULE}:answer", timeout_s=0.1), fn=late)
    run = system.run(sample.golden.head(1), sample.ctx("py"))
    assert run.runs["decision"].to_list() == ["error"]
    print("after the run")  # this thread is not in a call: its writes pass through
    assert printed.wait(5)
    out, err = capsys.readouterr()
    assert (out, err) == ("after the run\n", "")
    assert system.system.capture.lines == 3


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
