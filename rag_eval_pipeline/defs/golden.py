"""golden_set: the validated questions, and the label-consistency check beside it."""


import dagster as dg
import polars as pl

from rag_eval_pipeline.core.pipeline import build_golden, quick_subset
from rag_eval_pipeline.core.tables import ANSWERABILITY
from rag_eval_pipeline.defs.resources import EvalSettings


class GoldenSetConfig(dg.Config):
    """``subset: quick`` keeps a fixed stratified subset (the on-change job); ``full`` keeps all."""

    subset: str = "full"


@dg.asset(group_name="golden", kinds={"polars", "parquet"})
def golden_set(context: dg.AssetExecutionContext, config: GoldenSetConfig, settings: EvalSettings,
               corpus_snapshot: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """One row per question, validated against the snapshot (ids exist, classes consistent, ids unique)."""
    cfg = settings.config
    golden = build_golden(cfg, corpus_snapshot)
    if config.subset == "quick":
        golden = quick_subset(golden, cfg.quick_subset_size, cfg.seed)
    elif config.subset != "full":
        raise dg.Failure(f"golden_set config subset must be 'full' or 'quick', got {config.subset!r}")
    counts = {f"{a}/{s}": n for a, s, n in golden.group_by("answerability", "split").len().sort("answerability", "split").iter_rows()}
    return dg.Output(
        golden,
        metadata={
            "golden_version": golden["golden_version"][0] if golden.height else "",
            "questions": golden.height,
            "subset": config.subset,
            "by_class_and_split": dg.MetadataValue.json(counts),
        },
    )


@dg.asset_check(asset=golden_set, blocking=True, additional_ins={"corpus_snapshot": dg.AssetIn()},
                description="Every referenced chunk id exists; absent questions have no relevant ids; answerable ones have some.")
def golden_consistent_with_snapshot(golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    known = set(corpus_snapshot["chunk_id"].to_list())
    unknown, bad_class, absent_with, answerable_without = [], [], [], []
    for row in golden_set.iter_rows(named=True):
        qid = row["question_id"]
        rel = [r["chunk_id"] for r in row["relevant"]]
        cited = rel + [c for claim in row["claims"] for c in claim["supporting"]]
        unknown += [f"{qid}:{c}" for c in cited if c not in known]
        if row["answerability"] not in ANSWERABILITY:
            bad_class.append(qid)
        if row["answerability"] == "absent" and rel:
            absent_with.append(qid)
        if row["answerability"] == "answerable" and not rel:
            answerable_without.append(qid)
    dupes = golden_set.filter(pl.col("question_id").is_duplicated())["question_id"].unique().to_list()
    passed = not (unknown or bad_class or absent_with or answerable_without or dupes)
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            "unknown_chunk_ids": unknown[:50],
            "unknown_answerability": bad_class[:50],
            "absent_with_relevant": absent_with[:50],
            "answerable_without_relevant": answerable_without[:50],
            "duplicate_question_ids": dupes[:50],
        },
    )
