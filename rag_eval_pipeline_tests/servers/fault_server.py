"""A small OpenAI-compatible chat-completions server with injectable faults, for tests and benchmarks.

Stdlib only (``http.server.ThreadingHTTPServer``, HTTP/1.1 keep-alive), bound to 127.0.0.1 on a
free port. Endpoints: ``POST /v1/chat/completions``, ``GET /v1/models``.

Modes (``FaultServer(mode=...)``, ``set_mode``, or one-shot ``script([...])`` consumed first):

- ``ok``: deterministic JSON for each judge task, recognised from the ``json_schema`` name or the
  JSON example on the prompt's last line. Decomposition: one claim per sentence of the answer.
  Verification: SUPPORTED with the best-overlapping context sentence as quote (a real substring
  of a chunk) when half the claim's words are in it, NOT_MENTIONED otherwise. Citation support and
  nugget coverage: SUPPORTED from half the words, PARTIAL from a quarter, NOT_SUPPORTED below.
- ``bad_quote``: like ok, but SUPPORTED with a quote found in no chunk.
- ``429`` (Retry-After: 0), ``500``, ``auth_echo`` (401 whose message echoes the bearer token),
  ``truncated`` (half the JSON, finish_reason "length"), ``invalid_json`` (prose),
  ``refusal`` (``message.refusal`` set), ``refusal_text`` (a refusal as content), ``empty``
  (empty content), ``out_of_range`` (a verdict/label/score outside the allowed set; decomposition
  still ok), ``hang`` (waits ``hang_s`` and closes without answering), ``reject_json_schema``
  (400 for a json_schema response_format, ok otherwise), ``reject_schema`` (400 for any schema,
  only plain json_object works).
- ``trickle`` (a well-formed ok reply whose first ``trickle_bytes`` bytes, status line and headers
  included, are sent one at a time every ``trickle_s`` seconds, then the rest: each socket read gets a
  byte long before any per-read timeout, so only a deadline on the whole request cuts it).
- ``echo_auth`` (an ok reply whose every justification, and the ``model`` field, copy the request's
  ``Authorization`` header, as a careless proxy might).
- ``latency_s`` delays every reply; ``poison`` (a string) makes any request whose prompt contains it
  answer with ``poison_mode`` (default "500").

Every request is recorded in ``requests`` (method, path, headers with lower-case names, parsed
body, mode used).
Run standalone: ``python -m rag_eval_pipeline_tests.servers.fault_server --mode ok --latency-ms 50``.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rag_eval_pipeline_tests.servers.local import send_json

DEFAULT_MODEL = "fault-model-2024-05-13"
_SENT = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w{3,}", re.UNICODE)
_TASK_MARKERS = (
    ('{"claims"', "claim_decomposition"),
    ('{"verdicts"', "claim_verification"),
    ('"label"', "holistic_faithfulness"),
    ('"score"', "answer_relevance"),
    ('{"questions"', "reverse_questions"),
    ('{"chunks"', "context_relevance"),
    ('{"facts"', "correctness"),
)


def _words(s: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(s)}


def _sentences(s: str) -> list[str]:
    return [x.strip() for x in _SENT.split(s.strip()) if x.strip()]


def _tag(prompt: str, name: str) -> str:
    m = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return m.group(1) if m else ""


def _chunks(prompt: str) -> list[str]:
    return re.findall(r'<chunk id="\d+">\n(.*?)\n</chunk>', prompt, re.DOTALL)


def _claims(prompt: str) -> list[str]:
    return re.findall(r'<claim id="\d+">(.*?)</claim>', prompt, re.DOTALL)


def _best_sentence(claim: str, chunks: list[str]) -> tuple[str, float]:
    """The chunk sentence holding the largest share of ``claim``'s words, and that share ("", 0.0 for none)."""
    cw = _words(claim)
    best, best_score = "", 0.0
    for ch in chunks:
        for sent in _sentences(ch):
            sc = len(cw & _words(sent)) / len(cw) if cw else 0.0
            if sc > best_score:
                best, best_score = sent, sc
    return best, best_score


def detect_task(body: dict, prompt: str) -> str:
    """Which judge task a request is (json_schema name, else the prompt's JSON example)."""
    rf = body.get("response_format") or {}
    if rf.get("type") == "json_schema":
        return rf.get("json_schema", {}).get("name", "unknown")
    last = prompt.strip().splitlines()[-1] if prompt.strip() else ""
    for marker, task in _TASK_MARKERS:
        if marker in last:
            if task == "claim_verification" and "<cited_passages>" in prompt:
                return "citation_support"
            if task == "claim_verification" and "<nuggets>" in prompt:
                return "nugget_coverage"
            return task
    return "unknown"


