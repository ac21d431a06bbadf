"""OpenAICompatibleJudge against a real local HTTP server with injected faults (servers/fault_server.py)."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from importlib import resources

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.many import judge_many
from rag_eval_pipeline.core.judges.openai_compatible import (
    ALL_TASKS,
    JUDGE_TASKS,
    JudgeCallError,
    OpenAICompatibleJudge,
    TokenBucket,
    backoff_delay,
    load_prompt,
    scrub_secret,
)
from rag_eval_pipeline.core.judges.transport import transport_settings
from rag_eval_pipeline.core.tables import SCHEMAS
from rag_eval_pipeline_tests.servers.fault_server import DEFAULT_MODEL, FaultServer
from rag_eval_pipeline_tests.servers.local import closed_port

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-SECRET-9f8e7d6c5b4a"
CTX = [
    "La biblioteca municipal abre de lunes a viernes de 9 a 20 horas. Los sábados abre de 10 a 14 horas.",
    "Cada socio puede llevarse hasta 6 libros durante 21 días. El carné de socio es gratuito.",
]
ANSWER = "La biblioteca abre de lunes a viernes de 9 a 20 horas. Cada socio puede llevarse hasta 6 libros."
QUESTION = "¿Cuándo abre la biblioteca?"


@pytest.fixture
def server():
    with FaultServer() as srv:
        yield srv


def make_judge(srv, **kw) -> OpenAICompatibleJudge:
    args = dict(timeout_s=2.0, max_retries=2, backoff_s=0.01)
    args.update(kw)
    return OpenAICompatibleJudge(srv.base_url, "judge-model", KEY, **args)


# -- happy path ----------------------------------------------------------------------------------


def test_ok_two_calls_claims_verdicts_quotes_and_model_version(server):
    j = make_judge(server)
    assert isinstance(j, Judge)
    res = j.judge(QUESTION, ANSWER, CTX)
    assert res.status == "judged"
    assert [c.claim_id for c in res.claims] == ["c1", "c2"]
    assert [c.verdict for c in res.claims] == ["SUPPORTED", "SUPPORTED"]
    assert all(c.quote_found for c in res.claims)
    assert res.holistic == "YES"
    reqs = server.chat_requests()
    assert len(reqs) == 2
    assert [r["body"]["response_format"]["json_schema"]["name"] for r in reqs] == list(JUDGE_TASKS)
    assert all(r["body"]["temperature"] == 0 for r in reqs)
    verdicts_schema = reqs[1]["body"]["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]
    assert verdicts_schema["minItems"] == verdicts_schema["maxItems"] == 2  # one entry per claim
    assert all(r["body"]["model"] == "judge-model" for r in reqs)
    # the exact version comes from the reply's model field
    assert j.model == DEFAULT_MODEL and j.models_seen == [DEFAULT_MODEL]
    st = j.stats
    assert st["calls"] == 2 and st["prompt_tokens"] > 0 and st["completion_tokens"] > 0
    assert st["seconds"] > 0 and st["errors"] == {} and st["failures"] == {}


def test_not_mentioned_claim_has_no_quote(server):
    j = make_judge(server)
    res = j.judge(QUESTION, "La biblioteca abre de lunes a viernes de 9 a 20 horas. El Sol es una estrella enana.", CTX)
    assert [c.verdict for c in res.claims] == ["SUPPORTED", "NOT_MENTIONED"]
    assert res.claims[1].quote is None and res.claims[1].quote_found is False
    assert res.holistic == "PARTIAL"


def test_prompt_sha256_is_sha_of_the_concatenated_files():
    base = resources.files("rag_eval_pipeline.core.judges") / "prompts"
    raw = b"".join((base / f"{t}.v1.txt").read_bytes() + (base / f"{t}.v1.schema.json").read_bytes()
                   for t in JUDGE_TASKS)
    j = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", KEY)
    assert j.prompt_sha256 == hashlib.sha256(raw).hexdigest()
    for t in ALL_TASKS:
        p = load_prompt(t)
        assert p.sha256 == hashlib.sha256((base / f"{t}.v1.txt").read_bytes()
                                          + (base / f"{t}.v1.schema.json").read_bytes()).hexdigest()
        assert p.schema["type"] == "object" and p.placeholders
        json.dumps(p.schema)


def test_verification_prompt_rules():
    text = load_prompt("claim_verification").text
    for needle in ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "Outside knowledge is forbidden",
                   "Partial support is not support", "character for character", "justification first"):
        assert needle in text
    schema = load_prompt("claim_verification").schema
    props = list(schema["properties"]["verdicts"]["items"]["properties"])
    assert props.index("quote") < props.index("justification") < props.index("verdict")


def test_render_is_single_pass_and_keeps_json_braces():
    p = load_prompt("claim_decomposition")
    out = p.render(question="{answer}", answer="A {question} B")
    assert "<question>\n{answer}\n</question>" in out and "A {question} B" in out
    assert '{"claims": [' in out
    with pytest.raises(KeyError):
        p.render(question="q")


def test_empty_contexts_zero_calls_and_blank_answer(server):
    j = make_judge(server)
    assert j.judge(QUESTION, ANSWER, []).status == "no_retrieval"
    assert j.judge(QUESTION, ANSWER, ["", "  "]).status == "no_retrieval"
    assert j.judge(QUESTION, "   ", CTX).status == "no_claims"
    assert server.chat_requests() == [] and j.stats["calls"] == 0


def test_decomposition_with_no_claims_gives_no_claims(server):
    j = make_judge(server)
    assert j.judge(QUESTION, "...", CTX).status == "no_claims"
    assert len(server.chat_requests()) == 1


# -- faults --------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode,reason", [
    ("429", "rate_limited"),
    ("500", "server_error"),
    ("truncated", "truncated"),
    ("invalid_json", "invalid_json"),
    ("refusal", "refusal"),
    ("refusal_text", "refusal"),
    ("empty", "empty_response"),
])
def test_fault_retried_then_judge_error_with_reason(server, mode, reason):
    server.set_mode(mode)
    j = make_judge(server, max_retries=2)
    res = j.judge(QUESTION, ANSWER, CTX)  # never raises
    assert res.status == "judge_error"
    assert len(res.claims) == 1 and res.claims[0].verdict == "JUDGE_ERROR"
    assert res.claims[0].error.startswith(reason + ":") and "after 3 attempt(s)" in res.claims[0].error
    assert len(server.chat_requests()) == 3  # 1 + max_retries, then it stops
    st = j.stats
    assert st["errors"] == {reason: 3} and st["failures"] == {reason: 1} and st["retries"] == 2


def test_out_of_range_verdict_retried_then_judge_error_per_claim(server):
    server.set_mode("out_of_range")
    j = make_judge(server, max_retries=1)
    res = j.judge(QUESTION, ANSWER, CTX)
    assert res.status == "judge_error"
    assert [c.verdict for c in res.claims] == ["JUDGE_ERROR", "JUDGE_ERROR"]
    assert all(c.error.startswith("out_of_range:") for c in res.claims)
    assert [c.claim for c in res.claims] == ["La biblioteca abre de lunes a viernes de 9 a 20 horas.",
                                             "Cada socio puede llevarse hasta 6 libros."]
    assert len(server.chat_requests()) == 1 + 2  # decomposition ok, verification twice


def test_claims_not_taken_from_the_answer_are_rejected(server, monkeypatch):
    from rag_eval_pipeline_tests.servers import fault_server

    real = fault_server.ok_reply

    def copy_example(task, prompt, mode="ok"):
        if task == "claim_decomposition":  # what a tiny model does: echo the prompt's example
            return {"claims": ["first atomic claim", "second atomic claim"]}
        return real(task, prompt, mode)

    monkeypatch.setattr(fault_server, "ok_reply", copy_example)
    res = make_judge(server, max_retries=1).judge(QUESTION, ANSWER, CTX)
    assert res.status == "judge_error"
    assert res.claims[0].error.startswith("out_of_range: claims[1] 'first atomic claim' shares no word")


def test_out_of_range_scores_and_labels(server):
    server.set_mode("out_of_range")
    j = make_judge(server, max_retries=0)
    with pytest.raises(JudgeCallError, match="out_of_range"):
        j.answer_relevance(QUESTION, ANSWER)
    with pytest.raises(JudgeCallError, match="out_of_range"):
        j.holistic(QUESTION, ANSWER, CTX)
    with pytest.raises(JudgeCallError, match="out_of_range"):
        j.context_relevance(QUESTION, CTX)
    with pytest.raises(JudgeCallError, match="out_of_range"):
        j.correctness(ANSWER, "La biblioteca abre los sábados.")


def test_429_then_ok_recovers(server):
    server.script(["429", "429"])
    j = make_judge(server, max_retries=3)
    res = j.judge(QUESTION, ANSWER, CTX)
    assert res.status == "judged"
    assert [r["mode"] for r in server.chat_requests()] == ["429", "429", "ok", "ok"]
    assert j.stats["errors"] == {"rate_limited": 2} and j.stats["failures"] == {}


def test_one_500_then_ok_recovers(server):
    server.script(["500"])
    assert make_judge(server).judge(QUESTION, ANSWER, CTX).status == "judged"


def test_hung_endpoint_is_cut_by_the_timeout(server):
    server.set_mode("hang")
    server.hang_s = 20
    j = make_judge(server, timeout_s=0.3, max_retries=1)
    t0 = time.perf_counter()
    res = j.judge(QUESTION, ANSWER, CTX)
    elapsed = time.perf_counter() - t0
    assert res.status == "judge_error" and res.claims[0].error.startswith("timeout:")
    assert elapsed < 5, elapsed  # 2 attempts x 0.3 s + backoff, not 20 s
    assert len(server.chat_requests()) == 2


def test_trickling_endpoint_is_cut_at_the_deadline():
    """One byte every 0.25 s keeps every socket read well inside a 1 s per-read timeout; only a deadline
    on the whole request ends it: within the timeout plus slack, as a JUDGE_ERROR with reason timeout."""
    judging = pytest.importorskip("rag_eval_pipeline.core.judging")
    with FaultServer("trickle", trickle_s=0.25, trickle_bytes=60) as srv:
        j = make_judge(srv, timeout_s=1.0, max_retries=0)
        t0 = time.perf_counter()
        res = j.judge(QUESTION, ANSWER, CTX)
        elapsed = time.perf_counter() - t0
        assert res.status == "judge_error" and res.claims[0].verdict == "JUDGE_ERROR"
        assert res.claims[0].error.startswith("timeout:"), res.claims[0].error
        assert 0.9 < elapsed < 1.0 + 0.5, elapsed  # not 60 x 0.25 s = 15 s per request
        assert j.stats["errors"] == {"timeout": 1} and j.stats["failures"] == {"timeout": 1}
        assert len(srv.chat_requests()) == 1
        # through the labelling step: the reason reaches the judge_labels row
        runs, snap = _runs_frame(ANSWER)
        t0 = time.perf_counter()
        labels, answers = judging.judge_runs(runs, snap, make_judge(srv, timeout_s=1.0, max_retries=1, backoff_s=0))
        elapsed = time.perf_counter() - t0
    assert answers["status"].to_list() == ["judge_error"]
    assert labels["verdict"].to_list() == ["JUDGE_ERROR"] and labels["error"][0].startswith("timeout:")
    assert "after 2 attempt(s)" in labels["error"][0]
    assert elapsed < 2 * 1.0 + 0.8, elapsed  # two requests of at most 1 s each


def test_the_trickle_server_does_answer_in_full_without_a_deadline():
    """The fault is real: with a deadline longer than the trickle, the same reply arrives and is judged."""
    # one retry: under load a kept-alive connection the server has just closed fails the next request with a
    # connection error (seen at load ~8), which says nothing about the trickle; a trickled reply is never retried
    # into success here, since the deadline (30 s) is far above the trickle's length
    with FaultServer("trickle", trickle_s=0.01, trickle_bytes=60) as srv:
        res = make_judge(srv, timeout_s=30.0, max_retries=1).judge(QUESTION, ANSWER, CTX)
    assert res.status == "judged"


def test_transport_settings_environment_overrides_configuration():
    env = {"RAG_EVAL_JUDGE_TIMEOUT_S": "7.5", "RAG_EVAL_JUDGE_MAX_RETRIES": "", "RAG_EVAL_JUDGE_BACKOFF_S": "0"}
    st = transport_settings(12, 5, 2.0, environ=env)
    assert (st.timeout_s, st.max_retries, st.backoff_s) == (7.5, 5, 0.0)
    assert st.sources == {"timeout_s": "environment", "max_retries": "configuration", "backoff_s": "environment"}
    st = transport_settings(environ={})
    assert (st.timeout_s, st.max_retries, st.backoff_s) == (30.0, 3, 0.5)
    assert set(st.sources.values()) == {"default"}
    for var, value in (("RAG_EVAL_JUDGE_TIMEOUT_S", "abc"), ("RAG_EVAL_JUDGE_TIMEOUT_S", "nan"),
                       ("RAG_EVAL_JUDGE_TIMEOUT_S", "0"), ("RAG_EVAL_JUDGE_TIMEOUT_S", "inf"),
                       ("RAG_EVAL_JUDGE_MAX_RETRIES", "1.5"), ("RAG_EVAL_JUDGE_MAX_RETRIES", "-1"),
                       ("RAG_EVAL_JUDGE_BACKOFF_S", "-0.1"), ("RAG_EVAL_JUDGE_BACKOFF_S", "1e9")):
        with pytest.raises(ConfigError, match=var):
            transport_settings(environ={var: value})
    for kw in ({"timeout_s": float("nan")}, {"timeout_s": -1}, {"max_retries": True}, {"backoff_s": float("inf")}):
        with pytest.raises(ValueError, match=next(iter(kw))):
            transport_settings(**kw, environ={})


def test_settings_in_use_are_in_the_stats(server, monkeypatch):
    monkeypatch.setenv("RAG_EVAL_JUDGE_BACKOFF_S", "0.02")
    j = OpenAICompatibleJudge(server.base_url, "judge-model", KEY, timeout_s=4, max_retries=1)
    st = j.stats
    assert (st["timeout_s"], st["max_retries"], st["backoff_s"]) == (4.0, 1, 0.02)
    assert st["settings_source"] == "timeout_s=configuration, max_retries=configuration, backoff_s=environment"
    server.set_mode("500")
    j.transport.sleep = waits = []  # type: ignore[assignment]
    j.transport.sleep = waits.append
    j.judge(QUESTION, ANSWER, CTX)
    # 1 + max_retries requests, backoff from the environment
    assert waits == [0.02] and len(server.chat_requests()) == 2


def test_connection_refused_is_connection_error():
    j = OpenAICompatibleJudge(f"http://127.0.0.1:{closed_port()}/v1", "m", KEY, timeout_s=1, max_retries=1,
                              backoff_s=0.01)
    res = j.judge(QUESTION, ANSWER, CTX)
    assert res.status == "judge_error" and res.claims[0].error.startswith("connection_error:")
    assert j.stats["errors"] == {"connection_error": 2}


def test_auth_error_not_retried_and_key_scrubbed(server, caplog):
    server.set_mode("auth_echo")
    j = make_judge(server, max_retries=3)
    with caplog.at_level(logging.DEBUG):
        res = j.judge(QUESTION, ANSWER, CTX)
    assert res.claims[0].error.startswith("auth_error:")
    assert len(server.chat_requests()) == 1
    assert KEY not in res.claims[0].error and "***" in res.claims[0].error
    assert KEY not in caplog.text


def test_json_schema_rejected_falls_back_and_remembers(server):
    server.set_mode("reject_json_schema")
    j = make_judge(server)
    assert j.judge(QUESTION, ANSWER, CTX).status == "judged"
    kinds = [(r["body"]["response_format"]["type"], "schema" in r["body"]["response_format"])
             for r in server.chat_requests()]
    # first call: json_schema rejected, then json_object + schema; the second call goes straight there
    assert kinds == [("json_schema", False), ("json_object", True), ("json_object", True)]
    assert j.stats["response_format"] == "json_object_schema" and j.stats["errors"] == {}


def test_all_schemas_rejected_falls_back_to_plain_json_object(server):
    server.set_mode("reject_schema")
    j = make_judge(server)
    assert j.judge(QUESTION, ANSWER, CTX).status == "judged"
    assert j.stats["response_format"] == "json_object"
    assert server.chat_requests()[-1]["body"]["response_format"] == {"type": "json_object"}


def test_use_json_schema_false_starts_at_json_object(server):
    j = make_judge(server, use_json_schema=False)
    j.judge(QUESTION, ANSWER, CTX)
    assert all(r["body"]["response_format"] == {"type": "json_object"} for r in server.chat_requests())


# -- secrets -------------------------------------------------------------------------------------


def test_key_sent_in_header_but_never_elsewhere(server, caplog, tmp_path):
    cache = JudgeCache(tmp_path / "c.sqlite")
    j = make_judge(server, cache=cache)
    with caplog.at_level(logging.DEBUG):
        ok = j.judge(QUESTION, ANSWER, CTX)
        server.set_mode("500")
        bad = j.judge(QUESTION, "Otra respuesta distinta.", CTX)
    reqs = server.chat_requests()
    assert all(r["headers"].get("authorization") == f"Bearer {KEY}" for r in reqs)
    assert all(KEY not in json.dumps(r["body"]) for r in reqs)
    assert KEY not in repr(ok) + repr(bad) + repr(j) + json.dumps(j.stats)
    assert KEY not in caplog.text
    cache.close()
    assert KEY.encode() not in (tmp_path / "c.sqlite").read_bytes()


def test_a_key_echoed_inside_a_successful_reply_is_scrubbed_everywhere(tmp_path):
    """A server that copies the Authorization header into every justification and its model name:
    the key reaches no verdict, no model version, no cache entry; a cache entry written before the
    scrubbing (holding the key) is scrubbed when read."""
    cache = JudgeCache(tmp_path / "c.sqlite")
    with FaultServer("echo_auth") as srv:
        j = make_judge(srv, cache=cache)
        res = j.judge(QUESTION, ANSWER, CTX)
        quality = (j.holistic(QUESTION, ANSWER, CTX), j.correctness(ANSWER, "La biblioteca abre de lunes a viernes."))
        echoed = [r for r in srv.chat_requests() if r["mode"] == "echo_auth"]
    assert len(echoed) == 4  # the fault happened on every call
    assert res.status == "judged"
    notes = [c.justification for c in res.claims]
    assert all("Authorization: Bearer ***" in n for n in notes), notes  # the echo arrived, scrubbed
    assert KEY not in repr(res) + repr(quality) + j.model + json.dumps(j.stats) + repr(j.models_seen)
    cache.close()
    assert KEY.encode() not in (tmp_path / "c.sqlite").read_bytes()

    # an entry stored by an older version, with the key inside: scrubbed on the way out
    old = JudgeCache(tmp_path / "old.sqlite")
    j2 = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "judge-model", KEY, timeout_s=1, max_retries=0, cache=old)
    prompt = load_prompt("holistic_faithfulness")
    inputs = j2._inputs({"question": QUESTION, "answer": ANSWER, "contexts": CTX})
    old.store("judge-model", prompt.sha256, inputs,
              {"output": {"label": "YES", "justification": f"Bearer {KEY}"}, "model": f"m {KEY}"}, 0)
    assert j2.holistic(QUESTION, ANSWER, CTX) == "YES" and j2.stats["calls"] == 0  # served by the cache
    assert KEY not in j2.model


def test_scrub_secret():
    assert scrub_secret(f"x {KEY} y", KEY) == "x *** y"
    assert scrub_secret("Authorization: Bearer abc.def-123", None) == "Authorization: Bearer ***"
    assert scrub_secret("Incorrect API key provided: sk-ab****cdef.", None) == "Incorrect API key provided: ***"
    assert scrub_secret("api_key=hunter2hunter2 rest", None) == "api_key=*** rest"
    assert scrub_secret(None) == ""
    assert scrub_secret("abc", "ab") == "abc"  # 2-character "secrets" are not scrubbed


# -- other metrics -------------------------------------------------------------------------------


def test_other_metrics(server):
    j = make_judge(server)
    assert j.holistic(QUESTION, ANSWER, CTX) == "YES"
    assert j.answer_relevance(QUESTION, ANSWER) == 4
    qs = j.reverse_questions("Madrid es la capital de España.", n=2)
    assert len(qs) == 2 and all(q.startswith("Pregunta") for q in qs)
    assert j.context_relevance("¿Cuántos libros puede llevarse cada socio?", CTX) == pytest.approx(0.5)
    out = j.correctness("La biblioteca abre de lunes a viernes.",
                        "La biblioteca abre de lunes a viernes. Los sábados abre de 10 a 14 horas.")
    assert out["n_facts"] == 2 and out["coverage"] == 0.5
    assert out["omissions"] == ["Los sábados abre de 10 a 14 horas."] and out["contradictions"] == []
    with pytest.raises(ValueError):
        j.context_relevance(QUESTION, [])
    with pytest.raises(ValueError):
        j.correctness(ANSWER, " ")
    with pytest.raises(ValueError):
        j.reverse_questions(ANSWER, n=0)


def test_dry_run_estimate_makes_no_call(server):
    j = make_judge(server)
    items = [(QUESTION, ANSWER, CTX), (QUESTION, ANSWER, []), (QUESTION, "", CTX),
             (QUESTION, " ".join(f"Frase número {i}." for i in range(45)), CTX)]
    est = j.dry_run_estimate(items)
    # item 1: 1 + 1; items 2-3: 0; item 4: 45 claims -> 1 + ceil(45/20) = 4
    assert est["calls"] == 6 and est["items"] == 4 and est["cached_calls"] == 0
    dec = load_prompt("claim_decomposition").render(question=QUESTION, answer=ANSWER)
    assert est["prompt_tokens_est"] > len(dec) // 4
    assert server.chat_requests() == []


def test_constructor_rejects_bad_values():
    for kw in ({"timeout_s": 0}, {"max_retries": -1}, {"concurrency": 0}, {"rate_limit_per_s": 0},
               {"claims_per_call": 0}):
        with pytest.raises(ValueError):
            OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", KEY, **kw)


def test_verify_claims_alone(server):
    j = make_judge(server)
    out = j.verify_claims(["Los sábados abre de 10 a 14 horas.", "Abre los domingos por la noche."], CTX)
    assert [(c.claim_id, c.verdict, c.quote_found) for c in out] == [
        ("c1", "SUPPORTED", True), ("c2", "NOT_MENTIONED", False)]
    assert len(server.chat_requests()) == 1
    with pytest.raises(ValueError):
        j.verify_claims([], CTX)
    with pytest.raises(ValueError):
        j.verify_claims(["x"], [])
    server.set_mode("500")
    bad = make_judge(server, max_retries=0).verify_claims(["x y z"], CTX)
    assert bad[0].verdict == "JUDGE_ERROR" and bad[0].error.startswith("server_error:")


def test_claims_split_over_several_verification_calls(server):
    j = make_judge(server, claims_per_call=1)
    res = j.judge(QUESTION, ANSWER, CTX)
    assert [c.claim_id for c in res.claims] == ["c1", "c2"]
    assert len(server.chat_requests()) == 3


# -- backoff, rate limit, concurrency --------------------------------------------------------------


def test_backoff_is_exponential_capped_and_honours_retry_after():
    assert [backoff_delay(a, 0.5) for a in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 4.0]
    assert backoff_delay(20, 0.5) == 30.0
    assert backoff_delay(1, 0.5, retry_after=3) == 3.0
    assert backoff_delay(1, 0.5, cap_s=2, retry_after=100) == 2.0
    with pytest.raises(ValueError):
        backoff_delay(0, 0.5)


def test_retries_wait_with_backoff(server):
    server.set_mode("500")
    j = make_judge(server, max_retries=2, backoff_s=0.01)
    waits: list[float] = []
    j.transport.sleep = waits.append
    j.judge(QUESTION, ANSWER, CTX)
    assert waits == [0.01, 0.02]


def test_token_bucket_rate():
    now = [0.0]
    slept: list[float] = []

    def sleep(d):
        slept.append(d)
        now[0] += d

    b = TokenBucket(10, burst=2, clock=lambda: now[0], sleep=sleep)
    for _ in range(6):
        b.acquire()
    # 2 tokens of burst, then one every 0.1 s
    assert now[0] == pytest.approx(0.4)
    with pytest.raises(ValueError):
        TokenBucket(0)


def test_rate_limit_spaces_requests(server):
    j = make_judge(server, rate_limit_per_s=20)
    t0 = time.perf_counter()
    for i in range(3):
        j.judge(QUESTION, f"Frase {i} sobre la biblioteca.", CTX)
    assert time.perf_counter() - t0 >= 5 * 0.05 - 0.01  # 6 requests at 20/s, first one free


def test_judge_many_one_bad_item_never_aborts_others(server):
    server.poison, server.poison_mode = "VENENO", "500"
    j = make_judge(server, max_retries=1)
    items = [(QUESTION, f"La biblioteca abre de lunes a viernes de 9 a 20 horas. Respuesta {i}.", CTX)
             for i in range(6)]
    items[2] = (QUESTION, "VENENO en esta respuesta.", CTX)
    seen: list[dict] = []
    res = judge_many(j, items, concurrency=3, progress=seen.append)
    assert [r.status for r in res] == ["judged", "judged", "judge_error", "judged", "judged", "judged"]
    assert res[2].claims[0].error.startswith("server_error:")
    assert [p["done"] for p in seen] == [1, 2, 3, 4, 5, 6] and seen[-1]["total"] == 6
    assert seen[-1]["errors"] == 1 and seen[-1]["calls"] == j.stats["calls"] and seen[-1]["calls_per_s"] > 0


def test_judge_many_runs_concurrently(server):
    server.latency_s = 0.2
    j = make_judge(server, concurrency=8)
    items = [(QUESTION, f"Respuesta número {i} de la biblioteca.", CTX) for i in range(8)]
    t0 = time.perf_counter()
    res = judge_many(j, items)  # concurrency defaults to the judge's
    elapsed = time.perf_counter() - t0
    assert all(r.status == "judged" for r in res)
    assert elapsed < 8 * 2 * 0.2 / 2, elapsed  # sequential would take 3.2 s


def test_in_flight_requests_bounded_by_judge_concurrency(server):
    server.latency_s = 0.15
    j = make_judge(server, concurrency=2)
    peak, cur, lock = [0], [0], threading.Lock()
    orig = server.handle_chat

    def counting(h, body):
        with lock:
            cur[0] += 1
            peak[0] = max(peak[0], cur[0])
        try:
            orig(h, body)
        finally:
            with lock:
                cur[0] -= 1

    server.handle_chat = counting
    judge_many(j, [(QUESTION, f"Respuesta {i}.", CTX) for i in range(6)], concurrency=6)
    assert peak[0] == 2


# -- with core/judging.py -----------------------------------------------------------------------------


def _runs_frame(answer: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    snap = pl.DataFrame({"chunk_id": ["d#0", "d#1"], "text": CTX})
    run = {"system": "s", "question_id": "q1",
           "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1}, {"chunk_id": "d#1", "score": 0.5, "rank": 2}],
           "decision": "answer", "answer": answer, "citations": [], "error": None, "corpus_version": "cv",
           "golden_version": "gv", "retriever": "{}", "generator": "g", "model": "m", "prompt_version": "p"}
    return pl.DataFrame([run], schema=SCHEMAS["rag_runs"]), snap


def test_quote_not_in_context_downgraded_by_judge_runs(server):
    judging = pytest.importorskip("rag_eval_pipeline.core.judging")
    server.set_mode("bad_quote")
    runs, snap = _runs_frame(ANSWER)
    j = make_judge(server)
    labels, answers = judging.judge_runs(runs, snap, j)
    assert labels["verdict"].to_list() == ["NOT_MENTIONED", "NOT_MENTIONED"]
    assert labels["quote_found"].to_list() == [False, False]
    assert judging.count_downgraded(labels) == 2
    assert answers["status"].to_list() == ["judged"]
    assert labels["prompt_sha256"].unique().to_list() == [j.prompt_sha256]


def test_judge_runs_with_judge_error_keeps_reason(server):
    judging = pytest.importorskip("rag_eval_pipeline.core.judging")
    server.set_mode("500")
    runs, snap = _runs_frame(ANSWER)
    labels, answers = judging.judge_runs(runs, snap, make_judge(server, max_retries=1))
    assert answers["status"].to_list() == ["judge_error"]
    assert labels["verdict"].to_list() == ["JUDGE_ERROR"]
    assert labels["error"][0].startswith("server_error:")


# -- Dagster resources ----------------------------------------------------------------------------------


def test_dagster_resources(monkeypatch, server, tmp_path):
    from rag_eval_pipeline.defs import judging as dj

    monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
    monkeypatch.setenv("RAG_EVAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("RAG_EVAL_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_EVAL_JUDGE_API_KEY", KEY)
    monkeypatch.setenv("RAG_EVAL_JUDGE_CACHE", str(tmp_path / "cache.sqlite"))
    res = dj.select_judge_resource()
    assert isinstance(res, dj.JudgeResource) and res.type == "openai_compatible"
    import dagster as dg

    with dg.build_resources({"judge": res}) as built:
        j = built.judge.get_judge()
    assert isinstance(j, OpenAICompatibleJudge) and j.cache is not None
    assert j.judge(QUESTION, ANSWER, CTX).status == "judged"
    assert server.chat_requests()[0]["headers"]["authorization"] == f"Bearer {KEY}"

    monkeypatch.delenv("RAG_EVAL_JUDGE_BASE_URL")
    with pytest.raises(ValueError, match="RAG_EVAL_JUDGE_BASE_URL"):
        dj.select_judge_resource()

    labels = tmp_path / "h.jsonl"
    labels.write_text(json.dumps({"system": "s", "question_id": "q", "claim_id": "c1", "claim": "x",
                                  "verdict": "NOT_MENTIONED", "answer": "x"}) + "\n")
    monkeypatch.setenv("RAG_EVAL_JUDGE", "human")
    monkeypatch.setenv("RAG_EVAL_HUMAN_LABELS", str(labels))
    hres = dj.select_judge_resource()
    assert isinstance(hres, dj.JudgeResource) and hres.type == "human"
    assert hres.get_judge().judge("q", "x", ["ctx"]).claims[0].verdict == "NOT_MENTIONED"
    monkeypatch.delenv("RAG_EVAL_HUMAN_LABELS")
    with pytest.raises(ValueError, match="RAG_EVAL_HUMAN_LABELS"):
        dj.select_judge_resource()


def test_resource_passes_the_configured_transport_settings_and_the_environment_wins(monkeypatch, server):
    import dagster as dg

    from rag_eval_pipeline.defs import judging as dj

    monkeypatch.setenv("RAG_EVAL_JUDGE", "openai_compatible")
    monkeypatch.setenv("RAG_EVAL_JUDGE_BASE_URL", server.base_url)
    monkeypatch.setenv("RAG_EVAL_JUDGE_MODEL", "judge-model")
    monkeypatch.setenv("RAG_EVAL_JUDGE_API_KEY", KEY)
    for var in ("RAG_EVAL_JUDGE_TIMEOUT_S", "RAG_EVAL_JUDGE_MAX_RETRIES", "RAG_EVAL_JUDGE_BACKOFF_S"):
        monkeypatch.delenv(var, raising=False)
    from rag_eval_pipeline.core.judges.registry import judge_config

    res = dj.select_judge_resource(judge_config("openai_compatible", base_url=server.base_url, model="judge-model",
                                                timeout_s=5.0, max_retries=1, backoff_s=0.1))
    with dg.build_resources({"judge": res}) as built:
        st = built.judge.get_judge().stats
    assert (st["timeout_s"], st["max_retries"], st["backoff_s"]) == (5.0, 1, 0.1)
    monkeypatch.setenv("RAG_EVAL_JUDGE_TIMEOUT_S", "2.5")
    with dg.build_resources({"judge": res}) as built:
        assert built.judge.get_judge().stats["timeout_s"] == 2.5
    monkeypatch.setenv("RAG_EVAL_JUDGE_TIMEOUT_S", "forever")
    with dg.build_resources({"judge": res}) as built, pytest.raises(ConfigError, match="RAG_EVAL_JUDGE_TIMEOUT_S"):
        built.judge.get_judge()
