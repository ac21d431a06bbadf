"""Offline retrieval metrics per question, with trec_eval's definitions and names.

Definitions come from the seed guides ``001_6404d9485c4e62d0.txt`` (recall@k, hit@k, reciprocal
rank, claim evidence availability, null when a question has no relevant ids) and
``002_467b844feab73551.txt`` (recall@k, precision@k, F1@k, MRR, nDCG@k), and, where trec_eval
implements the measure, from trec_eval 10.0 (``usnistgov/trec_eval``): ``form_res_rels.c``
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
==================  =====  ======================================================================

``trec_name(metric, k)`` gives the trec_eval spelling (``recall_5``, ``ndcg_cut_10``,
``recip_rank_cut_10``); :data:`ALIASES` and :func:`parse_measure` accept readable names
(``recall@5``, ``precision@5``, ``hit@5``, ``mrr``, ``mrr@10``, ``ndcg@10``, ``f1@5``).

Rules that differ from a bare formula:

* Relevance for the binary measures is ``grade >= rel_level`` (trec_eval ``-l``, default 1); a
  negative grade is a judged non-relevant document. nDCG ignores ``rel_level``: its gain is the
  judged grade when positive, and its ideal DCG uses every judged grade > 0 of the question
  (``m_ndcg_cut.c``), so with ``rel_level=2`` a grade-1 document still earns gain 1.
* A question with no relevant document (``num_rel == 0``) is not evaluable for recall, F1,
  success, recip_rank, recip_rank_cut, map and Rprec: value null, status ``"no_relevant"``,
  numerator and denominator still filled (seed 001: such questions are abstention cases, report
  them apart, never as 0). nDCG is null with the same status when the question has no judged
  grade > 0. Precision stays evaluable (status ``"ok"``, value 0 when nothing relevant exists):
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

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from rag_eval_pipeline.core.errors import ConfigError, InputError, SchemaError

RANKING_MODES = ("system", "trec_eval")
ON_DUPLICATE = ("error", "keep_first")

#: Measures without a cutoff, in trec_eval's print order.
UNCUT_MEASURES = ("num_ret", "num_rel", "num_rel_ret", "map", "Rprec", "recip_rank")
#: Measures computed at every k, in trec_eval's print order (F1 and recip_rank_cut are ours).
CUT_MEASURES = ("P", "recall", "ndcg_cut", "success", "F1", "recip_rank_cut")
MEASURES = UNCUT_MEASURES + CUT_MEASURES
#: What ``measures=None`` computes: every measure except the cut reciprocal rank.
DEFAULT_MEASURES = tuple(m for m in MEASURES if m != "recip_rank_cut")
#: Measures that are null (status ``no_relevant``) for a question with num_rel == 0.
NEEDS_RELEVANT = frozenset({"recall", "F1", "success", "recip_rank", "recip_rank_cut", "map", "Rprec"})
#: Count measures: summed, not averaged, by :func:`trec_eval_aggregate`.
COUNT_MEASURES = ("num_ret", "num_rel", "num_rel_ret")

#: Readable names (lower case, before an optional ``@k``) -> trec_eval base name. ``mrr@k`` (and
#: ``rr@k``) with a cutoff mean ``recip_rank_cut``; without one, ``recip_rank``.
ALIASES: dict[str, str] = {
    "precision": "P",
    "p": "P",
    "recall": "recall",
    "r": "recall",
    "f1": "F1",
    "f": "F1",
    "hit": "success",
    "hits": "success",
    "hit_rate": "success",
    "hitrate": "success",
    "success": "success",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "recip_rank": "recip_rank",
    "ndcg": "ndcg_cut",
    "ndcg_cut": "ndcg_cut",
    "map": "map",
    "ap": "map",
    "rprec": "Rprec",
    "r_precision": "Rprec",
    "r-precision": "Rprec",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
}

CLAIM_METRIC = "claim_evidence_availability"

RUN_LONG_SCHEMA = pl.Schema(
    {"system": pl.Utf8, "question_id": pl.Utf8, "chunk_id": pl.Utf8, "score": pl.Float64, "rank": pl.Int32}
)
QRELS_SCHEMA = pl.Schema({"question_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int32})
#: The ``question_metrics`` table's columns minus ``split``.
PER_QUESTION_SCHEMA = pl.Schema(
    {
        "system": pl.Utf8,
        "question_id": pl.Utf8,
        "metric": pl.Utf8,
        "k": pl.Int32,
        "value": pl.Float64,
        "numerator": pl.Float64,
        "denominator": pl.Float64,
        "status": pl.Utf8,
        "ranking_mode": pl.Utf8,
    }
)

_GOLDEN_RATIO = np.uint64(0x9E3779B97F4A7C15)
_HASH_SEED = 20240607
_CUT_NAME = re.compile(r"^(?P<base>.+?)(?:[@_](?P<k>\d+))?$")


# ----------------------------------------------------------------------------- names


def trec_name(metric: str, k: int | None) -> str:
    """The trec_eval spelling of ``(metric, k)``: ``"P_5"``, ``"ndcg_cut_10"``, ``"map"``.

    Input: a base measure name and a cutoff or None. Output: ``metric`` when ``k`` is None,
    otherwise ``f"{metric}_{k}"``. Raises nothing. Source: trec_eval's measure names (``m_*.c``).
    """
    return metric if k is None else f"{metric}_{k}"


def parse_measure(name: str) -> tuple[str, int | None]:
    """Parse a measure name into ``(base measure, cutoff or None)``.

    Input: a trec_eval name (``"P_5"``, ``"ndcg_cut_10"``, ``"recip_rank"``, ``"map"``), a base name
    (``"recall"`` -> ``("recall", None)``, meaning "at every k"), or a readable alias from
    :data:`ALIASES` with an optional ``@k`` or ``_k`` (``"recall@5"``, ``"hit@1"``, ``"mrr"``,
    ``"mrr@10"`` -> ``("recip_rank_cut", 10)``, ``"ndcg@10"``). Cutoffs are integers >= 1.
    Raises ConfigError for an unknown name, a cutoff below 1, or a cutoff on a measure that takes
    none (``map@5``). Source: trec_eval measure names; aliases from seeds 001 and 002.
    """
    raw = name.strip()
    if raw in MEASURES:
        return raw, None
    m = _CUT_NAME.match(raw)
    if not m:
        raise ConfigError(f"unknown retrieval measure {name!r}")
    base_raw, k_raw = m.group("base"), m.group("k")
    if base_raw in MEASURES:
        base = base_raw
    else:
        base = ALIASES.get(base_raw.lower())
        if base is None:
            raise ConfigError(f"unknown retrieval measure {name!r}; known: {sorted(MEASURES)} "
                              f"and aliases {sorted(ALIASES)}")
    if k_raw is None:
        return base, None
    k = int(k_raw)
    if k < 1:
        raise ConfigError(f"measure {name!r}: cutoff must be >= 1, got {k}")
    if base == "recip_rank":
        base = "recip_rank_cut"
    if base not in CUT_MEASURES:
        raise ConfigError(f"measure {name!r}: {base!r} takes no cutoff")
    return base, k


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    out = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ConfigError(f"cutoff k must be an integer >= 1, got {k!r}")
        if k < 1:
            raise ConfigError(f"cutoff k must be >= 1, got {k}")
        out.append(int(k))
    return tuple(sorted(set(out)))


def _requested(measures: Iterable[str] | None, ks: tuple[int, ...]) -> dict[str, tuple[int | None, ...]]:
    """Base measure -> cutoffs (``(None,)`` for uncut measures), in :data:`MEASURES` order."""
    wanted: dict[str, set[int | None]] = {}
    names = DEFAULT_MEASURES if measures is None else list(measures)
    if isinstance(measures, str):
        names = [measures]
    for name in names:
        base, k = parse_measure(name)
        cut = base in CUT_MEASURES
        got = wanted.setdefault(base, set())
        if not cut:
            got.add(None)
        elif k is None:
            if not ks:
                raise ConfigError(f"measure {name!r} needs at least one cutoff in ks")
            got.update(ks)
        else:
            got.add(k)
    return {m: tuple(sorted(wanted[m], key=lambda x: -1 if x is None else x)) for m in MEASURES if m in wanted}


# ----------------------------------------------------------------------------- inputs


def explode_runs(rag_runs: pl.DataFrame) -> pl.DataFrame:
    """One row per retrieved hit of a ``rag_runs`` table: the ``run_long`` frame.

    Input: a frame with ``system``, ``question_id`` and ``retrieved`` (list of struct ``chunk_id``,
    ``score``, ``rank``), as in ``core.tables.SCHEMAS["rag_runs"]``.
    Output: columns ``system`` (str), ``question_id`` (str), ``chunk_id`` (str), ``score`` (f64),
    ``rank`` (i32), hits in list order. A run whose ``retrieved`` list is empty or null gives one
    placeholder row with null ``chunk_id``/``score``/``rank``: "the system was asked and retrieved
    nothing", so :func:`retrieval_question_metrics` scores it (recall 0, ...) instead of counting
    the question as missing. Raises SchemaError when a column is absent, InputError naming the
    system and question when one ``(system, question_id)`` occurs in two rows.
    Source: ``docs/CONTRACTS.md`` (run_long).
    """
    need = ("system", "question_id", "retrieved")
    missing = [c for c in need if c not in rag_runs.columns]
    if missing:
        raise SchemaError(f"explode_runs: rag_runs lacks columns {missing}")
    runs = rag_runs.select(need)
    dup = runs.select("system", "question_id").is_duplicated()
    if dup.any():
        row = runs.filter(dup).row(0, named=True)
        raise InputError(
            f"rag_runs holds question {row['question_id']!r} twice for system {row['system']!r}",
            field="question_id",
        )
    out = (
        runs.explode("retrieved", empty_as_null=True, keep_nulls=True)
        .with_columns(
            pl.col("retrieved").struct.field("chunk_id").cast(pl.Utf8).alias("chunk_id"),
            pl.col("retrieved").struct.field("score").cast(pl.Float64).alias("score"),
            pl.col("retrieved").struct.field("rank").cast(pl.Int32).alias("rank"),
        )
        .select(list(RUN_LONG_SCHEMA))
    )
    return out.cast(dict(RUN_LONG_SCHEMA))


def qrels_from_golden(golden: pl.DataFrame) -> pl.DataFrame:
    """The relevance judgments of a golden set: the ``qrels`` frame.

    Input: a ``golden_set`` (or ``golden_raw``) frame with ``question_id`` and ``relevant`` (list
    of struct ``chunk_id``, ``grade``). Output: columns ``question_id`` (str), ``chunk_id`` (str),
    ``grade`` (i32), one row per judged chunk. A question whose ``relevant`` list is empty or null
    (an absent or clarification question) gives one row with null ``chunk_id`` and ``grade``, so
    the question stays known: its retrieval metrics come out null with status ``no_relevant``
    rather than the question being "unknown". Grades <= 0 are kept (judged non-relevant).
    Raises SchemaError when a column is absent. Source: ``docs/CONTRACTS.md`` (qrels).
    """
    missing = [c for c in ("question_id", "relevant") if c not in golden.columns]
    if missing:
        raise SchemaError(f"qrels_from_golden: golden lacks columns {missing}")
    out = (
        golden.select("question_id", "relevant")
        .explode("relevant", empty_as_null=True, keep_nulls=True)
        .with_columns(
            pl.col("relevant").struct.field("chunk_id").cast(pl.Utf8).alias("chunk_id"),
            pl.col("relevant").struct.field("grade").cast(pl.Int32).alias("grade"),
        )
        .select(list(QRELS_SCHEMA))
    )
    return out.cast(dict(QRELS_SCHEMA))


def _select(df: pl.DataFrame, schema: pl.Schema, what: str) -> pl.DataFrame:
    missing = [c for c in schema if c not in df.columns]
    if missing:
        raise SchemaError(f"{what}: missing columns {missing} (expected {list(schema)})")
    out = df.select(list(schema))
    casts = {c: t for c, t in schema.items() if out.schema[c] != t}
    if casts:
        try:
            out = out.cast(casts)
        except Exception as exc:  # polars raises several error types for a bad cast
            raise SchemaError(f"{what}: cannot cast columns {sorted(casts)}: {exc}") from exc
    return out


# ----------------------------------------------------------------------------- result


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


# ----------------------------------------------------------------------------- core


def _run_starts(run: pl.DataFrame) -> np.ndarray:
    """Row indices where a new contiguous (system, question_id) block begins."""
    if run.height == 0:
        return np.zeros(0, dtype=np.int64)
    flags = run.select(
        (pl.col("system").ne_missing(pl.col("system").shift(1)))
        | (pl.col("question_id").ne_missing(pl.col("question_id").shift(1)))
    ).to_series()
    flags[0] = True
    return np.flatnonzero(flags.to_numpy())


def _segment_starts(sorted_ids: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate(([0], np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1))


def _positions(group_of_row: np.ndarray) -> np.ndarray:
    """1-based position of each row inside its contiguous group."""
    n = group_of_row.size
    starts = _segment_starts(group_of_row)
    return np.arange(1, n + 1, dtype=np.int64) - np.repeat(starts, np.diff(np.append(starts, n)))


def _ranking_permutation(g_row: np.ndarray, mode: str, rank: np.ndarray | None, score: np.ndarray | None,
                         chunk_at) -> np.ndarray | None:
    """Permutation of the current rows putting every contiguous group in ranking order; None if it is.

    ``g_row``: group key per row (groups contiguous, adjacent groups distinct); ``rank``/``score``:
    the ordering column of the mode; ``chunk_at(positions)``: the chunk ids (a polars Series) at
    those current positions. Only the groups found out of order are re-sorted, so an already
    ranked run costs one pass.
    """
    n = g_row.size
    if n < 2:
        return None
    same = g_row[1:] == g_row[:-1]
    if mode == "system":
        bad = same & (rank[1:] < rank[:-1])
        if not bad.any():
            return None
        rmin = int(rank.min())
        span = int(rank.max()) - rmin + 1
        return np.argsort(_group_ordinal(g_row) * span + (rank.astype(np.int64) - rmin), kind="stable")
    bad = same & (score[1:] > score[:-1])
    tie = np.flatnonzero(same & (score[1:] == score[:-1]))
    if tie.size:
        # within equal scores the ids must strictly decrease (equal ids are a duplicate, found later)
        bad_tie = ~((chunk_at(tie) > chunk_at(tie + 1)).to_numpy())
        bad[tie[bad_tie]] = True
    if not bad.any():
        return None
    gord = _group_ordinal(g_row)
    bad_group = np.zeros(int(gord[-1]) + 1, dtype=bool)
    bad_group[gord[1:][bad]] = True
    rows = np.flatnonzero(bad_group[gord])
    sub = pl.DataFrame({
        "_g": gord[rows],
        "_score": score[rows],
        "_chunk": chunk_at(rows),
        "_row": rows,
    }).sort(["_g", "_score", "_chunk", "_row"], descending=[False, True, True, False])
    perm = np.arange(n, dtype=np.int64)
    perm[rows] = sub["_row"].to_numpy()  # groups are contiguous, so each keeps its own slots
    return perm


def _group_ordinal(g_row: np.ndarray) -> np.ndarray:
    starts = _segment_starts(g_row)
    return np.repeat(np.arange(starts.size, dtype=np.int64), np.diff(np.append(starts, g_row.size)))


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
    ``trec_eval.c``; seeds ``001_6404d9485c4e62d0.txt`` and ``002_467b844feab73551.txt``.
    """
    ks_t = _check_ks(ks)
    if mode not in RANKING_MODES:
        raise ConfigError(f"ranking mode must be one of {RANKING_MODES}, got {mode!r}")
    if on_duplicate not in ON_DUPLICATE:
        raise ConfigError(f"on_duplicate must be one of {ON_DUPLICATE}, got {on_duplicate!r}")
    if isinstance(rel_level, bool) or not isinstance(rel_level, (int, np.integer)) or rel_level < 0:
        raise ConfigError(f"rel_level must be an integer >= 0, got {rel_level!r}")
    rel_level = int(rel_level)
    wanted = _requested(measures, ks_t)

    run = _select(run_long, RUN_LONG_SCHEMA, "run_long")
    qr = _select(qrels, QRELS_SCHEMA, "qrels")

    # ---- qrels: questions, judgments, per-question relevant counts and ideal DCG
    if qr["question_id"].null_count():
        raise InputError("qrels has a row with a null question_id", field="question_id")
    questions = qr["question_id"].unique().sort()
    nq = questions.len()
    qmap = pl.DataFrame({"question_id": questions, "qi": np.arange(nq, dtype=np.int64)})
    judg = qr.filter(pl.col("chunk_id").is_not_null())
    if judg["grade"].null_count():
        row = judg.filter(pl.col("grade").is_null()).row(0, named=True)
        raise InputError(f"qrels: question {row['question_id']!r}, chunk {row['chunk_id']!r} has no grade",
                         field="grade")
    jdup = judg.select(pl.struct("question_id", "chunk_id").is_duplicated()).to_series()
    if jdup.any():
        row = judg.filter(jdup).row(0, named=True)
        raise InputError(f"qrels judge chunk {row['chunk_id']!r} twice for question {row['question_id']!r}",
                         field="chunk_id")
    judg = judg.join(qmap, on="question_id", how="left").sort("qi", "grade", descending=[False, True])
    j_qi = judg["qi"].to_numpy()
    j_grade = judg["grade"].to_numpy().astype(np.int64)
    j_chunk = judg["chunk_id"]
    num_rel_q = np.bincount(j_qi[j_grade >= rel_level], minlength=nq).astype(np.float64)
    pos_mask = j_grade > 0
    ideal_qi = j_qi[pos_mask]
    ideal_pos = _positions(ideal_qi)
    ideal_disc = j_grade[pos_mask] / np.log2(ideal_pos + 1.0)
    has_gain_q = np.bincount(ideal_qi, minlength=nq) > 0

    # ---- run: systems, blocks of rows per (system, question)
    if run["system"].null_count() or run["question_id"].null_count():
        raise InputError("run_long has a row with a null system or question_id", field="question_id")
    placeholder = run["chunk_id"].is_null()
    n_placeholder = int(placeholder.sum())
    hits = run.filter(~placeholder) if n_placeholder else run
    marks = run.filter(placeholder).select("system", "question_id") if n_placeholder else None

    starts = _run_starts(hits)
    lengths = np.diff(np.append(starts, hits.height))
    blocks = hits.select("system", "question_id").gather(starts)
    sys_names = pl.concat([blocks["system"], marks["system"]] if marks is not None else [blocks["system"]])
    systems = sys_names.unique().sort()
    smap = pl.DataFrame({"system": systems, "si": np.arange(systems.len(), dtype=np.int64)})

    def keyed(frame: pl.DataFrame) -> pl.DataFrame:
        return (frame.with_row_index("_i")
                .join(smap, on="system", how="left")
                .join(qmap, on="question_id", how="left")
                .sort("_i"))

    blocks_k = keyed(blocks)
    block_known = blocks_k["qi"].is_not_null().to_numpy()
    block_g = (blocks_k["si"].to_numpy() * nq + blocks_k["qi"].fill_null(0).to_numpy()).astype(np.int64)

    # unknown questions (not in qrels): counted, left out
    unknown_parts = [blocks_k.filter(~pl.col("qi").is_not_null()).select(
        "system", "question_id", pl.Series("n_rows", lengths[~block_known], dtype=pl.Int64))]
    mark_g = np.zeros(0, dtype=np.int64)
    if marks is not None:
        marks_k = keyed(marks)
        unknown_parts.append(marks_k.filter(pl.col("qi").is_null()).select(
            "system", "question_id", pl.lit(1, pl.Int64).alias("n_rows")))
        mk = marks_k.filter(pl.col("qi").is_not_null())
        mark_g = (mk["si"].to_numpy() * nq + mk["qi"].to_numpy()).astype(np.int64)
    unknown = (pl.concat(unknown_parts).group_by("system", "question_id").agg(pl.col("n_rows").sum())
               .sort("system", "question_id"))

    # rows of known questions (``sel``: indices into ``hits``, None = all, in order), each
    # (system, question) one contiguous block
    sel: np.ndarray | None = None if block_known.all() else np.flatnonzero(np.repeat(block_known, lengths))
    kg = block_g[block_known]
    klen = lengths[block_known]
    g_row = np.repeat(kg, klen)
    if np.unique(kg).size != kg.size:  # a question's hits are split over several blocks
        order = np.argsort(g_row, kind="stable")
        sel = order if sel is None else sel[order]
        g_row = g_row[order]

    def take(arr: np.ndarray) -> np.ndarray:
        return arr if sel is None else arr[sel]

    def at(positions: np.ndarray) -> np.ndarray:
        return positions if sel is None else sel[positions]

    # ---- null checks on the ranking columns
    if mode == "system" and hits["rank"].null_count():
        bad = np.flatnonzero(take(hits["rank"].is_null().to_numpy()))
        if bad.size:
            row = hits.row(int(at(bad[:1])[0]), named=True)
            raise InputError(f"system {row['system']!r}, question {row['question_id']!r}, chunk "
                             f"{row['chunk_id']!r}: rank is null (ranking mode 'system' orders by rank)",
                             field="rank")
    if mode == "trec_eval" and (hits["score"].null_count() or hits["score"].is_nan().any()):
        bad = np.flatnonzero(take((hits["score"].is_null() | hits["score"].is_nan()).to_numpy()))
        if bad.size:
            row = hits.row(int(at(bad[:1])[0]), named=True)
            raise InputError(f"system {row['system']!r}, question {row['question_id']!r}, chunk "
                             f"{row['chunk_id']!r}: score is null or NaN (ranking mode 'trec_eval' orders "
                             "by score)", field="score")

    # ---- ranking order inside each block
    chunk = hits["chunk_id"]
    rank_s = take(hits["rank"].to_numpy()) if mode == "system" and g_row.size else None
    # trec_eval keeps scores as C floats (TEXT_RESULTS.sim in trec_format.h): compare at that precision
    score_s = (take(hits["score"].to_numpy()).astype(np.float32) if mode == "trec_eval" and g_row.size
               else None)
    perm = _ranking_permutation(g_row, mode, rank_s, score_s, lambda p: chunk.gather(at(p)))
    if perm is not None:
        sel = perm if sel is None else sel[perm]
    h = take(chunk.hash(seed=_HASH_SEED).to_numpy()) if g_row.size else np.zeros(0, dtype=np.uint64)

    # ---- duplicates (same chunk twice in one block); the first in ranking order is kept
    dropped = 0
    if g_row.size:
        dkey = (h ^ (g_row.view(np.uint64) * _GOLDEN_RATIO)).view(np.int64)
        sk = np.sort(dkey)
        eq = sk[1:] == sk[:-1]
        if eq.any():
            cand = np.unique(sk[1:][eq])
            rows = np.flatnonzero(pl.Series(dkey).is_in(pl.Series(cand).implode()).to_numpy())
            sub = pl.DataFrame({"_g": g_row[rows], "_c": chunk.gather(at(rows))})
            first = sub.select(pl.struct("_g", "_c").is_first_distinct()).to_series().to_numpy()
            dup_rows = rows[~first]
            if dup_rows.size:
                if on_duplicate == "error":
                    row = hits.row(int(at(dup_rows[:1])[0]), named=True)
                    raise InputError(
                        f"system {row['system']!r}, question {row['question_id']!r}: chunk "
                        f"{row['chunk_id']!r} is retrieved more than once "
                        f"({dup_rows.size} duplicate hit(s) in total); use on_duplicate='keep_first' "
                        "to keep the first occurrence", field="chunk_id")
                keep = np.ones(g_row.size, dtype=bool)
                keep[dup_rows] = False
                sel = np.flatnonzero(keep) if sel is None else sel[keep]
                g_row, h = g_row[keep], h[keep]
                dropped = int(dup_rows.size)
        del dkey, sk, eq  # 10M-row temporaries: free them before the lookup allocates its own

    # ---- judged hits: row (current order) and grade; every other hit is unjudged (non-relevant)
    judged_rows = np.zeros(0, dtype=np.int64)
    judged_grade = np.zeros(0, dtype=np.int64)
    if g_row.size and judg.height:
        qi_row = g_row if systems.len() == 1 else g_row % nq
        rkey = (h ^ (qi_row.view(np.uint64) * _GOLDEN_RATIO)).view(np.int64)
        jkey = (j_chunk.hash(seed=_HASH_SEED).to_numpy() ^ (j_qi.astype(np.uint64) * _GOLDEN_RATIO)).view(np.int64)
        jorder = np.argsort(jkey)
        jsorted = jkey[jorder]
        if jsorted.size < 2 or bool(np.all(jsorted[1:] != jsorted[:-1])):
            hit_rows = np.flatnonzero(pl.Series(rkey).is_in(pl.Series(jsorted).implode()).to_numpy())
            ji = jorder[np.searchsorted(jsorted, rkey[hit_rows])]
            ok = (j_qi[ji] == qi_row[hit_rows]) & (j_chunk.gather(ji) == chunk.gather(at(hit_rows))).to_numpy()
            judged_rows, judged_grade = hit_rows[ok], j_grade[ji[ok]]
        else:  # a 64-bit collision inside the qrels (astronomically unlikely): exact join
            look = pl.DataFrame({"qi": qi_row, "chunk_id": chunk.gather(at(np.arange(g_row.size)))}).join(
                judg.select("qi", "chunk_id", "grade"), on=["qi", "chunk_id"], how="left", maintain_order="left")
            judged_rows = np.flatnonzero(look["grade"].is_not_null().to_numpy())
            judged_grade = look["grade"].to_numpy()[judged_rows].astype(np.int64)
        del rkey, qi_row
    del h

    # ---- evaluated (system, question) pairs
    run_g = np.unique(np.concatenate([kg, mark_g]))
    all_q = np.arange(nq, dtype=np.int64)
    missing_g = np.concatenate(
        [si * nq + all_q[~np.isin(all_q, run_g[(run_g >= si * nq) & (run_g < (si + 1) * nq)] - si * nq)]
         for si in range(systems.len())] or [np.zeros(0, dtype=np.int64)])
    e_keys = np.union1d(run_g, missing_g) if complete else run_g
    nE = e_keys.size
    e_si, e_qi = e_keys // max(nq, 1), e_keys % max(nq, 1)
    group_first = _segment_starts(g_row)  # adjacent groups have distinct keys
    group_e = np.searchsorted(e_keys, g_row[group_first])
    num_ret = np.zeros(nE, dtype=np.float64)
    num_ret[group_e] = np.diff(np.append(group_first, g_row.size))
    # judged hits only (ascending rows = by group, then by position)
    j_group = np.searchsorted(group_first, judged_rows, side="right") - 1
    j_e = group_e[j_group]
    j_pos = judged_rows - group_first[j_group] + 1

    R = num_rel_q[e_qi] if nq else np.zeros(nE)
    no_rel = R == 0
    rel = judged_grade >= rel_level  # rel_level >= 0, so a negative (unjudged-in-pool) grade never counts
    rel_e, rel_pos = j_e[rel], j_pos[rel]
    gain_mask = judged_grade > 0
    gain_e, gain_pos = j_e[gain_mask], j_pos[gain_mask]
    gain_disc = judged_grade[gain_mask] / np.log2(gain_pos + 1.0)

    num_rel_ret = np.bincount(rel_e, minlength=nE).astype(np.float64)
    first_pos = np.zeros(nE, dtype=np.float64)
    if rel_e.size:
        ue, ui = np.unique(rel_e, return_index=True)
        first_pos[ue] = rel_pos[ui]

    with np.errstate(divide="ignore", invalid="ignore"):
        safe_R = np.where(no_rel, 1.0, R)
        values: list[tuple[str, int | None, np.ndarray, np.ndarray | None, np.ndarray | None, np.ndarray | None]] = []
        # (metric, k, value, numerator, denominator, null mask)
        for metric, cut in wanted.items():
            for k in cut:
                if metric == "num_ret":
                    values.append((metric, None, num_ret, None, None, None))
                elif metric == "num_rel":
                    values.append((metric, None, R.astype(np.float64), None, None, None))
                elif metric == "num_rel_ret":
                    values.append((metric, None, num_rel_ret, None, None, None))
                elif metric == "map":
                    rel_start = _segment_starts(rel_e)
                    cnt = np.arange(rel_e.size) - np.repeat(rel_start, np.diff(np.append(rel_start, rel_e.size))) + 1
                    ap_num = np.bincount(rel_e, weights=cnt / rel_pos, minlength=nE)
                    values.append((metric, None, ap_num / safe_R, ap_num, R, no_rel))
                elif metric == "Rprec":
                    rp = np.bincount(rel_e[rel_pos <= R[rel_e]], minlength=nE).astype(np.float64)
                    values.append((metric, None, rp / safe_R, rp, R, no_rel))
                elif metric == "recip_rank":
                    rr = np.where(first_pos > 0, 1.0 / np.where(first_pos > 0, first_pos, 1.0), 0.0)
                    values.append((metric, None, rr, None, None, no_rel))
                elif metric == "recip_rank_cut":
                    inside = (first_pos > 0) & (first_pos <= k)
                    rr = np.where(inside, 1.0 / np.where(inside, first_pos, 1.0), 0.0)
                    values.append((metric, k, rr, None, None, no_rel))
                else:
                    hk = np.bincount(rel_e[rel_pos <= k], minlength=nE).astype(np.float64)
                    if metric == "P":
                        values.append((metric, k, hk / k, hk, np.full(nE, float(k)), None))
                    elif metric == "recall":
                        values.append((metric, k, hk / safe_R, hk, R, no_rel))
                    elif metric == "F1":
                        den = k + R
                        values.append((metric, k, 2.0 * hk / den, 2.0 * hk, den, no_rel))
                    elif metric == "success":
                        s = (hk > 0).astype(np.float64)
                        values.append((metric, k, s, s, np.ones(nE), no_rel))
                    elif metric == "ndcg_cut":
                        inside = gain_pos <= k
                        dcg = np.bincount(gain_e[inside], weights=gain_disc[inside], minlength=nE)
                        ik = ideal_pos <= k
                        idcg_q = np.bincount(ideal_qi[ik], weights=ideal_disc[ik], minlength=nq)
                        idcg = idcg_q[e_qi] if nq else np.zeros(nE)
                        no_gain = ~has_gain_q[e_qi] if nq else np.ones(nE, dtype=bool)
                        values.append((metric, k, dcg / np.where(no_gain, 1.0, idcg), dcg, idcg, no_gain))

    base = pl.DataFrame({"system": systems.gather(e_si) if nE else pl.Series([], dtype=pl.Utf8),
                         "question_id": questions.gather(e_qi) if nE else pl.Series([], dtype=pl.Utf8)})
    frames = []
    for metric, k, val, num, den, null in values:
        v = val.astype(np.float64, copy=True)
        status = pl.lit("ok", pl.Utf8)
        if null is not None:
            v[null] = np.nan
            status = pl.when(pl.Series(null)).then(pl.lit("no_relevant")).otherwise(pl.lit("ok"))
        frames.append(base.with_columns(
            pl.lit(metric, pl.Utf8).alias("metric"),
            pl.lit(k, pl.Int32).alias("k"),
            pl.Series("value", v, dtype=pl.Float64, nan_to_null=True),
            (pl.Series("numerator", num, dtype=pl.Float64) if num is not None
             else pl.lit(None, pl.Float64).alias("numerator")),
            (pl.Series("denominator", np.asarray(den, dtype=np.float64), dtype=pl.Float64) if den is not None
             else pl.lit(None, pl.Float64).alias("denominator")),
            status.alias("status"),
            pl.lit(mode, pl.Utf8).alias("ranking_mode"),
        ))
    per_question = pl.concat(frames) if frames else pl.DataFrame(schema=PER_QUESTION_SCHEMA)

    missing = pl.DataFrame({
        "system": systems.gather(missing_g // max(nq, 1)) if missing_g.size else pl.Series([], dtype=pl.Utf8),
        "question_id": questions.gather(missing_g % max(nq, 1)) if missing_g.size else pl.Series([], dtype=pl.Utf8),
    })
    return RetrievalEvaluation(
        per_question=per_question.select(list(PER_QUESTION_SCHEMA)),
        dropped_duplicates=dropped,
        missing_questions=missing,
        unknown_questions=unknown,
        mode=mode,
        rel_level=rel_level,
        complete=complete,
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


# ----------------------------------------------------------------------------- claim evidence


def claim_evidence_availability(rag_runs: pl.DataFrame, golden: pl.DataFrame, ks: Sequence[int]) -> pl.DataFrame:
    """Share of a question's human-annotated claims whose supporting chunks were retrieved in the top k.

    Inputs: ``rag_runs`` (``system``, ``question_id``, ``retrieved``: list of struct ``chunk_id``,
    ``score``, ``rank``); ``golden`` (``question_id``, ``claims``: list of struct ``claim_id``,
    ``text``, ``supporting`` list[str]); ``ks``: cutoffs >= 1. Hits are taken in ``rank`` order
    (what the generator saw; ties by list order).
    Output: ``question_metrics`` rows without ``split`` (:data:`PER_QUESTION_SCHEMA`), one per
    system, run question present in ``golden`` and k: metric ``claim_evidence_availability``,
    ``numerator`` = claims with at least one supporting chunk in the top k, ``denominator`` =
    claims of the question, ``value`` = their ratio in [0, 1]; ``ranking_mode`` ``"system"``. A
    question without claims gets a null value and status ``no_claims`` (the seed's function returns
    1.0 there; a question with nothing to support is not evaluable, so we report it apart). A claim
    with no supporting chunk counts in the denominator and is never available. Run questions
    missing from ``golden`` give no rows.
    Raises ConfigError for a k below 1, SchemaError for missing columns, InputError for a
    repeated ``(system, question_id)`` run. Source: seed ``001_6404d9485c4e62d0.txt``
    (disponibilidad de evidencia anotada).
    """
    ks_t = _check_ks(ks)
    for c in ("question_id", "claims"):
        if c not in golden.columns:
            raise SchemaError(f"claim_evidence_availability: golden lacks column {c!r}")
    hits = explode_runs(rag_runs)
    asked = hits.select("system", "question_id").unique()
    hits = (hits.filter(pl.col("chunk_id").is_not_null())
            .with_row_index("_row")
            .sort("system", "question_id", "rank", "_row", nulls_last=True)
            .with_columns((pl.int_range(pl.len()).over("system", "question_id") + 1).alias("pos"))
            .group_by("system", "question_id", "chunk_id").agg(pl.col("pos").min()))
    claims = (golden.select("question_id", "claims")
              .explode("claims")
              .filter(pl.col("claims").is_not_null())
              .with_columns((pl.int_range(pl.len()).over("question_id")).alias("claim_no"),
                            pl.col("claims").struct.field("supporting").alias("supporting")))
    n_claims = (golden.select("question_id", pl.col("claims").list.len().fill_null(0).alias("n_claims"))
                .unique("question_id", keep="first"))
    support = (claims.select("question_id", "claim_no", "supporting").explode("supporting")
               .rename({"supporting": "chunk_id"}).filter(pl.col("chunk_id").is_not_null()))
    best = (support.join(hits, on=["question_id", "chunk_id"], how="inner")
            .group_by("system", "question_id", "claim_no").agg(pl.col("pos").min()))
    base = asked.join(n_claims, on="question_id", how="inner").sort("system", "question_id")
    frames = []
    for k in ks_t:
        avail = best.filter(pl.col("pos") <= k).group_by("system", "question_id").agg(pl.len().alias("num"))
        f = (base.join(avail, on=["system", "question_id"], how="left", maintain_order="left")
             .with_columns(
                 pl.lit(CLAIM_METRIC).alias("metric"),
                 pl.lit(k, pl.Int32).alias("k"),
                 pl.col("num").fill_null(0).cast(pl.Float64).alias("numerator"),
                 pl.col("n_claims").cast(pl.Float64).alias("denominator"))
             .with_columns(
                 pl.when(pl.col("denominator") > 0).then(pl.col("numerator") / pl.col("denominator"))
                 .otherwise(None).alias("value"),
                 pl.when(pl.col("denominator") > 0).then(pl.lit("ok")).otherwise(pl.lit("no_claims")).alias("status"),
                 pl.lit("system").alias("ranking_mode")))
        frames.append(f.select(list(PER_QUESTION_SCHEMA)))
    if not frames:
        return pl.DataFrame(schema=PER_QUESTION_SCHEMA)
    return pl.concat(frames).cast(dict(PER_QUESTION_SCHEMA))


__all__ = [
    "ALIASES",
    "CLAIM_METRIC",
    "CUT_MEASURES",
    "DEFAULT_MEASURES",
    "MEASURES",
    "PER_QUESTION_SCHEMA",
    "QRELS_SCHEMA",
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
