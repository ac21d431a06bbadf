"""What one suite's definitions are bound to, decided when the definitions are built.

A :class:`SuiteScope` names everything a suite's assets, checks and jobs use: the asset key prefix
(``sample/...``, or ``sample/quick/...`` for its quick evaluation), the asset group, the op names and
the resource keys of the suite's own configuration, table store, IO manager and judge
(``sample__settings``, ``sample__store``, ``sample__io_manager``, ``sample__judge``). The stage modules
build their assets for a scope (``build(scope)``), so an asset body never looks up its suite at run
time: the suite is in the closure, its configuration path and folder are in its resources.

The unprefixed scope (``SuiteScope()``) is the chain of one configuration with plain keys
(``corpus_snapshot``) and plain resource keys (``settings``, ``store``, ``io_manager``, ``judge``): tests
materialise it with :func:`rag_eval_pipeline.defs.location.build_resources`.
"""

from __future__ import annotations

from dataclasses import dataclass

import dagster as dg

QUICK = "quick"
RESOURCE_KINDS = ("settings", "store", "io_manager", "judge")


@dataclass(frozen=True)
class SuiteScope:
    """One suite's place in the code location.

    ``suite``: the suite's name (a valid Dagster name), or None for the unprefixed chain.
    ``quick``: the quick evaluation's copy (keys ``<suite>/quick/...``, group ``<suite>_quick``).
    ``calibration_blocks``: whether a gate of the suite is on a judge-based metric (then the calibration
    check is defined blocking, else it can only warn). ``quick_size``: questions in the quick subset
    (for the descriptions). ``calibration_labels``: the hand-label file the configuration names, if any
    (declared as the external asset ``<suite>/calibration_labels``).
    """

    suite: str | None = None
    quick: bool = False
    calibration_blocks: bool = True
    quick_size: int = 0
    calibration_labels: str | None = None

    # --- names ----------------------------------------------------------------------------------

    @property
    def prefix(self) -> tuple[str, ...]:
        """The asset key prefix: ``()``, ``("sample",)`` or ``("sample", "quick")``."""
        return ((self.suite,) if self.suite else ()) + ((QUICK,) if self.quick else ())

    def key(self, name: str) -> dg.AssetKey:
        """This scope's key of table ``name``: ``sample/quick/metric_summary`` for the quick copy."""
        return dg.AssetKey([*self.prefix, name])

    def full_key(self, name: str) -> dg.AssetKey:
        """The full evaluation's key of ``name`` (what a quick evaluation reads and never writes)."""
        return dg.AssetKey([*((self.suite,) if self.suite else ()), name])

    def op(self, name: str) -> str:
        """The op (step) name: ``sample__quick__judging`` (Dagster's ``__`` for prefixed names)."""
        return "__".join([*self.prefix, name])

    def group(self, stage: str) -> str:
        """The asset group: the suite (``sample``, ``sample_quick``); the stage for the unprefixed chain."""
        if self.suite is None:
            return stage
        return f"{self.suite}_{QUICK}" if self.quick else self.suite

    def resource_key(self, kind: str) -> str:
        """The resource key of the suite's ``kind`` (one of :data:`RESOURCE_KINDS`): ``sample__judge``."""
        if kind not in RESOURCE_KINDS:
            raise ValueError(f"unknown resource kind {kind!r}: expected one of {RESOURCE_KINDS}")
        return kind if self.suite is None else f"{self.suite}__{kind}"

    def needs(self, *kinds: str) -> set[str]:
        """The resource keys of ``kinds`` (for ``required_resource_keys``)."""
        return {self.resource_key(k) for k in kinds}

    @property
    def io_manager_key(self) -> str:
        return self.resource_key("io_manager")

    def describe(self, text: str | None) -> str:
        """``text`` as this scope's description: a quick copy says first that it never writes the full
        evaluation's tables."""
        return (quick_note(self.quick_size) if self.quick else "") + (text or "")

    def asset_args(self, stage: str) -> dict:
        """The arguments every asset of ``stage`` shares: group, IO manager, the stage as a tag."""
        return {"group_name": self.group(stage), "io_manager_key": self.io_manager_key, "tags": {"stage": stage}}

    def ins(self, *names: str, **with_metadata: dict) -> dict[str, dg.AssetIn]:
        """``dg.AssetIn`` of this scope's tables ``names`` (and ``name={metadata}`` pairs, e.g. columns)."""
        out = {n: dg.AssetIn(key=self.key(n)) for n in names}
        out |= {n: dg.AssetIn(key=self.key(n), metadata=md) for n, md in with_metadata.items()}
        return out

    # --- the suite's resources in a step ---------------------------------------------------------

    def settings(self, context):
        """The suite's :class:`~rag_eval_pipeline.defs.resources.EvalSettings` in a step."""
        return getattr(context.resources, self.resource_key("settings"))

    def store(self, context):
        """The suite's table folder in a step: the quick evaluation's ``quick/`` folder for a quick scope
        (a :class:`~rag_eval_pipeline.defs.resources.TableFolder`)."""
        return getattr(context.resources, self.resource_key("store")).folder_for(quick=self.quick, context=context)

    def judge(self, context):
        """The suite's judge resource in a step."""
        return getattr(context.resources, self.resource_key("judge"))


def quick_note(size: int) -> str:
    """The sentence that starts every quick asset's description (``size``: golden questions in the subset)."""
    return (f"Quick evaluation: a fixed stratified subset of {size} golden questions. Its own asset keys and "
            "folder: it never writes the full evaluation's tables, history, metadata plots or promoted baseline "
            "(it only reads the baseline). ")
