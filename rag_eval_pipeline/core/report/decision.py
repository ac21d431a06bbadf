"""May this ship? The run's decision, stated once: verdict, promotion, blocking failures, split, judge trust.

The report's first section, its asset metadata, ``decision.json`` beside the tables, the CLI's
``--summary-md`` and ``--junit-xml`` all render one :class:`Decision`, so the places people look agree.

Verdict (definitions in ``docs/gates-and-reports.md``, "The first screen: the decision"):

- **fail**: a blocking gate failed for a reason other than an inconclusive test (a regression the
  paired test calls real, a floor breached, a null value, a comparison across golden or corpus
  versions), the judge's calibration failed where a gate rests on a judge-based metric, or a blocking
  check the decision states failed (``run_errors_within_share``: a system's share of errored runs is
  above ``gates.max_run_error_share``);
- **inconclusive**: nothing failed outright, but the run cannot say the change is safe: a gate whose
  drop the paired test cannot tell from chance (blocking by default: then promotion does not happen),
  a non-blocking gate that could not be evaluated, no gate configured, no gate evaluated (thresholds
  configured, none comparable in this run: no baseline yet for a drop), or every gated candidate is the
  promoted baseline itself (nothing was compared);
- **pass**: no blocking failure: every blocking gate passed (or stayed within the judge's noise) and the
  calibration does not block. The reason says "every gate passed" only when every gate did; otherwise it
  names the non-blocking gates that failed ("no blocking failure ...; 1 non-blocking gate(s) failed: ..."),
  and counts the gates of a candidate that is the promoted baseline itself apart ("5 gate(s) passed, 5 unchanged
  since promotion (nothing to compare) on split test (10 gate(s))"): they compared nothing.

The blocking checks that stop ``promotion`` without stopping the report (:data:`DECIDED_CHECKS`: the gate
check, the calibration check and the run-error check) are decided here from the same functions the checks
call, so a candidate a check blocks is "fail" and "blocked" in the report, ``decision.json`` and the CLI
alike, each failing check named with its reason in ``blocking_failures``. The other blocking checks guard
tables the report reads: when one fails (or any step upstream of the report fails), Dagster skips the report;
the run then writes a *stopped* decision instead (:func:`stopped_decision`, written by the failure hook of
``defs/stopped.py``): verdict "fail", promotion "blocked", the failed checks and steps named, the previous
report set aside under ``previous/``. Every ``decision.json`` names the Dagster run it was decided in
(``run_id``) and the inputs it was decided on (``inputs``), written by :func:`write_decision` alone.

The promotion outcome is decided by the ``promotion`` step, which runs after the report, from the same
gate table and calibration: :func:`decide` states what that step does with them (promote, keep the stored
baseline, or nothing and why); the CLI and the ``promotion`` asset record what it did. "Kept" is decided
from the manifests by :func:`core.gates.unchanged_since_promotion`, the function the promotion step calls.
With no gate configured the verdict is inconclusive and the candidate is still promoted (no blocking
failure stops it); both the decision and the promotion step say that nothing checked it. Nothing here
imports Dagster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.metrics.calibration_status import NOT_EVALUATED, CalibrationStatus
from rag_eval_pipeline.core.metrics.names import trec_name
from rag_eval_pipeline.core.plain_names import (  # noqa: F401 - DECISION_FILE, PREVIOUS_DIR re-exported
    CALIBRATION_CHECK,
    DECISION_FILE,
    GATE_CHECK,
    PREVIOUS_DIR,
    RUN_ERRORS_CHECK,
)
from rag_eval_pipeline.core.report.blocks import Block, Cell, heading
from rag_eval_pipeline.core.storage import write_json_atomic

VERDICTS = ("pass", "fail", "inconclusive")
#: The blocking checks (Dagster check names) that stop ``promotion`` but not the report, whose outcome the
#: decision states: the gate table's (its rows), the judge calibration's (:class:`CalibrationStatus`) and the
#: run-error share's (``core.systems.error_reasons.error_share_failures``, passed as ``failed_checks``).
# (declared in core.plain_names, which the code location imports: defs/aggregate.py names the checks)
DECIDED_CHECKS = (GATE_CHECK, CALIBRATION_CHECK, RUN_ERRORS_CHECK)
#: How the promotion is worded when no gate is configured: the candidate is promoted (nothing blocks it), and
#: the decision and the ``promotion`` step both say that nothing checked it.
NO_GATE = "no gate is configured, so nothing checked it"
#: ... and when thresholds are configured but none could be evaluated in this run (no baseline yet for a drop).
NO_GATE_EVALUATED = "no gate was evaluated (a drop threshold needs a baseline), so nothing checked it"
#: What the promotion step does: writes the candidate, keeps the stored baseline, is blocked, or has nothing to do.
PROMOTION_ACTIONS = ("promote", "keep", "blocked", "none")


@dataclass(frozen=True)
class JudgeErrors:
    """One system's judge errors: ``errors`` claim labels the judge failed on (JUDGE_ERROR) out of ``labels``."""

    system: str
    errors: int
    labels: int


