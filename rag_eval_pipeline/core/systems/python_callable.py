"""The ``python`` kind: a function ``package.module:function`` called once per golden question.

The module is imported from the configuration's folder first (a ``my_rag.py`` beside ``config.yaml``
is ``callable: my_rag:answer``), then from ``PYTHONPATH`` and the installed packages.

It is called as ``function(question_id, question, user_groups)`` (str, str, list of str) and returns
one object in the run-log schema, checked like an HTTP reply. An exception becomes an ``error`` row
whose ``error`` names the exception's type (``the callable raised ValueError``); its message is kept
only with ``exception_messages: true``, cut to ``MAX_TEXT_FIELD_CHARS`` characters, because a message can
quote anything the callable saw, restricted chunks included (an exception whose ``str()`` itself raises
is named by its type). A reply that does not fit the schema is an ``error`` row too. ``concurrency`` > 1
calls it from that many threads (it must then be thread-safe).

Deadlines: with ``timeout_s``, each call runs on a thread of its own, started when the question's turn
comes, and its deadline starts with it: a question never waits behind another's stuck call. A call
still running at the deadline becomes an ``error`` row (kind ``timeout``); Python cannot stop a thread,
so it is abandoned: it finishes in the background (a daemon thread: it does not hold the process at exit)
and its result is discarded; the next question gets a fresh thread. While ``stuck_limit(concurrency)``
abandoned calls are still running, no new call is started: the remaining questions are ``error`` rows
(kind ``not_run``) saying so, never timeouts of calls that were not made.

Bounds: the returned value must fit ``max_reply_bytes`` (default 10 MiB, measured as JSON without
serialising it) and the row bounds of ``records`` (answer length, hits, citations), checked before
anything reads it; past one it is an ``error`` row (kind ``too_large``) naming the bound, never judged.

Output: what the callable prints (``print``, ``sys.stdout`` / ``sys.stderr`` ``write`` / ``writelines``
and their ``buffer``, from the threads running it) is captured, never written to the run's own stdout,
where it could pass for the summary lines of ``rag-eval run``; the number of lines is in the run's
``info`` (``captured_output_lines``). The stand-in streams stay installed for the life of the process
(every other thread's writes pass through), so an abandoned call that prints after the run has ended
is still captured. Writes to file descriptors 1 and 2 (``os.write``) are not captured. The text itself
is kept nowhere: it could quote anything, restricted chunks included, and asset metadata carries no
text of a run.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.systems.calls import map_in_pool
from rag_eval_pipeline.core.systems.records import (
    MAX_TEXT_FIELD_CHARS,
    ReplyError,
    ReplyTooLarge,
    RunContext,
    error_row,
    json_size,
    record_to_row,
)

_PATH_LOCK = threading.Lock()

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.kinds.python import PythonSystemConfig


#: ``.sink``: the :class:`_Capture` of the call the current thread is running (absent: not in a call)
_IN_CALL = threading.local()
_INSTALL_LOCK = threading.Lock()


def stuck_limit(concurrency: int) -> int:
    """How many abandoned (timed-out, still running) calls a run tolerates before it starts no new call:
    ``max(4, 2 * concurrency)``."""
    return max(4, 2 * concurrency)


class _CapturedBuffer:
    """``sys.stdout.buffer`` as seen from inside a call: bytes are counted, not written."""

    def __init__(self, sink: _Capture):
        self._sink = sink

    def write(self, data: bytes) -> int:
        self._sink.add(bytes(data).decode("utf-8", errors="replace"))
        return len(data)

    def flush(self) -> None:
        pass


class _CapturedOutput:
    """Stands in for ``sys.stdout`` / ``sys.stderr`` from the first python system run on, for the life of
    the process: writes made by a thread that is inside a callable go to that call's capture; every other
    thread's writes go to the real stream."""

    def __init__(self, real):
        self._real = real

    def write(self, text: str) -> int:
        sink = getattr(_IN_CALL, "sink", None)
        if sink is not None:
            sink.add(str(text))
            return len(text)
        return self._real.write(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    @property
    def buffer(self):
        sink = getattr(_IN_CALL, "sink", None)
        return _CapturedBuffer(sink) if sink is not None else self._real.buffer

    def flush(self) -> None:
        if getattr(_IN_CALL, "sink", None) is None:
            self._real.flush()

    def __getattr__(self, name):
        return getattr(self._real, name)


def _install_capture() -> None:
    """Put :class:`_CapturedOutput` on ``sys.stdout`` / ``sys.stderr`` unless it is there already."""
    with _INSTALL_LOCK:
        for name in ("stdout", "stderr"):
            current = getattr(sys, name)
            if current is not None and not isinstance(current, _CapturedOutput):
                setattr(sys, name, _CapturedOutput(current))


class _Capture:
    """Counts the lines a callable writes (their text is dropped: it could quote anything)."""

    def __init__(self):
        self.lines = 0
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            self.lines += text.count("\n")


class _Call:
    """One call of ``fn`` on a daemon thread of its own (not yet started): ``done`` is set when it returned
    (``reply``) or raised (``exc``)."""

    def __init__(self, fn: Callable[[], object], name: str):
        self.done = threading.Event()
        self.reply: object = None
        self.exc: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)

    def _run(self, fn: Callable[[], object]) -> None:
        try:
            self.reply = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self.exc = exc
        finally:
            self.done.set()