def ok_reply(task: str, prompt: str, mode: str = "ok") -> dict:
    """The deterministic JSON object the ``ok`` mode answers for ``task``."""
    bad = mode == "out_of_range"
    if task == "claim_decomposition":
        return {"claims": [s for s in _sentences(_tag(prompt, "answer")) if any(c.isalnum() for c in s)]}
    if task == "claim_verification":
        chunks, out = _chunks(prompt), []
        for i, claim in enumerate(_claims(prompt), start=1):
            best, best_score = _best_sentence(claim, chunks)
            if mode == "bad_quote":
                out.append({"id": i, "quote": "A sentence that no chunk contains.",
                            "justification": "made up", "verdict": "SUPPORTED"})
            elif best_score >= 0.5:
                out.append({"id": i, "quote": best, "justification": "the quote states the claim",
                            "verdict": "PROBABLY" if bad else "SUPPORTED"})
            else:
                out.append({"id": i, "quote": "", "justification": "the context does not say",
                            "verdict": "PROBABLY" if bad else "NOT_MENTIONED"})
        return {"verdicts": out}
    if task in ("citation_support", "nugget_coverage"):
        # SUPPORTED when half the item's words are in one passage sentence (quoted), PARTIAL from a quarter
        chunks, out = _chunks(prompt), []
        for i, claim in enumerate(_claims(prompt), start=1):
            best, best_score = _best_sentence(claim, chunks)
            if mode == "bad_quote":
                out.append({"id": i, "quote": "A sentence that no passage contains.", "justification": "made up",
                            "verdict": "SUPPORTED"})
            elif best_score >= 0.5 or (best_score >= 0.25 and not bad):
                label = "SUPPORTED" if best_score >= 0.5 else "PARTIAL"
                out.append({"id": i, "quote": best, "justification": "the quote states it",
                            "verdict": "SOMEWHAT" if bad else label})
            else:
                out.append({"id": i, "quote": "", "justification": "not stated",
                            "verdict": "SOMEWHAT" if bad else "NOT_SUPPORTED"})
        return {"verdicts": out}
    if task == "holistic_faithfulness":
        return {"justification": "all backed", "label": "MAYBE" if bad else "YES"}
    if task == "answer_relevance":
        return {"justification": "on topic", "score": 7 if bad else 4}
    if task == "reverse_questions":
        m = re.search(r"write (\d+) different questions", prompt)
        n = int(m.group(1)) if m else 3
        ans = _tag(prompt, "answer")
        return {"questions": [f"Pregunta {i}: ¿{ans[:40]}?" for i in range(1, n + 1)]}
    if task == "context_relevance":
        qw = _words(_tag(prompt, "question"))
        return {"chunks": [{"id": i, "justification": "overlap",
                            "needed": "perhaps" if bad else bool(qw & _words(ch))}
                           for i, ch in enumerate(_chunks(prompt), start=1)]}
    if task == "correctness":
        aw = _words(_tag(prompt, "answer"))
        facts = []
        for s in _sentences(_tag(prompt, "reference")):
            sw = _words(s)
            cov = bool(sw) and len(sw & aw) / len(sw) >= 0.5
            facts.append({"fact": s, "justification": "word overlap",
                          "status": "UNKNOWN" if bad else ("COVERED" if cov else "MISSING")})
        return {"facts": facts}
    return {"error": f"unknown task {task}"}


