"""A run that stops before its report leaves a *stopped* decision, never an earlier run's.

When a blocking check on a table the report reads fails (``judge_error_share``, ``every_question_has_a_run_row``
...), or any step upstream of ``evaluation_report`` fails, Dagster skips the report. Without this module
``report.md``, ``report.html`` and ``decision.json`` would stay those of an earlier run, and a CI job reading
``decision.json`` could read ``promotion_action: promote`` for a candidate that was just blocked.

:func:`stopped_hook` is a Dagster failure hook (``dg.failure_hook``) that :func:`guard` attaches to every asset
upstream of the report and to every blocking check on them (``AssetsDefinition.with_hooks``), so it travels
with the assets into every job that runs them: ``rag-eval run``, a job launched from the UI, an asset selection
materialised from the UI (Dagster's implicit asset job) and the nightly schedule alike. When such a step fails
in a run that selects the report, the hook, in the failed step's process, before the run ends:

1. moves the last decided run's ``report.md``, ``report.html`` and ``decision.json`` into ``previous/``
   (``os.replace``: nothing is deleted; a second stopped run in a row finds no report to move and only
   replaces the stopped ``decision.json``, so ``previous/`` keeps the last decided run's);
2. writes ``decision.json`` with :func:`core.report.decision.stopped_decision`, by the one writer
   (:func:`core.report.decision.write_decision`): verdict ``fail``, ``promotion_action`` ``blocked``,
   ``stopped_before_report: true``, the failed checks (with their reasons) and steps in
   ``blocking_failures``, this run's ``run_id`` and the configuration it ran (``inputs``).

A second failure in the same run adds its lines to the stopped decision. A run whose ``decision.json``
already names it (its report was written: a later step failed) is left alone. A hook that itself fails is
logged by Dagster and does not fail the run; a process killed outright runs no hook: the ``run_id`` in
``decision.json`` is the consumer's proof of which run it describes (docs/gates-and-reports.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.plain_names import DECISION_FILE, PREVIOUS_DIR
from rag_eval_pipeline.defs.scope import SHARDS, SuiteScope

#: The files a stopped run sets aside (``previous/``) before writing its stopped decision.
SET_ASIDE = ("report.md", "report.html", DECISION_FILE)


def _read(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def set_aside(folder: Path) -> list[str]:
    """Move ``report.md``, ``report.html`` and ``decision.json`` of ``folder`` into ``folder/previous/``
    (replacing what was there), each with one ``os.replace``. Output: the names moved. Raises OSError when the
    folder is not writable."""
    moved = []
    for name in SET_ASIDE:
        src = folder / name
        if src.exists():
            (folder / PREVIOUS_DIR).mkdir(exist_ok=True)
            os.replace(src, folder / PREVIOUS_DIR / name)
            moved.append(name)
    return moved


def _reason(evaluation) -> str:
    """A failed check's reason: its ``reason`` metadata, else its description, else its scalar metadata
    (``judge_errors 12; labels 12; share 1.0; limit 0.05``)."""
    md = {k: getattr(v, "value", v) for k, v in (evaluation.metadata or {}).items()}
    if md.get("reason"):
        return str(md["reason"])
    if getattr(evaluation, "description", None):
        return str(evaluation.description)
    figures = [f"{k} {v}" for k, v in md.items() if isinstance(v, (int, float, str)) and not isinstance(v, bool)]
    return "; ".join(figures) or "failed"


def failure_lines(context: dg.HookContext) -> list[str]:
    """What stopped the run at this hook's step: one line per blocking check of the step that failed
    (``check <asset>:<check>: <reason>``, the reason from the check's result: :func:`_reason`), else the step's
    own error (``step <step key>: <error, first line>``). Reads the run's event log. Raises only what the
    instance raises."""
    lines = []
    records = context.instance.all_logs(context.run_id, of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION)
    for record in records:
        event = record.dagster_event
        if event is None or record.step_key != context.step_key:
            continue
        ev = event.event_specific_data
        if not isinstance(ev, dg.AssetCheckEvaluation) or ev.passed or ev.severity != dg.AssetCheckSeverity.ERROR:
            continue
        lines.append(f"check {ev.asset_key.to_user_string()}:{ev.check_name}: {_reason(ev)}")
    if lines:
        return lines
    exc = context.op_exception
    error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}" if exc else "failed"
    return [f"step {context.step_key}: {error}"]


def selects_report(context: dg.HookContext, report_key: dg.AssetKey) -> bool:
    """Whether this hook's run materialises ``report_key``: in the run's asset selection when it has one (a UI
    selection, the nightly schedule), else among the steps of its execution plan (a job, ``execute_in_process``,
    ``dg.materialize``). True when neither can be read (the cautious answer: the run may have meant to decide).
    Raises only what the instance raises."""
    run = context.instance.get_run_by_id(context.run_id)
    if run is None:
        return True
    if run.asset_selection:
        return report_key in run.asset_selection
    snap = (context.instance.get_execution_plan_snapshot(run.execution_plan_snapshot_id)
            if run.execution_plan_snapshot_id else None)
    if snap is None:
        return True
    keys = snap.step_keys_to_execute or [step.key for step in snap.steps]
    return "__".join(report_key.path) in keys  # an asset's step key: its key's parts joined by "__"


def write_stopped(context: dg.HookContext, scope: SuiteScope, report_key: dg.AssetKey,
                  in_shard: bool = False) -> Path | None:
    """The hook's work (see the module docstring). Output: the path of the stopped ``decision.json``, or None
    when this run does not select the report or already wrote its decision. ``in_shard``: the step is a question
    shard's (``<suite>__question_shards``): its run never holds the report, but is always the first part of a
    full evaluation that now cannot be decided, so it writes the stopped decision too. Raises OSError on an unwritable
    folder, ConfigError on a configuration that no longer loads (the hook's failure is logged by Dagster)."""
    from rag_eval_pipeline.core.baseline import BaselineDamaged, read_baseline
    from rag_eval_pipeline.core.report.decision import stopped_decision, write_decision
    from rag_eval_pipeline.defs.report import baseline_words, decision_inputs

    if not in_shard and not selects_report(context, report_key):
        return None
    store = scope.store(context)
    folder = store.folder()
    path = folder / DECISION_FILE
    current = _read(path) if path.exists() else None
    lines = failure_lines(context)
    if current is not None and current.get("run_id") == context.run_id:
        if not current.get("stopped_before_report"):
            return None  # this run wrote its report: a step after it failed
        lines = [*current.get("blocking_failures", []), *lines]
    elif current is None or not current.get("stopped_before_report"):
        moved = set_aside(folder)
        if moved:
            context.log.warning(f"the run stopped before its report: the last report ({', '.join(moved)}) moved to "
                                f"{folder / PREVIOUS_DIR}")
    settings = scope.settings(context)
    cfg = settings.config
    try:
        promoted = read_baseline(store.path("baseline").parent)
    except BaselineDamaged:
        promoted = None
    manifest = dict(promoted.manifest) if promoted is not None else None
    stored = f"{manifest.get('system')}, promoted {manifest.get('promoted_at', '?')}" if manifest else None
    decision = stopped_decision(
        lines, split=cfg.gate_split, baseline=baseline_words(manifest, cfg.baseline_system), promote=cfg.gates.promote,
        quick=scope.quick, thresholds=len(cfg.thresholds), kappa_floor=cfg.calibration.kappa_floor,
        stored_baseline=stored)
    written = write_decision(decision, path, run_id=context.run_id, suite=scope.suite, inputs=decision_inputs(settings))
    context.log.warning(f"decision.json: verdict fail, promotion {decision.promotion_action} (the run stopped before "
                        f"its report: {'; '.join(lines)})")
    return written


def stopped_hook(scope: SuiteScope, report_key: dg.AssetKey, in_shard: bool = False) -> dg.HookDefinition:
    """The failure hook of ``scope``'s steps upstream of its report (see the module docstring); ``in_shard``: the
    hook of its question shards' steps (:func:`write_stopped`). It needs the suite's settings and store resources."""
    name = scope.op("stopped_before_report") + ("__in_shard" if in_shard else "")

    @dg.failure_hook(name=name, required_resource_keys=scope.needs("settings", "store"))
    def stopped_before_report(context: dg.HookContext) -> None:
        write_stopped(context, scope, report_key, in_shard=in_shard)

    return stopped_before_report


def guard(scope: SuiteScope, assets: list, checks: list, report_key: dg.AssetKey) -> tuple[list, list]:
    """(assets, checks) of ``scope`` with :func:`stopped_hook` on every asset upstream of ``report_key`` (the report
    included) and every blocking check on one of them; the others unchanged."""
    deps: dict[dg.AssetKey, set[dg.AssetKey]] = {}
    for a in assets:
        if isinstance(a, dg.AssetsDefinition):
            for key, keys in a.asset_deps.items():
                deps[key] = set(keys)
    upstream, todo = set(), [report_key]  # the report and what it reads, transitively, within these assets
    while todo:
        key = todo.pop()
        if key not in upstream and key in deps:
            upstream.add(key)
            todo.extend(deps[key])
    hooks = {False: {stopped_hook(scope, report_key)}, True: {stopped_hook(scope, report_key, in_shard=True)}}
    depth = len(scope.prefix)

    def in_shard(keys) -> bool:  # a question shard's step: <suite>/shards/<table>
        return any(len(k.path) > depth and k.path[depth] == SHARDS for k in keys)

    def guarded(d) -> bool:
        return isinstance(d, dg.AssetsDefinition) and bool(set(d.keys) & upstream)

    def guarded_check(c) -> bool:
        return any(spec.blocking and spec.asset_key in upstream for spec in c.check_specs)

    return ([a.with_hooks(hooks[in_shard(a.keys)]) if guarded(a) else a for a in assets],
            [c.with_hooks(hooks[in_shard([s.asset_key for s in c.check_specs])]) if guarded_check(c) else c
             for c in checks])
