"""A persistent cache of judge model calls, so that re-running with unchanged inputs costs nothing.

One SQLite file (stdlib ``sqlite3``), WAL journal, one row per key, each write committed on its
own: a run that is killed keeps every call it finished, and the next run only asks for the rest.

Key = sha256 (hex) of the canonical JSON (sorted keys, no spaces, UTF-8, no NaN) of
``{"model": model, "prompt_sha256": prompt_sha256, "inputs": inputs, "repeat": repeat}``:
the requested model name, the sha256 of the prompt (and schema) file(s) of that call, and every
input that reaches the prompt (plus sampling settings the caller adds to ``inputs``). Any change to
one of them is a different key, so a stale answer is never served. ``repeat`` follows the
``judge_answers`` convention: repeat 0 may be read from the cache; a repeat above 0 is a deliberate
re-judgement, so :meth:`JudgeCache.lookup` never reads for it, but :meth:`JudgeCache.store` still
writes it under its own key (the repeat is part of the key). Failed calls are never stored.

Evaluating a query costs several model calls; caching identical calls is the cheap half of the cost
control (the other is running a subset).

**Single flight** (:meth:`JudgeCache.single_flight`): two identical calls asked at the same moment
(two threads of one step, two steps, two processes on one cache file) would both miss the cache and
both be paid for. The first to ask *claims* the key: in this process through a table of keys in
flight (threads wait on an event), and across processes through a row of the ``judge_claims`` table
(``INSERT OR IGNORE`` on the key: SQLite makes exactly one insert win). Every other caller waits
until the value is stored, then reads it; when the owner fails (nothing stored, claim released) the
next waiter claims the key and calls. The wait is bounded (``wait_s``): past it the waiter calls on
its own (a duplicate call, never a lost one). A claim whose owner is gone (a process on this host
that no longer exists, e.g. a run killed mid-call) or older than its lease is taken over at once.
The pattern is the "single flight" of Go's ``golang.org/x/sync/singleflight`` (duplicate
suppression of in-flight calls), made durable across processes with a lease row.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import socket
import sqlite3
import threading
import time
import uuid
from pathlib import Path
from typing import Any

__all__ = ["JudgeCache", "Flight", "canonical_json", "cache_key"]

#: Default bound (seconds) on how long a caller waits for an identical call in flight elsewhere
#: before calling on its own; the judges pass their own (a whole call's time bound).
DEFAULT_WAIT_S = 300.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judge_cache (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    value TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""
_CLAIMS = """
CREATE TABLE IF NOT EXISTS judge_claims (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    claimed_at REAL NOT NULL,
    lease_s REAL NOT NULL
)
"""
_CLAIM = ("INSERT OR IGNORE INTO judge_claims (key, owner, host, pid, claimed_at, lease_s) "
          "VALUES (?, ?, ?, ?, ?, ?)")


def canonical_json(obj: Any) -> str:
    """Canonical JSON text of ``obj``: sorted keys, separators ``,`` and ``:``, non-ASCII kept.

    Input: JSON-serialisable value (dict, list, str, int, float, bool, None; tuples become lists).
    Output: str, identical for equal values whatever the dict insertion order. Raises ValueError
    for NaN or infinite floats, TypeError for values JSON cannot encode.
    """
    _reject_nan(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _reject_nan(obj: Any) -> None:
    if isinstance(obj, float) and not math.isfinite(obj):
        raise ValueError(f"cache inputs must not hold NaN or infinity, got {obj!r}")
    if isinstance(obj, dict):
        for v in obj.values():
            _reject_nan(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _reject_nan(v)


def cache_key(model: str, prompt_sha256: str, inputs: Any, repeat: int = 0) -> str:
    """The cache key of one call: hex sha256 of the canonical JSON described in the module docstring.

    Inputs: the requested model name (str), the prompt's sha256 (str), the call's inputs
    (JSON-serialisable), ``repeat`` (int >= 0). Output: 64 lowercase hex characters.
    Raises ValueError for a negative repeat or NaN in the inputs, TypeError for a non-str model or
    prompt hash or non-JSON inputs.
    """
    if not isinstance(model, str) or not isinstance(prompt_sha256, str):
        raise TypeError("model and prompt_sha256 must be strings")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 0:
        raise ValueError(f"repeat must be an integer >= 0, got {repeat!r}")
    text = canonical_json(
        {"model": model, "prompt_sha256": prompt_sha256, "inputs": inputs, "repeat": repeat}
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Persistent, thread-safe cache of judge call results in one SQLite file.

    ``JudgeCache(path)`` creates the file and its parent folder if needed. Values are JSON objects
    (dicts); they are stored as canonical JSON text. Safe to share between threads of one process
    (one connection behind a lock) and between processes (SQLite locking, 30 s busy timeout).
    Raises ``sqlite3.DatabaseError`` when ``path`` exists and is not a SQLite database.
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit, every INSERT is its own committed transaction.
        self._conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None,
                                     check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.execute(_CLAIMS)

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"

    # -- keyed access -------------------------------------------------------------------------
    key = staticmethod(cache_key)

    def get(self, key: str) -> dict | None:
        """The stored value for ``key`` (a dict), or None when absent. Never consults ``repeat``."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM judge_cache WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: dict, *, model: str, prompt_sha256: str, repeat: int = 0) -> None:
        """Store ``value`` (a JSON-serialisable dict) under ``key``, replacing any older value, and
        commit at once. Raises TypeError when ``value`` is not a dict or not JSON-serialisable."""
        if not isinstance(value, dict):
            raise TypeError(f"cache values must be dicts, got {type(value).__name__}")
        text = canonical_json(value)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO judge_cache (key, model, prompt_sha256, repeat, value, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, model, prompt_sha256, int(repeat), text, time.time()),
            )

    # -- call-level access --------------------------------------------------------------------
    def lookup(self, model: str, prompt_sha256: str, inputs: Any, repeat: int = 0) -> dict | None:
        """The cached value of a call, or None when absent or when ``repeat > 0`` (a repeat is a
        deliberate re-judgement: it bypasses reads). Raises as :func:`cache_key`."""
        key = cache_key(model, prompt_sha256, inputs, repeat)
        if repeat > 0:
            return None
        return self.get(key)

    def store(self, model: str, prompt_sha256: str, inputs: Any, value: dict, repeat: int = 0) -> str:
        """Store the value of a call under its key (repeat included) and return the key.
        Raises as :func:`cache_key` and :meth:`put`."""
        key = cache_key(model, prompt_sha256, inputs, repeat)
        self.put(key, value, model=model, prompt_sha256=prompt_sha256, repeat=repeat)
        return key

    # -- single flight ------------------------------------------------------------------------
    def single_flight(self, key: str, wait_s: float = DEFAULT_WAIT_S, poll_s: float = 0.02) -> Flight:
        """A context manager that makes one caller, of all those asking for ``key`` at the same
        time (threads, steps, processes on this file), the one that calls (module docstring).

        ``with cache.single_flight(key, wait_s) as flight:`` returns once ``flight.value`` holds
        the stored value (someone else's call finished: use it) or the caller must call: then it
        stores the result with :meth:`put` (or :meth:`store`) inside the block, and leaving the
        block releases the key (an exception releases it too, and the next waiter calls).
        ``flight.waited_s`` is the time spent waiting, ``flight.owner`` whether this caller held the
        claim (False after a wait past ``wait_s`` > 0: it calls without one). ``poll_s`` (> 0) is
        the first interval between checks of the file while another process holds the key
        (doubling up to 0.5 s). Raises ValueError for a negative ``wait_s`` or a ``poll_s`` <= 0.
        """
        if not wait_s >= 0 or not poll_s > 0:
            raise ValueError(f"wait_s must be >= 0 and poll_s > 0, got {wait_s!r}, {poll_s!r}")
        return Flight(self, key, float(wait_s), float(poll_s))

    def _try_claim(self, key: str, owner: str, lease_s: float) -> bool:
        """Insert this caller's claim row for ``key``; take over a claim whose owner is gone or
        whose lease ran out. Output: True when this caller now holds the claim."""
        now = time.time()
        with self._lock:
            cur = self._conn.execute(_CLAIM, (key, owner, _HOST, os.getpid(), now, lease_s))
            if cur.rowcount == 1:
                return True
            row = self._conn.execute("SELECT owner, host, pid, claimed_at, lease_s FROM judge_claims WHERE key = ?",
                                     (key,)).fetchone()
            if row is None:  # released between the two statements: try again at once
                cur = self._conn.execute(_CLAIM, (key, owner, _HOST, os.getpid(), now, lease_s))
                return cur.rowcount == 1
            old, host, pid, claimed_at, lease = row
            if _owner_gone(host, pid) or now - claimed_at > lease:
                cur = self._conn.execute(
                    "UPDATE judge_claims SET owner = ?, host = ?, pid = ?, claimed_at = ?, lease_s = ? "
                    "WHERE key = ? AND owner = ?", (owner, _HOST, os.getpid(), now, lease_s, key, old))
                return cur.rowcount == 1
            return False

    def _release_claim(self, key: str, owner: str) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.execute("DELETE FROM judge_claims WHERE key = ? AND owner = ?", (key, owner))

    # -- housekeeping -------------------------------------------------------------------------
    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM judge_cache").fetchone()[0])

    def journal_mode(self) -> str:
        """The SQLite journal mode in force ("wal" normally)."""
        with self._lock:
            return str(self._conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()

    def close(self) -> None:
        """Close the connection (idempotent). Committed entries stay in the file."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None  # type: ignore[assignment]  # closed; typed open for every other method

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_HOST = socket.gethostname()
#: Keys in flight in this process, per cache file: (resolved path, key) → the event set when the
#: owner leaves its block. Guarded by ``_LOCAL_LOCK``.
_LOCAL: dict[tuple[str, str], threading.Event] = {}
_LOCAL_LOCK = threading.Lock()


def _owner_gone(host: str, pid: int) -> bool:
    """True when the claim's owner is a process of this host that no longer exists."""
    if host != _HOST:
        return False
    if pid == os.getpid():
        return False  # this process: its threads release their claims in ``finally``
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OSError):
        return False
    return False


