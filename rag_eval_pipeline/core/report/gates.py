"""The report's "Comparison with the baseline" section: the gate results of the run against the promoted
baseline (the verdict they lead to is :mod:`rag_eval_pipeline.core.report.decision`). Nothing here imports
Dagster.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rag_eval_pipeline.core.metrics.names import level_label
from rag_eval_pipeline.core.report.bands import definition_ref, is_judge_based
from rag_eval_pipeline.core.report.blocks import Block, Cell, fmt, heading, num_cell, para
from rag_eval_pipeline.core.report.decision import no_gate_words, split_questions

__all__ = ["gates_section"]


def _gate_judge_errors(summary: pl.DataFrame, system: str, metric: str, k: int | None) -> int | None:
    """The candidate's judge errors for a judge-based gated metric (split test when summarised, else all)."""
    for split in ("test", "all"):
        rows = summary.filter((pl.col("system") == system) & (pl.col("metric") == metric) & (pl.col("split") == split)
                              & (pl.col("segment") == "all")
                              & (pl.col("k").is_null() if k is None else (pl.col("k") == k)))
        if rows.height:
            return int(rows["judge_errors"].fill_null(0).sum())
    return None


def gates_section(gates: Sequence[dict] | None, baseline_manifest: dict | None, summary: pl.DataFrame, split: str,
                  golden: pl.DataFrame, thresholds: int | None = None) -> list[Block]:
    """The "Comparison with the baseline" section: the promoted baseline's manifest and one row per gate
    result (candidate, baseline, difference, p of the paired randomisation test, wins/ties/losses, status,
    reason; a judge-based candidate value carries its judge-error count), on the gates' ``split``.

    Inputs: gate results as dicts (``gate_results.to_dicts()``; None: "no gate results given"), the
    baseline manifest, ``metric_summary``, the split, ``golden_set`` (the split's size), ``thresholds`` (the
    number of configured gates: "no gate configured" only when 0). Output: blocks. Definitions:
    ``docs/METRICS.md`` (gates)."""
    n_split = split_questions(golden, split)
    blocks = [heading(f"Comparison with the baseline (split {split})", 2),
              Block("note", text=f"Every gate compares on split {split} ({n_split} golden questions), not on all "
                                 "questions: values here differ from the summary above, which covers split all.")]
    if baseline_manifest:
        rows = [[k, str(v)] for k, v in sorted(baseline_manifest.items())]
        blocks.append(para("Promoted baseline:"))
        blocks.append(Block("table", headers=["", ""], rows=rows, css="meta"))
    if gates is None:
        blocks.append(para("No gate results given."))
        return blocks
    if not gates:
        words = no_gate_words(thresholds)  # "no gate configured" only when gates.thresholds is empty
        blocks.append(para(words[0].upper() + words[1:] + "."))
        return blocks
    rows = []
    for g in gates:
        k = g.get("k")
        p = g.get("p_value", g.get("p"))
        wtl = g.get("wtl") or f"{g.get('wins', 0)}/{g.get('ties', 0)}/{g.get('losses', 0)}"
        status = str(g.get("status") or "")
        diff = g.get("difference")
        candidate = (num_cell(fmt(g.get("candidate"))) if g.get("candidate") is not None
                     else Cell("not evaluable", css="na"))
        if is_judge_based(str(g.get("metric"))):
            errors = _gate_judge_errors(summary, str(g.get("system")), str(g.get("metric")), k)
            candidate.text += f" · judge errors {'?' if errors is None else errors}"
        rows.append([g.get("system") or "", level_label(str(g.get("metric")), k, g.get("level")), candidate,
                     (num_cell(fmt(g.get("baseline"))) if g.get("baseline") is not None
                      else Cell("not evaluable", css="na")),
                     num_cell(f"{diff:+.4f}") if diff is not None else Cell("—", css="na"),
                     num_cell(fmt(p)) if p is not None else Cell("—"), wtl,
                     Cell(status, css=f"status-{status}"), g.get("reason") or ""])
    blocks.append(Block("table", headers=["system", "metric", "candidate", "baseline", "difference", "p", "W/T/L",
                                          "status", "reason"], rows=rows))
    blocks.append(Block("note", text="p: two-sided paired randomisation test over the questions both systems answered; "
                                     "W/T/L: questions where the candidate is better / equal / worse; a judge-based "
                                     "candidate value carries its judge-error count. Definitions: "
                                     + definition_ref("gates") + "."))
    return blocks
