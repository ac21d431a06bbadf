"""The whole chain at scale: a synthetic corpus of 200,000 chunks and 10,000 to 100,000 questions.

Data (generated, seeded; nothing downloaded): a BEIR-format folder (``corpus.jsonl``, ``queries.jsonl``,
``qrels/test.tsv``; one chunk per document) over a synthetic vocabulary (Zipf-distributed words made of
syllables), a golden set with the three classes (60% answerable with one relevant chunk and one claim,
30% absent: words the corpus never uses, 10% clarify: two common words), and the log of a "team" system
(10 hits per question, the relevant chunk in the top 3 for 75% of the answerable questions; answer /
abstain / clarify / error decisions). The configuration evaluates that log and the built-in BM25 +
extractive reference system, with the rule-based judge.

Measurement: every asset (its node, with its checks) is materialised in its own fresh subprocess, in
topological order, into one output folder (upstream tables are read back from Parquet, as in a real
run). Per asset: the step's own wall time (Dagster STEP_START..STEP_SUCCESS, inputs loaded and outputs
written) and its checks', the CPU seconds the process spent materialising them (every thread; much less
sensitive than wall time to other jobs on the machine), and the subprocess's peak resident memory
(``ru_maxrss``, which includes the ~0.3 GiB of Python + Dagster imports). Goals: peak <= 2 GiB per asset
at every size; time growing no worse than linearly in questions: between two sizes, time ratio <= 1.05 x
the question ratio (4x the questions: <= 4.2x), on CPU seconds and on wall seconds.

Sizes run one at a time when the machine is quiet: each size's figures (with the load average before and
after) are kept in ``--workdir`` as ``result_<chunks>_<questions>.json``, and the table compares every
requested size found there (``--report`` prints it without running anything).

Usage:  python bench/bench_scale.py --workdir DIR --questions 10000        (one size; then 40000, 100000)
        python bench/bench_scale.py --workdir DIR --questions 10000,40000,100000 --report
        python bench/bench_scale.py --workdir DIR --questions 10000 --profile judging  (cProfile, one asset node)
"""

import argparse
import cProfile
import json
import os
import pstats
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
GOAL_PEAK_GIB = 2.0
GOAL_GROWTH = 1.05  # time ratio / question ratio between two sizes
SYLLABLES = [c + v for c in "bcdfghjklmnprstvz" for v in "aeiou"]  # 85 syllables


# ---------------------------------------------------------------------------------------- data

def _vocabulary(n: int, rng: np.random.Generator) -> list[str]:
    words: set[str] = set()
    while len(words) < n:
        k = rng.integers(2, 5, size=n)
        picks = rng.integers(0, len(SYLLABLES), size=(n, 4))
        for length, row in zip(k, picks):
            words.add("".join(SYLLABLES[i] for i in row[:length]))
            if len(words) >= n:
                break
    return sorted(words)


