"""Reports people read: one Markdown and one self-contained HTML page per evaluation run, and a trend page.

Source: seed ``003_9cfbf16fe7b371c5.txt`` (read a run by its mean faithfulness in four bands, then
open the questions with low faithfulness and read, for each, the question, the answer and the
previews of the chunks that were retrieved; one run is noisy, so compare against the judge's own
noise before acting on a difference). The bands are used as the seed states them: >= 0.85,
0.65-0.84, 0.50-0.64, < 0.50, read here as the half-open intervals [0.85, 1], [0.65, 0.85),
[0.50, 0.65), [0, 0.50). Seed ``000_1000bb13b7b4c340.txt``: retrieval failure and abstention are
shown side by side, never blended.

Access control (the rule, applied to every page this module writes). A chunk is *restricted* for
the viewer when its ``acl`` is null (unknown: fail closed) or non-empty and shares no group with
``viewer_groups`` (an empty ``acl`` means everyone). Then:

1. a restricted chunk's text and title are never shown: its preview reads
   ``[restricted: N chars hidden]``;
2. the answer of a (system, question), its claims, quotes, justifications and judge errors are
   withheld as a whole when any chunk among that run's retrieved ids or cited ids is restricted;
3. a question's reference answer is withheld when any of its golden evidence chunks (``relevant``
   or a claim's ``supporting`` ids) is restricted;
4. as a second line of defence, every other text shown (question, answer, claim, quote, reference
   answer, error) is withheld when it contains the whole text of a restricted chunk or any
   20-character substring of one (compared after folding case and collapsing whitespace).

A chunk id missing from the snapshot cannot be judged and does not by itself withhold anything.
Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
import html
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.storage import write_text_atomic

#: (metric, preferred k) of the headline table, in display order; k None = no cut-off.
HEADLINE_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("P", 5), ("success", 5), ("ndcg_cut", 10), ("recip_rank", None), ("map", None),
    ("claim_evidence_availability", 5), ("evidence_retrieved", None), ("coverage", None),
    ("answer_without_evidence_rate", None), ("false_abstention_rate", None),
    ("abstention_with_evidence", None), ("abstention_without_evidence", None),
    ("faithfulness", None), ("faithfulness_holistic", None), ("contradicted_claim_rate", None),
    ("judge_error_rate", None), ("run_error_rate", None),
)
#: Metrics of the "retrieval failure versus abstention" table (seed 000).
DECISION_METRICS: tuple[str, ...] = (
    "evidence_retrieved", "false_abstention_rate", "abstention_with_evidence", "abstention_without_evidence",
    "answer_without_evidence_rate", "coverage", "run_error_rate",
)
#: Metrics of the per-segment breakdown.
SEGMENT_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("evidence_retrieved", None), ("coverage", None), ("false_abstention_rate", None),
    ("answer_without_evidence_rate", None), ("faithfulness", None),
)
#: Metrics the interpretation bands apply to (seed 003 reads a mean faithfulness score).
BANDED_METRICS: frozenset[str] = frozenset({"faithfulness", "faithfulness_holistic"})
#: Lower-is-better metrics (a rising line is bad).
LOWER_IS_BETTER: frozenset[str] = frozenset({
    "answer_without_evidence_rate", "false_abstention_rate", "contradicted_claim_rate", "judge_error_rate",
    "run_error_rate", "quote_downgrade_rate", "abstention_with_evidence",
})
METRIC_NOTES: dict[str, str] = {
    "recall": "share of a question's relevant chunks found in the top k",
    "P": "share of the top k that is relevant",
    "success": "1 when any relevant chunk is in the top k",
    "ndcg_cut": "graded ranking quality of the top k",
    "recip_rank": "1 / rank of the first relevant chunk",
    "map": "mean average precision",
    "claim_evidence_availability": "share of golden claims with a supporting chunk in the top k",
    "evidence_retrieved": "answerable questions where any evidence chunk was retrieved",
    "coverage": "answered share of the answerable and absent questions",
    "answer_without_evidence_rate": "absent questions answered anyway (lower is better)",
    "false_abstention_rate": "answerable questions the system abstained on (lower is better)",
    "abstention_with_evidence": "abstentions on answerable questions with the evidence in the context: a generator miss",
    "abstention_without_evidence": "abstentions on answerable questions without the evidence: a retrieval failure",
    "faithfulness": "SUPPORTED claims / judged claims, per answer, averaged",
    "faithfulness_holistic": "whole-answer score YES 1 / PARTIAL 0.5 / NO 0, averaged",
    "contradicted_claim_rate": "CONTRADICTED claims / judged claims (lower is better)",
    "judge_error_rate": "claim rows the judge failed on (lower is better)",
    "run_error_rate": "questions whose run failed (lower is better)",
}
PREVIEW_CHARS = 200
LEAK_WINDOW = 20


@dataclass(frozen=True)
class Band:
    """One interpretation band of a faithfulness mean (seed 003): ``low`` <= value < next band's low."""

    label: str  # the range as written in the seed, e.g. "0.65-0.84"
    low: float
    name: str  # short name
    reading: str  # what to do, in this project's words
    css: str


BANDS: tuple[Band, ...] = (
    Band("≥ 0.85", 0.85, "healthy", "unsupported claims are rare", "band-good"),
    Band("0.65–0.84", 0.65, "room to improve",
         "tighten the instruction against unsupported statements, or revisit how many chunks reach the generator",
         "band-fair"),
    Band("0.50–0.64", 0.50, "frequent unsupported claims",
         "read the worst questions below claim by claim and fix the most common failure first", "band-poor"),
    Band("below 0.50", 0.0, "broken",
         "something basic is wrong: suspect the judge itself, or a prompt that constrains nothing", "band-bad"),
)
_BAND_EPS = 1e-9


