"""HaluEval QA pairwise check of the embedded judge (a script, not a test).

HaluEval (Li et al. 2023, arXiv 2305.11747), ``halueval_qa_generation/qa_one-turn_data.json`` under
``RAG_EVAL_DATASETS`` or ``../shared/datasets``: 500 questions, each with a Wikipedia knowledge
string, a faithful ``right_answer`` and a ``hallucinated_answer``. Both answers are judged through
the pipeline path (``judge_runs`` → ``faithfulness_question_metrics``) against the knowledge; the
check is how often the right answer gets a strictly higher faithfulness than the hallucinated one
(ties and reversals printed beside it), and the same by the judge's graded support (the mean of
its claims' ``support_score``, and ``answer_support``: the mean of its two weakest claims'). Nothing
is fitted here.

Usage: python bench/halueval_pairwise.py [--datasets DIR] [--no-semantic]
The last line is the number of pairs where the right answer scores higher.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.judges.rule_verdict import answer_support
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", type=Path,
                    default=Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets")))
    ap.add_argument("--no-semantic", action="store_true")
    args = ap.parse_args(argv)
    path = args.datasets / "halueval_qa_generation" / "qa_one-turn_data.json"
    if not path.is_file():
        print(f"{path}: file not found", file=sys.stderr)
        return 2
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

    recs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    chunks, runs = {}, []
    for i, r in enumerate(recs):
        qid = f"halu{i:03d}"
        chunks[f"{qid}#0"] = r["knowledge"]
        for system in ("right_answer", "hallucinated_answer"):
            runs.append({"system": system, "question_id": qid, "decision": "answer", "answer": r[system],
                         "retrieved": [{"chunk_id": f"{qid}#0", "score": 1.0, "rank": 1}]})
    snapshot = pl.DataFrame({"chunk_id": list(chunks), "text": list(chunks.values())})
    rag_runs = pl.DataFrame(runs, schema={"system": pl.Utf8, "question_id": pl.Utf8, "decision": pl.Utf8,
                                          "answer": pl.Utf8, "retrieved": pl.List(RETRIEVED_HIT)})
    judge = RuleBasedJudge(semantic=not args.no_semantic)
    t0 = time.perf_counter()
    labels, answers = judge_runs(rag_runs, snapshot, judge)
    secs = time.perf_counter() - t0
    qm = faithfulness_question_metrics(labels, answers).filter(pl.col("metric") == "faithfulness")
    vals = {(s, q): v for s, q, v in qm.select("system", "question_id", "value").iter_rows()}
    higher = tie = lower = incomparable = 0
    for i in range(len(recs)):
        a, b = vals[("right_answer", f"halu{i:03d}")], vals[("hallucinated_answer", f"halu{i:03d}")]
        if a is None or b is None:
            incomparable += 1
        elif a > b:
            higher += 1
        elif a == b:
            tie += 1
        else:
            lower += 1
    n = len(recs)
    # the same pairs by the judge's graded support: the mean support_score of the answer's claims
    graded: dict[tuple[str, str], list[float]] = {}
    for system, qid, score in labels.select("system", "question_id", "support_score").iter_rows():
        if score is not None:
            graded.setdefault((system, qid), []).append(score)
    counts = {}
    for how, agg in (("mean support_score", lambda s: sum(s) / len(s)),
                     ("two weakest claims' support_score", answer_support)):
        g_higher = g_tie = g_lower = g_none = 0
        for i in range(n):
            a, b = graded.get(("right_answer", f"halu{i:03d}")), graded.get(("hallucinated_answer", f"halu{i:03d}"))
            if not a or not b:
                g_none += 1
            elif agg(a) > agg(b):
                g_higher += 1
            elif agg(a) == agg(b):
                g_tie += 1
            else:
                g_lower += 1
        counts[how] = (g_higher, g_tie, g_lower, g_none)
    print(f"judge {judge.name} / {judge.model}, prompt_sha256 {judge.prompt_sha256}")
    print(f"HaluEval QA: {n} pairs judged in {secs:.1f} s ({2 * n / secs:.1f} answers/s; "
          f"load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} CPUs)")
    print(f"faithfulness: right > hallucinated {higher} ({higher / n:.1%}), tie {tie} ({tie / n:.1%}), "
          f"right < hallucinated {lower} ({lower / n:.1%}), not comparable {incomparable}")
    for how, (g_higher, g_tie, g_lower, g_none) in counts.items():
        print(f"graded support ({how}): right > hallucinated {g_higher} ({g_higher / n:.1%}), tie "
              f"{g_tie}, right < hallucinated {g_lower}, not comparable {g_none}")
    for system in ("right_answer", "hallucinated_answer"):
        c = Counter(labels.filter(pl.col("system") == system)["verdict"].to_list())
        st = Counter(answers.filter(pl.col("system") == system)["status"].to_list())
        print(f"    {system:20s} claim verdicts {dict(sorted(c.items()))}; statuses {dict(st)}")
    print(higher)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
