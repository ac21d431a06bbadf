"""The chain's steps as plain functions over an :class:`EvalConfig`; the Dagster assets call these.

Each function takes and returns polars DataFrames (schemas in ``core/tables.py``) so the whole chain
can be run and tested without Dagster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterator, Sequence

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.errors import ConfigError, InputError


def load_documents(cfg: EvalConfig) -> pl.DataFrame:
    """Read the configured corpus source into a documents frame (see docs/CONTRACTS.md).

    The source's loader comes from the registry of corpus sources (``core/sources/corpus/``:
    ``documents_dir``, ``beir``, ``squad_v2``, ...; ``chunks`` has no documents frame, its rows are
    the snapshot: :func:`build_snapshot`). Raises InputError from the source reader, ConfigError for
    an unknown source.
    """
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    return CORPUS_SOURCES.get(cfg.corpus.source).documents(cfg.corpus.path, cfg.corpus.split)


def chunking_strategy(cfg: EvalConfig) -> tuple[str, int]:
    """Return (strategy, max_chars): the configured strategy, else the source's default (one chunk per
    document for sources with document-level qrels)."""
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    default = CORPUS_SOURCES.get(cfg.corpus.source).default_chunking
    return cfg.corpus.chunking.strategy or default, cfg.corpus.chunking.max_chars


def build_snapshot(cfg: EvalConfig) -> tuple[pl.DataFrame, str]:
    """Read, chunk and hash the corpus. Output: (corpus_snapshot table, corpus_version hex string).

    A source chunked already (its registered ``snapshot`` loader: ``corpus.source: chunks``, the
    team's chunk ids kept) is read as the snapshot itself; every other source is chunked by
    ``corpus.chunking``. Raises InputError naming file, line and field for bad corpus data."""
    from rag_eval_pipeline.core.corpus import chunk_documents, corpus_version
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    source = CORPUS_SOURCES.get(cfg.corpus.source)
    if source.snapshot is not None:
        snapshot = tables.conform(source.snapshot(cfg.corpus.path), "corpus_snapshot")
        return snapshot, corpus_version(snapshot)
    strategy, max_chars = chunking_strategy(cfg)
    snapshot = chunk_documents(load_documents(cfg), strategy=strategy, max_chars=max_chars)
    snapshot = tables.conform(snapshot, "corpus_snapshot")
    return snapshot, corpus_version(snapshot)


def build_golden(cfg: EvalConfig, snapshot: pl.DataFrame) -> pl.DataFrame:
    """Read the golden set for the configured source and validate it against ``snapshot``.

    Output: the golden_set table with ``golden_version``. Raises InputError naming file, line, field.
    """
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES
    from rag_eval_pipeline.core.sources.golden import load_golden, validate_golden

    src = CORPUS_SOURCES.get(cfg.corpus.source)
    if cfg.golden.path is not None:
        raw = load_golden(cfg.golden.path)
        source = str(cfg.golden.path)
    elif src.questions is not None:
        raw = src.questions(cfg.corpus.path, cfg.corpus.split)
        source = str(cfg.corpus.path)
    else:
        raise ConfigError(f"{cfg.path}: golden.path is required for corpus.source {src.name!r}")
    if raw.height == 0:  # every metric would be null and every gate not evaluable: say why, here
        raise InputError("no questions in the golden set; expected at least one", path=source)
    return tables.conform(validate_golden(raw, snapshot, source), "golden_set")


def quick_subset(golden: pl.DataFrame, size: int, seed: int = 0) -> pl.DataFrame:
    """A fixed, stratified subset of the golden set for the on-change quick job.

    Every answerability class present is represented: the ``size`` slots are shared out in
    proportion to class counts (at least one per class), and within a class questions are taken in
    the order of sha256(seed, question_id), so the subset is stable across runs and machines.
    Output: a subset of ``golden`` rows (same schema), at most ``size`` rows plus one per class.
    """
    if golden.height <= size:
        return golden
    keyed = golden.with_columns(
        pl.col("question_id")
        .map_elements(lambda q: hashlib.sha256(f"{seed}:{q}".encode()).hexdigest(), return_dtype=pl.Utf8)
        .alias("_order")
    ).sort("_order")
    counts = keyed.group_by("answerability").len()
    total = golden.height
    picks = []
    for cls, n in counts.iter_rows():
        quota = max(1, round(size * n / total))
        picks.append(keyed.filter(pl.col("answerability") == cls).head(quota))
    return pl.concat(picks).drop("_order").sort("question_id")


def build_runs(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, corpus_version: str,
               systems: list[str] | None = None, deployment=None, info: dict | None = None) -> pl.DataFrame:
    """Produce the rag_runs table for the configured systems (all, or only those named).

    Each system is run by its kind's runner (``core/systems/kinds/``, through
    :func:`rag_eval_pipeline.core.systems.base.run_system`): the reference system in process, a logged
    system read from its log (a chunk id outside ``snapshot`` is an InputError at its line, and so is
    a hit without a score when ``ranking_mode`` is ``trec_eval``), live systems called or imported with
    the ``deployment`` settings (default :class:`~rag_eval_pipeline.core.systems.base.Deployment`).
    Every kind but reference reads its ids through the system's id mapper
    (``core/systems/id_mapping.py``: ``chunk_map``, text alignment). Logged rows for questions outside
    ``golden`` are kept: :func:`rag_eval_pipeline.core.systems.runs.rag_runs` counts and excludes them.
    ``info``: when given, filled per system with what its run counted (``id_mapping``: the mapper's
    counts; live kinds: calls, errors, traces). Raises InputError for bad logs, ConfigError for unknown
    names.
    """
    from rag_eval_pipeline.core.systems.runs import run_each

    frames = []
    for name, result in run_each(cfg, snapshot, golden, corpus_version, systems, deployment):
        frames.append(result.runs)
        if info is not None:
            info[name] = dict(result.info)
    return pl.concat(frames) if frames else tables.empty("rag_runs")


#: Run rows judged at a time by :func:`build_citations` and :func:`build_nuggets` (their answers, claims and rows
#: are Python objects while they are judged: ~13 KB a question; 20,000 runs are 10,000 questions of two systems).
JUDGED_RUNS_BATCH = 20_000


def _in_run_batches(judge_part, runs: pl.DataFrame, batch_runs: int) -> list[pl.DataFrame]:
    """``judge_part(runs slice)`` (a function returning a tuple of tables with a ``repeat`` column, rows of
    each repeat in run order) on contiguous slices of ``batch_runs`` run rows, the parts of each table
    concatenated and stably sorted by ``repeat``: the rows and their order of one call on all of ``runs``
    (each answer is judged on its own), with one slice's Python objects alive at a time."""
    if runs.height <= batch_runs:
        return list(judge_part(runs))
    parts = [judge_part(runs.slice(start, batch_runs)) for start in range(0, runs.height, batch_runs)]
    return [pl.concat([p[i] for p in parts], how="vertical").sort("repeat", maintain_order=True)
            for i in range(len(parts[0]))]


