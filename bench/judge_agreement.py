"""How well does the embedded rule-based judge agree with labelled data? (a script, not a test)

Runs :class:`RuleBasedJudge` (default thresholds, support = contradiction = 0.75, fixed before
looking at these data; nothing is tuned here) through the real pipeline path
(``judge_runs`` → ``faithfulness_question_metrics``) over two public sets in
``../shared/datasets``:

1. ``halueval_qa_generation`` (HaluEval, Li et al. 2023, arXiv 2305.11747): 500 questions, each
   with a Wikipedia knowledge string, a faithful ``right_answer`` and a ``hallucinated_answer``.
   Reports how often the right answer gets a strictly higher faithfulness than the hallucinated
   one, how often they tie, how often it is lower, and how many pairs are not comparable (null).
2. ``begin_wow`` (BEGIN, Dziri et al. 2022, arXiv 2105.00071): 430 dialogue responses with a
   human label "Fully attributable" / "Not fully attributable" to their knowledge snippet.
   Primary rule, chosen before running: predicted attributable ⇔ holistic label YES (every claim
   SUPPORTED, i.e. faithfulness == 1), since the human label means *fully* attributable.
   Secondary rule, as suggested in the task: faithfulness ≥ 0.5. An answer with no claim (null)
   counts as not attributable. Prints accuracy, Cohen's kappa, the confusion matrix and
   per-class precision / recall, and the majority-class accuracy for scale.

Usage: python bench/judge_agreement.py [--datasets DIR]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import count_downgraded, judge_runs
from rag_eval_pipeline.core.metrics.agreement import (
    accuracy,
    cohen_kappa,
    confusion_matrix,
    per_class_precision_recall,
)
from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

REPO = Path(__file__).resolve().parents[1]


def _frames(items: list[tuple[str, str, str, str]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(snapshot, rag_runs) for items (system, question_id, context, answer), one chunk each."""
    chunks = {}
    runs = []
    for system, qid, context, answer in items:
        cid = f"{qid}#0"
        chunks[cid] = context
        runs.append({"system": system, "question_id": qid,
                     "retrieved": [{"chunk_id": cid, "score": 1.0, "rank": 1}],
                     "decision": "answer", "answer": answer})
    snapshot = pl.DataFrame({"chunk_id": list(chunks), "text": list(chunks.values())})
    rag_runs = pl.DataFrame(runs, schema={"system": pl.Utf8, "question_id": pl.Utf8,
                                          "retrieved": pl.List(RETRIEVED_HIT),
                                          "decision": pl.Utf8, "answer": pl.Utf8})
    return snapshot, rag_runs


def _metric(qm: pl.DataFrame, metric: str) -> dict[tuple[str, str], float | None]:
    sub = qm.filter(pl.col("metric") == metric)
    return {(s, q): v for s, q, v in sub.select("system", "question_id", "value").iter_rows()}


def _judge(items, judge):
    snapshot, rag_runs = _frames(items)
    t0 = time.perf_counter()
    labels, answers = judge_runs(rag_runs, snapshot, judge)
    qm = faithfulness_question_metrics(labels, answers)
    return labels, answers, qm, time.perf_counter() - t0


def halueval(root: Path, judge: RuleBasedJudge) -> None:
    path = root / "halueval_qa_generation" / "qa_one-turn_data.json"
    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    items = []
    for i, r in enumerate(recs):
        qid = f"halu{i:03d}"
        items.append(("right_answer", qid, r["knowledge"], r["right_answer"]))
        items.append(("hallucinated_answer", qid, r["knowledge"], r["hallucinated_answer"]))
    labels, answers, qm, secs = _judge(items, judge)
    print(f"\n== HaluEval QA (generation file): {len(recs)} pairs, judged in {secs:.2f}s ==")
    for metric in ("faithfulness", "faithfulness_holistic"):
        vals = _metric(qm, metric)
        higher = tie = lower = incomparable = 0
        for i in range(len(recs)):
            qid = f"halu{i:03d}"
            a, b = vals[("right_answer", qid)], vals[("hallucinated_answer", qid)]
            if a is None or b is None:
                incomparable += 1
            elif a > b:
                higher += 1
            elif a == b:
                tie += 1
            else:
                lower += 1
        n = len(recs)
        print(f"{metric:22s} right > hallucinated {higher} ({higher / n:.1%}), tie {tie} "
              f"({tie / n:.1%}), right < hallucinated {lower} ({lower / n:.1%}), "
              f"not comparable {incomparable}")
        for system in ("right_answer", "hallucinated_answer"):
            v = [x for (s, _), x in vals.items() if s == system and x is not None]
            print(f"    mean {metric} of {system:20s} {sum(v) / len(v):.3f} over {len(v)} answers")
    for system in ("right_answer", "hallucinated_answer"):
        c = Counter(labels.filter(pl.col("system") == system)["verdict"].to_list())
        s = Counter(answers.filter(pl.col("system") == system)["status"].to_list())
        print(f"    {system:20s} claim verdicts {dict(sorted(c.items()))}; statuses {dict(s)}")
    print(f"    quote downgrades: {count_downgraded(labels)}")


