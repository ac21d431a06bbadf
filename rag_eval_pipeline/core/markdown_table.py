"""The one Markdown-table helper every Markdown table of the product is written with (reports, asset
metadata, calibration tables), and the escaping of a text inside Markdown. A leaf module: it imports
nothing from the package, so any layer may use it. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def md_text(text: Any) -> str:
    """``str(text)`` made safe inside Markdown and a table cell.

    Markdown viewers pass raw HTML through, so ``&`` and ``<`` (the only characters that can start
    markup) become entities; ``|`` is escaped (it would split a cell); line breaks become spaces.
    Input: any value. Output: one line of text. Raises nothing.
    """
    text = str(text).replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def markdown_table(headers: Sequence[Any], rows: Iterable[Sequence[Any]]) -> str:
    """A GitHub-flavoured Markdown table.

    Inputs: ``headers`` (one per column) and ``rows`` (each a sequence of cells: an object with a
    ``text`` attribute, as the report's ``Cell`` (its ``text`` is shown), None (an empty cell) or any
    value (``str(value)``)). Every cell is escaped with :func:`md_text`, so a ``|``, a newline or
    ``<script>`` in a value cannot break the table or open a tag. Output: the header line, the
    ``|---|`` separator and one line per row, joined by newlines (no trailing newline). Raises
    ValueError when a row's length differs from the header's. Format: https://github.github.com/gfm/#tables-extension-
    """
    headers = list(headers)
    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for i, row in enumerate(rows, start=1):
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"markdown_table: row {i} has {len(row)} cells for {len(headers)} columns")
        cells = ("" if c is None else md_text(getattr(c, "text", c)) for c in row)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
