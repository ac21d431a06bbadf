"""What a run will ask of the systems under test, before it runs (``rag-eval estimate``)."""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.systems.specs import LIVE_KINDS


def offline_systems(cfg: EvalConfig) -> list[str]:
    """Names of the systems whose answers exist without calling anything (reference, logged, traces)."""
    return [s["name"] for s in cfg.systems if s["kind"] not in ("http", "python")]


def system_calls(cfg: EvalConfig, golden: pl.DataFrame) -> list[dict]:
    """Per live system: ``name``, ``kind``, ``calls`` (one per golden question for ``http`` and
    ``python``, 0 for ``traces``, which only reads files), ``max_calls`` (with every retry spent:
    calls x (1 + max_retries) for ``http``), ``quick_calls`` (the quick_evaluation subset)."""
    from rag_eval_pipeline.core.pipeline import quick_subset

    n = golden.height
    quick = quick_subset(golden, cfg.quick_subset_size, cfg.seed).height
    out = []
    for s in cfg.systems:
        if s["kind"] not in LIVE_KINDS:
            continue
        calls = 0 if s["kind"] == "traces" else n
        retries = s.get("max_retries", 0) if s["kind"] == "http" else 0
        out.append({"name": s["name"], "kind": s["kind"], "calls": calls, "max_calls": calls * (1 + retries),
                    "quick_calls": 0 if s["kind"] == "traces" else quick})
    return out


def system_call_lines(cfg: EvalConfig, golden: pl.DataFrame) -> list[str]:
    """:func:`system_calls` as one printable line per live system (empty when there is none)."""
    lines = []
    for c in system_calls(cfg, golden):
        if c["kind"] == "traces":
            lines.append(f"system {c['name']} (traces): reads its trace files, makes no call")
        else:
            extra = f", at most {c['max_calls']} with every retry" if c["max_calls"] != c["calls"] else ""
            lines.append(f"system {c['name']} ({c['kind']}): {c['calls']} calls for a full run{extra}; "
                         f"{c['quick_calls']} for quick_evaluation")
    return lines