class Flight:
    """One caller's turn at a key of a :class:`JudgeCache` (see :meth:`JudgeCache.single_flight`).

    After ``__enter__``: ``value`` (the stored dict, or None when this caller must call),
    ``owner`` (this caller holds the claim), ``waited_s`` (seconds spent waiting for another)."""

    def __init__(self, cache: JudgeCache, key: str, wait_s: float, poll_s: float):
        self.cache, self.key, self.wait_s, self.poll_s = cache, key, wait_s, poll_s
        self.value: dict | None = None
        self.owner = False
        self.waited_s = 0.0
        self._token = uuid.uuid4().hex
        self._local_key = (str(cache.path.resolve()), key)
        self._event: threading.Event | None = None
        self._db_claim = False

    def __enter__(self) -> Flight:
        start = time.monotonic()
        deadline = start + self.wait_s
        lease = max(self.wait_s, 1.0)
        try:
            while True:
                value = self.cache.get(self.key)
                if value is not None:
                    self.value = value
                    return self
                # 1. this process: one thread per key goes on, the others wait on its event
                with _LOCAL_LOCK:
                    other = _LOCAL.get(self._local_key)
                    if other is None:
                        self._event = _LOCAL[self._local_key] = threading.Event()
                if other is not None:
                    left = deadline - time.monotonic()
                    if left <= 0 or not other.wait(left):
                        return self  # waited long enough: call without a claim
                    continue
                # 2. other processes: the claim row
                delay = self.poll_s
                while True:
                    if self.cache._try_claim(self.key, self._token, lease):  # noqa: SLF001
                        self._db_claim = True
                        value = self.cache.get(self.key)  # stored (and released) since our last read
                        if value is not None:
                            self.value = value  # nothing to call: the claim is released on return
                        else:
                            self.owner = True
                        return self
                    value = self.cache.get(self.key)
                    if value is not None:
                        self.value = value
                        return self
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return self  # call without the row; this process's waiters still wait on us
                    time.sleep(min(delay, left))
                    delay = min(delay * 2, 0.5)
        except BaseException:
            self._leave()
            raise
        finally:
            self.waited_s = time.monotonic() - start
            if self.value is not None:
                self._leave()  # nothing to call: release at once

    def _leave(self) -> None:
        if self._db_claim:
            self._db_claim = False
            self.cache._release_claim(self.key, self._token)  # noqa: SLF001
        if self._event is not None:
            with _LOCAL_LOCK:
                if _LOCAL.get(self._local_key) is self._event:
                    del _LOCAL[self._local_key]
            self._event.set()
            self._event = None

    def __exit__(self, *exc) -> None:
        self._leave()
