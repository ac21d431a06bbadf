"""Long evidence and long answers: does the embedded judge's unfaithfulness separate faithful answers
from unfaithful ones better than naive word overlap? (A benchmark; nothing is fitted here.)

Public data only, read from ``RAG_EVAL_DATASETS`` or ``../shared/datasets``; every case is built
with a fixed seed, so a run is reproducible. Five case sets:

1. ``scifact/long-evidence`` — SciFact (Wadden et al., EMNLP 2020; BEIR layout with the claims'
   rationale annotations): each claim that cites an abstract with label SUPPORT (faithful, 0) or
   CONTRADICT (unfaithful, 1) is judged against that whole abstract plus 9 other abstracts drawn at
   random (10 chunks, about 90 sentences); and claims drawn at random are judged against 10
   abstracts none of which they cite (unfaithful, 1: the evidence does not state them).
2. ``halueval/long-evidence`` — HaluEval QA (Li et al., EMNLP 2023): each record's right answer
   (faithful, 0) and hallucinated answer (unfaithful, 1), judged against its own knowledge plus the
   knowledge of 9 other records (10 chunks).
3. ``scifact/long-answer`` — answers of 5 to 15 sentences: SciFact claims with a SUPPORT rationale
   from distinct abstracts, concatenated, judged against those abstracts (faithful, 0); the same
   answer with one sentence inserted at a random place, a claim citing none of those abstracts
   (unfaithful, 1).
4. ``halueval/long-answer`` — answers of 5 to 15 sentences copied from the knowledge of as many
   HaluEval records (one sentence each), judged against those knowledge strings (faithful, 0); the
   same answer with one record's hallucinated answer inserted at a random place (unfaithful, 1).
5. ``scifact/long-answer-extractive`` — answers of 5 to 15 sentences, each a rationale sentence
   (SciFact's annotated evidence) of a SUPPORT entry, from distinct abstracts, as an extractive
   answer would quote them, judged against those abstracts (faithful, 0); the same answer with one
   sentence inserted at a random place: a SciFact claim that one of those abstracts CONTRADICTs
   (unfaithful, 1: on topic, sharing the abstract's words).

Scores. The judge's unfaithfulness is 1 - faithfulness (share of the answer's claims judged
SUPPORTED; the pipeline path ``judge_runs``, so a SUPPORTED quote is verified in code); an answer
with no checkable claim scores 0.5 and is counted. Its decision: unfaithful when any claim is not
SUPPORTED. The judge's own graded score (*score*): 1 - its answer-level graded support, the mean
``support_score`` of its two weakest claims (``answer_support``; CONTRADICTED 0, NOT_MENTIONED 0.5 x the claim's recall
in its best passage, SUPPORTED 0.5 + 0.5 x its quoted sentence's recall; docs/judges.md, graded
support), with its balanced accuracy at the threshold that maximises it (as the baseline's,
optimistic alike); beside it *min*, 1 - the weakest claim's ``support_score``, and *mean*, 1 - the
mean of the claims' ``support_score`` (the score of rule version 5's round, which dilutes one
unsupported claim in a long answer). Beside it, a *graded*
unfaithfulness from the same verdicts (added after the first
results: with one claim per answer the verdict share is 0 or 1, so its ROC AUC is its balanced
accuracy): the mean over claims of 0 (SUPPORTED), 1 (CONTRADICTED) or, for NOT_MENTIONED, 0.5 + 0.5
x the share of the claim's content tokens (the judge's stemmed words, numbers and dates) found in no
retrieved chunk. The naive baseline: 1 - content-word overlap (share of the answer's content words, the
judge's stopwords removed, found anywhere in the evidence), with the threshold that maximises its
balanced accuracy on the same cases (optimistic for the baseline). Printed per set: n (faithful /
unfaithful), ROC AUC (Mann-Whitney U / (n0 n1), ties count one half; scipy) and balanced accuracy of
both, the seconds and answers/s of the judge with the load average.

Usage: python bench/long_inputs.py [--datasets DIR] [--per-set 200] [--seed 0] [--no-semantic]
The last line is "auc judge <a> score <s> graded <g> baseline <b>" averaged over the sets.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
from scipy.stats import mannwhitneyu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fit_rule_based import overlap  # noqa: E402

from rag_eval_pipeline.core.judges.rule_verdict import answer_support  # noqa: E402
from rag_eval_pipeline.core.judging import judge_runs  # noqa: E402
from rag_eval_pipeline.core.tables import RETRIEVED_HIT  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
N_CHUNKS = 10


def load_scifact(root: Path):
    """(abstract text by doc id, claims with their rationales: list of (claim, {doc: label}))."""
    docs = {}
    with gzip.open(root / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs[str(d["doc_id"])] = " ".join(s.strip() for s in d["abstract"])
    claims = []
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        labels = {doc: ev[0]["label"] for doc, ev in (q.get("metadata") or {}).items() if ev}
        claims.append((q["text"], labels))
    return docs, claims


def load_halueval(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def scifact_long_evidence(docs, claims, rng: random.Random, n: int) -> list[tuple[str, list[str], int]]:
    ids = sorted(docs)
    cases = []
    cited = [(c, d, lab) for c, labels in claims for d, lab in sorted(labels.items()) if d in docs]
    rng.shuffle(cited)
    for c, d, lab in cited[: n]:
        others = [x for x in rng.sample(ids, N_CHUNKS + 5) if x != d][: N_CHUNKS - 1]
        chunks = [docs[x] for x in others]
        chunks.insert(rng.randrange(N_CHUNKS), docs[d])
        cases.append((c, chunks, 0 if lab == "SUPPORT" else 1))
    pool = [(c, labels) for c, labels in claims]
    for c, labels in rng.sample(pool, n // 2):
        chunks = [docs[x] for x in rng.sample([i for i in ids if i not in labels], N_CHUNKS)]
        cases.append((c, chunks, 1))
    return cases


def halueval_long_evidence(recs, rng: random.Random, n: int) -> list[tuple[str, list[str], int]]:
    cases = []
    for i in rng.sample(range(len(recs)), min(n // 2, len(recs))):
        others = [recs[j]["knowledge"] for j in rng.sample([j for j in range(len(recs)) if j != i], N_CHUNKS - 1)]
        chunks = others[:]
        chunks.insert(rng.randrange(N_CHUNKS), recs[i]["knowledge"])
        cases.append((recs[i]["right_answer"], chunks, 0))
        cases.append((recs[i]["hallucinated_answer"], list(chunks), 1))
    return cases


def scifact_long_answer(docs, claims, rng: random.Random, n: int) -> list[tuple[str, list[str], int]]:
    supported = [(c, d) for c, labels in claims for d, lab in sorted(labels.items()) if lab == "SUPPORT" and d in docs]
    cases = []
    for _ in range(n // 2):
        k = rng.randint(5, 15)
        picked, seen = [], set()
        for c, d in rng.sample(supported, len(supported)):
            if d not in seen:
                picked.append((c, d))
                seen.add(d)
            if len(picked) == k:
                break
        chunks = [docs[d] for _, d in picked]
        sentences = [c for c, _ in picked]
        outsider = next(c for c, labels in rng.sample(claims, len(claims)) if not set(labels) & seen)
        bad = sentences[:]
        bad.insert(rng.randrange(len(bad) + 1), outsider)
        cases.append((" ".join(_sentence(s) for s in sentences), chunks, 0))
        cases.append((" ".join(_sentence(s) for s in bad), list(chunks), 1))
    return cases


def scifact_long_answer_extractive(root: Path, docs, claims, rng: random.Random, n: int):
    sentences_of = {}
    with gzip.open(root / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            sentences_of[str(d["doc_id"])] = [x.strip() for x in d["abstract"]]
    rationale = {}
    contra = {}
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        for doc, evs in (q.get("metadata") or {}).items():
            for ev in evs:
                if ev["label"] == "SUPPORT":
                    rationale.setdefault(doc, []).extend(sentences_of[doc][i] for i in ev["sentences"])
                else:
                    contra.setdefault(doc, []).append(q["text"])
    with_contra = sorted(d for d in contra if d in rationale)
    supported = sorted(rationale)
    cases = []
    for _ in range(n // 2):
        k = rng.randint(5, 15)
        anchor = rng.choice(with_contra)
        picked = [anchor] + rng.sample([d for d in supported if d != anchor], k - 1)
        rng.shuffle(picked)
        chunks = [docs[d] for d in picked]
        sentences = [rng.choice(rationale[d]) for d in picked]
        bad = sentences[:]
        bad.insert(rng.randrange(len(bad) + 1), rng.choice(contra[anchor]))
        cases.append((" ".join(_sentence(x) for x in sentences), chunks, 0))
        cases.append((" ".join(_sentence(x) for x in bad), list(chunks), 1))
    return cases


def halueval_long_answer(recs, rng: random.Random, n: int) -> list[tuple[str, list[str], int]]:
    from rag_eval_pipeline.core.judges.claims import split_sentences

    cases = []
    for _ in range(n // 2):
        k = rng.randint(5, 15)
        picked = rng.sample(range(len(recs)), k)
        chunks = [recs[i]["knowledge"] for i in picked]
        sentences = [rng.choice(split_sentences(recs[i]["knowledge"])) for i in picked]
        bad = sentences[:]
        bad.insert(rng.randrange(len(bad) + 1), recs[rng.choice(picked)]["hallucinated_answer"])
        cases.append((" ".join(_sentence(s) for s in sentences), chunks, 0))
        cases.append((" ".join(_sentence(s) for s in bad), list(chunks), 1))
    return cases


def _sentence(s: str) -> str:
    s = s.strip()
    return s if s[-1:] in ".!?" else s + "."


def judge_scores(cases, judge):
    """(unfaithfulness in [0, 1], decision 0/1, graded unfaithfulness, 1 - ``answer_support`` of the
    claims' ``support_score``, 1 - their minimum, 1 - their mean, answers without claims, seconds) of
    the judge."""
    chunks, runs = {}, []
    for i, (answer, ctx, _) in enumerate(cases):
        qid = f"q{i:05d}"
        hits = []
        for r, text in enumerate(ctx, start=1):
            cid = f"{qid}#{r}"
            chunks[cid] = text
            hits.append({"chunk_id": cid, "score": 1.0 / r, "rank": r})
        runs.append({"system": "s", "question_id": qid, "decision": "answer", "answer": answer, "retrieved": hits})
    snapshot = pl.DataFrame({"chunk_id": list(chunks), "text": list(chunks.values())})
    rag_runs = pl.DataFrame(runs, schema={"system": pl.Utf8, "question_id": pl.Utf8, "decision": pl.Utf8,
                                          "answer": pl.Utf8, "retrieved": pl.List(RETRIEVED_HIT)})
    t0 = time.perf_counter()
    labels, answers = judge_runs(rag_runs, snapshot, judge)
    secs = time.perf_counter() - t0
    sup: dict[str, list[int]] = {}
    for qid, verdict in labels.select("question_id", "verdict").iter_rows():
        sup.setdefault(qid, []).append(verdict == "SUPPORTED")
    unf, dec, graded, scored, minned, meaned, empty = [], [], [], [], [], [], 0
    per_claim: dict[str, list[float]] = {}
    score_of: dict[str, list[float]] = {}
    for qid, claim, verdict, score in labels.select("question_id", "claim", "verdict", "support_score").iter_rows():
        per_claim.setdefault(qid, []).append(_claim_unfaithfulness(claim, verdict, cases[int(qid[1:])][1]))
        score_of.setdefault(qid, []).append(0.5 if score is None else score)
    for i in range(len(cases)):
        v = sup.get(f"q{i:05d}")
        if not v:
            empty += 1
            unf.append(0.5)
            graded.append(0.5)
            scored.append(0.5)
            meaned.append(0.5)
            minned.append(0.5)
            dec.append(1)
            continue
        unf.append(1.0 - sum(v) / len(v))
        graded.append(float(np.mean(per_claim[f"q{i:05d}"])))
        scored.append(1.0 - float(answer_support(score_of[f"q{i:05d}"])))
        meaned.append(1.0 - float(np.mean(score_of[f"q{i:05d}"])))
        minned.append(1.0 - float(min(score_of[f"q{i:05d}"])))
        dec.append(int(not all(v)))
    return (np.array(unf), np.array(dec), np.array(graded), np.array(scored), np.array(minned), np.array(meaned),
            empty, secs)


def _claim_unfaithfulness(claim: str, verdict: str, chunks: list[str]) -> float:
    """The graded score of one claim (module docstring)."""
    from rag_eval_pipeline.core.judges.tokens import language_of, tokens

    if verdict == "SUPPORTED":
        return 0.0
    if verdict == "CONTRADICTED":
        return 1.0
    stated: set[str] = set()
    for c in chunks:
        stated |= tokens(c).content
    lang = language_of(claim) or tokens(chunks[0]).language if chunks else "english"
    content = tokens(claim, lang).content
    missing = len(content - stated) / len(content) if content else 1.0
    return 0.5 + 0.5 * missing


def auc(scores: np.ndarray, y: np.ndarray) -> float:
    pos, neg = scores[y == 1], scores[y == 0]
    return float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))


def balanced_accuracy(pred: np.ndarray, y: np.ndarray) -> float:
    return float((np.mean(pred[y == 1] == 1) + np.mean(pred[y == 0] == 0)) / 2)


def best_threshold_ba(scores: np.ndarray, y: np.ndarray) -> float:
    return max(balanced_accuracy((scores >= t).astype(int), y) for t in np.unique(scores))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=Path,
                    default=Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets")))
    ap.add_argument("--per-set", type=int, default=200, help="cases per set (about half faithful)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-semantic", action="store_true")
    args = ap.parse_args(argv)
    sci, halu = args.datasets / "scifact_beir", args.datasets / "halueval_qa_generation" / "qa_one-turn_data.json"
    for p in (sci / "queries.jsonl", sci / "corpus_sentences.jsonl.gz", halu):
        if not p.is_file():
            print(f"{p}: file not found", file=sys.stderr)
            return 2
    if args.per_set < 4:
        print("--per-set must be >= 4", file=sys.stderr)
        return 2
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

    docs, claims = load_scifact(sci)
    recs = load_halueval(halu)
    n = args.per_set
    sets = {
        "scifact/long-evidence": scifact_long_evidence(docs, claims, random.Random(args.seed), n),
        "halueval/long-evidence": halueval_long_evidence(recs, random.Random(args.seed + 1), n),
        "scifact/long-answer": scifact_long_answer(docs, claims, random.Random(args.seed + 2), n),
        "halueval/long-answer": halueval_long_answer(recs, random.Random(args.seed + 3), n),
        "scifact/long-answer-extractive": scifact_long_answer_extractive(sci, docs, claims,
                                                                         random.Random(args.seed + 4), n),
    }
    judge = RuleBasedJudge(semantic=not args.no_semantic)
    print(f"judge {judge.name} / {judge.model}, prompt_sha256 {judge.prompt_sha256}; {N_CHUNKS} chunks per "
          f"answer; seed {args.seed}")
    print(f"{'set':30s} {'n (0/1)':>11s} {'AUC judge':>9s} {'score':>6s} {'min':>6s} {'mean':>6s} {'graded':>6s} "
          f"{'AUC base':>8s} "
          f"{'BA judge':>8s} {'BA score':>8s} {'BA base':>7s} {'no claim':>8s} {'answers/s':>9s}")
    aucs_j, aucs_s, aucs_n, aucs_m, aucs_g, aucs_b = [], [], [], [], [], []
    for name, cases in sets.items():
        y = np.array([c[2] for c in cases])
        base = np.array([1.0 - overlap(a, " ".join(ctx)) for a, ctx, _ in cases])
        load = os.getloadavg()[0]
        unf, dec, graded, scored, minned, meaned, empty, secs = judge_scores(cases, judge)
        an = auc(minned, y)
        aucs_n.append(an)
        aj, as_, am, ag, ab = auc(unf, y), auc(scored, y), auc(meaned, y), auc(graded, y), auc(base, y)
        aucs_m.append(am)
        aucs_j.append(aj)
        aucs_s.append(as_)
        aucs_g.append(ag)
        aucs_b.append(ab)
        print(f"{name:30s} {len(y):4d} ({int((y == 0).sum())}/{int((y == 1).sum())}) {aj:9.3f} {as_:6.3f} "
              f"{an:6.3f} {am:6.3f} {ag:6.3f} "
              f"{ab:8.3f} {balanced_accuracy(dec, y):8.3f} {best_threshold_ba(scored, y):8.3f} "
              f"{best_threshold_ba(base, y):7.3f} {empty:8d} {len(y) / secs:9.1f}  (load {load:.2f})")
    print(f"mean over sets: AUC judge {np.mean(aucs_j):.3f}, score {np.mean(aucs_s):.3f}, min {np.mean(aucs_n):.3f}, "
          f"mean {np.mean(aucs_m):.3f}, graded "
          f"{np.mean(aucs_g):.3f}, baseline {np.mean(aucs_b):.3f}; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"auc judge {np.mean(aucs_j):.3f} score {np.mean(aucs_s):.3f} graded {np.mean(aucs_g):.3f} "
          f"baseline {np.mean(aucs_b):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
