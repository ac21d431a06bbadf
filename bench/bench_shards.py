"""A question-sharded suite on Celery workers, 1 worker then 2, side by side in one run.

Data: ``bench/bench_scale.py``'s generator (a synthetic BEIR corpus of ``--chunks`` chunks, ``--questions``
questions of the three classes, the log of a "team" system; the built-in BM25 + extractive reference
system; the rule-based judge), with ``shards: --shards`` in its configuration (``docs/scale-out.md``,
"Question shards").

Deployment: the tested one (``rag_eval_pipeline_tests/deploy/services.py``: Postgres 15, Redis, Celery
workers of one step at a time, the daemon and the webserver on 127.0.0.1, ``deploy/dagster.yaml``), with
``deploy/celery.yaml`` unchanged (visibility timeout 3600 s: a shard's step may run for minutes).

One evaluation, as a deployment runs it, each command timed:

1. ``dagster asset materialize`` of ``corpus_snapshot`` and ``golden_set`` (two steps, one after the other);
2. the ``<suite>__question_shards`` job once per shard, every shard's run launched at once
   (``dagster job execute --tags '{"dagster/partition": "K", "rag_eval/evaluation": ID}'``: the runs of
   one evaluation hold the output folder together), their steps spread over the workers by Celery;
3. ``dagster asset materialize`` of everything else (the merge of the shards, the aggregate, the gates,
   the report, promotion).

Run with 1 worker, then with 2 fresh workers (both restarted, so that each worker's peak RSS is its own
for that configuration); the output folder is emptied before each. Printed: each phase's wall seconds, the
total, the 2-worker / 1-worker ratio, each worker's peak RSS (VmHWM of its processes: the Celery worker and
its pool process, which runs the steps), and the load average before and after each configuration. The
machine these figures come from has 2 cores shared with other jobs: compare the figures of one run only.

Needs Postgres 15, redis-server and requirements-deploy.txt, as the deployment test.
Usage:  python bench/bench_shards.py --questions 10000 [--chunks 200000] [--shards 4] [--workdir DIR]
        python bench/bench_shards.py --questions 100000 --shards 4 --workdir DIR   (the figures in the manual:
                                                            about 60 min on 1 worker, 30–50 min on 2, on 2 cores)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_deploy import _peak_rss_mib  # noqa: E402
from bench_scale import generate  # noqa: E402

from rag_eval_pipeline_tests.deploy.services import BIN, DEPLOY, Deployment, missing_tools, new_root  # noqa: E402
from rag_eval_pipeline_tests.e2e.polling import wait_until  # noqa: E402

SUITE = "scale"
LOCATION = ["-m", "rag_eval_pipeline.definitions"]


class BenchDeployment(Deployment):
    """The test's deployment with ``deploy/celery.yaml`` as it is (the test shortens the visibility timeout to
    30 s, which would hand a long shard step to a second worker while the first still runs it)."""

    def _celery_config(self) -> Path:
        path = self.root / "celery.yaml"
        shutil.copy(DEPLOY / "celery.yaml", path)
        return path


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _check(proc: subprocess.CompletedProcess | subprocess.Popen, out: str, what: str) -> None:
    if proc.returncode:
        raise SystemExit(f"{what} failed ({proc.returncode}):\n{out[-4000:]}")


def _dagster(args: list[str], env: dict) -> float:
    t = time.perf_counter()
    proc = subprocess.run([str(BIN / "dagster"), *args], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=6 * 3600)
    _check(proc, proc.stdout + proc.stderr, " ".join(args[:3]))
    return time.perf_counter() - t


def _shards_at_once(shards: int, env: dict, logs: Path) -> float:
    """Every shard's run of the question_shards job launched at once; wall seconds until the last one ends."""
    evaluation = str(uuid.uuid4())
    t = time.perf_counter()
    procs = []
    for key in range(shards):
        tags = json.dumps({"dagster/partition": str(key), "rag_eval/evaluation": evaluation})
        log = (logs / f"shard{key}.log").open("w")
        procs.append((key, log, subprocess.Popen(
            [str(BIN / "dagster"), "job", "execute", *LOCATION, "-j", f"{SUITE}__question_shards", "--tags", tags],
            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, text=True)))
    for key, log, proc in procs:
        proc.wait(timeout=6 * 3600)
        log.close()
        _check(proc, (logs / f"shard{key}.log").read_text(errors="replace"), f"shard {key}")
    return time.perf_counter() - t


def _restart_workers(dep: Deployment, n: int) -> None:
    for name in [k for k in dep.procs if k.startswith("w")]:
        dep.kill_worker(name)
        del dep.procs[name]
    for i in range(1, n + 1):
        dep.start_worker(i)
    for i in range(1, n + 1):
        wait_until(f"worker w{i} to be ready", lambda i=i: " ready." in dep.log(f"w{i}"), timeout=300, interval=1.0)


