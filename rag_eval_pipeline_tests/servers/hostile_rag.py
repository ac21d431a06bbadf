"""A RAG endpoint on 127.0.0.1 that attacks its client, for the hostile catalogue (round three).

``HostileRagServer(answer, faults)`` answers ``POST /answer`` (the default contract) with
``answer(question_id, question, user_groups)`` unless the question id has a fault:

- ``echo_key``: a 200 answer whose ``X-Model-Version`` header carries the request's Authorization
  value, and whose ``answer`` carries it again written with JSON ``\\u`` escapes only (so the raw body
  never holds the plain key; parsing the JSON does), plus a ``model`` field URL-escaped;
- ``echo_key_error``: a 401 whose body quotes the key HTML-escaped and ``\\u``-escaped;
- ``echo_key_encoded``: a 401 whose body quotes the Authorization value base64- and hex-encoded, the
  token URL-encoded twice (``%2561...``), upper-cased, and its first 14 characters followed by ``...``;
- ``echo_key_split``: a 200 answer that ends with the token's first 8 characters, followed by a
  ``model`` field holding the rest (the key is whole only when the two are read together);
- ``about_tokens``: a 200 answer explaining bearer tokens, quoting ``"Authorization: Bearer <token>"``
  (JSON-escaped quotes), ``api_key: value`` and ``sk-learn-tools``: prose, no secret (:data:`ABOUT_TOKENS`);
- ``huge_body``: a 200 streamed without ``Content-Length`` (``huge_bytes`` bytes, 200 MB by default, in
  1 MiB writes, made on the fly so the server itself stays small), until the client hangs up;
- ``huge_declared``: a 200 that declares ``Content-Length: huge_bytes`` and then sends it;
- ``gzip_bomb``: ``Content-Encoding: gzip``, about 1 MB on the wire that inflates to 1 GiB of spaces
  (valid JSON whitespace) before ``{}``;
- ``deep_json``: 100,000 nested ``[`` then as many ``]``;
- ``repeated_key``: a reply object with ``"decision"`` twice (``answer`` then ``error``);
- ``slow``: waits ``slow_s`` seconds before answering, watching the socket: when the client hangs up
  the request stops counting as in flight;
- ``trickle``: the headers at once, then the body one byte every ``trickle_s`` seconds (each read
  arrives well within any per-read timeout, so only a deadline on the whole attempt ends it),
  stopping as soon as the client hangs up.

Every request counts in ``in_flight`` while the server handles it and the client is still connected;
``max_in_flight`` is the most seen at once (a client that abandons an attempt but keeps its connection
open still counts). Every request is recorded (time, question id, headers, fault).
"""

from __future__ import annotations

import base64
import json
import select
import time
import zlib
from functools import lru_cache
from http.server import ThreadingHTTPServer

from rag_eval_pipeline_tests.servers.local import JsonPostServer, send_json

BOMB_INFLATED = 1 << 30
ABOUT_TOKENS = ('Send the header "Authorization: Bearer <token>" with every call; the api_key: value field '
                "holds the key; install sk-learn-tools first.")


@lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """gzip of 1 GiB of spaces followed by ``{}`` (about 1 MB; made once per process, a few seconds)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # wbits 31: a gzip header and trailer
    block = b" " * (1 << 20)
    parts = [comp.compress(block) for _ in range(BOMB_INFLATED >> 20)]
    parts.append(comp.compress(b"{}"))
    parts.append(comp.flush())
    return b"".join(parts)


def encoded_forms(auth: str) -> list[str]:
    """The Authorization value ``auth`` as a careless server might quote it: base64, hex, its token
    URL-encoded twice (``%2561...``), the token upper-cased, and the token's first 14 characters + "..."."""
    token = auth.partition(" ")[2]
    return [base64.b64encode(auth.encode()).decode(), auth.encode().hex(),
            "".join(f"%25{b:02x}" for b in token.encode()), token.upper(), token[:14] + "..."]


