"""Shared preparation of the retrieval measures: ranked, de-duplicated, judged hits as flat arrays.

:func:`prepare` does everything the measures share, once: it validates the ``run_long`` and ``qrels``
frames, puts each (system, question) ranking in the order of the ranking mode, drops or refuses
duplicated hits, finds the judged grade of every hit, and lays the result out as numpy arrays over
the evaluated (system, question) pairs. Each measure is then a few vectorised lines over those
arrays (:mod:`rag_eval_pipeline.core.metrics.retrieval_kernels`), as ranx lays out its metrics
(``ranx/metrics/``: one kernel per measure over shared, prepared inputs).

Ranking and judging follow trec_eval 10.0 ``form_res_rels.c``: in ``mode="trec_eval"`` hits are
sorted by score descending (compared as C floats, ``TEXT_RESULTS.sim``), ties by docno in decreasing
byte order (``comp_sim_docno``); in ``mode="system"`` by the ``rank`` column (ties by input order).
Relevance for the binary measures is ``grade >= rel_level`` (trec_eval ``-l``); nDCG's gain is the
judged grade when positive. Definitions of every measure: ``docs/METRICS.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.metrics.names import CUT_MEASURES, DEFAULT_MEASURES, MEASURES, RANKING_MODES, parse_measure
from rag_eval_pipeline.core.metrics.retrieval_frames import QRELS_SCHEMA, RUN_LONG_SCHEMA, select_columns

ON_DUPLICATE = ("error", "keep_first")

_GOLDEN_RATIO = np.uint64(0x9E3779B97F4A7C15)
_HASH_SEED = 20240607


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
                         chunk_at: Callable[[np.ndarray], pl.Series]) -> np.ndarray | None:
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
        if rank is None:
            raise ValueError("ranking mode 'system' orders by rank: rank is None")
        bad = same & (rank[1:] < rank[:-1])
        if not bad.any():
            return None
        rmin = int(rank.min())
        span = int(rank.max()) - rmin + 1
        return np.argsort(_group_ordinal(g_row) * span + (rank.astype(np.int64) - rmin), kind="stable")
    if score is None:
        raise ValueError(f"ranking mode {mode!r} orders by score: score is None")
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


@dataclass
class PreparedRankings:
    """The evaluated (system, question) pairs and their judged hits, as flat numpy arrays.

    Pair arrays have one entry per evaluated pair (``n_pairs``; pairs sorted by system, then
    question id): ``pair_system`` / ``pair_question`` (indices into ``systems`` / ``questions``),
    ``num_ret`` (hits after de-duplication), ``num_rel`` (judged grade >= rel_level in the qrels),
    ``no_rel`` (num_rel == 0), ``num_rel_ret``, ``first_rel_pos`` (1-based position of the first
    relevant hit, 0 when none). Hit arrays list the relevant hits (``rel_pair``, ``rel_pos``, by pair
    then position) and the hits with a positive grade (``gain_pair``, ``gain_pos``,
    ``gain_disc`` = grade / log2(pos + 1)) and the judged non-relevant hits (``nonrel_pair``,
    ``nonrel_pos``: grade >= 0 and below rel_level), with ``num_nonrel`` per pair (judged non-relevant
    chunks of the question in the qrels). Per-question ideal ranking: ``ideal_question``,
    ``ideal_pos``, ``ideal_disc`` (positive grades, best first), ``has_gain`` (question has one).
    ``dropped_duplicates``, ``missing`` (system, question_id without a run row) and ``unknown``
    (run questions absent from the qrels, with ``n_rows``) describe what was left out.
    """

    systems: pl.Series
    questions: pl.Series
    pair_system: np.ndarray
    pair_question: np.ndarray
    num_ret: np.ndarray
    num_rel: np.ndarray
    no_rel: np.ndarray
    num_rel_ret: np.ndarray
    first_rel_pos: np.ndarray
    rel_pair: np.ndarray
    rel_pos: np.ndarray
    gain_pair: np.ndarray
    gain_pos: np.ndarray
    gain_disc: np.ndarray
    nonrel_pair: np.ndarray
    nonrel_pos: np.ndarray
    num_nonrel: np.ndarray
    ideal_question: np.ndarray
    ideal_pos: np.ndarray
    ideal_disc: np.ndarray
    has_gain: np.ndarray
    dropped_duplicates: int
    missing: pl.DataFrame
    unknown: pl.DataFrame
    _hits: dict = field(default_factory=dict, repr=False)
    _rel_start: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_pairs(self) -> int:
        return int(self.pair_question.size)

    def hits_at(self, k: int) -> np.ndarray:
        """Relevant hits in the top ``k`` of every pair (float64), computed once per k."""
        got = self._hits.get(k)
        if got is None:
            got = np.bincount(self.rel_pair[self.rel_pos <= k], minlength=self.n_pairs).astype(np.float64)
            self._hits[k] = got
        return got

    def safe_num_rel(self) -> np.ndarray:
        """``num_rel`` with 1 where it is 0 (the value is masked as null there), for division."""
        return np.where(self.no_rel, 1.0, self.num_rel)

    def ideal_dcg(self, k: int | None) -> np.ndarray:
        """IDCG of every pair's question over the top ``k`` of the ideal ranking (None = all)."""
        keep = slice(None) if k is None else self.ideal_pos <= k
        per_q = np.bincount(self.ideal_question[keep], weights=self.ideal_disc[keep], minlength=self.questions.len())
        return per_q[self.pair_question] if self.questions.len() else np.zeros(self.n_pairs)

    def no_gain(self) -> np.ndarray:
        """True for pairs whose question has no judged grade > 0 (every nDCG is null there)."""
        return ~self.has_gain[self.pair_question] if self.questions.len() else np.ones(self.n_pairs, dtype=bool)


