"""Every error case of the hostile catalogue, refused by a fresh ``rag-eval run``: time and peak memory.

Goal (per case): refused in under 30 s of wall time and under 1 GiB of peak resident memory, the
previous output folder byte-identical. Each case runs the real CLI in its own process (imports and
Dagster start-up included) on the sample configuration with that case's one input broken
(``rag_eval_pipeline_tests/fixtures/hostile/``), into a copy of a folder holding a good run. Peak
memory is the child's ``ru_maxrss`` from ``os.wait4``; a case that passes 30 s is killed and reported.
Usage: python bench/bench_hostile_inputs.py [CASE ...]
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config  # noqa: E402
from rag_eval_pipeline_tests.defs.test_hostile_inputs import CASES, broken_config, load_case  # noqa: E402

LIMIT_S, LIMIT_BYTES = 30.0, 1 << 30


def hashes(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def run_cli(config: Path, out: Path, env: dict, timeout_s: float) -> tuple[int | None, float, int, str]:
    """(exit status or None when killed, wall seconds, peak RSS bytes, output tail)."""
    log = out.parent / f"{out.name}.log"
    with open(log, "wb") as sink:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                                 "--output", str(out)], cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
        status, rusage, killed = None, None, False
        while True:
            pid, raw, rusage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status = os.waitstatus_to_exitcode(raw)
                break
            if time.perf_counter() - start > timeout_s:
                os.killpg(proc.pid, 9)
                killed = True
            time.sleep(0.05)
        took = time.perf_counter() - start
        proc.returncode = status
    tail = log.read_text(encoding="utf-8", errors="replace")[-600:]
    return (None if killed else status), took, rusage.ru_maxrss * 1024, tail


def main() -> int:
    wanted = sys.argv[1:] or [c for c in CASES if load_case(c)["expect"]["outcome"] == "error"
                              and load_case(c)["target"] not in ("trec_run", "cli_signal")]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        home = tmp / "home"
        home.mkdir()
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_")}
        env.update(DAGSTER_HOME=str(home), PYTHONPATH=str(ROOT))
        good = tmp / "good"
        status, took, rss, tail = run_cli(sample_config(tmp), good, env, 300)
        if status != 0:
            print("the good run failed:\n" + tail)
            return 1
        print(f"good run: {took:.1f} s, peak RSS {rss / 2**20:.0f} MiB")
        print(f"{'case':<36} {'exit':>4} {'wall s':>7} {'peak MiB':>9}  folder   verdict")
        missed = 0
        for name in wanted:
            case_dir = tmp / name
            case_dir.mkdir()
            out = case_dir / "out"
            shutil.copytree(good, out)
            before = hashes(out)
            status, took, rss, tail = run_cli(broken_config(name, load_case(name), case_dir), out, env, LIMIT_S)
            same = hashes(out) == before
            ok = status == 1 and took < LIMIT_S and rss < LIMIT_BYTES and same
            missed += not ok
            print(f"{name:<36} {str(status):>4} {took:>7.1f} {rss / 2**20:>9.0f}  "
                  f"{'same' if same else 'CHANGED'}   {'OK' if ok else 'MISSED'}")
            if status != 1:
                print("   " + tail.replace("\n", "\n   "))
        print(f"{len(wanted) - missed}/{len(wanted)} cases refused under {LIMIT_S:.0f} s and "
              f"{LIMIT_BYTES >> 20} MiB with the folder byte-identical")
        return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
