"""The sample's full evaluation on each executor, side by side in one run: in process, multiprocess, and
Celery workers (1, then 2) on the tested deployment (Postgres storage, Redis broker; docs/scale-out.md).

1. ``rag-eval run`` (every step in one process).
2. ``dagster job execute`` with the multiprocess executor, ``max_concurrent: 2``, steps forked from a
   forkserver that preloaded the code location and the instance's storages (``rag_eval_pipeline.defs.preload``;
   Dagster's default, ``spawn``, imports them in every step).
3. The deployment of ``rag_eval_pipeline_tests/deploy/services.py`` (Postgres 15, Redis, Celery workers of
   one step at a time, the daemon and the webserver, on 127.0.0.1), ``dagster job execute`` with
   ``RAG_EVAL_EXECUTOR=celery``: first one worker, then a second one started beside it. The output folder
   is emptied before each run, so every run does the same work.

Printed per run: wall seconds (the CLI's whole command: start-up, every step, the run's end), and for the
Celery runs each worker's peak RSS (VmHWM of its processes; cumulative, so a worker's peak in the second
run covers the first too). The load average is printed with the figures: on a loaded machine every figure
grows, so compare the figures of one run only.

Needs Postgres 15 and redis-server (Debian packages) and requirements-deploy.txt, as the deployment test.
Usage:  python bench/bench_deploy.py [--skip-celery]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_eval_pipeline_tests.conftest import SAMPLE_DIR  # noqa: E402
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home  # noqa: E402
from rag_eval_pipeline_tests.deploy.sample import sample_suites_file  # noqa: E402
from rag_eval_pipeline_tests.deploy.services import BIN, Deployment, missing_tools, new_root  # noqa: E402

JOB = "sample__full_evaluation"


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _timed(cmd: list[str], env: dict) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd[:4])}... failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return time.perf_counter() - t


def _peak_rss_mib(pgid: int) -> float:
    """Largest VmHWM (MiB) among the live processes of one process group (a worker and its pool process)."""
    peak = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != pgid:
                continue
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
        except (OSError, ProcessLookupError):
            continue
    return peak / 1024


def row(label: str, seconds: float, base: float | None, extra: str = "") -> None:
    ratio = f"{seconds / base:5.2f}x" if base else "  1.00x"
    print(f"{label:<44} {seconds:7.1f} s  {ratio}  load {_load()}{extra}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--skip-celery", action="store_true", help="only the in-process and multiprocess runs")
    args = ap.parse_args()
    print(f"cores: {os.cpu_count()}; load average at start: {_load()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-deploy-"))
    try:
        home = dagster_home(tmp / "a")
        base = _timed([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config",
                       str(SAMPLE_DIR / "config.yaml"), "--output", str(tmp / "inproc")],
                      cli_env(home, PYTHONPATH=str(ROOT)))
        row("in process (rag-eval run)", base, None)

        home = dagster_home(tmp / "b")
        conf = tmp / "multiprocess.yaml"
        conf.write_text("execution:\n  config:\n    multiprocess:\n      max_concurrent: 2\n      start_method:\n"
                        "        forkserver:\n          preload_modules: [rag_eval_pipeline.defs.preload]\n",
                        encoding="utf-8")
        env = cli_env(home, PYTHONPATH=str(ROOT), RAG_EVAL_SUITES=str(sample_suites_file(tmp)),
                      RAG_EVAL_OUTPUT_DIR=str(tmp / "mp"))
        row("multiprocess, max_concurrent 2, forkserver", _timed(
            [str(BIN / "dagster"), "job", "execute", "-m", "rag_eval_pipeline.definitions", "-j", JOB, "-c", str(conf)],
            env), base)

        if args.skip_celery:
            return
        reason = missing_tools()
        if reason:
            print(f"Celery runs skipped: {reason}")
            return
        root = new_root()
        dep = Deployment(root, suites_file=sample_suites_file(root), workers=1)
        try:
            dep.start()
            cmd = [str(BIN / "dagster"), "job", "execute", "-m", "rag_eval_pipeline.definitions", "-j", JOB]
            for n in (1, 2):
                if n == 2:
                    dep.start_worker(2)
                    while " ready." not in dep.log("w2"):
                        time.sleep(1.0)
                shutil.rmtree(dep.out / "sample", ignore_errors=True)
                seconds = _timed(cmd, dep.env)
                peaks = ", ".join(f"w{i} {_peak_rss_mib(dep.procs[f'w{i}'].pid):.0f} MiB" for i in range(1, n + 1))
                row(f"Celery, {n} worker{'s' if n > 1 else ''} (Postgres, Redis)", seconds, base,
                    f"  peak RSS: {peaks}")
        finally:
            dep.stop()
            shutil.rmtree(root, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