def describe_exception(exc: BaseException, with_message: bool, cap: int = MAX_TEXT_FIELD_CHARS) -> str:
    """The text an ``error`` row gives for an exception: its type name, and with ``with_message`` its
    ``str()`` cut to ``cap`` characters (the cut counted). Never raises, even when ``str()`` or the type's
    name does; then only what could be read is kept."""
    try:
        name = type(exc).__name__
        name = name if isinstance(name, str) else "exception"
    except Exception:  # noqa: BLE001 - a hostile metaclass
        name = "exception"
    if not with_message:
        return name
    try:
        message = str(exc)
    except Exception as err:  # noqa: BLE001 - the exception's own __str__ failed
        return f"{name} (its message could not be read: str() raised {type(err).__name__})"
    if len(message) > cap:
        message = message[:cap] + f"... ({len(message) - cap} more characters cut)"
    return f"{name}: {message}" if message else name


def load_callable(target: str, system: str, base_dir: str | Path | None = None) -> Callable:
    """Import ``package.module:function`` (the attribute part may be dotted: ``module:Class.method``).

    ``base_dir``: the configuration's folder, searched first for the module (put on ``sys.path``
    while importing, then on ``PYTHONPATH`` as usual). Raises ConfigError naming the system and the
    target when the module cannot be imported (saying where it was looked for), the attribute is
    missing or is not callable."""
    module_name, _, attr = target.partition(":")
    folder = str(Path(base_dir).resolve()) if base_dir is not None else None
    try:
        with _PATH_LOCK:
            added = folder if folder is not None and folder not in sys.path else None
            if added is not None:
                sys.path.insert(0, added)
            try:
                obj = importlib.import_module(module_name)
            finally:
                if added is not None:
                    sys.path.remove(added)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration problem here
        where = (f" (looked in the configuration's folder {folder}, then PYTHONPATH and the installed packages)"
                 if folder else " (looked on PYTHONPATH and in the installed packages)")
        raise ConfigError(f"system {system!r}: cannot import module {module_name!r} of callable {target!r}: "
                          f"{type(exc).__name__}: {exc}{where}") from None
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
    """Calls one configured ``python`` system (its typed section). ``fn`` overrides the import (tests);
    ``base_dir``: the configuration's folder, where the module is looked for first."""

    def __init__(self, spec: PythonSystemConfig, fn: Callable | None = None, base_dir: str | Path | None = None):
        self.spec = spec
        self.fn = fn or load_callable(spec.callable, spec.name, base_dir)
        self.stats: CallStats = {"calls": 0, "errors_by_kind": Counter()}
        self.capture = _Capture()
        self._abandoned: list[threading.Thread] = []
        self._lock = threading.Lock()

    def _invoke(self, qid: str, question: str, groups: list[str]):
        _IN_CALL.sink = self.capture
        try:
            return self.fn(qid, question, groups)
        finally:
            _IN_CALL.sink = None

    def _start(self, qid: str, question: str, groups: list[str]) -> _Call | None:
        """The call on a fresh daemon thread, or None when too many abandoned calls still run."""
        with self._lock:
            self._abandoned = [t for t in self._abandoned if t.is_alive()]
            if len(self._abandoned) >= stuck_limit(self.spec.concurrency):
                return None
        call = _Call(lambda: self._invoke(qid, question, groups), f"rag-eval-callable-{qid}"[:60])
        call.thread.start()
        return call

    def _error(self, ctx: RunContext, qid: str, kind: str, text: str, start: float) -> dict:
        with self._lock:
            self.stats["errors_by_kind"][kind] += 1
        return error_row(ctx, qid, f"system {ctx.system!r}, question {qid!r}: {text}",
                         (time.monotonic() - start) * 1000.0)

    def _call(self, ctx: RunContext, q: dict) -> dict:
        qid = q["question_id"]
        timeout = self.spec.timeout_s
        start = time.monotonic()
        try:
            if timeout is None:
                with self._lock:
                    self.stats["calls"] += 1
                reply = self._invoke(qid, q["question"], list(q["user_groups"]))
            else:
                call = self._start(qid, q["question"], list(q["user_groups"]))
                if call is None:
                    with self._lock:
                        stuck = len(self._abandoned)
                    return self._error(ctx, qid, "not_run", f"not run: {stuck} earlier call(s) are still running "
                                       f"past timeout_s={timeout:g} s (workers stuck; at most "
                                       f"{stuck_limit(self.spec.concurrency)} are left running)", start)
                with self._lock:
                    self.stats["calls"] += 1
                start = time.monotonic()  # the deadline starts with the call
                if not call.done.wait(timeout):
                    with self._lock:
                        self._abandoned.append(call.thread)
                    return self._error(ctx, qid, "timeout", "timeout: the callable did not return within "
                                       f"timeout_s={timeout:g} s", start)
                if call.exc is not None:
                    raise call.exc
                reply = call.reply
        except Exception as exc:  # noqa: BLE001 - the system under test failed on this question
            detail = describe_exception(exc, self.spec.exception_messages)
            return self._error(ctx, qid, "exception", f"the callable raised {detail}", start)
        latency = (time.monotonic() - start) * 1000.0
        cap = self.spec.max_reply_bytes
        try:
            size = json_size(reply, cap)
            if size > cap:
                raise ReplyTooLarge(f"system {ctx.system!r}, question {qid!r}: return value is larger than "
                                    f"max_reply_bytes={cap} (about {size} bytes as JSON, counted up to the cap)")
            row = record_to_row(reply, ctx, qid, where="return value")
        except ReplyError as exc:
            with self._lock:
                self.stats["errors_by_kind"]["too_large" if isinstance(exc, ReplyTooLarge) else "invalid_reply"] += 1
            return error_row(ctx, qid, str(exc), latency)
        row["latency_ms"] = latency
        return row

    def run(self, questions: Sequence[dict], ctx: RunContext) -> list[dict]:
        """One row per question (dicts with ``question_id``, ``question``, ``user_groups``), in order.

        Never raises for a failed call (an ``error`` row: kinds ``exception``, ``timeout``, ``not_run``,
        ``too_large``, ``invalid_reply``, counted in ``self.stats``)."""
        _install_capture()
        return map_in_pool(lambda q: self._call(ctx, q), list(questions), self.spec.concurrency)
