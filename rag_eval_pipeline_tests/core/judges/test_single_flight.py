"""Single flight of the judge cache: identical judge calls asked at the same moment (two threads, two
processes, each with its own connection to one cache file) reach the model server once; the others
wait and read the stored reply. Against a real local HTTP server (servers/fault_server.py) that counts
the requests it receives.

Expected counts, by hand: one ``judge()`` of an answer is two requests (claim decomposition, then
verification of its claims). Two callers judging the same answer on the same passages therefore send
2 requests with single flight and 4 without (the control with two separate cache files shows the
callers really overlap: each pays its own 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline_tests.servers.fault_server import FaultServer

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]
KEY = "sk-test-single-flight"
CTX = ["El museo abre de martes a domingo de 10 a 18 horas. La entrada general cuesta 8 euros."]
QUESTION = "¿Cuándo abre el museo?"
ANSWER = "El museo abre de martes a domingo de 10 a 18 horas. La entrada cuesta 8 euros."


def _judge(srv: FaultServer, cache_path: Path, **kw) -> OpenAICompatibleJudge:
    args = dict(timeout_s=10.0, max_retries=0, backoff_s=0.0)
    args.update(kw)
    return OpenAICompatibleJudge(srv.base_url, "judge-model", KEY, cache=JudgeCache(cache_path), **args)


def _bodies(srv: FaultServer) -> list[str]:
    return [json.dumps(r["body"], sort_keys=True) for r in srv.chat_requests()]


def _judge_in_two_threads(judges: list[OpenAICompatibleJudge]) -> list:
    start = threading.Barrier(len(judges))
    out: list = [None] * len(judges)

    def run(i: int) -> None:
        start.wait()
        out[i] = judges[i].judge(QUESTION, ANSWER, CTX)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(judges))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_two_threads_on_one_cache_file_send_each_request_once(tmp_path):
    with FaultServer("ok", latency_s=0.4) as srv:
        # control: two cache files, nothing to share: both callers pay (2 + 2 requests)
        alone = [_judge(srv, tmp_path / "a.sqlite"), _judge(srv, tmp_path / "b.sqlite")]
        control = _judge_in_two_threads(alone)
        assert len(srv.chat_requests()) == 4
        assert len(set(_bodies(srv))) == 2  # the same two requests, each sent twice
        srv.reset()
        # one cache file, two connections (as two steps of one run open it): 2 requests in all
        shared = [_judge(srv, tmp_path / "shared.sqlite"), _judge(srv, tmp_path / "shared.sqlite")]
        got = _judge_in_two_threads(shared)
        bodies = _bodies(srv)
    assert len(bodies) == 2 and len(set(bodies)) == 2
    assert got[0] == got[1] == control[0]
    assert got[0].status == "judged" and [c.verdict for c in got[0].claims] == ["SUPPORTED", "SUPPORTED"]
    # the caller that waited read both replies from the cache: 2 waits, 2 writes, between the two judges
    stats = [j.stats for j in shared]
    assert sum(s["flight_waits"] for s in stats) == 2
    assert sum(s["cache_writes"] for s in stats) == 2
    assert sum(s["calls"] for s in stats) == 2


CHILD = r"""
import json, sys, time
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
base_url, cache_path, start_at = sys.argv[1], sys.argv[2], float(sys.argv[3])
j = OpenAICompatibleJudge(base_url, "judge-model", "sk-test-single-flight", timeout_s=10.0, max_retries=0,
                          backoff_s=0.0, cache=JudgeCache(cache_path))
