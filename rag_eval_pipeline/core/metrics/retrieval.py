"""Offline retrieval metrics per question, with trec_eval's definitions and names.

Definitions: Manning, Raghavan & Schütze, *Introduction to Information Retrieval* (2008), ch. 8
(recall@k, precision@k, F1, MAP, R-precision); E. M. Voorhees, "The TREC-8 Question Answering Track
Report" (1999) (reciprocal rank); Järvelin & Kekäläinen, ACM TOIS 20 (2002) (nDCG);
claim evidence availability is this pipeline's (docs/METRICS.md); and, where trec_eval
implements the measure, trec_eval 10.0 (``usnistgov/trec_eval``): ``form_res_rels.c``
(ranking, tie-break, duplicate check, relevance levels), ``m_P.c``, ``m_recall.c``,
``m_success.c``, ``m_recip_rank.c``, ``m_ndcg_cut.c``, ``m_map.c``, ``m_Rprec.c``, ``m_num_*.c``,
``meas_avg.c`` and ``trec_eval.c`` (averaging, ``-c``, ``-l``). The per-question values agree with
trec_eval (and pytrec_eval) to 1e-9 in ``mode="trec_eval"``, except that a question without
relevant documents gets a null value instead of trec_eval's 0 (see below);
:func:`trec_eval_aggregate` turns those nulls back into trec_eval's averages.

Metric names (the ``metric`` column) are trec_eval's base names; the cutoff goes in ``k``:

==================  =====  ======================================================================
metric              k      definition (``rel`` = judged grade >= ``rel_level``)
==================  =====  ======================================================================
``num_ret``         null   retrieved documents of the question
``num_rel``         null   relevant documents in the qrels of the question
``num_rel_ret``     null   relevant documents retrieved (whole list)
``map``             null   average precision: sum over relevant retrieved d of P@rank(d), / num_rel
``Rprec``           null   relevant in the top num_rel / num_rel
``recip_rank``      null   1 / rank of the first relevant document (0 when none is retrieved)
``P``               k      relevant in the top k / k (k is the divisor even if fewer were retrieved)
``recall``          k      relevant in the top k / num_rel
``F1``              k      harmonic mean of P@k and recall@k = 2 * hits_k / (k + num_rel)
``success``         k      1 when at least one relevant document is in the top k (hit@k)
``ndcg_cut``        k      DCG@k / IDCG@k, gain = judged grade (> 0), discount log2(rank + 1)
``recip_rank_cut``  k      recip_rank counting only the top k (ir_measures' ``RR@k``); not a
                           trec_eval measure, computed only when asked for
``ndcg``            null   nDCG over the whole ranking, ideal from every judged grade > 0
                           (``m_ndcg.c``); computed only when asked for
==================  =====  ======================================================================

Layout: names live in :mod:`~rag_eval_pipeline.core.metrics.names`; :func:`retrieval_question_metrics`
calls :func:`~rag_eval_pipeline.core.metrics.ranking.prepare` once (ranking, duplicates, judged
grades as flat arrays), then one kernel per requested measure from
:data:`~rag_eval_pipeline.core.metrics.retrieval_kernels.KERNELS`, and lays the results out as rows.

``trec_name(metric, k)`` gives the trec_eval spelling (``recall_5``, ``ndcg_cut_10``,
``recip_rank_cut_10``); :data:`ALIASES` and :func:`parse_measure` accept readable names
(``recall@5``, ``precision@5``, ``hit@5``, ``mrr``, ``mrr@10``, ``ndcg@10``, ``f1@5``);
``ndcg`` alone is trec_eval's full-depth measure.

Rules that differ from a bare formula:

* Relevance for the binary measures is ``grade >= rel_level`` (trec_eval ``-l``, default 1); a
  negative grade is a judged non-relevant document. nDCG ignores ``rel_level``: its gain is the
  judged grade when positive, and its ideal DCG uses every judged grade > 0 of the question
  (``m_ndcg_cut.c``), so with ``rel_level=2`` a grade-1 document still earns gain 1.
* A question with no relevant document (``num_rel == 0``) is not evaluable for recall, F1,
  success, recip_rank, recip_rank_cut, map and Rprec: value null, status ``"no_relevant"``,
  numerator and denominator still filled (such questions are abstention cases, reported apart,
  never as 0; trec_eval leaves a question without relevance judgements out of its means). nDCG is null with
  the same status when the question has no judged grade > 0. Precision stays evaluable (status ``"ok"``, value
  0 when nothing relevant exists):
  its denominator is k, not the relevant count, so "every one of the k passages is noise" is a
  true statement about the context; trec_eval gives the same 0.
* ``mode="system"`` ranks by the ``rank`` column (the order the generator saw), ties in rank
  broken by input row order; ``mode="trec_eval"`` ignores ``rank`` and sorts by ``score``
  descending, ties broken by ``chunk_id`` in *decreasing* byte order (``comp_sim_docno`` in
  ``form_res_rels.c``), with scores compared in single precision as trec_eval stores them
  (``TEXT_RESULTS.sim`` is a C ``float``), so 0.0 and -1e-50 tie there. Ranks used by the
  metrics are positions 1..n in that order.
* A chunk retrieved twice for one question is an error (trec_eval refuses it too); with
  ``on_duplicate="keep_first"`` the occurrence ranked first in the chosen order is kept, the
  others are dropped and counted, and the positions are renumbered without them.
* Questions are the question ids of ``qrels``. A golden question without a run row is "missing":
  counted, and scored as an empty ranking (0) only with ``complete=True`` (trec_eval ``-c``).
  Run rows for a question not in ``qrels`` are "unknown": counted and left out.
"""