@dataclass(frozen=True)
class Decision:
    """The decision of one run (see the module docstring for the rules).

    ``verdict`` (:data:`VERDICTS`) and ``why`` (one line); ``blocking_failures`` and ``warnings`` (one line
    each, reason included); ``promotion_action`` (:data:`PROMOTION_ACTIONS`), ``promotion`` (one line) and
    ``candidate`` (the configured candidate, ``gates.promote``, or None: the system the promotion step would
    promote, whatever ``promotion_action`` says); ``split`` and ``split_questions`` (the held-out split
    every gate compares on, and its golden question count); ``baseline`` (what the candidates were compared
    with, in words); ``gates`` / ``gates_failed`` (rows of the gate table, blocking failures among them);
    ``calibration`` (:class:`CalibrationStatus`); ``judge_errors`` per system; ``quick`` (the quick evaluation);
    ``thresholds`` (how many ``gates.thresholds`` are configured; None: unknown); ``stopped_before_report``
    (True: the run stopped before its report; only ``blocking_failures`` and the promotion were decided).
    """

    verdict: str
    why: str
    blocking_failures: list[str]
    warnings: list[str]
    promotion_action: str
    promotion: str
    candidate: str | None
    split: str
    split_questions: int | None
    baseline: str
    gates: int
    gates_failed: int
    calibration: CalibrationStatus
    judge_errors: list[JudgeErrors] = field(default_factory=list)
    quick: bool = False
    thresholds: int | None = None
    stopped_before_report: bool = False

    @property
    def judge_error_total(self) -> tuple[int, int]:
        """(judge errors, claim labels) over every system."""
        return sum(j.errors for j in self.judge_errors), sum(j.labels for j in self.judge_errors)

    def judge_errors_line(self) -> str:
        """``0 of 125 claim labels (bm25_k10 0/28, team_rag 0/69)``."""
        errors, labels = self.judge_error_total
        per = ", ".join(f"{j.system} {j.errors}/{j.labels}" for j in self.judge_errors)
        return f"{errors} of {labels} claim labels" + (f" ({per})" if per else "")

    def split_line(self) -> str:
        """``test (26 golden questions)``."""
        return self.split + (f" ({self.split_questions} golden questions)" if self.split_questions is not None else "")

    def calibration_line(self) -> str:
        """``passed: κ 0.518 ≥ floor 0.4 (n 34, response level)`` or the state and its reason."""
        c = self.calibration
        if c.state == NOT_EVALUATED:
            return c.state_words
        if c.passed:
            return f"passed: {c.figures()}"
        word = "FAILED (blocks promotion)" if c.blocks else "warning (blocks nothing: no judge-based gate)"
        return f"{word}: {c.state_words}; {c.figures()}"

    def to_dict(self) -> dict[str, Any]:
        """The decision as JSON-ready values (``decision.json``); the calibration status nested. ``promote``
        (the system promoted) is there only when ``promotion_action`` is ``promote``, equal to ``candidate``:
        a blocked, kept or absent promotion never reads ``"promote": <system>``."""
        d = asdict(self)
        if self.promotion_action == "promote":
            d["promote"] = self.candidate
        d["calibration"] = asdict(self.calibration) | {"reason": self.calibration.reason,
                                                       "line": self.calibration.line()}
        d["judge_errors_line"] = self.judge_errors_line()
        return d


def _gate_label(g: Mapping[str, Any]) -> str:
    k = g.get("k")
    metric = str(g.get("metric"))
    return metric if metric == "versions" else trec_name(metric, k if k is None else int(k))


def gate_failure_line(g: Mapping[str, Any], split: str) -> str:
    """One line for a gate row that did not pass: ``gate team_rag/recall_5 (split test): regression: <reason>``."""
    if g.get("status") == "version_mismatch":
        return f"gate {g.get('system')}: version mismatch: {g.get('reason')}"
    return f"gate {g.get('system')}/{_gate_label(g)} (split {split}): {g.get('status')}: {g.get('reason')}"


