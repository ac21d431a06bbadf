"""Per-question citation metrics from the ``citation_claims`` and ``citations`` tables.

Definitions (docs/METRICS.md, "Citations"), per answered run; a claim "needs a citation" unless it
is a question or speaks in the first person; JUDGE_ERROR verdicts are left out of numerator and
denominator (counted by the summary's ``judge_errors``); with several judge repeats the counts are
pooled (numerator and denominator summed over repeats):

- ``citation_recall`` (ALCE, Gao et al., EMNLP 2023): claims whose cited chunks *jointly* SUPPORT
  them / claims that need a citation (an uncited claim counts as not supported).
- ``citation_precision`` (ALCE): precise citations / citations of claims that need one (a citation
  is precise unless it fails its claim; see :mod:`rag_eval_pipeline.core.citations.judging`).
- ``uncited_claim_rate``: claims with no citation at all / claims that need a citation.
- ``weighted_citation_precision`` / ``weighted_citation_recall`` / ``weighted_citation_f1`` (the
  support view of the TREC 2024 RAG track, Thakur et al., arXiv 2504.15205; as Vectara's
  open-rag-eval computes it): a (unit, citation) pair — unit = sentence, list item or ';'-clause —
  is *full* support (1) when every claim of the unit that needs a citation is SUPPORTED by that
  chunk alone, *partial* (0.5) when at least one is SUPPORTED or PARTIAL, *none* (0) otherwise (an
  unjudgeable or unresolved citation is none). Precision = sum of pair scores / pairs; recall =
  sum over units of the unit's best pair score (0 for an uncited unit) / units with a claim that
  needs a citation; F1 = 2PR / (P + R) (0 when P + R = 0; null when either is null).
- validity, over the answer's distinct citations (each cited chunk or document once, whichever
  claim it is bound to; judge repeats do not change it): ``citation_validity_rate`` (in the
  snapshot, retrieved, active and readable / citations), ``cited_not_in_snapshot_rate``,
  ``cited_not_retrieved_rate``, ``cited_inactive_rate`` (withdrawn or replaced),
  ``citation_acl_leak_rate`` (the question's user groups may not read it), and
  ``unresolved_citation_rate`` (unparseable or out-of-range marker references / all references).

Not evaluable is not zero: value, numerator and denominator are null and ``status`` says why —
the run's status when it is not an answer ("abstained", "clarify", "run_error",
"abstention_text_in_answer", "no_claims"), "no_claims" (no claim needs a citation), "no_citations"
(precision, the weighted view's precision and F1, and validity, for an answer that cites nothing),
"judge_error" (every verdict needed is JUDGE_ERROR). ``k`` and ``ranking_mode`` are null.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import polars as pl

from rag_eval_pipeline.core.citations.answers import answer_status
from rag_eval_pipeline.core.judges.abstention import phrases_from_config
from rag_eval_pipeline.core.judges.base import SUPPORT_SCORES
from rag_eval_pipeline.core.metrics.names import CITATION_METRICS as CITATION_METRICS  # re-exported
from rag_eval_pipeline.core.tables import SCHEMAS

OUTPUT_SCHEMA = pl.Schema({k: v for k, v in SCHEMAS["question_metrics"].items() if k != "split"})
VALIDITY_METRICS = {"citation_validity_rate": None, "cited_not_in_snapshot_rate": ("not_in_snapshot",),
                    "cited_not_retrieved_rate": ("not_retrieved",), "cited_inactive_rate": ("withdrawn", "replaced"),
                    "citation_acl_leak_rate": ("acl_restricted",)}


def citation_question_metrics(rag_runs: pl.DataFrame, citation_claims: pl.DataFrame, citations: pl.DataFrame,
                              abstention_phrases: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Citation metrics per (system, question) (definitions in the module docstring).

    Inputs: ``rag_runs`` (system, question_id, decision, answer: which runs are answers),
    ``citation_claims`` and ``citations`` from
    :func:`~rag_eval_pipeline.core.citations.judging.judge_citations`, ``abstention_phrases``
    (``judge.abstention_phrases``, as when the tables were built). Output: question_metrics rows
    without ``split``, one per (run, metric in :data:`CITATION_METRICS`), runs in table order;
    values in [0, 1] or null. Never NaN.
    """
    phrases = phrases_from_config(abstention_phrases)
    claims_by: dict[tuple, list[dict]] = defaultdict(list)
    for r in citation_claims.iter_rows(named=True):
        claims_by[(r["system"], r["question_id"])].append(r)
    cites_by: dict[tuple, list[dict]] = defaultdict(list)
    for r in citations.iter_rows(named=True):
        cites_by[(r["system"], r["question_id"])].append(r)
    rows: list[dict] = []
    for system, qid, decision, answer in rag_runs.select("system", "question_id", "decision", "answer").iter_rows():
        def add(metric: str, num: float | None, den: float | None, status: str, *, _s: str = system,
                _q: str = qid) -> None:
            ok = status == "ok" and num is not None and den is not None
            rows.append({"system": _s, "question_id": _q, "metric": metric, "k": None,
                         "value": num / den if ok and num is not None and den else None,
                         "numerator": float(num) if ok and num is not None else None,
                         "denominator": float(den) if ok and den is not None else None, "status": status,
                         "ranking_mode": None})

        status = answer_status(decision, answer, phrases)
        if status is not None:
            for m in CITATION_METRICS:
                add(m, None, None, status)
            continue
        for metric, num, den, st in answer_metrics(claims_by.get((system, qid), []), cites_by.get((system, qid), [])):
            add(metric, num, den, st)
    return pl.DataFrame(rows, schema=OUTPUT_SCHEMA)


