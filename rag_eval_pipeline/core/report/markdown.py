"""The Markdown rendering of report blocks, and the one Markdown-table helper every Markdown table
of the product is written with (reports and asset metadata). Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rag_eval_pipeline.core.report.blocks import Block, Cell


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

    Inputs: ``headers`` (one per column) and ``rows`` (each a sequence of cells: a :class:`Cell`
    (its ``text`` is shown), None (an empty cell) or any value (``str(value)``)). Every cell is
    escaped with :func:`md_text`, so a ``|``, a newline or ``<script>`` in a value cannot break the
    table or open a tag. Output: the header line, the ``|---|`` separator and one line per row,
    joined by newlines (no trailing newline). Raises ValueError when a row's length differs from the
    header's. Format: https://github.github.com/gfm/#tables-extension-
    """
    headers = list(headers)
    lines = ["| " + " | ".join(md_text(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    for i, row in enumerate(rows, start=1):
        row = list(row)
        if len(row) != len(headers):
            raise ValueError(f"markdown_table: row {i} has {len(row)} cells for {len(headers)} columns")
        cells = ("" if c is None else md_text(c.text if isinstance(c, Cell) else c) for c in row)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_markdown(blocks: list[Block]) -> str:
    """The blocks as Markdown: headings, paragraphs, quotes, tables (:func:`markdown_table`), groups
    flattened, an SVG as its caption, a link as its text and target. Every text escaped. Raises nothing."""
    out: list[str] = []
    for b in blocks:
        if b.kind == "h":
            out += ["#" * b.level + " " + md_text(b.text), ""]
        elif b.kind in ("p", "note"):
            out += [md_text(b.text), ""]
        elif b.kind == "quote":
            out += ["> " + md_text(b.text), ""]
        elif b.kind == "table":
            out += [markdown_table(b.headers, b.rows), ""]
        elif b.kind == "group":
            out.append(render_markdown(b.children))
        elif b.kind == "svg":
            out += [md_text(b.text), ""]
        elif b.kind == "link":
            out += [md_text(b.text) + " " + md_text(b.href or ""), ""]
    return "\n".join(out)