def split_questions(golden: pl.DataFrame, split: str) -> int:
    """The golden questions a gate split covers: those of ``split``, or every question for "all". Input: a
    golden_set frame (``split`` column). Output: a count. Raises nothing beyond polars' for a missing column."""
    return golden.height if split == "all" else golden.filter(pl.col("split") == split).height


def judge_errors_by_system(judge_labels: pl.DataFrame) -> list[JudgeErrors]:
    """Per system: claim labels with verdict JUDGE_ERROR and all claim labels (every repeat), sorted by system.

    Input: a judge_labels frame (system, verdict). Output: a list of :class:`JudgeErrors`. Raises nothing
    beyond polars' errors for missing columns."""
    if not judge_labels.height:
        return []
    counts = (judge_labels.group_by("system")
              .agg((pl.col("verdict") == "JUDGE_ERROR").sum().alias("errors"), pl.len().alias("labels"))
              .sort("system"))
    return [JudgeErrors(r["system"], int(r["errors"]), int(r["labels"])) for r in counts.iter_rows(named=True)]


def no_gate_words(thresholds: int | None) -> str:
    """What a run with no gate row says, in the decision, the report's gate section and the CLI alike: with
    ``thresholds`` (the count of ``gates.thresholds``) configured, that none could be compared in this run and
    why; else that none is configured. Raises nothing."""
    if thresholds:
        return (f"no gate evaluated: {thresholds} threshold(s) configured, none could be compared in this run (a drop "
                "threshold needs a baseline: gates.baseline_system or a promoted one; min_value floors need none)")
    return "no gate configured (gates.thresholds is empty)"


def promotion_basis(gate_rows: int, thresholds: int | None) -> str:
    """Why a candidate may be promoted, in the decision's and the ``promotion`` step's words: ``no blocking
    failure`` when gate rows were evaluated, else :data:`NO_GATE_EVALUATED` when ``thresholds`` (the count of
    ``gates.thresholds``) are configured, else :data:`NO_GATE`. Raises nothing."""
    if gate_rows:
        return "no blocking failure"
    return NO_GATE_EVALUATED if thresholds else NO_GATE


