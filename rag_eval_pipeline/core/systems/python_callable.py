"""The ``python`` kind: a function ``package.module:function`` called once per golden question.

It is called as ``function(question_id, question, user_groups)`` (str, str, list of str) and returns
one object in the run-log schema, checked like an HTTP reply. An exception becomes an ``error`` row
whose ``error`` is the exception's type and message; so does a reply that does not fit the schema.
``concurrency`` > 1 calls it from that many threads (it must then be thread-safe). With
``timeout_s``, a call still running at the deadline becomes an ``error`` row (Python cannot stop a
thread: the call finishes in the background and its result is discarded).

Bounds: the returned value must fit ``max_reply_bytes`` (default 10 MiB, measured as JSON without
serialising it) and the row bounds of ``records`` (answer length, hits, citations), checked before
anything reads it; past one it is an ``error`` row (kind ``too_large``) naming the bound, never judged.

Output: what the callable prints (``print``, ``sys.stdout`` / ``sys.stderr`` writes from its threads)
is captured, never written to the run's own stdout, where it could pass for the summary lines of
``rag-eval run``; the number of lines is in the run's ``info`` (``captured_output_lines``). The text
itself is kept nowhere: it could quote anything, restricted chunks included, and asset metadata
carries no text of a run.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, TypedDict

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.calls import map_in_pool
from rag_eval_pipeline.core.systems.records import (
    ReplyError,
    ReplyTooLarge,
    RunContext,
    error_row,
    json_size,
    record_to_row,
)

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.python import PythonSystemConfig


class _CapturedOutput:
    """Stands in for ``sys.stdout`` / ``sys.stderr`` while a python system runs: writes made by a thread
    that is inside the callable are kept here; every other thread's writes go to the real stream."""

    def __init__(self, real, sink: _Capture):
        self._real, self._sink = real, sink

    def write(self, text: str) -> int:
        if getattr(self._sink.local, "inside", False):
            self._sink.add(text)
            return len(text)
        return self._real.write(text)

    def flush(self) -> None:
        self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


class _Capture:
    """Counts the lines a callable writes (their text is dropped: it could quote anything)."""

    def __init__(self):
        self.local = threading.local()
        self.lines = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            self.lines += text.count("\n")

    def close(self) -> None:
        pass


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


class CallStats(TypedDict):
    """What a ``python`` system's run counted: calls, and errors by kind (``timeout``, ``exception``,
    ``too_large``, ``invalid_reply``)."""

    calls: int
    errors_by_kind: Counter[str]


class PythonSystem:
    """Calls one configured ``python`` system (its typed section). ``fn`` overrides the import (tests)."""

    def __init__(self, spec: PythonSystemConfig, fn: Callable | None = None):
        self.spec = spec
        self.fn = fn or load_callable(spec.callable, spec.name)
        self.stats: CallStats = {"calls": 0, "errors_by_kind": Counter()}
        self.capture = _Capture()

    def _invoke(self, qid: str, question: str, groups: list[str]):
        self.capture.local.inside = True
        try:
            return self.fn(qid, question, groups)
        finally:
            self.capture.local.inside = False

    def _call(self, ctx: RunContext, q: dict, pool: ThreadPoolExecutor | None) -> dict:
        qid = q["question_id"]
        start = time.monotonic()
        self.stats["calls"] += 1
        try:
            if pool is None:
                reply = self._invoke(qid, q["question"], list(q["user_groups"]))
            else:
                reply = pool.submit(self._invoke, qid, q["question"], list(q["user_groups"])).result(
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
        cap = self.spec.max_reply_bytes
        try:
            size = json_size(reply, cap)
            if size > cap:
                raise ReplyTooLarge(f"system {ctx.system!r}, question {qid!r}: return value is larger than "
                                    f"max_reply_bytes={cap} (about {size} bytes as JSON, counted up to the cap)")
            row = record_to_row(reply, ctx, qid, where="return value")
        except ReplyError as exc:
            self.stats["errors_by_kind"]["too_large" if isinstance(exc, ReplyTooLarge) else "invalid_reply"] += 1
            return error_row(ctx, qid, str(exc), latency)
        row["latency_ms"] = latency
        return row

    def run(self, questions: Sequence[dict], ctx: RunContext) -> list[dict]:
        """One row per question (dicts with ``question_id``, ``question``, ``user_groups``), in order."""
        n = self.spec.concurrency
        real_out, real_err = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _CapturedOutput(real_out, self.capture), _CapturedOutput(real_err, self.capture)
        try:
            if self.spec.timeout_s is None:
                return map_in_pool(lambda q: self._call(ctx, q, None), list(questions), n)
            pool = ThreadPoolExecutor(max_workers=n, thread_name_prefix="rag-eval-callable")
            try:  # the outer threads wait; the inner pool runs the calls so a stuck one can be abandoned
                return map_in_pool(lambda q: self._call(ctx, q, pool), list(questions), n)
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        finally:
            if sys.stdout.__class__ is _CapturedOutput:
                sys.stdout = real_out
            if sys.stderr.__class__ is _CapturedOutput:
                sys.stderr = real_err
            self.capture.close()
