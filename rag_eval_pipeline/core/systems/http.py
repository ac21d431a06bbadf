"""The ``http`` kind: one request per golden question to a team's RAG endpoint.

Default contract: ``POST`` JSON ``{"question_id", "question", "user_groups"}``; the reply is one
object in the run-log schema (see ``records.record_to_row``). ``request_template`` and
``response_fields`` adapt other APIs. Headers with secrets are read from the environment
(``headers_from_env``) when the run starts and sent; everything that comes back (the version header,
every string of the parsed reply, keys included, and every error text) goes through
``core.secrets`` (the model judge's scrubbing) with those values before anything is stored or shown,
in the forms it lists (escaped, URL- or HTML-encoded, base64, hex, cut short, split over two fields),
so a server that echoes a token back cannot get it into a table, the run's metadata or a report. A
body is parsed as it arrived and scrubbed of the configured values only; the credential-shaped
patterns (``Bearer ...``, ``sk-...``) apply to error and status texts, never to an answer.

Bounds: the body is read as a stream and abandoned past ``max_reply_bytes`` (default 10 MiB), counted
both as received (compressed) and as decoded (decompressed: a gzip bomb stops at the cap, not at
its inflated size); a ``Content-Length`` over the cap is refused before the body is read. The
parsed reply must then fit the row bounds of ``records`` (answer length, hits, citations). An
over-limit reply is an ``error`` row (kind ``too_large``) that names the bound; it is not retried.
The body is parsed by the one strict JSON reader (``core.jsonio``: a repeated key or nesting past
128 levels is a malformed reply of that question only).

Concurrency: at most ``concurrency`` requests are in flight at any moment. Each attempt runs on the
question's own worker thread under a deadline on every socket operation (``judges.deadline``, as the
model judge does), so a timed-out attempt has ended, and its connection is closed, before its retry
starts; none is left running in the background.

Failure handling, per question: ``timeout_s`` bounds each attempt (connect, send, wait, body);
429, 5xx, timeouts and refused or dropped connections are retried up to ``max_retries`` times
after ``backoff_s * 2**(n-1)`` seconds (at most ``max_backoff_s``), or after the server's
``Retry-After`` when that is longer; a Retry-After beyond ``max_backoff_s`` ends the retries. Other
4xx, a body that is not JSON, or a reply that does not fit the schema are not retried. A question
whose call still fails becomes an ``error`` row whose ``error`` says why (HTTP status, timeout,
malformed body, the missing field), so it counts in ``run_error_rate``; nothing is dropped and no
empty retrieval is scored.
"""

from __future__ import annotations

import email.utils
import os
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import httpx2

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.judges.deadline import deadline_http_client, request_deadline
from rag_eval_pipeline.core.secrets import scrub_reply, scrub_secret
from rag_eval_pipeline.core.systems.calls import RateLimiter, backoff_delay, map_in_pool
from rag_eval_pipeline.core.systems.records import (
    ReplyError,
    ReplyTooLarge,
    RunContext,
    error_row,
    fill_template,
    mapped_to_row,
    record_to_row,
)

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.http import HttpSystemConfig

_SNIPPET = 200
_VERSION_CHARS = 200
_REDACTED = "[redacted]"


@dataclass
class _Attempt:
    status: int | None = None
    body: str | None = None
    version: str | None = None
    reason: str | None = None  # transport failure
    too_large: str | None = None  # the body passed max_reply_bytes
    retry_after: float | None = None
    latency_ms: float | None = None


class CallStats:
    """What a run of calls cost: attempts, retries, errors by kind, versions seen (thread-safe)."""

    def __init__(self):
        self.calls = 0
        self.retries = 0
        self.errors: Counter = Counter()
        self.versions: Counter = Counter()
        self._lock = threading.Lock()

    def count(self, what: str, key: str | None = None) -> None:
        with self._lock:
            if what in ("errors", "versions"):
                getattr(self, what)[key] += 1
            else:
                setattr(self, what, getattr(self, what) + 1)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "retries": self.retries, "errors_by_kind": dict(sorted(self.errors.items())),
                "versions_seen": dict(sorted(self.versions.items()))}


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP-date (RFC 9110 §10.2.3).

    Output: a number >= 0, or None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


