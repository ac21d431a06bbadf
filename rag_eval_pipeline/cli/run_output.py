"""What ``rag-eval run`` prints after the job: the summary table, one line per check, the run's one verdict
(the decision's, with every blocking failure), the gate counts, the promotion outcome, and the message of a
failed step."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS, is_judge_based, metric_label

#: What the summary prints: the metric registry's headline metrics (those the report's summary table shows).
DEFAULT_METRICS = HEADLINE_METRICS


def format_summary(summary, metrics=DEFAULT_METRICS) -> str:
    """Render the overall rows of a metric_summary table as aligned text, one line per system and metric.

    Judge-based values carry ``judge errors N``: answers the judge could not label, left out of n.
    A retrieval metric scored at document level prints as ``recall_5 (doc)``, after its chunk-level row."""
    import polars as pl

    from rag_eval_pipeline.core.metrics.names import level_label

    rows = summary.filter((pl.col("split") == "all") & (pl.col("segment") == "all"))
    if "level" not in rows.columns:
        rows = rows.with_columns(pl.lit(None, pl.Utf8).alias("level"))
    order = {metric_label(m, k): i for i, (m, k) in enumerate(metrics)}
    rows = rows.with_columns(
        pl.struct("metric", "k")
        .map_elements(lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8)
        .alias("label")
    ).filter(pl.col("label").is_in(list(order)))
    rows = rows.with_columns(pl.col("label").replace_strict(order, default=99).alias("_o"),
                             (pl.col("level") == "doc").fill_null(False).alias("_doc")).sort("system", "_o", "_doc")
    has_errors = "judge_errors" in rows.columns
    out = [f"{'system':<22} {'metric':<30} {'value':>8} {'num/den':>13} {'n':>5}  {'judge errors':>12}  95% CI"]
    for r in rows.iter_rows(named=True):
        value = "null" if r["value"] is None else f"{r['value']:.4f}"
        ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['ci_method']}"
        nd = f"{r['numerator']:g}/{r['denominator']:g}"
        errors = ""
        if is_judge_based(r["metric"]):
            errors = str(r["judge_errors"]) if has_errors and r["judge_errors"] is not None else "unknown"
        label = level_label(r["metric"], r["k"], r["level"])
        out.append(f"{r['system']:<22} {label:<30} {value:>8} {nd:>13} {r['n']:>5}  {errors:>12}  {ci}")
    return "\n".join(out)


def step_name(step_key: str, suite: str) -> str:
    """A step of the suite's job as the user knows it: ``sample__golden_set`` -> ``golden_set``,
    ``sample__quick__judging`` -> ``judging`` (op names carry the suite's key prefix, see defs/scope.py)."""
    name = step_key.removeprefix(f"{suite}__")
    return name.removeprefix("quick__") if name != step_key else step_key


def _without_class_path(message: str, cls_name: str | None) -> str:
    """``message`` without the ``rag_eval_pipeline.core.errors.InputError: `` that Python's traceback module puts
    before our own errors' text (the text already names file, line and field); other errors keep their class."""
    if cls_name:
        return re.sub(rf"^rag_eval_pipeline(?:\.\w+)*\.{re.escape(cls_name)}: ", "", message, count=1)
    return message


def run_error_lines(runs_path: Path) -> list[str]:
    """Why systems failed, from this run's rag_runs table: per system, its error rows counted by reason
    (``HTTP 405 × 52``) and the first example (``core/systems/error_reasons.py``); [] when none failed."""
    import polars as pl

    from rag_eval_pipeline.core.systems.error_reasons import error_lines

    lines = error_lines(pl.read_parquet(runs_path, columns=["system", "question_id", "decision", "error"]))
    if not lines:
        return []
    return ["run errors (reported apart: not scored as empty retrievals; run_error_rate counts them):"] + [
        "  " + line for line in lines]


def id_mapping_lines(result, suite: str) -> list[str]:
    """What each system's id mapping did (``core/systems/id_mapping.py``), from the rag_runs materialisation:
    ids translated by chunk_map, passages aligned by text, and passages that matched no chunk (left out of
    the ranking) with the first one; [] when every id was a snapshot chunk id as is."""
    for event in result.get_asset_materialization_events():
        if event.asset_key is not None and event.asset_key.path[-1] == "rag_runs" and (
                len(event.asset_key.path) == 1 or event.asset_key.path[0] == suite):
            value = event.materialization.metadata.get("id_mapping")
            return mapping_lines(getattr(value, "value", value) or {})
    return []


def mapping_lines(mapping: dict) -> list[str]:
    """``{system: IdMapper.stats()}`` as printable lines (systems whose ids all were chunk ids as is: none)."""
    lines = []
    for system, stats in sorted(mapping.items()):
        done = {k: v for k, v in stats.items() if k not in ("ids_as_is", "unmatched_examples") and v}
        if not done:
            continue
        parts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in done.items())
        lines.append(f"  system {system}: {parts}")
        if stats.get("unmatched_texts"):
            ex = stats["unmatched_examples"][0]
            lines.append(f"    {stats['unmatched_texts']} passage(s) matched no chunk and were left out of the "
                         f"ranking; first: question {ex['question_id']}, position {ex['position']}: {ex['text']!r}")
    return ["id mapping:"] + lines if lines else []


