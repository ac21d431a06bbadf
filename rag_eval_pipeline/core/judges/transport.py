"""HTTP transport of the model judge: one chat-completions call to an OpenAI-compatible endpoint
with a deadline, bounded retries with backoff, a rate limit and a bound on requests in flight.

Client: the official ``openai`` client with its own retries off (``max_retries=0``). This module
retries, bounded (``1 + max_retries`` requests per call) with exponential backoff
(``backoff_s * 2**(attempt-1)``, capped at 30 s; a ``Retry-After`` of a 429 is honoured up to the
same cap), on: timeout, 408/409/429, 5xx, connection errors, and every reply the caller's
validation rejects (unparsable or truncated JSON, refusals, empty replies, schema breaks,
out-of-range values). Other 4xx (401, 403, 404, 400 not caused by ``response_format``) are not retried.

Deadline: ``timeout_s`` bounds each request's *total* time, from opening the connection to the
last byte of the reply. The ``openai`` client's own timeout (httpx's) applies to each socket
operation, so an endpoint trickling one byte every few seconds would hold a request for ever;
here every connect, read and write is given at most the time left before the request's deadline
(a network backend of httpcore that caps each operation's timeout), so such a request ends as a
``timeout`` within ``timeout_s`` plus the scheduling slack of one socket operation. A whole call
therefore lasts at most ``(1 + max_retries) * timeout_s`` plus the backoff waits.

Settings (:func:`transport_settings`): ``timeout_s`` (default 30), ``max_retries`` (3) and
``backoff_s`` (0.5) come from the caller (the configuration's ``judge`` section, through the Dagster
resource), and the environment variables ``RAG_EVAL_JUDGE_TIMEOUT_S``, ``RAG_EVAL_JUDGE_MAX_RETRIES``
and ``RAG_EVAL_JUDGE_BACKOFF_S`` override them; their bounds are the configuration's (one declaration,
``JudgeConfig``). The values in use are in :attr:`ChatTransport.stats`.

Structured output: ``response_format`` ``{"type": "json_schema", ...}`` first; if the server
rejects it (a 400/422 that names the response format or a schema, or a 5xx that names
``response_format``: llama-cpp-python 0.3.36 answers ``json_schema`` with a 500 validation error),
then ``{"type": "json_object", "schema": ...}`` (llama.cpp's extension), then plain
``{"type": "json_object"}``; the first level the server accepts is remembered for the transport's life.

Failure reasons (``stats["errors"]`` counts failed requests, ``stats["failures"]`` calls that ran out
of attempts): ``timeout``, ``connection_error``, ``rate_limited``, ``server_error``,
``http_<code>``, ``auth_error``, ``bad_request``, ``not_found``, ``refusal``, ``truncated``,
``invalid_json``, ``empty_response``, ``schema_mismatch``, ``out_of_range``, ``content_filter``.

Secrets: the API key is given to the client only. Every text that comes back from the endpoint (the
reply's strings: justifications, quotes, claims, labels; its ``model`` field; error messages) goes
through :func:`scrub_secret` before it leaves this module, so a server that echoes the
``Authorization`` header cannot put the key into a label, the cache or a report.
Nothing here imports Dagster.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from rag_eval_pipeline.core.errors import ConfigError, EvalError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.judges.deadline import (
    deadline_http_client,
    request_deadline,
)
from rag_eval_pipeline.core.secrets import scrub_reply, scrub_secret  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

BACKOFF_CAP_S = 30.0
RESPONSE_FORMAT_LEVELS = ("json_schema", "json_object_schema", "json_object")
_REFUSAL = re.compile(
    r"^\s*(I'?m sorry|I am sorry|sorry,|I can(?:no|')t|I cannot|I won'?t|I am unable|I'?m unable|"
    r"As an AI|Lo siento|No puedo|Lamentablemente no)",
    re.IGNORECASE,
)
DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_RETRIES = 3
DEFAULT_BACKOFF_S = 0.5
ENV_TIMEOUT_S = "RAG_EVAL_JUDGE_TIMEOUT_S"
ENV_MAX_RETRIES = "RAG_EVAL_JUDGE_MAX_RETRIES"
ENV_BACKOFF_S = "RAG_EVAL_JUDGE_BACKOFF_S"


# ---------------------------------------------------------------------------------------------
# errors and secrets


class JudgeCallError(EvalError):
    """A judge call failed after its bounded retries (or with a non-retryable error).

    Attributes: ``reason`` (one of the reasons in the module docstring), ``detail`` (scrubbed
    text), ``attempts`` (int). ``str(exc)`` is ``"<reason>: <detail> (after N attempt(s))"`` and
    never contains the API key.
    """

    def __init__(self, reason: str, detail: str = "", attempts: int = 0):
        self.reason, self.detail, self.attempts = reason, detail, attempts
        msg = f"{reason}: {detail}" if detail else reason
        super().__init__(f"{msg} (after {attempts} attempt(s))" if attempts else msg)


class AttemptError(Exception):
    """One failed request: ``reason``, scrubbed ``detail``, whether to retry, an optional wait (seconds)."""

    def __init__(self, reason: str, detail: str, retryable: bool = True, retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.retryable, self.retry_after = reason, detail, retryable, retry_after


# Secret scrubbing is shared with the systems under test: core/secrets.py (re-exported here).


def backoff_delay(attempt: int, base_s: float, cap_s: float = BACKOFF_CAP_S,
                  retry_after: float | None = None) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based): ``base_s * 2**(attempt-1)``,
    at least ``retry_after`` when the server sent one, never more than ``cap_s``.

    Inputs: attempt >= 1, base_s >= 0, cap_s >= 0, retry_after (seconds or None). Output: float in
    [0, cap_s]. Raises ValueError for attempt < 1 or a negative base/cap.
    """
    if attempt < 1 or base_s < 0 or cap_s < 0:
        raise ValueError(f"bad backoff arguments attempt={attempt}, base_s={base_s}, cap_s={cap_s}")
    d = base_s * (2 ** (attempt - 1))
    if retry_after is not None and retry_after > d:
        d = retry_after
    return float(min(d, cap_s))


