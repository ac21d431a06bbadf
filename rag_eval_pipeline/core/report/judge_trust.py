"""The report's "Judge calibration and noise" section: may the judge's numbers be read (its calibration
against people), and how noisy is it (its variance over repeats). Nothing here imports Dagster.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.report.bands import definition_ref
from rag_eval_pipeline.core.report.blocks import Block, Cell, fmt, heading, num_cell, para, short_sha

__all__ = ["judge_trust_section"]


def judge_trust_section(calibration: pl.DataFrame | None, variance: pl.DataFrame | None, calibrated: bool,
                        why_not: str) -> list[Block]:
    """The "Judge calibration and noise" section: whether the judge passed calibration, the calibration
    table (Cohen's kappa with its n, agreement and 95% CI; a missing or stale calibration is named, another
    judge's kappa never read as this one's) and the judge-variance table (flip rate, faithfulness range,
    resolution: the smallest difference the judge tells from its own noise).

    Inputs: the ``judge_calibration`` and ``judge_variance`` tables (None: the section says so), the
    calibration verdict. Output: blocks. Sources: Cohen (1960); ``docs/METRICS.md`` (judge variance)."""
    blocks = [heading("Judge calibration and noise", 2),
              para("The judge passed calibration: its numbers may be read." if calibrated else
                   f"Judge not calibrated: {why_not}. Read judge-based metrics as provisional.",
                   css=None if calibrated else "na")]
    if calibration is None or not calibration.height:
        blocks.append(para("No calibration table: the judge has not been compared with human labels.", css="na"))
    else:
        rows = []
        for r in calibration.iter_rows(named=True):
            state = "missing" if r.get("missing") else ("stale" if r.get("stale") else "current")
            css = "na" if state != "current" else None
            kappa = (fmt(r.get("kappa"), 3) if r.get("kappa") is not None
                     else f"null ({r.get('kappa_reason') or 'no reason given'})")
            if state == "stale":  # another judge's κ: never read as this judge's
                kappa += (f" (made for {r.get('calibrated_judge')} / {r.get('calibrated_judge_model')} / "
                          f"{short_sha(r.get('calibrated_prompt_sha256'))}, not this judge)")
            agree = "—" if r.get("agreement") is None else (
                f"{r['agreement']:.3f}" + ("" if r.get("agreement_ci_low") is None else
                                           f" [{r['agreement_ci_low']:.3f}, {r['agreement_ci_high']:.3f}]"))
            rows.append([r.get("level") or "", f"{r.get('judge')} / {r.get('judge_model')}",
                         short_sha(r.get("prompt_sha256")), Cell(state, css=css),
                         num_cell(str(r.get("n") if r.get("n") is not None else "—")),
                         Cell(kappa, css=None if r.get("kappa") is not None else "na"), agree,
                         r.get("calibrated_at") or "—"])
        blocks.append(Block("table", headers=["level", "judge / model", "prompt", "calibration", "n", "Cohen's kappa",
                                              "agreement [95% CI]", "calibrated at"], rows=rows))
        if any(r.get("missing") or r.get("stale") for r in calibration.iter_rows(named=True)):
            blocks.append(Block("note", text="A judge not calibrated against people for this exact model and "
                                             "prompt gives numbers nobody has checked: read judge-based metrics "
                                             "as provisional."))
    if variance is None or not variance.height:
        blocks.append(para("No judge-variance table.", css="na"))
        return blocks
    rows = []
    for r in variance.iter_rows(named=True):
        single = (r.get("n_repeats") or 0) < 2
        rows.append([r.get("system") or "", num_cell(str(r.get("n_repeats"))),
                     f"{r.get('n_flipped')}/{r.get('n_items')}",
                     fmt(r.get("flip_rate"), 3) if r.get("flip_rate") is not None else Cell("not evaluable", css="na"),
                     f"{fmt(r.get('faithfulness_min'), 3)}–{fmt(r.get('faithfulness_max'), 3)}",
                     Cell("unknown (single repeat)", css="na") if single or r.get("resolution") is None
                     else num_cell(fmt(r.get("resolution"), 4))])
    blocks.append(Block("table", headers=["system", "repeats", "flipped / items", "flip rate", "faithfulness min–max",
                                          "resolution"], rows=rows))
    rule = next((r.get("rule") for r in variance.iter_rows(named=True) if r.get("rule")), None)
    blocks.append(Block("note", text="Resolution: the smallest faithfulness difference the judge can tell from its "
                                     "own noise" + (f" ({rule})" if rule else "") + ". A difference below it is "
                                     "noise; with one repeat the noise is unknown: judge again (2 or more repeats) "
                                     "before acting on a small change. Definitions: "
                                     + definition_ref("judge_variance") + "."))
    return blocks
