"""Completeness: the golden set's reviewed claims (the nuggets) judged against each answer.

Faithfulness cannot see what an answer leaves out; the reference can (project design: omissions
need the reference). Each golden claim is a nugget (TREC 2024 RAG's AutoNuggetizer, Pradeep et al.,
arXiv 2411.09607), ``vital`` (must be in a good answer; the default) or ``okay`` (worthwhile). Per
answered run whose question has claims, every nugget is judged against the answer text (inline
citation markers stripped) through the judge's
:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport` capability, family
``nugget_coverage``: SUPPORTED (the answer states it), PARTIAL (in part), NOT_SUPPORTED, or
JUDGE_ERROR. A SUPPORTED or PARTIAL verdict needs its quote found by code in the answer, else it is
stored as NOT_SUPPORTED (:data:`~rag_eval_pipeline.core.citations.judging.DOWNGRADE_PREFIX`).

Runs that are not answers (abstained, clarify, run_error, abstention text, blank: the statuses of
:func:`~rag_eval_pipeline.core.citations.answers.answer_status`) and questions without claims get no
rows: the metrics (:mod:`rag_eval_pipeline.core.metrics.nuggets`) report them null, counted apart,
never 0. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl

from rag_eval_pipeline.core.citations.answers import answer_status
from rag_eval_pipeline.core.citations.judging import call_support, checked_verdicts
from rag_eval_pipeline.core.citations.markers import DEFAULT_FORMAT, CitationFormat, strip_markers
from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.judges.abstention import phrases_from_config
from rag_eval_pipeline.core.judges.base import JudgesSupport, SupportRequest, judge_concurrency
from rag_eval_pipeline.core.tables import SCHEMAS, conform

FAMILY = "nugget_coverage"


def judge_nuggets(
    rag_runs: pl.DataFrame,
    golden: pl.DataFrame,
    judge: Any,
    *,
    formats: Mapping[str, CitationFormat] | None = None,
    known_chunks: Collection[str] | None = None,
    repeats: int = 1,
    abstention_phrases: Mapping[str, Any] | None = None,
) -> pl.DataFrame:
    """Judge every golden nugget against every answer (module docstring) ``repeats`` times.

    Inputs: ``rag_runs`` (system, question_id, decision, answer), ``golden_set`` (question_id,
    question, claims with ``importance``; null importance = vital), a judge (with
    :class:`JudgesSupport`; without it every verdict is JUDGE_ERROR with the reason), ``formats``
    (system → CitationFormat, for stripping markers), ``known_chunks`` (snapshot chunk ids, so that
    ``[doc_id]`` markers are recognised), ``repeats`` (>= 1), ``abstention_phrases``.
    Output: the ``nugget_labels`` table (core/tables.py), one row per (system, question, nugget,
    repeat), runs in table order and nuggets in golden order. Raises ValueError for repeats < 1,
    SchemaError for a missing column.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    for df, name, cols in ((rag_runs, "rag_runs", ("system", "question_id", "decision", "answer")),
                           (golden, "golden_set", ("question_id", "question", "claims"))):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise SchemaError(f"table {name!r}: missing columns {missing}")
    pending = _pending(rag_runs, golden, formats, known_chunks, abstention_phrases)
    questions = dict(golden.select("question_id", "question").iter_rows())
    supports = isinstance(judge, JudgesSupport)
    rows: list[dict[str, Any]] = []
    for rep in range(repeats):
        requests = [SupportRequest(FAMILY, tuple(t for _, t, _ in items), (text,), tuple(i for i, _, _ in items),
                                   ("answer",), system, qid, questions.get(qid, ""), rep)
                    for system, qid, text, items in pending]
        results = _run(judge, requests) if supports else [None] * len(requests)
        for (system, qid, _, items), checked in zip(pending, results):
            for nid, nugget, importance in items:
                v = checked[nid] if checked is not None else (
                    "JUDGE_ERROR", None, False, None, "not judged",
                    f"judge {getattr(judge, 'name', judge)!r} cannot judge nugget coverage "
                    "(it does not implement JudgesSupport)")
                rows.append({"system": system, "question_id": qid, "nugget_id": nid, "nugget": nugget,
                             "importance": importance, "verdict": v[0], "quote": v[1], "quote_found": v[2],
                             "justification": v[4], "repeat": rep, "error": v[5]})
    ident = {"judge": getattr(judge, "name", None), "judge_model": getattr(judge, "model", None),
             "prompt_sha256": judge.support_prompt_sha256(FAMILY) if supports else None}
    return conform(pl.DataFrame([{**r, **ident} for r in rows], schema=SCHEMAS["nugget_labels"]), "nugget_labels")


