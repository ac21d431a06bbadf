"""The HTML rendering of report blocks: one self-contained page (inline CSS, no script, no external
asset), every text escaped with :func:`html.escape`. Nothing here imports Dagster.
"""

from __future__ import annotations

import html
import re
from typing import Any

from rag_eval_pipeline.core.report.blocks import Block, Cell


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def toc(blocks: list[Block]) -> str:
    """The page's contents: a link to every level-2 heading."""
    links = [f'<a href="#{_slug(b.text)}">{escape_html(b.text)}</a>' for b in blocks if b.kind == "h" and b.level == 2]
    return '<nav class="toc">' + " · ".join(links) + "</nav>"


def escape_html(text: Any) -> str:
    """``str(text)`` escaped for HTML text and attribute values (:func:`html.escape` with quotes)."""
    return html.escape(str(text), quote=True)


def render_html(blocks: list[Block]) -> str:
    """The blocks as HTML fragments, every text escaped (an SVG block's markup is built escaped)."""
    out: list[str] = []
    for b in blocks:
        cls = f' class="{escape_html(b.css)}"' if b.css else ""
        if b.kind == "h":
            anchor = f' id="{_slug(b.text)}"' if b.level == 2 else ""
            out.append(f"<h{b.level}{anchor}{cls}>{escape_html(b.text)}</h{b.level}>")
        elif b.kind == "p":
            out.append(f"<p{cls}>{escape_html(b.text)}</p>")
        elif b.kind == "note":
            out.append(f'<p class="note">{escape_html(b.text)}</p>')
        elif b.kind == "quote":
            out.append(f"<blockquote{cls}>{escape_html(b.text)}</blockquote>")
        elif b.kind == "table":
            head = ("<thead><tr>" + "".join(f"<th>{escape_html(h).replace('_', '_<wbr>')}</th>" for h in b.headers)
                    + "</tr></thead>" if any(b.headers) else "")
            out.append(f"<table{cls}>{head}<tbody>")
            for row in b.rows:
                cells = []
                for c in row:
                    c = c if isinstance(c, Cell) else Cell(str(c))
                    attrs = ((f' class="{escape_html(c.css)}"' if c.css else "")
                             + (f' title="{escape_html(c.title)}"' if c.title else "")
                             + (f' data-sort="{escape_html(c.sort)}"' if c.sort is not None else ""))
                    text = escape_html(c.text)
                    if c.href:
                        text = f'<a href="{escape_html(c.href)}">{text}</a>'
                    cells.append(f"<td{attrs}>{text}</td>")
                out.append("<tr>" + "".join(cells) + "</tr>")
            out.append("</tbody></table>")
        elif b.kind == "group":
            anchor = f' id="{escape_html(b.anchor)}"' if b.anchor else ""
            out.append(f"<section{anchor}{cls}>" + render_html(b.children) + "</section>")
        elif b.kind == "svg":
            out.append(f'<figure>{b.svg}<figcaption>{escape_html(b.text)}</figcaption></figure>')
        elif b.kind == "link":
            href = escape_html(b.href or "")
            out.append(f'<p>{escape_html(b.text)} <a href="{href}">{href}</a></p>')
    return "\n".join(out)


_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:1200px;
padding:0 1rem;color:#1d2330;line-height:1.45}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{margin-top:2.2rem;border-bottom:2px solid #dfe3ea;padding-bottom:.2rem}
h3{margin-top:1.5rem}h4{margin:.6rem 0 .3rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.86rem;max-width:100%}
th,td{border:1px solid #d5d9e0;padding:.25rem .5rem;text-align:left;vertical-align:top;overflow-wrap:break-word}
th{background:#f1f3f7}tbody tr:nth-child(even){background:#fafbfc}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap;overflow-wrap:normal}
table.meta td:first-child{white-space:nowrap;color:#4a5160;overflow-wrap:normal}
.na{color:#7a4d00;background:#fff4dc}.flag{color:#8a5a00}
.band-good{background:#e3f4e6}.band-fair{background:#fff4d6}.band-poor{background:#ffe3cc}.band-bad{background:#fbd9d9}
.status-pass{background:#e3f4e6}.status-regression,.status-below_floor,.status-version_mismatch{background:#fbd9d9}
.status-within_noise,.status-inconclusive{background:#fff4d6}.status-not_evaluable{background:#fff4dc}
.restricted{color:#6b6f76;font-style:italic;background:#eceef2}
.verdict-SUPPORTED{background:#e3f4e6}.verdict-CONTRADICTED{background:#fbd9d9}
.verdict-NOT_MENTIONED{background:#fff4d6}.verdict-JUDGE_ERROR{background:#eceef2}
section.card{border:1px solid #d5d9e0;border-radius:6px;padding:.2rem 1rem .6rem;margin:1rem 0;background:#fff}
blockquote{margin:.3rem 0;padding:.3rem .8rem;border-left:4px solid #9aa7bd;background:#f6f8fb;white-space:pre-wrap}
p.note{color:#4a5160;font-size:.9rem}.meta{color:#4a5160}
nav.toc{font-size:.9rem;margin:.3rem 0 1rem}nav.toc a{color:#2b4c9b}
figure{margin:.5rem 0 1.5rem}figcaption{font-size:.85rem;color:#4a5160}
svg text{font-family:system-ui,sans-serif;font-size:11px;fill:#1d2330}
p.verdict{font-size:1.35rem;font-weight:700;padding:.45rem .8rem;border-radius:6px;margin:.4rem 0}
p.verdict-pass{background:#e3f4e6;color:#14532d}p.verdict-fail{background:#fbd9d9;color:#7f1d1d}
p.verdict-inconclusive{background:#fff4d6;color:#713f12}
p.promotion{font-size:1.1rem;font-weight:600;margin:.3rem 0 .6rem}
table.decision{font-size:.92rem}
"""


def html_page(title: str, body: str) -> str:
    """A whole HTML page around ``body`` (already escaped HTML) with the report's inline CSS."""
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{escape_html(title)}</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")

