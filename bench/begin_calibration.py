"""Calibrate the rule-based judge against BEGIN's human labels, response level (a script, not a test).

BEGIN (Dziri, Rashkin, Linzen & Reitter, "Evaluating Groundedness in Dialogue Systems: The BEGIN
Benchmark", arXiv 2105.00071), Wizard-of-Wikipedia dev file in ``../shared/datasets/begin_wow``:
430 dialogue responses, each with the knowledge snippet it should rest on and a human label
"Fully attributable" / "Not fully attributable" (see that folder's PROVENANCE.md).

Each row becomes one run: system = the row's ``model_name``, question_id = "begin<row>", one
retrieved chunk = ``knowledge``, answer = ``response``. :class:`RuleBasedJudge` (default
thresholds, nothing tuned here) judges them through the pipeline path
(``core.judging.judge_runs``), and :func:`~rag_eval_pipeline.core.metrics.calibration.calibrate`
compares the result at response level with the default mapping: judge "attributable" iff every
claim is SUPPORTED; "Fully attributable" → attributable, "Not fully attributable" →
not_attributable. A response in which the judge finds no claim has no judge label and is left out
of n (counted as "human only"). Prints n, Cohen's kappa, raw agreement (95% Wilson interval), the
confusion matrix (rows = people, columns = judge) and per-label precision / recall.

Usage: python bench/begin_calibration.py [--datasets DIR]
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.calibration import calibrate, confusion_markdown
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

REPO = Path(__file__).resolve().parents[1]


def load_begin(root: Path) -> list[dict[str, str]]:
    """The rows of ``begin_wow/begin_dev_wow.tsv`` (tab-separated, header, no quoting)."""
    with open(root / "begin_wow" / "begin_dev_wow.tsv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def frames(rows: list[dict[str, str]]) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(corpus snapshot, rag_runs, human labels) for the BEGIN rows, one chunk per row."""
    qids = [f"begin{i:03d}" for i in range(len(rows))]
    snapshot = pl.DataFrame({"chunk_id": [f"{q}#0" for q in qids], "text": [r["knowledge"] for r in rows]})
    runs = pl.DataFrame(
        [{"system": r["model_name"], "question_id": q, "retrieved": [{"chunk_id": f"{q}#0", "score": 1.0, "rank": 1}],
          "decision": "answer", "answer": r["response"]} for q, r in zip(qids, rows)],
        schema={"system": pl.Utf8, "question_id": pl.Utf8, "retrieved": pl.List(RETRIEVED_HIT),
                "decision": pl.Utf8, "answer": pl.Utf8},
    )
    human = pl.DataFrame({"system": [r["model_name"] for r in rows], "question_id": qids,
                          "verdict": [r["begin_label"] for r in rows]})
    return snapshot, runs, human


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    ap.add_argument("--datasets", type=Path, default=default)
    args = ap.parse_args(argv)
    if not (args.datasets / "begin_wow").is_dir():
        print(f"{args.datasets / 'begin_wow'} not found", file=sys.stderr)
        return 2
    rows = load_begin(args.datasets)
    snapshot, runs, human = frames(rows)
    judge = RuleBasedJudge()
    t0 = time.perf_counter()
    labels, answers = judge_runs(runs, snapshot, judge)
    secs = time.perf_counter() - t0
    res = calibrate(human, labels, None, level="response", source="begin_wow/begin_dev_wow.tsv")
    print(f"judge {res.judge} / {res.judge_model}, prompt_sha256 {res.prompt_sha256}")
    print(f"BEGIN WoW dev: {len(rows)} responses judged in {secs:.2f}s; human labels "
          f"{dict(Counter(human['verdict'].to_list()))}; answer statuses {dict(Counter(answers['status'].to_list()))}")
    print(f"mapping: judge_rule={res.mapping['judge_rule']}, human_rule={res.mapping['human_rule']}")
    print(f"n = {res.n} (human only {res.n_human_only}, judge only {res.n_judge_only}, "
          f"excluded human {res.n_excluded_human}, excluded judge {res.n_excluded_judge})")
    kappa = "null (" + str(res.kappa_reason) + ")" if res.kappa is None else f"{res.kappa:.3f}"
    print(f"Cohen's kappa = {kappa}")
    if res.agreement is not None:
        print(f"raw agreement = {res.agreement:.3f} "
              f"(95% Wilson [{res.agreement_ci_low:.3f}, {res.agreement_ci_high:.3f}])")
    print("confusion (rows = people, columns = judge):")
    print(confusion_markdown(res.labels, res.confusion))
    for lab, d in res.per_label.items():
        p = "n/a" if d["precision"] is None else f"{d['precision']:.3f}"
        r = "n/a" if d["recall"] is None else f"{d['recall']:.3f}"
        print(f"  {lab:17s} precision {p}  recall {r}  support {d['support']}  predicted {d['predicted']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
