"""Calibration mappings: how one side's label rows (a judge's claim verdicts, people's labels) become
one calibrated label per item, for :mod:`rag_eval_pipeline.core.metrics.calibration`.

The mapping is explicit and stored with every result (:data:`DEFAULT_MAPPINGS`, keys):

- ``judge_rule`` / ``human_rule``: how one side's rows become one raw label per item:
  ``"label"`` (the row's ``verdict``; exactly one row per item), ``"all_supported"`` (response
  level: "attributable" when every claim verdict is SUPPORTED, else "not_attributable"),
  ``"holistic"`` (response level: YES / PARTIAL / NO from
  :func:`~rag_eval_pipeline.core.judges.base.holistic_label`).
- ``judge`` / ``human``: raw label → calibrated label; a value of None drops the item (counted in
  ``n_excluded_*``); a raw label absent from the dict raises :class:`InputError` — nothing is
  mapped silently.
- ``labels``: the calibrated label set, in display order (confusion-matrix rows and columns).

Nothing here imports Dagster.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.judges.base import CALIBRATION_LEVELS, holistic_label
from rag_eval_pipeline.core.lazy import lazy_module

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

__all__ = ["DEFAULT_MAPPINGS", "LEVELS", "map_labels", "raw_labels_per_item", "resolve_mapping"]

LEVELS = CALIBRATION_LEVELS  # the levels the configuration accepts (core.judges.base)
_RULES = {"claim": ("label",), "response": ("label", "all_supported", "holistic")}
_CLAIM_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")

#: Default mapping per level (a user mapping overrides these keys one by one).
DEFAULT_MAPPINGS: dict[str, dict[str, Any]] = {
    "claim": {
        "judge_rule": "label",
        "judge": {v: v for v in _CLAIM_VERDICTS},
        "human_rule": "label",
        "human": {v: v for v in _CLAIM_VERDICTS},
        "labels": list(_CLAIM_VERDICTS),
    },
    "response": {
        "judge_rule": "all_supported",
        "judge": {"attributable": "attributable", "not_attributable": "not_attributable"},
        "human_rule": "label",
        "human": {
            # BEGIN (Dziri et al. 2022) labels
            "Fully attributable": "attributable",
            "Not fully attributable": "not_attributable",
            # the calibrated labels themselves
            "attributable": "attributable",
            "not_attributable": "not_attributable",
            # whole-answer labels (faithfulness_holistic): only YES is fully supported
            "YES": "attributable",
            "PARTIAL": "not_attributable",
            "NO": "not_attributable",
        },
        "labels": ["attributable", "not_attributable"],
    },
}


def resolve_mapping(mapping: Mapping[str, Any] | None, level: str) -> dict[str, Any]:
    """The mapping actually used: :data:`DEFAULT_MAPPINGS` for ``level`` overridden key by key.

    Input: ``mapping`` (None, or a dict with any of judge_rule, judge, human_rule, human, labels;
    a given ``judge``/``human`` dict replaces the default one entirely), ``level`` in
    :data:`LEVELS`. Output: a new dict with all five keys; ``labels`` defaults to the mapped
    values in order of first appearance (judge dict, then human dict) when the dicts are given
    but ``labels`` is not. Raises ValueError for an unknown level, key or rule (``"label"`` is
    the only rule for the judge at claim level; the judge has no per-response label at response
    level, so ``"label"`` is refused there), a non-dict label map, or a mapped label missing from
    ``labels``.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    out = copy.deepcopy(DEFAULT_MAPPINGS[level])
    given = dict(mapping or {})
    unknown = set(given) - set(out)
    if unknown:
        raise ValueError(f"calibration mapping has unknown keys {sorted(unknown)}; allowed {sorted(out)}")
    out.update(copy.deepcopy(given))
    if ("judge" in given or "human" in given) and "labels" not in given:
        seen: list[str] = []
        for side in ("judge", "human"):
            for v in (out[side] or {}).values():
                if v is not None and v not in seen:
                    seen.append(v)
        out["labels"] = seen
    for side in ("judge", "human"):
        rule = out[f"{side}_rule"]
        if rule not in _RULES[level] or (side == "judge" and level == "response" and rule == "label"):
            allowed = [r for r in _RULES[level] if not (side == "judge" and level == "response" and r == "label")]
            raise ValueError(f"calibration mapping {side}_rule {rule!r} is not allowed at level {level!r}; "
                             f"use one of {allowed}")
        if not isinstance(out[side], Mapping):
            raise ValueError(f"calibration mapping {side!r} must be a dict raw label -> label, got {out[side]!r}")
        out[side] = {str(k): (None if v is None else str(v)) for k, v in out[side].items()}
        stray = sorted({v for v in out[side].values() if v is not None} - set(out["labels"]))
        if stray:
            raise ValueError(f"calibration mapping {side!r} maps to {stray}, not in labels {out['labels']}")
    out["labels"] = [str(x) for x in out["labels"]]
    return out



