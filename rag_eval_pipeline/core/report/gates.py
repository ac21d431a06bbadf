"""The report's "Comparison with the baseline" section: the gate results of the run against the promoted
baseline (the verdict they lead to is :mod:`rag_eval_pipeline.core.report.decision`). Nothing here imports
Dagster.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rag_eval_pipeline.core.gates import compared_words
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
    result (candidate and baseline means over the questions both evaluated, their difference, how many
    questions were compared, the 95% interval, p of the paired randomisation test, wins/ties/losses, status,
    reason, then each side's headline mean over its own questions, labelled as such; a judge-based candidate
    value carries its judge-error count), on the gates' ``split``.

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
        compared = compared_words(g.get("n"), g.get("n_baseline"), g.get("n_candidate_errors"))
        candidate = (num_cell(fmt(g.get("candidate"))) if g.get("candidate") is not None
                     else Cell("—" if g.get("candidate_all") is not None else "not evaluable", css="na"))
        if is_judge_based(str(g.get("metric"))):
            errors = _gate_judge_errors(summary, str(g.get("system")), str(g.get("metric")), k)
            candidate.text += f" · judge errors {'?' if errors is None else errors}"
        own = " / ".join("—" if g.get(c) is None else fmt(g.get(c)) for c in ("candidate_all", "baseline_all"))
        ci = ("" if g.get("ci_low") is None or g.get("ci_high") is None
              else f"[{g['ci_low']:+.3f}, {g['ci_high']:+.3f}]")
        rows.append([g.get("system") or "", level_label(str(g.get("metric")), k, g.get("level")), candidate,
                     (num_cell(fmt(g.get("baseline"))) if g.get("baseline") is not None
                      else Cell("—" if g.get("baseline_all") is not None else "not evaluable", css="na")),
                     num_cell(f"{diff:+.4f}") if diff is not None else Cell("—", css="na"),
                     compared or "—", ci, num_cell(fmt(p)) if p is not None else Cell("—"), wtl,
                     Cell(status, css=f"status-{status}"), g.get("reason") or "", own])
    blocks.append(Block("table", headers=["system", "metric", "candidate", "baseline", "difference", "n compared",
                                          "95% CI", "p", "W/T/L", "status", "reason",
                                          "own means, all questions (candidate / baseline)"], rows=rows))
    blocks.append(Block("note", text="candidate, baseline, difference, 95% CI, p and W/T/L are all over the same "
                                     "questions: the n questions of the split both systems have a value for (a "
                                     "question the candidate errored on is counted by the run-error check, not "
                                     "compared); the thresholds are applied to that difference, a relative drop "
                                     "to that baseline mean. The last column is each side's headline mean over "
                                     "its own evaluable questions, not the gate's figure (a floor, min_value, "
                                     "reads the candidate's). W/T/L: questions where the candidate is better / "
                                     "equal / worse; a judge-based candidate value carries its judge-error count. "
                                     "Definitions: " + definition_ref("gates") + "."))
    return blocks
