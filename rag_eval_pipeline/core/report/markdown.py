"""The Markdown rendering of report blocks. The Markdown-table helper and the escaping live in the leaf
module :mod:`rag_eval_pipeline.core.markdown_table` (re-exported here). Nothing here imports Dagster.
"""

from __future__ import annotations

from rag_eval_pipeline.core.markdown_table import markdown_table, md_text
from rag_eval_pipeline.core.report.blocks import Block

__all__ = ["markdown_table", "md_text", "render_markdown"]


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
