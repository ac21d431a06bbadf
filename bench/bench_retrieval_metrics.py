"""Benchmark: retrieval metrics on 100,000 questions x 100 retrieved, against pytrec_eval (and ranx).

Run: ``python bench/bench_retrieval_metrics.py [--questions N] [--depth D] [--seed S] [--rounds R]
[--baseline-rev GIT_REV]``.

Generates a synthetic run (scores in [0, 30] rounded to 3 decimals, so about one question in six
has tied scores; rows in rank order as a retriever writes them) and graded qrels (1-5 judged
chunks per question, 70% of them among the retrieved, grades -1..3, so some questions have no
relevant chunk), writes both as Parquet, then measures each side in its own fresh process, one
after the other in this one run (the machine is shared: figures from separate runs do not compare):

* ours: ``retrieval_question_metrics(run_long, qrels, mode="trec_eval")`` from the polars frames, for
  k in {1, 3, 5, 10, 100} (P, recall, success, ndcg_cut, F1 at every k, plus recip_rank, map, Rprec,
  num_*), best of ``--rounds``, and ``mode="system"`` once. The process does nothing else, so its
  peak resident set size (``ru_maxrss``) is the memory of our metrics: printed with the resident set
  after reading the input (the frames) and the frames' own size. tracemalloc is not used: it does not
  see polars' or Arrow's allocations (Rust allocator).
* ``--baseline-rev``: the same, with the package as it was at that git revision (``git archive``
  into a temporary folder), interleaved round by round with ours: before / after a change, side by
  side, with its values checked equal to ours.
* pytrec_eval: building its dict input and ``RelevanceEvaluator(...).evaluate(run)`` timed apart;
  every per-question value compared with ours to 1e-9 (ours is null where trec_eval gives 0 for a
  question without relevant chunks: compared as 0; F1 has no pytrec_eval counterpart).
* ranx (``Run``/``Qrels`` from dicts, ``evaluate`` after a JIT warm-up) when it is importable.

Prints every figure, then a summary with the ratios and the machine's load average.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
KS = (1, 3, 5, 10, 100)


def make_data(n_q: int, depth: int, seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(seed)
    q_of_row = np.repeat(np.arange(n_q), depth)
    docs = rng.integers(0, 50_000_000, size=(n_q, depth))
    # distinct docs inside a question: add a per-position offset band
    docs = docs - docs % depth + np.arange(depth)[None, :]
    scores = np.sort(np.round(rng.random((n_q, depth)) * 30.0, 3), axis=1)[:, ::-1]
    qid = pl.Series("question_id", q_of_row).cast(pl.Utf8)
    qid = ("q" + qid).alias("question_id")
    chunk = ("d" + pl.Series(docs.ravel()).cast(pl.Utf8)).alias("chunk_id")
    run = pl.DataFrame({
        "system": pl.repeat("bench", n_q * depth, dtype=pl.Utf8, eager=True),
        "question_id": qid,
        "chunk_id": chunk,
        "score": scores.ravel(),
        "rank": np.tile(np.arange(1, depth + 1, dtype=np.int32), n_q),
    })
    # qrels: 1..5 judged chunks per question, mostly among the retrieved, some not retrieved
    n_j = rng.integers(1, 6, size=n_q)
    jq = np.repeat(np.arange(n_q), n_j)
    from_run = rng.random(jq.size) < 0.7
    pick = rng.integers(0, depth, size=jq.size)
    jdoc = np.where(from_run, docs[jq, pick], rng.integers(0, 50_000_000, size=jq.size) * depth + depth + 7)
    grade = rng.choice(np.array([-1, 0, 1, 2, 3]), size=jq.size, p=[0.05, 0.25, 0.35, 0.2, 0.15])
    qrels = pl.DataFrame({
        "question_id": ("q" + pl.Series(jq).cast(pl.Utf8)),
        "chunk_id": ("d" + pl.Series(jdoc).cast(pl.Utf8)),
        "grade": grade.astype(np.int32),
    }).unique(["question_id", "chunk_id"], keep="first", maintain_order=True)
    # trec_eval misbehaves on a topic whose judgments are all negative: give those a 0 judgment
    allneg = qrels.group_by("question_id").agg(pl.col("grade").max()).filter(pl.col("grade") < 0)
    qrels = pl.concat([qrels, allneg.select("question_id", pl.lit("dzero").alias("chunk_id"),
                                            pl.lit(0, pl.Int32).alias("grade"))])
    return run, qrels


# ----------------------------------------------------------------------------- child processes


def _rss_mib() -> float:
    """Current resident set size of this process, MiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child_ours(data: Path, rounds: int, out: Path | None) -> dict:
    """Our metrics alone in this process: times, and memory from the resident set size."""
    from rag_eval_pipeline.core.metrics import retrieval
    from rag_eval_pipeline.core.metrics.retrieval import retrieval_question_metrics

    run = pl.read_parquet(data / "run.parquet")
    qrels = pl.read_parquet(data / "qrels.parquet")
    frames_mib = (run.estimated_size() + qrels.estimated_size()) / 2**20
    rss_inputs = _rss_mib()
    peak_before = _peak_rss_mib()
    times, cpu = [], []
    ev = None
    for _ in range(rounds):
        del ev
        t, c = time.perf_counter(), time.process_time()
        ev = retrieval_question_metrics(run, qrels, ks=KS, mode="trec_eval")
        times.append(time.perf_counter() - t)
        cpu.append(time.process_time() - c)
    peak = _peak_rss_mib()
    t = time.perf_counter()
    retrieval_question_metrics(run, qrels, ks=KS, mode="system")
    t_system = time.perf_counter() - t
    rows = ev.per_question.height
    if out is not None:
        ev.per_question.write_parquet(out)
    return {"module": retrieval.__file__, "times": times, "cpu": cpu, "system_mode": t_system, "rows": rows,
            "frames_mib": frames_mib, "rss_inputs_mib": rss_inputs, "peak_before_mib": peak_before,
            "peak_rss_mib": peak}


