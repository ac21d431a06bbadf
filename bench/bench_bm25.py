"""Benchmark: BM25 over BEIR SciFact (test split) through our wrapper vs ``bm25s`` directly.

Both sides use the same tokenisation (``bm25s.tokenize``, English stopwords, PyStemmer "english"),
index title + " " + text for the 5,183 abstracts and run the 300 test queries at k=100.
Timing = index + queries, best of 3 (``time.perf_counter``). Prints the ratio wrapper / direct
(goal <= 1.25) and nDCG@10 / recall@100 from ``pytrec_eval`` (trec_eval's definitions).

If ``sentence_transformers`` is importable it also reports dense (all-MiniLM-L6-v2, exact cosine)
and hybrid (reciprocal rank fusion of BM25 and dense, k_rrf=60) nDCG@10 / recall@100.

Usage: python bench/bench_bm25.py [--datasets DIR] [--repeats 3] [--no-dense]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import time
from pathlib import Path

import bm25s
import pytrec_eval
import Stemmer

from rag_eval_pipeline.core.retrieval.bm25 import BM25Retriever
from rag_eval_pipeline.core.retrieval.fusion import reciprocal_rank_fusion

K = 100


def load_scifact(root: Path):
    """(doc_ids, doc_texts, query_ids, query_texts, qrels) for the SciFact test split."""
    doc_ids, texts = [], []
    with open(root / "corpus.jsonl", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            doc_ids.append(d["_id"])
            texts.append((d.get("title") or "") + " " + d["text"])
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    queries = {}
    with open(root / "queries.jsonl", encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            if q["_id"] in qrels:
                queries[q["_id"]] = q["text"]
    qids = sorted(queries, key=int)
    return doc_ids, texts, qids, [queries[q] for q in qids], qrels


def evaluate(run: dict[str, dict[str, float]], qrels) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 over the qrels' queries (pytrec_eval; missing runs count 0)."""
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    res = ev.evaluate({q: (run.get(q) or {"__none__": 0.0}) for q in qrels})
    n = len(qrels)
    return {
        "ndcg@10": sum(r["ndcg_cut_10"] for r in res.values()) / n,
        "recall@100": sum(r["recall_100"] for r in res.values()) / n,
    }


def to_run(qids, hits) -> dict[str, dict[str, float]]:
    return {q: {d: float(s) for d, s in h} for q, h in zip(qids, hits)}


def direct_bm25s(doc_ids, texts, queries, k=K):
    """Plain bm25s usage, as its README shows; zero-score hits dropped."""
    stemmer = Stemmer.Stemmer("english")
    tok = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer, show_progress=False)
    r = bm25s.BM25()
    r.index(tok, show_progress=False)
    qtok = bm25s.tokenize(queries, stopwords="en", stemmer=stemmer, show_progress=False)
    docs, scores = r.retrieve(qtok, k=k, show_progress=False)
    return [
        [(doc_ids[i], float(s)) for i, s in zip(row_d, row_s) if s != 0]
        for row_d, row_s in zip(docs, scores)
    ]


def wrapper_bm25(doc_ids, texts, queries, k=K):
    r = BM25Retriever(language="english", stopwords="en").index(doc_ids, texts)
    return r.search(queries, k=k)


def best_of(fn, repeats, *args):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(os.environ.get("RAG_EVAL_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
    ap.add_argument("--datasets", type=Path, default=default)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-dense", action="store_true")
    args = ap.parse_args()
    doc_ids, texts, qids, queries, qrels = load_scifact(args.datasets / "scifact_beir")
    print(f"SciFact: {len(doc_ids)} docs, {len(qids)} test queries")

    # interleave so that neither side profits from a warmer cache
    t_direct, t_wrap = float("inf"), float("inf")
    for _ in range(args.repeats):
        t, direct_hits = best_of(direct_bm25s, 1, doc_ids, texts, queries)
        t_direct = min(t_direct, t)
        t, wrap_hits = best_of(wrapper_bm25, 1, doc_ids, texts, queries)
        t_wrap = min(t_wrap, t)
    print(f"bm25s direct: {t_direct:.3f} s   wrapper: {t_wrap:.3f} s   "
          f"ratio {t_wrap / t_direct:.3f} (goal <= 1.25)")
    m_direct = evaluate(to_run(qids, direct_hits), qrels)
    m_wrap = evaluate(to_run(qids, wrap_hits), qrels)
    print(f"bm25s direct : nDCG@10 {m_direct['ndcg@10']:.4f}  recall@100 {m_direct['recall@100']:.4f}")
    print(f"bm25 (ours)  : nDCG@10 {m_wrap['ndcg@10']:.4f}  recall@100 {m_wrap['recall@100']:.4f}")

    if args.no_dense:
        return
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        print("dense/hybrid: skipped (sentence-transformers not installed; pip install -e '.[dense]')")
        return
    from rag_eval_pipeline.core.retrieval.dense import DenseRetriever

    t0 = time.perf_counter()
    dense = DenseRetriever().index(doc_ids, texts)
    t_idx = time.perf_counter() - t0
    t0 = time.perf_counter()
    dense_hits = dense.search(queries, k=K)
    t_q = time.perf_counter() - t0
    m_dense = evaluate(to_run(qids, dense_hits), qrels)
    print(f"dense        : nDCG@10 {m_dense['ndcg@10']:.4f}  recall@100 {m_dense['recall@100']:.4f}"
          f"   (encode corpus {t_idx:.1f} s, queries {t_q:.1f} s)")
    hybrid_hits = [
        reciprocal_rank_fusion([b, d], k_rrf=60, top_k=K) for b, d in zip(wrap_hits, dense_hits)
    ]
    m_h = evaluate(to_run(qids, hybrid_hits), qrels)
    print(f"hybrid (RRF) : nDCG@10 {m_h['ndcg@10']:.4f}  recall@100 {m_h['recall@100']:.4f}")


if __name__ == "__main__":
    main()