def interpretation_band(value: float | None) -> Band | None:
    """The seed-003 band of a faithfulness value.

    Input: a float in [0, 1], or None/NaN. Output: the :class:`Band` (label "≥ 0.85" for 0.85 and above,
    "0.65–0.84" for [0.65, 0.85), "0.50–0.64" for [0.50, 0.65), "below 0.50" under that), or None for a
    null/NaN value (not evaluable has no band). A tolerance of 1e-9 absorbs float rounding at the
    edges (17/20 lands in the top band). Raises ValueError for a value outside [0, 1].
    Source: seed ``003_9cfbf16fe7b371c5.txt`` ("how to read the mean").
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if value < -_BAND_EPS or value > 1 + _BAND_EPS:
        raise ValueError(f"a faithfulness value lies in [0, 1], got {value!r}")
    for band in BANDS:
        if value + _BAND_EPS >= band.low:
            return band
    return BANDS[-1]  # pragma: no cover - the last band starts at 0


def metric_label(metric: str, k: int | None) -> str:
    """The trec_eval-style name of a (metric, k) row: ("recall", 5) -> "recall_5"; ("map", None) -> "map"."""
    return metric if k is None else f"{metric}_{k}"


# --------------------------------------------------------------------------------------------
# access control


def readable_by(acl: Sequence[str] | None, viewer_groups: Iterable[str]) -> bool:
    """True when a chunk with ``acl`` may be shown to a reader in ``viewer_groups``.

    Input: the chunk's acl (list of group names; empty = everyone; None = unknown) and the viewer's
    groups. Output: True for an empty acl or one sharing a group with the viewer; False for None
    (fail closed) or a disjoint acl. Raises nothing.
    """
    if acl is None:
        return False
    acl = list(acl)
    return not acl or bool(set(acl) & set(viewer_groups))


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def find_leaks(texts: Iterable[str | None], restricted_texts: Iterable[str | None],
               window: int = LEAK_WINDOW) -> set[str]:
    """The texts that contain restricted text.

    Inputs: ``texts`` to be shown, ``restricted_texts`` (texts of chunks the viewer may not read),
    ``window`` (int >= 1). Output: the subset of ``texts`` that contain a whole restricted text
    shorter than ``window``, or any ``window``-character substring of a longer one, compared after
    case folding and collapsing whitespace. Cost: one pass over the restricted texts against an index
    of the shown texts' windows. Raises ValueError for ``window`` < 1.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    shown = {t: _norm(t) for t in texts if t}
    index: dict[str, set[str]] = {}
    for original, norm in shown.items():
        for i in range(len(norm) - window + 1):
            index.setdefault(norm[i:i + window], set()).add(original)
    leaks: set[str] = set()
    for r in restricted_texts:
        rn = _norm(r or "")
        if not rn:
            continue
        if len(rn) < window:
            leaks.update(o for o, n in shown.items() if rn in n)
            continue
        for i in range(len(rn) - window + 1):
            hit = index.get(rn[i:i + window])
            if hit:
                leaks.update(hit)
    return leaks


# --------------------------------------------------------------------------------------------
# a tiny document model rendered twice (Markdown and HTML)


@dataclass
class Cell:
    """A table cell: ``text`` (escaped when rendered), an optional CSS class and tooltip."""

    text: str
    css: str | None = None
    title: str | None = None


@dataclass
class Block:
    """One piece of a report, rendered by both renderers: a heading, paragraph, note, table, quote, group
    (a card), inline SVG or link. Texts are plain; the renderers escape them."""

    kind: str  # h, p, note, table, quote, group, svg, link
    text: str = ""
    level: int = 2
    headers: list[str] = field(default_factory=list)
    rows: list[list[Cell | str]] = field(default_factory=list)
    children: list[Block] = field(default_factory=list)
    css: str | None = None
    svg: str = ""  # raw SVG markup built by this module (every text inside already escaped)
    href: str | None = None  # kind "link": a relative link shown after ``text``


def _h(text: str, level: int = 2) -> Block:
    return Block("h", text=text, level=level)


def _p(text: str, css: str | None = None) -> Block:
    return Block("p", text=text, css=css)