def child_pytrec(data: Path, ours: Path) -> dict:
    import pytrec_eval

    run = pl.read_parquet(data / "run.parquet")
    qrels = pl.read_parquet(data / "qrels.parquet")
    t = time.perf_counter()
    run_d: dict[str, dict[str, float]] = {}
    for q, c, s in zip(run["question_id"].to_list(), run["chunk_id"].to_list(), run["score"].to_list()):
        run_d.setdefault(q, {})[c] = s
    qrels_d: dict[str, dict[str, int]] = {}
    for q, c, g in qrels.iter_rows():
        qrels_d.setdefault(q, {})[c] = g
    t_build = time.perf_counter() - t
    del run
    cut = ",".join(map(str, KS))
    meas = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}",
            "recip_rank", "map", "Rprec", "num_ret", "num_rel", "num_rel_ret"}
    t = time.perf_counter()
    evaluator = pytrec_eval.RelevanceEvaluator(qrels_d, meas)
    t_init = time.perf_counter() - t
    t, c = time.perf_counter(), time.process_time()
    res = evaluator.evaluate(run_d)
    t_eval, c_eval = time.perf_counter() - t, time.process_time() - c
    peak = _peak_rss_mib()
    del run_d, evaluator

    pq = pl.read_parquet(ours).with_columns(pl.col("value").fill_null(0.0)).filter(pl.col("metric") != "F1")
    names = pq.select(
        "question_id",
        pl.when(pl.col("k").is_null()).then(pl.col("metric"))
        .otherwise(pl.col("metric") + "_" + pl.col("k").cast(pl.Utf8)).alias("name"),
        "value")
    ref_rows = [(q, m, float(v)) for q, d in res.items() for m, v in d.items()]
    ref = pl.DataFrame(ref_rows, schema={"question_id": pl.Utf8, "name": pl.Utf8, "ref": pl.Float64}, orient="row")
    joined = names.join(ref, on=["question_id", "name"], how="full", coalesce=True)
    unmatched = joined.filter(pl.col("value").is_null() | pl.col("ref").is_null()).height
    maxdiff = joined.select((pl.col("value") - pl.col("ref")).abs().max()).item()
    return {"build": t_build, "init": t_init, "evaluate": t_eval, "evaluate_cpu": c_eval, "peak_rss_mib": peak,
            "compared": joined.height, "unmatched": unmatched, "maxdiff": maxdiff}


