"""The embedded sample's chain up to the per-question metrics, built in process by the pure core: the inputs
that tests of tables in parts (batches, shards) split and compare against one pass."""

from __future__ import annotations

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.pipeline import build_citations, build_golden, build_nuggets, build_runs, build_snapshot
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR


def sample_chain() -> dict:
    """The sample suite's configuration, snapshot, golden set, runs, rule-based judge, judge labels and answer
    judgements, citation claims and citations, and nugget labels, keyed by those short names."""
    cfg = load_config(SAMPLE_DIR / "config.yaml")
    snapshot, version = build_snapshot(cfg)
    golden = build_golden(cfg, snapshot)
    runs = build_runs(cfg, snapshot, golden, version)
    judge = RuleBasedJudge()
    labels, answers = judge_runs(runs, snapshot, judge, questions=golden.select("question_id", "question"))
    claims, cites = build_citations(cfg, snapshot, golden, runs, judge)
    nuggets = build_nuggets(cfg, snapshot, golden, runs, judge)
    return {"cfg": cfg, "snapshot": snapshot, "golden": golden, "runs": runs, "judge": judge, "labels": labels,
            "answers": answers, "claims": claims, "cites": cites, "nuggets": nuggets}
