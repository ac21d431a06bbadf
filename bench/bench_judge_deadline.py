"""Benchmark: how long a judged run takes against an endpoint that trickles its replies.

A local fault server (``rag_eval_pipeline_tests/servers/fault_server.py``, mode trickle) sends the
first ``--trickle-bytes`` bytes of every reply one at a time, one every ``--trickle-s`` seconds:
each socket read succeeds well inside any per-read timeout, so only a deadline on the whole request
ends it. ``judge_many`` judges ``--items`` answers at ``--concurrency`` with ``--timeout-s`` and
``--retries``; every item becomes a ``timeout`` JUDGE_ERROR. Printed: the run's seconds against the
bound waves x (1 + retries) x timeout (waves = ceil(items / concurrency)), and what a per-read
timeout alone would allow (the whole trickle, per request).

Usage: python bench/bench_judge_deadline.py [--items 8] [--concurrency 4] [--timeout-s 2] [--retries 1]
Exit status 1 when the run exceeds the bound by more than 1 s (``--no-fail`` to only print).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_eval_pipeline.core.judges.many import judge_many  # noqa: E402
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge  # noqa: E402
from rag_eval_pipeline_tests.servers.fault_server import FaultServer  # noqa: E402

CTX = ["La biblioteca municipal abre de lunes a viernes de 9 a 20 horas."]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--items", type=int, default=8)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--timeout-s", type=float, default=2.0)
    ap.add_argument("--retries", type=int, default=1)
    ap.add_argument("--trickle-s", type=float, default=0.5)
    ap.add_argument("--trickle-bytes", type=int, default=60)
    ap.add_argument("--no-fail", action="store_true")
    args = ap.parse_args()
    items = [("¿Cuándo abre?", f"La biblioteca abre de lunes a viernes. Respuesta {i}.", CTX)
             for i in range(args.items)]
    with FaultServer("trickle", trickle_s=args.trickle_s, trickle_bytes=args.trickle_bytes) as srv:
        judge = OpenAICompatibleJudge(srv.base_url, "bench-model", "bench-key", timeout_s=args.timeout_s,
                                      max_retries=args.retries, backoff_s=0, concurrency=args.concurrency,
                                      environ={})
        t0 = time.perf_counter()
        results = judge_many(judge, items, concurrency=args.concurrency)
        seconds = time.perf_counter() - t0
    reasons = sorted({c.error.split(":", 1)[0] for r in results for c in r.claims if c.error})
    waves = math.ceil(args.items / args.concurrency)
    bound = waves * (1 + args.retries) * args.timeout_s
    per_read_only = waves * (1 + args.retries) * args.trickle_bytes * args.trickle_s
    print(f"{args.items} items at concurrency {args.concurrency}, timeout {args.timeout_s:g} s, {args.retries} "
          f"retr{'y' if args.retries == 1 else 'ies'}; the server trickles {args.trickle_bytes} bytes, "
          f"one every {args.trickle_s:g} s")
    print(f"run: {seconds:.2f} s (bound {bound:.1f} s; a per-read timeout alone would allow {per_read_only:.0f} s); "
          f"statuses {sorted({r.status for r in results})}, reasons {reasons}, requests {judge.stats['calls']}")
    return 0 if args.no_fail or seconds <= bound + 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
