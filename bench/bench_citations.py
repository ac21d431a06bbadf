"""Time that citations and completeness add to the chain, side by side in one process (a script, not a test).

For each suite (the embedded sample; BEIR SciFact test when ``scifact_beir/`` is under
``RAG_EVAL_DATASETS`` or ``../shared/datasets``), with the embedded judge, the core chain's steps
are timed in one process, in this order: snapshot + golden set + runs, faithfulness judging
(``judge_runs``), the existing per-question metrics and summary; then what this feature adds:
citation tables (``build_citations``: marker parsing, validity, support judging), nugget labels
(``build_nuggets``) and their per-question metrics and summary rows (these two, cheap and noisy, as
the fastest of three calls with and without the new rows). The encoder is warmed on the
first suite before anything is timed. Printed: each step's seconds, the added seconds and their ratio
to faithfulness judging and to the whole chain, and the load average (2 shared cores: compare ratios,
not seconds, across runs).

Usage: python bench/bench_citations.py [--datasets DIR] [--no-scifact]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rag_eval_pipeline.core import pipeline  # noqa: E402
from rag_eval_pipeline.core.config import load_config  # noqa: E402
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge  # noqa: E402
from rag_eval_pipeline.core.judging import judge_runs  # noqa: E402


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def best_of(n: int, fn, *args, **kwargs):
    """(the result, the fastest of ``n`` timed calls): for the cheap steps whose difference is measured."""
    times = []
    for _ in range(n):
        out, sec = timed(fn, *args, **kwargs)
        times.append(sec)
    return out, min(times)


def suite(name: str, config: Path, judge) -> dict:
    cfg = load_config(config)
    t = {}
    (snapshot, version), t["snapshot"] = timed(pipeline.build_snapshot, cfg)
    golden, t["golden"] = timed(pipeline.build_golden, cfg, snapshot)
    runs, t["runs"] = timed(pipeline.build_runs, cfg, snapshot, golden, version)
    (labels, answers), t["faithfulness judging"] = timed(
        judge_runs, runs, snapshot, judge, questions=golden.select("question_id", "question"),
        abstention_phrases=cfg.judge.abstention_phrases, citation_formats=pipeline.citation_formats(cfg))
    (qm, _), t["question metrics"] = best_of(3, pipeline.build_question_metrics, cfg, snapshot, golden, runs, labels,
                                            answers)
    _, t["summary"] = best_of(3, pipeline.build_summary, cfg, qm, golden, snapshot)
    base = sum(t.values())
    a = {}
    (claims, cites), a["citation tables"] = timed(pipeline.build_citations, cfg, snapshot, golden, runs, judge)
    nuggets, a["nugget labels"] = timed(pipeline.build_nuggets, cfg, snapshot, golden, runs, judge)
    (qm2, _), total_qm = best_of(3, pipeline.build_question_metrics, cfg, snapshot, golden, runs, labels, answers,
                                 citations=(claims, cites), nugget_labels=nuggets)
    _, total_sum = best_of(3, pipeline.build_summary, cfg, qm2, golden, snapshot)
    # the metrics and summary with the new rows, timed whole (fastest of 3, as the runs above): their difference
    # from the runs above is the cost (noise on a shared machine can still make it slightly negative)
    a["their question metrics"] = total_qm - t["question metrics"]
    a["their summary rows"] = total_sum - t["summary"]
    added = sum(a.values())
    print(f"\n{name}: {runs.height} runs, {claims.filter(claims['repeat'] == 0).height} citation claims, "
          f"{cites.filter(cites['repeat'] == 0).height} citation rows, {nuggets.height} nugget labels")
    for k, v in {**t, **a}.items():
        print(f"  {k:<24} {v:8.2f} s" + ("   (added)" if k in a else ""))
    print(f"  question metrics and summary with the new rows: {total_qm:.2f} s and {total_sum:.2f} s")
    print(f"  added {added:.2f} s = {added / t['faithfulness judging']:.2f} x faithfulness judging, "
          f"+{100 * added / base:.0f} % of the core chain ({base:.2f} s)")
    return {"added": added, "base": base}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=os.environ.get("RAG_EVAL_DATASETS", str(REPO.parent / "shared" / "datasets")))
    ap.add_argument("--no-scifact", action="store_true")
    args = ap.parse_args(argv)
    judge = RuleBasedJudge()
    judge.judge("", "warm up the encoder", ["warm up the encoder"])
    suite("sample (3 systems, 52 questions)", REPO / "data" / "sample" / "config.yaml", judge)
    scifact = Path(args.datasets) / "scifact_beir"
    if not args.no_scifact and scifact.is_dir():
        import tempfile

        import yaml

        cfg = yaml.safe_load((REPO / "data" / "configs" / "scifact.yaml").read_text())
        cfg["corpus"]["path"] = str(scifact)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "scifact.yaml"
            path.write_text(yaml.safe_dump(cfg))
            suite("SciFact test (BM25 + extractive, 300 questions; BEIR holds no claims: no nuggets)", path, judge)
    load = os.getloadavg()
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