def decide(gates: pl.DataFrame | Sequence[Mapping[str, Any]], calibration: CalibrationStatus, *, split: str,
           split_questions: int | None, baseline: str, promote: str | None, quick: bool = False,
           systems: Sequence[str] | None = None, stored_baseline: str | None = None,
           judge_errors: Sequence[JudgeErrors] = (), unchanged: bool = False, thresholds: int | None = None,
           failed_checks: Mapping[str, Sequence[str]] | None = None,
           stopped: Sequence[str] | None = None) -> Decision:
    """The decision of one run.

    Inputs: ``gates`` (the ``gate_results`` table or its rows: system, metric, k, status, reason,
    blocking, passed), ``calibration`` (:func:`core.metrics.calibration_status.calibration_status`),
    ``split`` (the gate split) and ``split_questions`` (its golden question count, or None), ``baseline``
    (what the candidates were compared with, in words), ``promote`` (``gates.promote`` or None), ``quick``
    (the quick evaluation: never promotes), ``systems`` (the systems of this run; None = unknown),
    ``stored_baseline`` (the promoted baseline's description, or None before the first promotion),
    ``judge_errors``, ``unchanged`` (:func:`core.gates.unchanged_since_promotion` of ``promote``: the
    candidate is the stored baseline itself, so the promotion step keeps it), ``thresholds`` (how many
    ``gates.thresholds`` are configured: with none evaluated the reason says so, not "no gate configured"; None:
    unknown), ``failed_checks`` (blocking check name -> one line per failure, [] when it passed: the checks of
    :data:`DECIDED_CHECKS` beyond the gate table and the calibration; each failure is a blocking failure
    ``check NAME: line``, making the verdict "fail" and the promotion "blocked"), ``stopped`` (None, or the run
    stopped before its report: one line per blocking check or step that stopped it, each a blocking failure as
    given; see :func:`stopped_decision`). Output: a :class:`Decision`
    by the rules of the module docstring; the promotion line says what the promotion step does with this
    gate table and calibration (with no gate evaluated the candidate is promoted, and the line says that
    nothing checked it: :func:`promotion_basis`). Raises ValueError for a gate
    row without ``status``. Source: accepting a change on a held-out split with criteria fixed before the
    results, by a paired test over questions (Smucker, Allan & Carterette, CIKM 2007).
    """
    rows = gates.to_dicts() if isinstance(gates, pl.DataFrame) else [dict(g) for g in gates]
    if any(not r.get("status") for r in rows):
        raise ValueError("every gate row needs a status")
    blocking = [r for r in rows if r.get("blocking") and not r.get("passed")]
    hard = [r for r in blocking if r["status"] != "inconclusive"]
    failures = [gate_failure_line(r, split) for r in blocking]
    warnings = [gate_failure_line(r, split) + " (not blocking)" for r in rows
                if not r.get("blocking") and not r.get("passed")]
    warnings += [gate_failure_line(r, split) + " (passes: block_inconclusive is off)" for r in rows
                 if r["status"] == "inconclusive" and r.get("passed")]
    if calibration.blocks:
        failures.append(f"judge calibration: {'; '.join(calibration.failures) or calibration.state}")
    checked = [f"check {name}: {line}" for name, lines in (failed_checks or {}).items() for line in lines]
    checked += list(stopped or ())
    failures += checked
    if not calibration.blocks and not calibration.passed and calibration.state != NOT_EVALUATED:
        warnings.append(f"judge calibration (not blocking: no judge-based gate): "
                        f"{'; '.join(calibration.failures) or calibration.state}")
    compared = [r for r in rows if r["status"] not in ("unchanged_since_promotion",)]
    if stopped is not None:
        verdict = "fail"
        why = (f"the run stopped before its report: {len(failures)} blocking failure(s); no gate and no judge "
               "calibration was evaluated")
    elif hard or calibration.blocks or checked:
        verdict = "fail"
        why = f"{len(failures)} blocking failure(s)"
    elif blocking or any(r["status"] == "inconclusive" for r in rows):
        verdict = "inconclusive"
        n = sum(r["status"] == "inconclusive" for r in rows)
        why = (f"{n} gate(s) inconclusive: a drop beyond its threshold that the paired test cannot tell from "
               "chance")
    elif any(r["status"] == "not_evaluable" for r in rows):
        verdict, why = "inconclusive", "a non-blocking gate could not be evaluated (a null value)"
    elif not rows and thresholds:
        verdict, why = "inconclusive", no_gate_words(thresholds)
    elif not rows:
        verdict, why = "inconclusive", "no gate configured: nothing decides whether a change is safe"
    elif not compared:
        verdict = "inconclusive"
        why = "nothing compared: every gated candidate is the promoted baseline itself (unchanged since promotion)"
    else:
        verdict = "pass"
        soft = [r for r in rows if not r.get("blocking") and not r.get("passed")]
        same = len(rows) - len(compared)  # gate rows of a candidate that is the promoted baseline: not compared
        idle = f", {same} unchanged since promotion (nothing to compare)" if same else ""
        if soft:
            named = ", ".join(f"{r.get('system')}/{_gate_label(r)} ({r['status']})" for r in soft)
            why = (f"no blocking failure on split {split} ({len(rows)} gate(s){idle}); {len(soft)} non-blocking "
                   f"gate(s) failed: {named}")
        elif same:
            why = f"{len(rows) - same} gate(s) passed{idle} on split {split} ({len(rows)} gate(s))"
        else:
            why = f"every gate passed on split {split} ({len(rows)} gate(s))"
        if not calibration.passed:
            why += "; the judge's calibration only warns (no gate is judge-based)"
    n_blocking = max(len(blocking) + (1 if calibration.blocks else 0) + len(checked), 1 if stopped is not None else 0)
    action, promotion = _promotion(n_blocking, promotion_basis(len(rows), thresholds), promote, quick, systems,
                                   stored_baseline, unchanged)
    return Decision(verdict=verdict, why=why, blocking_failures=failures, warnings=warnings,
                    promotion_action=action, promotion=promotion, candidate=promote, split=split,
                    split_questions=split_questions, baseline=baseline, gates=len(rows), gates_failed=len(blocking),
                    calibration=calibration, judge_errors=list(judge_errors), quick=quick, thresholds=thresholds,
                    stopped_before_report=stopped is not None)