from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.metrics.claim_evidence import claim_evidence_availability
from rag_eval_pipeline.core.metrics.names import (
    ALIASES,
    CLAIM_METRIC,
    COUNT_MEASURES,
    CUT_MEASURES,
    DEFAULT_MEASURES,
    MEASURES,
    NEEDS_RELEVANT,
    RANKING_MODES,
    UNCUT_MEASURES,
    parse_measure,
    trec_name,
)
from rag_eval_pipeline.core.metrics.ranking import ON_DUPLICATE, check_ks, prepare, requested
from rag_eval_pipeline.core.metrics.retrieval_frames import (
    PER_QUESTION_SCHEMA,
    QRELS_SCHEMA,
    RUN_LONG_SCHEMA,
    explode_runs,
    qrels_from_golden,
)
from rag_eval_pipeline.core.metrics.retrieval_kernels import KERNELS, Measured


@dataclass(frozen=True)
class RetrievalEvaluation:
    """What :func:`retrieval_question_metrics` returns.

    ``per_question``: the ``question_metrics`` rows without ``split`` (schema
    :data:`PER_QUESTION_SCHEMA`), grouped by metric and k, then by system and question id.
    ``dropped_duplicates``: hits removed by ``on_duplicate="keep_first"`` (0 otherwise).
    ``missing_questions``: ``system``, ``question_id`` of qrels questions with no run row for that
    system (scored 0 when ``complete``, absent from ``per_question`` otherwise).
    ``unknown_questions``: ``system``, ``question_id``, ``n_rows`` of run questions absent from the
    qrels, left out of ``per_question``.
    """

    per_question: pl.DataFrame
    dropped_duplicates: int
    missing_questions: pl.DataFrame
    unknown_questions: pl.DataFrame
    mode: str
    rel_level: int
    complete: bool


# ----------------------------------------------------------------------------- per question


