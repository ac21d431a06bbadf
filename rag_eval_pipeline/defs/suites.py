"""One copy of the chain per suite: asset keys prefixed with the suite's name.

``sample/metric_summary`` and ``scifact/metric_summary`` are different assets: each has its own
materialisations, metadata plots, checks, lineage and folder (``outputs/<suite>/``), and a suite whose
step fails leaves the other suites' assets as they were. The quick evaluation of a suite is a third
set of keys, ``<suite>/quick/...`` (folder ``outputs/<suite>/quick/``), without ``promotion`` and
``metric_history``: it never writes the full evaluation's tables, history, plots or baseline; it
reads the suite's promoted baseline and history (its report depends on ``<suite>/metric_history``).

The asset bodies are the ones in the stage modules; they find their suite through the resources
(``defs/resources.py``), which read it from the step's own asset keys.
"""

from __future__ import annotations

import dagster as dg

from rag_eval_pipeline.core.suites import Suite
from rag_eval_pipeline.defs import calibration, corpus, golden, judging, metrics, promotion, report, runs
from rag_eval_pipeline.defs.io import QUICK

STAGE_MODULES = [corpus, golden, runs, judging, calibration, metrics, promotion, report]
QUICK_LEAVES_OUT = ("promotion", "metric_history")
CALIBRATION_CHECK = "judge_calibrated_above_floor"


def quick_note(size: int) -> str:
    """The sentence that starts every quick asset's description (``size``: golden questions in the subset)."""
    return (f"Quick evaluation: a fixed stratified subset of {size} golden questions. Its own asset keys and "
            "folder: it never writes the full evaluation's tables, history, metadata plots or promoted baseline "
            "(it only reads the baseline). ")


def _stage_assets(key_prefix: list[str]) -> list[dg.AssetsDefinition]:
    """The ``@asset`` definitions of the stage modules under ``key_prefix``. Raises TypeError if a stage
    module ever defines another kind of asset (a source asset, a bare spec), which this shell does not expect."""
    loaded = dg.load_assets_from_modules(STAGE_MODULES, key_prefix=key_prefix)
    out = [a for a in loaded if isinstance(a, dg.AssetsDefinition)]
    if len(out) != len(loaded):
        raise TypeError(f"the stage modules define {len(loaded) - len(out)} asset(s) that are not @asset definitions")
    return out


def _with_group_and_description(assets: list[dg.AssetsDefinition], group: str,
                                note: str = "") -> list[dg.AssetsDefinition]:
    """``assets`` in asset group ``group`` (the suite), ``note`` before each description, the stage as a tag."""
    def spec_fn(spec: dg.AssetSpec) -> dg.AssetSpec:
        stage = spec.group_name or "default"
        return spec.replace_attributes(group_name=group, description=note + (spec.description or ""),
                                       tags={**spec.tags, "stage": stage})
    return list(dg.map_asset_specs(spec_fn, assets))


def _rebuild_checks(checks: list, key_for, blocking_for=None, note_for=None) -> list:
    """Copies of ``checks`` with every asset key passed through ``key_for`` (the checked asset and the
    additional inputs; ``AssetsDefinition.with_attributes`` in Dagster 1.13 leaves a check's
    ``additional_ins`` behind), and optionally another ``blocking`` / description per check name."""
    out = []
    for cdef in checks:
        specs = {}
        for output, spec in cdef.check_specs_by_output_name.items():
            blocking = spec.blocking if blocking_for is None else blocking_for(spec.name, spec.blocking)
            note = "" if note_for is None else note_for(spec.name)
            specs[output] = dg.AssetCheckSpec(
                name=spec.name, asset=key_for(spec.asset_key), description=note + (spec.description or ""),
                additional_deps=[dg.AssetDep(key_for(d.asset_key), partition_mapping=d.partition_mapping)
                                 for d in spec.additional_deps],
                blocking=blocking, metadata=spec.metadata, automation_condition=spec.automation_condition)
        out.append(dg.AssetChecksDefinition.create(
            keys_by_input_name={n: key_for(k) for n, k in cdef.keys_by_input_name.items()}, node_def=cdef.node_def,
            check_specs_by_output_name=specs, can_subset=cdef.can_subset, resource_defs=cdef.resource_defs))
    return out


def suite_assets(suite: Suite, *, calibration_blocks: bool, quick_size: int) -> tuple[list, list, list, list]:
    """(full assets, full checks, quick assets, quick checks) of one suite.

    ``calibration_blocks``: whether a gate of the suite is on a judge-based metric; when it is not, the
    calibration check is defined non-blocking (it can only warn, and the UI shows it so).
    """
    name = suite.name
    base_checks = list(dg.load_asset_checks_from_modules(STAGE_MODULES))
    if calibration_blocks:
        blocking_for, note_for = None, None
    else:
        warning = ("Warning only in this suite: no gate is on a judge-based metric, so a judge below the floor "
                   "cannot block promotion. ")
        blocking_for = lambda check, blocking: False if check == CALIBRATION_CHECK else blocking  # noqa: E731
        note_for = lambda check: warning if check == CALIBRATION_CHECK else ""  # noqa: E731

    full = _with_group_and_description(_stage_assets([name]), name)
    full_checks = _rebuild_checks(base_checks, lambda k: k.with_prefix([name]), blocking_for, note_for)

    quick_prefix = [name, QUICK]

    def quick_key(k: dg.AssetKey) -> dg.AssetKey:
        # the quick report's trend reads the full evaluation's history: say so in the lineage
        return k.with_prefix([name]) if k.path[-1] in QUICK_LEAVES_OUT else k.with_prefix(quick_prefix)

    left_out = {dg.AssetKey([*quick_prefix, k]) for k in QUICK_LEAVES_OUT}
    quick = [a for a in _stage_assets(quick_prefix) if not (set(a.keys) & left_out)]
    history = {k: quick_key(dg.AssetKey(k.path[-1])) for k in left_out}
    quick = [a.with_attributes(asset_key_replacements=history)
             if any(d.asset_key in history for s in a.specs for d in s.deps) else a for a in quick]
    quick = _with_group_and_description(quick, f"{name}_{QUICK}", quick_note(quick_size))
    quick_checks = _rebuild_checks([c for c in base_checks if not any(k.asset_key.path[-1] in QUICK_LEAVES_OUT
                                                                      for k in c.check_keys)],
                                   quick_key, blocking_for, note_for)
    return full, full_checks, quick, quick_checks


def asset_keys(assets: list) -> list[dg.AssetKey]:
    """Every asset key of ``assets`` (AssetsDefinitions), sorted by path."""
    return sorted({k for a in assets for k in a.keys}, key=lambda k: k.path)


def check_keys(checks: list) -> list[dg.AssetCheckKey]:
    """Every check key of ``checks`` (AssetChecksDefinitions), sorted by asset path and name."""
    return sorted({k for c in checks for k in c.check_keys}, key=lambda k: (k.asset_key.path, k.name))
