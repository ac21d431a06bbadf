"""A tiny document model that both renderers (Markdown and HTML) draw, and the value formatting
the report's tables share. Texts are plain; the renderers escape them. Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Cell:
    """A table cell: ``text`` (escaped when rendered), an optional CSS class, tooltip and sort key."""

    text: str
    css: str | None = None
    title: str | None = None
    sort: str | None = None  # the value a sortable table orders this cell by (HTML ``data-sort``)
    href: str | None = None  # HTML only: the text links there (e.g. ``#q-...``, a card on the same page)


@dataclass
class Block:
    """One piece of a report, rendered by both renderers: a heading, paragraph, note, table, quote, group
    (a card), inline SVG or link. Texts are plain; the renderers escape them."""

    kind: str  # h, p, note, table, quote, group, svg, link
    text: str = ""
    level: int = 2
    headers: list[str] = field(default_factory=list)
    rows: Sequence[Sequence[Cell | str]] = field(default_factory=list)
    children: list[Block] = field(default_factory=list)
    css: str | None = None
    svg: str = ""  # raw SVG markup built by this module (every text inside already escaped)
    href: str | None = None  # kind "link": a relative link shown after ``text``
    anchor: str | None = None  # kind "group": the HTML id other pages link to (``report.html#<anchor>``)


def heading(text: str, level: int = 2) -> Block:
    """A heading block of ``level`` (2 = a section, listed in the HTML page's contents)."""
    return Block("h", text=text, level=level)


def para(text: str, css: str | None = None) -> Block:
    """A paragraph block with an optional CSS class."""
    return Block("p", text=text, css=css)


def fmt(v: float | None, digits: int = 4) -> str:
    """``v`` with ``digits`` decimals; "null" for None or NaN (never 0)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    return f"{v:.{digits}f}"


def fmt_count(v: float | None) -> str:
    """A numerator or denominator: up to 4 decimals, no trailing zeros (25.5, 35); "?" for None."""
    if v is None:
        return "?"
    return f"{round(v, 4):g}"


def fmt_when(t: Any) -> str:
    """A datetime as "YYYY-MM-DD HH:MM UTC" (converted to UTC when it has a zone); anything else as ``str``."""
    if isinstance(t, dt.datetime):
        t = t.astimezone(dt.UTC) if t.tzinfo else t
        return t.strftime("%Y-%m-%d %H:%M UTC")
    return str(t)


def short_sha(sha: str | None, n: int = 12) -> str:
    """The first ``n`` hex digits of a sha256, or "none"."""
    return "none" if not sha else sha[:n]


def num_cell(text: str, css: str | None = None, title: str | None = None, sort: str | None = None) -> Cell:
    """A right-aligned numeric cell (CSS class "num", plus ``css``; ``sort``: the value a sortable table orders by)."""
    return Cell(text, css=("num " + css) if css else "num", title=title, sort=sort)


def value_cell(row: dict | None, judge_based: bool = False) -> Cell:
    """``0.7286 (25.5/35)`` or ``not evaluable (k of n)``; never 0 for a null. With ``judge_based``, the
    row's judge-error count follows: ``0.7286 (25.5/35) · judge errors 2``."""
    if row is None:
        return Cell("absent", css="na")
    errors = f" · judge errors {int(row.get('judge_errors') or 0)}" if judge_based else ""
    if row["value"] is None:
        return Cell(f"not evaluable ({row.get('n_not_evaluable') or 0} of {row.get('n') or 0}){errors}", css="na",
                    title="no question in the denominator")
    flag = " *" if row.get("small_segment") else ""
    return num_cell(f"{row['value']:.3f} ({fmt_count(row['numerator'])}/{fmt_count(row['denominator'])}){flag}{errors}",
                    title=f"n={row.get('n')}")

