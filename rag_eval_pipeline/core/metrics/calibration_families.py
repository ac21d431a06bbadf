"""Judge calibration per verdict family beside faithfulness: citation support and nugget coverage.

Each family is calibrated on its own (a judge can be good at one and poor at the other), with
:func:`~rag_eval_pipeline.core.metrics.calibration.calibrate` over three labels, SUPPORTED / PARTIAL /
NOT_SUPPORTED, and the result's ``level`` set to the family name, so that ``judge_calibration`` holds
one row per judge key and family (Cohen's kappa, 1960; validating a judge on hand labels as ARES,
Saad-Falcon et al., NAACL 2024):

- ``citation_support``: items are (system, question_id, claim_id) of ``citation_claims`` whose
  claim was judged against its cited chunks; the judge's label is the joint verdict. People label the
  claim with its cited chunks (label rows with ``family: citation_support``); a row whose
  ``passages`` name other chunks than the claim's judged ones is not the same item and is left out
  (counted in ``n_excluded_human``).
- ``nugget_coverage``: items are (system, question_id, nugget_id) of ``nugget_labels``; people label
  the nugget against the answer (``family: nugget_coverage``, ``claim_id`` = the golden claim id).

Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

from rag_eval_pipeline.core.metrics.calibration import calibrate_all
from rag_eval_pipeline.core.metrics.calibration_results import CalibrationResult
from rag_eval_pipeline.core.plain_names import VERDICT_FAMILIES

_LEVELS = ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED")
#: The calibration mapping of both families (stored with every result). A judge tie between repeats
#: (majority vote's NOT_MENTIONED) reads as NOT_SUPPORTED.
SUPPORT_MAPPING: dict[str, Any] = {
    "judge_rule": "label", "judge": {**{v: v for v in _LEVELS}, "NOT_MENTIONED": "NOT_SUPPORTED"},
    "human_rule": "label", "human": {v: v for v in _LEVELS}, "labels": list(_LEVELS),
}
_JUDGE_COLS = ["system", "question_id", "claim_id", "verdict", "repeat", "judge", "judge_model", "prompt_sha256"]


def family_judge_labels(family: str, table: pl.DataFrame) -> pl.DataFrame:
    """The judge's labels of ``family`` in the shape :func:`calibrate` reads (judge_labels columns).

    Input: ``citation_claims`` (family "citation_support": claims judged against their cited chunks,
    status judged or judge_error) or ``nugget_labels`` ("nugget_coverage"; ``nugget_id`` becomes
    ``claim_id``). Output: system, question_id, claim_id, verdict, repeat, judge, judge_model,
    prompt_sha256. Raises ValueError for an unknown family.
    """
    if family == "citation_support":
        t = table.filter(pl.col("needs_citation") & pl.col("status").is_in(["judged", "judge_error"]))
        return t.select(_JUDGE_COLS)
    if family == "nugget_coverage":
        return table.rename({"nugget_id": "claim_id"}).select(_JUDGE_COLS)
    raise ValueError(f"unknown verdict family {family!r}; expected one of {list(VERDICT_FAMILIES)}")


def family_human_labels(family: str, rows: Sequence[Mapping[str, Any]],
                        judged: Mapping[tuple[str, str, str], str] | None = None) -> tuple[pl.DataFrame, int]:
    """People's labels of ``family`` from rows of
    :func:`~rag_eval_pipeline.core.judges.human.read_human_label_rows`: (frame with system,
    question_id, claim_id, verdict, annotator, content_sha256, line; rows left out). For
    citation support, ``judged`` maps (system, question_id, claim_id) to the claim's judged chunks
    joined by "|" (sorted); a label over other passages is left out."""
    keep, dropped = [], 0
    for r in rows:
        if r.get("family", "faithfulness") != family:
            continue
        if family == "citation_support" and r.get("passages") and judged is not None:
            want = judged.get((r["system"], r["question_id"], r["claim_id"]))
            if want is not None and r["passages"] != want:
                dropped += 1
                continue
        keep.append({c: r.get(c) for c in ("system", "question_id", "claim_id", "verdict", "annotator",
                                           "content_sha256", "line")})
    schema = {"system": pl.Utf8, "question_id": pl.Utf8, "claim_id": pl.Utf8, "verdict": pl.Utf8,
              "annotator": pl.Utf8, "content_sha256": pl.Utf8, "line": pl.Int64}
    return pl.DataFrame(keep, schema=schema), dropped


def calibrate_families(rows: Sequence[Mapping[str, Any]], citation_claims: pl.DataFrame | None,
                       nugget_labels: pl.DataFrame | None, *, calibrated_at: str | None = None,
                       source: str | None = None) -> list[CalibrationResult]:
    """One :class:`CalibrationResult` per family and judge key present, ``level`` = the family name.

    Inputs: human label rows (all families; only those of each family are used), the
    ``citation_claims`` and ``nugget_labels`` tables (None or empty = that family is not judged
    here). Output: results for citation_support then nugget_coverage, each sorted by judge key; a
    family with no judge rows gives none. Judge repeats are reduced by majority vote. Raises as
    :func:`~rag_eval_pipeline.core.metrics.calibration.calibrate`.
    """
    out: list[CalibrationResult] = []
    for family, table in (("citation_support", citation_claims), ("nugget_coverage", nugget_labels)):
        if table is None or table.height == 0:
            continue
        judge = family_judge_labels(family, table)
        if judge.height == 0:
            continue
        judged = None
        if family == "citation_support":
            judged = {(s, q, c): "|".join(sorted(j or [])) for s, q, c, j in
                      table.select("system", "question_id", "claim_id", "judged").iter_rows()}
        human, dropped = family_human_labels(family, rows, judged)
        for res in calibrate_all(human, judge, SUPPORT_MAPPING, "claim", calibrated_at=calibrated_at, source=source):
            out.append(dataclasses.replace(res, level=family, n_excluded_human=res.n_excluded_human + dropped))
    return out


def gated_families(metrics) -> dict[str, list[str]]:
    """Which calibration each judge-based gated metric needs: ``{"citation_support": [...],
    "nugget_coverage": [...], "faithfulness": [...]}`` (only the keys with a metric). Citation metrics
    need the citation-support calibration, nugget recall the nugget-coverage one, every other judge-based
    metric the calibration of ``calibration.level`` (called "faithfulness" here). Input: metric names
    (base names or labels). Never raises."""
    from rag_eval_pipeline.core.metrics.names import VERDICT_FAMILY_OF, is_judge_based, metric_info

    out: dict[str, list[str]] = {}
    for m in metrics:
        if not isinstance(m, str) or not is_judge_based(m):
            continue
        info = metric_info(m)
        family = VERDICT_FAMILY_OF.get(info.name if info else m, "faithfulness")
        out.setdefault(family, [])
        if m not in out[family]:
            out[family].append(m)
    return {k: sorted(v) for k, v in out.items()}