def build_citations(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, runs: pl.DataFrame, judge,
                    repeats: int = 1, batch_runs: int = JUDGED_RUNS_BATCH) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The ``citation_claims`` and ``citations`` tables of every system
    (:func:`~rag_eval_pipeline.core.citations.judging.judge_citations`, each system's
    ``citation_format``, the configuration's abstention phrases; a system with ``chunk_map: {doc_ids:
    true}`` has each cited document judged on all its chunks, :func:`doc_id_systems`), judged ``batch_runs``
    run rows at a time (the same rows in the same order as one call; :func:`_in_run_batches`)."""
    from rag_eval_pipeline.core.citations.judging import judge_citations

    formats, whole_docs = citation_formats(cfg), doc_id_systems(cfg)
    claims, cites = _in_run_batches(
        lambda part: judge_citations(part, snapshot, golden, judge, formats=formats, repeats=repeats,
                                     abstention_phrases=cfg.judge.abstention_phrases, doc_id_systems=whole_docs),
        runs, batch_runs)
    return claims, cites


def build_nuggets(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, runs: pl.DataFrame, judge,
                  repeats: int = 1, batch_runs: int = JUDGED_RUNS_BATCH) -> pl.DataFrame:
    """The ``nugget_labels`` table: every golden claim judged against every answer
    (:func:`~rag_eval_pipeline.core.completeness.judge_nuggets`), ``batch_runs`` run rows at a time (the same
    rows in the same order as one call; :func:`_in_run_batches`)."""
    from rag_eval_pipeline.core.completeness import judge_nuggets

    formats = citation_formats(cfg)
    known = dict(zip(snapshot["chunk_id"].to_list(), snapshot["doc_id"].to_list()))  # chunk -> document
    (labels,) = _in_run_batches(
        lambda part: (judge_nuggets(part, golden, judge, formats=formats, known_chunks=known, repeats=repeats,
                                    abstention_phrases=cfg.judge.abstention_phrases),), runs, batch_runs)
    return labels


def build_question_metrics(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, runs: pl.DataFrame,
                           labels: pl.DataFrame, judgements: pl.DataFrame,
                           extra: list[pl.DataFrame] | None = None, *,
                           citations: tuple[pl.DataFrame, pl.DataFrame] | None = None,
                           nugget_labels: pl.DataFrame | None = None,
                           levels: Sequence[str] | None = None,
                           latency_systems: Collection[str] | None = None) -> tuple[pl.DataFrame, dict]:
    """Every per-question metric of every system: retrieval, claim evidence, decisions, faithfulness,
    and, when their tables are given, citations (``citations`` = (citation_claims, citations) of
    :func:`build_citations`) and completeness (``nugget_labels`` of :func:`build_nuggets`).

    Retrieval is scored at each level the golden set judges (``core/metrics/doc_level.py``: chunk,
    document, or both), and every retrieval row says which in ``level``. ``levels``: the levels to score,
    decided from the WHOLE golden set (``levels_of`` of it) when ``golden`` is only a part of it (a batch,
    a question shard): a part without any ``relevant_docs`` must still be scored at document level when
    the whole set is. None = ``levels_of(golden)`` (``golden`` is the whole set). Raises ValueError for a
    level outside ``LEVELS``. ``latency_systems``: the systems that measured a latency over the WHOLE run
    table (``core/metrics/latency.latency_systems``), when ``runs`` is a part of it; None = those of ``runs``.
    A run whose decision is ``error`` is reported apart: its retrieval and claim-evidence rows are null with status
    ``run_error`` (it counts in ``run_error_rate``, never as an empty retrieval scored 0). A system
    whose ids were documents only (``chunk_map: {doc_ids: true}``) has null chunk-level rows
    (status ``doc_ids_only``); its evidence rates (``claim_evidence_availability``, ``evidence_retrieved``,
    abstention with/without evidence) read each retrieved document as all its chunks.
    Output: (question_metrics table, info) where info counts, per system, what the retrieval
    evaluation left out (dropped duplicates, golden questions with no run row, run rows for unknown
    questions, errored questions, chunks dropped at document level).
    """
    from rag_eval_pipeline.core.metrics.correctness import correctness_question_metrics
    from rag_eval_pipeline.core.metrics.decisions import decision_question_metrics
    from rag_eval_pipeline.core.metrics.doc_level import doc_qrels, doc_run, levels_of
    from rag_eval_pipeline.core.metrics.faithfulness import faithfulness_question_metrics
    from rag_eval_pipeline.core.metrics.latency import latency_question_metrics
    from rag_eval_pipeline.core.metrics.retrieval import (
        claim_evidence_availability,
        explode_runs,
        qrels_from_golden,
        retrieval_question_metrics,
    )
    from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
    from rag_eval_pipeline.core.systems.id_mapping import doc_ids_only

    levels = levels_of(golden) if levels is None else _checked_levels(levels)
    qrels = {"chunk": qrels_from_golden(golden)}
    if "doc" in levels:
        qrels["doc"] = doc_qrels(golden, snapshot)
    errored = runs.filter(pl.col("decision") == "error").select("system", "question_id")
    frames, info = [], {}
    for system in runs["system"].unique().sort().to_list():
        sys_runs = runs.filter(pl.col("system") == system)
        long = explode_runs(sys_runs)
        info[system] = {"run_errors": errored.filter(pl.col("system") == system).height}
        for level in levels:
            run_long = long
            if level == "doc":
                made = doc_run(long, snapshot, cfg.ranking_mode)
                run_long = made.run_long
                info[system]["doc_level_dropped_chunks"] = made.dropped_chunks
            ev = retrieval_question_metrics(
                run_long, qrels[level],
                ks=cfg.ks, mode=cfg.ranking_mode, rel_level=cfg.rel_level,
                on_duplicate=cfg.on_duplicate, complete=cfg.complete,
            )
            rows = ev.per_question.with_columns(pl.lit(level, pl.Utf8).alias("level"))
            if level == "chunk" and _system_kind_doc_ids_only(cfg, system, doc_ids_only):
                rows = _not_evaluable(rows, rows.select("system", "question_id"), "doc_ids_only")
            frames.append(rows)
            if level == levels[0]:
                info[system].update({
                    "dropped_duplicates": ev.dropped_duplicates,
                    "missing_questions": len(ev.missing_questions),
                    "unknown_questions": len(ev.unknown_questions),
                })
    # a document-id system retrieved whole documents: its evidence rates read every chunk of each (the mapping
    # judging reads), never only the first chunk rag_runs stores
    documents = JudgingEvidence(snapshot, doc_id_systems(cfg))
    frames.append(claim_evidence_availability(runs, golden, cfg.ks, mode=cfg.ranking_mode, complete=cfg.complete,
                                              doc_evidence=documents)
                  .with_columns(pl.lit("chunk", pl.Utf8).alias("level")))
    frames = [_not_evaluable(f, errored, "run_error") for f in frames]  # errors are reported apart (run_error_rate)
    frames.append(decision_question_metrics(runs, golden, snapshot, abstention_phrases=cfg.judge.abstention_phrases,
                                            doc_evidence=documents))
    frames.append(faithfulness_question_metrics(labels, judgements))
    frames.append(correctness_question_metrics(runs, golden, citation_formats=citation_formats(cfg),
                                               known_chunks=dict(zip(snapshot["chunk_id"].to_list(),
                                                                     snapshot["doc_id"].to_list()))))
    frames.append(latency_question_metrics(runs, latency_systems))  # systems that measured latency (http, python, ...)
    phrases = cfg.judge.abstention_phrases
    if citations is not None:
        from rag_eval_pipeline.core.metrics.citations import citation_question_metrics

        frames.append(citation_question_metrics(runs, citations[0], citations[1], phrases))
    if nugget_labels is not None:
        from rag_eval_pipeline.core.metrics.nuggets import nugget_question_metrics

        frames.append(nugget_question_metrics(runs, golden, nugget_labels, phrases))
    frames.extend(extra or [])  # e.g. model-judged answer quality, already in question_metrics shape
    cols = [c for c in tables.SCHEMAS["question_metrics"] if c != "split"]
    frames = [f if "level" in f.columns else f.with_columns(pl.lit(None, pl.Utf8).alias("level")) for f in frames]
    # one table of questions x metrics x systems rows: concatenated without copying the parts (no rechunk), and
    # the split looked up per row rather than joined (a join would copy every column once more)
    gsplit = golden.select("question_id", "split").unique("question_id", keep="first")
    split = pl.col("question_id").replace_strict(gsplit["question_id"], gsplit["split"], default=None,
                                                 return_dtype=pl.Utf8).alias("split")
    # Each part in one chunk per column, so that the parts' chunks line up: polars copies a frame whose columns'
    # chunks do not line up into one chunk at the next select, ~2x the table at once.
    parts = [tables.conform(f.select(cols).with_columns(split), "question_metrics").rechunk()
             for f in frames if f.height]
    del frames
    if not parts:
        return tables.empty("question_metrics"), info
    # One column at a time, each part's copy of it released as soon as it is copied: the whole table is never
    # held twice (a pl.concat of the parts ends with one copy too, made by polars when the columns' chunks do not
    # line up, while the parts are still alive).
    built = {}
    for col in tables.SCHEMAS["question_metrics"]:
        built[col] = pl.concat([part.get_column(col) for part in parts], rechunk=True)
        parts = [part.drop(col) for part in parts]
    return tables.conform(pl.DataFrame(built), "question_metrics"), info


def _checked_levels(levels: Sequence[str]) -> tuple[str, ...]:
    """``levels`` as a tuple in ``LEVELS`` order; ValueError for an empty list or a level outside ``LEVELS``."""
    from rag_eval_pipeline.core.plain_names import LEVELS

    bad = [lv for lv in levels if lv not in LEVELS]
    if bad or not levels:
        raise ValueError(f"levels must be a non-empty subset of {LEVELS}, got {list(levels)!r}")
    return tuple(lv for lv in LEVELS if lv in levels)


def scored_levels(cfg: EvalConfig, golden: pl.DataFrame, system: str) -> list[str]:
    """The levels (``chunk``, ``doc``) at which ``system``'s retrieval rows get values, by the rules of
    :func:`build_question_metrics`: the levels the golden set judges (``core.metrics.doc_level.levels_of``), less
    ``chunk`` for a system whose ids are document ids (``chunk_map: {doc_ids: true}``: its chunk-level rows are null,
    status ``doc_ids_only``). Output: a list in the golden set's order, possibly empty. Raises nothing.
    Source: trec_eval scores a run only against qrels of the same unit (documents against document qrels)."""
    from rag_eval_pipeline.core.metrics.doc_level import levels_of
    from rag_eval_pipeline.core.systems.id_mapping import doc_ids_only

    levels = list(levels_of(golden))
    if "chunk" in levels and _system_kind_doc_ids_only(cfg, system, doc_ids_only):
        levels.remove("chunk")
    return levels


def doc_id_systems(cfg: EvalConfig) -> frozenset[str]:
    """Names of the configured systems whose ids are document ids (``chunk_map: {doc_ids: true}``).

    Judging and citation support read each of their retrieved or cited ids as every chunk of the
    document (:class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`); retrieval keeps
    the first-chunk mapping. Output: a frozenset of system names (empty when none). Raises ConfigError
    for a malformed ``chunk_map``."""
    from rag_eval_pipeline.core.systems.id_mapping import doc_ids_only

    return frozenset(s.name for s in cfg.systems if doc_ids_only(s))


#: Golden questions per part of :func:`question_metric_batches` (a part of 5,000 questions and two systems is
#: ~660,000 rows, ~350 MiB while it is computed).
QUESTION_BATCH = 5_000


def question_metric_batches(cfg: EvalConfig, snapshot: pl.DataFrame, golden: pl.DataFrame, runs: pl.DataFrame,
                            labels: pl.DataFrame, judgements: pl.DataFrame,
                            extra: list[pl.DataFrame] | None = None, *,
                            citations: tuple[pl.DataFrame, pl.DataFrame] | None = None,
                            nugget_labels: pl.DataFrame | None = None, info: dict | None = None,
                            batch_questions: int = QUESTION_BATCH,
                            levels: Sequence[str] | None = None,
                            latency_systems: Collection[str] | None = None) -> Iterator[pl.DataFrame]:
    """:func:`build_question_metrics` of the golden questions ``batch_questions`` at a time: the question_metrics
    table in parts (a generator; each part is computed when it is asked for), so that a suite of 100,000
    questions never holds its ~13 million rows at once.

    The parts hold exactly the rows of :func:`build_question_metrics` on the whole input, batch after batch
    (golden questions in golden order; run, label and citation rows of questions outside the golden set go
    with the first batch, where they are counted as before). Every per-question metric reads only its own
    question's rows, except three facts taken over the whole input: the retrieval levels (``levels``, below),
    which systems measured latency at all (``latency_systems``, decided once over ``runs`` and given to every
    batch) and which systems ran (a system without a run row gets no rows): when some batch would not see a
    system of the whole input, the table is computed in one part instead, as before. A golden set of at most
    ``batch_questions`` questions is one part (the rows in the same order as :func:`build_question_metrics`).
    ``info``: when given, filled with the counts :func:`build_question_metrics` returns (summed over parts).
    ``levels``: the retrieval levels scored, decided once from the whole golden set and given to every batch
    (a batch without any ``relevant_docs`` is still scored at document level when the whole set is); None =
    ``levels_of(golden)``. ``latency_systems``: None = ``latency_systems(runs)``. A question shard
    (``core/shards.py``) passes the levels of the whole golden set, of which its ``golden`` is a part, and every
    system of its runs as ``latency_systems`` (the merge drops the rows of systems that measured none).
    Raises what :func:`build_question_metrics` raises; ValueError for ``batch_questions`` < 1.
    """
    from rag_eval_pipeline.core.metrics.doc_level import levels_of

    if batch_questions < 1:
        raise ValueError(f"batch_questions must be >= 1, got {batch_questions!r}")
    levels = levels_of(golden) if levels is None else _checked_levels(levels)
    if latency_systems is None:
        from rag_eval_pipeline.core.metrics.latency import latency_systems as measured_latency

        latency_systems = measured_latency(runs)
    ids = golden["question_id"].unique(maintain_order=True)
    batches = [ids.slice(start, batch_questions) for start in range(0, len(ids), batch_questions)]
    if len(batches) > 1 and not _batches_see_every_system(runs, ids, batches):
        batches = [ids]
    if len(batches) <= 1:
        qm, got = build_question_metrics(cfg, snapshot, golden, runs, labels, judgements, extra,
                                         citations=citations, nugget_labels=nugget_labels, levels=levels,
                                         latency_systems=latency_systems)
        if info is not None:
            info.update(got)
        yield qm
        return
    for i, batch in enumerate(batches):
        mine = pl.col("question_id").is_in(batch.implode())
        if i == 0:  # rows of questions outside the golden set: counted once, as in one pass
            mine = mine | ~pl.col("question_id").is_in(ids.implode())

        def part(frame: pl.DataFrame | None, keep: pl.Expr = mine) -> pl.DataFrame | None:
            return None if frame is None else frame.filter(keep)

        qm, got = build_question_metrics(
            cfg, snapshot, golden.filter(pl.col("question_id").is_in(batch.implode())), runs.filter(mine),
            labels.filter(mine), judgements.filter(mine), [f.filter(mine) for f in extra or []],
            citations=None if citations is None else (citations[0].filter(mine), citations[1].filter(mine)),
            nugget_labels=part(nugget_labels), levels=levels, latency_systems=latency_systems)
        if info is not None:
            for system, counts in got.items():
                into = info.setdefault(system, {})
                for name, value in counts.items():
                    into[name] = into.get(name, 0) + value
        yield qm


def _batches_see_every_system(runs: pl.DataFrame, ids: pl.Series, batches: list[pl.Series]) -> bool:
    """Whether every batch of golden question ids (the first also holding the run rows of questions outside
    ``ids``) has a run row of every system of ``runs``: then each batch's systems are those of the whole run
    table."""
    if runs.height == 0:
        return True
    number = {q: i for i, batch in enumerate(batches) for q in batch.to_list()}
    part = pl.Series("_b", [number.get(q, 0) for q in runs["question_id"].to_list()], dtype=pl.Int64)
    present = runs.select("system").with_columns(part).group_by("system").agg(pl.col("_b").n_unique().alias("n"))
    return not present.filter(pl.col("n") < len(batches)).height


def _system_kind_doc_ids_only(cfg: EvalConfig, system: str, doc_ids_only) -> bool:
    """Whether the configured system's retrieved ids were document ids (its chunk-level rows mean nothing)."""
    try:
        return doc_ids_only(cfg.system(system))
    except ConfigError:  # rows of a system no longer configured (a partial re-run keeps them)
        return False


def _not_evaluable(rows: pl.DataFrame, pairs: pl.DataFrame, status: str) -> pl.DataFrame:
    """``rows`` (question_metrics columns) with value, numerator and denominator null and ``status`` set on
    the (system, question_id) pairs listed in ``pairs``; other rows unchanged."""
    if pairs.height == 0 or rows.height == 0:
        return rows
    hit = rows.join(pairs.unique().with_columns(pl.lit(True).alias("_hit")), on=["system", "question_id"],
                    how="left", maintain_order="left")["_hit"].fill_null(False)
    flag = pl.Series("_f", hit)
    return rows.with_columns(
        *(pl.when(flag).then(None).otherwise(pl.col(c)).alias(c) for c in ("value", "numerator", "denominator")),
        pl.when(flag).then(pl.lit(status)).otherwise(pl.col("status")).alias("status"),
    )


def build_summary(cfg: EvalConfig, question_metrics: pl.DataFrame | pl.LazyFrame, golden: pl.DataFrame,
                  snapshot: pl.DataFrame) -> pl.DataFrame:
    """Aggregate per-question metrics by system, split, segment and k, with counts and 95% intervals.
    ``question_metrics`` may be a LazyFrame (a scanned file): it is then read in batches."""
    from rag_eval_pipeline.core.metrics.segments import question_segments
    from rag_eval_pipeline.core.metrics.summary import summarise

    segments = question_segments(golden, snapshot)
    return tables.conform(
        summarise(question_metrics, segments, golden, bootstrap_resamples=cfg.bootstrap_resamples,
                  seed=cfg.seed, small_segment_n=cfg.small_segment_n),
        "metric_summary",
    )


def citation_formats(cfg: EvalConfig) -> dict:
    """system name → its :class:`~rag_eval_pipeline.core.citations.markers.CitationFormat` (the
    ``citation_format`` of its ``systems`` entry; every marker syntax when absent)."""
    from rag_eval_pipeline.core.citations.answers import formats_for_systems

    return formats_for_systems(list(cfg.systems))