def _md_text(text: str) -> str:
    # Markdown viewers pass raw HTML through, so the Markdown is escaped too; pipes would break tables.
    # Only "&" and "<" can start markup; ">" stays readable.
    text = str(text).replace("&", "&amp;").replace("<", "&lt;")
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _render_md(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        if b.kind == "h":
            out += ["#" * b.level + " " + _md_text(b.text), ""]
        elif b.kind in ("p", "note"):
            out += [_md_text(b.text), ""]
        elif b.kind == "quote":
            out += ["> " + _md_text(b.text), ""]
        elif b.kind == "table":
            out.append("| " + " | ".join(_md_text(h) for h in b.headers) + " |")
            out.append("|" + "---|" * len(b.headers))
            for row in b.rows:
                out.append("| " + " | ".join(_md_text(c.text if isinstance(c, Cell) else c) for c in row) + " |")
            out.append("")
        elif b.kind == "group":
            out.append(_render_md(b.children))
        elif b.kind == "svg":
            out += [_md_text(b.text), ""]
        elif b.kind == "link":
            out += [_md_text(b.text) + " " + _md_text(b.href or ""), ""]
    return "\n".join(out)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _toc(blocks: list[Block]) -> str:
    links = [f'<a href="#{_slug(b.text)}">{_e(b.text)}</a>' for b in blocks if b.kind == "h" and b.level == 2]
    return '<nav class="toc">' + " · ".join(links) + "</nav>"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _render_html_blocks(blocks: list[Block]) -> str:
    out: list[str] = []
    for b in blocks:
        cls = f' class="{_e(b.css)}"' if b.css else ""
        if b.kind == "h":
            anchor = f' id="{_slug(b.text)}"' if b.level == 2 else ""
            out.append(f"<h{b.level}{anchor}{cls}>{_e(b.text)}</h{b.level}>")
        elif b.kind == "p":
            out.append(f"<p{cls}>{_e(b.text)}</p>")
        elif b.kind == "note":
            out.append(f'<p class="note">{_e(b.text)}</p>')
        elif b.kind == "quote":
            out.append(f"<blockquote{cls}>{_e(b.text)}</blockquote>")
        elif b.kind == "table":
            head = ("<thead><tr>" + "".join(f"<th>{_e(h).replace('_', '_<wbr>')}</th>" for h in b.headers) + "</tr></thead>"
                    if any(b.headers) else "")
            out.append(f"<table{cls}>{head}<tbody>")
            for row in b.rows:
                cells = []
                for c in row:
                    c = c if isinstance(c, Cell) else Cell(str(c))
                    attrs = (f' class="{_e(c.css)}"' if c.css else "") + (f' title="{_e(c.title)}"' if c.title else "")
                    cells.append(f"<td{attrs}>{_e(c.text)}</td>")
                out.append("<tr>" + "".join(cells) + "</tr>")
            out.append("</tbody></table>")
        elif b.kind == "group":
            out.append(f"<section{cls}>" + _render_html_blocks(b.children) + "</section>")
        elif b.kind == "svg":
            out.append(f'<figure>{b.svg}<figcaption>{_e(b.text)}</figcaption></figure>')
        elif b.kind == "link":
            out.append(f'<p>{_e(b.text)} <a href="{_e(b.href or "")}">{_e(b.href or "")}</a></p>')
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
.status-pass{background:#e3f4e6}.status-regression,.status-version_mismatch{background:#fbd9d9}
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
"""


def _page(title: str, body: str) -> str:
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>\n{body}\n</body></html>\n")


# --------------------------------------------------------------------------------------------
# formatting


def _fmt(v: float | None, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "null"
    return f"{v:.{digits}f}"


def _g(v: float | None) -> str:
    if v is None:
        return "?"
    return f"{round(v, 4):g}"


def _when(t: Any) -> str:
    if isinstance(t, dt.datetime):
        t = t.astimezone(dt.timezone.utc) if t.tzinfo else t
        return t.strftime("%Y-%m-%d %H:%M UTC")
    return str(t)


def _short(sha: str | None, n: int = 12) -> str:
    return "none" if not sha else sha[:n]


def _num(text: str, css: str | None = None, title: str | None = None) -> Cell:
    return Cell(text, css=("num " + css) if css else "num", title=title)


def _value_cell(row: dict | None) -> Cell:
    """``0.7286 (25.5/35)`` or ``not evaluable (k of n)``; never 0 for a null."""
    if row is None:
        return Cell("absent", css="na")
    if row["value"] is None:
        return Cell(f"not evaluable ({row.get('n_not_evaluable') or 0} of {row.get('n') or 0})", css="na",
                    title="no question in the denominator")
    flag = " *" if row.get("small_segment") else ""
    return _num(f"{row['value']:.3f} ({_g(row['numerator'])}/{_g(row['denominator'])}){flag}",
                title=f"n={row.get('n')}")


# --------------------------------------------------------------------------------------------
# inputs


_NEEDED: dict[str, tuple[str, ...]] = {
    "metric_summary": ("system", "split", "segment", "metric", "k", "value", "numerator", "denominator", "n",
                       "n_not_evaluable", "ci_low", "ci_high", "ci_method", "judge_errors", "ranking_mode",
                       "small_segment"),
    "question_metrics": ("system", "question_id", "metric", "k", "value", "status"),
    "rag_runs": ("system", "question_id", "retrieved", "decision", "answer", "citations", "error",
                 "corpus_version", "golden_version", "retriever", "generator", "model", "prompt_version"),
    "golden_set": ("question_id", "golden_version", "question", "answerability", "relevant", "reference_answer",
                   "claims", "split", "segments"),
    "corpus_snapshot": ("chunk_id", "text", "title", "status", "acl"),
    "judge_labels": ("system", "question_id", "claim_id", "claim", "verdict", "quote", "quote_found",
                     "justification", "judge", "judge_model", "prompt_sha256", "repeat", "error"),
    "answer_judgements": ("system", "question_id", "status", "judge", "judge_model", "prompt_sha256", "repeat"),
}


def _need(df: pl.DataFrame | None, table: str) -> None:
    if df is None:
        raise SchemaError(f"table {table!r} is required for the report")
    missing = [c for c in _NEEDED[table] if c not in df.columns]
    if missing:
        raise SchemaError(f"table {table!r}: missing columns {missing} needed by the report")


def _pick_k(summary: pl.DataFrame, metric: str, preferred: int | None) -> int | None:
    """``preferred`` when the summary has it for ``metric``; else the largest k below it, else the smallest."""
    ks = sorted({k for k in summary.filter(pl.col("metric") == metric)["k"].to_list() if k is not None})
    if preferred is None or not ks:
        return None if not ks else (preferred if preferred in ks else ks[-1])
    if preferred in ks:
        return preferred
    below = [k for k in ks if k < preferred]
    return below[-1] if below else ks[0]


def _summary_rows(summary: pl.DataFrame, split: str, segment: str) -> dict[tuple[str, str, int | None], dict]:
    rows = summary.filter((pl.col("split") == split) & (pl.col("segment") == segment))
    return {(r["system"], r["metric"], r["k"]): r for r in rows.iter_rows(named=True)}


# --------------------------------------------------------------------------------------------
# the report


@dataclass(frozen=True)
class Report:
    """A rendered report.

    ``markdown`` and ``html`` hold the same content (the HTML is one self-contained page: inline CSS,
    no script, no external asset). ``headline`` is one row per (system, metric label) of the summary
    table: system, metric, value (float or None), numerator, denominator, n, n_not_evaluable, ci_low,
    ci_high, band. ``withheld`` counts texts withheld by the access rule, ``restricted_chunks`` the
    chunk previews hidden.
    """

    markdown: str
    html: str
    headline: list[dict[str, Any]]
    withheld: int
    restricted_chunks: int


class _Access:
    """The viewer's view of the snapshot; collects every text to show and withholds leaking ones."""

    def __init__(self, snapshot: pl.DataFrame, viewer_groups: Sequence[str]):
        self.viewer = tuple(viewer_groups)
        self.chunks: dict[str, dict] = {}
        for r in snapshot.select("chunk_id", "text", "title", "status", "acl").iter_rows(named=True):
            self.chunks.setdefault(r["chunk_id"], r)
        self.restricted = {cid for cid, r in self.chunks.items() if not readable_by(r["acl"], self.viewer)}
        self.withheld = 0
        self.hidden_previews = 0
        self._leaks: set[str] | None = None
        self._pending: set[str] = set()

    def is_restricted(self, chunk_id: str) -> bool:
        return chunk_id in self.restricted

    def want(self, *texts: str | None) -> None:
        self._pending.update(t for t in texts if t)

    def finalize(self) -> None:
        self._leaks = find_leaks(self._pending, (self.chunks[c]["text"] for c in self.restricted))

    def show(self, text: str | None, withhold_reason: str | None = None) -> Cell:
        """The text as a cell, or a restricted marker when a rule withholds it."""
        if text is None:
            return Cell("(none)", css="na")
        assert self._leaks is not None, "finalize() first"
        if withhold_reason is None and text in self._leaks:
            withhold_reason = "contains text of a restricted chunk"
        if withhold_reason:
            self.withheld += 1
            return Cell(f"[restricted: withheld, {withhold_reason}]", css="restricted")
        return Cell(text)

    def preview(self, chunk_id: str) -> tuple[Cell, Cell]:
        """(title, preview) cells of one chunk."""
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            return Cell("(not in snapshot)", css="na"), Cell("(not in snapshot)", css="na")
        text = chunk["text"] or ""
        if chunk_id in self.restricted:
            self.hidden_previews += 1
            return Cell("[restricted]", css="restricted"), Cell(f"[restricted: {len(text)} chars hidden]", css="restricted")
        prev = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS].rstrip() + " …"
        return Cell(chunk["title"] or ""), Cell(prev)


def build_report(
    summary: pl.DataFrame,
    question_metrics: pl.DataFrame,
    rag_runs: pl.DataFrame,
    golden: pl.DataFrame,
    snapshot: pl.DataFrame,
    judge_labels: pl.DataFrame,
    answer_judgements: pl.DataFrame,
    calibration: pl.DataFrame | None = None,
    variance: pl.DataFrame | None = None,
    gates: Sequence[dict] | None = None,
    history: pl.DataFrame | None = None,
    viewer_groups: Sequence[str] | str = ("customers",),
    worst_n: int = 10,
    *,
    baseline_manifest: dict | None = None,
    generated_at: dt.datetime | None = None,
    trend_metrics: Sequence[str | tuple[str, int | None]] = ("faithfulness", "recall_5", "false_abstention_rate"),
    trend_href: str | None = "trend.html",
) -> Report:
    """Render one evaluation run as Markdown and as a self-contained HTML page.

    Inputs (polars frames with the ``core.tables`` schemas): ``summary`` (metric_summary),
    ``question_metrics``, ``rag_runs``, ``golden`` (golden_set), ``snapshot`` (corpus_snapshot),
    ``judge_labels``, ``answer_judgements``; optional ``calibration`` (judge_calibration table),
    ``variance`` (judge_variance table), ``gates`` (list of dicts with keys system, metric, k,
    candidate, baseline, difference, p_value (or p), wins, ties, losses, status, reason; e.g.
    ``gate_results.to_dicts()``), ``history`` (metric_history), ``baseline_manifest`` (the promoted
    baseline's manifest.json), ``viewer_groups`` (the reader's groups; a single str counts as one
    group), ``worst_n`` (questions per system and list), ``generated_at`` (shown in the header),
    ``trend_metrics`` (labels drawn inline from ``history``), ``trend_href`` (link to the trend page,
    None for none).

    Output: a :class:`Report`. Sections: run header (systems and their manifests, corpus and golden
    versions, judge, model and prompt sha256, ranking mode, viewer groups); per system the headline
    metrics (value, numerator/denominator, n, not-evaluable count, 95% CI, small-segment and
    judge-error flags, the seed-003 band beside faithfulness); retrieval failures and abstentions
    side by side; a per-segment breakdown; the worst questions (lowest faithfulness, answered-absent,
    false abstention, run errors) with question, decision, answer, claims with verdict and quote, and
    chunk previews; the judge's calibration and noise; the baseline comparison; the history. A null
    value is shown as "not evaluable" with its counts, never as 0. Every text is escaped
    (``html.escape`` in both renderings); restricted text is withheld by the rule in the module
    docstring.

    Raises SchemaError when a required table is None or misses a column; ValueError when
    ``worst_n`` < 0. Source: seed ``003_9cfbf16fe7b371c5.txt`` (bands, reading failures), seed
    ``000_1000bb13b7b4c340.txt`` (retrieval failure versus abstention).
    """
    for df, name in ((summary, "metric_summary"), (question_metrics, "question_metrics"), (rag_runs, "rag_runs"),
                     (golden, "golden_set"), (snapshot, "corpus_snapshot"), (judge_labels, "judge_labels"),
                     (answer_judgements, "answer_judgements")):
        _need(df, name)
    if worst_n < 0:
        raise ValueError(f"worst_n must be >= 0, got {worst_n}")
    viewer = (viewer_groups,) if isinstance(viewer_groups, str) else tuple(viewer_groups)
    access = _Access(snapshot, viewer)
    systems = sorted(set(rag_runs["system"].to_list()) | set(summary["system"].to_list()))

    blocks: list[Block] = []
    blocks += _header(summary, rag_runs, golden, snapshot, judge_labels, answer_judgements, systems, viewer,
                      access, generated_at, baseline_manifest)
    headline_blocks, headline = _headline(summary, systems)
    blocks += headline_blocks
    blocks += _decisions(summary, systems)
    blocks += _gates(gates, baseline_manifest)
    blocks += _judge_trust(calibration, variance)
    blocks += _segments(summary, systems)
    blocks += _history(history, trend_metrics, trend_href)
    worst = _worst_questions(question_metrics, rag_runs, golden, judge_labels, systems, worst_n, access)
    # the worst questions go last: they are long; their texts are checked for leaks in one pass
    access.finalize()
    blocks += worst(access)

    title = "RAG evaluation report"
    md = f"# {title}\n\n" + _render_md(blocks)
    body = f"<h1>{_e(title)}</h1>\n" + _toc(blocks) + "\n" + _render_html_blocks(blocks)
    return Report(markdown=md, html=_page(title, body), headline=headline, withheld=access.withheld,
                  restricted_chunks=access.hidden_previews)


def _header(summary, rag_runs, golden, snapshot, judge_labels, answer_judgements, systems, viewer, access,
            generated_at, baseline_manifest) -> list[Block]:
    blocks: list[Block] = [_h("Run", 2)]
    facts = []
    if generated_at is not None:
        facts.append(["generated at", generated_at.isoformat(timespec="seconds")])
    corpus_versions = sorted({v for v in rag_runs["corpus_version"].to_list() if v})
    golden_versions = sorted({v for v in golden["golden_version"].to_list() if v})
    facts.append(["corpus version", ", ".join(corpus_versions) or "unknown"])
    facts.append(["corpus", f"{snapshot.height} chunks, {len(access.restricted)} restricted for this viewer"])
    facts.append(["golden version", ", ".join(golden_versions) or "unknown"])
    splits = dict(golden.group_by("split").len().iter_rows()) if golden.height else {}
    classes = dict(golden.group_by("answerability").len().iter_rows()) if golden.height else {}
    facts.append(["golden questions", f"{golden.height} (" + ", ".join(f"{k} {v}" for k, v in sorted(splits.items()))
                  + "; " + ", ".join(f"{k} {v}" for k, v in sorted(classes.items())) + ")"])
    judges = (judge_labels.select("judge", "judge_model", "prompt_sha256")
              .vstack(answer_judgements.select("judge", "judge_model", "prompt_sha256"))
              .unique().sort("judge", "judge_model", nulls_last=True))
    for j in judges.iter_rows(named=True):
        facts.append(["judge", f"{j['judge']} · model {j['judge_model']} · prompt sha256 {j['prompt_sha256']}"])
    if not judges.height:
        facts.append(["judge", "no judged answer"])
    repeats = answer_judgements["repeat"].n_unique() if answer_judgements.height else 0
    facts.append(["judge repeats", str(repeats)])
    modes = sorted({m for m in summary["ranking_mode"].to_list() if m})
    facts.append(["ranking mode", ", ".join(modes) or "unknown"])
    facts.append(["viewer groups", ", ".join(viewer) or "(none: only chunks open to everyone are shown)"])
    if baseline_manifest:
        facts.append(["promoted baseline", f"{baseline_manifest.get('system')} (promoted "
                                           f"{baseline_manifest.get('promoted_at', '?')})"])
    blocks.append(Block("table", headers=["", ""], rows=facts, css="meta"))

    rows = []
    first = rag_runs.group_by("system", maintain_order=True).first()
    for r in first.sort("system").iter_rows(named=True):
        n = rag_runs.filter(pl.col("system") == r["system"]).height
        rows.append([r["system"], str(n), r["generator"] or "", r["model"] or "", r["prompt_version"] or "",
                     Cell(r["retriever"] or "", title="retriever configuration"), _short(r["corpus_version"])])
    blocks.append(_h("Systems", 3))
    blocks.append(Block("table", headers=["system", "runs", "generator", "model", "prompt version", "retriever",
                                          "corpus"], rows=rows))
    return blocks


def _headline(summary: pl.DataFrame, systems: list[str]) -> tuple[list[Block], list[dict]]:
    rows_by_key = _summary_rows(summary, "all", "all")
    blocks: list[Block] = [
        _h("Summary", 2),
        Block("note", text="All questions (split all, segment all). Value with numerator/denominator; n = questions "
                           "in the set; not evaluable = questions outside the metric's denominator (a null, never a "
                           "0). 95% CI: Wilson for 0/1 rates, percentile bootstrap otherwise. * = small segment. "
                           "Faithfulness bands (seed 003): ≥ 0.85 healthy; 0.65–0.84 room to improve; 0.50–0.64 "
                           "frequent unsupported claims; below 0.50 broken."),
    ]
    headline: list[dict] = []
    for system in systems:
        table_rows = []
        for metric, pref in HEADLINE_METRICS:
            k = _pick_k(summary, metric, pref)
            r = rows_by_key.get((system, metric, k))
            if r is None:
                continue
            label = metric_label(metric, k)
            band = None
            if metric in BANDED_METRICS and r["value"] is not None:
                band = interpretation_band(min(max(r["value"], 0.0), 1.0))
            flags = []
            if r["small_segment"]:
                flags.append("small segment")
            if r["judge_errors"]:
                flags.append(f"{r['judge_errors']} judge errors")
            if r["value"] is None:
                value_cell = Cell("not evaluable", css="na", title="denominator 0")
                nd = Cell(f"—/{_g(r['denominator'] or 0)}", css="na")
            else:
                value_cell = _num(f"{r['value']:.4f}")
                nd = _num(f"{_g(r['numerator'])}/{_g(r['denominator'])}")
            ci = ("—" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}] {r['ci_method']}")
            reading = ""
            if band is not None:
                reading = f"{band.label}: {band.name} — {band.reading}"
                if r["ci_low"] is not None:
                    lo = interpretation_band(min(max(r["ci_low"], 0.0), 1.0))
                    hi = interpretation_band(min(max(r["ci_high"], 0.0), 1.0))
                    if lo is not None and hi is not None and lo != hi:
                        reading += f" (the 95% CI spans bands {lo.label} to {hi.label})"
            table_rows.append([
                Cell(label, title=METRIC_NOTES.get(metric)), value_cell, nd, _num(str(r["n"])),
                _num(str(r["n_not_evaluable"]), css="na" if r["n_not_evaluable"] else None),
                Cell(ci), Cell(", ".join(flags), css="flag" if flags else None),
                Cell(reading, css=band.css if band else None),
            ])
            headline.append({"system": system, "metric": label, "value": r["value"], "numerator": r["numerator"],
                             "denominator": r["denominator"], "n": r["n"], "n_not_evaluable": r["n_not_evaluable"],
                             "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                             "band": band.label if band else None})
        blocks.append(_h(f"{system}", 3))
        if table_rows:
            blocks.append(Block("table", headers=["metric", "value", "num/den", "n", "not evaluable", "95% CI", "flags",
                                                  "reading"], rows=table_rows, css="headline"))
        else:
            blocks.append(_p("No summary rows for this system."))
    return blocks, headline


def _decisions(summary: pl.DataFrame, systems: list[str]) -> list[Block]:
    rows_by_key = _summary_rows(summary, "all", "all")
    blocks = [
        _h("Retrieval failures and abstentions", 2),
        Block("note", text="Kept apart (seed 000): evidence_retrieved = answerable questions whose evidence reached "
                           "the context; of the abstentions on answerable questions, abstention_with_evidence had the "
                           "evidence (a generator miss) and abstention_without_evidence did not (a retrieval failure, "
                           "where abstaining was right). answer_without_evidence_rate = absent questions answered."),
    ]
    rows = []
    for system in systems:
        rows.append([system] + [_value_cell(rows_by_key.get((system, m, None))) for m in DECISION_METRICS])
    blocks.append(Block("table", headers=["system", *DECISION_METRICS], rows=rows))
    return blocks


def _segments(summary: pl.DataFrame, systems: list[str]) -> list[Block]:
    blocks = [_h("By segment", 2),
              Block("note", text="Split all. Each cell: value (numerator/denominator); * = small segment (fewer "
                                 "questions than the configured minimum): read with care.")]
    seg = summary.filter((pl.col("split") == "all") & (pl.col("segment") != "all"))
    if not seg.height:
        blocks.append(_p("No segment tags in the golden set."))
        return blocks
    metrics = [(m, _pick_k(summary, m, k)) for m, k in SEGMENT_METRICS]
    metrics = [(m, k) for m, k in metrics if summary.filter(pl.col("metric") == m).height]
    by_key = {(r["system"], r["segment"], r["metric"], r["k"]): r for r in seg.iter_rows(named=True)}
    n_by = {(r["system"], r["segment"]): r["n"] for r in seg.iter_rows(named=True)}
    segments = sorted(seg["segment"].unique().to_list())
    for system in systems:
        rows = []
        for s in segments:
            if (system, s) not in n_by:
                continue
            rows.append([s, _num(str(n_by[(system, s)]))] + [_value_cell(by_key.get((system, s, m, k))) for m, k in metrics])
        if rows:
            blocks.append(_h(system, 3))
            blocks.append(Block("table", headers=["segment", "n", *[metric_label(m, k) for m, k in metrics]], rows=rows))
    return blocks


def _worst_questions(question_metrics, rag_runs, golden, judge_labels, systems, worst_n, access: _Access
                     ) -> Callable[[_Access], list[Block]]:
    """Select the questions now (registering their texts with ``access``); render after ``access.finalize()``."""
    per_q = question_metrics.filter(pl.col("k").is_null() & pl.col("metric").is_in(
        ["faithfulness", "answer_without_evidence_rate", "false_abstention_rate", "abstention_with_evidence",
         "run_error_rate"]))
    vals = {(r["system"], r["question_id"], r["metric"]): (r["value"], r["status"]) for r in per_q.iter_rows(named=True)}
    runs = {(r["system"], r["question_id"]): r for r in rag_runs.iter_rows(named=True)}
    gold = {r["question_id"]: r for r in golden.iter_rows(named=True)}
    min_rep = judge_labels.group_by("system", "question_id").agg(pl.col("repeat").min().alias("_r"))
    labels = (judge_labels.join(min_rep, on=["system", "question_id"])
              .filter(pl.col("repeat") == pl.col("_r")).sort("system", "question_id", "claim_id"))
    claims_by: dict[tuple[str, str], list[dict]] = {}
    for r in labels.iter_rows(named=True):
        claims_by.setdefault((r["system"], r["question_id"]), []).append(r)

    selected: list[tuple[str, str, list[str]]] = []
    for system in systems:
        faith = sorted(((v[0], q) for (s, q, m), v in vals.items()
                        if s == system and m == "faithfulness" and v[0] is not None and v[0] < 1 - 1e-12))
        chosen: dict[str, list[str]] = {}
        for value, q in faith[:worst_n]:
            chosen.setdefault(q, []).append(f"faithfulness {value:.2f}")
        failures: list[tuple[str, str]] = []
        for (s, q, m), (v, _st) in sorted(vals.items()):
            if s != system or v != 1.0:
                continue
            if m == "answer_without_evidence_rate":
                failures.append((q, "answered an absent question"))
            elif m == "false_abstention_rate":
                with_ev = vals.get((s, q, "abstention_with_evidence"), (None, None))[0]
                failures.append((q, "false abstention" + (" with the evidence retrieved" if with_ev == 1.0 else
                                                          " (evidence not retrieved)" if with_ev == 0.0 else "")))
            elif m == "run_error_rate":
                failures.append((q, "run error"))
        for q, reason in failures[:worst_n]:
            chosen.setdefault(q, []).append(reason)
        for q, reasons in chosen.items():
            selected.append((system, q, reasons))
        selected_more = max(0, len(faith) - worst_n), max(0, len(failures) - worst_n)
        if any(selected_more):
            selected.append((system, "", [f"{selected_more[0]} more low-faithfulness and {selected_more[1]} more failed "
                                          "questions not shown"]))

    # register every text that may be shown, for the leak check
    for system, q, _ in selected:
        run = runs.get((system, q)) or {}
        g = gold.get(q) or {}
        access.want(g.get("question"), g.get("reference_answer"), run.get("answer"), run.get("error"))
        for c in claims_by.get((system, q), []):
            access.want(c["claim"], c["quote"], c["justification"], c["error"])

    def render(acc: _Access) -> list[Block]:
        blocks = [_h("Questions to read", 2),
                  Block("note", text=f"Per system: up to {worst_n} answers with the lowest faithfulness (below 1), and "
                                     f"up to {worst_n} failures (absent questions answered, false abstentions, run "
                                     "errors). Claims of the first judge repeat. Chunk previews show the first "
                                     f"{PREVIEW_CHARS} characters; restricted chunks and any answer that drew on them "
                                     "are withheld for this viewer.")]
        if not selected:
            blocks.append(_p("No question below full faithfulness and no failure."))
        current = None
        for system, q, reasons in selected:
            if system != current:
                blocks.append(_h(system, 3))
                current = system
            if not q:
                blocks.append(Block("note", text=reasons[0]))
                continue
            blocks.append(Block("group", css="card", children=_card(system, q, reasons, runs.get((system, q)),
                                                                     gold.get(q), claims_by.get((system, q), []),
                                                                     vals, acc)))
        return blocks

    return render


def _card(system, q, reasons, run, g, claims, vals, acc: _Access) -> list[Block]:
    blocks = [_h(f"{q} — {'; '.join(reasons)}", 4)]
    g = g or {}
    run = run or {}
    retrieved = sorted((h for h in (run.get("retrieved") or []) if h is not None),
                       key=lambda h: (h["rank"] is None, h["rank"] or 0))
    cited = [c for c in (run.get("citations") or []) if c]
    used_ids = [h["chunk_id"] for h in retrieved] + cited
    restricted_used = sorted({c for c in used_ids if acc.is_restricted(c)})
    answer_reason = (f"the run used {len(restricted_used)} restricted chunk(s)" if restricted_used else None)
    evidence = {}
    for rel in g.get("relevant") or []:
        if rel and rel.get("chunk_id"):
            evidence[rel["chunk_id"]] = rel.get("grade")
    for claim in g.get("claims") or []:
        for cid in (claim or {}).get("supporting") or []:
            evidence.setdefault(cid, None)
    ref_reason = ("its evidence is restricted" if any(acc.is_restricted(c) for c in evidence) else None)

    faith = vals.get((system, q, "faithfulness"), (None, None))
    facts = [
        ["question", acc.show(g.get("question"))],
        ["class / split", f"{g.get('answerability', '?')} / {g.get('split', '?')}"],
        ["segments", ", ".join(g.get("segments") or [])],
        ["decision", run.get("decision") or "(no run)"],
        ["faithfulness", _fmt(faith[0], 3) if faith[0] is not None else f"not evaluable ({faith[1] or 'no row'})"],
        ["reference answer", acc.show(g.get("reference_answer"), ref_reason)],
    ]
    if run.get("error"):
        facts.append(["run error", acc.show(run.get("error"), answer_reason)])
    blocks.append(Block("table", headers=["", ""], rows=facts, css="meta"))
    blocks.append(_p("Answer:"))
    if run.get("answer") is None:
        shown = Cell({"abstain": "(no answer: the system abstained)", "clarify": "(no answer: it asked for clarification)",
                      "error": "(no answer: the run failed)"}.get(run.get("decision"), "(no answer)"), css="na")
    else:
        shown = acc.show(run.get("answer"), answer_reason)
    blocks.append(Block("quote", text=shown.text, css=shown.css))
    if cited:
        blocks.append(_p("Cited: " + ", ".join(cited)))
    if claims:
        rows = []
        for c in claims:
            note = c["error"] if c["verdict"] == "JUDGE_ERROR" else c["justification"]
            rows.append([c["claim_id"], acc.show(c["claim"], answer_reason),
                         Cell(c["verdict"], css=f"verdict-{c['verdict']}"),
                         acc.show(c["quote"], answer_reason) if c["quote"] else Cell("(no quote)", css="na"),
                         "yes" if c["quote_found"] else "no",
                         acc.show(note, answer_reason) if note else Cell("")])
        blocks.append(Block("table", headers=["claim", "text", "verdict", "quote", "quote in context", "judge note"],
                            rows=rows))
    if retrieved:
        rows = []
        for h in retrieved:
            cid = h["chunk_id"]
            title, prev = acc.preview(cid)
            status = (acc.chunks.get(cid) or {}).get("status") or "?"
            ev = "" if cid not in evidence else ("evidence" + (f" (grade {evidence[cid]})" if evidence[cid] is not None else ""))
            rows.append([_num(str(h["rank"])), cid, title, status, ev, "cited" if cid in cited else "", prev])
        blocks.append(Block("table", headers=["rank", "chunk", "title", "status", "golden", "cited", "preview"], rows=rows))
    else:
        blocks.append(_p("No chunk retrieved."))
    missing_ev = [c for c in evidence if c not in {h["chunk_id"] for h in retrieved}]
    if missing_ev:
        blocks.append(Block("note", text="Golden evidence not retrieved: " + ", ".join(sorted(missing_ev))))
    return blocks


def _judge_trust(calibration: pl.DataFrame | None, variance: pl.DataFrame | None) -> list[Block]:
    blocks = [_h("Judge calibration and noise", 2)]
    if calibration is None or not calibration.height:
        blocks.append(_p("No calibration table: the judge has not been compared with human labels.", css="na"))
    else:
        rows = []
        for r in calibration.iter_rows(named=True):
            state = "missing" if r.get("missing") else ("stale" if r.get("stale") else "current")
            css = "na" if state != "current" else None
            kappa = _fmt(r.get("kappa"), 3) if r.get("kappa") is not None else f"null ({r.get('kappa_reason') or 'no reason given'})"
            agree = "—" if r.get("agreement") is None else (
                f"{r['agreement']:.3f}" + ("" if r.get("agreement_ci_low") is None else
                                           f" [{r['agreement_ci_low']:.3f}, {r['agreement_ci_high']:.3f}]"))
            rows.append([r.get("level") or "", f"{r.get('judge')} / {r.get('judge_model')}",
                         _short(r.get("prompt_sha256")), Cell(state, css=css), _num(str(r.get("n") if r.get("n") is not None else "—")),
                         Cell(kappa, css=None if r.get("kappa") is not None else "na"), agree,
                         r.get("calibrated_at") or "—"])
        blocks.append(Block("table", headers=["level", "judge / model", "prompt", "calibration", "n", "Cohen's kappa",
                                              "agreement [95% CI]", "calibrated at"], rows=rows))
        if any(r.get("missing") or r.get("stale") for r in calibration.iter_rows(named=True)):
            blocks.append(Block("note", text="A judge not calibrated against people for this exact model and prompt "
                                             "gives numbers nobody has checked: read judge-based metrics as provisional."))
    if variance is None or not variance.height:
        blocks.append(_p("No judge-variance table.", css="na"))
        return blocks
    rows = []
    for r in variance.iter_rows(named=True):
        single = (r.get("n_repeats") or 0) < 2
        rows.append([r.get("system") or "", _num(str(r.get("n_repeats"))),
                     f"{r.get('n_flipped')}/{r.get('n_items')}",
                     _fmt(r.get("flip_rate"), 3) if r.get("flip_rate") is not None else Cell("not evaluable", css="na"),
                     f"{_fmt(r.get('faithfulness_min'), 3)}–{_fmt(r.get('faithfulness_max'), 3)}",
                     Cell("unknown (single repeat)", css="na") if single or r.get("resolution") is None
                     else _num(_fmt(r.get("resolution"), 4))])
    blocks.append(Block("table", headers=["system", "repeats", "flipped / items", "flip rate", "faithfulness min–max",
                                          "resolution"], rows=rows))
    rule = next((r.get("rule") for r in variance.iter_rows(named=True) if r.get("rule")), None)
    blocks.append(Block("note", text="Resolution: the smallest faithfulness difference the judge can tell from its own "
                                     "noise" + (f" ({rule})" if rule else "") + ". A difference below it is noise; with "
                                     "one repeat the noise is unknown: judge again (2 or more repeats) before acting on a "
                                     "small change (seed 003)."))
    return blocks


def _gates(gates: Sequence[dict] | None, baseline_manifest: dict | None) -> list[Block]:
    blocks = [_h("Comparison with the baseline", 2)]
    if baseline_manifest:
        rows = [[k, str(v)] for k, v in sorted(baseline_manifest.items())]
        blocks.append(_p("Promoted baseline:"))
        blocks.append(Block("table", headers=["", ""], rows=rows, css="meta"))
    if gates is None:
        blocks.append(_p("No gate results given."))
        return blocks
    if not gates:
        blocks.append(_p("No gate configured."))
        return blocks
    rows = []
    for g in gates:
        k = g.get("k")
        p = g.get("p_value", g.get("p"))
        wtl = g.get("wtl") or f"{g.get('wins', 0)}/{g.get('ties', 0)}/{g.get('losses', 0)}"
        status = str(g.get("status") or "")
        diff = g.get("difference")
        rows.append([g.get("system") or "", metric_label(str(g.get("metric")), k),
                     _num(_fmt(g.get("candidate"))) if g.get("candidate") is not None else Cell("not evaluable", css="na"),
                     _num(_fmt(g.get("baseline"))) if g.get("baseline") is not None else Cell("not evaluable", css="na"),
                     _num(f"{diff:+.4f}") if diff is not None else Cell("—", css="na"),
                     _num(_fmt(p)) if p is not None else Cell("—"), wtl,
                     Cell(status, css=f"status-{status}"), g.get("reason") or ""])
    blocks.append(Block("table", headers=["system", "metric", "candidate", "baseline", "difference", "p", "W/T/L",
                                          "status", "reason"], rows=rows))
    blocks.append(Block("note", text="p: two-sided paired randomisation test over the questions both systems answered; "
                                     "W/T/L: questions where the candidate is better / equal / worse."))
    return blocks


def _history(history: pl.DataFrame | None, trend_metrics, trend_href: str | None) -> list[Block]:
    blocks = [_h("History", 2)]
    if history is None or not history.height:
        blocks.append(_p("No history yet: this is the first recorded run."))
        return blocks
    runs = history.select("run_id", "evaluated_at").unique().sort("evaluated_at")
    blocks.append(_p(f"{runs.height} recorded run(s), from {_when(runs['evaluated_at'][0])} to "
                     f"{_when(runs['evaluated_at'][-1])}."))
    if trend_href:
        blocks.append(Block("link", text="Every run, metric by metric:", href=trend_href))
    last_two = runs["run_id"].to_list()[-2:]
    rows = []
    hist = history.with_columns(pl.struct("metric", "k").map_elements(
        lambda s: metric_label(s["metric"], s["k"]), return_dtype=pl.Utf8).alias("_label"))
    for label in _labels(trend_metrics):
        for system in sorted(hist["system"].unique().to_list()):
            sel = hist.filter((pl.col("_label") == label) & (pl.col("system") == system))
            vals = {r["run_id"]: r["value"] for r in sel.iter_rows(named=True)}
            if not vals:
                continue
            latest = vals.get(last_two[-1])
            prev = vals.get(last_two[0]) if len(last_two) == 2 else None
            change = "—" if latest is None or prev is None else f"{latest - prev:+.4f}"
            rows.append([system, label, _num(_fmt(prev)) if prev is not None else Cell("—"),
                         _num(_fmt(latest)) if latest is not None else Cell("not evaluable", css="na"), _num(change)])
    if rows:
        blocks.append(Block("table", headers=["system", "metric", "previous run", "latest run", "change"], rows=rows))
    for label in _labels(trend_metrics):
        svg = trend_svg(history, label)
        if svg:
            blocks.append(Block("svg", svg=svg, text=f"{label} over the recorded runs, one line per system."))
    return blocks


# --------------------------------------------------------------------------------------------
# trend


_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f",
            "#bcbd22")


def _labels(metrics: Iterable[str | tuple[str, int | None]]) -> list[str]:
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
    label = _labels([metric])[0]
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
             f'role="img" aria-label="{_e(label)} trend">',
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
        parts.append(f'<text x="{x(t):.1f}" y="{mt + ph + 16}" text-anchor="middle">{_e(stamp)}</text>')
    parts.append(f'<text x="{ml}" y="{height - 6}">{_e(label)} (UTC)</text>')
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
                         f'stroke-width="1"><title>{_e(system)} {_e(label)} = {v:.4f} at {_e(_when(r["evaluated_at"]))} '
                         f'(run {_e(r["run_id"])})</title></circle>')
        ly = mt + 14 + i * 16
        parts.append(f'<rect x="{ml + pw + 12}" y="{ly - 9}" width="12" height="10" fill="{color}"/>')
        parts.append(f'<text x="{ml + pw + 30}" y="{ly}">{_e(system)}</text>')
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
    for label in _labels(metrics):
        parts.append(f"<h2>{_e(label)}</h2>")
        svg = trend_svg(history, label) if history.height else ""
        if not svg:
            parts.append('<p class="na">No history for this metric.</p>')
            continue
        parts.append(f"<figure>{svg}<figcaption>{_e(METRIC_NOTES.get(label.rsplit('_', 1)[0] if label not in METRIC_NOTES else label, ''))}</figcaption></figure>")
        rows = [r for r in history.sort("evaluated_at", "system").iter_rows(named=True)
                if metric_label(r["metric"], r["k"]) == label]
        table = Block("table", headers=["evaluated at", "system", "value", "num/den", "n", "run"], rows=[
            [_when(r["evaluated_at"]), r["system"],
             _num(_fmt(r["value"])) if r["value"] is not None else Cell("not evaluable", css="na"),
             _num(f"{_g(r.get('numerator'))}/{_g(r.get('denominator'))}") if "numerator" in r else "",
             _num(str(r.get("n", ""))), r["run_id"]] for r in rows])
        parts.append("<details><summary>values</summary>" + _render_html_blocks([table]) + "</details>")
    return write_text_atomic(_page("RAG evaluation trend", "\n".join(parts)), Path(path))
