"""The one aggregation every per-question metric goes through.

- :func:`summarise` turns ``question_metrics`` rows into ``metric_summary`` rows per system,
  split, segment, metric and k, with a confidence interval: Wilson (1927) for 0/1 indicators of a
  declared proportion metric, a seeded percentile bootstrap over questions (Efron & Tibshirani
  1993) otherwise. Not evaluable is not zero: an empty denominator gives a null value, and ``n``
  and ``n_not_evaluable`` say how many questions were in the group and left out.
"""

from __future__ import annotations

import re
from collections.abc import Collection

import numpy as np
import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.metrics import stats
from rag_eval_pipeline.core.metrics.names import ALIASES
from rag_eval_pipeline.core.metrics.names import PROPORTION_METRICS as _PROPORTIONS
from rag_eval_pipeline.core.metrics.stats import wilson_arrays
from rag_eval_pipeline.core.tables import SCHEMAS, conform

#: Metrics whose per-question value is a 0/1 indicator, so the summary is a proportion and gets a
#: Wilson interval (when every non-null value of the group is 0 or 1). Names are matched after
#: lower-casing and removing a trailing ``_<k>`` or ``@<k>`` (so ``success_5`` and ``success@5``
#: match ``success``). Declared per metric in ``core/metrics/names.py`` (``proportion``), plus the readable
#: aliases of those names (``hit``, ``hit_rate``). Extend it through ``summarise(proportion_metrics=...)``.
PROPORTION_METRICS: frozenset[str] = _PROPORTIONS | frozenset(a for a, base in ALIASES.items() if base in _PROPORTIONS)

_K_SUFFIX = re.compile(r"[_@]\d+$")
_KEYS = ["system", "split", "segment", "metric", "k", "level"]
_LEVELS = ["chunk", "doc"]  # the values of ``level``; null (no level) sorts after them
SUMMARY_BATCH_ROWS = 262_144  # rows of question_metrics read at a time (one Parquet row group as written)
BOOTSTRAP_BLOCK = 64  # resamples per block in _bootstrap (64 x 100,000 questions: ~50 MB of counts)


def metric_base(metric: str) -> str:
    """``metric`` lower-cased without a trailing ``_<digits>`` or ``@<digits>`` (``"P@5"`` -> ``"p"``)."""
    return _K_SUFFIX.sub("", metric.lower())


def _with_split(qm: pl.LazyFrame, golden: pl.DataFrame | None) -> pl.LazyFrame:
    """``qm`` with its ``split`` filled from ``golden`` (first row per question) where missing or null: a lookup
    per row, not a join (the other columns of a table of millions of rows are not copied)."""
    names = qm.collect_schema().names()
    if golden is not None:
        gsplit = golden.select("question_id", "split").unique("question_id", keep="first")
        looked_up = pl.col("question_id").replace_strict(gsplit["question_id"], gsplit["split"], default=None,
                                                         return_dtype=pl.Utf8)
        if "split" in names:
            qm = qm.with_columns(pl.col("split").fill_null(looked_up))
        else:
            qm = qm.with_columns(looked_up.alias("split"))
    elif "split" not in names:
        qm = qm.with_columns(pl.lit(None, pl.Utf8).alias("split"))
    return qm


def _no_repeats(qm: pl.DataFrame) -> None:
    """Raise InputError when a (system, question_id, metric, k, level) appears twice in ``qm`` (a small frame)."""
    dup = qm.group_by("system", "question_id", "metric", "k", "level").len().filter(pl.col("len") > 1)
    if dup.height:
        row = dup.row(0, named=True)
        raise InputError(
            f"question_metrics: system {row['system']!r}, question {row['question_id']!r}, metric "
            f"{row['metric']!r}, k {row['k']!r}, level {row['level']!r} appears {row['len']} times; expected once",
            field="question_id",
        )


def _codes(values: pl.Series, order: list) -> np.ndarray:
    """The position of each value of ``values`` in ``order`` (a list of its distinct values), as int64."""
    return values.replace_strict(order, list(range(len(order))), return_dtype=pl.Int64).to_numpy()