def _pending(rag_runs: pl.DataFrame, golden: pl.DataFrame, formats: Mapping[str, CitationFormat] | None,
             known_chunks: Collection[str] | None, abstention_phrases: Mapping[str, Any] | None
             ) -> list[tuple[str, str, str, list[tuple[str, str, str]]]]:
    """(system, question_id, answer without markers, [(nugget_id, nugget, importance)]) of every
    answered run whose question has claims."""
    phrases = phrases_from_config(abstention_phrases)
    nuggets = {q: [(c["claim_id"], c["text"], c.get("importance") or "vital") for c in (claims or [])]
               for q, claims in golden.select("question_id", "claims").iter_rows()}
    pending = []
    for system, qid, decision, answer in rag_runs.select("system", "question_id", "decision", "answer").iter_rows():
        items = nuggets.get(qid) or []
        if not items or answer_status(decision, answer, phrases) is not None:
            continue
        text = strip_markers(answer, (formats or {}).get(system, DEFAULT_FORMAT), known_chunks=known_chunks)
        pending.append((system, qid, text, items))
    return pending


def nugget_requests(rag_runs: pl.DataFrame, golden: pl.DataFrame, *,
                    formats: Mapping[str, CitationFormat] | None = None, known_chunks: Collection[str] | None = None,
                    abstention_phrases: Mapping[str, Any] | None = None) -> list[SupportRequest]:
    """What :func:`judge_nuggets` will ask a judge in one repeat (one request per answered run of a
    question with claims), without asking. Inputs as :func:`judge_nuggets`."""
    questions = dict(golden.select("question_id", "question").iter_rows())
    return [SupportRequest(FAMILY, tuple(t for _, t, _ in items), (text,), tuple(i for i, _, _ in items),
                           ("answer",), system, qid, questions.get(qid, ""), 0)
            for system, qid, text, items in _pending(rag_runs, golden, formats, known_chunks, abstention_phrases)]


def _run(judge: Any, requests: list[SupportRequest]) -> list[dict[str, tuple]]:
    def one(req: SupportRequest) -> dict[str, tuple]:
        return checked_verdicts(req, call_support(judge, req))

    workers = judge_concurrency(judge)
    if workers > 1 and len(requests) > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="nuggets") as pool:
            return list(pool.map(one, requests))
    return [one(r) for r in requests]


def omitted_nuggets(nugget_labels: pl.DataFrame, repeat: int = 0) -> pl.DataFrame:
    """The nuggets each answer left out: per (system, question_id), the ``nugget_id``, ``nugget`` and
    ``importance`` of the nuggets judged NOT_SUPPORTED in ``repeat``, vital first, then golden order.

    Input: a ``nugget_labels`` frame. Output: columns system, question_id, nugget_id, nugget,
    importance (one row per omitted nugget); empty when nothing was omitted. Never raises for a
    conforming frame.
    """
    df = nugget_labels.filter((pl.col("repeat") == repeat) & (pl.col("verdict") == "NOT_SUPPORTED"))
    return (df.with_row_index("_order")
            .sort(["system", "question_id", pl.col("importance") != "vital", "_order"])
            .select("system", "question_id", "nugget_id", "nugget", "importance"))