def check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    """Cutoffs as a sorted tuple of distinct ints >= 1. Raises ConfigError for anything else."""
    out = []
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
            raise ConfigError(f"cutoff k must be an integer >= 1, got {k!r}")
        if k < 1:
            raise ConfigError(f"cutoff k must be >= 1, got {k}")
        out.append(int(k))
    return tuple(sorted(set(out)))


def requested(measures: Iterable[str] | None, ks: tuple[int, ...]) -> dict[str, tuple[int | None, ...]]:
    """Base measure -> cutoffs (``(None,)`` for uncut measures), in :data:`MEASURES` order.

    Input: measure names for :func:`parse_measure` (None = :data:`DEFAULT_MEASURES`; a base name of a
    cut measure means every k in ``ks``). Raises ConfigError for an unknown name or a cut measure
    without any cutoff.
    """
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


def prepare(run_long: pl.DataFrame, qrels: pl.DataFrame, mode: str = "system", rel_level: int = 1,
            on_duplicate: str = "error", complete: bool = False) -> PreparedRankings:
    """Rank, de-duplicate and judge every hit once, for all measures.

    Inputs: ``run_long`` (``system``, ``question_id``, ``chunk_id``, ``score`` f64, ``rank`` i32; a
    row with null ``chunk_id`` marks a question run with nothing retrieved) and ``qrels``
    (``question_id``, ``chunk_id``, ``grade`` i32; a null ``chunk_id`` marks a question with no
    judged chunk); ``mode`` ``"system"`` or ``"trec_eval"``; ``rel_level`` >= 0; ``on_duplicate``
    ``"error"`` or ``"keep_first"``; ``complete``: also evaluate qrels questions without a run row
    (trec_eval ``-c``), as empty rankings. Output: a :class:`PreparedRankings`.
    Raises ConfigError for a bad mode, on_duplicate or rel_level; SchemaError for missing or
    uncastable columns; InputError naming system, question and chunk for a duplicated hit
    (``on_duplicate="error"``), a duplicated qrels judgment, a null rank (mode system), a null or
    NaN score (mode trec_eval), or a null question/system/grade. Source: trec_eval 10.0
    ``form_res_rels.c``, ``trec_eval.c`` (``-c``, ``-l``).
    """
    if mode not in RANKING_MODES:
        raise ConfigError(f"ranking mode must be one of {RANKING_MODES}, got {mode!r}")
    if on_duplicate not in ON_DUPLICATE:
        raise ConfigError(f"on_duplicate must be one of {ON_DUPLICATE}, got {on_duplicate!r}")
    if isinstance(rel_level, bool) or not isinstance(rel_level, (int, np.integer)) or rel_level < 0:
        raise ConfigError(f"rel_level must be an integer >= 0, got {rel_level!r}")
    rel_level = int(rel_level)
    run = select_columns(run_long, RUN_LONG_SCHEMA, "run_long")
    qr = select_columns(qrels, QRELS_SCHEMA, "qrels")

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
    num_nonrel_q = np.bincount(j_qi[(j_grade >= 0) & (j_grade < rel_level)], minlength=nq).astype(np.float64)
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
    nonrel = (judged_grade >= 0) & (judged_grade < rel_level)  # judged non-relevant (trec_eval rel_levels[0..l))
    gain_mask = judged_grade > 0
    gain_e, gain_pos = j_e[gain_mask], j_pos[gain_mask]
    gain_disc = judged_grade[gain_mask] / np.log2(gain_pos + 1.0)

    num_rel_ret = np.bincount(rel_e, minlength=nE).astype(np.float64)
    first_pos = np.zeros(nE, dtype=np.float64)
    if rel_e.size:
        ue, ui = np.unique(rel_e, return_index=True)
        first_pos[ue] = rel_pos[ui]

    missing = pl.DataFrame({
        "system": systems.gather(missing_g // max(nq, 1)) if missing_g.size else pl.Series([], dtype=pl.Utf8),
        "question_id": questions.gather(missing_g % max(nq, 1)) if missing_g.size else pl.Series([], dtype=pl.Utf8),
    })
    return PreparedRankings(
        systems=systems, questions=questions, pair_system=e_si, pair_question=e_qi, num_ret=num_ret,
        num_rel=R.astype(np.float64), no_rel=no_rel, num_rel_ret=num_rel_ret, first_rel_pos=first_pos,
        rel_pair=rel_e, rel_pos=rel_pos, gain_pair=gain_e, gain_pos=gain_pos, gain_disc=gain_disc,
        nonrel_pair=j_e[nonrel], nonrel_pos=j_pos[nonrel],
        num_nonrel=num_nonrel_q[e_qi] if nq else np.zeros(nE),
        ideal_question=ideal_qi, ideal_pos=ideal_pos, ideal_disc=ideal_disc, has_gain=has_gain_q,
        dropped_duplicates=dropped, missing=missing, unknown=unknown)


__all__ = ["ON_DUPLICATE", "PreparedRankings", "check_ks", "prepare", "requested",
           "select_columns"]
