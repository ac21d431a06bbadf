"""Benchmark: the embedded judge's answers/s on BEGIN dev, an older revision beside this tree, in one run.

Each side is the package at a git revision: ``--old`` (default ``b4ea2b9``, the judge before the
structure-based claims, extra-detail rule and batched encoder) exported with ``git archive`` into a
temporary folder, and ``--new`` (default: this working tree, uncommitted changes included). Every
measurement is a fresh Python process with that side first on ``sys.path``, pinned to the same
``--cores`` CPUs (``os.sched_setaffinity``), judging BEGIN's Wizard-of-Wikipedia dev file (430
responses, ``begin_wow/begin_dev_wow.tsv``) through the pipeline path (``judge_runs``) as
``bench/begin_calibration.py`` does, and reporting n, Cohen's kappa, the judging seconds (imports
and file reading excluded; the encoder's model load included) and the CPU seconds the process used
meanwhile (every thread; less sensitive than wall time to what else the machine runs). Sides
alternate old, new, old, new, ... for ``--rounds`` rounds so that a change in the machine's load
hits both; each line carries the load average at its start. The summary is the median answers/s
of each side with its spread (slowest-fastest round), the spread of the round-by-round ratios, the
median CPU seconds and their ratio, kappa of both sides, and whether the two sides (and every
round of one side) gave the same verdicts: a sha256 of every claim's (claim_id, verdict), and how
many answers got the same attributable / not attributable label.

``--scifact`` also times the whole SciFact chain (``rag-eval run --suite scifact``, wall seconds of
the command, each side writing to its own temporary output folder), old then new.

Usage: python bench/bench_rule_judge_throughput.py [--old REV] [--new REV|worktree] [--rounds 3]
       [--cores 2] [--scifact] [--datasets DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHILD = r"""
import hashlib, json, os, sys, time
tree, path = sys.argv[1], sys.argv[2]
sys.path.insert(0, tree); sys.path.insert(0, os.path.join(tree, "bench"))
from pathlib import Path
from begin_calibration import HUMAN, LABELS, frames, judge_labels_of, load_begin
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.metrics.agreement import cohen_kappa
rows, _ = load_begin(Path(path))
snapshot, runs = frames(rows)
judge = RuleBasedJudge()
cpu, t0 = time.process_time(), time.perf_counter()
labels, answers = judge_runs(runs, snapshot, judge)
seconds, cpu = time.perf_counter() - t0, time.process_time() - cpu
pred = judge_labels_of(labels, answers)
judged = [pred[q] for q in runs["question_id"].to_list()]
kappa = cohen_kappa([HUMAN[r["begin_label"].strip()] for r in rows], judged, LABELS)
claims = labels.sort("claim_id").select("claim_id", "verdict").iter_rows()
print(json.dumps({"n": len(rows), "kappa": kappa, "seconds": seconds, "cpu": cpu, "model": judge.model,
                  "sha": judge.prompt_sha256, "answers": judged,
                  "verdicts": hashlib.sha256("\\n".join(f"{c}|{v}" for c, v in claims).encode()).hexdigest()}))
"""


def export(rev: str, dest: Path) -> Path:
    """The package at git revision ``rev`` (or this tree for "worktree"), as a folder ``dest`` beside
    the repository (so that a suite's relative dataset paths, ../shared/datasets, resolve)."""
    if rev == "worktree":
        return REPO
    dest.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def pinned(cores: int):
    cpus = sorted(os.sched_getaffinity(0))[:cores]

    def pre() -> None:
        os.sched_setaffinity(0, cpus)
    return pre, cpus


def run_side(tree: Path, data: Path, cores: int) -> dict:
    pre, _ = pinned(cores)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(data)], env=env, cwd=tree,
                         capture_output=True, text=True, preexec_fn=pre, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{tree}: the judge failed:\n{out.stderr[-2000:]}")
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["load"] = load
    res["answers_per_s"] = res["n"] / res["seconds"]
    return res


