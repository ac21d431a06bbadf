"""Whole chain on the embedded sample, in a fresh process: wall time (goal <= 30 s on 2 cores).

Runs ``rag-eval run`` (the README's quick-start command, minus the install) with a fresh DAGSTER_HOME and
output folder, so imports, Dagster start-up and every asset and check are counted.
Usage: python bench/bench_chain.py [--repeat N]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    times = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            home = Path(tmp) / "home"
            home.mkdir()
            (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
            env = dict(os.environ, DAGSTER_HOME=str(home))
            start = time.perf_counter()
            cmd = [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--output", str(Path(tmp) / "out")]
            proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            if proc.returncode != 0:
                print(proc.stdout[-3000:], proc.stderr[-3000:])
                return 1
    best = min(times)
    print(f"whole chain on the sample, fresh process: best {best:.1f} s of {len(times)} "
          f"(all: {', '.join(f'{t:.1f}' for t in times)}); goal <= 30 s -> {'OK' if best <= 30 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