def child_ranx(data: Path) -> dict:
    from ranx import Qrels, Run, evaluate

    run = pl.read_parquet(data / "run.parquet")
    qrels = pl.read_parquet(data / "qrels.parquet")
    r: dict[str, dict[str, float]] = {}
    for q, c, s in zip(run["question_id"].to_list(), run["chunk_id"].to_list(), run["score"].to_list()):
        r.setdefault(q, {})[c] = s
    qd: dict[str, dict[str, int]] = {}
    for q, c, g in qrels.iter_rows():
        if g > 0:
            qd.setdefault(q, {})[c] = g
    rq, rr = Qrels(qd), Run(r)
    metrics = [f"{m}@{k}" for m in ("precision", "recall", "hit_rate", "ndcg") for k in KS]
    metrics += ["mrr", "map", "r-precision"]
    few = sorted(qd)[:50]  # numba compiles each kernel on first use: warm up on a slice
    evaluate(Qrels({q: qd[q] for q in few}), Run({q: r.get(q, {}) for q in few}), metrics, make_comparable=True)
    t = time.perf_counter()
    evaluate(rq, rr, metrics, make_comparable=True)
    return {"evaluate": time.perf_counter() - t}


def _spawn(args: list[str], pythonpath: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(pythonpath), POLARS_MAX_THREADS=os.environ.get("POLARS_MAX_THREADS", ""))
    if not env["POLARS_MAX_THREADS"]:
        del env["POLARS_MAX_THREADS"]
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env,
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"child {args[:2]} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _checkout(rev: str, dest: Path) -> Path:
    """The package as it was at git revision ``rev``, extracted under ``dest``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "rag_eval_pipeline"], capture_output=True,
                             check=True).stdout
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def _load() -> str:
    try:
        return ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3, help="time ours this many times per process, report the best")
    ap.add_argument("--baseline-rev", help="also time the package at this git revision, side by side")
    ap.add_argument("--child", choices=("ours", "pytrec", "ranx"), help=argparse.SUPPRESS)
    ap.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--ours", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child == "ours":
        print(json.dumps(child_ours(args.data, args.rounds, args.out)))
        return 0
    if args.child == "pytrec":
        print(json.dumps(child_pytrec(args.data, args.ours)))
        return 0
    if args.child == "ranx":
        print(json.dumps(child_ranx(args.data)))
        return 0

    print(f"retrieval metrics benchmark: {args.questions:,} questions x {args.depth} retrieved, k in {KS}; "
          f"{os.cpu_count()} CPUs, load average at start {_load()}")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        run, qrels = make_data(args.questions, args.depth, args.seed)
        run.write_parquet(tmp / "run.parquet")
        qrels.write_parquet(tmp / "qrels.parquet")
        print(f"  run rows {run.height:,}, qrels rows {qrels.height:,}", flush=True)
        del run, qrels
        trees = {"ours": ROOT}
        if args.baseline_rev:
            trees[f"baseline {args.baseline_rev}"] = _checkout(args.baseline_rev, tmp / "baseline")
        results: dict[str, list[dict]] = {name: [] for name in trees}
        for i in range(2):  # two fresh processes per tree, interleaved: the machine's load changes
            for name, tree in reversed(list(trees.items())):
                out = tmp / f"{name.split()[0]}.parquet"
                r = _spawn(["--child", "ours", "--data", str(tmp), "--rounds", str(args.rounds), "--out", str(out)],
                           tree)
                results[name].append(r)
                if not r["module"].startswith(str(tree)):
                    raise RuntimeError(f"{name}: imported {r['module']}, not the tree under {tree}")
                print(f"  {name:<24} process {i + 1}: trec_eval mode {', '.join(f'{t:.2f}' for t in r['times'])} s "
                      f"(cpu {min(r['cpu']):.2f} s), system mode {r['system_mode']:.2f} s; peak RSS "
                      f"{r['peak_rss_mib']:,.0f} MiB, after reading the input {r['rss_inputs_mib']:,.0f} MiB "
                      f"(frames {r['frames_mib']:,.0f} MiB); load {_load()}", flush=True)
        if args.baseline_rev:
            same = pl.read_parquet(tmp / "ours.parquet").equals(pl.read_parquet(tmp / "baseline.parquet"))
            print(f"  baseline and ours: per-question rows {'IDENTICAL' if same else 'DIFFERENT'}")
            if not same:
                return 1
        pt = None
        try:
            import pytrec_eval  # noqa: F401
        except ImportError:
            print("  pytrec_eval not installed (pip install pytrec_eval-terrier)")
        else:
            pt = _spawn(["--child", "pytrec", "--data", str(tmp), "--ours", str(tmp / "ours.parquet")], ROOT)
            ok = pt["unmatched"] == 0 and pt["maxdiff"] is not None and pt["maxdiff"] <= 1e-9
            print(f"  pytrec_eval: build dict input {pt['build']:.2f} s, RelevanceEvaluator() {pt['init']:.2f} s, "
                  f"evaluate() {pt['evaluate']:.2f} s (cpu {pt['evaluate_cpu']:.2f} s); peak RSS "
                  f"{pt['peak_rss_mib']:,.0f} MiB; load {_load()}")
            print(f"  values vs pytrec_eval: {pt['compared']:,} compared, unmatched {pt['unmatched']}, "
                  f"max |diff| {pt['maxdiff']:.3g} -> {'EQUAL' if ok else 'DIFFERENT'}", flush=True)
            if not ok:
                return 1
        rx = None
        try:
            import ranx  # noqa: F401
        except ImportError:
            print("  ranx not installed (pip install ranx) - ranx timing skipped")
        else:  # pragma: no cover - ranx is not a dependency
            rx = _spawn(["--child", "ranx", "--data", str(tmp)], ROOT)
            print(f"  ranx: evaluate() after JIT warm-up {rx['evaluate']:.2f} s")

    print("summary:")
    best = {name: min(min(r["times"]) for r in rs) for name, rs in results.items()}
    best_cpu = {name: min(min(r["cpu"]) for r in rs) for name, rs in results.items()}
    ours = results["ours"]
    peak = max(r["peak_rss_mib"] for r in ours)
    inputs = min(r["rss_inputs_mib"] for r in ours)
    print(f"  ours (trec_eval mode): best {best['ours']:.2f} s wall, {best_cpu['ours']:.2f} s cpu (all threads); "
          f"system mode {min(r['system_mode'] for r in ours):.2f} s; {ours[0]['rows']:,} metric rows")
    print(f"  ours, memory: peak RSS {peak / 1024:.2f} GiB in a process that reads the input and computes the "
          f"metrics only; {inputs / 1024:.2f} GiB after reading the input (frames {ours[0]['frames_mib'] / 1024:.2f} "
          f"GiB): {(peak - inputs) / 1024:.2f} GiB above the input")
    for name in best:
        if name != "ours":
            print(f"  {name}: best {best[name]:.2f} s wall, {best_cpu[name]:.2f} s cpu; ours/baseline = "
                  f"{best['ours'] / best[name]:.3f} wall, {best_cpu['ours'] / best_cpu[name]:.3f} cpu; "
                  f"peak RSS {max(r['peak_rss_mib'] for r in results[name]) / 1024:.2f} GiB")
    if pt is not None:
        print(f"  pytrec_eval evaluate() {pt['evaluate']:.2f} s (+ RelevanceEvaluator() {pt['init']:.2f} s; building "
              f"its dict input, not counted: {pt['build']:.2f} s): ours/pytrec_eval = "
              f"{best['ours'] / (pt['evaluate'] + pt['init']):.3f}")
    if rx is not None:
        print(f"  ranx evaluate() {rx['evaluate']:.2f} s: ours/ranx = {best['ours'] / rx['evaluate']:.3f}")
    print(f"  load average at the end {_load()} ({os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