def generate(folder: Path, n_chunks: int, n_questions: int, seed: int = 7) -> Path:
    """Write the BEIR folder, golden set, team log and configuration under ``folder``; return the config path."""
    rng = np.random.default_rng(seed)
    vocab = np.array(_vocabulary(40_000, rng))
    corpus_vocab, absent_vocab = vocab[:36_000], vocab[36_000:]  # absent questions use words no document has
    zipf = 1.0 / np.arange(1, len(corpus_vocab) + 1) ** 1.05
    zipf /= zipf.sum()

    beir = folder / "beir"
    (beir / "qrels").mkdir(parents=True, exist_ok=True)
    n_sent, sent_len = 3, 12
    words = rng.choice(len(corpus_vocab), size=(n_chunks, n_sent * sent_len + 3), p=zipf)
    doc_sentences: list[list[str]] = []
    with open(beir / "corpus.jsonl", "w", encoding="utf-8") as fh:
        for d in range(n_chunks):
            w = corpus_vocab[words[d]]
            sentences = [" ".join(w[3 + s * sent_len: 3 + (s + 1) * sent_len]).capitalize() + "."
                         for s in range(n_sent)]
            doc_sentences.append(sentences)
            fh.write(json.dumps({"_id": f"d{d}", "title": " ".join(w[:3]).title(), "text": " ".join(sentences)}) + "\n")

    classes = rng.choice(["answerable", "absent", "clarify"], size=n_questions, p=[0.6, 0.3, 0.1])
    golden, queries, qrels, log = [], [], [], []
    common = corpus_vocab[:50]
    for q, cls in enumerate(classes):
        qid = f"q{q}"
        seg = {"class": str(cls), "topic": f"t{q % 8}"}
        split = "test" if q % 2 else "dev"
        if cls == "answerable":
            d = int(rng.integers(n_chunks))
            sentence = doc_sentences[d][0]
            toks = sentence.rstrip(".").lower().split()
            rare = sorted(set(toks), key=lambda t: -np.searchsorted(corpus_vocab, t))[:5]  # arbitrary but fixed
            question = " ".join(rng.permutation(rare)) + "?"
            golden.append({"question_id": qid, "question": question, "answerability": "answerable",
                           "relevant": [{"chunk_id": f"d{d}#0", "grade": 2}], "reference_answer": sentence,
                           "claims": [{"claim_id": "c1", "text": sentence, "supporting": [f"d{d}#0"]}],
                           "split": split, "segments": seg, "user_groups": []})
            qrels.append(f"{qid}\td{d}\t2")
        elif cls == "absent":
            d = None
            question = " ".join(rng.choice(absent_vocab, 4)) + " " + " ".join(rng.choice(common, 2)) + "?"
            golden.append({"question_id": qid, "question": question, "answerability": "absent", "relevant": [],
                           "reference_answer": None, "claims": [], "split": split, "segments": seg, "user_groups": []})
        else:
            d = None
            question = " ".join(rng.choice(common, 2)) + "?"
            golden.append({"question_id": qid, "question": question, "answerability": "clarify", "relevant": [],
                           "reference_answer": None, "claims": [], "split": split, "segments": seg, "user_groups": []})
        queries.append({"_id": qid, "text": question})
        # the team system's log record
        hits = [int(x) for x in rng.choice(n_chunks, size=12, replace=False)]
        if d is not None:
            hits = [h for h in hits if h != d]
            if rng.random() < 0.75:
                hits.insert(int(rng.integers(0, 3)), d)
        hits = hits[:10]
        scores = np.sort(rng.random(10))[::-1]
        r = rng.random()
        if rng.random() < 0.005:
            rec = {"decision": "error", "answer": None, "error": "timeout"}
        elif cls == "answerable" and r < 0.85 or cls == "absent" and r < 0.3 or cls == "clarify" and r < 0.4:
            source = d if d is not None and d in hits[:3] else hits[0]
            rec = {"decision": "answer", "answer": doc_sentences[source][0] + " " + doc_sentences[hits[1]][1],
                   "citations": [f"d{source}#0"]}
        elif cls == "clarify":
            rec = {"decision": "clarify", "answer": "Which one do you mean?"}
        else:
            rec = {"decision": "abstain", "answer": "I do not know."}
        retrieved = [{"chunk_id": f"d{h}#0", "score": round(float(s), 4), "rank": i + 1}
                     for i, (h, s) in enumerate(zip(hits, scores))]
        log.append({"question_id": qid, "retrieved": retrieved,
                    "model": "team-model-1", "prompt_version": "v1", **rec})

    def jsonl(path: Path, rows) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    jsonl(beir / "queries.jsonl", queries)
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(qrels) + "\n", encoding="utf-8")
    jsonl(folder / "golden.jsonl", golden)
    jsonl(folder / "runs" / "team.jsonl", log)
    config = {
        "corpus": {"source": "beir", "path": "beir", "split": "test"},
        "golden": {"path": "golden.jsonl"},
        "systems": [
            {"name": "bm25", "kind": "reference",
             "retriever": {"type": "bm25", "language": "english", "stopwords": "en", "k": 10},
             "generator": {"type": "extractive", "abstain_threshold": 0.4, "context_k": 3}, "prompt_version": "none"},
            {"name": "team", "kind": "logged", "path": "runs/team.jsonl"},
        ],
        "metrics": {"ks": [1, 3, 5, 10], "bootstrap_resamples": 1000},
        "judge": {"type": "rule_based", "max_error_share": 0.05},
        "gates": {"split": "test", "baseline_system": "bm25", "candidate_systems": ["team"], "promote": "team",
                  "thresholds": [{"metric": "recall_5", "max_abs_drop": 0.5}]},
        "seed": 0,
    }
    import yaml

    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------ measurement

