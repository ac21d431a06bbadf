"""Real services for the live-system tests, on 127.0.0.1: the ``rag-eval serve-reference`` command in a
subprocess, and a stdlib RAG endpoint with injectable faults.

``RagFaultServer(answer, faults)``: ``POST /answer`` (the default contract) answers with
``answer(question_id, question, user_groups)`` (a run-log object) unless the question id has a fault:

- ``slow``: sleeps ``slow_s`` before answering (past the client's timeout);
- ``trickle``: sends the headers at once, then the body one byte every ``slow_s / 20`` seconds;
- ``429``: 429 with ``Retry-After: <retry_after>`` every time; ``429_once``: the first request only;
- ``500``: 500 every time; ``500_once``: the first request only;
- ``malformed``: 200 with a body that is not JSON;
- ``missing_decision``: 200 with the reply minus ``decision``;
- ``echo_auth``: 401 whose body echoes the Authorization header; ``echo_auth_200``: a 200 answer
  whose ``answer`` quotes the Authorization header;
- ``echo_auth_encoded``: 401 whose body holds the header base64- and hex-encoded, its token
  URL-encoded twice, upper-cased, and its first 14 characters; ``echo_basic_decoded``: 401 whose body
  quotes a ``Basic`` header decoded (``user:password``); ``echo_auth_split``: a 200 answer that ends with
  the token's first 8 characters, followed by a ``model`` field holding the rest;
- ``about_tokens``: a 200 answer that explains bearer tokens, quoting ``"Authorization: Bearer <token>"``,
  ``api_key: value`` and ``sk-learn-tools`` (ordinary prose, no secret).

``POST /custom`` wraps the reply in another shape (``{"data": {"hits": [{"id", "relevance"}]},
"output": {"text", "label"}}``) for ``response_fields`` tests; ``/custom`` reads the question from
``{"input": {"q": ...}, "id": ...}``. Every request is recorded (time, path, headers, body, fault).
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from rag_eval_pipeline_tests.servers.hostile_rag import ABOUT_TOKENS, encoded_forms
from rag_eval_pipeline_tests.servers.local import JsonPostServer, free_port, send_json

REPO_ROOT = Path(__file__).resolve().parents[3]


class ServeReference:
    """``python -m rag_eval_pipeline.cli serve-reference`` started for real; stopped by its pid."""

    def __init__(self, config: Path, system: str, env: dict | None = None, start_timeout_s: float = 60.0):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/answer"
        self._cmd = [sys.executable, "-m", "rag_eval_pipeline.cli", "serve-reference", "--config", str(config),
                     "--system", system, "--port", str(self.port)]
        self._env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **(env or {})}
        self._timeout = start_timeout_s
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> ServeReference:
        self.proc = subprocess.Popen(self._cmd, env=self._env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self._timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve-reference exited {self.proc.returncode}: {self.proc.stdout.read().decode()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=1) as r:
                    self.health = json.loads(r.read())
                    return self
            except OSError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError("serve-reference did not answer within the start timeout")

    def __exit__(self, *exc) -> None:
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc and self.proc.stdout:
            self.proc.stdout.close()


class RagFaultServer(JsonPostServer):
    def __init__(self, answer, faults: dict[str, str] | None = None, *, slow_s: float = 3.0, retry_after: str = "1",
                 latency_s: float = 0.0, version: str = "fault-v1"):
        self.answer, self.faults = answer, dict(faults or {})
        self.slow_s, self.retry_after, self.latency_s, self.version = slow_s, retry_after, latency_s, version
        self.requests: list[dict] = []
        self._seen: dict[str, int] = {}
        super().__init__()
        self.custom_url = f"http://127.0.0.1:{self.port}/custom"

    def handle(self, h, body: dict) -> None:
        custom = h.path == "/custom"
        qid = body.get("id") if custom else body.get("question_id")
        question = body["input"]["q"] if custom else body.get("question")
        with self._lock:
            n = self._seen[qid] = self._seen.get(qid, 0) + 1
        fault = self.faults.get(qid)
        if fault in ("429_once", "500_once") and n > 1:
            fault = None
        self.requests.append({"time": time.monotonic(), "path": h.path, "question_id": qid, "attempt": n,
                              "headers": {k.lower(): v for k, v in h.headers.items()}, "body": body, "fault": fault})
        if self.latency_s:
            time.sleep(self.latency_s)
        auth = h.headers.get("Authorization", "")
        if fault == "slow":
            time.sleep(self.slow_s)
        elif fault in ("429", "429_once"):
            return send_json(h, 429, b'{"error": "slow down"}', {"Retry-After": self.retry_after})
        elif fault in ("500", "500_once"):
            return send_json(h, 500, b'{"error": "internal error"}')
        elif fault == "trickle":  # headers at once, then the body one byte at a time, slowly
            payload = json.dumps(self.answer(qid, question, body.get("user_groups", []))).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            try:
                for i in range(len(payload)):
                    h.wfile.write(payload[i:i + 1])
                    h.wfile.flush()
                    time.sleep(self.slow_s / 20)
            except (BrokenPipeError, ConnectionResetError):
                pass
            return
        elif fault == "malformed":
            return send_json(h, 200, b'{"retrieved": [ this is not json')
        elif fault == "echo_auth":
            return send_json(h, 401, json.dumps({"error": f"invalid credentials: {auth}"}).encode())
        elif fault == "echo_auth_encoded":
            return send_json(h, 401, json.dumps({"error": "got " + " / ".join(encoded_forms(auth))}).encode())
        elif fault == "echo_basic_decoded":
            decoded = base64.b64decode(auth.partition(" ")[2]).decode()
            return send_json(h, 401, f"bad credentials for {decoded}".encode())
        elif fault == "about_tokens":
            return send_json(h, 200, json.dumps({"retrieved": [], "decision": "answer",
                                                 "answer": ABOUT_TOKENS}).encode())
        reply = self.answer(qid, question, body.get("user_groups", []))
        if fault == "missing_decision":
            reply = {k: v for k, v in reply.items() if k != "decision"}
        if fault == "echo_auth_200" and reply.get("answer"):
            reply = {**reply, "answer": reply["answer"] + f" (you sent {auth})"}
        if fault == "echo_auth_split":
            token = auth.partition(" ")[2]
            reply = {**{k: v for k, v in reply.items() if k not in ("answer", "model")},
                     "answer": "abstract " + token[:8], "model": token[8:]}
        if custom:
            reply = {"data": {"hits": [{"id": r["chunk_id"], "relevance": r["score"]} for r in reply["retrieved"]]},
                     "output": {"text": reply.get("answer"), "label": reply["decision"]}}
        send_json(h, 200, json.dumps(reply).encode(), {"X-Model-Version": self.version})

    def attempts(self, qid: str) -> list[dict]:
        return [r for r in self.requests if r["question_id"] == qid]
