"""How coverage and the two abstention error rates move with the extractive answerer's threshold (SQuAD 2.0).

Runs the built-in reference system (BM25 k=5 + extractive answerer) over the SQuAD 2.0 dev subset in
``data/configs/squad_v2.yaml`` at several ``abstain_threshold`` values and prints, for each, coverage,
answer-without-evidence rate and false-abstention rate with counts and Wilson 95% intervals.
Usage: python bench/squad_abstention_sweep.py [--config data/configs/squad_v2.yaml]
"""

import argparse
import dataclasses
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rag_eval_pipeline.core.config import load_config  # noqa: E402
from rag_eval_pipeline.core.metrics.decisions import decision_question_metrics  # noqa: E402
from rag_eval_pipeline.core.metrics.stats import wilson_interval  # noqa: E402
from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot  # noqa: E402
from rag_eval_pipeline.core.reference_system import run_reference_system  # noqa: E402

RATES = ("coverage", "answer_without_evidence_rate", "false_abstention_rate")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default=str(ROOT / "data" / "configs" / "squad_v2.yaml"))
    parser.add_argument("--thresholds", default="0.2,0.3,0.4,0.5,0.6,0.7,0.8")
    args = parser.parse_args()
    cfg = load_config(args.config)
    snapshot, version = build_snapshot(cfg)
    golden = build_golden(cfg, snapshot)
    base = cfg.systems[0]  # the typed section of a kind: reference system
    print(f"SQuAD 2.0 subset: {golden.height} questions "
          f"({(golden['answerability'] == 'absent').sum()} absent); retriever {base.retriever.resolved()}")
    print(f"{'threshold':>9}  " + "  ".join(f"{m:>36}" for m in RATES))
    for t in [float(x) for x in args.thresholds.split(",")]:
        system = dataclasses.replace(base, name=f"t{t}",
                                     generator=dataclasses.replace(base.generator, abstain_threshold=t))
        runs = run_reference_system(snapshot, golden, system, version, golden["golden_version"][0])
        qm = decision_question_metrics(runs, golden, snapshot)
        cells = []
        for m in RATES:
            v = qm.filter((pl.col("metric") == m) & pl.col("value").is_not_null())["value"]
            num, den = float(v.sum()), v.len()
            lo, hi = wilson_interval(num, den)
            cells.append(f"{num / den:.3f} ({int(num)}/{den}) [{lo:.3f}, {hi:.3f}]" if den else "null (0/0)")
        print(f"{t:>9.2f}  " + "  ".join(f"{c:>36}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
