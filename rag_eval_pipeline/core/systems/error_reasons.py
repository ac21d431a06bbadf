"""Why runs failed, said plainly: ``error`` rows of ``rag_runs`` counted per system and reason.

A live system whose calls fail gives one ``error`` row per question, its reason in the ``error``
column (``core/systems/http.py``, ``python_callable.py``, ``traces.py``). ``rag-eval run`` prints,
per system, how many rows failed for each reason (``HTTP 405 x 52``, ``timeout x 3``) with the first
example, and the ``run_errors_within_share`` check blocks promotion when a system's share of error
rows is above ``gates.max_run_error_share``. Errored questions are reported apart: they are not
scored as empty retrievals (``docs/METRICS.md``).
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

_PREFIX = re.compile(r"^system '.*?', question '.*?': ")
_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^HTTP (\d{3})\b"), "HTTP {0}"),
    (re.compile(r"^timeout\b"), "timeout"),
    (re.compile(r"^connection failed\b"), "connection failed"),
    (re.compile(r"^transport error: (\w+)"), "transport error ({0})"),
    (re.compile(r"^malformed JSON body"), "malformed JSON body"),
    (re.compile(r"^the callable raised (\w+)"), "raised {0}"),
    (re.compile(r"^no trace for this question"), "no trace"),
    (re.compile(r"^root span status ERROR"), "span status ERROR"),
    # past a size bound (max_reply_bytes, the answer / hits / citations bounds): the kind ``too_large`` of
    # ``errors_by_kind`` and of the manual, before the schema rule that would otherwise take "reply ..."
    (re.compile(r".*?(?:larger than max_reply_bytes\b|\bhas (?:more than )?\d+ characters; expected at most"
                r"|\blists \d+ (?:items|hits|retrieval documents); expected at most"
                r"|^output\.value has more than \d+ characters)", re.S), "too_large"),
    (re.compile(r"^(reply|return value)\b"), "reply outside the run-log schema"),
    (re.compile(r"^the reply has no value at path"), "reply outside response_fields"),
    (re.compile(r"^the system returned no answer text"), "empty answer"),
)
_LISTED_CHARS = 300


def error_reason(text: str | None) -> str:
    """The short reason of one ``error`` text: ``HTTP 405``, ``timeout``, ``connection failed``,
    ``malformed JSON body``, ``raised ValueError``, ``no trace``, ``span status ERROR``, ``too_large`` (a reply
    past a size bound: ``max_reply_bytes``, the answer / hits / citations bounds; the kind counted in
    ``errors_by_kind``), ``reply outside the run-log schema`` ...; a reason logged by the system itself is
    its first 60 characters (``(no reason given)`` when empty). Input: the ``error`` column's text or None."""
    if not text or not text.strip():
        return "(no reason given)"
    body = _PREFIX.sub("", text.strip(), count=1)
    for pattern, label in _RULES:
        m = pattern.match(body)
        if m:
            return label.format(*m.groups())
    first = body.splitlines()[0]
    return first if len(first) <= 60 else first[:57] + "..."


def error_counts(rag_runs: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Per system of ``rag_runs``: ``questions`` (rows), ``errors`` (decision ``error``), ``share``
    (errors / questions, 0 without rows), ``by_reason`` (reason -> count, most frequent first, ties by
    name) and ``first_example`` (``question_id`` and ``error`` text, cut to 300 characters, of the first
    error row in question order; None without errors). Systems in name order."""
    out: dict[str, dict[str, Any]] = {}
    if rag_runs.height == 0:
        return out
    for system in sorted(rag_runs["system"].unique().to_list()):
        rows = rag_runs.filter(pl.col("system") == system)
        errors = rows.filter(pl.col("decision") == "error").sort("question_id")
        reasons: dict[str, int] = {}
        for text in errors["error"].to_list():
            key = error_reason(text)
            reasons[key] = reasons.get(key, 0) + 1
        first = None
        if errors.height:
            r = errors.row(0, named=True)
            first = {"question_id": r["question_id"], "error": (r["error"] or "")[:_LISTED_CHARS]}
        out[system] = {"questions": rows.height, "errors": errors.height,
                       "share": errors.height / rows.height if rows.height else 0.0,
                       "by_reason": dict(sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))),
                       "first_example": first}
    return out


def error_lines(rag_runs: pl.DataFrame) -> list[str]:
    """One line per system with error rows: ``system S: 55 of 60 questions failed: HTTP 405 x 52, timeout x 3``,
    then the first example on the next line; empty when no run failed."""
    lines = []
    for system, c in error_counts(rag_runs).items():
        if not c["errors"]:
            continue
        reasons = ", ".join(f"{reason} \u00d7 {n}" for reason, n in c["by_reason"].items())
        lines.append(f"system {system}: {c['errors']} of {c['questions']} questions failed ({c['share']:.0%}): "
                     f"{reasons}")
        ex = c["first_example"]
        lines.append(f"  first: question {ex['question_id']}: {ex['error']}")
    return lines


def error_share_failures(rag_runs: pl.DataFrame, limit: float) -> list[str]:
    """One line per system whose share of ``error`` rows is above ``limit`` (``gates.max_run_error_share``, 0..1):
    ``system mine: 1 of 7 runs errored (share 0.143 > gates.max_run_error_share 0.1): HTTP 500 × 1``; [] when
    every system is within it. The condition of the blocking check ``run_errors_within_share``, stated the same
    way by that check, by the run's decision (``core/report/decision.py``) and by ``rag-eval check``.
    Input: a ``rag_runs`` frame (system, question_id, decision, error). Raises nothing beyond polars' errors
    for a missing column."""
    lines = []
    for system, c in error_counts(rag_runs).items():
        if c["share"] > limit:
            reasons = ", ".join(f"{reason} \u00d7 {n}" for reason, n in c["by_reason"].items())
            lines.append(f"system {system}: {c['errors']} of {c['questions']} runs errored (share {c['share']:.3f} > "
                         f"gates.max_run_error_share {limit:g}): {reasons}")
    return lines


__all__ = ["error_counts", "error_lines", "error_reason", "error_share_failures"]
