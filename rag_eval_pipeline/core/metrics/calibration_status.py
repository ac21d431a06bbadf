"""What the calibration check says, decided once: passed, or why not, and whether that blocks promotion.

The calibration check in the code location, the report's decision section, the CLI line and the CI
outputs all read :func:`calibration_status`, so they cannot disagree. A judge whose calibration against
human labels is *missing* (none exists for its judge, model and prompt, or the configuration has no
calibration section) or *stale* (made for another judge, model or prompt) never passes: nobody has
checked its numbers. The failure blocks promotion only when a gate rests on a judge-based metric;
otherwise it is a warning. A model judge is validated against human judgements before its numbers are
used (L. Zheng et al., "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", NeurIPS 2023), and
again after any judge, model or prompt change; agreement is Cohen's kappa (J. Cohen, 1960) as in
:mod:`rag_eval_pipeline.core.metrics.agreement`. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import polars as pl

from rag_eval_pipeline.core.config_sections import DEFAULT_MIN_LABELS
from rag_eval_pipeline.core.metrics.calibration import judge_based_metrics

#: The states, worst first: the state of several judge keys is the worst of theirs.
STATES = ("error", "not_configured", "missing", "stale", "kappa_null", "too_few_labels", "below_floor", "no_labels",
          "passed")
#: The state of a run that stopped before its report (``core.report.decision.stopped_decision``): nothing was
#: computed; it never passes, never blocks and warns of nothing.
NOT_EVALUATED = "not_evaluated"

_STATE_WORDS = {
    "passed": "passed",
    "error": "the calibration could not be computed",
    "not_configured": "the configuration has no calibration section",
    "missing": "no calibration against human labels for this judge, model and prompt",
    "stale": "calibrated for another judge, model or prompt",
    "too_few_labels": "not enough labels",
    "kappa_null": "κ could not be computed",
    "below_floor": "κ below the floor",
    "no_labels": "no judge labels",
    NOT_EVALUATED: "not evaluated (the run stopped before its report)",
}


@dataclass(frozen=True)
class CalibrationStatus:
    """The outcome of the calibration check.

    ``state``: one of :data:`STATES` ("passed" only when every current judge key has a current
    calibration with κ >= floor); ``passed``; ``blocks`` (True when it failed and a gate is on a
    judge-based metric: promotion stops); ``failures`` (one line per judge key that failed);
    ``kappa`` (the lowest current κ, None when none is a number: a stale row's κ was measured for another
    judge, model or prompt and is never this judge's), ``floor``, ``n`` (items compared for that κ),
    ``level`` ("claim" / "response"), ``judge_based_gates`` (sorted metric names), ``stale`` (one entry per
    stale row: its κ labelled with the judge/model/prompt it was made for, ``κ 0.800 (n 40) made for
    j/m/abc123def456``), ``kappa_ci`` (the approximate 95% interval of that lowest κ, Cohen 1960's standard
    error: ``core.metrics.agreement.kappa_interval``; None when unknown), ``min_labels`` (fewest items
    compared for a κ to count).
    """

    state: str
    passed: bool
    blocks: bool
    floor: float
    failures: list[str] = field(default_factory=list)
    kappa: float | None = None
    n: int | None = None
    level: str | None = None
    judge_based_gates: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    kappa_ci: tuple[float, float] | None = None
    min_labels: int = DEFAULT_MIN_LABELS

    @property
    def severity(self) -> str:
        """"ok" when passed, "error" when the failure blocks promotion, else "warning"."""
        return "ok" if self.passed else ("error" if self.blocks else "warning")

    @property
    def reason(self) -> str:
        """One line: why it passed or failed, and what that does to promotion."""
        if self.passed:
            return f"calibrated: {self.figures()}"
        if self.state == NOT_EVALUATED:
            return self.state_words
        what = "; ".join(self.failures) or self.state
        if self.blocks:
            return (f"calibration is required: gates rest on judge-based metrics {self.judge_based_gates}; {what}. "
                    "Blocks promotion")
        return f"{what}. A warning only: no gate is on a judge-based metric"

    def figures(self) -> str:
        """``κ 0.518 ≥ floor 0.4 (n 34, response level)``, ``κ 0.518 below floor 0.9 (...)``, ``κ null (floor 0.4)``;
        a stale calibration's κ follows, labelled: ``κ null (floor 0.4); stale κ 0.800 (n 40) made for j/m/abc``."""
        stale = f"; stale {'; '.join(self.stale)}" if self.stale else ""
        if self.kappa is None:
            return f"κ null (floor {self.floor:g})" + stale
        sign = "≥" if self.kappa >= self.floor else "below"
        ci = f" [95% CI {self.kappa_ci[0]:.3f}, {self.kappa_ci[1]:.3f}]" if self.kappa_ci else ""
        extra = ", ".join(x for x in (f"n {self.n}" if self.n is not None else "",
                                      f"{self.level} level" if self.level else "") if x)
        return f"κ {self.kappa:.3f}{ci} {sign} floor {self.floor:g}" + (f" ({extra})" if extra else "") + stale

    def line(self) -> str:
        """The text the CLI prints beside the check: the figures; when not passed, first the state and why,
        and whether it blocks: ``missing: no calibration for this judge, model and prompt; κ null (floor 0.4);
        a warning (no judge-based gate)``."""
        if self.passed:
            return self.figures()
        if self.state == NOT_EVALUATED:
            return self.state_words
        effect = ("blocks promotion (gates on " + ", ".join(self.judge_based_gates) + ")" if self.blocks
                  else "a warning (no judge-based gate)")
        why = ("" if self.state == "below_floor" else f"{self.state_words} (n {self.n} < {self.min_labels}); "
               if self.state == "too_few_labels" else f"{self.state_words}; ")  # the figures say "below floor"
        return f"{self.state.replace('_', ' ')}: {why}{self.figures()}; {effect}"

    @property
    def why_not(self) -> str:
        """Why the judge's numbers may not be read, in a few words ("" when passed): ``κ 0.169 below the floor
        0.4`` for a κ below the floor, else the state in words (``calibrated for another judge, model or
        prompt``). The report's bands read this, so they cannot disagree with the check."""
        if self.passed:
            return ""
        if self.state == "below_floor" and self.kappa is not None:
            return f"κ {self.kappa:.3f} below the floor {self.floor:g}"
        if self.state == "too_few_labels":
            return f"not enough labels (n {self.n} < {self.min_labels})"
        return self.state_words

    @property
    def state_words(self) -> str:
        """The state in words: "passed", "the configuration has no calibration section", ..."""
        return _STATE_WORDS.get(self.state, self.state)


def _key(r: dict) -> str:
    return f"{r.get('level')} {r.get('judge')}/{r.get('judge_model')}/{(r.get('prompt_sha256') or '')[:12]}"


def _made_for(r: dict) -> str:
    return (f"{r.get('calibrated_judge')}/{r.get('calibrated_judge_model')}/"
            f"{(r.get('calibrated_prompt_sha256') or '')[:12]}")


def _stale_kappa(r: dict) -> str:
    kappa = "κ null" if r.get("kappa") is None else f"κ {r['kappa']:.3f}"
    return f"{kappa} (n {r.get('n')}) made for {_made_for(r)}"


def _interval(r: dict) -> tuple[float, float] | None:
    """The approximate 95% interval of a row's κ from its confusion matrix (None when not computable)."""
    import json

    from rag_eval_pipeline.core.metrics.agreement import kappa_interval

    if not r.get("confusion"):
        return None
    low, high = kappa_interval(json.loads(r["confusion"]))
    return None if low is None or high is None else (low, high)


def calibration_status(table: pl.DataFrame | None, *, configured: bool, kappa_floor: float,
                       gated_metrics: Iterable[str], error: str | None = None,
                       min_labels: int = DEFAULT_MIN_LABELS) -> CalibrationStatus:
    """Decide the calibration check from the calibration-in-force table.

    Inputs: ``table`` (the ``judge_calibration`` table: one row per current judge key and level with
    kappa, n, stale, missing, kappa_reason, calibrated_* columns; None or empty = no judge labels),
    ``configured`` (the configuration has a ``calibration`` section), ``kappa_floor`` (in [-1, 1]),
    ``gated_metrics`` (the metric names of the gate thresholds), ``error`` (the calibration could not
    be computed: this text is the reason), ``min_labels`` (>= 1: a current row with fewer items compared
    is "too_few_labels", never passed, as if there were no calibration at all).
    Output: a :class:`CalibrationStatus`. Per judge key: missing, stale, κ null or κ below the floor is
    a failure with its reason; a stale row's κ is left out of the current κ and shown only labelled with
    the judge/model/prompt it was made for; the overall state is the worst one (:data:`STATES`). With no calibration
    section the state is ``not_configured`` (never passed). ``blocks`` = failed and at least one gated
    metric is judge-based (:func:`core.metrics.calibration.judge_based_metrics`). Rows of a verdict
    family (``level`` citation_support or nugget_coverage) count when a gate is on that family's metrics
    (:func:`core.metrics.calibration_families.gated_families`: a citation gate needs the citation-support
    calibration, a nugget gate the nugget-coverage one; a gated family with no row is missing) or when a
    calibration of it exists; an unlabelled, ungated family never fails the check. Raises nothing.
    Source: Cohen (1960) for κ; Zheng et al. (2023) for validating a judge against people.
    """
    from rag_eval_pipeline.core.metrics.calibration_families import gated_families
    from rag_eval_pipeline.core.tables import VERDICT_FAMILIES

    gated = judge_based_metrics(gated_metrics)
    floor = float(kappa_floor)
    needed = set(gated_families(gated))
    # A verdict family's row (citation_support, nugget_coverage) counts when a gate rests on that family's
    # metrics, or when people's labels of it exist (a calibration made, even stale or below the floor);
    # a family nobody labelled and no gate uses is shown in the table, never a failure.
    rows = [r for r in ([] if table is None else table.iter_rows(named=True))
            if r.get("level") not in VERDICT_FAMILIES or r.get("level") in needed or not r.get("missing")]
    # a stale row carries the κ of the calibration made for another judge, model or prompt: never the current κ
    kappas = [(r["kappa"], r.get("n"), r.get("level"), _interval(r)) for r in rows
              if r.get("kappa") is not None and not r.get("missing") and not r.get("stale")]
    stale = [_stale_kappa(r) for r in rows if r.get("stale") and not r.get("missing")]
    low = min(kappas, key=lambda t: t[0]) if kappas else (None, None, rows[0].get("level") if rows else None, None)
    failures: list[str] = []
    states: list[str] = []
    if error:
        states.append("error")
        failures.append(f"calibration could not be computed: {error}")
    elif not configured:
        states.append("not_configured")
        failures.append("no calibration: the configuration has no calibration section (human_labels, kappa_floor), "
                        "so the judge was never compared with people")
    else:
        for r in rows:
            who = _key(r)
            if r.get("missing"):
                states.append("missing")
                failures.append(f"{who}: missing: no calibration against human labels exists for this judge, model "
                                "and prompt")
            elif r.get("stale"):
                states.append("stale")
                failures.append(f"{who}: stale: the calibration in force ({_stale_kappa(r)}) was made for another "
                                "judge, model or prompt; recalibrate after a judge, model or prompt change")
            elif r.get("kappa") is None:
                states.append("kappa_null")
                failures.append(f"{who}: kappa null ({r.get('kappa_reason') or 'no reason given'})")
            elif (r.get("n") or 0) < min_labels:
                # κ on a handful of labels says little (its interval spans most of [-1, 1]): not a calibration
                states.append("too_few_labels")
                failures.append(f"{who}: not enough labels (n {r.get('n') or 0} < {min_labels}): label more items "
                                "(rag-eval label) before the judge's numbers count")
            elif r["kappa"] < floor:
                states.append("below_floor")
                failures.append(f"{who}: kappa {r['kappa']:.3f} < floor {floor:g} (n {r.get('n')})")
        for family in sorted(needed & set(VERDICT_FAMILIES) - {r.get("level") for r in rows}):
            states.append("missing")
            failures.append(f"{family}: missing: gates {sorted(gated_families(gated)[family])} need the judge's "
                            f"{family} verdicts calibrated against people, and there are none")
        if not rows:
            states.append("no_labels")
            failures.append("no judge labels to calibrate")
    state = min(states, key=STATES.index) if states else "passed"
    passed = state == "passed"
    return CalibrationStatus(state=state, passed=passed, blocks=bool(gated) and not passed, floor=floor,
                             failures=failures, kappa=low[0], n=low[1], level=low[2], judge_based_gates=gated,
                             stale=stale, kappa_ci=low[3], min_labels=int(min_labels))
