"""The hostile catalogue through a fresh ``rag-eval run`` per case: time and peak memory.

Two kinds of case (``rag_eval_pipeline_tests/fixtures/hostile/``):

- **error cases** (a broken golden set, corpus or run log): goal, refused in under 30 s of wall time and
  under 1 GiB of peak resident memory, the previous output folder byte-identical. The run goes into a
  copy of a folder holding a good run, recorded as the case's own suite's folder (each case's
  configuration file is an ad-hoc suite of its own: as when a suite reruns into its folder);
- **reply-size cases** (``reply_size: true``: a 200 MB body, a gzip bomb, 20 MB python answers, a 1 GiB
  trace file): a whole run of the sample plus the attacking system, into a fresh folder; goal, the run
  completes (exit 0, the attacked questions as ``error`` rows) under 1 GiB of peak resident memory.

Each case runs the real CLI in its own process (imports and Dagster start-up included). Peak memory is
the child's ``ru_maxrss`` from ``os.wait4``; a case past its time limit is killed and reported. The end
prints the count, the slowest case and the peak memory of every reply-size case, with the load average.
Usage: python bench/bench_hostile_inputs.py [CASE ...]
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import polars as pl  # noqa: E402
import yaml  # noqa: E402

from rag_eval_pipeline.core.suites import ad_hoc_suite  # noqa: E402
from rag_eval_pipeline_tests.core.systems import reference_callable  # noqa: E402
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config, sample_config_dict  # noqa: E402
from rag_eval_pipeline_tests.defs.test_hostile_inputs import CASES, broken_config, load_case  # noqa: E402
from rag_eval_pipeline_tests.servers.hostile_rag import HostileRagServer, gzip_bomb  # noqa: E402

LIMIT_S, LIMIT_BYTES = 30.0, 1 << 30
REPLY_LIMIT_S = 900.0
CLASSIC_TARGETS = ("golden", "corpus", "beir", "run_log")
OWNER_FILE = ".rag-eval-suite.json"


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


def reply_size_config(name: str, case: dict, case_dir: Path, server: HostileRagServer | None) -> Path:
    """The sample configuration plus the attacking system of a reply-size case."""
    cfg = sample_config_dict()
    target = case["target"]
    if target == "live_http":
        cfg["systems"].append({"name": "team_http", "kind": "http", "url": server.url, "max_retries": 0,
                               "concurrency": 4, **(case.get("system") or {})})
    elif target == "live_python":
        cfg["systems"].append({"name": "team_py", "kind": "python", "callable": case["callable"], "concurrency": 2})
    elif target == "traces_size":
        from rag_eval_pipeline.core.config import load_config
        from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot
        from rag_eval_pipeline_tests.defs.test_hostile_live import write_big_traces

        sample = load_config(ROOT / "data" / "sample" / "config.yaml")
        snap, _ = build_snapshot(sample)
        path = case_dir / "traces.jsonl"
        write_big_traces(path, build_golden(sample, snap), case["bytes"])
        print(f"   wrote {path.stat().st_size / 2**30:.2f} GiB of OTLP JSON", flush=True)
        cfg["systems"].append({"name": "team_traces", "kind": "traces", "path": str(path),
                               "question_id_attribute": "rag.question_id"})
    else:
        raise AssertionError(f"{name}: target {target!r} has no reply-size run")
    path = case_dir / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def error_rows(out: Path) -> int:
    runs = pl.read_parquet(out / "rag_runs.parquet")
    return runs.filter(pl.col("system").is_in(["team_http", "team_py", "team_traces"])
                       & (pl.col("decision") == "error")).height


def main() -> int:
    cases = sys.argv[1:] or CASES
    classic = [c for c in cases if load_case(c)["expect"]["outcome"] == "error"
               and load_case(c)["target"] in CLASSIC_TARGETS]
    sized = [c for c in cases if load_case(c).get("reply_size")]
    timings: list[tuple[str, float]] = []
    peaks: dict[str, int] = {}
    missed = 0
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
        if sized:
            print(f"{'reply-size case':<36} {'exit':>4} {'wall s':>7} {'peak MiB':>9}  errors   verdict")
        for name in sized:
            case = load_case(name)
            case_dir = tmp / name
            case_dir.mkdir()
            out = case_dir / "out"
            if case["target"] == "live_http":
                if "gzip_bomb" in case["faults"].values():
                    gzip_bomb()  # made before the run, not timed
                server = HostileRagServer(reference_callable.answer, case["faults"], **(case.get("server") or {}))
            else:
                server = None
            try:
                if server:
                    server.__enter__()
                config = reply_size_config(name, case, case_dir, server)
                status, took, rss, tail = run_cli(config, out, env, REPLY_LIMIT_S)
            finally:
                if server:
                    server.__exit__(None, None, None)
            n_err = error_rows(out) if status == 0 else -1
            expected = len(case["expect"].get("errors", {}))
            ok = status == 0 and rss < LIMIT_BYTES and (n_err >= expected if expected else n_err >= 0)
            missed += not ok
            timings.append((name, took))
            peaks[name] = rss
            print(f"{name:<36} {str(status):>4} {took:>7.1f} {rss / 2**20:>9.0f}  {n_err:>6}   "
                  f"{'OK' if ok else 'MISSED'}", flush=True)
            if status != 0:
                print("   " + tail.replace("\n", "\n   "))
            shutil.rmtree(case_dir, ignore_errors=True)  # a 1 GiB trace file does not wait for the end
        print(f"\n{'case':<36} {'exit':>4} {'wall s':>7} {'peak MiB':>9}  folder   verdict")
        for name in classic:
            case_dir = tmp / name
            case_dir.mkdir()
            out = case_dir / "out"
            shutil.copytree(good, out)
            config = broken_config(name, load_case(name), case_dir)
            (out / OWNER_FILE).write_text(json.dumps({"suite": ad_hoc_suite(config).name, "config": str(config)}),
                                          encoding="utf-8")  # the folder is this case's suite's own
            before = hashes(out)
            status, took, rss, tail = run_cli(config, out, env, LIMIT_S)
            same = hashes(out) == before
            ok = status == 1 and took < LIMIT_S and rss < LIMIT_BYTES and same
            missed += not ok
            timings.append((name, took))
            print(f"{name:<36} {str(status):>4} {took:>7.1f} {rss / 2**20:>9.0f}  "
                  f"{'same' if same else 'CHANGED'}   {'OK' if ok else 'MISSED'}", flush=True)
            if status != 1:
                print("   " + tail.replace("\n", "\n   "))
    total = len(classic) + len(sized)
    slowest = max(timings, key=lambda t: t[1]) if timings else ("none", 0.0)
    load = os.getloadavg()
    print(f"\n{total} cases ({len(classic)} refusals, {len(sized)} reply-size runs); {total - missed} OK, "
          f"{missed} missed; slowest {slowest[0]} {slowest[1]:.1f} s; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for name, rss in peaks.items():
        print(f"peak memory {name}: {rss / 2**20:.0f} MiB (limit {LIMIT_BYTES >> 20} MiB)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