class HttpSystem:
    """Calls one configured ``http`` system (its typed section, ``core/systems/kinds/http.py``).

    ``environ``: where ``headers_from_env`` are read (default ``os.environ``), once, here. Raises
    ConfigError naming the system, header and variable when a variable is unset or empty.
    ``transport``: an ``httpx2`` transport (tests of error paths); default a real connection pool.
    """

    def __init__(self, spec: HttpSystemConfig, environ: Mapping[str, str] | None = None, *,
                 user_agent: str = "rag-eval", transport: httpx2.BaseTransport | None = None, sleep=time.sleep):
        environ = os.environ if environ is None else environ
        self.spec = spec
        headers = {"User-Agent": user_agent, **spec.headers}
        self._secrets: list[str] = []
        for header, var in spec.headers_from_env.items():
            value = environ.get(var)
            if not value:
                raise ConfigError(f"system {spec.name!r}: environment variable {var} (headers_from_env.{header}) "
                                  "is not set; expected the header's value there")
            headers[header] = value
            self._secrets.append(value)
            if " " in value:  # "Bearer sk-...": the token alone must not leak either
                self._secrets.extend(part for part in value.split(" ") if len(part) >= 8)
        self._headers = headers
        self._transport = transport
        self._sleep = sleep
        self.stats = CallStats()

    @overload
    def redact(self, text: str) -> str: ...

    @overload
    def redact(self, text: None) -> None: ...

    def redact(self, text: str | None) -> str | None:
        """``text`` with every secret header value (in the forms ``core.secrets`` lists) and every
        credential-shaped token (``Bearer ...``, ``sk-...``) replaced by ``[redacted]``
        (``core.secrets.scrub_secret``). For error and status texts only: a body that parses is scrubbed
        by :meth:`redact_reply`, which keeps an answer's words about bearer tokens or ``sk-learn``."""
        if not text:
            return text
        return scrub_secret(text, self._secrets, replacement=_REDACTED)

    def _snippet(self, body: str | None) -> str:
        """The start of a body for an error text: scrubbed whole first (so the cut cannot leave part of a
        secret behind), then cut to 200 characters."""
        return (self.redact(body) or "").strip()[:_SNIPPET]

    def redact_reply(self, reply: Any) -> Any:
        """A parsed reply with every secret header value removed from every string, keys included
        (``core.secrets.scrub_reply``; answers keep their other words: no credential patterns here)."""
        return scrub_reply(reply, self._secrets, replacement=_REDACTED, patterns=False) if self._secrets else reply

    def _body(self, q: dict) -> Any:
        template = self.spec.request_template
        if template is None:
            return {"question_id": q["question_id"], "question": q["question"], "user_groups": list(q["user_groups"])}
        return fill_template(template, q["question_id"], q["question"], list(q["user_groups"]))

    def _attempt(self, client: httpx2.Client, body: Any) -> _Attempt:
        """One request on this thread, ended at ``timeout_s`` whatever phase it is in (connect, send, wait,
        body): every socket operation gets at most the time left (``request_deadline``), so when this
        returns the request is over and its connection closed; nothing keeps running behind a retry."""
        timeout = self.spec.timeout_s
        start = time.monotonic()
        with request_deadline(timeout):
            out = self._request(client, body, start)
        out.latency_ms = (time.monotonic() - start) * 1000.0
        return out

    def _request(self, client: httpx2.Client, body: Any, start: float) -> _Attempt:
        timeout = self.spec.timeout_s
        cap = self.spec.max_reply_bytes
        out = _Attempt()
        try:
            with client.stream("POST", self.spec.url, json=body, headers=self._headers,
                               timeout=httpx2.Timeout(timeout)) as resp:
                out.status = resp.status_code
                if self.spec.version_header:
                    version = resp.headers.get(self.spec.version_header)
                    out.version = None if version is None else self.redact(version)[:_VERSION_CHARS]
                out.retry_after = parse_retry_after(resp.headers.get("Retry-After"))
                declared = resp.headers.get("Content-Length")
                if declared and declared.strip().isdigit() and int(declared) > cap:
                    out.too_large = (f"reply of {int(declared)} bytes (Content-Length) is larger than "
                                     f"max_reply_bytes={cap}")
                    return out
                chunks, size = [], 0
                for chunk in resp.iter_bytes():
                    size += len(chunk)
                    if size > cap or resp.num_bytes_downloaded > cap:
                        what = "decompressed" if size > cap else "received"
                        out.too_large = (f"reply larger than max_reply_bytes={cap} ({what} bytes; the body was "
                                         "abandoned there)")
                        return out
                    chunks.append(chunk)
                    if time.monotonic() - start > timeout:
                        raise httpx2.ReadTimeout("body still arriving at the deadline")
                out.body = b"".join(chunks).decode(resp.encoding or "utf-8", errors="replace")
        except (httpx2.TimeoutException, TimeoutError):
            out.status, out.reason = None, f"timeout: no complete reply within timeout_s={timeout:g} s"
        except httpx2.ConnectError as exc:
            out.status, out.reason = None, f"connection failed: {exc or type(exc).__name__}"
        except httpx2.DecodingError as exc:
            out.status, out.reason = None, f"transport error: the body cannot be decoded: {exc}"
        except httpx2.TransportError as exc:
            out.status, out.reason = None, f"transport error: {type(exc).__name__}: {exc}"
        return out

    def _row(self, ctx: RunContext, q: dict, got: _Attempt) -> dict:
        """A 2xx reply as a row, or an error row saying why it is not one."""
        qid = q["question_id"]
        try:
            reply = strict_json(got.body or "")
        except JsonError as exc:
            raise ReplyError(f"system {ctx.system!r}, question {qid!r}: malformed JSON body (HTTP {got.status}, "
                             f"{exc}): {self._snippet(got.body)!r}") from None
        reply = self.redact_reply(reply)
        if self.spec.response_fields:
            row = mapped_to_row(reply, self.spec.response_fields, list(self.spec.abstain_phrases), ctx, qid)
        else:
            row = record_to_row(reply, ctx, qid)
        row["latency_ms"], row["system_version"] = got.latency_ms, got.version
        return row

    def _one(self, client: httpx2.Client, limiter: RateLimiter, ctx: RunContext, q: dict) -> dict:
        body = self._body(q)
        attempts = 0
        while True:
            limiter.wait()
            attempts += 1
            self.stats.count("calls")
            got = self._attempt(client, body)  # the body stays as sent: it is parsed, then scrubbed (_row)
            if got.version:
                self.stats.count("versions", got.version)
            # every path below that does not return sets a reason
            retryable, reason, kind = False, got.reason or "", "transport"
            if got.too_large is not None:
                self.stats.count("errors", "too_large")
                text = f"system {ctx.system!r}, question {q['question_id']!r}: {got.too_large}"
                return error_row(ctx, q["question_id"], self.redact(text), got.latency_ms, got.version)
            if got.reason is not None:
                retryable, kind = True, ("timeout" if got.reason.startswith("timeout") else "connection")
            elif got.status is None:  # not reached: an attempt without a transport failure has a status
                raise RuntimeError("an HTTP attempt ended with neither a status nor a transport failure")
            elif got.status == 429 or got.status >= 500:
                retryable, kind = True, f"http_{got.status}"
                reason = f"HTTP {got.status}: {self._snippet(got.body)!r}"
            elif not 200 <= got.status < 300:
                kind, reason = f"http_{got.status}", f"HTTP {got.status}: {self._snippet(got.body)!r}"
            else:
                try:
                    return self._row(ctx, q, got)
                except ReplyError as exc:
                    kind = ("too_large" if isinstance(exc, ReplyTooLarge) else
                            "malformed_json" if "malformed JSON" in str(exc) else "invalid_reply")
                    self.stats.count("errors", kind)
                    return error_row(ctx, q["question_id"], self.redact(str(exc)), got.latency_ms, got.version)
            if retryable and attempts <= self.spec.max_retries:
                delay = backoff_delay(attempts, self.spec.backoff_s, self.spec.max_backoff_s)
                if got.retry_after is not None:
                    if got.retry_after > self.spec.max_backoff_s:
                        reason += (f"; Retry-After {got.retry_after:g} s is beyond max_backoff_s="
                                   f"{self.spec.max_backoff_s:g} s, not retried")
                    else:
                        delay = max(delay, got.retry_after)
                        self.stats.count("retries")
                        self._sleep(delay)
                        continue
                else:
                    self.stats.count("retries")
                    self._sleep(delay)
                    continue
            self.stats.count("errors", kind)
            text = f"system {ctx.system!r}, question {q['question_id']!r}: {reason} (after {attempts} attempt(s))"
            return error_row(ctx, q["question_id"], self.redact(text), got.latency_ms, got.version)

    def run(self, questions: Sequence[dict], ctx: RunContext) -> list[dict]:
        """Ask every question once (with retries); one row per question, in input order.

        Input: dicts with ``question_id``, ``question``, ``user_groups`` (list of str). Output:
        ``rag_runs`` row dicts. Never raises for a failed call (it is an error row); ``self.stats``
        counts calls, retries and errors by kind afterwards.
        """
        limiter = RateLimiter(self.spec.rate_per_s)
        n = self.spec.concurrency
        # proxies from the environment apply to remote endpoints only: a local service is reached directly
        loopback = httpx2.URL(self.spec.url).host in ("127.0.0.1", "localhost", "::1")
        if self._transport is not None:
            client = httpx2.Client(transport=self._transport, follow_redirects=False, trust_env=not loopback)
        else:  # one connection per worker thread: a request never waits for another's connection
            client = deadline_http_client(self.spec.timeout_s, n, follow_redirects=False, trust_env=not loopback)
        with client:
            return map_in_pool(lambda q: self._one(client, limiter, ctx, q), list(questions), n)
