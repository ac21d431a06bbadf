"""citation_claims, citations and nugget_labels: citation validity and support, and completeness.

The tables come from :mod:`rag_eval_pipeline.core.citations.judging` (every citation of every answer,
inline markers read with the system's ``citation_format``, its validity checked by code and its
support judged against the cited chunks alone: ALCE, Gao et al., EMNLP 2023; the TREC 2024 RAG
support view) and :mod:`rag_eval_pipeline.core.completeness` (every golden claim judged against every
answer: the TREC 2024 RAG AutoNuggetizer nuggets). Both ask the configured judge through its
``JudgesSupport`` capability; a judge without it gives JUDGE_ERROR rows (counted, never a score) and
validity is still reported. ``question_metrics`` turns them into the citation and completeness
metrics; ``judge_calibration`` compares them with people's labels per verdict family.

:func:`build` declares them for one suite scope (``build(scope)``, like every stage module): one step,
``<suite>__citations``, yields the three tables (those selected); it reads ``rag_runs``, ``golden_set`` and
``corpus_snapshot`` as declared inputs, the suite's configuration and judge from its own resources, and holds
one slot of the judge pool (``defs/pools.py``).
"""


from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.judges.base import BindsRuns
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.defs.judging import JudgeResource, JudgeRunConfig
from rag_eval_pipeline.defs.pools import JUDGE_POOL
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "citations"
DESCRIPTIONS = {
    "citation_claims": "One claim of one answer, its citations judged together against it (ALCE citation recall).",
    "citations": "One citation of one claim: exists, retrieved, current, readable, and its support alone; why it "
                 "failed.",
    "nugget_labels": "One reference claim (nugget) of one golden question judged against one answer "
                     "(TREC 2024 RAG AutoNuggetizer): what the answer left out.",
}


def _judge_key(df: pl.DataFrame) -> dg.MetadataValue:
    """The judge keys of a family table, for its file's footer (``core/table_files.py``)."""
    keys = df.select("judge", "judge_model", "prompt_sha256").unique().sort(pl.all(), nulls_last=True)
    return dg.MetadataValue.json(keys.to_dicts())


def _counts(df: pl.DataFrame, column: str) -> dg.MetadataValue:
    return dg.MetadataValue.json({str(k): int(v) for k, v in df.group_by(column).len().sort(column).iter_rows()})


def _bound_judge(judge: JudgeResource, rag_runs: pl.DataFrame):
    j = judge.get_judge()
    if isinstance(j, BindsRuns):  # human labels are matched to answers through the runs they label
        j.bind_runs(rag_runs)
    return j


def judge_citations(config: JudgeRunConfig, judge: JudgeResource,
                    settings: EvalSettings, corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame,
                    rag_runs: pl.DataFrame):
    """Yield ``citation_claims`` (one row per claim, repeat) and ``citations`` (one row per citation, repeat)
    of every system's answers (``core.pipeline.build_citations``: ALCE citation recall / precision inputs, the
    TREC 2024 RAG support view, validity by code). Metadata: judge key, statuses, verdicts, judge errors,
    invalid citations and failures by kind. Raises SchemaError for a table missing a column."""
    from rag_eval_pipeline.core.pipeline import build_citations
    j = _bound_judge(judge, rag_runs)
    repeats = config.repeats or settings.config.judge.repeats
    claims, cites = build_citations(settings.config, corpus_snapshot, golden_set, rag_runs, j, repeats=repeats)
    failures = cites.filter(pl.col("repeat") == 0).select(pl.col("failures").explode()).drop_nulls()
    errors = int((claims["verdict"] == "JUDGE_ERROR").sum())
    yield dg.Output(claims, output_name="citation_claims", metadata={
        "judge_key": _judge_key(claims), "claims": claims.height, "statuses": _counts(claims, "status"),
        "verdicts": _counts(claims.filter(pl.col("verdict").is_not_null()), "verdict"), "judge_errors": errors,
        "repeats": repeats,
    })
    yield dg.Output(cites, output_name="citations", metadata={
        "judge_key": _judge_key(cites), "citations": int((cites["repeat"] == 0).sum()),
        "invalid": int((~cites.filter(pl.col("repeat") == 0)["valid"]).sum()),
        "failures": _counts(failures, "failures") if failures.height else dg.MetadataValue.json({}),
    })


def nugget_labels(config: JudgeRunConfig, judge: JudgeResource,
                  settings: EvalSettings, corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame,
                  rag_runs: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Every golden claim (nugget) of every answered question judged against the answer, ``repeats`` times
    (``core.pipeline.build_nuggets``; TREC 2024 RAG AutoNuggetizer). Metadata: judge key, verdict counts,
    judge errors. Raises SchemaError for a table missing a column."""
    from rag_eval_pipeline.core.pipeline import build_nuggets
    j = _bound_judge(judge, rag_runs)
    repeats = config.repeats or settings.config.judge.repeats
    nuggets = build_nuggets(settings.config, corpus_snapshot, golden_set, rag_runs, j, repeats=repeats)
    return dg.Output(nuggets, metadata={
        "judge_key": _judge_key(nuggets), "labels": nuggets.height, "verdicts": _counts(nuggets, "verdict"),
        "judge_errors": int((nuggets["verdict"] == "JUDGE_ERROR").sum()), "repeats": repeats,
    })


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the citations stage for ``scope``: one step, ``citations`` (``citation_claims``,
    ``citations`` and ``nugget_labels``; it can be subset, and computes only what is selected), reading
    ``rag_runs``, ``golden_set`` and ``corpus_snapshot`` and the suite's settings and judge, and holding a slot
    of the judge pool. The lineage draws ``citation_claims`` from the three inputs and the other two tables from
``rag_runs`` (the golden set and the snapshot are upstream of it), as the judging stage draws its tables."""
    tables = ("rag_runs", "golden_set", "corpus_snapshot")
    outs = {name: dg.AssetOut(key=scope.key(name), kinds={"polars", "parquet"}, is_required=False,
                              description=scope.describe(text), io_manager_key=scope.io_manager_key,
                              group_name=scope.group(STAGE), tags={"stage": STAGE})
            for name, text in DESCRIPTIONS.items()}

    if not scope.declares("citations"):  # a sharded full evaluation: merged by defs/shards.py
        return [], []

    @dg.multi_asset(name=scope.op(STAGE), outs=outs, ins=scope.ins(*tables),
                    partitions_def=scope.partitions_def,  # one step per question shard in the shard layer
                    internal_asset_deps={name: {scope.key(t) for t in (tables if name == "citation_claims" else
                                                                      ("rag_runs",))} for name in outs},
                    can_subset=True,
                    pool=JUDGE_POOL,  # it calls the judge: one slot of the judge pool (defs/pools.py)
                    required_resource_keys=scope.needs("settings", "judge"))
    def citation_step(context: dg.AssetExecutionContext, config: JudgeRunConfig, rag_runs: pl.DataFrame,
                      golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame):
        selected = context.selected_output_names
        judge, settings = scope.judge(context), scope.settings(context)
        golden_set = scope.shard_rows(context, golden_set)
        if selected & {"citation_claims", "citations"}:  # one judging pass gives both
            for output in judge_citations(config, judge, settings, corpus_snapshot, golden_set, rag_runs):
                if output.output_name in selected:
                    yield output
        if "nugget_labels" in selected:
            nuggets = nugget_labels(config, judge, settings, corpus_snapshot, golden_set, rag_runs)
            yield dg.Output(nuggets.value, output_name="nugget_labels", metadata=nuggets.metadata)

    return [citation_step], []
