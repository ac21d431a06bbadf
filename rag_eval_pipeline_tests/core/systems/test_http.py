"""``kind: http`` against real services on 127.0.0.1: ``rag-eval serve-reference`` and a fault server."""

import base64
import time

import polars as pl
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.base import system_from_mapping
from rag_eval_pipeline.core.systems.calls import RateLimiter, backoff_delay
from rag_eval_pipeline.core.systems.http import parse_retry_after
from rag_eval_pipeline.core.systems.kinds.http import HttpRunner
from rag_eval_pipeline.core.systems.records import fill_template, get_path
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.core.systems import reference_callable
from rag_eval_pipeline_tests.core.systems.live_servers import (
    ABOUT_TOKENS,
    RagFaultServer,
    ServeReference,
)
from rag_eval_pipeline_tests.servers.local import closed_port

COMPARED = [c for c in tables.SCHEMAS["rag_runs"] if c not in ("system",) + tables.RAG_RUNS_OPTIONAL]


def spec(url, **kw):
    return system_from_mapping({"name": "live", "kind": "http", "url": url, **kw}, source="test.yaml")


def test_serve_reference_over_http_gives_the_in_process_rows(sample):
    with ServeReference(SAMPLE_DIR / "config.yaml", "bm25_k5") as srv:
        assert srv.health["corpus_version"] == sample.corpus_version
        run = HttpRunner(spec(srv.url, version_header="X-Model-Version", concurrency=4)).run(
            sample.golden, sample.ctx("bm25_k5_http"))
    got = run.runs
    assert got.height == sample.golden.height == 52
    assert got["question_id"].to_list() == sample.golden["question_id"].to_list()
    assert got.select(COMPARED).equals(sample.reference_runs.select(COMPARED))
    assert got["system"].unique().to_list() == ["bm25_k5_http"]
    assert got["latency_ms"].null_count() == 0 and (got["latency_ms"] > 0).all()
    assert got["system_version"].unique().to_list() == [f"bm25_k5@{sample.corpus_version[:12]}"]
    assert run.info["calls"] == 52 and run.info["retries"] == 0 and run.info["error_rows"] == 0


def test_every_fault_is_one_error_row_with_its_reason_in_bounded_time(sample):
    golden = sample.golden.head(8)
    ids = golden["question_id"].to_list()
    faults = {ids[0]: "slow", ids[1]: "429", ids[2]: "500", ids[3]: "malformed", ids[4]: "429_once",
              ids[5]: "500_once", ids[6]: "missing_decision"}
    with RagFaultServer(reference_callable.answer, faults, slow_s=2.0, retry_after="1") as srv:
        s = spec(srv.url, timeout_s=0.5, max_retries=2, backoff_s=0.1, max_backoff_s=2, concurrency=4)
        start = time.monotonic()
        run = HttpRunner(s).run(golden, sample.ctx("live"))
        elapsed = time.monotonic() - start
    rows = {r["question_id"]: r for r in run.runs.iter_rows(named=True)}
    assert run.runs.height == 8 and sorted(rows) == sorted(ids)
    err = {q: r["error"] for q, r in rows.items() if r["decision"] == "error"}
    assert sorted(err) == sorted([ids[0], ids[1], ids[2], ids[3], ids[6]])
    assert "timeout" in err[ids[0]] and "after 3 attempt(s)" in err[ids[0]]
    assert "HTTP 429" in err[ids[1]] and "after 3 attempt(s)" in err[ids[1]]
    assert "HTTP 500" in err[ids[2]] and "after 3 attempt(s)" in err[ids[2]]
    assert "malformed JSON" in err[ids[3]] and len(srv.attempts(ids[3])) == 1  # not retried
    assert "'decision'" in err[ids[6]] and f"question {ids[6]!r}" in err[ids[6]]
    for q in (ids[4], ids[5], ids[7]):  # a transient fault retried away, and a healthy question
        assert rows[q]["decision"] != "error"
        ref = sample.reference_runs.filter(pl.col("question_id") == q).row(0, named=True)
        assert rows[q]["retrieved"] == ref["retrieved"] and rows[q]["answer"] == ref["answer"]
    # error rows carry no retrieval: never an empty retrieval scored as if the system had answered
    assert all(rows[q]["retrieved"] == [] for q in err)
    # Retry-After: 1 was honoured although backoff_s (0.1 s) is shorter
    first, second = srv.attempts(ids[4])[:2]
    assert second["time"] - first["time"] >= 0.95
    # bound: 3 attempts of at most 0.5 s each + waits of at most 1 s (Retry-After) per retry, per question
    assert elapsed < 3 * 0.5 + 2 * 1.0 + 3.0
    assert run.info["errors_by_kind"] == {"http_429": 1, "http_500": 1, "invalid_reply": 1,
                                          "malformed_json": 1, "timeout": 1}


