"""Calibration results and their tables: :class:`CalibrationResult`, the calibration history frame
(one row per calibration), the table of the calibration in force per judge key (stale / missing), and
the confusion matrix in Markdown. The agreement figures themselves are computed by
:func:`rag_eval_pipeline.core.metrics.calibration.calibrate`. Nothing here imports Dagster.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.markdown_table import markdown_table
from rag_eval_pipeline.core.tables import SCHEMAS

__all__ = [
    "HISTORY_SCHEMA",
    "TABLE_SCHEMA",
    "CalibrationResult",
    "calibration_table",
    "confusion_markdown",
    "results_from_frame",
    "results_to_frame",
]

#: Columns of the calibration history table (one row per calibration of one judge key and level).
HISTORY_SCHEMA = SCHEMAS["calibration_history"]

#: Columns added after the first release; older history files lack them (read as these defaults).
_ADDED_DEFAULTS: dict[str, Any] = {"n_stale_labels": 0, "stale_labels": "[]", "labellers": "[]", "human_kappa": None,
                                   "human_kappa_reason": None, "human_kappa_n": 0, "human_pairs": "[]"}



@dataclass(frozen=True)
class CalibrationResult:
    """Agreement of one judge key with human labels at one level.

    Fields: ``level`` ("claim" / "response"); ``judge``, ``judge_model``, ``prompt_sha256`` (the
    judge key); ``n`` (items labelled by both, after exclusions); ``kappa`` (Cohen's kappa in
    [-1, 1] or None) and ``kappa_reason`` (None when kappa is a number); ``agreement`` (share of
    items with equal labels, in [0, 1], None when n = 0) with its 95% Wilson interval
    ``agreement_ci_low`` / ``agreement_ci_high``; ``labels`` (display order) and ``confusion``
    (``confusion[i][j]`` = items labelled ``labels[i]`` by people and ``labels[j]`` by the judge);
    ``per_label`` ({label: {"precision", "recall", "support", "predicted"}}, people as the truth,
    precision/recall None when undefined); ``mapping`` (resolved, see module docstring);
    ``n_human_only`` / ``n_judge_only`` (items on one side only); ``n_excluded_human`` /
    ``n_excluded_judge`` (dropped: null or None-mapped label, JUDGE_ERROR); ``calibrated_at``
    (ISO string or None); ``source`` (where the human labels came from, or None);
    ``n_stale_labels`` / ``stale_labels`` (hand labels left out because their item changed since,
    each {system, question_id, claim_id, annotator, line}); ``labellers`` (annotator names);
    ``human_kappa`` / ``human_kappa_reason`` / ``human_kappa_n`` / ``human_pairs`` (agreement
    between people, :func:`inter_labeller_agreement`).
    """

    level: str
    judge: str | None
    judge_model: str | None
    prompt_sha256: str | None
    n: int
    kappa: float | None
    kappa_reason: str | None
    agreement: float | None
    agreement_ci_low: float | None
    agreement_ci_high: float | None
    labels: list[str]
    confusion: list[list[int]]
    per_label: dict[str, dict[str, Any]]
    mapping: dict[str, Any]
    n_human_only: int = 0
    n_judge_only: int = 0
    n_excluded_human: int = 0
    n_excluded_judge: int = 0
    calibrated_at: str | None = None
    source: str | None = None
    n_stale_labels: int = 0
    stale_labels: list[dict[str, Any]] = field(default_factory=list)
    labellers: list[str] = field(default_factory=list)
    human_kappa: float | None = None
    human_kappa_reason: str | None = None
    human_kappa_n: int = 0
    human_pairs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str | None, str | None, str | None]:
        """The judge key ``(judge, judge_model, prompt_sha256)``."""
        return self.judge, self.judge_model, self.prompt_sha256

    def to_row(self) -> dict[str, Any]:
        """One :data:`HISTORY_SCHEMA` row (lists and dicts as JSON strings)."""
        return {
            "calibrated_at": self.calibrated_at, "level": self.level, "judge": self.judge,
            "judge_model": self.judge_model, "prompt_sha256": self.prompt_sha256, "n": self.n,
            "kappa": self.kappa, "kappa_reason": self.kappa_reason, "agreement": self.agreement,
            "agreement_ci_low": self.agreement_ci_low, "agreement_ci_high": self.agreement_ci_high,
            "labels": json.dumps(self.labels, ensure_ascii=False),
            "confusion": json.dumps(self.confusion),
            "per_label": json.dumps(self.per_label, ensure_ascii=False, sort_keys=True),
            "mapping": json.dumps(self.mapping, ensure_ascii=False, sort_keys=True),
            "n_human_only": self.n_human_only, "n_judge_only": self.n_judge_only,
            "n_excluded_human": self.n_excluded_human, "n_excluded_judge": self.n_excluded_judge,
            "source": self.source,
            "n_stale_labels": self.n_stale_labels,
            "stale_labels": json.dumps(self.stale_labels, ensure_ascii=False),
            "labellers": json.dumps(self.labellers, ensure_ascii=False),
            "human_kappa": self.human_kappa, "human_kappa_reason": self.human_kappa_reason,
            "human_kappa_n": self.human_kappa_n,
            "human_pairs": json.dumps(self.human_pairs, ensure_ascii=False),
        }



def results_to_frame(results: Iterable[CalibrationResult]) -> pl.DataFrame:
    """Calibration results as a :data:`HISTORY_SCHEMA` frame, one row per result, in order."""
    return pl.DataFrame([r.to_row() for r in results], schema=HISTORY_SCHEMA)


def results_from_frame(df: pl.DataFrame | None) -> list[CalibrationResult]:
    """Inverse of :func:`results_to_frame` (None or an empty frame → ``[]``).

    Raises SchemaError when a :data:`HISTORY_SCHEMA` column is missing.
    """
    if df is None or df.height == 0:
        return []
    miss = [c for c in HISTORY_SCHEMA if c not in df.columns and c not in _ADDED_DEFAULTS]
    if miss:
        raise SchemaError(f"calibration history: missing columns {miss}")
    out = []
    for r in df.iter_rows(named=True):
        r = {**_ADDED_DEFAULTS, **r}
        out.append(CalibrationResult(
            level=r["level"], judge=r["judge"], judge_model=r["judge_model"], prompt_sha256=r["prompt_sha256"],
            n=int(r["n"] or 0), kappa=r["kappa"], kappa_reason=r["kappa_reason"], agreement=r["agreement"],
            agreement_ci_low=r["agreement_ci_low"], agreement_ci_high=r["agreement_ci_high"],
            labels=json.loads(r["labels"] or "[]"), confusion=json.loads(r["confusion"] or "[]"),
            per_label=json.loads(r["per_label"] or "{}"), mapping=json.loads(r["mapping"] or "{}"),
            n_human_only=int(r["n_human_only"] or 0), n_judge_only=int(r["n_judge_only"] or 0),
            n_excluded_human=int(r["n_excluded_human"] or 0), n_excluded_judge=int(r["n_excluded_judge"] or 0),
            calibrated_at=r["calibrated_at"], source=r["source"],
            n_stale_labels=int(r["n_stale_labels"] or 0), stale_labels=json.loads(r["stale_labels"] or "[]"),
            labellers=json.loads(r["labellers"] or "[]"), human_kappa=r["human_kappa"],
            human_kappa_reason=r["human_kappa_reason"], human_kappa_n=int(r["human_kappa_n"] or 0),
            human_pairs=json.loads(r["human_pairs"] or "[]"),
        ))
    return out


#: Columns of :func:`calibration_table`.
TABLE_SCHEMA = SCHEMAS["judge_calibration"]


def _latest(results: list[CalibrationResult]) -> CalibrationResult:
    # stable: among equal timestamps (or none) the later entry of the list wins
    order = sorted(range(len(results)), key=lambda i: (results[i].calibrated_at or "", i))
    return results[order[-1]]


def calibration_table(
    results: Iterable[CalibrationResult],
    current_keys: Iterable[Sequence[str | None]] | None = None,
    levels: Iterable[str] | None = None,
) -> pl.DataFrame:
    """The calibration in force for each current judge key and level, flagged stale or missing.

    Inputs: ``results`` (calibrations, e.g. the history plus this run's); ``current_keys``
    (the (judge, judge_model, prompt_sha256) keys producing labels now; None = every key in
    ``results``); ``levels`` (None = the levels in ``results``, or ("claim",) when there is none).
    Output: :data:`TABLE_SCHEMA` frame, one row per current key × level:

    1. the latest calibration (by ``calibrated_at``, then list order) of exactly that key with
       n > 0 → ``stale`` False, ``missing`` False;
    2. else the latest calibration with n > 0 at that level for another key → its figures, the
       ``calibrated_*`` columns naming the key it was made for, ``stale`` True: the judge, model
       or prompt changed since (recalibrate on any such change);
    3. else the latest calibration of that key with n = 0 → ``stale`` False, ``missing`` False,
       kappa null with its reason (the hand labels do not cover the items judged);
    4. else nulls with ``missing`` True.

    Never raises for valid results.
    """
    results = list(results)
    keys = ([tuple(k) for k in current_keys] if current_keys is not None
            else sorted({r.key for r in results}, key=lambda k: tuple(str(x) for x in k)))
    lv = list(levels) if levels is not None else (sorted({r.level for r in results}) or ["claim"])
    rows = []
    for level in lv:
        at_level = [r for r in results if r.level == level]
        for key in keys:
            same = [r for r in at_level if r.key == key]
            same_n = [r for r in same if r.n > 0]
            other_n = [r for r in at_level if r.key != key and r.n > 0]
            stale = False
            chosen: CalibrationResult | None
            if same_n:
                chosen = _latest(same_n)
            elif other_n:
                chosen, stale = _latest(other_n), True
            else:
                chosen = _latest(same) if same else None
            row: dict[str, Any] = {"level": level, "judge": key[0], "judge_model": key[1], "prompt_sha256": key[2],
                                   "stale": stale, "missing": chosen is None}
            if chosen is not None:
                d = chosen.to_row()
                row.update({k: d[k] for k in ("calibrated_at", "n", "kappa", "kappa_reason", "agreement",
                                              "agreement_ci_low", "agreement_ci_high", "labels", "confusion",
                                              "per_label", "mapping", "n_stale_labels", "stale_labels",
                                              "labellers", "human_kappa", "human_kappa_reason", "human_kappa_n",
                                              "human_pairs")})
                row.update(calibrated_judge=chosen.judge, calibrated_judge_model=chosen.judge_model,
                           calibrated_prompt_sha256=chosen.prompt_sha256)
            else:
                row["kappa_reason"] = "no calibration against human labels exists for this judge"
            rows.append(row)
    return pl.DataFrame(rows, schema=TABLE_SCHEMA) if rows else pl.DataFrame(schema=TABLE_SCHEMA)


def confusion_markdown(labels: Sequence[str], confusion: Sequence[Sequence[int]]) -> str:
    """A Markdown table of a confusion matrix: rows = human label, columns = judge label.

    Inputs: ``labels`` (k names) and a k × k matrix of counts. Output: a Markdown string
    (header, separator, k rows). Raises ValueError when the matrix is not k × k.
    """
    if len(confusion) != len(labels) or any(len(r) != len(labels) for r in confusion):
        raise ValueError(f"confusion matrix must be {len(labels)} x {len(labels)}")
    return markdown_table(["human \\ judge", *labels], ([lab, *r] for lab, r in zip(labels, confusion)))