def scifact(tree: Path, cores: int) -> float:
    pre, _ = pinned(cores)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(tree)
    exe = Path(sys.executable).with_name("rag-eval")
    with tempfile.TemporaryDirectory() as out_dir:
        t0 = time.perf_counter()
        done = subprocess.run([str(exe), "run", "--suite", "scifact", "--output", out_dir], env=env, cwd=tree,
                              capture_output=True, text=True, preexec_fn=pre, check=False)
        secs = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{tree}: rag-eval run --suite scifact exited {done.returncode}:\n{done.stdout[-1500:]}"
                         f"\n{done.stderr[-1500:]}")
    return secs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="b4ea2b9")
    ap.add_argument("--new", default="worktree")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--scifact", action="store_true")
    ap.add_argument("--scifact-only", action="store_true", help="only the SciFact chain, old then new")
    ap.add_argument("--datasets", type=Path,
                    default=Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets")))
    args = ap.parse_args(argv)
    data = args.datasets / "begin_wow" / "begin_dev_wow.tsv"
    if not data.is_file():
        print(f"{data}: file not found", file=sys.stderr)
        return 2
    if args.rounds < 1 or args.cores < 1:
        print("--rounds and --cores must be >= 1", file=sys.stderr)
        return 2
    old_dir = tempfile.mkdtemp(dir=REPO.parent, prefix=".bench-judge-old-")
    new_dir = tempfile.mkdtemp(dir=REPO.parent, prefix=".bench-judge-new-")
    try:
        trees = {"old": export(args.old, Path(old_dir)), "new": export(args.new, Path(new_dir))}
        _, cpus = pinned(args.cores)
        print(f"BEGIN dev, {args.cores} cores {cpus} of {os.cpu_count()}; old = {args.old}, new = {args.new}")
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for r in range(0 if args.scifact_only else args.rounds):
            for side in ("old", "new"):
                res = run_side(trees[side], data, args.cores)
                runs[side].append(res)
                print(f"round {r + 1} {side:3s}: {res['n']} answers in {res['seconds']:6.2f} s = "
                      f"{res['answers_per_s']:6.1f} answers/s ({res['cpu']:5.2f} CPU s), kappa {res['kappa']:.3f} "
                      f"({res['model']}; load average {res['load']:.2f})")
        ratio = float("nan")
        if not args.scifact_only:
            med = {s: statistics.median(x["answers_per_s"] for x in v) for s, v in runs.items()}
            lo = {s: min(x["answers_per_s"] for x in v) for s, v in runs.items()}
            hi = {s: max(x["answers_per_s"] for x in v) for s, v in runs.items()}
            kap = {s: v[0]["kappa"] for s, v in runs.items()}
            ratio = med["new"] / med["old"]
            pairs = [n["answers_per_s"] / o["answers_per_s"] for o, n in zip(runs["old"], runs["new"])]
            cpu = {s: statistics.median(x["cpu"] for x in v) for s, v in runs.items()}
            print(f"median answers/s: old {med['old']:.1f} ({lo['old']:.1f}-{hi['old']:.1f}), new {med['new']:.1f} "
                  f"({lo['new']:.1f}-{hi['new']:.1f}), ratio {ratio:.2f}x (round by round "
                  f"{min(pairs):.2f}-{max(pairs):.2f}x); median CPU seconds: old {cpu['old']:.2f}, new "
                  f"{cpu['new']:.2f}, ratio {cpu['old'] / cpu['new']:.2f}x; kappa old {kap['old']:.3f}, new "
                  f"{kap['new']:.3f}; load average now {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
            same = sum(a == b for a, b in zip(runs["old"][0]["answers"], runs["new"][0]["answers"]))
            steady = all(x["verdicts"] == v[0]["verdicts"] for v in runs.values() for x in v)
            print(f"labels: {same} of {runs['new'][0]['n']} answers' attributable/not labels equal; claim "
                  f"verdicts {'identical' if runs['old'][0]['verdicts'] == runs['new'][0]['verdicts'] else 'differ'}"
                  f" (sha256 old {runs['old'][0]['verdicts'][:12]}, new {runs['new'][0]['verdicts'][:12]}); every "
                  f"round of a side gave {'the same' if steady else 'DIFFERENT'} verdicts")
        if args.scifact or args.scifact_only:
            secs = {}
            for side in ("old", "new"):
                load = os.getloadavg()[0]
                secs[side] = scifact(trees[side], args.cores)
                print(f"SciFact chain {side}: {secs[side]:.1f} s (rag-eval run --suite scifact; load average "
                      f"{load:.2f})")
            print(f"SciFact chain time new/old: {secs['new'] / secs['old']:.2f}")
        print(f"{ratio:.2f}")
    finally:
        shutil.rmtree(old_dir, ignore_errors=True)
        shutil.rmtree(new_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
