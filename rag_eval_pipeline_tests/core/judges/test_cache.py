"""JudgeCache: keys, persistence, WAL, repeat bypass, zero calls on re-run, resume after a killed run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from rag_eval_pipeline.core.judges.cache import JudgeCache, cache_key, canonical_json
from rag_eval_pipeline.core.judges.many import judge_many
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline_tests.servers.fault_server import FaultServer

pytestmark = pytest.mark.timeout(120)

REPO = Path(__file__).resolve().parents[3]
CTX = ["El museo abre de martes a domingo de 10 a 18 horas. La entrada general cuesta 8 euros."]


def test_key_is_canonical_and_sensitive():
    a = cache_key("m", "p" * 64, {"x": 1, "y": [1, 2]})
    assert a == cache_key("m", "p" * 64, {"y": [1, 2], "x": 1})
    assert len(a) == 64 and int(a, 16) >= 0
    others = {
        cache_key("m2", "p" * 64, {"x": 1, "y": [1, 2]}),
        cache_key("m", "q" * 64, {"x": 1, "y": [1, 2]}),
        cache_key("m", "p" * 64, {"x": 1, "y": [2, 1]}),
        cache_key("m", "p" * 64, {"x": 1, "y": [1, 2]}, repeat=1),
    }
    assert a not in others and len(others) == 4
    assert canonical_json({"b": "ñ", "a": 1.5}) == '{"a":1.5,"b":"ñ"}'
    with pytest.raises(ValueError):
        cache_key("m", "p", {"x": float("nan")})
    with pytest.raises(ValueError):
        cache_key("m", "p", {}, repeat=-1)


def test_put_get_persist_wal(tmp_path):
    path = tmp_path / "sub" / "cache.sqlite"
    with JudgeCache(path) as c:
        assert c.journal_mode() == "wal"
        k = c.store("m", "p", {"q": "x"}, {"output": {"a": 1}, "model": "m-1"})
        assert c.get(k) == {"output": {"a": 1}, "model": "m-1"}
        assert c.lookup("m", "p", {"q": "x"}) == {"output": {"a": 1}, "model": "m-1"}
        assert c.lookup("m", "p", {"q": "y"}) is None
        with pytest.raises(TypeError):
            c.put(k, ["not", "a", "dict"], model="m", prompt_sha256="p")
    with JudgeCache(path) as c2:  # a new process would see the same
        assert len(c2) == 1 and c2.lookup("m", "p", {"q": "x"})["model"] == "m-1"
    # committed per write: a plain sqlite3 reader sees the row
    con = sqlite3.connect(path)
    assert con.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0] == 1
    con.close()


def test_repeat_bypasses_reads_but_writes_with_repeat_in_key(tmp_path):
    with JudgeCache(tmp_path / "c.sqlite") as c:
        c.store("m", "p", {"q": 1}, {"v": 0})
        assert c.lookup("m", "p", {"q": 1}, repeat=1) is None
        k1 = c.store("m", "p", {"q": 1}, {"v": 1}, repeat=1)
        assert c.lookup("m", "p", {"q": 1}, repeat=1) is None  # still never read for repeat > 0
        assert c.get(k1) == {"v": 1} and c.lookup("m", "p", {"q": 1}) == {"v": 0}
        assert len(c) == 2


def test_threads_share_one_cache(tmp_path):
    with JudgeCache(tmp_path / "c.sqlite") as c:
        def work(t):
            for i in range(50):
                c.store("m", "p", {"t": t, "i": i}, {"v": i})
        ths = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
        assert len(c) == 200


def _judge(srv, cache, **kw):
    return OpenAICompatibleJudge(srv.base_url, "judge-model", "k-test-1234", timeout_s=2, max_retries=1,
                                 backoff_s=0.01, cache=cache, **kw)


def test_second_run_makes_zero_calls(tmp_path):
    items = [("¿Horario?", f"El museo abre de martes a domingo de 10 a 18 horas. Dato {i}.", CTX) for i in range(5)]
    with FaultServer() as srv:
        j1 = _judge(srv, JudgeCache(tmp_path / "c.sqlite"))
        first = judge_many(j1, items, concurrency=3)
        n_calls = len(srv.chat_requests())
        assert n_calls == 10 and j1.stats["cache_writes"] == 10
        j2 = _judge(srv, JudgeCache(tmp_path / "c.sqlite"))
        assert j2.dry_run_estimate(items)["cached_calls"] == 5
        second = judge_many(j2, items, concurrency=3)
        assert len(srv.chat_requests()) == n_calls  # zero new calls
        assert j2.stats["calls"] == 0 and j2.stats["cache_hits"] == 10
        assert first == second
        assert j2.model == srv.model  # the version recorded in the cache entry
        # a repeat > 0 is judged again (and stored under its own key)
        j2.judge(*items[0], repeat=1)
        assert len(srv.chat_requests()) == n_calls + 2
        j2.judge(*items[0], repeat=1)
        assert len(srv.chat_requests()) == n_calls + 4
        judge_many(j2, items[:2], concurrency=2, repeat=2)  # judge_many passes the repeat on
        assert len(srv.chat_requests()) == n_calls + 8


def test_every_metric_is_served_from_the_cache(tmp_path):
    q, a = "¿Horario?", "El museo abre de martes a domingo."
    with FaultServer() as srv:
        cache = JudgeCache(tmp_path / "c.sqlite")
        outs = []
        for _ in range(2):
            j = _judge(srv, cache)
            outs.append((j.holistic(q, a, CTX), j.answer_relevance(q, a), j.reverse_questions(a, 2),
                         j.context_relevance(q, CTX), j.correctness(a, "El museo abre de martes a domingo.")))
        assert outs[0] == outs[1]
        assert len(srv.chat_requests()) == 5 and j.stats["calls"] == 0 and j.stats["cache_hits"] == 5


def test_failures_are_not_cached(tmp_path):
    with FaultServer("500") as srv:
        cache = JudgeCache(tmp_path / "c.sqlite")
        assert _judge(srv, cache).judge("q", "El museo abre.", CTX).status == "judge_error"
        assert len(cache) == 0
        srv.set_mode("ok")
        assert _judge(srv, cache).judge("q", "El museo abre.", CTX).status == "judged"
        assert len(cache) == 2


def test_changed_input_or_model_misses(tmp_path):
    with FaultServer() as srv:
        cache = JudgeCache(tmp_path / "c.sqlite")
        _judge(srv, cache).judge("q", "El museo abre.", CTX)
        _judge(srv, cache).judge("q", "El museo abre.", CTX + ["Otro fragmento."])  # new context: verify again
        assert len(srv.chat_requests()) == 3
        OpenAICompatibleJudge(srv.base_url, "other-model", "k", cache=cache).judge("q", "El museo abre.", CTX)
        assert len(srv.chat_requests()) == 5


CHILD = textwrap.dedent("""
    import sys
    from rag_eval_pipeline.core.judges.cache import JudgeCache
    from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
    url, path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = [{ctx!r}]
    j = OpenAICompatibleJudge(url, "judge-model", "k-test-1234", timeout_s=5, max_retries=0,
                              cache=JudgeCache(path))
    for i in range(n):
        j.judge("¿Horario?", f"El museo abre de martes a domingo. Respuesta {{i}}.", ctx)
        print(i, flush=True)