def _series_coder(distinct: pl.DataFrame):
    """The series of a summary: ``distinct`` (system, metric, k, level rows) sorted (k and level nulls last) with
    their index ``_s``, and a function giving the series index of every row of a frame with those columns (int64
    array)."""
    systems = sorted(distinct["system"].unique().to_list())
    metrics = sorted(distinct["metric"].unique().to_list())
    ks = sorted(k for k in distinct["k"].unique().to_list() if k is not None)
    width = len(ks) + 1  # null k sorts last

    levels = len(_LEVELS) + 1  # null level sorts last

    def combined(frame: pl.DataFrame) -> np.ndarray:
        k_code = frame["k"].replace_strict(ks, list(range(len(ks))), default=len(ks), return_dtype=pl.Int64)
        level = frame["level"].replace_strict(_LEVELS, list(range(len(_LEVELS))), default=len(_LEVELS),
                                              return_dtype=pl.Int64)
        return ((((_codes(frame["system"], systems) * len(metrics) + _codes(frame["metric"], metrics)) * width
                 + k_code.to_numpy()) * levels) + level.to_numpy())

    present = np.unique(combined(distinct))  # sorted: system, then metric, then k, then level (nulls last)
    key = present // levels
    series = pl.DataFrame({
        "system": [systems[c] for c in key // width // len(metrics)],
        "metric": [metrics[c] for c in key // width % len(metrics)],
        "k": pl.Series([None if c == len(ks) else ks[c] for c in key % width], dtype=pl.Int32),
        "level": pl.Series([None if c == len(_LEVELS) else _LEVELS[c] for c in present % levels], dtype=pl.Utf8),
    }).with_row_index("_s")
    return series, lambda frame: np.searchsorted(present, combined(frame)).astype(np.int64)


def summarise(question_metrics: pl.DataFrame | pl.LazyFrame, segments: pl.DataFrame, golden: pl.DataFrame | None = None,
              confidence: float = 0.95, bootstrap_resamples: int = 2000, seed: int = 0,
              small_segment_n: int = 10,
              proportion_metrics: Collection[str] = PROPORTION_METRICS) -> pl.DataFrame:
    """Aggregate per-question metrics into ``metric_summary`` rows, with confidence intervals.

    Input: ``question_metrics`` rows (columns ``system``, ``question_id``, ``metric``, ``k``,
    ``value``, ``status``, ``ranking_mode``, and ``split`` unless ``golden`` supplies it; rows
    from several metric modules may be concatenated), a DataFrame or a LazyFrame (a scanned file: read in
    slices of :data:`SUMMARY_BATCH_ROWS` rows, twice, so memory holds the matrices below, not the table; the
    result does not depend on the slicing); ``segments`` from
    :func:`~rag_eval_pipeline.core.metrics.segments.question_segments` (``question_id``, ``segment``; ``all``
    is added for every question whatever it holds); ``golden`` (optional ``golden_set``: fills ``split`` where
    missing or null); ``confidence`` in (0, 1); ``bootstrap_resamples`` >= 0 (0 skips the bootstrap: ci_method
    ``none``); ``seed``; ``small_segment_n``; ``proportion_metrics`` (see :data:`PROPORTION_METRICS`).

    Output: a frame conforming to ``tables.SCHEMAS["metric_summary"]``, one row per system,
    split (``all`` and each split value), segment, metric, k and level (``level`` of the rows: chunk /
    doc for retrieval, null elsewhere; absent = null) that holds at least one question
    row, sorted by those keys:

    - ``numerator`` = sum of the non-null values, ``denominator`` = their count, ``value`` =
      numerator / denominator, or null when the denominator is 0 (never 0 for an empty group);
    - ``n`` = questions in the group (rows), ``n_not_evaluable`` = rows whose value is null;
    - ``ci_low``/``ci_high``/``ci_method``: ``wilson`` (:func:`stats.wilson_interval`) when the
      metric is a declared proportion and every non-null value is 0 or 1; ``bootstrap`` (seeded
      percentile bootstrap over questions, see :func:`_bootstrap`) otherwise; ``none`` with a
      null interval when the denominator is 0 or ``bootstrap_resamples`` is 0;
    - metric ``latency_ms`` becomes the rows ``latency_ms_p50`` / ``latency_ms_p95`` instead of a
      mean (percentiles with numerator = value, denominator = 1, no interval; see
      ``core/metrics/latency.py``);
    - ``judge_errors`` = rows with status ``judge_error``; ``ranking_mode`` = first non-null
      ranking_mode of the system's metric and k (in question_id order); ``small_segment`` =
      n < small_segment_n (flagged, not hidden).

    Runs in a few dense (questions x series) numpy matrices, where a series is one (system,
    metric, k, level): for 10,000 questions, ~40 series per system and ~10 segments it is dominated by
    the bootstrap's matrix products, a few seconds.
    Raises SchemaError when a needed column is missing; InputError when a (system, question_id,
    metric, k, level) appears twice or a question has two split values; ValueError for a confidence
    outside (0, 1) or a negative ``bootstrap_resamples``.
    Sources: Wilson (1927); Efron & Tibshirani, *An Introduction to the Bootstrap* (1993); the
    null and counts rules of docs/METRICS.md (null for an empty denominator, counts beside rates).
    """
    if not (0.0 < confidence < 1.0):
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if bootstrap_resamples < 0:
        raise ValueError(f"bootstrap_resamples must be >= 0, got {bootstrap_resamples!r}")
    need = ["system", "question_id", "metric", "k", "value", "status", "ranking_mode"]
    columns = question_metrics.lazy().collect_schema().names()
    missing = [c for c in need if c not in columns]
    if missing:
        raise SchemaError(f"summarise: question_metrics lacks columns {missing}")
    if "split" not in columns and golden is None:
        raise SchemaError("summarise: question_metrics has no 'split' column and no golden set was given")
    for c in ("question_id", "segment"):
        if c not in segments.columns:
            raise SchemaError(f"summarise: segments lacks column {c!r}")

    # Read in slices: the long table (questions x metrics x systems rows: ~13 million for 100,000 questions) is
    # read SUMMARY_BATCH_ROWS rows at a time, twice (the questions and series first, then the values), straight
    # into the dense matrices below, never held whole (nor joined, nor copied) in memory. Eager slices of the
    # scan, not polars' streaming engine: a lookup expression (the split from the golden set) is not streamed
    # there, and the engine then holds every row of the columns read.
    source = question_metrics.lazy()
    total = int(source.select(pl.len()).collect().item())

    def prepared(piece: pl.LazyFrame) -> pl.LazyFrame:
        if "level" not in columns:  # rows made before levels existed: no level
            piece = piece.with_columns(pl.lit(None, pl.Utf8).alias("level"))
        piece = _with_split(
            piece.select(*need, "level", *(["split"] if "split" in columns else [])),
            golden,
        ).with_columns(
            pl.col("k").cast(pl.Int32),
            pl.col("value").cast(pl.Float64),
            pl.col("split").cast(pl.Utf8),
        )
        # a split value "all" would collide with the all-splits rows: such questions count in "all" only
        return piece.with_columns(pl.when(pl.col("split") == "all").then(None).otherwise(pl.col("split"))
                                  .alias("split"))

    def slices():
        for begin in range(0, total, SUMMARY_BATCH_ROWS):
            batch = prepared(source.slice(begin, SUMMARY_BATCH_ROWS)).collect()
            if batch.height:
                yield batch

    # latency is a measurement, not a rate: its p50 / p95 rows are made apart (core/metrics/latency.py)
    from rag_eval_pipeline.core.metrics.latency import LATENCY_METRIC, latency_summary

    every_q, main_q, main_series, latency_parts = [], [], [], []
    for batch in slices():
        every_q.append(batch.select("question_id", "split").unique())
        is_latency = pl.col("metric") == LATENCY_METRIC
        latency_parts.append(batch.filter(is_latency))
        rest = batch.filter(~is_latency)
        main_q.append(rest.select("question_id", "split").unique())
        main_series.append(rest.select("system", "metric", "k", "level").unique())
        del batch, rest
    if not every_q:
        return _empty_summary()
    questions = pl.concat(every_q).unique()
    two = questions.group_by("question_id").len().filter(pl.col("len") > 1)
    if two.height:
        raise InputError(f"question_metrics: question {two['question_id'][0]!r} has more than one split",
                         field="split")
    latency_rows = pl.concat(latency_parts)
    del every_q, latency_parts
    if latency_rows.height:
        _no_repeats(latency_rows)
    latency = latency_summary(latency_rows, segments, small_segment_n)
    questions = pl.concat(main_q).unique()
    if questions.height == 0:
        return latency
    questions = questions.sort("question_id").with_row_index("_q")
    series, coder = _series_coder(pl.concat(main_series).unique())
    del main_q, main_series
    q_order = questions["question_id"].to_list()
    n_q, n_s = questions.height, series.height

    # dense question x series matrices (0/1 and counts as float32: exact for these sizes, half the memory)
    has = np.zeros((n_q, n_s), dtype=np.float32)
    ind = np.zeros((n_q, n_s), dtype=np.float32)
    vals = np.zeros((n_q, n_s))
    non01 = np.zeros((n_q, n_s), dtype=np.float32)
    jerr = np.zeros((n_q, n_s), dtype=np.float32)
    seen = np.zeros(n_q * n_s, dtype=np.int32)
    mode_q = np.full(n_s, np.iinfo(np.int64).max, dtype=np.int64)  # first non-null ranking_mode, in question order
    mode_of: list[str | None] = [None] * n_s
    for batch in slices():
        batch = batch.filter(pl.col("metric") != LATENCY_METRIC)
        if batch.height == 0:
            continue
        q = _codes(batch["question_id"], q_order)
        si = coder(batch)
        seen += np.bincount(q * n_s + si, minlength=n_q * n_s).astype(np.int32)
        val = batch["value"].fill_null(np.nan).to_numpy().astype(np.float64)
        ok = ~np.isnan(val)
        has[q, si] = 1.0
        ind[q[ok], si[ok]] = 1.0
        vals[q[ok], si[ok]] = val[ok]
        non01[q, si] = (ok & (val != 0.0) & (val != 1.0)).astype(np.float32)
        jerr[q, si] = (batch["status"] == "judge_error").fill_null(False).to_numpy().astype(np.float32)
        modes = (pl.DataFrame({"_q": q, "_s": si, "m": batch["ranking_mode"]}).drop_nulls("m")
                 .sort("_q").group_by("_s").agg(pl.col("_q").first(), pl.col("m").first()))
        for s_, q_, m_ in modes.iter_rows():
            if q_ < mode_q[s_]:
                mode_q[s_], mode_of[s_] = q_, m_
    repeats = np.flatnonzero(seen > 1)
    if repeats.size:
        qi, sj = divmod(int(repeats[0]), n_s)
        row = series.row(sj, named=True)
        raise InputError(
            f"question_metrics: system {row['system']!r}, question {q_order[qi]!r}, metric "
            f"{row['metric']!r}, k {row['k']!r}, level {row['level']!r} appears {int(seen[repeats[0]])} times; "
            "expected once",
            field="question_id",
        )
    del seen

    # cells: (split, segment); membership matrix questions x cells
    seg = (
        segments.select("question_id", pl.col("segment").cast(pl.Utf8))
        .filter(pl.col("segment").is_not_null() & (pl.col("segment") != "all"))
        .join(questions.select("question_id", "_q"), on="question_id", how="inner")
        .unique()
    )
    seg_names = ["all"] + sorted(set(seg["segment"].to_list()))
    seg_code = {name: i for i, name in enumerate(seg_names)}
    in_seg = np.zeros((n_q, len(seg_names)), dtype=bool)
    in_seg[:, 0] = True
    if seg.height:
        in_seg[seg["_q"].to_numpy().astype(np.int64), [seg_code[x] for x in seg["segment"].to_list()]] = True
    split_names = sorted(x for x in questions["split"].unique().to_list() if x is not None)
    q_split = np.full(n_q, -1, dtype=np.int64)
    qs = questions["split"].to_list()
    for i, name in enumerate(split_names):
        q_split[[j for j, x in enumerate(qs) if x == name]] = i
    # cells in output order: split "all", then each split; segments sorted within
    cell_split = ["all"] * len(seg_names) + [p for p in split_names for _ in seg_names]
    cell_seg = list(range(len(seg_names))) * (1 + len(split_names))
    member = np.concatenate(
        [in_seg] + [in_seg & (q_split == i)[:, None] for i in range(len(split_names))], axis=1
    )

    # per (cell, series) aggregates: one matrix product each (counts exact in float32 below 2**24 questions)
    member32 = member.astype(np.float32)
    n = (member32.T @ has).astype(np.float64)
    den = (member32.T @ ind).astype(np.float64)
    num = member.astype(np.float64).T @ vals
    bad01 = member32.T @ non01
    jes = (member32.T @ jerr).astype(np.float64)
    del member32, has, non01, jerr
    cell_idx, ser_idx = np.nonzero(n > 0)

    props = {metric_base(m) for m in proportion_metrics}
    ser_prop = np.array([metric_base(m) in props for m in series["metric"].to_list()], dtype=bool)
    g_den = den[cell_idx, ser_idx]
    is_wilson = (g_den > 0) & ser_prop[ser_idx] & (bad01[cell_idx, ser_idx] == 0)
    is_boot = (g_den > 0) & ~is_wilson & (bootstrap_resamples > 0)
    low = np.full(cell_idx.size, np.nan)
    high = np.full(cell_idx.size, np.nan)
    if is_wilson.any():
        low[is_wilson], high[is_wilson] = wilson_arrays(
            num[cell_idx, ser_idx][is_wilson], g_den[is_wilson], confidence)
    if is_boot.any():
        b_low, b_high = _bootstrap(vals, ind, in_seg, q_split, len(split_names),
                                   cell_idx[is_boot], ser_idx[is_boot], confidence, bootstrap_resamples, seed)
        low[is_boot], high[is_boot] = b_low, b_high

    modes = pl.DataFrame({"_s": pl.Series(range(n_s), dtype=pl.UInt32),
                          "ranking_mode": pl.Series(mode_of, dtype=pl.Utf8)})
    out = pl.DataFrame({
        "_s": pl.Series(ser_idx, dtype=pl.UInt32),
        "split": [cell_split[c] for c in cell_idx],
        "segment": [seg_names[cell_seg[c]] for c in cell_idx],
        "numerator": num[cell_idx, ser_idx],
        "denominator": g_den,
        "n": n[cell_idx, ser_idx].round().astype(np.int64),
        "n_not_evaluable": (n[cell_idx, ser_idx] - g_den).round().astype(np.int64),
        "ci_low": low,
        "ci_high": high,
        "ci_method": np.where(is_wilson, "wilson", np.where(is_boot, "bootstrap", "none")),
        "judge_errors": jes[cell_idx, ser_idx].round().astype(np.int64),
    }).with_columns(
        pl.col("ci_low").fill_nan(None),
        pl.col("ci_high").fill_nan(None),
        pl.when(pl.col("denominator") > 0).then(pl.col("numerator") / pl.col("denominator"))
        .otherwise(None).alias("value"),
        (pl.col("n") < small_segment_n).alias("small_segment"),
    )
    out = (
        out.join(series.with_columns(pl.col("_s").cast(pl.UInt32)), on="_s", how="left")
        .join(modes, on="_s", how="left")
        .drop("_s")
    )
    out = pl.concat([conform(out, "metric_summary"), latency]).sort(_KEYS, nulls_last=True)
    return conform(out, "metric_summary")


def _empty_summary() -> pl.DataFrame:
    """An empty ``metric_summary`` frame."""
    return pl.DataFrame(schema=SCHEMAS["metric_summary"])


def _bootstrap(vals: np.ndarray, ind: np.ndarray, in_seg: np.ndarray, q_split: np.ndarray, n_splits: int,
               cells: np.ndarray, sers: np.ndarray, confidence: float, n_resamples: int,
               seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Percentile bootstrap bounds for the groups (cell ``cells[i]``, series ``sers[i]``).

    ``vals``/``ind`` are the (questions x series) values (0 where null) and evaluable indicators;
    a cell is (split, segment) with split "all" (cells ``0..S-1``) or split i (cells
    ``(i+1)*S + g``), S = number of segments, membership from ``in_seg`` and ``q_split``.

    The resampling unit is the question, and what is resampled is the whole evaluation set: the
    N questions, in question_id order, are drawn with replacement N times by
    ``stats.resample_indices(N, n_resamples, seed)`` (one index matrix for the whole summary,
    drawn in blocks of bounded memory). Every group is evaluated on each resample as it would be
    on a new evaluation set: resampled value = sum of count x value over the group's evaluable
    questions / sum of their counts (a question outside the split or segment, or with a null
    value, weighs 0; a resample with no evaluable question of the group is left out). For a group
    holding every question, all evaluable, this is ``stats.bootstrap_mean_ci`` of its values in
    question_id order (up to round-off); for a segment or a partly evaluable metric it is the
    bootstrap of a ratio estimator (Efron & Tibshirani 1993, ch. 9-10), which also carries the
    variability of the segment's size. All metrics, segments and systems see the same resamples,
    so intervals are paired across systems. Splits partition the questions, so a split-"all" cell
    is the sum of its per-split parts and each question enters one matrix product per segment.
    """
    alpha = 1.0 - confidence
    n_q = vals.shape[0]
    n_seg = in_seg.shape[1]
    used_s = np.unique(sers)
    col_of = {s: i for i, s in enumerate(used_s)}
    v = vals[:, used_s]
    ev = ind[:, used_s] > 0
    # evaluable-question sets repeat across metrics and systems: one den column per distinct set
    distinct: dict[bytes, int] = {}
    set_of = np.array([distinct.setdefault(np.packbits(ev[:, j]).tobytes(), len(distinct))
                       for j in range(ev.shape[1])])
    first = np.unique(set_of, return_index=True)[1]
    sets = ev[:, first].astype(np.float64)
    # base parts: (split code -1..n_splits-1, segment) with the questions they hold
    need_seg = np.unique(cells % n_seg)
    parts = []
    for g in need_seg:
        for p in range(-1, n_splits):
            members = np.flatnonzero(in_seg[:, g] & (q_split == p))
            if members.size:
                parts.append((g, p, members, np.empty((n_resamples, used_s.size)),
                               np.empty((n_resamples, first.size))))
    start = 0
    # At least BOOTSTRAP_BLOCK resamples per block: every block copies each part's rows of v and sets, so with
    # blocks of ~4M indices (ever fewer resamples as n_q grows) that copying grew with n_q squared.
    for idx in stats.resample_indices(n_q, n_resamples, seed, min_rows=BOOTSTRAP_BLOCK):
        b = idx.shape[0]
        flat = (idx + (np.arange(b) * n_q)[:, None]).ravel()
        counts = np.bincount(flat, minlength=b * n_q).reshape(b, n_q).astype(np.float64)
        for _g, _p, members, num, den in parts:
            sub = counts[:, members]
            num[start:start + b] = sub @ v[members]
            den[start:start + b] = sub @ sets[members]
        start += b
    low = np.full(cells.size, np.nan)
    high = np.full(cells.size, np.nan)
    for c in np.unique(cells):
        g, split_pos = c % n_seg, c // n_seg - 1  # -1: split "all"
        chosen = [(num, den) for gg, p, _m, num, den in parts if gg == g and (split_pos == -1 or p == split_pos)]
        if not chosen:
            continue
        # the parts' sums, the first as the start (not 0), so the type stays an array
        num_c = sum((x[0] for x in chosen[1:]), chosen[0][0])
        den_c = sum((x[1] for x in chosen[1:]), chosen[0][1])
        rows = np.flatnonzero(cells == c)
        cols = np.array([col_of[s] for s in sers[rows]])
        d = den_c[:, set_of[cols]]
        with np.errstate(divide="ignore", invalid="ignore"):
            means = np.where(d > 0, num_c[:, cols] / d, np.nan)
        qfun = np.nanquantile if np.isnan(means).any() else np.quantile
        bounds = qfun(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        low[rows], high[rows] = bounds[0], bounds[1]
    return low, high