def map_labels(labels: pl.DataFrame, side: str, table: dict[str, str | None], keys: list[str]
               ) -> tuple[pl.DataFrame, int]:
    """Apply a raw → calibrated label dict (``judge`` / ``human`` of a resolved mapping).

    Input: ``labels`` with ``keys`` and ``raw`` (Utf8, non-null), ``side`` ("judge" / "human", for
    messages), ``table``. Output: ``(frame of keys + label, items dropped by a None mapping)``.
    Raises InputError (field ``verdict``) for a raw label absent from ``table``.
    """
    raw = labels["raw"].to_list()
    unknown = sorted({r for r in raw if r is not None and r not in table})
    if unknown:
        raise InputError(f"{side} label(s) {unknown[:10]} are not in the calibration mapping "
                         f"{sorted(table)}; add them (None to leave such items out)", field="verdict")
    mapped = labels.with_columns(
        pl.col("raw").replace_strict(list(table), list(table.values()), default=None, return_dtype=pl.Utf8)
        .alias("label"))
    kept = mapped.filter(pl.col("label").is_not_null())
    return kept.select(*keys, "label"), mapped.height - kept.height


def _per_response(df: pl.DataFrame, rule: str, keys: list[str], side: str) -> pl.DataFrame:
    """Claim rows → one raw label per response by ``rule``; JUDGE_ERROR anywhere → raw null."""
    def label(vs: list[str]) -> str | None:
        if any(v == "JUDGE_ERROR" or v is None for v in vs):
            return None
        if rule == "all_supported":
            return "attributable" if vs and all(v == "SUPPORTED" for v in vs) else "not_attributable"
        return holistic_label(vs)

    grouped = df.group_by(keys, maintain_order=True).agg(pl.col("verdict"))
    raws = [label(vs) for vs in grouped["verdict"].to_list()]
    bad = sorted({v for vs in grouped["verdict"].to_list() for v in vs
                  if v is not None and v not in _CLAIM_VERDICTS + ("JUDGE_ERROR",)})
    if bad:
        raise InputError(f"{side} rule {rule!r} needs claim verdicts {_CLAIM_VERDICTS}, got {bad[:10]}",
                         field="verdict")
    return grouped.select(keys).with_columns(pl.Series("raw", raws, dtype=pl.Utf8))


def _one_per_item(df: pl.DataFrame, keys: list[str], side: str) -> pl.DataFrame:
    dup = df.group_by(keys).len().filter(pl.col("len") > 1)
    if dup.height:
        raise InputError(f"{side} labels: {dup.height} item(s) labelled more than once, e.g. "
                         f"{dup.select(keys).head(3).to_dicts()}", field=", ".join(keys))
    return df.select(*keys, pl.col("verdict").alias("raw"))


def raw_labels_per_item(df: pl.DataFrame, rule: str, keys: list[str], side: str) -> pl.DataFrame:
    """One raw label per item by ``rule`` (module docstring): ``"label"`` takes the row's verdict,
    the response rules aggregate claim rows. Input: rows with ``keys`` and ``verdict``. Output:
    ``keys`` + ``raw`` (null when a claim verdict is JUDGE_ERROR). Raises InputError for an item
    labelled twice (rule ``"label"``) or a verdict outside the claim verdicts (response rules)."""
    if rule == "label":
        return _one_per_item(df, keys, side)
    return _per_response(df, rule, keys, side)

