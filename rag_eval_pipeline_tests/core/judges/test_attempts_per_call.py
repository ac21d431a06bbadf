"""A model judge call sends exactly ``1 + max_retries`` requests, no more: the project's retries are the only
ones (the ``openai`` client is built with ``max_retries=0``; its default of 2 would stack on top and make
(1 + 1) × 3 = 6 requests of a call configured for 2). A real local server on 127.0.0.1 counts the requests.
"""

import time

from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline_tests.servers.fault_server import FaultServer

CTX = ["The museum opens Tuesday to Sunday from 10 to 18. General admission costs 8 euros."]
ANSWER = "The museum opens Tuesday to Sunday from 10 to 18."  # one sentence: one claim


def test_slow_replies_get_one_plus_max_retries_requests_per_call():
    # replies take 1.5 s, the judge waits 0.5 s: every request times out. max_retries 1 -> 2 requests for the
    # decomposition call, which then fails, so no verification call: 2 requests for the answer, not 4 or 6
    with FaultServer("ok", latency_s=1.5) as srv:
        judge = OpenAICompatibleJudge(srv.base_url, "judge-model", "local-no-key", timeout_s=0.5, max_retries=1,
                                      backoff_s=0.0)
        assert judge.transport._client.max_retries == 0  # noqa: SLF001 - the client's own retries are off
        out = judge.judge("When does the museum open?", ANSWER, CTX)
        time.sleep(0.2)  # a request still being received is recorded
        assert out.status == "judge_error" and "(after 2 attempt(s))" in out.claims[0].error
        assert len(srv.chat_requests()) == 2
        assert judge.transport.stats["calls"] == 2 and judge.transport.stats["retries"] == 1


def test_slow_but_timely_replies_get_one_request_per_call():
    # replies take 0.3 s, the judge waits 5 s: decomposition 1 request + verification 1 request = 2
    with FaultServer("ok", latency_s=0.3) as srv:
        judge = OpenAICompatibleJudge(srv.base_url, "judge-model", "local-no-key", timeout_s=5.0, max_retries=1,
                                      backoff_s=0.0)
        out = judge.judge("When does the museum open?", ANSWER, CTX)
        assert out.status == "judged" and len(out.claims) == 1
        assert len(srv.chat_requests()) == 2


def test_an_identical_failed_call_is_not_sent_again(tmp_path):
    """Two systems give the same answer to the same question (different retrieved texts): the claim
    decomposition call is identical (question + answer). With every reply too slow, the first caller spends
    its 1 + 1 attempts; the second, waiting on the same call, gets the same failure. Before the fix it sent its
    own 2: 4 requests for one call configured for 2 (the new-user trial's ~4 requests per call)."""
    import threading

    from rag_eval_pipeline.core.judges.cache import JudgeCache

    with FaultServer("ok", latency_s=1.5) as srv:
        judge = OpenAICompatibleJudge(srv.base_url, "judge-model", "local-no-key", timeout_s=0.5, max_retries=1,
                                      backoff_s=0.0, cache=JudgeCache(tmp_path / "cache.sqlite"))
        results = []
        threads = [threading.Thread(target=lambda c=c: results.append(judge.judge("When?", ANSWER, c)))
                   for c in (CTX, [CTX[0].split(". ")[0] + "."])]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        time.sleep(0.2)
        assert [r.status for r in results] == ["judge_error", "judge_error"]
        assert all("(after 2 attempt(s))" in r.claims[0].error for r in results)
        assert len(srv.chat_requests()) == 2  # 1 + max_retries for the one distinct call
        assert judge._calls.counts()["failed_waits"] == 1  # noqa: SLF001 - the judge's call counters
