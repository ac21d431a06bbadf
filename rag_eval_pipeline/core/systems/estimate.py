"""What a run will ask of the systems under test, before it runs (``rag-eval estimate``).

Read from the system kinds' registry: a kind that ``makes_calls`` is called once per golden question
(``attempts`` per question with every retry spent); one that does not is run by a dry run (its answers
exist without calling anything) and, when it declares an ``estimate_note``, listed with it.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS


def offline_systems(cfg: EvalConfig) -> list[str]:
    """Names of the systems whose answers exist without calling anything (kinds that make no call)."""
    return [s.name for s in cfg.systems if not SYSTEM_KINDS.get(s.kind).makes_calls]


def system_calls(cfg: EvalConfig, golden: pl.DataFrame) -> list[dict]:
    """Per system of a kind that makes calls or says what it reads: ``name``, ``kind``, ``calls`` (one per
    golden question for a calling kind, 0 otherwise), ``max_calls`` (with every retry spent: calls x
    the kind's attempts), ``quick_calls`` (the quick_evaluation subset), ``note`` (what a kind that
    makes no call reads, else None)."""
    from rag_eval_pipeline.core.pipeline import quick_subset

    n = golden.height
    quick = quick_subset(golden, cfg.quick_subset_size, cfg.seed).height
    out = []
    for s in cfg.systems:
        kind = SYSTEM_KINDS.get(s.kind)
        if not kind.makes_calls and kind.estimate_note is None:
            continue
        calls = n if kind.makes_calls else 0
        out.append({"name": s.name, "kind": s.kind, "calls": calls, "max_calls": calls * kind.attempts(s),
                    "quick_calls": quick if kind.makes_calls else 0, "note": kind.estimate_note})
    return out


def system_call_lines(cfg: EvalConfig, golden: pl.DataFrame) -> list[str]:
    """:func:`system_calls` as one printable line per system (empty when there is none)."""
    lines = []
    for c in system_calls(cfg, golden):
        if c["note"] is not None and not c["calls"]:
            lines.append(f"system {c['name']} ({c['kind']}): {c['note']}, makes no call")
        else:
            extra = f", at most {c['max_calls']} with every retry" if c["max_calls"] != c["calls"] else ""
            lines.append(f"system {c['name']} ({c['kind']}): {c['calls']} calls for a full run{extra}; "
                         f"{c['quick_calls']} for quick_evaluation")
    return lines
