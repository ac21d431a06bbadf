"""Many answers judged at once, by any judge: bounded concurrency, an optional rate limit, progress, and one
failing item never stopping the others. Nothing here imports Dagster.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict
from rag_eval_pipeline.core.judges.transport import TokenBucket, scrub_secret

__all__ = ["judge_many"]


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
    transport = getattr(judge, "transport", None)
    secret = getattr(transport, "_secret", None)

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
    return results  # type: ignore[return-value]  # every slot filled: one future per item, all completed
