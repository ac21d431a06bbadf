"""Trends over the recorded runs: an inline-SVG line chart per metric, the trend page and the report's
history section.

Drawn here (no plotting dependency); one run is noisy, so a night is read against the nights before it.
Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.report.bands import METRIC_NOTES, is_judge_based, metric_label
from rag_eval_pipeline.core.report.blocks import (
    Block,
    Cell,
    fmt,
    fmt_count,
    fmt_when,
    heading,
    num_cell,
    para,
)
from rag_eval_pipeline.core.report.html import escape_html, html_page, render_html
from rag_eval_pipeline.core.storage import write_text_atomic

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22")
#: Line dash patterns, one per system (with the colour and the marker shape): two systems with equal
#: values draw one line over the other, and the dashes of the upper one let the lower one show through.
_DASHES = ("", "7 4", "2 3", "10 3 2 3", "4 2 1 2", "12 5")
_MARKERS = ("circle", "square", "triangle", "diamond")
#: Width of one character of the 11 px labels, a safe upper bound for digits and Latin text.
_CHAR_PX = 7.0
_LEGEND_ROW_PX = 16
_LEGEND_CHARS = 20


def _marker(shape: str, cx: float, cy: float, r: float, color: str, title: str) -> str:
    common = f'fill="{color}" stroke="#fff" stroke-width="1"><title>{title}</title>'
    if shape == "square":
        return f'<rect x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" {common}</rect>'
    if shape == "triangle":
        pts = f"{cx:.1f},{cy - r:.1f} {cx + r:.1f},{cy + r:.1f} {cx - r:.1f},{cy + r:.1f}"
        return f'<polygon points="{pts}" {common}</polygon>'
    if shape == "diamond":
        pts = f"{cx:.1f},{cy - r:.1f} {cx + r:.1f},{cy:.1f} {cx:.1f},{cy + r:.1f} {cx - r:.1f},{cy:.1f}"
        return f'<polygon points="{pts}" {common}</polygon>'
    return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" {common}</circle>'


def _spaced_ticks(ticks: list[float], x, label_px: float) -> list[float]:
    """Ticks whose centred labels (``label_px`` wide) do not overlap: greedily from the first, and the
    last one kept in place of its neighbour when the two would collide."""
    kept: list[float] = []
    for t in sorted(set(ticks)):
        if not kept or x(t) - x(kept[-1]) >= label_px:
            kept.append(t)
    last = max(ticks) if ticks else None
    if last is not None and kept and kept[-1] != last:
        if len(kept) > 1 and x(last) - x(kept[-2]) >= label_px:
            kept[-1] = last
        elif len(kept) == 1:
            kept = [kept[0]] if x(last) - x(kept[0]) < label_px else [kept[0], last]
    return kept


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
    ("recall_5", "faithfulness") or a (metric, k) pair; ``width``/``height`` in px (the height grows
    so that every legend entry fits). Output: an ``<svg>`` string (every text escaped; each point
    carries a ``<title>`` tooltip, which names every system sharing that value in that run; a null
    value breaks the line), or "" when the history has no row for that metric. Labels never
    overlap: time ticks are dropped until their labels are apart, legend entries get a row each
    (long names shortened with "…", the full name in the tooltip). Each system has its own colour,
    dash pattern and marker shape, so systems with equal values stay distinguishable.
    Raises SchemaError for missing columns.
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
    ml, mr, mt, mb = 52, 12 + 18 + int(_LEGEND_CHARS * _CHAR_PX) + 8, 16, 42
    height = max(height, mt + 14 + len(systems) * _LEGEND_ROW_PX + mb)
    pw, ph = width - ml - mr, height - mt - mb

    def x(t: float) -> float:
        return ml + (pw / 2 if t1 == t0 else (t - t0) / (t1 - t0) * pw)

    def y(v: float) -> float:
        return mt + ph - (v - lo) / (hi - lo) * ph

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" '
             f'role="img" aria-label="{escape_html(label)} trend">',
             f'<rect x="{ml}" y="{mt}" width="{pw}" height="{ph}" fill="#fafbfc" stroke="#d5d9e0"/>']
    for i in range(6):
        v = lo + (hi - lo) * i / 5
        parts.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#e6e9ef"/>')
        parts.append(f'<text x="{ml - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
    stamp_format = "%Y-%m-%d %H:%M"
    label_px = len("2026-01-01 00:00") * _CHAR_PX + 8
    for t in _spaced_ticks(ts, x, label_px):
        stamp = dt.datetime.fromtimestamp(t, dt.UTC).strftime(stamp_format)
        parts.append(f'<text class="tick" x="{x(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">'
                     f'{escape_html(stamp)}</text>')
    parts.append(f'<text x="{ml}" y="{height - 6}">{escape_html(label)} (UTC)</text>')
    # systems sharing one value in one run: every tooltip there names them all
    sharing: dict[tuple[str, float], list[str]] = {}
    for r in rows:
        if r["value"] is not None:
            sharing.setdefault((r["run_id"], round(r["value"], 12)), []).append(r["system"])
    for i, system in enumerate(systems):
        color = _PALETTE[i % len(_PALETTE)]
        dash = _DASHES[i % len(_DASHES)]
        shape = _MARKERS[i % len(_MARKERS)]
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        pts = [(x(t), r["value"], r) for t, r in zip(ts, rows) if r["system"] == system]
        segment: list[str] = []
        for px, v, _r in pts + [(None, None, None)]:
            if v is None:
                if len(segment) > 1:
                    parts.append(f'<polyline fill="none" stroke="{color}" stroke-width="2"{dash_attr} '
                                 f'points="{" ".join(segment)}"/>')
                segment = []
                continue
            segment.append(f"{px:.1f},{y(v):.1f}")
        radius = 3 + 1.5 * ((len(systems) - 1 - i) % 4)  # earlier systems drawn larger: equal values stay visible
        for px, v, r in pts:
            if v is None:
                continue
            same = sharing.get((r["run_id"], round(v, 12)), [system])
            who = ", ".join(same) + (" (equal values)" if len(same) > 1 else "")
            title = (f'{escape_html(who)} {escape_html(label)} = {v:.4f} at {escape_html(fmt_when(r["evaluated_at"]))} '
                     f'(run {escape_html(r["run_id"])})')
            parts.append(_marker(shape, px, y(v), radius, color, title))
        ly = mt + 14 + i * _LEGEND_ROW_PX
        lx = ml + pw + 12
        parts.append(f'<line x1="{lx}" x2="{lx + 18}" y1="{ly - 4}" y2="{ly - 4}" stroke="{color}" stroke-width="2"'
                     f'{dash_attr}/>')
        parts.append(_marker(shape, lx + 9, ly - 4, 3, color, escape_html(system)))
        shown = system if len(system) <= _LEGEND_CHARS else system[:_LEGEND_CHARS - 1] + "…"
        parts.append(f'<text class="legend" x="{lx + 24}" y="{ly}">{escape_html(shown)}'
                     f'<title>{escape_html(system)}</title></text>')
    parts.append("</svg>")
    return "".join(parts)


def trend_plot(history: pl.DataFrame, metrics: Sequence[str | tuple[str, int | None]], path: str | Path) -> Path:
    """Write a self-contained HTML trend page: one inline-SVG chart per metric, one line per (system, metric).

    Inputs: a metric_history frame (run_id, evaluated_at, system, metric, k, value), ``metrics`` as
    labels ("recall_5", "faithfulness") or (metric, k) pairs, and the output ``path``. Output: the path
    written (atomically, UTF-8; no script, no external asset; each chart is followed by its values in
    a table). An empty history or a metric absent from it gives a page that says so.
    Raises SchemaError for missing history columns. Drawn by this module (no plotting dependency).
    Definitions: ``docs/METRICS.md`` (one run is noisy: compare a night with the nights before it).
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
        note = METRIC_NOTES.get(label.rsplit('_', 1)[0] if label not in METRIC_NOTES else label, '')
        parts.append(f"<figure>{svg}<figcaption>{escape_html(note)}</figcaption></figure>")
        rows = [r for r in history.sort("evaluated_at", "system").iter_rows(named=True)
                if metric_label(r["metric"], r["k"]) == label]
        table = Block("table", headers=["evaluated at", "system", "value", "num/den", "n", "run"], rows=[
            [fmt_when(r["evaluated_at"]), r["system"],
             num_cell(fmt(r["value"])) if r["value"] is not None else Cell("not evaluable", css="na"),
             num_cell(f"{fmt_count(r.get('numerator'))}/{fmt_count(r.get('denominator'))}") if "numerator" in r else "",
             num_cell(str(r.get("n", ""))), r["run_id"]] for r in rows])
        parts.append("<details><summary>values</summary>" + render_html([table]) + "</details>")
    return write_text_atomic(html_page("RAG evaluation trend", "\n".join(parts)), Path(path))