def step_error_text(error) -> str:
    """The message of a failed step: the error raised by our code (file, line, field for bad input; without
    its class path), not Dagster's "Error occurred while executing op" wrapper. Input: a ``SerializableErrorInfo``."""
    parts: list[str] = []
    while error is not None:
        message = _without_class_path(error.message.strip(), error.cls_name)
        # skip Dagster's wrapper, and a cause whose text the message above already quotes (YAML errors)
        if error.cls_name != "DagsterExecutionStepExecutionError" and not (
                parts and message.split(": ", 1)[-1] in parts[-1]):
            parts.append(message)
        error = error.cause or error.context
    return "\n  caused by: ".join(parts) if parts else "(no message)"


# --- rag-eval run -----------------------------------------------------------------------------------

def check_lines(result, job) -> list[str]:
    """One line per check of the job: passed / warned / FAILED (blocking or not) / not run, followed by the
    check's one-line ``summary`` metadata when it has one (the calibration check: κ, floor, n, and the state
    when it did not pass); then, for each check that did not pass, its metadata in full (never cut)."""
    import dagster as dg

    graph = job.asset_layer.asset_graph
    evaluations = {(e.asset_key, e.check_name): e for e in result.get_asset_check_evaluations()}
    lines, details = [], []
    for key in sorted(graph.asset_check_keys, key=lambda k: (k.asset_key.path, k.name)):
        spec = graph.get_check_spec(key)
        name = f"{key.asset_key.to_user_string()}:{key.name}"
        e = evaluations.get((key.asset_key, key.name))
        if e is None:
            word, note = "not run", "an upstream step failed"
        elif e.passed:
            word, note = "passed", ""
        elif e.severity == dg.AssetCheckSeverity.WARN:
            word, note = "warned", "a warning: cannot block"
        else:
            word, note = "FAILED", "blocking: stops promotion" if spec.blocking else "not blocking"
        said = getattr(e.metadata.get("summary"), "value", None) if e is not None else None
        lines.append(f"  {word:<8} {name}" + (f"  ({note})" if note else "") + (f"  — {said}" if said else ""))
        if e is not None and not e.passed:
            details.append(f"\n{'WARNING' if e.severity == dg.AssetCheckSeverity.WARN else 'FAILED'} check {name}")
            for k, v in e.metadata.items():
                text = str(getattr(v, "value", v))
                if "\n" in text.strip():  # a Markdown table: from its own line
                    details.append(f"  {k}:\n" + "\n".join("    " + line for line in text.strip().splitlines()))
                elif text not in ("[]", "{}", ""):
                    details.append(f"  {k}: {text}")
    return lines + details