def retrieval_question_metrics(
    run_long: pl.DataFrame,
    qrels: pl.DataFrame,
    ks: Sequence[int] = (1, 3, 5, 10),
    measures: Iterable[str] | None = None,
    mode: str = "system",
    rel_level: int = 1,
    on_duplicate: str = "error",
    complete: bool = False,
) -> RetrievalEvaluation:
    """Per-question retrieval metrics of one or more systems against graded relevance judgments.

    Inputs: ``run_long`` (``system``, ``question_id``, ``chunk_id``, ``score`` f64, ``rank`` i32;
    one row per hit; a row with null ``chunk_id`` marks a question run with nothing retrieved, see
    :func:`explode_runs`); ``qrels`` (``question_id``, ``chunk_id``, ``grade`` i32; a row with null
    ``chunk_id`` marks a question with no judged chunk, see :func:`qrels_from_golden`); ``ks``:
    cutoffs >= 1 for the cut measures; ``measures``: names accepted by :func:`parse_measure`
    (None = :data:`DEFAULT_MEASURES`; a base name means "at every k", ``"recall@20"`` adds one
    cutoff); ``mode``: ``"system"`` (order by ``rank``) or ``"trec_eval"`` (order by ``score``
    desc, ties by ``chunk_id`` desc); ``rel_level``: minimum grade counted relevant by the binary
    measures (trec_eval ``-l``, >= 0); ``on_duplicate``: ``"error"`` or ``"keep_first"``;
    ``complete``: score golden questions absent from the run as empty rankings (trec_eval ``-c``).

    Output: a :class:`RetrievalEvaluation`; its ``per_question`` frame has one row per system,
    question, measure and cutoff with ``value`` in [0, 1] (counts for ``num_*``), null when not
    evaluable (``status`` says why, ``"ok"`` otherwise), ``numerator``/``denominator`` where the
    measure is a ratio of counts (P: hits_k / k, recall: hits_k / num_rel, F1: 2 hits_k /
    (k + num_rel), success: min(hits_k, 1) / 1, ndcg_cut: DCG_k / IDCG_k, map: sum of precisions /
    num_rel, Rprec: hits_R / num_rel; null for recip_rank and the counts), ``ranking_mode`` = mode.
    See the module docstring for the definitions and the null rules.

    Raises ConfigError for a cutoff < 1, an unknown measure, mode or on_duplicate value, or a
    negative rel_level; SchemaError for missing or uncastable columns; InputError naming the
    system, question and chunk for a duplicated hit (``on_duplicate="error"``), a duplicated qrels
    judgment, a null rank (mode system), a null or NaN score (mode trec_eval), or a null
    question/system/grade. Sources: trec_eval 10.0 ``form_res_rels.c``, ``m_P.c``, ``m_recall.c``,
    ``m_success.c``, ``m_recip_rank.c``, ``m_ndcg_cut.c``, ``m_map.c``, ``m_Rprec.c``,
    ``trec_eval.c``; Manning, Raghavan & Schütze (2008), ch. 8; Voorhees (1999); Järvelin & Kekäläinen
    (2002).
    """
    ks_t = check_ks(ks)
    wanted = requested(measures, ks_t)
    prep = prepare(run_long, qrels, mode=mode, rel_level=rel_level, on_duplicate=on_duplicate, complete=complete)
    n = prep.n_pairs
    empty = pl.Series([], dtype=pl.Utf8)
    base = pl.DataFrame({"system": prep.systems.gather(prep.pair_system) if n else empty,
                         "question_id": prep.questions.gather(prep.pair_question) if n else empty})
    frames = []
    for metric, cuts in wanted.items():
        compute = KERNELS[metric]
        for k in cuts:
            frames.append(_rows(base, metric, k, compute(prep, k), mode))
    per_question = pl.concat(frames) if frames else pl.DataFrame(schema=PER_QUESTION_SCHEMA)
    return RetrievalEvaluation(
        per_question=per_question.select(list(PER_QUESTION_SCHEMA)),
        dropped_duplicates=prep.dropped_duplicates,
        missing_questions=prep.missing,
        unknown_questions=prep.unknown,
        mode=mode,
        rel_level=int(rel_level),
        complete=complete,
    )


def _rows(base: pl.DataFrame, metric: str, k: int | None, m: Measured, mode: str) -> pl.DataFrame:
    """One measure's per-pair arrays as :data:`PER_QUESTION_SCHEMA` rows (null and status from ``m.null``)."""
    value = m.value.astype(np.float64, copy=True)
    status = pl.lit("ok", pl.Utf8)
    if m.null is not None:
        value[m.null] = np.nan
        status = pl.when(pl.Series(m.null)).then(pl.lit("no_relevant")).otherwise(pl.lit("ok"))
    return base.with_columns(
        pl.lit(metric, pl.Utf8).alias("metric"),
        pl.lit(k, pl.Int32).alias("k"),
        pl.Series("value", value, dtype=pl.Float64, nan_to_null=True),
        (pl.Series("numerator", m.numerator, dtype=pl.Float64) if m.numerator is not None
         else pl.lit(None, pl.Float64).alias("numerator")),
        (pl.Series("denominator", np.asarray(m.denominator, dtype=np.float64), dtype=pl.Float64)
         if m.denominator is not None else pl.lit(None, pl.Float64).alias("denominator")),
        status.alias("status"),
        pl.lit(mode, pl.Utf8).alias("ranking_mode"),
    )


