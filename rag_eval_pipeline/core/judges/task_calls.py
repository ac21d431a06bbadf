"""One call of a judge's prompt task through the judge cache: cache read, single flight, the transport's
bounded attempts, cache write; and the model version each reply reports.

Cache (optional :class:`~rag_eval_pipeline.core.judges.cache.JudgeCache`): one entry per call, keyed
by the requested model name, the task's prompt sha256 and the call's inputs (question/answer/
contexts/claims as given, temperature, max_tokens, a render version), holding the reply (every
string already scrubbed of the key) and the reply's ``model`` version; a hit is scrubbed and
validated again like a fresh reply. ``repeat`` > 0 never reads the cache (it still writes, under a
key with the repeat). Failed calls are not stored.

Nothing here imports Dagster.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rag_eval_pipeline.core.judges.cache import JudgeCache, cache_key
from rag_eval_pipeline.core.judges.prompt_files import RENDER_VERSION, Prompt, render_inputs, sized_schema
from rag_eval_pipeline.core.judges.transport import (
    AttemptError,
    ChatTransport,
    JudgeCallError,
    scrub_reply,
    scrub_secret,
)

__all__ = ["TaskCalls"]


class TaskCalls:
    """The calls of one model judge (:class:`~rag_eval_pipeline.core.judges.openai_compatible.OpenAICompatibleJudge`).

    Constructor: ``transport`` (the judge's
    :class:`~rag_eval_pipeline.core.judges.transport.ChatTransport`), ``requested_model`` (the model name
    asked for), ``cache`` (a :class:`~rag_eval_pipeline.core.judges.cache.JudgeCache` or None),
    ``temperature`` and ``max_tokens`` (sent with every call and part of its cache key).
    ``model_seen``: the model version of the last reply or cache hit (None before any); ``models_seen``:
    every version seen, sorted; :meth:`counts`: ``cache_hits``, ``cache_writes``, ``flight_waits``,
    ``failed_waits`` (calls answered by the failure of an identical call of this judge, not sent again).
    Thread-safe.
    """

    def __init__(self, transport: ChatTransport, requested_model: str, cache: JudgeCache | None,
                 temperature: float, max_tokens: int | None):
        self.transport, self.requested_model, self.cache = transport, requested_model, cache
        self.temperature, self.max_tokens = temperature, max_tokens
        self._lock = threading.Lock()
        self._model_seen: str | None = None
        self._models_seen: set[str] = set()
        self._cache_counts = {"cache_hits": 0, "cache_writes": 0, "flight_waits": 0, "failed_waits": 0}
        #: cache key -> the JudgeCallError of an identical call that already spent its 1 + max_retries attempts
        self._failed: dict[str, JudgeCallError] = {}

    @property
    def model_seen(self) -> str | None:
        """The model version the last reply or cache hit reported; None before any."""
        return self._model_seen

    @property
    def models_seen(self) -> list[str]:
        """Every model version reported so far, sorted (more than one = the server changed model)."""
        with self._lock:
            return sorted(self._models_seen)

    def counts(self) -> dict[str, int]:
        """A copy of the counters: ``cache_hits``, ``cache_writes``, ``flight_waits``, ``failed_waits``."""
        with self._lock:
            return dict(self._cache_counts)

    def inputs(self, values: dict) -> dict:
        """``values`` with what else keys a call: temperature, max_tokens and the render version."""
        return {**values, "temperature": self.temperature, "max_tokens": self.max_tokens,
                "render": RENDER_VERSION}

    def call(self, task: str, prompt: Prompt, values: dict, repeat: int, validate: Callable[[Any], dict]) -> dict:
        """Run one task: cache read (repeat 0), else the transport's bounded attempts; cache write.
        An identical call already in flight (another thread, step or process on the same cache file)
        is waited for, not sent again (:meth:`JudgeCache.single_flight`, bounded by one whole call's
        time: ``(1 + max_retries) * timeout_s`` plus a minute). An identical call of this judge object that
        already failed after its attempts fails again at once with the same error (``failed_waits``): the
        configured ``1 + max_retries`` requests per distinct call, not per caller. Output: the validated reply dict.
        Raises JudgeCallError (scrubbed) when every attempt fails."""
        inputs = self.inputs(values)
        if self.cache is None:
            return self._send(task, prompt, values, inputs, repeat, validate)
        if repeat > 0:  # a deliberate re-judgement: never read, never waited for
            return self._send(task, prompt, values, inputs, repeat, validate)
        hit = self._from_cache(self.cache.lookup(self.requested_model, prompt.sha256, inputs, repeat), validate)
        if hit is not None:
            return hit
        t = self.transport
        wait_s = (1 + t.max_retries) * t.timeout_s + 60.0
        key = cache_key(self.requested_model, prompt.sha256, inputs, repeat)
        with self.cache.single_flight(key, wait_s=wait_s) as flight:
            hit = self._from_cache(flight.value, validate)
            if hit is not None:
                self._count_cache("flight_waits")
                return hit
            with self._lock:
                failed = self._failed.get(key)
            if failed is not None:
                # an identical call of this judge already failed after its 1 + max_retries attempts: the same
                # failure, not another round of requests (two systems with the same answer would otherwise
                # double the requests a failing call sends)
                self._count_cache("failed_waits")
                raise JudgeCallError(failed.reason, failed.detail, failed.attempts)
            try:
                return self._send(task, prompt, values, inputs, repeat, validate)
            except JudgeCallError as exc:
                with self._lock:
                    self._failed[key] = exc
                raise

    def _from_cache(self, hit: dict | None, validate: Callable[[Any], dict]) -> dict | None:
        """The validated reply of a cache entry, or None (absent, or an entry this code no longer accepts)."""
        if hit is None:
            return None
        secret = self.transport._secret  # noqa: SLF001 - the judge scrubs cache entries with the same key
        try:
            # an entry written before replies were scrubbed may hold the key: scrub it too
            out = validate(scrub_reply(hit["output"], secret))
        except (AttemptError, KeyError, TypeError):
            return None  # an entry this code no longer accepts: ask again
        self._note_model(scrub_secret(hit.get("model"), secret) if hit.get("model") else None)
        self._count_cache("cache_hits")
        return out

    def _send(self, task: str, prompt: Prompt, values: dict, inputs: dict, repeat: int,
              validate: Callable[[Any], dict]) -> dict:
        """The transport's bounded attempts for one call, then the cache write."""
        messages = [{"role": "user", "content": render_inputs(prompt, values)}]
        obj, out, model = self.transport.complete(task, self.requested_model, messages,
                                                  sized_schema(task, prompt.schema, values), validate,
                                                  temperature=self.temperature, max_tokens=self.max_tokens)
        self._note_model(model)
        if self.cache is not None:
            # the raw (scrubbed) reply is stored and validated again on every hit, so an entry written
            # by an older version of the validation rules is never trusted blindly
            self.cache.store(self.requested_model, prompt.sha256, inputs, {"output": obj, "model": model}, repeat)
            self._count_cache("cache_writes")
        return out

    def _count_cache(self, key: str) -> None:
        with self._lock:
            self._cache_counts[key] += 1

    def _note_model(self, model: str | None) -> None:
        if model:
            with self._lock:
                self._model_seen = model
                self._models_seen.add(model)
