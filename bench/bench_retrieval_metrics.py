"""Benchmark: retrieval metrics on 100,000 questions x 100 retrieved, against pytrec_eval (and ranx).

Run: ``python bench/bench_retrieval_metrics.py [--questions N] [--depth D] [--seed S]``.

Generates a synthetic run (scores in [0, 30] rounded to 3 decimals, so about one question in six
has tied scores; rows in rank order as a retriever writes them) and graded qrels (1-5 judged
chunks per question, 70% of them among the retrieved, grades -1..3, so some questions have no
relevant chunk), then times, for cutoffs k in {1, 3, 5, 10, 100}:

* ours: ``retrieval_question_metrics(run_long, qrels, mode="trec_eval")`` from polars frames
  (P, recall, success, ndcg_cut at every k, plus recip_rank, map, Rprec, num_*; F1 is computed
  too but has no pytrec_eval counterpart), and ``mode="system"``;
* pytrec_eval: ``RelevanceEvaluator(...).evaluate(run)`` on its native dict input (the time to
  build the dicts is reported apart);
* ranx (``Run``/``Qrels`` from dicts, ``evaluate``) when it is importable.

It checks that every per-question value equals pytrec_eval's to 1e-9 (ours is null where
trec_eval gives 0 for a question without relevant chunks: compared as 0), and prints the times,
the ratios and the peak memory (tracemalloc peak of Python-side allocations for each step, and the
process's maximum resident set size).
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np
import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rag_eval_pipeline.core.metrics.retrieval import retrieval_question_metrics  # noqa: E402

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


def timed(label: str, fn):
    tracemalloc.start()
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    dt, dc = time.perf_counter() - t, time.process_time() - c
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"  {label:<44s} {dt:8.2f} s wall {dc:8.2f} s cpu   peak traced {peak / 2**20:8.1f} MiB", flush=True)
    return out, dt, peak


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=100_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--repeat", type=int, default=1, help="time ours this many times, report the best")
    args = ap.parse_args()

    print(f"retrieval metrics benchmark: {args.questions:,} questions x {args.depth} retrieved, k in {KS}")
    run, qrels = make_data(args.questions, args.depth, args.seed)
    print(f"  run rows {run.height:,}, qrels rows {qrels.height:,}")

    best = None
    for i in range(args.repeat):
        ev, t_ours, peak_ours = timed(f"ours, mode=trec_eval (try {i + 1})",
                                      lambda: retrieval_question_metrics(run, qrels, ks=KS, mode="trec_eval"))
        best = t_ours if best is None else min(best, t_ours)
    t_ours = best
    _, t_sys, _ = timed("ours, mode=system",
                        lambda: retrieval_question_metrics(run, qrels, ks=KS, mode="system"))
    print(f"  ours: {ev.per_question.height:,} metric rows")

    results = {"ours": t_ours}
    try:
        import pytrec_eval
    except ImportError:
        print("pytrec_eval not installed (pip install pytrec_eval-terrier)")
        pytrec_eval = None
    if pytrec_eval is not None:
        def build():
            r: dict[str, dict[str, float]] = {}
            for q, c, s in zip(run["question_id"].to_list(), run["chunk_id"].to_list(), run["score"].to_list()):
                r.setdefault(q, {})[c] = s
            qd: dict[str, dict[str, int]] = {}
            for q, c, g in qrels.iter_rows():
                qd.setdefault(q, {})[c] = g
            return r, qd
        (run_d, qrels_d), t_build, _ = timed("pytrec_eval: build dict input", build)
        cut = ",".join(map(str, KS))
        meas = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}",
                "recip_rank", "map", "Rprec", "num_ret", "num_rel", "num_rel_ret"}
        evaluator, t_init, _ = timed("pytrec_eval: RelevanceEvaluator()", lambda: pytrec_eval.RelevanceEvaluator(qrels_d, meas))
        res, t_eval, peak_pt = timed("pytrec_eval: evaluate()", lambda: evaluator.evaluate(run_d))
        results["pytrec_eval"] = t_init + t_eval
        del run_d

        # ---- equality check
        pq = ev.per_question.with_columns(pl.col("value").fill_null(0.0))
        pq = pq.filter(pl.col("metric") != "F1")
        names = pq.select(
            "question_id",
            pl.when(pl.col("k").is_null()).then(pl.col("metric"))
            .otherwise(pl.col("metric") + "_" + pl.col("k").cast(pl.Utf8)).alias("name"),
            "value")
        ref_rows = [(q, m, float(v)) for q, d in res.items() for m, v in d.items()]
        ref = pl.DataFrame(ref_rows, schema={"question_id": pl.Utf8, "name": pl.Utf8, "ref": pl.Float64},
                           orient="row")
        joined = names.join(ref, on=["question_id", "name"], how="full", coalesce=True)
        missing = joined.filter(pl.col("value").is_null() | pl.col("ref").is_null()).height
        maxdiff = joined.select((pl.col("value") - pl.col("ref")).abs().max()).item()
        ok = missing == 0 and maxdiff is not None and maxdiff <= 1e-9
        print(f"  values vs pytrec_eval: {joined.height:,} compared, unmatched {missing}, "
              f"max |diff| {maxdiff:.3g} -> {'EQUAL' if ok else 'DIFFERENT'}")
        if not ok:
            return 1

    try:
        import ranx  # noqa: F401
    except ImportError:
        print("  ranx not installed (pip install ranx) - ranx timing skipped")
    else:  # pragma: no cover - ranx is not a dependency
        from ranx import Qrels, Run, evaluate
        r: dict[str, dict[str, float]] = {}
        for q, c, s in zip(run["question_id"].to_list(), run["chunk_id"].to_list(), run["score"].to_list()):
            r.setdefault(q, {})[c] = s
        qd: dict[str, dict[str, int]] = {}
        for q, c, g in qrels.iter_rows():
            if g > 0:
                qd.setdefault(q, {})[c] = g
        (rq, rr), _, _ = timed("ranx: Qrels/Run from dicts", lambda: (Qrels(qd), Run(r)))
        metrics = [f"{m}@{k}" for m in ("precision", "recall", "hit_rate", "ndcg") for k in KS] + ["mrr", "map", "r-precision"]
        # JIT warm-up on a small slice first: numba compiles each metric kernel on first use.
        few = sorted(qd)[:50]
        evaluate(Qrels({q: qd[q] for q in few}), Run({q: r.get(q, {}) for q in few}), metrics, make_comparable=True)
        _, t_ranx, _ = timed("ranx: evaluate() after JIT warm-up",
                             lambda: evaluate(rq, rr, metrics, make_comparable=True))
        results["ranx"] = t_ranx

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("summary:")
    print(f"  ours (trec_eval mode)   {results['ours']:.2f} s; system mode {t_sys:.2f} s; "
          f"peak traced {peak_ours / 2**20:.0f} MiB")
    for other in ("pytrec_eval", "ranx"):
        if other in results:
            print(f"  {other:<22}  {results[other]:.2f} s   ours/{other} = {results['ours'] / results[other]:.3f}"
                  f"   ({results[other] / results['ours']:.1f}x faster)")
    if "pytrec_eval" in results:
        print(f"  pytrec_eval dict building (not counted above): {t_build:.2f} s; evaluate() peak traced "
              f"{peak_pt / 2**20:.0f} MiB")
    print(f"  process max RSS {rss:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