def u_escaped(text: str) -> str:
    """Every character of ``text`` as a JSON ``\\uXXXX`` escape."""
    return "".join(f"\\u{ord(c):04x}" for c in text)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request, client_address):  # a client hanging up mid-reply is the point here
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class HostileRagServer(JsonPostServer):
    server_class = _QuietServer

    def __init__(self, answer, faults: dict[str, str] | None = None, *, slow_s: float = 2.0,
                 huge_bytes: int = 200 * 10**6, version: str = "hostile-v1", trickle_s: float = 0.1):
        self.answer, self.faults = answer, dict(faults or {})
        self.slow_s, self.huge_bytes, self.version = slow_s, huge_bytes, version
        self.trickle_s = trickle_s
        self.requests: list[dict] = []
        super().__init__()

    @staticmethod
    def _client_gone(h, wait_s: float) -> bool:
        """Wait up to ``wait_s``; True as soon as the client closes its end (EOF on the socket)."""
        sock = h.connection
        ready, _, _ = select.select([sock], [], [], wait_s)
        if not ready:
            return False
        try:
            return sock.recv(1, 0x2) == b""  # MSG_PEEK: EOF means the client hung up
        except OSError:
            return True

    def handle(self, h, body: dict) -> None:
        qid, question = body.get("question_id"), body.get("question")
        fault = self.faults.get(qid)
        auth = h.headers.get("Authorization", "")
        with self._lock:
            self.requests.append({"time": time.monotonic(), "question_id": qid, "fault": fault,
                                  "headers": {k.lower(): v for k, v in h.headers.items()}})
        if fault == "slow":
            if self._client_gone(h, self.slow_s):
                return
        elif fault == "trickle":
            payload = json.dumps(self.answer(qid, question, body.get("user_groups", []))).encode()
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.flush()
            for i in range(len(payload)):
                if self._client_gone(h, self.trickle_s):
                    return
                h.wfile.write(payload[i:i + 1])
                h.wfile.flush()
            return
        elif fault == "huge_body" or fault == "huge_declared":
            h.send_response(200)
            h.send_header("Content-Type", "application/json")
            if fault == "huge_declared":
                h.send_header("Content-Length", str(self.huge_bytes))
            else:
                h.send_header("Connection", "close")
            h.end_headers()
            chunk = b'{"pad": "' + b"x" * ((1 << 20) - 9)
            sent = 0
            while sent < self.huge_bytes:
                h.wfile.write(chunk)
                sent += len(chunk)
                chunk = b"x" * (1 << 20)
            h.close_connection = True
            return
        elif fault == "gzip_bomb":
            return send_json(h, 200, gzip_bomb(), {"Content-Encoding": "gzip"})
        elif fault == "deep_json":
            return send_json(h, 200, b"[" * 100_000 + b"]" * 100_000)
        elif fault == "repeated_key":
            reply = self.answer(qid, question, body.get("user_groups", []))
            text = json.dumps(reply)
            return send_json(h, 200, ('{"decision": "error", ' + text[1:]).encode())
        elif fault == "echo_key_encoded":
            return send_json(h, 401, json.dumps({"error": "got " + " / ".join(encoded_forms(auth))}).encode())
        elif fault == "about_tokens":
            return send_json(h, 200, json.dumps({"retrieved": [], "decision": "answer",
                                                  "answer": ABOUT_TOKENS}).encode())
        elif fault == "echo_key_error":
            html = "".join(f"&#{ord(c)};" for c in auth)
            return send_json(h, 401, ('{"error": "invalid credentials ' + html + " / " + u_escaped(auth)
                                       + '"}').encode())
        reply = self.answer(qid, question, body.get("user_groups", []))
        headers = {"X-Model-Version": self.version}
        if fault == "echo_key_split":
            token = auth.partition(" ")[2]
            reply = {**{k: v for k, v in reply.items() if k not in ("answer", "model", "decision")},
                     "decision": "answer", "answer": "Consulta la referencia " + token[:8], "model": token[8:]}
        if fault == "echo_key":
            headers["X-Model-Version"] = f"{self.version} (auth {auth})"
            text = json.dumps({k: v for k, v in reply.items() if k not in ("answer", "model")})
            answer = (reply.get("answer") or "") + " (you sent " + u_escaped(auth) + ")"
            model = "".join(f"%{b:02X}" for b in auth.encode())
            extra = f', "answer": "{answer}", "model": "{model}"'
            return send_json(h, 200, (text[:-1] + extra + "}").encode(), headers)
        send_json(h, 200, json.dumps(reply).encode(), headers)
