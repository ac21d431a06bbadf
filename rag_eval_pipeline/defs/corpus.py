"""corpus_snapshot: the frozen, hashed corpus, and the checks beside it.

The computations are plain functions; :func:`build` declares them as one suite's asset and check.
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "corpus"


def corpus_snapshot(context: dg.AssetExecutionContext, settings: EvalSettings) -> dg.Output[pl.DataFrame]:
    """One row per chunk of one document version (chunk id ``doc_id#n``, or the team's own ids with
    ``corpus.source: chunks``); metadata carries corpus_version."""
    from rag_eval_pipeline.core.pipeline import build_snapshot
    snapshot, version = build_snapshot(settings.config)
    status = dict(snapshot.group_by("status").len().iter_rows())
    context.log.info(f"corpus_version {version}: {snapshot['doc_id'].n_unique()} documents, {snapshot.height} chunks")
    return dg.Output(
        snapshot,
        metadata={
            "corpus_version": version,
            "documents": snapshot["doc_id"].n_unique(),
            "chunks": snapshot.height,
            "withdrawn_chunks": status.get("withdrawn", 0),
            "replaced_chunks": status.get("replaced", 0),
            "acl_restricted_chunks": int((snapshot["acl"].list.len() > 0).sum()),
        },
    )


def chunk_ids_unique(settings: EvalSettings, corpus_snapshot: pl.DataFrame) -> dg.AssetCheckResult:
    """Chunk ids are unique, and of the form doc_id#n when the pipeline chunked the corpus (corpus.source
    chunks keeps the team's own ids)."""
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    dupes = corpus_snapshot.filter(pl.col("chunk_id").is_duplicated())["chunk_id"].unique().sort().to_list()
    chunked_here = CORPUS_SOURCES.get(settings.config.corpus.source).snapshot is None
    malformed = [] if not chunked_here else corpus_snapshot.filter(
        pl.col("chunk_id") != pl.col("doc_id") + pl.lit("#") + pl.col("chunk_index").cast(pl.Utf8)
    )["chunk_id"].to_list()
    return dg.AssetCheckResult(
        passed=not dupes and not malformed,
        metadata={"duplicate_ids": dupes[:50], "malformed_ids": malformed[:50], "chunks": corpus_snapshot.height},
    )


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the corpus stage for ``scope``: ``corpus_snapshot`` reads the configured source."""

    @dg.asset(key=scope.key("corpus_snapshot"), description=scope.describe(corpus_snapshot.__doc__),
              kinds={"polars", "parquet"}, required_resource_keys=scope.needs("settings"), **scope.asset_args(STAGE))
    def snapshot(context: dg.AssetExecutionContext) -> dg.Output[pl.DataFrame]:
        return corpus_snapshot(context, scope.settings(context))

    @dg.asset_check(asset=snapshot, name="chunk_ids_unique", blocking=True,
                    required_resource_keys=scope.needs("settings"), description=chunk_ids_unique.__doc__)
    def ids_unique(context, asset_value: pl.DataFrame) -> dg.AssetCheckResult:
        return chunk_ids_unique(scope.settings(context), asset_value)

    return [snapshot], [ids_unique]