def _vm_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def nodes_in_order() -> list[tuple[str, list[str]]]:
    """(node name, asset keys) of every asset node of the code location, in topological order."""
    import dagster as dg

    from rag_eval_pipeline.definitions import ASSETS

    # the computed assets (the promoted baseline is an external asset: no node)
    nodes = {a.node_def.name: a for a in ASSETS if isinstance(a, dg.AssetsDefinition) and a.is_materializable}
    producer = {k: name for name, a in nodes.items() for k in a.keys}
    order, done = [], set()

    def visit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for dep in sorted(nodes[name].dependency_keys, key=str):
            if dep in producer and producer[dep] != name:
                visit(producer[dep])
        order.append(name)

    for name in sorted(nodes):
        visit(name)
    return [(name, [k.to_user_string() for k in nodes[name].keys]) for name in order]


def run_node(config: str, out: str, keys: list[str], profile: str | None) -> dict:
    """In this (fresh) process: materialise one asset node with its checks; return the measurements."""
    import dagster as dg

    from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources

    base_rss = _vm_kib("VmRSS")
    selection = dg.AssetSelection.assets(*[dg.AssetKey.from_user_string(k) for k in keys])
    cpu0 = time.process_time()
    start = time.perf_counter()
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    result = dg.materialize([*ASSETS, *CHECKS], selection=selection, resources=build_resources(config, out),
                            raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    if prof:
        prof.disable()
        pstats.Stats(prof, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    steps, failures = {}, []
    for ev in result.all_events:
        if ev.event_type_value == "STEP_SUCCESS":
            steps[ev.step_key] = ev.event_specific_data.duration_ms / 1000
        elif ev.is_step_failure:
            err = ev.event_specific_data.error
            while err.cause is not None:
                err = err.cause
            failures.append(f"{ev.step_key}: {err.message.strip()[:500]}")
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return {"wall_s": wall, "cpu_s": cpu, "steps": steps, "checks": checks, "failures": failures,
            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "base_rss_mib": base_rss / 1024}


def measure(config: Path, out: Path, profile: str | None = None) -> list[dict]:
    rows = []
    for name, keys in nodes_in_order():
        if profile and name != profile and profile not in keys:
            continue
        cmd = [sys.executable, __file__, "--node", json.dumps({"config": str(config), "out": str(out), "keys": keys,
                                                                "profile": bool(profile)})]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT,
                              env=dict(os.environ, PYTHONWARNINGS="ignore"))
        if profile:
            print(proc.stderr[-12000:])
        line = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH ")]
        if proc.returncode or not line:
            raise SystemExit(f"node {name} crashed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        m = json.loads(line[-1][6:])
        own = sum(v for k, v in m["steps"].items() if k == name)
        check_s = sum(v for k, v in m["steps"].items() if k != name)
        rows.append({"node": name, "step_s": own, "checks_s": check_s, **m})
        status = "ok" if not m["failures"] else "FAILED " + "; ".join(m["failures"])
        print(f"  {name:<20} step {own:7.2f} s  checks {check_s:6.2f} s  cpu {m['cpu_s']:7.2f} s  "
              f"peak RSS {m['peak_rss_mib']:7.0f} MiB  {status}",
              flush=True)
        if name not in m["steps"]:
            raise SystemExit(f"node {name} did not materialise: the measurement stops here")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chunks", type=int, default=200_000)
    ap.add_argument("--questions", default="10000", help="comma-separated sizes")
    ap.add_argument("--report", action="store_true", help="only print the table of the sizes kept in --workdir")
    ap.add_argument("--workdir", help="keep generated data and outputs here (default: a temporary folder)")
    ap.add_argument("--profile", help="cProfile this asset node only (printed to stderr)")
    ap.add_argument("--node", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.node:
        spec = json.loads(args.node)
        print("BENCH " + json.dumps(run_node(spec["config"], spec["out"], spec["keys"],
                                             "1" if spec["profile"] else None)), flush=True)
        return 0

    sizes = [int(s) for s in args.questions.split(",")]
    if (args.report or len(sizes) > 1) and not args.workdir:
        raise SystemExit("--report and several sizes need --workdir (each size's figures are kept there)")
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench_scale_"))
    try:
        for n in ([] if args.report else sizes):
            data = work / f"data_{args.chunks}_{n}"
            config = data / "config.yaml"
            if not config.exists():
                t = time.perf_counter()
                generate(data, args.chunks, n)
                print(f"generated {args.chunks} chunks, {n} questions in {time.perf_counter() - t:.1f} s ({data})")
            out = work / f"out_{args.chunks}_{n}"
            if not args.profile:  # a profile reads the upstream tables of the last full measurement
                shutil.rmtree(out, ignore_errors=True)
            load_before = _load()
            print(f"\n{args.chunks} chunks, {n} questions: one subprocess per asset (load average {load_before})")
            rows = measure(config, out, args.profile)
            if not args.profile:
                (work / f"result_{args.chunks}_{n}.json").write_text(json.dumps(
                    {"questions": n, "chunks": args.chunks, "load_before": load_before, "load_after": _load(),
                     "cores": os.cpu_count(), "rows": rows}), encoding="utf-8")
        if args.profile:
            return 0
        results = {}
        for n in sizes:
            path = work / f"result_{args.chunks}_{n}.json"
            if path.exists():
                results[n] = json.loads(path.read_text(encoding="utf-8"))
            else:
                print(f"(no figures for {n} questions in {work}: run that size first)")
        report(results)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def report(results: dict[int, dict]) -> None:
    """The comparison table of every measured size: per asset wall s / cpu s / peak MiB, totals, growth."""
    sizes = sorted(results)
    if not sizes:
        return
    for n in sizes:
        r = results[n]
        print(f"{n} questions: load average {r['load_before']} before, {r['load_after']} after ({r['cores']} cores)")
    print(f"\n{'asset':<20} " + " ".join(f"{f'{n} q: wall s / cpu s / MiB':>32}" for n in sizes))
    worst = {n: max(r["peak_rss_mib"] for r in results[n]["rows"]) for n in sizes}
    for i, row in enumerate(results[sizes[0]]["rows"]):
        cells = []
        for n in sizes:
            r = results[n]["rows"][i]
            cells.append(f"{r['step_s'] + r['checks_s']:9.1f} {r['cpu_s']:9.1f} {r['peak_rss_mib']:7.0f}")
        print(f"{row['node']:<20} " + " ".join(f"{c:>32}" for c in cells))
    wall = {n: sum(r["step_s"] + r["checks_s"] for r in results[n]["rows"]) for n in sizes}
    cpu = {n: sum(r["cpu_s"] for r in results[n]["rows"]) for n in sizes}
    print(f"{'total':<20} " + " ".join(f"{f'{wall[n]:9.1f} {cpu[n]:9.1f}':>32}" for n in sizes))
    for a, b in zip(sizes, sizes[1:]):
        q = b / a
        for what, t in (("cpu", cpu), ("wall", wall)):
            ratio = t[b] / t[a]
            ok = "OK" if ratio <= GOAL_GROWTH * q else "WORSE than linear"
            print(f"{a} -> {b} questions (x{q:.2f}): {what} time x{ratio:.2f} "
                  f"(goal <= x{GOAL_GROWTH * q:.2f}: {ok})")
    for n in sizes:
        print(f"{n} questions: worst peak RSS {worst[n] / 1024:.2f} GiB (goal <= {GOAL_PEAK_GIB} GiB: "
              f"{'OK' if worst[n] / 1024 <= GOAL_PEAK_GIB else 'MISSED'})")


if __name__ == "__main__":
    sys.exit(main())
