"""Question shards: a suite's per-question tables computed shard by shard, then merged into one table each.

A suite with ``shards: N`` (N >= 2) in its configuration has, beside its usual assets, a shard layer
(group ``<suite>_shards``): ``<suite>/shards/rag_runs``, the judging step (``judge_labels``,
``answer_judgements``, ``answer_quality``), the citations step (``citation_claims``, ``citations``,
``nugget_labels``) and ``question_metrics``, each partitioned by Dagster's ``StaticPartitionsDefinition``
of the shards ``"0"`` .. ``"N-1"``. A shard's step reads the whole snapshot and golden set and keeps its own
questions (``core/shards.py``: a stable hash of the question id), so the shards are independent steps,
one run per shard, that any executor can put on any worker. Their files are
``<suite folder>/shards/<table>/<shard>.parquet``.

:func:`build` declares the one non-partitioned step that puts them back together, ``<suite>__merge_shards``:
it reads every shard of every table (each input maps to all the upstream partitions, Dagster's
``AllPartitionMapping``; the IO manager gives one scan per shard) and writes the merged tables under the
keys the rest of the chain reads (``<suite>/rag_runs``, ..., ``<suite>/question_metrics``), one table at a
time. Everything downstream (``metric_summary``, gates, the report, promotion, the history) is the unsharded
chain's, unchanged, and the checks of the per-question tables sit on the merged tables. A quick evaluation
and a suite with ``shards: 1`` have no shard layer.

The suite's jobs: ``<suite>__question_shards`` (the shard layer; run once per shard: a backfill of its
partitions, ``dagster job execute ... --tags '{"dagster/partition": "K"}'``, or ``rag-eval run``, which runs
every shard then the rest) and ``<suite>__full_evaluation`` (everything else: the snapshot, the golden set,
the merge and what follows; run the snapshot and golden set before the shards, the rest after them).
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.shards import shard_parts
from rag_eval_pipeline.core.storage import TableBatches
from rag_eval_pipeline.defs.scope import SHARDED_TABLES, SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "shards"
MERGE = "merge_shards"


def merged_table(name: str, parts: dict[str, pl.LazyFrame], keep: "pl.Expr | None" = None) -> dg.Output[TableBatches]:
    """The merged table ``name`` from ``parts`` (shard key -> scan of its file), in shard order, with the rows
    per shard in the metadata: written one shard at a time (never the merged table in memory). ``keep``: when
    given, only the rows it holds true for (each shard filtered as it is read). Raises ValueError when a
    question is in two shards (``core/shards.py``)."""
    order = sorted(parts, key=int)
    if keep is not None:
        parts = {k: v.filter(keep) for k, v in parts.items()}
    batches = shard_parts([parts[k] for k in order], name)
    rows = {k: int(parts[k].select(pl.len()).collect().item()) for k in order}
    return dg.Output(TableBatches(batches), metadata={"rows": sum(rows.values()), "shards": len(order),
                                                      "rows_per_shard": dg.MetadataValue.json(rows)})


def kept_rows(name: str, shards: dict) -> "pl.Expr | None":
    """The rows of merged ``question_metrics`` to keep: a shard wrote ``latency_ms`` rows of every system (it
    cannot tell whether another shard measured one), the unsplit table has those of the systems that measured
    a latency in some run row (``core/metrics/latency.latency_systems`` of every shard's ``rag_runs``)."""
    if name != "question_metrics":
        return None
    from rag_eval_pipeline.core.metrics.latency import LATENCY_METRIC, latency_systems

    runs = [scan.select("system", "latency_ms") if "latency_ms" in scan.collect_schema().names()
            else scan.select("system") for scan in shards["rag_runs"].values()]
    measured = latency_systems(pl.concat(runs, how="diagonal")) if runs else []
    return (pl.col("metric") != LATENCY_METRIC) | pl.col("system").is_in(measured)


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the merge step of a sharded full evaluation (``scope.sharded``; none otherwise):
    one multi-asset yielding each merged table selected, reading every shard of each."""
    if not scope.sharded:
        return [], []
    layer = scope.shard_layer_scope()
    outs = {name: dg.AssetOut(key=scope.key(name), kinds={"polars", "parquet"}, is_required=False,
                              description=f"{name} of every question shard, merged (shard 0's rows first).",
                              io_manager_key=scope.io_manager_key, group_name=scope.group(STAGE),
                              tags={"stage": STAGE})
            for name in SHARDED_TABLES}
    ins = {name: dg.AssetIn(key=layer.key(name), partition_mapping=dg.AllPartitionMapping())
           for name in SHARDED_TABLES}

    @dg.multi_asset(name=scope.op(MERGE), outs=outs, ins=ins, can_subset=True,
                    internal_asset_deps={name: {layer.key(name)} for name in SHARDED_TABLES})
    def merge(context: dg.AssetExecutionContext, **shards: dict):
        selected = context.selected_output_names
        for name in SHARDED_TABLES:  # one shard of one table in memory at a time
            if name in selected:
                out = merged_table(name, shards[name], kept_rows(name, shards))
                yield dg.Output(out.value, output_name=name, metadata=out.metadata)
                del out

    return [merge], []