# ----------------------------------------------------------------------------- aggregation

MIN_GEO_MEAN = 0.00001  # trec_eval common.h


def trec_eval_aggregate(per_question: pl.DataFrame) -> pl.DataFrame:
    """Average per-question rows the way trec_eval's ``all`` line does.

    Input: ``per_question`` rows from :func:`retrieval_question_metrics` (columns ``system``,
    ``question_id``, ``metric``, ``k``, ``value``, ``status``). The questions averaged over are the
    questions present: trec_eval averages over the queries in both the qrels and the run, or over
    every qrels query with ``-c``, which is what ``complete=False``/``True`` produced.
    Output: columns ``system``, ``metric``, ``k`` (i32), ``value`` (f64), ``n`` (i64, questions):
    ``num_q`` (count of questions), ``num_ret``/``num_rel``/``num_rel_ret`` (sums), ``gm_map``
    (geometric mean of AP, each floored at 1e-5, ``m_gm_map.c``) when ``map`` is present, and the
    arithmetic mean of every other metric where a null value counts as 0 (trec_eval scores a
    query without relevant documents 0; ``meas_avg.c``). Sorted by system, then trec_eval's
    measure order, then k. Raises SchemaError when a column is missing.
    Source: trec_eval 10.0 ``trec_eval.c``, ``meas_avg.c``, ``m_gm_map.c``.
    """
    need = ("system", "question_id", "metric", "k", "value")
    missing = [c for c in need if c not in per_question.columns]
    if missing:
        raise SchemaError(f"trec_eval_aggregate: missing columns {missing}")
    pq = per_question.select(need)
    order = {m: i for i, m in enumerate(("num_q",) + UNCUT_MEASURES[:4] + ("gm_map",) + MEASURES[4:])}
    nq = pq.group_by("system").agg(pl.col("question_id").n_unique().alias("n"))
    counts = pq.filter(pl.col("metric").is_in(COUNT_MEASURES))
    means = pq.filter(~pl.col("metric").is_in(COUNT_MEASURES))
    parts = [
        nq.select("system", pl.lit("num_q").alias("metric"), pl.lit(None, pl.Int32).alias("k"),
                  pl.col("n").cast(pl.Float64).alias("value"), pl.col("n").cast(pl.Int64)),
        counts.group_by("system", "metric", "k").agg(
            pl.col("value").fill_null(0.0).sum().alias("value"), pl.len().cast(pl.Int64).alias("n")),
        means.group_by("system", "metric", "k").agg(
            pl.col("value").fill_null(0.0).mean().alias("value"), pl.len().cast(pl.Int64).alias("n")),
        means.filter(pl.col("metric") == "map").group_by("system", "k").agg(
            pl.col("value").fill_null(0.0).clip(lower_bound=MIN_GEO_MEAN).log().mean().exp().alias("value"),
            pl.len().cast(pl.Int64).alias("n")).select(
            "system", pl.lit("gm_map").alias("metric"), "k", "value", "n"),
    ]
    out = pl.concat([p.select("system", "metric", pl.col("k").cast(pl.Int32), "value", "n") for p in parts])
    return (out.with_columns(pl.col("metric").replace_strict(order, default=len(order)).alias("_o"))
            .sort("system", "_o", "k", "metric", nulls_last=False).drop("_o"))


__all__ = [
    "ALIASES",
    "CLAIM_METRIC",
    "COUNT_MEASURES",
    "CUT_MEASURES",
    "DEFAULT_MEASURES",
    "MEASURES",
    "NEEDS_RELEVANT",
    "ON_DUPLICATE",
    "PER_QUESTION_SCHEMA",
    "QRELS_SCHEMA",
    "RANKING_MODES",
    "RUN_LONG_SCHEMA",
    "RetrievalEvaluation",
    "UNCUT_MEASURES",
    "claim_evidence_availability",
    "explode_runs",
    "parse_measure",
    "qrels_from_golden",
    "retrieval_question_metrics",
    "trec_eval_aggregate",
    "trec_name",
]
