"""Trends over the recorded runs: an inline-SVG line chart per metric and the trend page.

Drawn here (no plotting dependency); one run is noisy, so a night is read against the nights before it.
Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.report.bands import METRIC_NOTES, metric_label
from rag_eval_pipeline.core.report.blocks import (
    Block,
    Cell,
    fmt,
    fmt_count,
    fmt_when,
    num_cell,
)
from rag_eval_pipeline.core.report.html import escape_html, html_page, render_html
from rag_eval_pipeline.core.storage import write_text_atomic

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22")


def metric_labels(metrics: Iterable[str | tuple[str, int | None]]) -> list[str]:
    out = []
    for m in metrics:
        out.append(metric_label(m[0], m[1]) if isinstance(m, tuple) else str(m))
    return out


def _need_history(history: pl.DataFrame) -> None:
    missing = [c for c in ("run_id", "evaluated_at", "system", "metric", "k", "value") if c not in history.columns]
    if missing:
        raise SchemaError(f"table 'metric_history': missing columns {missing} needed by the trend")


def trend_svg(history: pl.DataFrame, metric: str | tuple[str, int | None], width: int = 720, height: int = 260) -> str:
    """One inline SVG line chart of ``metric`` over ``evaluated_at``, one line (and legend entry) per system.

    Inputs: a metric_history frame (run_id, evaluated_at, system, metric, k, value) and a metric label
    ("recall_5", "faithfulness") or a (metric, k) pair. Output: an ``<svg>`` string (every text
    escaped; each point carries a ``<title>`` tooltip; a null value breaks the line), or "" when the
    history has no row for that metric. Raises SchemaError for missing columns.
    """
    _need_history(history)
    label = metric_labels([metric])[0]
    rows = [r for r in history.sort("evaluated_at").iter_rows(named=True) if metric_label(r["metric"], r["k"]) == label]
    if not rows:
        return ""
    systems = sorted({r["system"] for r in rows})
    times = [r["evaluated_at"] for r in rows]
    ts = [t.timestamp() if isinstance(t, dt.datetime) else float(t) for t in times]
    t0, t1 = min(ts), max(ts)
    values = [r["value"] for r in rows if r["value"] is not None]
    lo = min([0.0, *values])
    hi = max([1.0, *values]) if all(0 <= v <= 1 for v in values) else max(values or [1.0])
    if hi <= lo:
        hi = lo + 1.0
    ml, mr, mt, mb = 52, 170, 16, 42
    pw, ph = width - ml - mr, height - mt - mb

    def x(t: float) -> float:
        return ml + (pw / 2 if t1 == t0 else (t - t0) / (t1 - t0) * pw)

    def y(v: float) -> float:
        return mt + ph - (v - lo) / (hi - lo) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="{escape_html(label)} trend">',
             f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fafbfc" stroke="#d5d9e0"/>']
    for i in range(6):
        v = lo + (hi - lo) * i / 5
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e6e9ef"/>')
        parts.append(f'<text x="{ml - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    ticks = sorted(set(ts))
    if len(ticks) > 6:
        step = (len(ticks) - 1) / 5
        ticks = [ticks[round(i * step)] for i in range(6)]
    for t in ticks:
        stamp = dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M")
        parts.append(f'<text x="{x(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">{escape_html(stamp)}</text>')
    parts.append(f'<text x="{ml}" y="{height - 6}">{escape_html(label)} (UTC)</text>')
    for i, system in enumerate(systems):
        color = _PALETTE[i % len(_PALETTE)]
        pts = [(x(t), r["value"], r) for t, r in zip(ts, rows) if r["system"] == system]
        segment: list[str] = []
        for px, v, _r in pts + [(None, None, None)]:
            if v is None:
                if len(segment) > 1:
                    parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{" ".join(segment)}"/>')
                segment = []
                continue
            segment.append(f"{px:.1f},{y(v):.1f}")
        radius = 3 + 2 * (len(systems) - 1 - i)  # earlier systems drawn larger: equal values stay visible as rings
        for px, v, r in pts:
            if v is None:
                continue
            parts.append(f'<circle cx="{px:.1f}" cy="{y(v):.1f}" r="{radius}" fill="{color}" stroke="#fff" '
                         f'stroke-width="1"><title>{escape_html(system)} {escape_html(label)} = {v:.4f} at {escape_html(fmt_when(r["evaluated_at"]))} '
                         f'(run {escape_html(r["run_id"])})</title></circle>')
        ly = mt + 14 + i * 16
        parts.append(f'<rect x="{ml + pw + 12}" y="{ly - 9}" width="12" height="10" fill="{color}"/>')
        parts.append(f'<text x="{ml + pw + 30}" y="{ly}">{escape_html(system)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def trend_plot(history: pl.DataFrame, metrics: Sequence[str | tuple[str, int | None]], path: str | Path) -> Path:
    """Write a self-contained HTML trend page: one inline-SVG chart per metric, one line per (system, metric).

    Inputs: a metric_history frame (run_id, evaluated_at, system, metric, k, value), ``metrics`` as
    labels ("recall_5", "faithfulness") or (metric, k) pairs, and the output ``path``. Output: the path
    written (atomically, UTF-8; no script, no external asset; each chart is followed by its values in
    a table). An empty history or a metric absent from it gives a page that says so.
    Raises SchemaError for missing history columns. Drawn by this module (no plotting dependency).
    Source: seed ``003_9cfbf16fe7b371c5.txt`` (one run is noisy: compare a night with the nights before it).
    """
    _need_history(history)
    parts = ["<h1>RAG evaluation trend</h1>"]
    if not history.height:
        parts.append("<p>No history yet.</p>")
    runs = history.select("run_id").n_unique() if history.height else 0
    parts.append(f'<p class="note">{runs} recorded run(s). Hover a point for its value and run id.</p>')
    for label in metric_labels(metrics):
        parts.append(f"<h2>{escape_html(label)}</h2>")
        svg = trend_svg(history, label) if history.height else ""
        if not svg:
            parts.append('<p class="na">No history for this metric.</p>')
            continue
        parts.append(f"<figure>{svg}<figcaption>{escape_html(METRIC_NOTES.get(label.rsplit('_', 1)[0] if label not in METRIC_NOTES else label, ''))}</figcaption></figure>")
        rows = [r for r in history.sort("evaluated_at", "system").iter_rows(named=True)
                if metric_label(r["metric"], r["k"]) == label]
        table = Block("table", headers=["evaluated at", "system", "value", "num/den", "n", "run"], rows=[
            [fmt_when(r["evaluated_at"]), r["system"],
             num_cell(fmt(r["value"])) if r["value"] is not None else Cell("not evaluable", css="na"),
             num_cell(f"{fmt_count(r.get('numerator'))}/{fmt_count(r.get('denominator'))}") if "numerator" in r else "",
             num_cell(str(r.get("n", ""))), r["run_id"]] for r in rows])
        parts.append("<details><summary>values</summary>" + render_html([table]) + "</details>")
    return write_text_atomic(html_page("RAG evaluation trend", "\n".join(parts)), Path(path))