def evaluate(dep: Deployment, workers: int, shards: int, keys: dict) -> dict:
    """One whole evaluation on ``workers`` fresh workers; the phases' wall seconds and the workers' peak RSS."""
    _restart_workers(dep, workers)
    shutil.rmtree(dep.out / SUITE, ignore_errors=True)
    logs = dep.root / f"logs_{workers}w"
    logs.mkdir(exist_ok=True)
    load_before = _load()
    inputs = _dagster(["asset", "materialize", *LOCATION, "--select", ",".join(keys["inputs"])], dep.env)
    sharded = _shards_at_once(shards, dep.env, logs)
    rest = _dagster(["asset", "materialize", *LOCATION, "--select", ",".join(keys["rest"])], dep.env)
    peaks = {f"w{i}": _peak_rss_mib(dep.procs[f"w{i}"].pid) for i in range(1, workers + 1)}
    return {"workers": workers, "inputs_s": inputs, "shards_s": sharded, "rest_s": rest,
            "total_s": inputs + sharded + rest, "peak_rss_mib": peaks, "load_before": load_before,
            "load_after": _load()}


def suite_keys(env: dict) -> dict:
    """The asset keys of phase 1 (snapshot, golden set) and phase 3 (everything else of the full evaluation)."""
    code = ("import json; from rag_eval_pipeline.definitions import defs; from rag_eval_pipeline.defs.factory import "
            f"full_evaluation_keys; keys, _ = full_evaluation_keys(defs, {SUITE!r}); "
            "print(json.dumps([k.to_user_string() for k in keys]))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    _check(proc, proc.stdout + proc.stderr, "listing the suite's assets")
    keys = json.loads(proc.stdout.strip().splitlines()[-1])
    inputs = [f"{SUITE}/corpus_snapshot", f"{SUITE}/golden_set"]
    return {"inputs": inputs, "rest": [k for k in keys if k not in inputs]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=int, default=10_000)
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--shards", type=int, default=4)
    ap.add_argument("--workers", default="1,2", help="worker counts, run one after the other")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the generated data here (reused if present)")
    args = ap.parse_args()
    reason = missing_tools()
    if reason:
        print(f"cannot run: {reason}")
        return 2
    print(f"cores: {os.cpu_count()}; load average at start: {_load()}", flush=True)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-shards-"))
    data = work / f"data_{args.chunks}_{args.questions}"
    config = data / "config.yaml"
    if not config.exists():
        t = time.perf_counter()
        generate(data, args.chunks, args.questions)
        print(f"generated {args.chunks} chunks, {args.questions} questions in {time.perf_counter() - t:.0f} s",
              flush=True)
    doc = yaml.safe_load(config.read_text(encoding="utf-8"))
    doc["shards"] = args.shards
    sharded = data / f"config_shards{args.shards}.yaml"
    sharded.write_text(yaml.safe_dump(doc), encoding="utf-8")
    root = new_root()
    suites = root / "suites.yaml"
    suites.write_text(yaml.safe_dump({"suites": {SUITE: {"config": str(sharded), "nightly": False}}}),
                      encoding="utf-8")
    dep = BenchDeployment(root, suites_file=suites, workers=1)
    results = []
    try:
        dep.start()
        # the pools' limits set before the shard runs start: runs that start at once and each find a pool without
        # a row yet race to insert it (Postgres: UniqueViolation on concurrency_limits, the run fails)
        for pool in ("judge", "live_systems"):
            _dagster(["instance", "concurrency", "set", pool, "2"], dep.env)
        keys = suite_keys(dep.env)
        for n in [int(x) for x in args.workers.split(",")]:
            r = evaluate(dep, n, args.shards, keys)
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        dep.stop()
        shutil.rmtree(root, ignore_errors=True)
        if args.workdir is None:
            shutil.rmtree(work, ignore_errors=True)
    print(f"\n{args.questions} questions, {args.chunks} chunks, shards: {args.shards}; Celery workers of one step "
          "at a time (Postgres, Redis)")
    print(f"{'workers':>7} {'snapshot+golden':>16} {'shards':>9} {'merge+rest':>11} {'total':>9} {'vs 1 worker':>12}"
          "  peak RSS per worker                load average (before, after)")
    base = results[0]["total_s"] if results else None
    for r in results:
        peaks = ", ".join(f"{w} {v:.0f} MiB" for w, v in r["peak_rss_mib"].items())
        print(f"{r['workers']:>7} {r['inputs_s']:>14.1f} s {r['shards_s']:>7.1f} s {r['rest_s']:>9.1f} s "
              f"{r['total_s']:>7.1f} s {r['total_s'] / base:>11.2f}x  {peaks:<34} "
              f"{r['load_before']} / {r['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
