"""The ``python`` kind: a function ``package.module:function`` called once per golden question.

It is called as ``function(question_id, question, user_groups)`` (str, str, list of str) and returns
one object in the run-log schema, checked like an HTTP reply. An exception becomes an ``error`` row
whose ``error`` is the exception's type and message; so does a reply that does not fit the schema.
``concurrency`` > 1 calls it from that many threads (it must then be thread-safe). With
``timeout_s``, a call still running at the deadline becomes an ``error`` row (Python cannot stop a
thread: the call finishes in the background and its result is discarded).
"""

from __future__ import annotations

import importlib
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.calls import map_in_pool
from rag_eval_pipeline.core.systems.records import ReplyError, RunContext, error_row, record_to_row

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.python import PythonSystemConfig


def load_callable(target: str, system: str) -> Callable:
    """Import ``package.module:function`` (the attribute part may be dotted: ``module:Class.method``).

    Raises ConfigError naming the system and the target when the module cannot be imported, the
    attribute is missing or is not callable."""
    module_name, _, attr = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration problem here
        raise ConfigError(f"system {system!r}: cannot import module {module_name!r} of callable {target!r}: "
                          f"{type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ConfigError(f"system {system!r}: {module_name!r} has no attribute {attr!r} (callable {target!r})")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"system {system!r}: {target!r} is a {type(obj).__name__}, not callable")
    return obj


class PythonSystem:
    """Calls one configured ``python`` system (its typed section). ``fn`` overrides the import (tests)."""

    def __init__(self, spec: PythonSystemConfig, fn: Callable | None = None):
        self.spec = spec
        self.fn = fn or load_callable(spec.callable, spec.name)
        self.stats = {"calls": 0, "errors_by_kind": Counter()}

    def _call(self, ctx: RunContext, q: dict, pool: ThreadPoolExecutor | None) -> dict:
        qid = q["question_id"]
        start = time.monotonic()
        self.stats["calls"] += 1
        try:
            if pool is None:
                reply = self.fn(qid, q["question"], list(q["user_groups"]))
            else:
                reply = pool.submit(self.fn, qid, q["question"], list(q["user_groups"])).result(
                    timeout=self.spec.timeout_s)
        except FutureTimeout:
            self.stats["errors_by_kind"]["timeout"] += 1
            return error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: timeout: the callable did not "
                                       f"return within timeout_s={self.spec.timeout_s:g} s",
                             (time.monotonic() - start) * 1000.0)
        except Exception as exc:  # noqa: BLE001 - the system under test failed on this question
            self.stats["errors_by_kind"]["exception"] += 1
            return error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: the callable raised "
                                       f"{type(exc).__name__}: {exc}", (time.monotonic() - start) * 1000.0)
        latency = (time.monotonic() - start) * 1000.0
        try:
            row = record_to_row(reply, ctx, qid, where="return value")
        except ReplyError as exc:
            self.stats["errors_by_kind"]["invalid_reply"] += 1
            return error_row(ctx, qid, str(exc), latency)
        row["latency_ms"] = latency
        return row

    def run(self, questions: Sequence[dict], ctx: RunContext) -> list[dict]:
        """One row per question (dicts with ``question_id``, ``question``, ``user_groups``), in order."""
        n = self.spec.concurrency
        if self.spec.timeout_s is None:
            return map_in_pool(lambda q: self._call(ctx, q, None), list(questions), n)
        pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="rag-eval-callable")
        try:  # the outer threads wait; the inner pool runs the calls so a stuck one can be abandoned
            return map_in_pool(lambda q: self._call(ctx, q, pool), list(questions), n)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