""").format(ctx=CTX[0])


def test_killed_run_resumes_from_finished_entries(tmp_path):
    n = 12
    path = tmp_path / "c.sqlite"
    with FaultServer(latency_s=0.05) as srv:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = subprocess.Popen([sys.executable, "-c", CHILD, srv.base_url, str(path), str(n)],
                                stdout=subprocess.PIPE, text=True, env=env, cwd=REPO)
        try:
            done = 0
            deadline = time.time() + 60
            while done < 3 and time.time() < deadline:
                line = proc.stdout.readline()
                if not line:
                    break
                done += 1
            assert done == 3, "the child did not finish 3 items"
            proc.send_signal(signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert proc.returncode == -signal.SIGKILL
        calls_before = len(srv.chat_requests())
        cache = JudgeCache(path)
        kept = len(cache)
        assert 6 <= kept < 2 * n  # every finished call survived the kill
        j = _judge(srv, cache)
        items = [("¿Horario?", f"El museo abre de martes a domingo. Respuesta {i}.", CTX) for i in range(n)]
        res = [j.judge(*it) for it in items]
        assert all(r.status == "judged" for r in res)
        assert len(srv.chat_requests()) - calls_before == 2 * n - kept
        assert j.stats["cache_hits"] == kept and len(cache) == 2 * n
