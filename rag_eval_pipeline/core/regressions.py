"""Regression tracking without Dagster: the questions that flipped worse against the baseline, kept across
runs, and the blocking gate failures a verdict names.

A regressed question is one the paired test of a gate found worse for the candidate than for the baseline
(``gate_results.regressed_questions``, computed by :func:`rag_eval_pipeline.core.gates.compute_gate_verdict`).
Keeping every such question as a lasting case, and reporting each run whether it still fails, is the
"failures become regression cases" practice of evaluation-driven development (as in OpenAI Evals' and
Braintrust's regression datasets); the shell's ``regression_cases`` asset calls :func:`track_regressions`
with the table it wrote last time.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.gates import regression_case_status

#: The columns a regression case keeps across runs: the declared ``regression_cases`` schema without the
#: two that every run recomputes (``current_value``, ``status``).
REGRESSION_COLUMNS = {c: t for c, t in tables.SCHEMAS["regression_cases"].items()
                      if c not in ("current_value", "status")}
_KEY = ("system", "metric", "k", "question_id")


def failed_gates(gate_results: pl.DataFrame) -> list[str]:
    """``"system/metric: reason"`` of every blocking gate row that did not pass (version mismatches included;
    a document-level gate's metric reads ``metric (doc)``).

    Input: a ``gate_results`` table (columns system, metric, blocking, passed, reason; ``level`` optional).
    Output: one string per failing blocking row, in table order; empty when every blocking gate passed."""
    failed = gate_results.filter(pl.col("blocking") & ~pl.col("passed"))
    return [f"{r['system']}/{r['metric']}{' (doc)' if r.get('level') == 'doc' else ''}: {r['reason']}"
            for r in failed.iter_rows(named=True)]


def track_regressions(previous: pl.DataFrame | None, question_metrics: pl.DataFrame | pl.LazyFrame,
                      gate_results: pl.DataFrame,
                      *, run_id: str | None, now: str) -> tuple[pl.DataFrame, int]:
    """The regression cases after this run, and how many are new.

    Inputs: ``previous``, the last ``regression_cases`` table (None before the first); this run's
    ``question_metrics`` (system, metric, k, question_id, value) and ``gate_results`` (system, metric, k,
    regressed_questions; ``question_metrics`` may be a LazyFrame: only the rows of the gates' regressed
    questions and of the cases are collected); ``run_id`` and ``now`` (ISO 8601 UTC), recorded on a new case.
    Output: ``(cases, new)``: every previous case (never dropped) plus one row per (system, metric, k,
    question) newly listed in a gate's ``regressed_questions``, with ``value_when_found`` (the candidate's
    value then; null when it had none), ``current_value`` (this run's value, null when it has none) and
    ``status`` (:func:`~rag_eval_pipeline.core.gates.regression_case_status`: ``no_value_now``; ``recovered`` when
    better than when found by the metric's direction; else ``still_regressed``). ``k`` null matches ``k`` null.
    Raises polars' ColumnNotFoundError when a table lacks a declared column.
    """
    known = pl.DataFrame(schema=REGRESSION_COLUMNS) if previous is None else previous.select(list(REGRESSION_COLUMNS))
    scanned = question_metrics.lazy()
    seen = {tuple(r) for r in known.select(_KEY).iter_rows()}
    new_rows = []
    for r in gate_results.iter_rows(named=True):
        if not r["regressed_questions"]:
            continue
        system, metric, k = r["system"], r["metric"], r["k"]
        per_q = scanned.filter(
            (pl.col("system") == system) & (pl.col("metric") == metric)
            & (pl.col("k").is_null() if k is None else pl.col("k") == k)
        )
        values = dict(per_q.select("question_id", "value").collect(engine="streaming").iter_rows())
        for q in r["regressed_questions"]:
            if (system, metric, k, q) not in seen:
                seen.add((system, metric, k, q))
                new_rows.append({"system": system, "metric": metric, "k": k, "question_id": q,
                                 "value_when_found": values.get(q), "first_seen_run": run_id, "first_seen_at": now})
    cases = pl.concat([known, pl.DataFrame(new_rows, schema=REGRESSION_COLUMNS)]) if new_rows else known
    current = (scanned.select(*_KEY, pl.col("value").alias("current_value"))
               .join(cases.select(_KEY).lazy(), on=list(_KEY), how="semi", nulls_equal=True)  # only the cases' rows
               .collect(engine="streaming"))
    cases = cases.join(current, on=list(_KEY), how="left", nulls_equal=True)
    return regression_case_status(cases), len(new_rows)  # oriented by each metric's direction
