"""golden_set: the validated questions, the label-consistency check beside it, and a warning for
evidence on withdrawn or replaced chunks.

The computations are plain functions; :func:`build` declares them as one suite's asset and checks.
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.plain_names import ANSWERABILITY
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "golden"
CONSISTENT_DESCRIPTION = ("Every referenced chunk id and document id exists; absent questions have no relevant ids; "
                          "answerable ones have some (chunks or documents).")
CURRENT_DESCRIPTION = ("Warns when a question's evidence (relevant ids with grade > 0, claim support) is a withdrawn "
                       "or replaced chunk: those questions form the doc_status=withdrawn / doc_status=replaced "
                       "segments of the report.")


class GoldenSetConfig(dg.Config):
    """``subset: quick`` keeps a fixed stratified subset (the on-change job); ``full`` keeps all."""

    subset: str = "full"


def golden_set(context: dg.AssetExecutionContext, config: GoldenSetConfig, settings: EvalSettings,
               corpus_snapshot: pl.DataFrame, quick: bool = False) -> dg.Output[pl.DataFrame]:
    """One row per question, validated against the snapshot (ids exist, classes consistent, ids unique)."""
    from rag_eval_pipeline.core.pipeline import build_golden, quick_subset
    cfg = settings.config
    golden = build_golden(cfg, corpus_snapshot)
    subset = "quick" if quick else config.subset  # a quick evaluation's keys always hold the subset
    if subset == "quick":
        golden = quick_subset(golden, cfg.quick_subset_size, cfg.seed)
    elif subset != "full":
        raise dg.Failure(f"golden_set config subset must be 'full' or 'quick', got {config.subset!r}")
    by_group = golden.group_by("answerability", "split").len().sort("answerability", "split")
    counts = {f"{a}/{s}": n for a, s, n in by_group.iter_rows()}
    return dg.Output(
        golden,
        metadata={
            "golden_version": golden["golden_version"][0] if golden.height else "",
            "questions": golden.height,
            "subset": subset,
            "by_class_and_split": dg.MetadataValue.json(counts),
        },
    )


def golden_consistent_with_snapshot(golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.sources.golden import with_relevant_docs

    # Column expressions, no Python loop over questions (10,000 questions x 200,000 chunks in well under a second).
    g = with_relevant_docs(golden_set).with_row_index("_row")
    relevant_ids = pl.col("relevant").list.eval(pl.element().struct.field("chunk_id"))
    supporting_ids = pl.col("claims").list.eval(pl.element().struct.field("supporting").explode())
    cited = pl.concat([
        g.select("_row", "question_id", pl.lit(0).alias("_src"), relevant_ids.alias("chunk_id")),
        g.select("_row", "question_id", pl.lit(1).alias("_src"), supporting_ids.alias("chunk_id")),
    ]).explode("chunk_id").drop_nulls("chunk_id").with_row_index("_item")
    unknown = (cited.join(corpus_snapshot.select("chunk_id").unique(), on="chunk_id", how="anti")
               .sort("_row", "_src", "_item")
               .select(pl.col("question_id") + pl.lit(":") + pl.col("chunk_id"))
               .to_series().to_list())
    docs = g.select("_row", "question_id", pl.col("relevant_docs").list.eval(pl.element().struct.field("doc_id"))
                    .alias("doc_id")).explode("doc_id").drop_nulls("doc_id").with_row_index("_item")
    if docs.height:  # document-level relevance: its doc ids must be documents of the snapshot
        unknown += (docs.join(corpus_snapshot.select("doc_id").unique(), on="doc_id", how="anti")
                    .sort("_row", "_item").select(pl.col("question_id") + pl.lit(":doc:") + pl.col("doc_id"))
                    .to_series().to_list())
    n_relevant = pl.col("relevant").list.len().fill_null(0) + pl.col("relevant_docs").list.len().fill_null(0)
    bad_class = g.filter(~pl.col("answerability").is_in(list(ANSWERABILITY)) | pl.col("answerability").is_null())
    absent_with = g.filter((pl.col("answerability") == "absent") & (n_relevant > 0))
    answerable_without = g.filter((pl.col("answerability") == "answerable") & (n_relevant == 0))
    dupes = golden_set.filter(pl.col("question_id").is_duplicated())["question_id"].unique().sort().to_list()
    bad_class_ids, absent_with_ids, answerable_without_ids = (
        f["question_id"].to_list() for f in (bad_class, absent_with, answerable_without))
    passed = not (unknown or bad_class_ids or absent_with_ids or answerable_without_ids or dupes)
    return dg.AssetCheckResult(
        passed=passed,
        metadata={
            "unknown_chunk_ids": unknown[:50],
            "unknown_answerability": bad_class_ids[:50],
            "absent_with_relevant": absent_with_ids[:50],
            "answerable_without_relevant": answerable_without_ids[:50],
            "duplicate_question_ids": dupes[:50],
        },
    )


def golden_evidence_is_current(golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    # The same evidence as the report's doc_status segments (core.metrics.segments.question_segments).
    from rag_eval_pipeline.core.metrics.decisions import evidence_chunks
    order = golden_set.select("question_id").with_row_index("_row")
    stale = (
        evidence_chunks(golden_set, corpus_snapshot, readable_only=False)  # relevant_docs reach their chunks
        .explode("evidence").drop_nulls("evidence").rename({"evidence": "chunk_id"})
        .join(corpus_snapshot.select("chunk_id", "status", "replaced_by").unique("chunk_id", keep="first"),
              on="chunk_id", how="inner")
        .filter(pl.col("status").is_in(["withdrawn", "replaced"]))
        .join(order, on="question_id", how="left")
        .sort("_row", "chunk_id")
    )
    listed = [f"{q}:{c} ({s}" + (f" by {r})" if r else ")")
              for q, c, s, r in stale.select("question_id", "chunk_id", "status", "replaced_by").iter_rows()]
    questions = stale["question_id"].unique(maintain_order=True).to_list()
    return dg.AssetCheckResult(
        passed=not listed,
        severity=dg.AssetCheckSeverity.WARN,
        description=(f"{len(questions)} question(s) rest on withdrawn or replaced chunks (segments "
                     "doc_status=withdrawn / doc_status=replaced)" if listed else "every evidence chunk is active"),
        metadata={
            "withdrawn_or_replaced_ids": listed[:100],
            "questions": questions[:100],
            "n_ids": len(listed),
            "n_questions": len(questions),
        },
    )


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the golden stage for ``scope``: ``golden_set`` reads ``corpus_snapshot``."""

    @dg.asset(key=scope.key("golden_set"), ins=scope.ins("corpus_snapshot"), kinds={"polars", "parquet"},
              description=scope.describe(golden_set.__doc__), required_resource_keys=scope.needs("settings"),
              **scope.asset_args(STAGE))
    def golden(context: dg.AssetExecutionContext, config: GoldenSetConfig,
               corpus_snapshot: pl.DataFrame) -> dg.Output[pl.DataFrame]:
        return golden_set(context, config, scope.settings(context), corpus_snapshot, quick=scope.quick)

    @dg.asset_check(asset=golden, name="golden_consistent_with_snapshot", blocking=True,
                    additional_ins=scope.ins(corpus_snapshot={"columns": ["chunk_id", "doc_id"]}),
                    description=CONSISTENT_DESCRIPTION)
    def consistent(golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
        return golden_consistent_with_snapshot(golden_set, corpus_snapshot)

    @dg.asset_check(asset=golden, name="golden_evidence_is_current", blocking=False,
                    additional_ins=scope.ins(corpus_snapshot={"columns": ["chunk_id", "status", "replaced_by"]}),
                    description=CURRENT_DESCRIPTION)
    def current(golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
        return golden_evidence_is_current(golden_set, corpus_snapshot)

    return [golden], [consistent, current]
