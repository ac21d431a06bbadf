"""Calling a system once per question: a thread pool, a shared rate limit, bounded retries with backoff.

Shared by the ``http`` and ``python`` kinds. Every question yields exactly one result, in input order.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


class RateLimiter:
    """At most ``rate_per_s`` call starts per second across threads (evenly spaced: 1/rate apart).

    ``rate_per_s`` None means no limit. ``wait()`` blocks until the caller's slot; thread-safe.
    """

    def __init__(self, rate_per_s: float | None, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.interval = 0.0 if not rate_per_s else 1.0 / rate_per_s
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = self._clock()
            slot = max(now, self._next)
            self._next = slot + self.interval
        if slot > now:
            self._sleep(slot - now)


def backoff_delay(attempt: int, base_s: float, max_s: float) -> float:
    """Exponential backoff before retry ``attempt`` (1 = first retry): ``base_s * 2**(attempt-1)``,
    at most ``max_s``. Deterministic (no jitter): one evaluation run talks to one system."""
    return min(max_s, base_s * (2 ** (attempt - 1)))


def map_in_pool(fn: Callable[[T], R], items: Sequence[T], concurrency: int) -> list[R]:
    """``[fn(x) for x in items]`` on ``concurrency`` threads, results in input order.

    ``fn`` must not raise (each runner turns its failures into error rows); if it does, the
    exception propagates after the pool is shut down.
    """
    if concurrency <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="rag-eval-system") as pool:
        return list(pool.map(fn, items))
