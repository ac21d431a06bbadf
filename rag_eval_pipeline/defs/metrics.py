"""Metric tables (per question, aggregate, history), the TREC export, and the check on the aggregate.

The computations are plain functions; :func:`build` declares ``question_metrics``, ``metric_history`` and
``trec_files`` for a suite (``metric_summary`` is computed in the aggregate stage, ``defs/aggregate.py``).
``metric_history`` appends to its own previous materialisation (read from the suite's folder).
"""

import datetime as dt
from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.metrics.names import level_label
from rag_eval_pipeline.core.storage import TableBatches
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "metrics"
DENOMINATORS_DESCRIPTION = ("No rate without its counts, no NaN, null exactly where the denominator is 0; every "
                            "retrieval measure scored over the same questions at every level (chunk, doc).")

# Only the snapshot's columns a step reads: a 200,000-chunk corpus's texts stay on disk.
SNAPSHOT_FOR_QUESTION_METRICS = ["chunk_id", "doc_id", "acl"]  # doc_id: document-level relevance
SNAPSHOT_FOR_SUMMARY = ["chunk_id", "acl", "status", "valid_from"]


def question_metrics(context: dg.AssetExecutionContext, settings: EvalSettings, corpus_snapshot: pl.DataFrame,
                     golden_set: pl.DataFrame, rag_runs: pl.DataFrame, judge_labels: pl.DataFrame,
                     answer_judgements: pl.DataFrame, answer_quality: pl.DataFrame, citation_claims: pl.DataFrame,
                     citations: pl.DataFrame, nugget_labels: pl.DataFrame,
                     levels: tuple[str, ...] | None = None,
                     latency_systems: list[str] | None = None) -> dg.Output[TableBatches]:
    """One metric of one question for one system; value null when not evaluable, with the reason.
    Citation and completeness metrics come from ``citation_claims`` / ``citations`` / ``nugget_labels``.
    Computed and written 5,000 golden questions at a time (``core/pipeline.question_metric_batches``).
    Retrieval is scored at the levels the whole golden set judges, also in a question shard."""
    # a question shard gives latency rows of every system (latency_systems): the merge keeps those of the
    # systems that measured a latency in some shard (defs/shards.py), which one shard cannot tell
    from rag_eval_pipeline.core.pipeline import question_metric_batches

    info: dict = {}
    counts = {"rows": 0, "null_values": 0}

    def parts():
        for part in question_metric_batches(settings.config, corpus_snapshot, golden_set, rag_runs, judge_labels,
                                            answer_judgements, extra=[answer_quality],
                                            citations=(citation_claims, citations), nugget_labels=nugget_labels,
                                            info=info, levels=levels, latency_systems=latency_systems):
            counts["rows"] += part.height
            counts["null_values"] += int(part["value"].null_count())
            yield part

    def written() -> dict:
        return {"rows": counts["rows"], "retrieval_leftovers": dg.MetadataValue.json(info),
                "null_values": counts["null_values"]}

    return dg.Output(TableBatches(parts(), written), metadata={"ranking_mode": settings.config.ranking_mode,
                                                               "levels": ", ".join(levels or ())})


def metric_summary(context: dg.AssetExecutionContext, settings: EvalSettings, corpus_snapshot: pl.DataFrame,
                   golden_set: pl.DataFrame, question_metrics: pl.LazyFrame) -> dg.Output[pl.DataFrame]:
    """One metric for one system, split, segment and k: value, numerator/denominator, n, 95% interval.

    ``question_metrics`` is scanned, not loaded: the summary reads it in batches (core/metrics/summary.py)."""
    from rag_eval_pipeline.core.pipeline import build_summary
    summary = build_summary(settings.config, question_metrics, golden_set, corpus_snapshot)
    headline = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
    md = {"rows": summary.height, "ranking_mode": settings.config.ranking_mode}
    for row in headline.iter_rows(named=True):
        if row["value"] is not None:
            md[f"{row['system']}/{level_label(row['metric'], row['k'], row['level'])}"] = float(row["value"])
    md["summary"] = dg.MetadataValue.md(summary_markdown(headline))
    return dg.Output(summary, metadata=md)