# ---------------------------------------------------------------------------------------------
# settings


@dataclass(frozen=True)
class TransportSettings:
    """Timeout (seconds per request, total), retries (extra requests per call), backoff (seconds before
    the first retry), and where each came from: ``sources`` maps the name to "environment",
    "configuration" or "default"."""

    timeout_s: float
    max_retries: int
    backoff_s: float
    sources: dict[str, str]


def _limits() -> dict[str, tuple[Any, Any]]:
    """``{name: (type, Key)}`` of the transport's settings, as the configuration declares them."""
    from rag_eval_pipeline.core.config_sections import JudgeConfig
    from rag_eval_pipeline.core.sections import fields_of

    return {f.name: (tp, k) for f, tp, k in fields_of(JudgeConfig) if f.name in ("timeout_s", "max_retries",
                                                                                  "backoff_s")}


def transport_settings(timeout_s: float | None = None, max_retries: int | None = None,
                       backoff_s: float | None = None, environ: Mapping[str, str] | None = None) -> TransportSettings:
    """The judge transport's settings: the environment overrides the given values, which override the defaults.

    Inputs: ``timeout_s``, ``max_retries``, ``backoff_s`` (None = not configured) and ``environ``
    (default ``os.environ``; ``RAG_EVAL_JUDGE_TIMEOUT_S``, ``RAG_EVAL_JUDGE_MAX_RETRIES``,
    ``RAG_EVAL_JUDGE_BACKOFF_S``; an empty variable counts as unset). Output: a
    :class:`TransportSettings`. Every value is checked by the configuration's own declaration of the
    key (``JudgeConfig`` in ``core/config_sections.py``: timeout in (0, 3600] s, retries an integer in
    [0, 20], backoff in [0, 300] s), so what the configuration accepts the transport accepts. For
    anything else (not a number, NaN, infinite, negative, out of range) raises ConfigError naming the
    environment variable and its value, or a JudgeConfigError (a ConfigError and ValueError) naming
    the parameter.
    """
    from pathlib import Path

    from rag_eval_pipeline.core.judges.registry import JudgeConfigError
    from rag_eval_pipeline.core.section_errors import At, SectionError
    from rag_eval_pipeline.core.sections import read_value, value_from_env

    env = os.environ if environ is None else environ
    given = {"timeout_s": timeout_s, "max_retries": max_retries, "backoff_s": backoff_s}
    defaults = {"timeout_s": DEFAULT_TIMEOUT_S, "max_retries": DEFAULT_MAX_RETRIES, "backoff_s": DEFAULT_BACKOFF_S}
    values: dict[str, float] = {}
    sources: dict[str, str] = {}
    for name, (tp, k) in _limits().items():
        raw_env = env.get(k.env) if k.env else None
        error: type[Exception]
        if raw_env is not None and str(raw_env).strip():
            value = value_from_env(str(raw_env).strip(), k.env, tp)
            at, error, sources[name] = At(Path("<environment>"), label=k.env), ConfigError, "environment"
        elif given[name] is not None:
            value, at, error = given[name], At(Path("<judge settings>"), label=name), JudgeConfigError
            sources[name] = "configuration"
        else:
            values[name], sources[name] = float(defaults[name]), "default"
            continue
        try:
            values[name] = read_value(value, tp, k, at)
        except SectionError as exc:
            raise error(exc.problem) from None
    return TransportSettings(float(values["timeout_s"]), int(values["max_retries"]), float(values["backoff_s"]),
                             sources)


