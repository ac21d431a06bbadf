"""Benchmark: labels/s of the model judge at concurrency 1, 4 and 16, and the cost of a cached re-run.

A local fault server (``rag_eval_pipeline_tests/servers/fault_server.py``, mode ok) answers every
chat-completions request after a fixed latency (default 50 ms), standing in for a model endpoint.
It runs in its own process (``--in-process`` to share this one), so that the server's Python work
does not compete with the judge's for one GIL.
Each item is a one-sentence answer, so one item = one claim label = 2 requests (decomposition +
verification). For each concurrency c, :func:`judge_many` judges ``per_worker * c`` items (no
cache) and reports labels/s; the goal is labels/s(c) >= 0.8 * c * labels/s(1) (the latency, not
the client, bounds throughput). Then 1,000 items are judged once into a fresh SQLite cache, and a
new judge re-runs them from the cache (zero requests): seconds per 1,000 labels, sequential and
at concurrency 16.

Usage: python bench/bench_judge_throughput.py [--latency-ms 50] [--per-worker 25] [--cached 1000]
Exit status 1 when a goal is missed (``--no-fail`` to only print).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_eval_pipeline.core.judges.cache import JudgeCache  # noqa: E402
from rag_eval_pipeline.core.judges.many import judge_many  # noqa: E402
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge  # noqa: E402
from rag_eval_pipeline_tests.servers.fault_server import FaultServer  # noqa: E402

CTX = ["El museo abre de martes a domingo de 10 a 18 horas. La entrada general cuesta 8 euros.",
       "Los menores de 12 años entran gratis. Las visitas guiadas se reservan por teléfono."]


def items(n: int, tag: str) -> list[tuple[str, str, list[str]]]:
    return [("¿Cuándo abre el museo?", f"El museo abre de martes a domingo ({tag} {i}).", CTX) for i in range(n)]


def make_judge(url: str, concurrency: int, cache: JudgeCache | None = None) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(url, "bench-model", "bench-key", timeout_s=10, max_retries=1, backoff_s=0.01,
                                 concurrency=concurrency, cache=cache)


def run(url: str, n: int, concurrency: int, tag: str, cache: JudgeCache | None = None):
    j = make_judge(url, concurrency, cache)
    its = items(n, tag)
    t0 = time.perf_counter()
    res = judge_many(j, its, concurrency=concurrency)
    dt = time.perf_counter() - t0
    labels = sum(len(r.claims) for r in res)
    bad = sum(r.status != "judged" for r in res)
    return labels, dt, bad, j.stats


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency-ms", type=float, default=50.0)
    ap.add_argument("--per-worker", type=int, default=25, help="items per unit of concurrency")
    ap.add_argument("--cached", type=int, default=1000, help="items for the cached re-run")
    ap.add_argument("--no-fail", action="store_true")
    ap.add_argument("--in-process", action="store_true", help="run the fault server in this process")
    args = ap.parse_args(argv)

    if args.in_process:
        with FaultServer(latency_s=args.latency_ms / 1000, record_bodies=False) as srv:
            return report(srv.base_url, args)
    repo = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline_tests.servers.fault_server",
                             "--latency-ms", str(args.latency_ms)], cwd=repo, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"fault server did not start (printed {url!r})")
        return report(url, args)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def report(url: str, args: argparse.Namespace) -> int:
    ok = True
    if True:
        run(url, 4, 1, "warmup")
        print(f"fault server latency {args.latency_ms:g} ms per request; 1 label = 2 requests")
        print(f"{'concurrency':>11} {'labels':>7} {'seconds':>8} {'labels/s':>9} {'calls/s':>8} "
              f"{'vs ideal':>9} {'errors':>6}")
        base = None
        for c in (1, 4, 16):
            labels, dt, bad, st = run(url, args.per_worker * c, c, f"c{c}")
            rate = labels / dt
            base = base or rate
            ratio = rate / (c * base)
            goal = ratio >= 0.8
            ok &= goal and bad == 0
            print(f"{c:>11} {labels:>7} {dt:>8.2f} {rate:>9.1f} {st['calls'] / dt:>8.1f} "
                  f"{ratio:>8.2f}x {bad:>6}{'' if goal else '  (goal 0.8x missed)'}")

        with tempfile.TemporaryDirectory() as tmp:
            cache_path = Path(tmp) / "bench_cache.sqlite"
            labels, dt_fill, bad, st = run(url, args.cached, 16, "cached", JudgeCache(cache_path))
            print(f"cache fill: {labels} labels at concurrency 16 in {dt_fill:.2f} s "
                  f"({st['cache_writes']} entries written)")
            for c in (1, 16):
                labels, dt, bad, st = run(url, args.cached, c, "cached", JudgeCache(cache_path))
                per_1000 = dt * 1000 / labels
                print(f"cached re-run, concurrency {c:>2}: {labels} labels in {dt:.3f} s = {per_1000:.3f} s "
                      f"per 1,000 labels; requests {st['calls']}, cache hits {st['cache_hits']}")
                ok &= st["calls"] == 0 and bad == 0
    print("all goals met" if ok else "GOAL MISSED")
    return 0 if ok or args.no_fail else 1


if __name__ == "__main__":
    raise SystemExit(main())
