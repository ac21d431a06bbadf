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
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

__all__ = ["JudgeCache", "canonical_json", "cache_key"]

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