def gate_lines(out: Path, rewritten: bool, thresholds: int | None = None, listed: bool = False) -> list[str]:
    """The gates of this run's gate_results table: how many, how many failed blocking; not a verdict of their own
    (the ``verdict:`` line is the run's one). Every failing gate's reason in full, unless ``listed`` (the verdict
    line already lists them as blocking failures). No gate row: the decision's words for it
    (:func:`core.report.decision.no_gate_words` of ``thresholds``, the count of ``gates.thresholds``)."""
    import polars as pl

    from rag_eval_pipeline.core.storage import read_table

    path = out / "gate_results.parquet"
    if not rewritten:
        return ["gates: not evaluated (gate_results was not written by this run)"]
    gates = read_table(path, "gate_results")
    failed = gates.filter(pl.col("blocking") & ~pl.col("passed"))
    if gates.height == 0:
        from rag_eval_pipeline.core.report.decision import no_gate_words

        lines = [f"gates: {no_gate_words(thresholds)}"]
        if not thresholds:  # nothing can block: a CI job reading only the exit code would ship anything
            lines.append("  add a gate: under gates.thresholds in the configuration, e.g. "
                         "`- {metric: recall_5, max_abs_drop: 0.05}` (rag-eval init writes a starter set; "
                         "docs/gates-and-reports.md); until then nothing blocks promotion and the run exits 0")
        return lines
    # counted apart from the verdict's "N blocking failure(s)", which also counts failed checks and steps
    head = (f"gates: {gates.height} gate(s), {failed.height} of them failed blocking (the verdict's blocking "
            f"failures also count failed checks and steps; every gate in {path} and in the report)")
    if listed:
        return [head]
    from rag_eval_pipeline.core.metrics.names import level_label

    return [head] + [f"  {r['system']}/{level_label(r['metric'], r['k'], r.get('level'))}: {r['status']}: "
                     f"{r['reason']}" for r in failed.iter_rows(named=True)]


def stopped_by(failed_steps: Sequence[str], checks: Sequence) -> str | None:
    """What stopped a run before its report, for the "not decided" verdict: the failed step(s), printed right
    under the run line, else the blocking check(s) that failed or raised (``checks``: ``ci_output.check_cases``),
    named; None when neither."""
    if failed_steps:
        n = len(failed_steps)
        return "see the failed step above" if n == 1 else f"see the {n} failed steps above"
    names = [f"{c.classname[len('checks.'):]}:{c.name}" for c in checks if c.outcome in ("failed", "error")]
    if names:
        return f"blocking check {', '.join(names)} failed; see the checks above"
    return None


def verdict_line(decision_path: Path | None, extra_failures: Sequence[str] = (), stopped: str | None = None) -> str:
    """The run's verdict (``decision.json`` of this run) by the rule the CI files follow
    (:func:`core.report.ci.final_verdict`: a failed step or a failed check the decision does not decide,
    ``extra_failures``, makes it FAIL), with every blocking failure one per line; "not decided" when this run
    did not write the decision (a step or a blocking check failed before the report: ``stopped``, from
    :func:`stopped_by`, says which)."""
    import json

    from rag_eval_pipeline.core.report.ci import final_verdict
    from rag_eval_pipeline.core.report.decision import verdict_word

    if decision_path is None:
        return "verdict: not decided (the run stopped before its report" + (f"; {stopped})" if stopped else ")")
    d = json.loads(decision_path.read_text(encoding="utf-8"))
    verdict, why = final_verdict(d, extra_failures)
    lines = [f"verdict: {verdict_word(verdict)} — {why} (comparison split {d['split']}; "
             f"judge calibration {d['calibration']['line']})"]
    lines += [f"  blocking failure: {f}" for f in [*extra_failures, *d["blocking_failures"]]]
    return "\n".join(lines)


