"""A model-based judge for any OpenAI-compatible chat-completions endpoint (llama.cpp, vLLM, OpenAI...).

Procedure (seed ``004_292fd69c3d96947d.txt``; Ragas' *faithfulness*): step 1 asks the model to
decompose the answer into atomic claims (``claim_decomposition``); step 2 asks it to verify the
claims against the retrieved context, each as SUPPORTED / CONTRADICTED / NOT_MENTIONED with a
literal quote and the justification written before the label (``claim_verification``). Partial
support is NOT_MENTIONED; outside knowledge is forbidden. The quote is checked here by code
(:func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`, advisory ``quote_found``) and
again by :func:`rag_eval_pipeline.core.judging.judge_runs`, which downgrades an unverified SUPPORTED.

Prompts are versioned files in ``core/judges/prompts/``: ``<task>.v<N>.txt`` with ``{name}``
placeholders (filled in one pass, so text inside an answer is never re-substituted) and
``<task>.v<N>.schema.json``, the JSON schema of the reply. Each call's cache key carries the
sha256 of that task's two files (prompt bytes, then schema bytes). :attr:`OpenAICompatibleJudge.prompt_sha256`
(the value stored on every label) is the sha256 of the concatenated bytes of, in this order:
``claim_decomposition.v1.txt``, ``claim_decomposition.v1.schema.json``,
``claim_verification.v1.txt``, ``claim_verification.v1.schema.json`` — the files
:meth:`~OpenAICompatibleJudge.judge` uses. Editing any of them changes it.

Transport: the official ``openai`` client with its own retries off (``max_retries=0``); this module
retries, bounded (``1 + max_retries`` attempts per call) with exponential backoff
(``backoff_s * 2**(attempt-1)``, capped at 30 s; a ``Retry-After`` of a 429 is honoured up to the
same cap), on: timeout, 408/409/429, 5xx, connection errors, unparsable or truncated JSON, refusals,
empty replies, replies that break the schema or hold out-of-range values. Other 4xx (401, 403, 404,
400 not caused by ``response_format``) are not retried. Structured output: ``response_format``
``{"type": "json_schema", ...}`` first; if the server rejects it (400/422), then
``{"type": "json_object", "schema": ...}`` (llama.cpp's extension), then plain
``{"type": "json_object"}``; the first level the server accepts is remembered for the judge's life.
The schema sent fixes the length of the reply's array where the inputs do (``minItems`` =
``maxItems`` = claims to verify, chunks to rate, questions asked for). A rejection is a 400/422
that names the response format or a schema, or a 5xx that names
``response_format`` (llama-cpp-python 0.3.36 answers ``json_schema`` with a 500 validation error).
Every reply is parsed and validated in code whatever the level.

Failure reasons (``stats["errors"]`` counts failed attempts, ``stats["failures"]`` calls that ran out
of attempts): ``timeout``, ``connection_error``, ``rate_limited``, ``server_error``,
``http_<code>``, ``auth_error``, ``bad_request``, ``not_found``, ``refusal``, ``truncated``,
``invalid_json``, ``empty_response``, ``schema_mismatch``, ``out_of_range``, ``content_filter``.
:meth:`~OpenAICompatibleJudge.judge` never raises for them: it returns an AnswerJudgement with
status "judge_error" whose ClaimVerdicts are JUDGE_ERROR with ``error = "<reason>: <detail>"``.
The other methods (:meth:`~OpenAICompatibleJudge.holistic`, ...) raise :class:`JudgeCallError`.

Cache (optional :class:`~rag_eval_pipeline.core.judges.cache.JudgeCache`): one entry per call, keyed
by the requested model name, the task's prompt sha256 and the call's inputs (question/answer/
contexts/claims as given, temperature, max_tokens, a render version), holding the raw JSON reply
and the reply's ``model`` version; a hit is validated again like a fresh reply. ``repeat`` > 0
never reads the cache (it still writes, under a key with the repeat). Failed calls are not stored.

Secrets: the API key is given to the client only. It is never logged, and every reason, message
and exception text leaving this module goes through :func:`scrub_secret`, which removes the key,
``Bearer`` tokens, ``sk-...`` strings and what follows "API key provided:" (servers echo keys).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from importlib import resources
from typing import Any

from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.judges.base import (
    HOLISTIC_SCORES,
    AnswerJudgement,
    ClaimVerdict,
    holistic_label,
)
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.claims import split_claims
from rag_eval_pipeline.core.judges.quotes import normalise_text, quote_in_context

__all__ = [
    "OpenAICompatibleJudge",
    "JudgeCallError",
    "Prompt",
    "load_prompt",
    "TokenBucket",
    "judge_many",
    "backoff_delay",
    "scrub_secret",
    "JUDGE_NAME",
    "PROMPT_VERSION",
    "JUDGE_TASKS",
    "CLAIM_VERDICTS",
    "CORRECTNESS_STATUSES",
    "ALL_TASKS",
]

log = logging.getLogger(__name__)

JUDGE_NAME = "openai_compatible"
PROMPT_VERSION = "v1"
#: The prompt files :meth:`OpenAICompatibleJudge.judge` uses, in ``prompt_sha256`` order.
JUDGE_TASKS = ("claim_decomposition", "claim_verification")
ALL_TASKS = JUDGE_TASKS + (
    "holistic_faithfulness", "answer_relevance", "reverse_questions", "context_relevance", "correctness",
)
#: Verdicts a model may give (JUDGE_ERROR is this module's, never the model's).
CLAIM_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")
CORRECTNESS_STATUSES = ("COVERED", "MISSING", "CONTRADICTED")
#: Bumped when the way inputs are rendered into the prompt changes (it is part of every cache key).
_RENDER_VERSION = 1
_BACKOFF_CAP_S = 30.0
_RESPONSE_FORMAT_LEVELS = ("json_schema", "json_object_schema", "json_object")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_REFUSAL = re.compile(
    r"^\s*(I'?m sorry|I am sorry|sorry,|I can(?:no|')t|I cannot|I won'?t|I am unable|I'?m unable|"
    r"As an AI|Lo siento|No puedo|Lamentablemente no)",
    re.IGNORECASE,
)


# ---------------------------------------------------------------------------------------------
# errors, secrets, backoff


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


class _AttemptError(Exception):
    """One failed attempt: ``reason``, scrubbed ``detail``, whether to retry, an optional wait."""

    def __init__(self, reason: str, detail: str, retryable: bool = True, retry_after: float | None = None):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.retryable, self.retry_after = reason, detail, retryable, retry_after


_SECRET_PATTERNS = (
    re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"),
    re.compile(r"(?i)(api[ _-]?key(?:\s+provided)?\s*[:=]\s*)[^\s\"',;]+"),
    re.compile(r"()\bsk-[A-Za-z0-9*_.\-]{4,}"),
)


def scrub_secret(text: Any, secret: str | None = None) -> str:
    """Return ``str(text)`` with secrets replaced by ``***``.

    Removes: every occurrence of ``secret`` (when it has 4+ characters; shorter strings are not
    secrets and replacing them would garble the text), ``Bearer <token>``, ``api key provided:
    <value>`` / ``api_key=<value>`` and any ``sk-...`` token. Input: any value (None → "") and the
    secret (str or None). Output: str. Never raises.
    """
    s = "" if text is None else str(text)
    if secret and len(secret) >= 4:
        s = s.replace(secret, "***")
    for pat in _SECRET_PATTERNS:
        s = pat.sub(lambda m: m.group(1) + "***", s)
    return s


def backoff_delay(attempt: int, base_s: float, cap_s: float = _BACKOFF_CAP_S,
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
# prompts


@dataclass(frozen=True)
class Prompt:
    """One versioned prompt: ``task``, ``version``, template ``text``, JSON ``schema`` (dict),
    ``sha256`` (hex, of the prompt file's bytes followed by the schema file's bytes) and ``raw``
    (those concatenated bytes)."""

    task: str
    version: str
    text: str
    schema: dict
    sha256: str
    raw: bytes

    @property
    def placeholders(self) -> set[str]:
        """Names of the ``{placeholders}`` in the template."""
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        """Fill the ``{name}`` placeholders in one pass (substituted text is never re-scanned;
        braces not naming a placeholder, as in the JSON example, stay). Raises KeyError naming a
        placeholder with no value."""
        missing = self.placeholders - set(values)
        if missing:
            raise KeyError(f"prompt {self.task}.{self.version}: no value for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
                                self.text)


def load_prompt(task: str, version: str = PROMPT_VERSION) -> Prompt:
    """Load ``prompts/<task>.<version>.txt`` and its ``.schema.json`` from the package.

    Input: a task name (one of ``ALL_TASKS`` for the shipped prompts) and a version ("v1").
    Output: a :class:`Prompt`. Raises FileNotFoundError when a file is missing, ValueError when the
    schema is not a JSON object.
    """
    base = resources.files("rag_eval_pipeline.core.judges") / "prompts"
    text_bytes = (base / f"{task}.{version}.txt").read_bytes()
    schema_bytes = (base / f"{task}.{version}.schema.json").read_bytes()
    schema = json.loads(schema_bytes)
    if not isinstance(schema, dict):
        raise ValueError(f"prompts/{task}.{version}.schema.json is not a JSON object")
    raw = text_bytes + schema_bytes
    return Prompt(task, version, text_bytes.decode("utf-8"), schema, hashlib.sha256(raw).hexdigest(), raw)


def _render_chunks(contexts: Sequence[str]) -> str:
    return "\n".join(f'<chunk id="{i}">\n{c}\n</chunk>' for i, c in enumerate(contexts, start=1))


def _render_claims(claims: Sequence[str]) -> str:
    return "\n".join(f'<claim id="{i}">{c}</claim>' for i, c in enumerate(claims, start=1))


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
# reply validation (one function per task; raise _AttemptError("schema_mismatch"/"out_of_range"))


def _bad(reason: str, detail: str) -> _AttemptError:
    return _AttemptError(reason, detail, retryable=True)


def _get(obj: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _bad("schema_mismatch", f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and bool not in _as_tuple(typ)):
        raise _bad("schema_mismatch", f"{where}: field {key!r} has type {type(v).__name__}")
    return v


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    return None


def _label(v: Any, allowed: Sequence[str], where: str) -> str:
    if not isinstance(v, str):
        raise _bad("schema_mismatch", f"{where}: label is {type(v).__name__}, not a string")
    lab = re.sub(r"[\s-]+", "_", v.strip().upper())
    if lab not in allowed:
        raise _bad("out_of_range", f"{where}: {v[:40]!r} is not one of {list(allowed)}")
    return lab


def _by_id(items: list, n: int, where: str) -> list[dict]:
    """Entries ordered by their 1-based ``id`` (exactly ids 1..n); positional when no entry has one."""
    if not all(isinstance(it, dict) for it in items):
        raise _bad("schema_mismatch", f"{where}: entries must be objects")
    if all("id" not in it for it in items):
        if len(items) != n:
            raise _bad("schema_mismatch", f"{where}: {len(items)} entries for {n} items")
        return list(items)
    ids = [_as_int(it.get("id")) for it in items]
    if any(i is None for i in ids):
        raise _bad("schema_mismatch", f"{where}: an entry has no integer id")
    if any(not 1 <= i <= n for i in ids):
        raise _bad("out_of_range", f"{where}: ids {sorted(set(ids))} outside 1..{n}")
    if sorted(set(ids)) != list(range(1, n + 1)):
        raise _bad("schema_mismatch", f"{where}: ids {sorted(ids)} do not cover 1..{n} exactly once")
    out: list[dict] = [{}] * n
    for i, it in zip(ids, items):
        out[i - 1] = it
    return out


def _text(v: Any) -> str:
    return "" if v is None else str(v)


_WORDS = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(normalise_text(text)))


def _validate_decomposition(obj: Any, max_claims: int, source: str = "") -> dict:
    """Claims: strings, trimmed, duplicates dropped; each must share at least one word with the
    answer or question (``source``) — a claim with none was not taken from the answer (small models
    copy the prompt's example) and makes the reply out_of_range."""
    claims = _get(obj, "claims", list, "claims")
    source_words = _words(source) if source else None
    out, seen = [], set()
    for i, c in enumerate(claims, start=1):
        if not isinstance(c, str):
            raise _bad("schema_mismatch", f"claims[{i}] is {type(c).__name__}, not a string")
        c = c.strip()
        if c and source_words is not None and not (_words(c) & source_words):
            raise _bad("out_of_range", f"claims[{i}] {c[:60]!r} shares no word with the answer")
        if c and c not in seen:
            seen.add(c)
            out.append(c)
    if len(out) > max_claims:
        raise _bad("out_of_range", f"{len(out)} claims, more than max_claims={max_claims}")
    return {"claims": out}


def _validate_verification(obj: Any, n: int) -> dict:
    entries = _by_id(_get(obj, "verdicts", list, "verdicts"), n, "verdicts")
    out = []
    for i, e in enumerate(entries, start=1):
        verdict = _label(e.get("verdict"), CLAIM_VERDICTS, f"verdicts[id={i}].verdict")
        quote = e.get("quote")
        if quote is not None and not isinstance(quote, str):
            raise _bad("schema_mismatch", f"verdicts[id={i}].quote is {type(quote).__name__}")
        out.append({"verdict": verdict, "quote": (quote or "").strip() or None,
                    "justification": _text(e.get("justification")).strip()})
    return {"verdicts": out}


def _validate_holistic(obj: Any) -> dict:
    label = _label(_get(obj, "label", str, "holistic"), tuple(HOLISTIC_SCORES), "holistic.label")
    return {"label": label, "justification": _text(obj.get("justification")).strip()}


def _validate_relevance(obj: Any) -> dict:
    if not isinstance(obj, dict) or "score" not in obj:
        raise _bad("schema_mismatch", "answer_relevance: missing field 'score'")
    score = _as_int(obj["score"])
    if score is None:
        raise _bad("schema_mismatch", f"answer_relevance.score {str(obj['score'])[:20]!r} is not an integer")
    if not 1 <= score <= 5:
        raise _bad("out_of_range", f"answer_relevance.score {score} outside 1..5")
    return {"score": score, "justification": _text(obj.get("justification")).strip()}


def _validate_questions(obj: Any, n: int) -> dict:
    qs = [q.strip() for q in _get(obj, "questions", list, "questions") if isinstance(q, str) and q.strip()]
    if len(qs) < n:
        raise _bad("schema_mismatch", f"{len(qs)} usable questions, {n} asked for")
    return {"questions": qs[:n]}


def _validate_context_relevance(obj: Any, n: int) -> dict:
    entries = _by_id(_get(obj, "chunks", list, "chunks"), n, "chunks")
    needed = []
    for i, e in enumerate(entries, start=1):
        v = e.get("needed")
        if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no"):
            v = v.strip().lower() in ("true", "yes")
        if not isinstance(v, bool):
            raise _bad("out_of_range", f"chunks[id={i}].needed is {str(v)[:20]!r}, not true/false")
        needed.append(v)
    return {"needed": needed}


def _validate_correctness(obj: Any) -> dict:
    facts = []
    for i, f in enumerate(_get(obj, "facts", list, "facts"), start=1):
        fact = _get(f, "fact", str, f"facts[{i}]").strip()
        status = _label(f.get("status"), CORRECTNESS_STATUSES, f"facts[{i}].status")
        facts.append({"fact": fact, "status": status, "justification": _text(f.get("justification")).strip()})
    return {"facts": facts}


# ---------------------------------------------------------------------------------------------
# the judge


class OpenAICompatibleJudge:
    """Claim-level faithfulness judge (and helper metrics) over an OpenAI-compatible endpoint.

    Constructor: ``base_url`` (e.g. "http://127.0.0.1:8080/v1"), ``model`` (requested model name),
    ``api_key`` (str; kept by the client only, never logged or returned), ``timeout_s`` (> 0,
    per request), ``max_retries`` (>= 0 extra attempts per call), ``backoff_s`` (>= 0, first retry
    wait), ``concurrency`` (>= 1: most requests in flight at once from this judge; also the default
    of :func:`judge_many`), ``rate_limit_per_s`` (None or > 0 requests/s, token bucket),
    ``cache`` (a :class:`JudgeCache` or None), ``use_json_schema`` (start at the json_schema
    response format; False starts at plain json_object), ``temperature`` (>= 0), ``max_tokens``
    (reply limit per call), ``claims_per_call`` (claims verified per request), ``max_claims``
    (more claims in one answer is an out_of_range reply). Raises ValueError for values out of range.

    Protocol attributes: ``name`` = "openai_compatible"; ``model`` = the exact version the server
    reported in its last reply's ``model`` field (the requested name until a reply or cache hit
    arrives; ``models_seen`` lists every version seen); ``prompt_sha256`` (module docstring).
    ``stats`` is a snapshot dict: ``calls`` (HTTP requests sent), ``prompt_tokens``,
    ``completion_tokens``, ``seconds`` (time spent in requests), ``errors`` (reason → failed
    attempts), ``failures`` (reason → calls that gave up), ``retries``, ``cache_hits``,
    ``cache_writes``, ``response_format`` (level in use).
    """

    name = JUDGE_NAME
    #: ``judge()`` takes ``repeat=`` (callers such as ``judge_runs`` should pass it when this is True,
    #: so that repeat 1, 2, ... are fresh judgements instead of cache hits of repeat 0).
    accepts_repeat = True

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str,
        timeout_s: float = 30,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        concurrency: int = 4,
        rate_limit_per_s: float | None = None,
        cache: JudgeCache | None = None,
        use_json_schema: bool = True,
        temperature: float = 0,
        *,
        max_tokens: int | None = 1024,
        claims_per_call: int = 20,
        max_claims: int = 100,
    ):
        import openai  # imported here so the core stays importable without the client

        if not timeout_s or timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        if max_retries < 0 or backoff_s < 0 or concurrency < 1 or temperature < 0:
            raise ValueError("max_retries and backoff_s must be >= 0, concurrency >= 1, temperature >= 0")
        if claims_per_call < 1 or max_claims < 1:
            raise ValueError("claims_per_call and max_claims must be >= 1")
        if rate_limit_per_s is not None and rate_limit_per_s <= 0:
            raise ValueError(f"rate_limit_per_s must be None or > 0, got {rate_limit_per_s!r}")
        self._openai = openai
        self.base_url = str(base_url)
        self.requested_model = str(model)
        self._secret = api_key or ""
        self._client = openai.OpenAI(base_url=self.base_url, api_key=api_key or "none",
                                     timeout=float(timeout_s), max_retries=0)
        self.timeout_s, self.max_retries, self.backoff_s = float(timeout_s), int(max_retries), float(backoff_s)
        self.concurrency = int(concurrency)
        self.rate_limit_per_s = rate_limit_per_s
        self.cache = cache
        self.temperature, self.max_tokens = float(temperature), max_tokens
        self.claims_per_call, self.max_claims = int(claims_per_call), int(max_claims)
        self._prompts = {t: load_prompt(t) for t in ALL_TASKS}
        self.prompt_sha256 = hashlib.sha256(b"".join(self._prompts[t].raw for t in JUDGE_TASKS)).hexdigest()
        self._format_level = 0 if use_json_schema else 2
        self._bucket = TokenBucket(rate_limit_per_s) if rate_limit_per_s else None
        self._inflight = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self._model_seen: str | None = None
        self._models_seen: set[str] = set()
        self._stats: dict[str, Any] = {
            "calls": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0,
            "errors": {}, "failures": {}, "retries": 0, "cache_hits": 0, "cache_writes": 0,
        }
        self._sleep = time.sleep

    # -- identity -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return f"OpenAICompatibleJudge(base_url={self.base_url!r}, model={self.requested_model!r})"

    @property
    def model(self) -> str:
        """Exact model version from the last reply (or cache entry); the requested name before any."""
        return self._model_seen or self.requested_model

    @property
    def models_seen(self) -> list[str]:
        """Every model version reported so far, sorted (more than one = the server changed model)."""
        with self._lock:
            return sorted(self._models_seen)

    @property
    def stats(self) -> dict[str, Any]:
        """A copy of the counters (see the class docstring)."""
        with self._lock:
            s = dict(self._stats)
            s["errors"], s["failures"] = dict(s["errors"]), dict(s["failures"])
            s["response_format"] = _RESPONSE_FORMAT_LEVELS[self._format_level]
            return s

    def prompt_files(self) -> dict[str, str]:
        """Task → sha256 of its prompt + schema files, for every task this judge can run."""
        return {t: p.sha256 for t, p in self._prompts.items()}

    # -- faithfulness ---------------------------------------------------------------------------
    def judge(self, question: str, answer: str, contexts: list[str], *, repeat: int = 0) -> AnswerJudgement:
        """Judge one answer claim by claim (seed 004; Ragas faithfulness = SUPPORTED / all claims).

        Inputs: the question (str, may be ""), the answer (str), the retrieved chunk texts in rank
        order, ``repeat`` (int >= 0; above 0 the cache is not read). Output: AnswerJudgement:
        "no_retrieval" (no non-blank context; zero calls), "no_claims" (blank answer: zero calls;
        or the model found no claim), "judged" (one ClaimVerdict per claim, ids "c1", "c2", ...,
        ``quote_found`` checked in code; ``holistic`` from the verdicts by
        :func:`~rag_eval_pipeline.core.judges.base.holistic_label`, no extra call), or
        "judge_error" (decomposition failed: one JUDGE_ERROR verdict "c0" for the whole answer; or
        every claim's verification failed). Claims whose verification failed while others
        succeeded are JUDGE_ERROR with the reason, status "judged". Never raises.
        """
        try:
            return self._judge(question, answer, contexts, repeat)
        except Exception as exc:  # noqa: BLE001 - a judge must never raise out of judge()
            reason = scrub_secret(f"internal_error: {type(exc).__name__}: {exc}", self._secret)[:500]
            log.warning("judge failed unexpectedly: %s", reason)
            self._count("failures", "internal_error")
            return AnswerJudgement("judge_error", [ClaimVerdict(
                "c0", answer or "", "JUDGE_ERROR", None, False, "the judge failed", error=reason)])

    def _judge(self, question: str, answer: str, contexts: list[str], repeat: int) -> AnswerJudgement:
        ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
        if not any(c.strip() for c in ctx):
            return AnswerJudgement("no_retrieval")
        if not (answer and answer.strip()):
            return AnswerJudgement("no_claims")
        try:
            dec = self._call("claim_decomposition", {"question": question or "", "answer": answer}, repeat,
                             lambda o: _validate_decomposition(o, self.max_claims, f"{question or ''} {answer}"))
        except JudgeCallError as e:
            return AnswerJudgement("judge_error", [ClaimVerdict(
                "c0", answer, "JUDGE_ERROR", None, False, "claim decomposition failed", error=str(e))])
        claims = dec["claims"]
        if not claims:
            return AnswerJudgement("no_claims")
        verdicts = self.verify_claims(claims, ctx, repeat=repeat)
        labels = [v.verdict for v in verdicts]
        status = "judge_error" if all(v == "JUDGE_ERROR" for v in labels) else "judged"
        return AnswerJudgement(status, verdicts, holistic_label(labels))

    def verify_claims(self, claims: Sequence[str], contexts: list[str], *, repeat: int = 0) -> list[ClaimVerdict]:
        """Step 2 alone: verify given claims against the retrieved texts (seed 004; also usable for
        the golden set's reference claims or a rule-based split).

        Inputs: claims (non-empty strings), contexts (retrieved texts in rank order), ``repeat``.
        Output: one ClaimVerdict per claim, in order, ids "c1", "c2", ...: SUPPORTED /
        CONTRADICTED / NOT_MENTIONED with ``quote_found`` checked in code, or JUDGE_ERROR with
        ``error = "<reason>: <detail>"`` for the claims of a request that failed after retries
        (``claims_per_call`` claims per request). Raises ValueError when there is no claim or no
        non-blank context; never raises for server faults.
        """
        claims = [str(c) for c in claims]
        if not claims or not all(c.strip() for c in claims):
            raise ValueError("verify_claims needs at least one claim and no blank claim")
        ctx = self._need_contexts(contexts)
        verdicts: list[ClaimVerdict] = []
        for start in range(0, len(claims), self.claims_per_call):
            batch = claims[start:start + self.claims_per_call]
            try:
                out = self._call("claim_verification", {"contexts": ctx, "claims": batch}, repeat,
                                 lambda o, n=len(batch): _validate_verification(o, n))
            except JudgeCallError as e:
                verdicts += [ClaimVerdict(f"c{start + i}", c, "JUDGE_ERROR", None, False,
                                          "claim verification failed", error=str(e))
                             for i, c in enumerate(batch, start=1)]
                continue
            for i, (c, v) in enumerate(zip(batch, out["verdicts"]), start=1):
                verdicts.append(ClaimVerdict(f"c{start + i}", c, v["verdict"], v["quote"],
                                             quote_in_context(v["quote"], ctx), v["justification"]))
        return verdicts

    # -- other metrics --------------------------------------------------------------------------
    def holistic(self, question: str, answer: str, contexts: list[str], *, repeat: int = 0) -> str:
        """Whole-answer faithfulness label, one call (seed ``003_9cfbf16fe7b371c5.txt``).

        Inputs: question, answer, non-empty retrieved texts. Output: "YES" | "PARTIAL" | "NO"
        (score with :data:`~rag_eval_pipeline.core.judges.base.HOLISTIC_SCORES`: 1 / 0.5 / 0).
        Unlike the seed's parser, an unparsable reply is retried, never read as "NO". Raises
        ValueError for empty contexts, JudgeCallError when the call fails after retries.
        """
        ctx = self._need_contexts(contexts)
        out = self._call("holistic_faithfulness",
                         {"question": question or "", "answer": answer or "", "contexts": ctx}, repeat,
                         _validate_holistic)
        return out["label"]

    def answer_relevance(self, question: str, answer: str, *, repeat: int = 0) -> int:
        """How well the answer addresses the question, 1..5 (seed 003's twin metric; the
        Ragas *answer_relevancy* idea without embeddings). Correctness is not judged.

        Output: int in 1..5. Raises JudgeCallError (including an out-of-range score after retries).
        """
        return self._call("answer_relevance", {"question": question or "", "answer": answer or ""}, repeat,
                          _validate_relevance)["score"]

    def reverse_questions(self, answer: str, n: int = 3, *, repeat: int = 0) -> list[str]:
        """``n`` questions the answer would reply to, in the answer's language (Ragas
        *answer_relevancy*: embed them and average their cosine similarity to the real question;
        seed 004 "relevancia de la respuesta"). Output: list of exactly ``n`` non-empty strings.
        Raises ValueError for n < 1, JudgeCallError when the call fails after retries.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        return self._call("reverse_questions", {"answer": answer or "", "n": str(n)}, repeat,
                          lambda o: _validate_questions(o, n))["questions"]

    def context_relevance(self, question: str, contexts: list[str], *, repeat: int = 0) -> float:
        """Share of the retrieved chunks needed to answer the question (seed 004 "relevancia del
        contexto"; Ragas *context_relevancy*, ARES' context relevance), one call.

        Output: float in [0, 1] = needed chunks / retrieved chunks. Raises ValueError for empty
        contexts, JudgeCallError when the call fails after retries.
        """
        ctx = self._need_contexts(contexts)
        needed = self._call("context_relevance", {"question": question or "", "contexts": ctx}, repeat,
                            lambda o: _validate_context_relevance(o, len(ctx)))["needed"]
        return sum(needed) / len(needed)

    def correctness(self, answer: str, reference: str, *, repeat: int = 0) -> dict:
        """Compare an answer with a reference answer to catch omissions and contradictions (seed 004
        "Límites": only a reference catches what an answer leaves out), one call.

        Output: dict with ``facts`` (list of {fact, status COVERED/MISSING/CONTRADICTED,
        justification}), ``n_facts``, ``coverage`` (COVERED / facts, None without facts),
        ``omissions`` and ``contradictions`` (lists of fact texts), ``judge_model``.
        Raises ValueError for a blank reference, JudgeCallError when the call fails after retries.
        """
        if not (reference and reference.strip()):
            raise ValueError("correctness needs a non-blank reference answer")
        facts = self._call("correctness", {"answer": answer or "", "reference": reference}, repeat,
                           _validate_correctness)["facts"]
        n = len(facts)
        return {
            "facts": facts,
            "n_facts": n,
            "coverage": (sum(f["status"] == "COVERED" for f in facts) / n) if n else None,
            "omissions": [f["fact"] for f in facts if f["status"] == "MISSING"],
            "contradictions": [f["fact"] for f in facts if f["status"] == "CONTRADICTED"],
            "judge_model": self.model,
        }

    @staticmethod
    def _need_contexts(contexts: list[str]) -> list[str]:
        ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
        if not any(c.strip() for c in ctx):
            raise ValueError("this metric needs at least one non-blank retrieved context")
        return ctx

    # -- cost estimate --------------------------------------------------------------------------
    def dry_run_estimate(self, items: Iterable[Sequence]) -> dict:
        """Estimate what :meth:`judge` would cost over ``items`` without calling the server.

        Input: iterable of ``(question, answer, contexts)``. Output: dict ``calls`` (requests: 0 for
        an item with no context or a blank answer; else 1 decomposition + one verification per
        ``claims_per_call`` claims, claims counted by the rule-based
        :func:`~rag_eval_pipeline.core.judges.claims.split_claims` since the model's split is
        unknown), ``prompt_tokens_est`` (sum over those requests of ceil(characters of the rendered
        prompt / 4), the usual ~4 characters per token rule for English; Spanish runs ~10-20 %
        higher in tokens), ``cached_calls`` (of ``calls``, decomposition requests already in the
        cache), ``items``. Makes no network call. Raises ValueError for a malformed item.
        """
        calls = tokens = cached = n_items = 0
        dec_p, ver_p = self._prompts["claim_decomposition"], self._prompts["claim_verification"]
        for item in items:
            n_items += 1
            try:
                question, answer, contexts = item
            except (TypeError, ValueError):
                raise ValueError(f"item {n_items}: expected (question, answer, contexts)") from None
            ctx = [c if isinstance(c, str) else "" for c in (contexts or [])]
            if not any(c.strip() for c in ctx) or not (answer and answer.strip()):
                continue
            calls += 1
            tokens += math.ceil(len(dec_p.render(question=question or "", answer=answer)) / 4)
            if self.cache is not None and self.cache.lookup(
                    self.requested_model, dec_p.sha256,
                    self._inputs({"question": question or "", "answer": answer})) is not None:
                cached += 1
            claims = split_claims(answer) or [answer]
            rendered_ctx = _render_chunks(ctx)
            for s in range(0, len(claims), self.claims_per_call):
                calls += 1
                tokens += math.ceil(len(ver_p.render(
                    contexts=rendered_ctx, claims=_render_claims(claims[s:s + self.claims_per_call]))) / 4)
        return {"calls": calls, "prompt_tokens_est": tokens, "cached_calls": cached, "items": n_items}

    # -- one call, with cache and retries --------------------------------------------------------
    def _inputs(self, values: dict) -> dict:
        return {**values, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "render": _RENDER_VERSION}

    def _render(self, prompt: Prompt, values: dict) -> str:
        v = dict(values)
        if "contexts" in v:
            v["contexts"] = _render_chunks(v["contexts"])
        if "claims" in v:
            v["claims"] = _render_claims(v["claims"])
        return prompt.render(**v)

    def _call(self, task: str, values: dict, repeat: int, validate: Callable[[Any], dict]) -> dict:
        """Run one task: cache read (repeat 0), else up to 1 + max_retries attempts; cache write.
        Output: the validated reply dict. Raises JudgeCallError (scrubbed) when every attempt fails."""
        prompt = self._prompts[task]
        inputs = self._inputs(values)
        if self.cache is not None:
            hit = self.cache.lookup(self.requested_model, prompt.sha256, inputs, repeat)
            if hit is not None:
                try:
                    out = validate(hit["output"])
                except (_AttemptError, KeyError, TypeError):
                    out = None  # an entry this code no longer accepts: ask again
                if out is not None:
                    self._note_model(hit.get("model"))
                    self._count_scalar("cache_hits")
                    return out
        messages = [{"role": "user", "content": self._render(prompt, values)}]
        schema = _sized_schema(task, prompt.schema, values)
        last: _AttemptError | None = None
        attempts = 0
        for attempt in range(self.max_retries + 1):
            if attempt:
                delay = backoff_delay(attempt, self.backoff_s, retry_after=last.retry_after if last else None)
                self._count_scalar("retries")
                log.info("judge %s: retry %d/%d after %s, waiting %.2fs",
                         task, attempt, self.max_retries, last.reason if last else "?", delay)
                if delay > 0:
                    self._sleep(delay)
            attempts += 1
            try:
                obj, model = self._request(prompt, messages, schema)
                out = validate(obj)
            except _AttemptError as e:
                last = e
                self._count("errors", e.reason)
                if not e.retryable:
                    break
                continue
            self._note_model(model)
            if self.cache is not None:
                # the raw reply is stored and validated again on every hit, so an entry written by
                # an older version of the validation rules is never trusted blindly
                self.cache.store(self.requested_model, prompt.sha256, inputs,
                                 {"output": obj, "model": model}, repeat)
                self._count_scalar("cache_writes")
            return out
        assert last is not None
        self._count("failures", last.reason)
        err = JudgeCallError(last.reason, scrub_secret(last.detail, self._secret)[:300], attempts)
        log.warning("judge %s failed: %s", task, err)
        raise err

    def _request(self, prompt: Prompt, messages: list[dict], schema: dict) -> tuple[Any, str]:
        """One HTTP request (format fallback included). Output: (parsed JSON, reply model)."""
        while True:
            level = self._format_level
            try:
                return self._request_at(prompt, messages, level, schema)
            except _AttemptError as e:
                if e.reason == "format_rejected" and level < len(_RESPONSE_FORMAT_LEVELS) - 1:
                    with self._lock:
                        if self._format_level == level:
                            self._format_level = level + 1
                            log.info("server rejected response_format %s; falling back to %s",
                                     _RESPONSE_FORMAT_LEVELS[level], _RESPONSE_FORMAT_LEVELS[level + 1])
                    continue
                if e.reason == "format_rejected":
                    raise _AttemptError("bad_request", e.detail, retryable=False) from None
                raise

    def _response_format(self, prompt: Prompt, level: int, schema: dict) -> dict:
        kind = _RESPONSE_FORMAT_LEVELS[level]
        if kind == "json_schema":
            return {"type": "json_schema",
                    "json_schema": {"name": prompt.task, "strict": True, "schema": schema}}
        if kind == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _request_at(self, prompt: Prompt, messages: list[dict], level: int, schema: dict) -> tuple[Any, str]:
        oa = self._openai
        kwargs: dict[str, Any] = {
            "model": self.requested_model, "messages": messages, "temperature": self.temperature,
            # sent through extra_body: the same JSON field, but the client does not walk the schema
            # with its typed transform (~5 ms of CPU per call, the bottleneck at high concurrency)
            "extra_body": {"response_format": self._response_format(prompt, level, schema)},
        }
        if self.max_tokens:
            kwargs["max_tokens"] = self.max_tokens
        if self._bucket is not None:
            self._bucket.acquire()
        with self._inflight:
            t0 = time.perf_counter()
            try:
                resp = self._client.chat.completions.create(**kwargs)
            except oa.APITimeoutError:
                raise _AttemptError("timeout", f"no reply within {self.timeout_s:g}s") from None
            except oa.APIConnectionError as e:
                raise _AttemptError("connection_error", self._clean(e)) from None
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
        model = str(getattr(resp, "model", None) or self.requested_model)
        choices = getattr(resp, "choices", None) or []
        if not choices:
            raise _AttemptError("empty_response", "reply has no choices")
        choice = choices[0]
        msg = choice.message
        refusal = getattr(msg, "refusal", None)
        if refusal:
            raise _AttemptError("refusal", self._clean(refusal)[:200])
        finish = getattr(choice, "finish_reason", None)
        content = msg.content or ""
        if finish == "content_filter":
            raise _AttemptError("content_filter", "the server filtered the reply")
        if finish == "length":
            raise _AttemptError("truncated", f"reply cut at the token limit ({len(content)} characters)")
        if not content.strip():
            raise _AttemptError("empty_response", "reply has no content")
        return _parse_json(content, self._secret), model

    def _status_error(self, e: Any, level: int) -> _AttemptError:
        code = int(getattr(e, "status_code", 0) or 0)
        detail = f"HTTP {code}: {self._clean(e)[:200]}"
        can_fall_back = level < len(_RESPONSE_FORMAT_LEVELS) - 1
        if can_fall_back and ((code in (400, 422) and _mentions_format(detail))
                              or (code >= 500 and "response_format" in detail)):
            # only a rejection that names the response format moves to the next level: a 400 for
            # another cause (e.g. a prompt longer than the context window) must not downgrade it.
            # llama-cpp-python answers an unknown response_format type with a 500 naming it.
            return _AttemptError("format_rejected", detail, retryable=False)
        if code == 429:
            return _AttemptError("rate_limited", detail, retry_after=_retry_after(e))
        if code >= 500:
            return _AttemptError("server_error", detail)
        if code in (408, 409):
            return _AttemptError(f"http_{code}", detail)
        if code in (401, 403):
            return _AttemptError("auth_error", detail, retryable=False)
        if code == 404:
            return _AttemptError("not_found", detail, retryable=False)
        if code in (400, 422):
            return _AttemptError("bad_request", detail, retryable=False)
        return _AttemptError(f"http_{code}", detail, retryable=False)

    def _clean(self, e: Any) -> str:
        return scrub_secret(e, self._secret).replace("\n", " ")

    # -- counters -------------------------------------------------------------------------------
    def _count(self, bucket: str, reason: str) -> None:
        with self._lock:
            d = self._stats[bucket]
            d[reason] = d.get(reason, 0) + 1

    def _count_scalar(self, key: str) -> None:
        with self._lock:
            self._stats[key] += 1

    def _note_model(self, model: str | None) -> None:
        if model:
            with self._lock:
                self._model_seen = model
                self._models_seen.add(model)


#: task → (array property of the reply, input whose length fixes the array's length)
_SIZED_ARRAYS = {"claim_verification": ("verdicts", "claims"), "context_relevance": ("chunks", "contexts"),
                 "reverse_questions": ("questions", "n")}


def _sized_schema(task: str, schema: dict, values: dict) -> dict:
    """The task's schema with ``minItems = maxItems`` = the number of entries the reply must hold
    (claims to verify, chunks to rate, questions asked for), so a schema-constrained server cannot
    return too few or too many. The static file is unchanged; the count comes from the inputs, which
    are part of the cache key."""
    spec = _SIZED_ARRAYS.get(task)
    if spec is None:
        return schema
    prop, source = spec
    v = values[source]
    n = int(v) if isinstance(v, str) else len(v)
    out = json.loads(json.dumps(schema))
    out["properties"][prop]["minItems"] = n
    out["properties"][prop]["maxItems"] = n
    return out


def _mentions_format(text: str) -> bool:
    t = text.lower()
    return any(w in t for w in ("response_format", "json_schema", "json schema", "response format",
                                "schema"))


def _retry_after(e: Any) -> float | None:
    try:
        v = e.response.headers.get("retry-after")
        return max(0.0, float(v)) if v is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _parse_json(content: str, secret: str) -> Any:
    """Parse a reply: plain JSON, JSON in a ``` fence, or the outermost {...} of the text."""
    s = content.strip()
    candidates = [s]
    fence = re.search(r"```(?:json)?\s*(.*?)```", s, re.DOTALL)
    if fence:
        candidates.append(fence.group(1).strip())
    i, j = s.find("{"), s.rfind("}")
    if 0 <= i < j:
        candidates.append(s[i:j + 1])
    first_err: json.JSONDecodeError | None = None
    for c in candidates:
        try:
            obj = json.loads(c)
        except json.JSONDecodeError as err:
            first_err = first_err or err
            continue
        if not isinstance(obj, dict):
            raise _AttemptError("schema_mismatch", f"reply is a JSON {type(obj).__name__}, not an object")
        return obj
    if _REFUSAL.match(s):
        raise _AttemptError("refusal", scrub_secret(s, secret)[:200])
    if s.startswith("{") and first_err is not None and first_err.pos >= len(s) - 1:
        raise _AttemptError("truncated", f"JSON ends early after {len(s)} characters")
    if s.startswith("{") and s.count("{") > s.count("}"):
        raise _AttemptError("truncated", f"JSON ends early after {len(s)} characters")
    raise _AttemptError("invalid_json", f"not JSON: {scrub_secret(s, secret)[:80]!r}")


# ---------------------------------------------------------------------------------------------
# many answers at once


def judge_many(
    judge: Any,
    items: Sequence[Sequence],
    concurrency: int | None = None,
    *,
    rate_limit_per_s: float | None = None,
    progress: Callable[[dict], None] | None = None,
    repeat: int = 0,
) -> list[AnswerJudgement]:
    """Judge many answers with bounded concurrency; one failing item never stops the others.

    Inputs: any Judge (``judge.judge(question, answer, contexts)``; ``repeat`` is passed as a
    keyword when non-zero, so the judge must accept it then), ``items`` = sequence of
    ``(question, answer, contexts)``, ``concurrency`` (threads, >= 1; default
    ``judge.concurrency`` or 1), ``rate_limit_per_s`` (None or > 0: items started per second,
    token bucket; the judge's own per-request limit applies as well), ``progress`` (called in the
    caller's thread after each item with a dict: ``done``, ``total``, ``errors`` (items whose status
    is "judge_error"), ``elapsed_s``, ``items_per_s``, ``calls`` and ``calls_per_s`` (from
    ``judge.stats["calls"]`` when the judge keeps one, else None)).
    Output: list of AnswerJudgement in the order of ``items``; an exception raised by the judge
    becomes status "judge_error" with one JUDGE_ERROR verdict "c0" whose error is
    "<ExceptionType>: <message>" (scrubbed of ``Bearer``/``sk-`` tokens). Raises ValueError for
    concurrency < 1. An exception raised by ``progress`` propagates (after the running items end).
    """
    items = list(items)
    workers = int(concurrency if concurrency is not None else getattr(judge, "concurrency", 1) or 1)
    if workers < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency!r}")
    bucket = TokenBucket(rate_limit_per_s) if rate_limit_per_s else None
    secret = getattr(judge, "_secret", None)

    def run(item: Sequence) -> AnswerJudgement:
        question, answer, contexts = item
        if bucket is not None:
            bucket.acquire()
        try:
            if repeat:
                return judge.judge(question, answer, contexts, repeat=repeat)
            return judge.judge(question, answer, contexts)
        except Exception as exc:  # noqa: BLE001 - one bad item must not abort the others
            reason = scrub_secret(f"{type(exc).__name__}: {exc}", secret)[:500]
            return AnswerJudgement("judge_error", [ClaimVerdict(
                "c0", answer or "", "JUDGE_ERROR", None, False, "the judge raised", error=reason)])

    def calls_now() -> int | None:
        st = getattr(judge, "stats", None)
        return int(st.get("calls", 0)) if isinstance(st, dict) else None

    results: list[AnswerJudgement | None] = [None] * len(items)
    t0, calls0 = time.perf_counter(), calls_now()
    done = errors = 0
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
        futures = {pool.submit(run, it): i for i, it in enumerate(items)}
        for fut in as_completed(futures):
            res = fut.result()
            results[futures[fut]] = res
            done += 1
            errors += res.status == "judge_error"
            if progress is not None:
                elapsed = time.perf_counter() - t0
                c = calls_now()
                calls = None if c is None or calls0 is None else c - calls0
                progress({
                    "done": done, "total": len(items), "errors": errors, "elapsed_s": elapsed,
                    "items_per_s": done / elapsed if elapsed > 0 else None,
                    "calls": calls,
                    "calls_per_s": (calls / elapsed) if calls is not None and elapsed > 0 else None,
                })
    return results  # type: ignore[return-value]