def stopped_decision(stopped: Sequence[str], *, split: str, baseline: str, promote: str | None, quick: bool = False,
                     stored_baseline: str | None = None, thresholds: int | None = None,
                     kappa_floor: float = 0.0) -> Decision:
    """The decision of a run that stopped before its report (a blocking check on a table the report reads
    failed, or a step upstream of it failed): :func:`decide` with no gate row, the calibration "not evaluated"
    and ``stopped`` (one line per failed check or step, e.g. ``check s/rag_runs:every_question_has_a_run_row:
    <reason>``; an empty list still stops) as its blocking failures. Output: verdict "fail", promotion "blocked"
    (or "none" for a quick evaluation or with no candidate), ``stopped_before_report`` True. Other inputs as
    :func:`decide`. Raises nothing. Source: a blocking asset check stops its downstream steps (Dagster,
    "Asset checks", blocking checks); a consumer that cannot read a decision for the run must not ship it.
    """
    status = CalibrationStatus(state=NOT_EVALUATED, passed=False, blocks=False, floor=kappa_floor)
    return decide([], status, split=split, split_questions=None, baseline=baseline, promote=promote, quick=quick,
                  stored_baseline=stored_baseline, thresholds=thresholds, stopped=list(stopped))


def write_decision(decision: Decision, path: Path, *, run_id: str, suite: str | None, inputs: Mapping[str, Any],
                   report_html: str | None = None, report_url: str | None = None) -> Path:
    """Write ``decision.json`` (the only writer): :meth:`Decision.to_dict` plus ``run_id`` (the Dagster run it was
    decided in), ``suite``, ``inputs`` (what it was decided on: ``config_sha256``, ``golden_version``,
    ``corpus_version``; None where the run never read it), ``report_html`` / ``report_url`` (None when the run
    wrote no report). Atomic (``core.storage.write_json_atomic``): a reader sees the old file or the new one.
    Output: ``path``. Raises OSError when the folder is not writable."""
    return write_json_atomic(decision.to_dict() | {"run_id": run_id, "suite": suite, "inputs": dict(inputs),
                                                   "report_html": report_html, "report_url": report_url}, path)


def _promotion(n_blocking, basis, promote, quick, systems, stored_baseline, unchanged) -> tuple[str, str]:
    kept = stored_baseline or "none yet"
    if quick:
        return "none", "none: the quick evaluation never promotes"
    if not promote:
        return "none", "none: no candidate configured (gates.promote is not set)"
    if systems is not None and promote not in systems:
        return "blocked", (f"not promoted: gates.promote {promote!r} has no rows in this run; the stored baseline "
                           f"({kept}) stays")
    if n_blocking:
        return "blocked", (f"not promoted: {n_blocking} blocking failure(s) stop {promote}; the stored baseline "
                           f"({kept}) stays")
    if unchanged:  # decided from the manifests, as the promotion step decides it
        return "keep", (f"kept: {promote} is already the promoted baseline (same configuration and versions); "
                        "nothing is written")
    return "promote", (f"promotes {promote} as the baseline: {basis} (the promotion step, which runs after this "
                       "report, writes it)")


_VERDICT_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE"}


def verdict_word(verdict: str) -> str:
    """``PASS`` / ``FAIL`` / ``INCONCLUSIVE``."""
    return _VERDICT_WORDS.get(verdict, verdict.upper())


def decision_blocks(d: Decision) -> list[Block]:
    """The report's first section: the verdict and promotion in one sentence each, then a table with the
    blocking failures (one line each), the comparison split, the baseline, judge calibration and judge errors."""
    blocks = [heading("Decision", 2),
              Block("p", text=f"Verdict: {verdict_word(d.verdict)} — {d.why}.", css=f"verdict verdict-{d.verdict}"),
              Block("p", text=f"Promotion: {d.promotion}.", css=f"promotion promotion-{d.promotion_action}")]
    rows: list[list[Cell | str]] = []
    if d.blocking_failures:
        for i, line in enumerate(d.blocking_failures):
            rows.append(["blocking failure" if i == 0 else "", Cell(line, css="status-regression")])
    else:
        rows.append(["blocking failures", "none"])
    for i, line in enumerate(d.warnings):
        rows.append(["warnings" if i == 0 else "", Cell(line, css="status-inconclusive")])
    rows.append(["comparison split", f"{d.split_line()}: every gate and the comparison table below use it; "
                                     "the summary tables use all questions (split all)"])
    rows.append(["compared with", d.baseline])
    rows.append(["judge calibration", Cell(d.calibration_line(), css=None if d.calibration.passed else
                                           ("status-regression" if d.calibration.blocks else "status-inconclusive"))])
    errors, _labels = d.judge_error_total
    rows.append(["judge errors", Cell(d.judge_errors_line(), css="flag" if errors else None)])
    blocks.append(Block("table", headers=["", ""], rows=rows, css="meta decision"))
    return blocks