# ---------------------------------------------------------------------------------------------
# rate limiting


class TokenBucket:
    """Token-bucket rate limiter shared by threads: at most ``rate_per_s`` acquisitions per second
    on average, bursts of up to ``burst`` at once.

    ``acquire()`` reserves a token and sleeps until it is due (reservations keep FIFO-ish fairness
    without a busy loop). Raises ValueError for a rate or burst <= 0.
    """

    def __init__(self, rate_per_s: float, burst: float = 1.0, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        if not rate_per_s or rate_per_s <= 0 or burst <= 0:
            raise ValueError(f"rate_per_s and burst must be > 0, got {rate_per_s!r}, {burst!r}")
        self.rate, self.burst = float(rate_per_s), float(burst)
        self._clock, self._sleep = clock, sleep
        self._tokens = self.burst
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> float:
        """Take one token, sleeping if none is available. Output: seconds waited (>= 0)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            self._tokens -= 1.0
            wait = 0.0 if self._tokens >= 0 else -self._tokens / self.rate
        if wait > 0:
            self._sleep(wait)
        return wait


# ---------------------------------------------------------------------------------------------
# the transport


class ChatTransport:
    """Chat-completions calls to one endpoint, with deadline, retries, backoff, rate limit and counters.

    Constructor: ``base_url``, ``api_key`` (given to the client only), ``settings``
    (:class:`TransportSettings`), ``concurrency`` (>= 1: most requests in flight at once),
    ``rate_limit_per_s`` (None or > 0 requests/s, token bucket), ``use_json_schema`` (start at the
    json_schema response format; False starts at plain json_object). Raises ValueError for values
    out of range. ``sleep`` (attribute) is the wait between retries (tests replace it).
    """

    def __init__(self, base_url: str, api_key: str, settings: TransportSettings, *, concurrency: int = 4,
                 rate_limit_per_s: float | None = None, use_json_schema: bool = True):
        import openai  # imported here so the core stays importable without the client

        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
        if rate_limit_per_s is not None and rate_limit_per_s <= 0:
            raise ValueError(f"rate_limit_per_s must be None or > 0, got {rate_limit_per_s!r}")
        self._openai = openai
        self.base_url = str(base_url)
        self._secret = api_key or ""
        self.settings = settings
        self.timeout_s, self.max_retries, self.backoff_s = settings.timeout_s, settings.max_retries, settings.backoff_s
        self.concurrency = int(concurrency)
        self.rate_limit_per_s = rate_limit_per_s
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "none", timeout=self.timeout_s,
                                     max_retries=0,
                                     http_client=deadline_http_client(self.timeout_s, self.concurrency))
        self._format_level = 0 if use_json_schema else 2
        self._bucket = TokenBucket(rate_limit_per_s) if rate_limit_per_s else None
        self._inflight = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._stats: dict[str, Any] = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
                                       "errors": {}, "failures": {}, "retries": 0}
        self.sleep: Callable[[float], None] = time.sleep

    @property
    def stats(self) -> dict[str, Any]:
        """A copy of the counters: ``calls`` (HTTP requests sent), ``prompt_tokens``, ``completion_tokens``,
        ``seconds`` (time spent in requests), ``errors`` (reason → failed requests), ``failures`` (reason →
        calls that gave up), ``retries``, ``response_format`` (level in use), and the settings in use:
        ``timeout_s``, ``max_retries``, ``backoff_s`` and ``settings_source`` ("name=source, ...")."""
        with self._lock:
            s = dict(self._stats)
            s["errors"], s["failures"] = dict(s["errors"]), dict(s["failures"])
        s["response_format"] = RESPONSE_FORMAT_LEVELS[self._format_level]
        s["timeout_s"], s["max_retries"], s["backoff_s"] = self.timeout_s, self.max_retries, self.backoff_s
        s["settings_source"] = ", ".join(f"{k}={v}" for k, v in self.settings.sources.items())
        return s

    def scrub(self, text: Any) -> str:
        """``text`` with the API key and key-like tokens removed (:func:`scrub_secret`)."""
        return scrub_secret(text, self._secret)

    def count_failure(self, reason: str) -> None:
        """Count one call that gave up with ``reason`` (for failures outside :meth:`complete`)."""
        self._count("failures", reason)

    def complete(self, task: str, model: str, messages: list[dict], schema: dict,
                 validate: Callable[[Any], dict], *, temperature: float = 0,
                 max_tokens: int | None = None) -> tuple[Any, dict, str]:
        """One call: up to ``1 + max_retries`` requests until a reply passes ``validate``.

        Inputs: ``task`` (names the schema sent and the log lines), ``model`` (requested), the chat
        ``messages``, the reply's JSON ``schema``, ``validate`` (parsed reply → validated dict; raises
        AttemptError to reject it), ``temperature``, ``max_tokens`` (None = the server's limit).
        Output: (the parsed reply with every string scrubbed, the validated dict, the ``model`` the
        reply reported, scrubbed). Raises JudgeCallError (scrubbed) when every attempt fails.
        """
        last: AttemptError | None = None
        attempts = 0
        for attempt in range(self.max_retries + 1):
            if attempt:
                delay = backoff_delay(attempt, self.backoff_s, retry_after=last.retry_after if last else None)
                self._count_scalar("retries")
                log.info("judge %s: retry %d/%d after %s, waiting %.2fs",
                         task, attempt, self.max_retries, last.reason if last else "?", delay)
                if delay > 0:
                    self.sleep(delay)
            attempts += 1
            try:
                obj, reply_model = self._request(task, model, messages, schema, temperature, max_tokens)
                out = validate(obj)
            except AttemptError as e:
                last = e
                self._count("errors", e.reason)
                if not e.retryable:
                    break
                continue
            return obj, out, reply_model
        assert last is not None
        self._count("failures", last.reason)
        err = JudgeCallError(last.reason, self.scrub(last.detail)[:300], attempts)
        log.warning("judge %s failed: %s", task, err)
        raise err

    # -- one request ------------------------------------------------------------------------------
    def _request(self, task: str, model: str, messages: list[dict], schema: dict, temperature: float,
                 max_tokens: int | None) -> tuple[Any, str]:
        """One HTTP request (format fallback included). Output: (parsed, scrubbed JSON, scrubbed reply model)."""
        while True:
            level = self._format_level
            try:
                return self._request_at(task, model, messages, level, schema, temperature, max_tokens)
            except AttemptError as e:
                if e.reason == "format_rejected" and level < len(RESPONSE_FORMAT_LEVELS) - 1:
                    with self._lock:
                        if self._format_level == level:
                            self._format_level = level + 1
                            log.info("server rejected response_format %s; falling back to %s",
                                     RESPONSE_FORMAT_LEVELS[level], RESPONSE_FORMAT_LEVELS[level + 1])
                    continue
                if e.reason == "format_rejected":
                    raise AttemptError("bad_request", e.detail, retryable=False) from None
                raise

    @staticmethod
    def _response_format(task: str, level: int, schema: dict) -> dict:
        kind = RESPONSE_FORMAT_LEVELS[level]
        if kind == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": task, "strict": True, "schema": schema}}
        if kind == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _request_at(self, task: str, model: str, messages: list[dict], level: int, schema: dict,
                    temperature: float, max_tokens: int | None) -> tuple[Any, str]:
        oa = self._openai
        kwargs: dict[str, Any] = {
            "model": model, "messages": messages, "temperature": temperature,
            # sent through extra_body: the same JSON field, but the client does not walk the schema
            # with its typed transform (~5 ms of CPU per call, the bottleneck at high concurrency)
            "extra_body": {"response_format": self._response_format(task, level, schema)},
        }
        if max_tokens:
            kwargs["max_tokens"] = max_tokens
        if self._bucket is not None:
            self._bucket.acquire()
        with self._inflight:
            t0 = time.perf_counter()
            try:
                with request_deadline(self.timeout_s):
                    resp = self._client.chat.completions.create(**kwargs)
            except oa.APITimeoutError:
                raise AttemptError("timeout", f"no complete reply within {self.timeout_s:g}s") from None
            except oa.APIConnectionError as e:
                raise AttemptError("connection_error", self._clean(e)) from None
            except oa.APIStatusError as e:
                raise self._status_error(e, level) from None
            finally:
                with self._lock:
                    self._stats["calls"] += 1
                    self._stats["seconds"] += time.perf_counter() - t0
        usage = getattr(resp, "usage", None)
        if usage is not None:
            with self._lock:
                self._stats["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
                self._stats["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
        reply_model = self.scrub(getattr(resp, "model", None) or model)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise AttemptError("empty_response", "reply has no choices")
        choice = choices[0]
        msg = choice.message
        refusal = getattr(msg, "refusal", None)
        if refusal:
            raise AttemptError("refusal", self._clean(refusal)[:200])
        finish = getattr(choice, "finish_reason", None)
        content = msg.content or ""
        if finish == "content_filter":
            raise AttemptError("content_filter", "the server filtered the reply")
        if finish == "length":
            raise AttemptError("truncated", f"reply cut at the token limit ({len(content)} characters)")
        if not content.strip():
            raise AttemptError("empty_response", "reply has no content")
        return scrub_reply(parse_json(content, self._secret), self._secret), reply_model

    def _status_error(self, e: Any, level: int) -> AttemptError:
        code = int(getattr(e, "status_code", 0) or 0)
        detail = f"HTTP {code}: {self._clean(e)[:200]}"
        can_fall_back = level < len(RESPONSE_FORMAT_LEVELS) - 1
        if can_fall_back and ((code in (400, 422) and _mentions_format(detail))
                              or (code >= 500 and "response_format" in detail)):
            # only a rejection that names the response format moves to the next level: a 400 for
            # another cause (e.g. a prompt longer than the context window) must not downgrade it.
            return AttemptError("format_rejected", detail, retryable=False)
        if code == 429:
            return AttemptError("rate_limited", detail, retry_after=_retry_after(e))
        if code >= 500:
            return AttemptError("server_error", detail)
        if code in (408, 409):
            return AttemptError(f"http_{code}", detail)
        if code in (401, 403):
            return AttemptError("auth_error", detail, retryable=False)
        if code == 404:
            return AttemptError("not_found", detail, retryable=False)
        if code in (400, 422):
            return AttemptError("bad_request", detail, retryable=False)
        return AttemptError(f"http_{code}", detail, retryable=False)

    def _clean(self, e: Any) -> str:
        return self.scrub(e).replace("\n", " ")

    def _count(self, bucket: str, reason: str) -> None:
        with self._lock:
            d = self._stats[bucket]
            d[reason] = d.get(reason, 0) + 1

    def _count_scalar(self, key: str) -> None:
        with self._lock:
            self._stats[key] += 1


def parse_json(content: str, secret: str) -> Any:
    """Parse a reply: plain JSON, JSON in a ``` fence, or the outermost {...} of the text.

    Output: the JSON object (dict). Raises AttemptError: schema_mismatch (JSON that is not an object),
    refusal, truncated, invalid_json; any text quoted in the detail is scrubbed of ``secret``."""
    s = content.strip()
    candidates = [s]
    fence = re.search(r"```(?:json)?\s*(.*?)```", s, re.DOTALL)
    if fence:
        candidates.append(fence.group(1).strip())
    i, j = s.find("{"), s.rfind("}")
    if 0 <= i < j:
        candidates.append(s[i:j + 1])
    first_err: JsonError | None = None
    for c in candidates:
        try:
            obj = strict_json(c)  # the one strict reader: a repeated key or 100,000 brackets is refused
        except JsonError as err:
            if err.reason in ("repeated_key", "too_deep", "bad_value"):
                raise AttemptError("invalid_json", str(err)[:200]) from None
            first_err = first_err or err
            continue
        if not isinstance(obj, dict):
            raise AttemptError("schema_mismatch", f"reply is a JSON {type(obj).__name__}, not an object")
        return obj
    if _REFUSAL.match(s):
        raise AttemptError("refusal", scrub_secret(s, secret)[:200])
    if s.startswith("{") and first_err is not None and (first_err.pos or 0) >= len(s) - 1:
        raise AttemptError("truncated", f"JSON ends early after {len(s)} characters")
    if s.startswith("{") and s.count("{") > s.count("}"):
        raise AttemptError("truncated", f"JSON ends early after {len(s)} characters")
    raise AttemptError("invalid_json", f"not JSON: {scrub_secret(s, secret)[:80]!r}")


def _mentions_format(text: str) -> bool:
    t = text.lower()
    return any(w in t for w in ("response_format", "json_schema", "json schema", "response format", "schema"))


def _retry_after(e: Any) -> float | None:
    try:
        v = e.response.headers.get("retry-after")
        return max(0.0, float(v)) if v is not None else None
    except (AttributeError, TypeError, ValueError):
        return None