def history_section(history: pl.DataFrame | None, trend_metrics, trend_href: str | None) -> list[Block]:
    """The "History (split all)" section: the recorded runs, per system and trend metric the previous and
    latest value and their change (judge-based values with their judge errors when the history records
    them), and an inline SVG chart per metric (:func:`trend_svg`).

    Inputs: ``metric_history`` (None or empty: "no history yet"), the trend metrics (labels or (metric, k)),
    the trend page's link (None for none). Output: blocks."""
    blocks = [heading("History (split all)", 2)]
    if history is None or not history.height:
        blocks.append(para("No history yet: this is the first recorded run."))
        return blocks
    runs = history.select("run_id", "evaluated_at").unique().sort("evaluated_at")
    blocks.append(para(f"{runs.height} recorded run(s), from {fmt_when(runs['evaluated_at'][0])} to "
                     f"{fmt_when(runs['evaluated_at'][-1])}."))
    if trend_href:
        blocks.append(Block("link", text="Every run, metric by metric:", href=trend_href))
    last_two = runs["run_id"].to_list()[-2:]
    with_errors = "judge_errors" in history.columns
    rows = []
    hist = history.with_columns(pl.struct("metric", "k").map_elements(
        lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8).alias("_label"))
    for label in metric_labels(trend_metrics):
        for system in sorted(hist["system"].unique().to_list()):
            sel = hist.filter((pl.col("_label") == label) & (pl.col("system") == system))
            vals = {r["run_id"]: r["value"] for r in sel.iter_rows(named=True)}
            if not vals:
                continue
            errors = ({r["run_id"]: r["judge_errors"] for r in sel.iter_rows(named=True)}
                      if with_errors and is_judge_based(label) else None)

            def shown(run_id: str | None, v: float | None, none_text: str, *,
                  errors: dict | None = errors) -> Cell:
                if v is None:
                    return Cell(none_text, css="na" if none_text != "—" else None)
                cell = num_cell(fmt(v))
                if errors is not None:
                    count = errors.get(run_id)
                    cell.text += f" · judge errors {count if count is not None else '?'}"
                return cell

            latest = vals.get(last_two[-1])
            prev = vals.get(last_two[0]) if len(last_two) == 2 else None
            change = "—" if latest is None or prev is None else f"{latest - prev:+.4f}"
            doc = "level" in sel.columns and set(sel["level"].to_list()) == {"doc"}  # scored per document only
            rows.append([system, label + (" (doc)" if doc else ""),
                         shown(last_two[0] if len(last_two) == 2 else None, prev, "—"),
                         shown(last_two[-1], latest, "not evaluable"), num_cell(change)])
    if rows:
        blocks.append(Block("table", headers=["system", "metric", "previous run", "latest run", "change"], rows=rows))
        if not with_errors and any(is_judge_based(label) for label in metric_labels(trend_metrics)):
            blocks.append(Block("note", text="The history does not record judge errors per run: read judge-based "
                                             "trends with the judge-error counts of the summary above."))
    for label in metric_labels(trend_metrics):
        svg = trend_svg(history, label)
        if svg:
            doc = "level" in hist.columns and set(hist.filter(pl.col("_label") == label)["level"].to_list()) == {"doc"}
            blocks.append(Block("svg", svg=svg, text=f"{label}{' (doc)' if doc else ''} over the recorded runs, one "
                                                     "line per system."))
    return blocks