def summary_markdown(headline: pl.DataFrame) -> str:
    """A Markdown table of the headline rows: metric (``recall_5 (doc)`` at document level), value,
    numerator/denominator, n, 95% CI."""
    from rag_eval_pipeline.core.report.markdown import markdown_table
    return markdown_table(["system", "metric", "value", "num/den", "n", "95% CI"], [
        [r["system"], level_label(r["metric"], r["k"], r.get("level")),
         "null" if r["value"] is None else f"{r['value']:.4f}", f"{r['numerator']:g}/{r['denominator']:g}", r["n"],
         "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"]
        for r in headline.sort("system", "metric").iter_rows(named=True)])


def denominators_consistent(metric_summary: pl.DataFrame) -> dg.AssetCheckResult:
    """The blocking check of ``metric_summary``: no NaN, no rate without its counts, null exactly where the
    denominator is 0, value = numerator / denominator; and every retrieval measure of a system scored over the
    same questions at every level, every system at the same levels
    (:func:`~rag_eval_pipeline.core.metrics.doc_level.levels_not_scored`: a question shard that scored its
    questions at fewer levels than the suite shows as ``n`` 7 at one level and 8 at the other)."""
    from rag_eval_pipeline.core.metrics.doc_level import levels_not_scored

    s = metric_summary
    problems = {
        "nan_values": s.filter(pl.col("value").is_nan()),
        "null_with_denominator": s.filter(pl.col("value").is_null() & (pl.col("denominator") > 0)),
        "value_without_denominator": s.filter(pl.col("value").is_not_null()
                                              & (pl.col("denominator").fill_null(0) == 0)),
        "missing_counts": s.filter(pl.col("numerator").is_null() | pl.col("denominator").is_null()
                                   | pl.col("n").is_null()),
        "value_not_ratio": s.filter(
            pl.col("value").is_not_null()
            & ((pl.col("value") - pl.col("numerator") / pl.col("denominator")).abs() > 1e-9)
        ),
    }
    bad = {k: v for k, v in problems.items() if v.height}
    levels = levels_not_scored(s)
    return dg.AssetCheckResult(
        passed=not bad and not levels,
        metadata={k: dg.MetadataValue.json(v.select("system", "split", "segment", "metric", "k", "level").head(20)
                                           .to_dicts())
                  for k, v in bad.items()} | {"rows_checked": s.height}
        | ({"levels_not_scored": dg.MetadataValue.json(levels[:20])} if levels else {}),
    )