class FaultServer:
    """Start/stop a fault-injecting OpenAI-compatible server (see the module docstring).

    ``with FaultServer(mode="ok") as srv: srv.base_url`` → "http://127.0.0.1:PORT/v1".
    Attributes: ``requests`` (list of dicts), ``model`` (reported in every reply).
    """

    def __init__(self, mode: str = "ok", *, latency_s: float = 0.0, hang_s: float = 30.0,
                 model: str = DEFAULT_MODEL, poison: str | None = None, poison_mode: str = "500",
                 record_bodies: bool = True, trickle_s: float = 0.25, trickle_bytes: int = 60):
        self.mode, self.latency_s, self.hang_s, self.model = mode, latency_s, hang_s, model
        self.trickle_s, self.trickle_bytes = trickle_s, trickle_bytes
        self.poison, self.poison_mode, self.record_bodies = poison, poison_mode, record_bodies
        self.requests: list[dict[str, Any]] = []
        self._queue: deque[str] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- control --------------------------------------------------------------------------------
    def set_mode(self, mode: str) -> None:
        """Answer every later request in ``mode`` (after any scripted modes)."""
        with self._lock:
            self.mode = mode

    def script(self, modes: list[str]) -> None:
        """Modes for the next requests, one each, before falling back to ``mode``."""
        with self._lock:
            self._queue.extend(modes)

    def reset(self) -> None:
        """Forget recorded requests and scripted modes."""
        with self._lock:
            self.requests.clear()
            self._queue.clear()

    def chat_requests(self) -> list[dict[str, Any]]:
        """The recorded chat-completions requests, oldest first."""
        with self._lock:
            return [r for r in self.requests if r["path"].endswith("/chat/completions")]

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FaultServer:
        server = self

        class Handler(_Handler):
            owner = server

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128
            allow_reuse_address = True

        self._httpd = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fault-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FaultServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- request handling -----------------------------------------------------------------------
    def _pick_mode(self, prompt: str) -> str:
        with self._lock:
            if self.poison and self.poison in prompt:
                return self.poison_mode
            if self._queue:
                return self._queue.popleft()
            return self.mode

    def handle_chat(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        """Record one chat-completions request and answer it in the mode picked for it."""
        messages = body.get("messages") or []
        prompt = "\n".join(str(m.get("content") or "") for m in messages if isinstance(m, dict))
        mode = self._pick_mode(prompt)
        with self._lock:
            self.requests.append({"method": "POST", "path": h.path,
                                  "headers": {k.lower(): v for k, v in h.headers.items()},
                                  "body": body if self.record_bodies else None, "mode": mode,
                                  "time": time.time()})
        if self.latency_s > 0:
            self._stop.wait(self.latency_s)
        if mode == "hang":
            self._stop.wait(self.hang_s)
            h.close_connection = True
            return
        if mode == "429":
            return _send(h, 429, {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}},
                         {"Retry-After": "0"})
        if mode == "500":
            return _send(h, 500, {"error": {"message": "internal server error", "type": "server_error"}})
        if mode == "auth_echo":
            token = h.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            return _send(h, 401, {"error": {"message": f"Incorrect API key provided: {token}. Check it.",
                                            "type": "invalid_request_error"}})
        rf = body.get("response_format") or {}
        if mode == "reject_json_schema" and rf.get("type") == "json_schema":
            return _send(h, 400, {"error": {"message": "response_format type 'json_schema' is not supported"}})
        if mode == "reject_schema" and (rf.get("type") == "json_schema" or "schema" in rf):
            return _send(h, 400, {"error": {"message": "response_format: schema is not supported"}})
        task = detect_task(body, prompt)
        obj = ok_reply(task, prompt, mode)
        model = self.model
        if mode == "echo_auth":
            echoed = f"(request Authorization: {h.headers.get('Authorization', '')})"
            obj = _echo_into_justifications(obj, echoed)
            model = f"{self.model} {echoed}"
        content: str | None = json.dumps(obj, ensure_ascii=False)
        finish, refusal = "stop", None
        if mode == "truncated":
            content, finish = content[: len(content) // 2], "length"
        elif mode == "invalid_json":
            content = "Sure! The claims are: first, the sky; second, the sea."
        elif mode == "refusal":
            content, refusal = None, "I'm sorry, I can't help with that."
        elif mode == "refusal_text":
            content = "I'm sorry, but I cannot help with that request."
        elif mode == "empty":
            content = ""
        reply = {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": refusal}}],
            "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content or "") // 4,
                      "total_tokens": len(prompt) // 4 + len(content or "") // 4},
        }
        if mode == "trickle":
            return self._trickle(h, reply)
        _send(h, 200, reply)

    def _trickle(self, h: BaseHTTPRequestHandler, reply: dict) -> None:
        data = json.dumps(reply, ensure_ascii=False).encode("utf-8")
        raw = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
               .encode("ascii") + data)
        h.close_connection = True
        try:
            for i in range(min(self.trickle_bytes, len(raw))):
                if self._stop.wait(self.trickle_s):
                    return
                h.wfile.write(raw[i:i + 1])
                h.wfile.flush()
            h.wfile.write(raw[self.trickle_bytes:])
        except (BrokenPipeError, ConnectionResetError):
            pass


def _echo_into_justifications(obj: Any, text: str) -> Any:
    if isinstance(obj, dict):
        return {k: (f"{v} {text}" if k == "justification" else _echo_into_justifications(v, text))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_echo_into_justifications(v, text) for v in obj]
    return obj


def _send(h: BaseHTTPRequestHandler, code: int, obj: dict, headers: dict | None = None) -> None:
    send_json(h, code, json.dumps(obj, ensure_ascii=False).encode("utf-8"), headers)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in two writes: avoid the 40 ms delayed-ACK stall
    owner: FaultServer

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            with self.owner._lock:
                self.owner.requests.append({"method": "GET", "path": self.path,
                                            "headers": {k.lower(): v for k, v in self.headers.items()}, "body": None,
                                            "mode": "models", "time": time.time()})
            return _send(self, 200, {"object": "list",
                                     "data": [{"id": self.owner.model, "object": "model", "owned_by": "test"}]})
        _send(self, 404, {"error": {"message": f"no route {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            return _send(self, 404, {"error": {"message": f"no route {self.path}"}})
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            return _send(self, 400, {"error": {"message": "body is not JSON"}})
        self.owner.handle_chat(self, body)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", default="ok")
    ap.add_argument("--latency-ms", type=float, default=0.0)
    args = ap.parse_args(argv)
    with FaultServer(args.mode, latency_s=args.latency_ms / 1000, record_bodies=False) as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