def answer_metrics(claims: list[dict], cites: list[dict]) -> list[tuple[str, float | None, float | None, str]]:
    """``(metric, numerator, denominator, status)`` for one answer from its ``citation_claims`` rows
    and ``citations`` rows (every repeat), in :data:`CITATION_METRICS` order; status "ok" or why null.
    For F1, numerator = 2PR and denominator = P + R."""
    out: dict[str, tuple] = {}
    repeats = sorted({r["repeat"] for r in claims} | {r["repeat"] for r in cites}) or [0]
    need = [r for r in claims if r["needs_citation"]]
    first = [r for r in need if r["repeat"] == repeats[0]]
    if not first:
        for m in ("citation_recall", "uncited_claim_rate", "weighted_citation_recall"):
            out[m] = (None, None, "no_claims")
    else:
        scored = [r for r in need if r["verdict"] != "JUDGE_ERROR"]
        out["citation_recall"] = _ratio(sum(r["verdict"] == "SUPPORTED" for r in scored), len(scored))
        out["uncited_claim_rate"] = _ratio(sum(r["status"] == "uncited" for r in first), len(first))
    needs_ids = {(r["repeat"], r["claim_id"]) for r in need}
    bound = [r for r in cites if r["claim_id"] is not None and (r["repeat"], r["claim_id"]) in needs_ids]
    judged = [r for r in bound if r["precise"] is not None]
    if not bound:
        out["citation_precision"] = (None, None, "no_citations" if first else "no_claims")
    else:
        out["citation_precision"] = _ratio(sum(bool(r["precise"]) for r in judged), len(judged))
    p_num = p_den = r_num = r_den = 0.0
    errors = False
    for rep in repeats:
        units = {r["unit"] for r in need if r["repeat"] == rep}
        unit_claims: dict[int, set[str]] = defaultdict(set)
        for r in need:
            if r["repeat"] == rep:
                unit_claims[r["unit"]].add(r["claim_id"])
        pairs: dict[tuple, list[str | None]] = defaultdict(list)
        for r in bound:
            if r["repeat"] == rep:
                key = (r["unit"], r["level"], r["target"]) if r["problem"] is None else \
                    (r["unit"], "problem", f"{r['marker']}:{r['written']}")
                pairs[key].append(r["support"])
        best: dict[int, float] = {}
        for (unit, _, _), supports in pairs.items():
            if "JUDGE_ERROR" in supports:
                errors = True
                continue
            p_num += (score := _pair_score(supports, len(unit_claims[unit])))
            p_den += 1
            best[unit] = max(best.get(unit, 0.0), score)
        r_num += sum(best.get(u, 0.0) for u in units)
        r_den += len(units)
    if not first:
        out["weighted_citation_precision"] = (None, None, "no_claims")
    elif p_den == 0:
        out["weighted_citation_precision"] = (None, None, "judge_error" if errors else "no_citations")
    else:
        out["weighted_citation_precision"] = (p_num, p_den, "ok")
    if first:
        out["weighted_citation_recall"] = _ratio(r_num, r_den)
    wp, wr = out["weighted_citation_precision"], out["weighted_citation_recall"]
    if wp[2] != "ok" or wr[2] != "ok":
        out["weighted_citation_f1"] = (None, None, wp[2] if wp[2] != "ok" else wr[2])
    else:
        pv, rv = wp[0] / wp[1], wr[0] / wr[1]
        out["weighted_citation_f1"] = (2 * pv * rv, pv + rv, "ok") if pv + rv > 0 else (0.0, 1.0, "ok")
    out.update(validity_metrics([c for c in cites if c["repeat"] == repeats[0]]))
    return [(m, *out[m]) for m in CITATION_METRICS]


def validity_metrics(cites: list[dict]) -> dict[str, tuple]:
    """The validity rates of one answer from its ``citations`` rows of one repeat: each distinct
    (level, target) once; unresolved references counted apart. ``(numerator, denominator, status)``."""
    distinct: dict[tuple, dict] = {}
    unresolved: set[tuple] = set()  # a marker's reference once, however many claims its unit holds
    for r in cites:
        if r["problem"] is not None:
            unresolved.add((r["unit"], r["marker"], r["written"]))
        else:
            distinct.setdefault((r["level"], r["target"]), r)
    n, problems = len(distinct), len(unresolved)
    out: dict[str, tuple] = {}
    for metric, failures in VALIDITY_METRICS.items():
        if n == 0:
            out[metric] = (None, None, "no_citations")
        elif failures is None:
            out[metric] = (sum(bool(r["valid"]) for r in distinct.values()), n, "ok")
        else:
            out[metric] = (sum(any(f in (r["failures"] or []) for f in failures) for r in distinct.values()), n, "ok")
    out["unresolved_citation_rate"] = (problems, n + problems, "ok") if n + problems else (None, None, "no_citations")
    return out


def _pair_score(supports: list[str | None], n_claims: int) -> float:
    """Full (1) when every claim of the unit is SUPPORTED by the chunk, partial (0.5) when one is
    SUPPORTED or PARTIAL, none (0) otherwise; a claim with no support verdict (the citation could not
    be judged) is not supported."""
    full = sum(s == "SUPPORTED" for s in supports)
    if full == n_claims and n_claims > 0:
        return SUPPORT_SCORES["SUPPORTED"]
    if full or any(s == "PARTIAL" for s in supports):
        return SUPPORT_SCORES["PARTIAL"]
    return SUPPORT_SCORES["NOT_SUPPORTED"]


def _ratio(num: float, den: float) -> tuple:
    return (num, den, "ok") if den else (None, None, "judge_error")