def metric_history(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
                   metric_summary: pl.DataFrame, golden_set: pl.DataFrame, rag_runs: pl.DataFrame,
                   judge_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Append one row per (run, system, metric, k) of the overall headline to the history table."""
    previous = store.read("metric_history.parquet")
    now = dt.datetime.now(dt.UTC)
    judge = judge_labels.select("judge", "judge_model", "prompt_sha256").unique().head(1)
    jd = judge.to_dicts()[0] if judge.height else {"judge": None, "judge_model": None, "prompt_sha256": None}
    manifests = rag_runs.group_by("system").agg(pl.col("corpus_version").first())
    rows = (
        metric_summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
        .join(manifests, on="system", how="left")
        .select(
            pl.lit(context.run_id).alias("run_id"),
            pl.lit(now).alias("evaluated_at"),
            pl.lit(now.date()).alias("night"),
            "system", "metric", "k", "value", "numerator", "denominator", "n", "ci_low", "ci_high",
            "corpus_version",
            pl.lit(golden_set["golden_version"][0] if golden_set.height else None).alias("golden_version"),
            pl.lit(golden_set.height).alias("golden_questions"),
            pl.lit(jd["judge"]).alias("judge"), pl.lit(jd["judge_model"]).alias("judge_model"),
            pl.lit(jd["prompt_sha256"]).alias("judge_prompt_sha256"),
            "level",
        )
    )
    # a history written before the level column existed reads it as null
    history = rows if previous is None else pl.concat([previous, rows], how="diagonal_relaxed").select(rows.columns)
    return dg.Output(history, metadata={"rows": history.height, "runs": history["run_id"].n_unique()})


def trec_files(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
               rag_runs: pl.DataFrame, golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame) -> dg.Output[dict]:
    """Every system's retrieval as a TREC run file and the golden relevance as TREC qrels, for trec_eval.

    Written to ``<output>/trec/<system>.run`` and ``<output>/trec/qrels.txt``; when the golden set judges
    documents (``relevant_docs``), also the document-level pair ``<output>/trec/<system>.doc.run`` and
    ``<output>/trec/qrels_doc.txt`` (each document once, at its first chunk's place). trec_eval ranks by
    score (ties by doc id descending), so compare its numbers with ``metrics.ranking_mode: trec_eval``. A
    question that retrieved nothing gets one line with a docno no qrels judge, so trec_eval scores it 0
    as the pipeline does. A question whose run errored is left out of the run file, as the tables leave
    it out of every retrieval average; ``trec_eval -c`` scores it 0 instead (missing = 0), the view that
    counts failures as empty retrievals. When every document is one chunk (BEIR), docnos are document
    ids. Ids holding whitespace are percent-encoded (``core.sources.trec.trec_tokens``). A system with a
    hit that has no score cannot be written (trec_eval needs one) and is listed as skipped.
    """
    from rag_eval_pipeline.core.metrics.doc_level import doc_qrels, doc_run, levels_of
    from rag_eval_pipeline.core.metrics.retrieval import explode_runs, qrels_from_golden
    from rag_eval_pipeline.core.sources.trec import (
        NO_RETRIEVAL_DOCNO,
        document_docnos,
        trec_tokens,
        with_docnos,
        write_trec_qrels,
        write_trec_run,
    )
    from rag_eval_pipeline.core.storage import write_atomic

    docnos = document_docnos(corpus_snapshot)
    written, skipped, empty, errored, doc_written = {}, {}, {}, {}, {}
    # ids with whitespace (a corpus file name with spaces) are percent-encoded: TREC tokens cannot hold it
    qrels = trec_tokens(with_docnos(qrels_from_golden(golden_set), docnos))
    qrels_path = write_atomic(store.path("trec", "qrels.txt"), lambda tmp: write_trec_qrels(qrels, tmp))
    with_docs = "doc" in levels_of(golden_set)
    doc_qrels_path = None
    if with_docs:
        dq = trec_tokens(doc_qrels(golden_set, corpus_snapshot))
        doc_qrels_path = write_atomic(store.path("trec", "qrels_doc.txt"), lambda tmp: write_trec_qrels(dq, tmp))
    failed = rag_runs.filter(pl.col("decision") == "error").select("system", "question_id")
    long = explode_runs(rag_runs).join(failed, on=["system", "question_id"], how="anti", maintain_order="left")
    for system in sorted(rag_runs["system"].unique().to_list()):
        errored[system] = failed.filter(pl.col("system") == system).height
        rows = long.filter(pl.col("system") == system)
        hits = rows.filter(pl.col("chunk_id").is_not_null())
        if hits["score"].null_count():
            skipped[system] = f"{hits['score'].null_count()} hit(s) without a score"
            continue
        empty[system] = rows.height - hits.height
        chunk_rows = trec_tokens(with_docnos(rows, docnos))
        path = write_atomic(store.path("trec", f"{system}.run"), lambda tmp, r=chunk_rows: write_trec_run(r, tmp))
        written[system] = str(path.resolve())
        if with_docs:
            docs = trec_tokens(doc_run(rows, corpus_snapshot, settings.config.ranking_mode).run_long)
            path = write_atomic(store.path("trec", f"{system}.doc.run"), lambda tmp, r=docs: write_trec_run(r, tmp))
            doc_written[system] = str(path.resolve())
    out = {"qrels": str(qrels_path.resolve()), "runs": written, "skipped": skipped}
    md = {
        "qrels": dg.MetadataValue.path(str(qrels_path.resolve())),
        "runs": dg.MetadataValue.json(written), "skipped": dg.MetadataValue.json(skipped),
        "docno": "doc_id (one chunk per document)" if docnos is not None else "chunk_id",
        "empty_retrievals": dg.MetadataValue.json(empty),
        "empty_retrieval_docno": NO_RETRIEVAL_DOCNO,
        "errored_questions": dg.MetadataValue.json(errored),
        "errored_questions_note": "left out of the run files, as the tables leave them out of every retrieval "
                                  "average; trec_eval -c scores them 0 (missing = 0)",
        "trec_eval": "python -m rag_eval_pipeline.trec_eval -q <output>/trec/qrels.txt <output>/trec/<system>.run",
    }
    if doc_qrels_path is not None:
        out.update({"qrels_doc": str(doc_qrels_path.resolve()), "doc_runs": doc_written})
        md.update({"qrels_doc": dg.MetadataValue.path(str(doc_qrels_path.resolve())),
                   "doc_runs": dg.MetadataValue.json(doc_written),
                   "trec_eval_doc": "python -m rag_eval_pipeline.trec_eval -q <output>/trec/qrels_doc.txt "
                                    "<output>/trec/<system>.doc.run"})
    return dg.Output(out, metadata=md)


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of ``scope``: ``question_metrics`` and ``trec_files``, and ``metric_history`` in a full
    evaluation (a quick one never appends to the history). The shard layer declares one shard's
    ``question_metrics`` only; a sharded full evaluation all but it (merged by ``defs/shards.py``)."""

    assets = []
    if scope.declares("question_metrics"):
        @dg.asset(key=scope.key("question_metrics"), kinds={"polars", "parquet"},
                  ins=scope.ins("golden_set", "rag_runs", "judge_labels", "answer_judgements", "answer_quality",
                                "citation_claims", "citations", "nugget_labels",
                                corpus_snapshot={"columns": SNAPSHOT_FOR_QUESTION_METRICS}),
                  description=scope.describe(question_metrics.__doc__), required_resource_keys=scope.needs("settings"),
                  **scope.asset_args(STAGE))
        def per_question(context: dg.AssetExecutionContext, corpus_snapshot: pl.DataFrame, golden_set: pl.DataFrame,
                         rag_runs: pl.DataFrame, judge_labels: pl.DataFrame, answer_judgements: pl.DataFrame,
                         answer_quality: pl.DataFrame, citation_claims: pl.DataFrame, citations: pl.DataFrame,
                         nugget_labels: pl.DataFrame) -> dg.Output[TableBatches]:
            from rag_eval_pipeline.core.metrics.doc_level import levels_of

            # decided from the whole golden set, never from the shard's part of it (a shard whose questions
            # have no relevant_docs is still scored at document level when the suite is)
            levels = levels_of(golden_set)
            golden_set = scope.shard_rows(context, golden_set)
            # whether a system measured latency is a fact of every shard's runs: a shard writes latency rows of
            # every system, and the merge drops those of systems that measured none (defs/shards.py)
            latency = rag_runs["system"].unique().sort().to_list() if scope.shard_layer else None
            return question_metrics(context, scope.settings(context), corpus_snapshot, golden_set, rag_runs,
                                    judge_labels, answer_judgements, answer_quality, citation_claims, citations,
                                    nugget_labels, levels=levels, latency_systems=latency)

        assets.append(per_question)
    if scope.shard_layer:
        return assets, []

    @dg.asset(key=scope.key("trec_files"), description=scope.describe(trec_files.__doc__),
              ins=scope.ins("rag_runs", "golden_set", corpus_snapshot={"columns": ["chunk_id", "doc_id"]}),
              required_resource_keys=scope.needs("settings", "store"), **scope.asset_args(STAGE))
    def trec(context: dg.AssetExecutionContext, rag_runs: pl.DataFrame, golden_set: pl.DataFrame,
             corpus_snapshot: pl.DataFrame) -> dg.Output[dict]:
        return trec_files(context, scope.settings(context), scope.store(context), rag_runs, golden_set,
                          corpus_snapshot)

    assets.append(trec)
    if not scope.quick:
        @dg.asset(key=scope.key("metric_history"), kinds={"polars", "parquet"},
                  ins=scope.ins("metric_summary", "golden_set", "rag_runs", "judge_labels"),
                  description=scope.describe(metric_history.__doc__),
                  required_resource_keys=scope.needs("settings", "store"), **scope.asset_args(STAGE))
        def history(context: dg.AssetExecutionContext, metric_summary: pl.DataFrame, golden_set: pl.DataFrame,
                    rag_runs: pl.DataFrame, judge_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
            return metric_history(context, scope.settings(context), scope.store(context), metric_summary, golden_set,
                                  rag_runs, judge_labels)

        assets.append(history)
    return assets, []