def test_timeout_s_is_a_deadline_for_the_whole_attempt(sample):
    golden = sample.golden.head(1)
    qid = golden["question_id"][0]
    # each byte arrives well within any per-read timeout; the body as a whole takes minutes
    # (one byte every 0.9 s: within httpx's per-read timeout of 1 s, so only a whole-attempt deadline stops it)
    with RagFaultServer(reference_callable.answer, {qid: "trickle"}, slow_s=18.0) as srv:
        start = time.monotonic()
        run = HttpRunner(spec(srv.url, timeout_s=1.0, max_retries=0)).run(golden, sample.ctx("live"))
        elapsed = time.monotonic() - start
    assert run.runs["decision"][0] == "error" and "timeout_s=1 s" in run.runs["error"][0]
    assert elapsed < 1.0 + 0.5


def test_refused_connections_are_error_rows(sample):
    golden = sample.golden.head(3)
    s = spec(f"http://127.0.0.1:{closed_port()}/answer", timeout_s=1, max_retries=1, backoff_s=0.05)
    start = time.monotonic()
    run = HttpRunner(s).run(golden, sample.ctx("live"))
    assert time.monotonic() - start < 5
    assert run.runs["decision"].to_list() == ["error"] * 3
    assert run.runs["error"].str.contains("connection failed").all()
    assert run.runs["error"].str.contains("after 2 attempt").all()


def test_a_retry_after_beyond_max_backoff_ends_the_retries(sample):
    golden = sample.golden.head(1)
    qid = golden["question_id"][0]
    with RagFaultServer(reference_callable.answer, {qid: "429"}, retry_after="120") as srv:
        start = time.monotonic()
        run = HttpRunner(spec(srv.url, max_retries=3, max_backoff_s=5)).run(golden, sample.ctx("live"))
        assert time.monotonic() - start < 3
        assert len(srv.attempts(qid)) == 1
    assert "Retry-After 120 s is beyond max_backoff_s=5 s" in run.runs["error"][0]


def test_request_template_and_response_fields(sample):
    golden = sample.golden.head(6)
    ids = golden["question_id"].to_list()
    with RagFaultServer(reference_callable.answer) as srv:
        s = spec(srv.custom_url, request_template={"id": "{question_id}", "input": {"q": "{question}"},
                                                   "groups": "{user_groups}", "note": "ask {question_id}"},
                 response_fields={"retrieved": "data.hits", "chunk_id": "id", "score": "relevance",
                                  "answer": "output.text", "decision": "output.label"})
        run = HttpRunner(s).run(golden, sample.ctx("live"))
        sent = srv.attempts(ids[0])[0]["body"]
    assert sent["id"] == ids[0] and sent["note"] == f"ask {ids[0]}" and isinstance(sent["groups"], list)
    ref = sample.reference_runs.head(6)
    assert run.runs.select("question_id", "retrieved", "decision", "answer").equals(
        ref.select("question_id", "retrieved", "decision", "answer"))
    # a path the reply does not have: an error row naming the system, the question and the path
    with RagFaultServer(reference_callable.answer) as srv:
        s = spec(srv.custom_url, request_template={"id": "{question_id}", "input": {"q": "{question}"}},
                 response_fields={"retrieved": "data.results", "answer": "output.text"})
        run = HttpRunner(s).run(golden.head(1), sample.ctx("live"))
    assert run.runs["decision"][0] == "error"
    assert "system 'live', question 'q01'" in run.runs["error"][0] and "'data.results'" in run.runs["error"][0]


def test_without_a_decision_path_the_documented_rule_decides(sample):
    golden = sample.golden.head(10)
    with RagFaultServer(reference_callable.answer) as srv:
        s = spec(srv.custom_url, request_template={"id": "{question_id}", "input": {"q": "{question}"}},
                 response_fields={"retrieved": "data.hits", "chunk_id": "id", "answer": "output.text"})
        run = HttpRunner(s).run(golden, sample.ctx("live"))
    ref = {r["question_id"]: r for r in sample.reference_runs.iter_rows(named=True)}
    for r in run.runs.iter_rows(named=True):
        # the extractive answerer's abstentions carry no answer text: the rule calls them empty_output errors
        expected = ("answer", "default_answer") if ref[r["question_id"]]["answer"] else ("error", "empty_output")
        assert (r["decision"], r["decision_rule"]) == expected
        assert all(h["score"] is None for h in r["retrieved"])  # no score path mapped: scores absent


def test_concurrency_and_rate_limit_are_respected(sample):
    golden = sample.golden.head(12)
    with RagFaultServer(reference_callable.answer, latency_s=0.4) as srv:
        HttpRunner(spec(srv.url, concurrency=4)).run(golden, sample.ctx("live"))
        assert 2 <= srv.max_in_flight <= 4, srv.max_in_flight  # parallel, never past the limit
    with RagFaultServer(reference_callable.answer) as srv:
        HttpRunner(spec(srv.url, concurrency=4, rate_per_s=20)).run(golden, sample.ctx("live"))
        times = sorted(r["time"] for r in srv.requests)
    # 12 sends at 20/s span (12 - 1) / 20 = 0.55 s at the client; arrival times at the server jitter on a busy
    # machine (the first connection's setup delays the first arrival), so 0.1 s of slack. Unlimited, the 12
    # requests to an instant server arrive within a few tens of milliseconds.
    assert times[-1] - times[0] >= (12 - 1) / 20 - 0.1