def begin(root: Path, judge: RuleBasedJudge) -> None:
    path = root / "begin_wow" / "begin_dev_wow.tsv"
    with open(path, encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    items = [("begin", f"begin{i:03d}", r["knowledge"], r["response"]) for i, r in enumerate(rows)]
    labels, answers, qm, secs = _judge(items, judge)
    faith = _metric(qm, "faithfulness")
    human = ["attributable" if r["begin_label"] == "Fully attributable" else "not_attributable"
             for r in rows]
    print(f"\n== BEGIN (WoW dev): {len(rows)} responses, judged in {secs:.2f}s ==")
    print(f"human labels {dict(Counter(r['begin_label'] for r in rows))}; statuses "
          f"{dict(Counter(answers['status'].to_list()))}; claim verdicts "
          f"{dict(sorted(Counter(labels['verdict'].to_list()).items()))}")
    maj = max(Counter(human).values()) / len(human)
    print(f"majority-class accuracy (always 'not_attributable'): {maj:.3f}")
    rules = {
        "PRIMARY holistic == YES (faithfulness == 1)": lambda v: v is not None and v == 1.0,
        "secondary faithfulness >= 0.5": lambda v: v is not None and v >= 0.5,
    }
    order = ["attributable", "not_attributable"]
    for name, rule in rules.items():
        pred = ["attributable" if rule(faith[("begin", f"begin{i:03d}")]) else "not_attributable"
                for i in range(len(rows))]
        labs, m = confusion_matrix(human, pred, order)
        kappa = cohen_kappa(human, pred, order)
        print(f"\n-- rule: {name}")
        print(f"accuracy {accuracy(human, pred):.3f}   Cohen's kappa "
              f"{'undefined' if kappa is None else f'{kappa:.3f}'}")
        print("confusion (rows = human, columns = judge):")
        print(f"    {'':18s}" + "".join(f"{lab:>18s}" for lab in labs))
        for lab, r in zip(labs, m):
            print(f"    {lab:18s}" + "".join(f"{x:18d}" for x in r))
        for lab, d in per_class_precision_recall(human, pred, order).items():
            p = "n/a" if d["precision"] is None else f"{d['precision']:.3f}"
            rc = "n/a" if d["recall"] is None else f"{d['recall']:.3f}"
            print(f"    {lab:18s} precision {p}  recall {rc}  support {d['support']}  "
                  f"predicted {d['predicted']}")
        per_model = Counter()
        correct = Counter()
        for r, h, p in zip(rows, human, pred):
            per_model[r["model_name"]] += 1
            correct[r["model_name"]] += h == p
        print("    accuracy by response model: " + ", ".join(
            f"{k} {correct[k] / per_model[k]:.3f} (n={per_model[k]})" for k in sorted(per_model)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    ap.add_argument("--datasets", type=Path, default=default)
    args = ap.parse_args(argv)
    judge = RuleBasedJudge()
    print(f"judge {judge.name} / {judge.model}; support_threshold {judge.support_threshold}, "
          f"contradiction_threshold {judge.contradiction_threshold}; prompt_sha256 "
          f"{judge.prompt_sha256}")
    if not args.datasets.is_dir():
        print(f"datasets folder {args.datasets} not found", file=sys.stderr)
        return 2
    halueval(args.datasets, judge)
    begin(args.datasets, judge)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