def promotion_line(result, suite: str, quick: bool, decision_path: Path | None = None,
                   blocked_by: Sequence[str] = ()) -> str:
    """Whether this run promoted a baseline, read from the ``<suite>/promotion`` materialisation's metadata:
    promoted, kept (the candidate is already the promoted baseline: nothing written), no candidate
    configured, or not promoted (the asset did not run). Not promoted says why, as the report does: the
    decision's promotion words (``decision.json`` of this run at ``decision_path``: how many blocking failures
    stop which candidate, and that the stored baseline stays) and ``blocked_by`` (:func:`blocking_names`:
    the failed gates, checks and steps), else that a blocking check or step failed."""
    import json

    if quick:
        return "promotion: none (the quick evaluation never promotes)"
    for event in result.get_asset_materialization_events():
        if event.asset_key is not None and event.asset_key.path == [suite, "promotion"]:
            md = {k: getattr(v, "value", v) for k, v in event.materialization.metadata.items()}
            system = md.get("promoted_system")
            if md.get("unchanged_since_promotion") is True:
                return (f"promotion: kept: {system} is already the promoted baseline (unchanged since promotion at "
                        f"{md.get('promoted_at')}; nothing written)")
            if "unchanged_since_promotion" not in md:  # promotion writes it whenever a candidate is configured
                return "promotion: none (no candidate configured: gates.promote is not set)"
            return f"promotion: promoted {system} as the baseline"
    by = f"; blocked by {', '.join(blocked_by)}" if blocked_by else ""
    words = None
    if decision_path is not None:
        try:
            d = json.loads(decision_path.read_text(encoding="utf-8"))
            if d.get("promotion_action") == "blocked" and str(d.get("promotion", "")).startswith("not promoted"):
                words = str(d["promotion"])
        except (OSError, ValueError, AttributeError):
            words = None
    if words:
        return f"promotion: {words}{by}"
    return ("promotion: not promoted (" + (by[2:] if by else "a blocking check failed or a step failed")
            + "; the stored baseline stays)")


def blocking_names(out: Path, gates_rewritten: bool, checks: Sequence, failed_steps: Sequence[str]) -> list[str]:
    """What blocked promotion, named short: every blocking gate row of this run's ``gate_results`` that did
    not pass (``gate team_rag/recall_5 (inconclusive)``), every failed or errored check case but the gate
    check itself (its failures are those gates: ``check sample/judge_calibration:judge_calibrated_above_floor``),
    and every failed step. Raises nothing for a missing table (no gates named)."""
    import polars as pl

    from rag_eval_pipeline.core.metrics.names import level_label
    from rag_eval_pipeline.core.plain_names import GATE_CHECK
    from rag_eval_pipeline.core.storage import read_table

    names = []
    path = out / "gate_results.parquet"
    if gates_rewritten and path.exists():
        gates = read_table(path, "gate_results")
        for r in gates.filter(pl.col("blocking") & ~pl.col("passed")).iter_rows(named=True):
            label = (r["metric"] if r["metric"] in ("versions", "baseline")
                     else level_label(r["metric"], r["k"], r.get("level")))
            names.append(f"gate {r['system']}/{label} ({r['status']})")
    names += [f"check {c.classname[len('checks.'):]}:{c.name}" for c in checks
              if c.outcome in ("failed", "error") and not (names and c.name == GATE_CHECK)]
    return names + [s.split(":", 1)[0] for s in failed_steps]  # "step golden_set failed", "interrupted (...)"


def interrupted(error) -> bool:
    """Whether a step's ``SerializableErrorInfo`` chain is Dagster's interrupt (SIGTERM or SIGINT during the step)."""
    while error is not None:
        if error.cls_name == "DagsterExecutionInterruptedError":
            return True
        error = error.cause or error.context
    return False