def test_missing_secret_variable_is_a_config_error():
    s = spec("http://127.0.0.1:1/answer", headers_from_env={"Authorization": "RAG_EVAL_TEST_UNSET_TOKEN"})
    with pytest.raises(ConfigError, match="RAG_EVAL_TEST_UNSET_TOKEN"):
        HttpRunner(s, environ={})


def test_echoed_secrets_are_redacted(sample):
    golden = sample.golden.head(2)
    a, b = golden["question_id"].to_list()
    token = "sk-canary-0123456789abcdef"
    with RagFaultServer(reference_callable.answer, {a: "echo_auth", b: "echo_auth_200"}) as srv:
        s = spec(srv.url, headers_from_env={"Authorization": "T"}, max_retries=0)
        run = HttpRunner(s, environ={"T": f"Bearer {token}"}).run(golden, sample.ctx("live"))
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {token}"
    text = str(run.runs.to_dicts())
    assert token not in text and "[redacted]" in text
    assert "HTTP 401" in run.runs["error"][0]


def test_an_answer_about_tokens_is_stored_as_sent(sample):
    # no secret configured: the credential patterns (Bearer ..., api_key: ..., sk-...) used to run on the raw
    # body, changing this answer's words and eating the backslash of \" (the body then failed to parse)
    golden = sample.golden.head(1)
    (q,) = golden["question_id"].to_list()
    for env in ({}, {"T": "Bearer tok_9f8e7d6c5b4a3b2c"}):
        with RagFaultServer(reference_callable.answer, {q: "about_tokens"}) as srv:
            s = spec(srv.url, max_retries=0, headers_from_env={"Authorization": "T"} if env else {})
            run = HttpRunner(s, environ=env).run(golden, sample.ctx("live"))
        row = run.runs.row(0, named=True)
        assert (row["decision"], row["error"]) == ("answer", None), row["error"]
        assert row["answer"] == ABOUT_TOKENS


def test_encoded_cut_and_split_echoes_of_a_secret_are_redacted(sample):
    golden = sample.golden.head(3)
    a, b, c = golden["question_id"].to_list()
    token = "tok_9f8e7d6c5b4a3b2c"
    basic = "Basic " + base64.b64encode(b"user:s3cr3tpass").decode()  # dXNlcjpzM2NyM3RwYXNz
    with RagFaultServer(reference_callable.answer, {a: "echo_auth_encoded", b: "echo_auth_split"}) as srv:
        s = spec(srv.url, headers_from_env={"Authorization": "T"}, max_retries=0)
        run = HttpRunner(s, environ={"T": f"Bearer {token}"}).run(golden.head(2), sample.ctx("live"))
    rows = run.runs.to_dicts()
    # base64 of "Bearer tok...", its hex, the token as %25xx, upper-cased, and its first 14 characters; the
    # last two are runs of the secret "Bearer tok_..." that take the space before them along (" TOK_...")
    assert rows[0]["error"] == (f"system 'live', question {a!r}: HTTP 401: "
                                "'{\"error\": \"got [redacted] / [redacted] / [redacted] /[redacted] /"
                                "[redacted]...\"}' (after 1 attempt(s))")
    # "abstract tok_9f8e" + model "7d6c5b4a3b2c": the token only appears when the two fields are read together
    # (the space goes too: " tok_9f8e7d6c5b4a3b2c" is a run of the header value "Bearer tok_...")
    assert (rows[1]["answer"], rows[1]["model"]) == ("abstract[redacted]", "[redacted]")
    with RagFaultServer(reference_callable.answer, {c: "echo_basic_decoded"}) as srv:
        s = spec(srv.url, headers_from_env={"Authorization": "T"}, max_retries=0)
        run = HttpRunner(s, environ={"T": basic}).run(golden.tail(1), sample.ctx("live"))
        assert srv.requests[0]["headers"]["authorization"] == basic
    # the 401 body says "bad credentials for user:s3cr3tpass": the header's base64 decoded
    assert run.runs["error"][0] == (f"system 'live', question {c!r}: HTTP 401: 'bad credentials for [redacted]' "
                                    "(after 1 attempt(s))")


def test_helpers():
    assert parse_retry_after("7") == 7.0 and parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert [backoff_delay(n, 0.5, 3.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]
    assert get_path({"a": [{"b": 1}]}, "a.0.b") == 1
    assert fill_template({"q": "{question}", "g": "{user_groups}", "t": "x {question_id}"}, "q1", "hi", ["a", "b"]) == \
        {"q": "hi", "g": ["a", "b"], "t": "x q1"}
    clock = iter([0.0, 0.0, 0.0]).__next__
    slept = []
    limiter = RateLimiter(4.0, clock=clock, sleep=slept.append)
    limiter.wait(), limiter.wait(), limiter.wait()
    assert slept == [0.25, 0.5]