ctx = ["El museo abre de martes a domingo de 10 a 18 horas. La entrada general cuesta 8 euros."]
answer = "El museo abre de martes a domingo de 10 a 18 horas. La entrada cuesta 8 euros."
time.sleep(max(0.0, start_at - time.time()))
res = j.judge("¿Cuándo abre el museo?", answer, ctx)
print(json.dumps({"status": res.status, "verdicts": [c.verdict for c in res.claims], "stats": j.stats}))
"""


def _judge_in_two_processes(srv: FaultServer, paths: list[Path]) -> list[dict]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # Both processes imported and waiting (imports take >4 s under load), so they ask at once:
    start_at = time.time() + 10.0
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(p), str(start_at)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
             for p in paths]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=90)
        assert p.returncode == 0, stderr[-2000:]
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


@pytest.mark.slow
def test_two_processes_on_one_cache_file_send_each_request_once(tmp_path):
    with FaultServer("ok", latency_s=0.6) as srv:
        control = _judge_in_two_processes(srv, [tmp_path / "a.sqlite", tmp_path / "b.sqlite"])
        assert len(srv.chat_requests()) == 4 and len(set(_bodies(srv))) == 2  # they did overlap
        srv.reset()
        got = _judge_in_two_processes(srv, [tmp_path / "shared.sqlite"] * 2)
        bodies = _bodies(srv)
    assert len(bodies) == 2 and len(set(bodies)) == 2
    assert [g["verdicts"] for g in got] == [c["verdicts"] for c in control] == [["SUPPORTED", "SUPPORTED"]] * 2
    assert sum(g["stats"]["calls"] for g in got) == 2
    assert sum(g["stats"]["flight_waits"] for g in got) == 2


def test_a_failed_owner_hands_the_call_to_the_waiter(tmp_path):
    """The first decomposition request fails (HTTP 500, no retry): its caller's answer is a judge error,
    nothing is stored, and the caller that waited sends the call itself: 1 failed + 2 good requests."""
    with FaultServer("ok", latency_s=0.4) as srv:
        srv.script(["500"])
        judges = [_judge(srv, tmp_path / "shared.sqlite"), _judge(srv, tmp_path / "shared.sqlite")]
        got = _judge_in_two_threads(judges)
        requests = srv.chat_requests()
    assert sorted(r.status for r in got) == ["judge_error", "judged"]
    assert len(requests) == 3 and [r["mode"] for r in requests].count("500") == 1
    assert sum(j.stats["calls"] for j in judges) == 3


def test_a_claim_left_by_a_dead_process_is_taken_over_at_once(tmp_path):
    path = tmp_path / "c.sqlite"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with JudgeCache(path) as cache:
        # a run killed mid-call leaves its claim row behind
        cache._conn.execute("INSERT INTO judge_claims VALUES ('k', 'gone', ?, ?, ?, 600)",
                            (__import__("socket").gethostname(), dead.pid, time.time()))
        with cache.single_flight("k", wait_s=30) as flight:
            assert flight.value is None and flight.owner
            cache.put("k", {"v": 1}, model="m", prompt_sha256="p")
        assert flight.waited_s < 2.0
        with cache.single_flight("k", wait_s=30) as again:
            assert again.value == {"v": 1} and not again.owner


HOLDER = r"""
import sys, time
from rag_eval_pipeline.core.judges.cache import JudgeCache
cache = JudgeCache(sys.argv[1])
with cache.single_flight("k", wait_s=60) as f:
    assert f.owner
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    if sys.argv[3] == "store":
        cache.put("k", {"v": 2}, model="m", prompt_sha256="p")
"""


def test_a_live_owner_is_waited_for_and_the_wait_is_bounded(tmp_path):
    path = tmp_path / "c.sqlite"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # an owner that takes longer than the waiter's bound: the waiter stops waiting and calls
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), "5", "none"], stdout=subprocess.PIPE,
                              text=True, env=env, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        with JudgeCache(path) as cache, cache.single_flight("k", wait_s=0.5) as flight:
            assert flight.value is None and not flight.owner
            assert 0.45 < flight.waited_s < 2.0
    finally:
        holder.kill()
        holder.wait()
    # an owner that stores within the bound: the waiter gets its value
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), "1", "store"], stdout=subprocess.PIPE,
                              text=True, env=env, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        with JudgeCache(path) as cache, cache.single_flight("k", wait_s=30) as flight:
            assert flight.value == {"v": 2} and not flight.owner
            assert 0.3 < flight.waited_s < 10.0
    finally:
        holder.wait(timeout=30)
    assert holder.returncode == 0


def test_single_flight_arguments_are_checked(tmp_path):
    with JudgeCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(ValueError, match="wait_s"):
            cache.single_flight("k", wait_s=-1)
        with pytest.raises(ValueError, match="poll_s"):
            cache.single_flight("k", poll_s=0)
