"""Per-question nugget recall (completeness) from the ``nugget_labels`` table.

Definitions (docs/METRICS.md, "Completeness"), the TREC 2024 RAG track's AutoNuggetizer scores
(Pradeep et al., arXiv 2411.09607; as Vectara's open-rag-eval computes them), per answered run of a
question with golden claims; a nugget's score s is 1 for SUPPORTED, 0.5 for PARTIAL, 0 for
NOT_SUPPORTED, and strict scores count SUPPORTED only:

- ``nugget_recall_strict_vital`` = vital nuggets SUPPORTED / vital nuggets;
- ``nugget_recall_strict_all`` = nuggets SUPPORTED / nuggets;
- ``nugget_recall_vital`` = sum of s over vital nuggets / vital nuggets;
- ``nugget_recall_all`` = sum of s over nuggets / nuggets;
- ``nugget_recall_weighted`` = sum of w·s / sum of w, with w = 1 for vital and 0.5 for okay.

Worked example: nuggets "30 calendar days" (vital), "from delivery" (vital), "from the last parcel"
(okay); an answer stating the first two: strict vital 2/2 = 1.0, strict all 2/3, weighted
(1 + 1 + 0) / (1 + 1 + 0.5) = 0.8.

JUDGE_ERROR verdicts are left out of numerator and denominator; repeats are pooled. Not evaluable
is not zero: null with ``status`` "no_nuggets" (the question has no claims: absent and clarify
questions), "no_vital_nuggets" (the two vital scores, when every nugget is okay), the run's
status when it is not an answer ("abstained", "clarify", "run_error", "abstention_text_in_answer",
"no_claims"; abstaining is measured by the decision metrics, not scored 0 here), "judge_error".
Runs of questions outside the golden set are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from rag_eval_pipeline.core.citations.answers import answer_status
from rag_eval_pipeline.core.judges.abstention import phrases_from_config
from rag_eval_pipeline.core.judges.base import SUPPORT_SCORES
from rag_eval_pipeline.core.metrics.names import NUGGET_METRICS as NUGGET_METRICS  # re-exported
from rag_eval_pipeline.core.tables import SCHEMAS

OUTPUT_SCHEMA = pl.Schema({k: v for k, v in SCHEMAS["question_metrics"].items() if k != "split"})
#: Weight of a nugget in ``nugget_recall_weighted`` by importance.
IMPORTANCE_WEIGHTS = {"vital": 1.0, "okay": 0.5}


def nugget_scores(labels: list[tuple[str, str]]) -> dict[str, tuple[float | None, float | None, str]]:
    """The five scores of one answer from ``(importance, verdict)`` pairs (every repeat; importance
    None = vital). Output: metric → (numerator, denominator, status), status "ok" or why null.
    Raises KeyError for an importance outside ``vital`` / ``okay``."""
    scored = [((imp or "vital"), v) for imp, v in labels if v != "JUDGE_ERROR"]
    for imp, _ in scored:
        IMPORTANCE_WEIGHTS[imp]  # noqa: B018 - an unknown importance is an error, not a silent weight
    has_vital = any((imp or "vital") == "vital" for imp, _ in labels)
    vital = [v for imp, v in scored if imp == "vital"]

    def lenient(vs: list[str]) -> float:
        return sum(SUPPORT_SCORES[v] for v in vs)

    def pack(num: float, den: float, empty: str) -> tuple:
        return (num, den, "ok") if den else (None, None, empty)

    err = "judge_error"
    return {
        "nugget_recall_strict_vital": pack(sum(v == "SUPPORTED" for v in vital), len(vital),
                                           err if has_vital else "no_vital_nuggets"),
        "nugget_recall_strict_all": pack(sum(v == "SUPPORTED" for _, v in scored), len(scored), err),
        "nugget_recall_vital": pack(lenient(vital), len(vital), err if has_vital else "no_vital_nuggets"),
        "nugget_recall_all": pack(lenient([v for _, v in scored]), len(scored), err),
        "nugget_recall_weighted": pack(sum(IMPORTANCE_WEIGHTS[i] * SUPPORT_SCORES[v] for i, v in scored),
                                       sum(IMPORTANCE_WEIGHTS[i] for i, _ in scored), err),
    }


def nugget_question_metrics(rag_runs: pl.DataFrame, golden: pl.DataFrame, nugget_labels: pl.DataFrame,
                            abstention_phrases: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Nugget recall per (system, question) (definitions in the module docstring).

    Inputs: ``rag_runs`` (system, question_id, decision, answer), ``golden_set`` (question_id,
    claims), ``nugget_labels`` from :func:`~rag_eval_pipeline.core.completeness.judge_nuggets`,
    ``abstention_phrases`` (as when the labels were built). Output: question_metrics rows without
    ``split``, one per (run of a golden question, metric in :data:`NUGGET_METRICS`), runs in table
    order; values in [0, 1] or null. A judged answer with no label row (the labels were built for
    other runs) is "judge_error". Never NaN.
    """
    phrases = phrases_from_config(abstention_phrases)
    n_claims = {q: len(c or []) for q, c in golden.select("question_id", "claims").iter_rows()}
    by: dict[tuple, list[tuple[str, str]]] = defaultdict(list)
    for system, qid, imp, verdict in nugget_labels.select("system", "question_id", "importance",
                                                          "verdict").iter_rows():
        by[(system, qid)].append((imp, verdict))
    rows = []
    for system, qid, decision, answer in rag_runs.select("system", "question_id", "decision", "answer").iter_rows():
        if qid not in n_claims:
            continue
        status = "no_nuggets" if not n_claims[qid] else answer_status(decision, answer, phrases)
        if status is None and not by.get((system, qid)):
            status = "judge_error"
        scores = nugget_scores(by[(system, qid)]) if status is None else {m: (None, None, status)
                                                                          for m in NUGGET_METRICS}
        for metric in NUGGET_METRICS:
            num, den, st = scores[metric]
            value: float | None = None
            numerator: float | None = None
            denominator: float | None = None
            if st == "ok" and num is not None and den:
                value, numerator, denominator = num / den, float(num), float(den)
            rows.append({"system": system, "question_id": qid, "metric": metric, "k": None, "value": value,
                         "numerator": numerator, "denominator": denominator, "status": st, "ranking_mode": None})
    return pl.DataFrame(rows, schema=OUTPUT_SCHEMA)
