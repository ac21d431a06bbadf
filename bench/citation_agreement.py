"""Agreement of a judge's citation-support and nugget-coverage verdicts with public labels (a script, not a test).

SciFact (Wadden et al., EMNLP 2020; ``scifact_beir/`` under ``RAG_EVAL_DATASETS`` or
``../shared/datasets``) gives, for each claim and each abstract a person found evidence in, the
label SUPPORT or CONTRADICT and the rationale sentences. Nothing here is fitted: the embedded judge's
parameters were fitted on BEGIN (``bench/fit_rule_based.py``), so the split measured here is held out.

Two views of the same public labels, each item judged through the judge's ``judge_support``
(:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport`) and checked in code
(:func:`~rag_eval_pipeline.core.citations.judging.checked_verdicts`: a support verdict whose quote is
not in the passages is not support):

1. **citation support** (``citation_support``): the claim cites the whole abstract. SUPPORT →
   SUPPORTED, CONTRADICT → NOT_SUPPORTED (public labels); plus *wrong-chunk* pairs built here (each
   claim against the evidence abstract of the next claim of the split, never one of its own) labelled
   NOT_SUPPORTED by construction, reported apart.
2. **nugget coverage** (``nugget_coverage``): the claim is the nugget and its rationale sentences,
   joined, are the "answer". SUPPORT → SUPPORTED, CONTRADICT → NOT_SUPPORTED.

Reported per view: n, the 2 x 3 confusion (public label x judge SUPPORTED / PARTIAL /
NOT_SUPPORTED), Cohen's kappa with PARTIAL read as not supported (strict) and as supported
(lenient), judge errors, and, for SUPPORTED verdicts on SUPPORT pairs, the share whose quote is one of
the rationale sentences (right for the right reason). The load average is printed with the time.

Usage: python bench/citation_agreement.py [--split test|train] [--datasets DIR] [--limit N]
The last line is "kappa citation_support <strict> nugget_coverage <strict>".
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_eval_pipeline.core.citations.judging import checked_verdicts  # noqa: E402
from rag_eval_pipeline.core.judges.base import SupportRequest  # noqa: E402
from rag_eval_pipeline.core.judges.quotes import normalise_text  # noqa: E402
from rag_eval_pipeline.core.metrics.agreement import confusion_matrix, kappa_or_reason  # noqa: E402

PUBLIC = {"SUPPORT": "SUPPORTED", "CONTRADICT": "NOT_SUPPORTED"}
JUDGE_LABELS = ["SUPPORTED", "PARTIAL", "NOT_SUPPORTED", "JUDGE_ERROR"]


def load_pairs(root: Path, split: str) -> tuple[list[dict], dict[int, list[str]]]:
    """(pairs, abstracts): one pair per (claim of the split, evidence abstract) with ``claim``, ``doc``,
    ``label`` (SUPPORT / CONTRADICT) and ``rationale`` (sentence indices); abstracts as sentence lists."""
    ids = {line.split("\t")[0] for line in (root / "qrels" / f"{split}.tsv").read_text().splitlines()[1:] if line}
    abstracts = {}
    with gzip.open(root / "corpus_sentences.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            abstracts[int(d["doc_id"])] = [s.strip() for s in d["abstract"]]
    pairs = []
    for line in (root / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q["_id"] not in ids:
            continue
        for doc, evidence in sorted(q.get("metadata", {}).items(), key=lambda kv: int(kv[0])):
            for ev in evidence:
                pairs.append({"claim": q["text"], "qid": q["_id"], "doc": int(doc), "label": ev["label"],
                              "rationale": list(ev["sentences"])})
    return pairs, abstracts


def judge_items(judge, family: str, items: list[tuple[str, str, list[str]]]) -> list[tuple]:
    """Each (item_id, claim, passages) through ``judge_support`` and :func:`checked_verdicts`."""
    out = []
    for item_id, claim, passages in items:
        ids = tuple(f"p{i}" for i in range(len(passages)))
        req = SupportRequest(family, (claim,), tuple(passages), (item_id,), ids)
        try:
            result = judge.judge_support(req)
        except Exception as exc:  # noqa: BLE001 - counted as a judge error, never hidden
            result = exc
        out.append(checked_verdicts(req, result)[item_id])
    return out


def report(name: str, public: list[str], verdicts: list[tuple]) -> float | None:
    judged = [v[0] for v in verdicts]
    labs, m = confusion_matrix(public, judged, ["SUPPORTED", "NOT_SUPPORTED"] + ["PARTIAL", "JUDGE_ERROR"])
    print(f"\n{name}: n = {len(public)}, judge errors {judged.count('JUDGE_ERROR')}")
    print("  public \\ judge   " + "  ".join(f"{x:>13}" for x in JUDGE_LABELS))
    order = [labs.index(x) for x in JUDGE_LABELS]
    for i, lab in enumerate(labs[:2]):
        print(f"  {lab:<15}" + "  ".join(f"{m[i][j]:>13}" for j in order))
    ok = [i for i, v in enumerate(judged) if v != "JUDGE_ERROR"]
    strict = ["SUPPORTED" if judged[i] == "SUPPORTED" else "NOT_SUPPORTED" for i in ok]
    lenient = ["SUPPORTED" if judged[i] in ("SUPPORTED", "PARTIAL") else "NOT_SUPPORTED" for i in ok]
    pub = [public[i] for i in ok]
    out = None
    for label, pred in (("strict (PARTIAL = not supported)", strict), ("lenient (PARTIAL = supported)", lenient)):
        k, reason = kappa_or_reason(pub, pred, ["SUPPORTED", "NOT_SUPPORTED"], "the public labels", "the judge")
        agree = sum(a == b for a, b in zip(pub, pred)) / len(pub) if pub else None
        print(f"  kappa {label}: {'null (' + reason + ')' if k is None else f'{k:.3f}'}, agreement "
              f"{'null' if agree is None else f'{agree:.3f}'}")
        out = k if out is None and label.startswith("strict") else out
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="test", choices=("test", "train"))
    ap.add_argument("--datasets", default=os.environ.get("RAG_EVAL_DATASETS", str(REPO.parent / "shared" / "datasets")))
    ap.add_argument("--limit", type=int, default=None, help="only the first N pairs (a smoke run)")
    args = ap.parse_args(argv)
    root = Path(args.datasets) / "scifact_beir"
    if not root.is_dir():
        print(f"citation_agreement: no SciFact at {root}", file=sys.stderr)
        return 1
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

    pairs, abstracts = load_pairs(root, args.split)
    pairs = pairs[: args.limit] if args.limit else pairs
    judge = RuleBasedJudge()
    t0 = time.perf_counter()
    print(f"SciFact {args.split}: {len(pairs)} (claim, evidence abstract) pairs, "
          f"{sum(p['label'] == 'SUPPORT' for p in pairs)} SUPPORT, {sum(p['label'] == 'CONTRADICT' for p in pairs)} "
          f"CONTRADICT; judge {judge.name} {judge.model} ({judge.support_prompt_sha256('citation_support')[:12]})")
    # 1. citation support: the claim cites the whole abstract
    cite = judge_items(judge, "citation_support",
                       [(str(i), p["claim"], [" ".join(abstracts[p["doc"]])]) for i, p in enumerate(pairs)])
    k_cite = report("citation support (claim vs the cited abstract), public labels",
                    [PUBLIC[p["label"]] for p in pairs], cite)
    rationale_hit = [any(normalise_text(v[1]) in normalise_text(abstracts[p["doc"]][s]) or
                         normalise_text(abstracts[p["doc"]][s]) in normalise_text(v[1]) for s in p["rationale"])
                     for p, v in zip(pairs, cite) if p["label"] == "SUPPORT" and v[0] == "SUPPORTED" and v[1]]
    if rationale_hit:
        print(f"  SUPPORTED on SUPPORT pairs quoting a rationale sentence: {sum(rationale_hit)}/{len(rationale_hit)}")
    # wrong-chunk pairs: each claim against the next pair's abstract, when it is not one of its own
    own = {}
    for p in pairs:
        own.setdefault(p["qid"], set()).add(p["doc"])
    wrong = [(p, q["doc"]) for p, q in zip(pairs, pairs[1:] + pairs[:1]) if q["doc"] not in own[p["qid"]]]
    wv = judge_items(judge, "citation_support",
                     [(str(i), p["claim"], [" ".join(abstracts[d])]) for i, (p, d) in enumerate(wrong)])
    print(f"\nwrong-chunk pairs (constructed, NOT_SUPPORTED by construction): n = {len(wv)}, judge says "
          + ", ".join(f"{lab} {sum(v[0] == lab for v in wv)}" for lab in JUDGE_LABELS))
    # 2. nugget coverage: the claim against its rationale sentences as the answer
    nug = judge_items(judge, "nugget_coverage",
                      [(str(i), p["claim"], [" ".join(abstracts[p["doc"]][s] for s in p["rationale"])])
                       for i, p in enumerate(pairs)])
    k_nug = report("nugget coverage (claim vs its rationale sentences as the answer), public labels",
                   [PUBLIC[p["label"]] for p in pairs], nug)
    dt_s = time.perf_counter() - t0
    load = os.getloadavg()
    print(f"\n{len(pairs) * 2 + len(wrong)} support judgements in {dt_s:.1f} s; load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    def fmt(k: float | None) -> str:
        return "null" if k is None else f"{k:.3f}"

    print(f"kappa citation_support {fmt(k_cite)} nugget_coverage {fmt(k_nug)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
