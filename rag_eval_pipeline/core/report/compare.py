"""Any two runs side by side: every metric with both values, the difference, the paired test and interval;
then question by question, the largest change first, regressions before improvements, with both answers,
both retrievals, the judge's verdicts and the citations.

A and B are two :class:`~rag_eval_pipeline.core.report.compare_sides.Side` (a system of the latest run, the
promoted baseline, a past night, another output folder). The difference is B − A; "better" and "worse"
follow each metric's direction (lower is better for the error, abstention and latency measures: the metric
registry's ``higher_is_better``). By default the questions are ordered by the metrics whose registry
``scale`` is ``unit`` (values in [0, 1]), so that a 1-5 score or a count never outranks a share. The paired
test and its interval are the gates' own (:func:`core.gates.paired_comparison`: a two-sided paired
randomisation test over the questions both sides have a value for, Smucker, Allan & Carterette, CIKM 2007;
percentile bootstrap interval of the mean difference, Efron & Tibshirani 1993). Texts go through the report's
access policy (:mod:`rag_eval_pipeline.core.report.access`): a restricted chunk's text never appears. The page is
self-contained (inline CSS, one small inline script that sorts the question table when a header is
clicked; the table is already sorted by the largest change without it). Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from rag_eval_pipeline.core.gates import paired_comparison
from rag_eval_pipeline.core.metrics.names import COUNT_MEASURES, higher_is_better, metric_info, trec_name
from rag_eval_pipeline.core.report.access import ReportAccess
from rag_eval_pipeline.core.report.bands import HEADLINE_METRICS, METRIC_NOTES, definition_ref
from rag_eval_pipeline.core.report.blocks import Block, Cell, fmt, fmt_count, heading, num_cell, para
from rag_eval_pipeline.core.report.compare_sides import Side
from rag_eval_pipeline.core.report.html import escape_html, html_page, render_html, toc
from rag_eval_pipeline.core.report.markdown import render_markdown
from rag_eval_pipeline.core.report.questions import anchor_text

_EPS = 1e-12
SORT_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('thead th').forEach(function (th, i) {
    th.style.cursor = 'pointer';
    th.title = 'sort by this column';
    th.addEventListener('click', function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var asc = th.getAttribute('data-dir') !== 'asc';
      table.querySelectorAll('thead th').forEach(function (h) { h.removeAttribute('data-dir'); });
      th.setAttribute('data-dir', asc ? 'asc' : 'desc');
      function key(r) {
        var c = r.cells[i];
        var v = c.hasAttribute('data-sort') ? c.getAttribute('data-sort') : c.textContent.trim();
        return /^[-+]?[0-9]*[.]?[0-9]+(e[-+]?[0-9]+)?$/i.test(v) ? parseFloat(v) : v.toLowerCase();
      }
      rows.sort(function (x, y) {
        var a = key(x), b = key(y);
        if (typeof a !== typeof b) { a = String(a); b = String(b); }
        return (a < b ? -1 : a > b ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def ranks_questions(metric: str) -> bool:
    """Whether a per-question metric takes part in ordering the questions by default: the metrics whose
    registry ``scale`` is ``unit`` (values in [0, 1], so their differences compare), not trec_eval's counts,
    the judge's 1-5 answer_relevance, the cosine answer_relevancy nor latency (milliseconds)."""
    info = metric_info(metric)
    return info is not None and info.scale == "unit"


@dataclass(frozen=True)
class MetricRow:
    """One metric on both sides (split of the comparison, segment all).

    ``a`` / ``b``: each side's summary row (its headline mean over its own evaluable questions, with counts).
    When both sides kept per-question values (``paired``), ``a_mean`` / ``b_mean`` are their means over the
    ``n_pairs`` questions both have a value for, and ``difference`` = B − A over those same questions (the
    quantity the interval, p and W/T/L are about); ``n_a`` / ``n_b`` each side's questions with a value.
    Otherwise (a side from history keeps no per-question values) ``difference`` is the difference of the
    headline means and nothing is tested."""

    metric: str
    k: int | None
    a: dict | None
    b: dict | None
    difference: float | None
    p_value: float | None
    ci_low: float | None
    ci_high: float | None
    n_pairs: int
    wins: int
    ties: int
    losses: int
    higher_is_better: bool
    paired: bool = False
    a_mean: float | None = None
    b_mean: float | None = None
    n_a: int | None = None
    n_b: int | None = None

    @property
    def label(self) -> str:
        """The metric as trec_eval prints it: ``recall_5``, ``map``."""
        return trec_name(self.metric, self.k)

    @property
    def direction(self) -> str:
        """"better" / "worse" / "same" / "—" (B against A, by the metric's direction; "—" without a difference
        and for trec_eval's counts num_ret, num_rel, num_rel_ret, which have no direction)."""
        if self.difference is None or self.metric in COUNT_MEASURES:
            return "—"
        if abs(self.difference) <= _EPS:
            return "same"
        return "better" if (self.difference > 0) == self.higher_is_better else "worse"


@dataclass
class QuestionChange:
    """One question whose per-question values differ: ``worst`` (the largest drop, oriented so negative is worse,
    and its metric), ``best`` (the largest gain), the changed metrics as (label, a, b, oriented delta)."""

    question_id: str
    changes: list[tuple[str, float, float, float]] = field(default_factory=list)

    @property
    def regressed(self) -> bool:
        """True when any of its changes is a drop (oriented by the metric's direction)."""
        return any(d < -_EPS for *_x, d in self.changes)

    @property
    def key_row(self) -> tuple[str, float, float, float]:
        """(metric label, A's value, B's value, oriented delta) of the change that sorts this question: its largest
        drop when it regressed, else its largest gain (among equal ones, the first in ``changes``)."""
        if self.regressed:
            return self.changes[0] if self.changes[0][3] < -_EPS else min(self.changes, key=lambda c: c[3])
        top = max(c[3] for c in self.changes)
        return next(c for c in self.changes if c[3] == top)

    @property
    def key_change(self) -> tuple[str, float]:
        """(metric label, oriented delta) of :attr:`key_row`: negative is worse whatever the metric's direction."""
        label, _a, _b, d = self.key_row
        return label, d


@dataclass
class Comparison:
    """The comparison: sides ``a`` and ``b``, ``split``, ``metrics`` (:class:`MetricRow`), ``questions`` (changed
    questions, regressions first, the largest change first), ``unchanged`` (questions compared with no change),
    ``notes``, and the rendered ``markdown`` and ``html``."""

    a: Side
    b: Side
    split: str
    metrics: list[MetricRow]
    questions: list[QuestionChange]
    unchanged: int
    notes: list[str]
    markdown: str = ""
    html: str = ""


def _values(side: Side, split: str) -> dict[tuple[str, int | None], dict]:
    if side.summary is not None:
        rows = side.summary.filter((pl.col("split") == split) & (pl.col("segment") == "all"))
        return {(r["metric"], r["k"]): r for r in rows.iter_rows(named=True)}
    if side.history_values is not None and split == "all":
        return {(r["metric"], r["k"]): r for r in side.history_values.iter_rows(named=True)}
    return {}


def _per_question(side: Side, split: str) -> pl.DataFrame | None:
    qm = side.question_metrics
    if qm is None:
        return None
    return qm if split == "all" else qm.filter(pl.col("split") == split)


def _order(key: tuple[str, int | None]) -> tuple:
    headline = [m for m, _k in HEADLINE_METRICS]
    metric, k = key
    return (headline.index(metric) if metric in headline else len(headline), metric, -1 if k is None else k)


def compare_metrics(a: Side, b: Side, split: str, *, n_permutations: int = 10000, seed: int = 0) -> list[MetricRow]:
    """Every (metric, k) either side has at ``split`` (segment all), in the report's headline order then by name.

    Output: a :class:`MetricRow` per metric: both headline values (None when a side lacks it) and, when both
    sides kept per-question values, both means over the questions both have a value for, B − A over those
    same questions and the paired test of :func:`core.gates.paired_comparison` (B as candidate, A as
    baseline); otherwise B − A of the headline values, untested. Raises ValueError for ``n_permutations`` < 1."""
    va, vb = _values(a, split), _values(b, split)
    qa, qb = _per_question(a, split), _per_question(b, split)
    rows = []
    for key in sorted(set(va) | set(vb), key=_order):
        metric, k = key
        ra, rb = va.get(key), vb.get(key)
        hib = higher_is_better(metric)
        diff = (rb["value"] - ra["value"]) if ra and rb and ra["value"] is not None and rb["value"] is not None \
            else None
        if qa is None or qb is None:
            rows.append(MetricRow(metric, k, ra, rb, diff, None, None, None, 0, 0, 0, 0, hib))
            continue
        sel = (pl.col("metric") == metric) & (pl.col("k").is_null() if k is None else pl.col("k") == k)
        fa, fb = qa.filter(sel), qb.filter(sel)
        test = paired_comparison(fb, fa, higher_is_better=hib, n_permutations=n_permutations, seed=seed)
        # the difference is over the same questions as the test: B − A over the n pairs (None without a pair)
        rows.append(MetricRow(metric, k, ra, rb, test.difference, test.p_value, test.ci_low, test.ci_high, test.n,
                              test.wins, test.ties, test.losses, hib, paired=True, a_mean=test.baseline_mean,
                              b_mean=test.candidate_mean, n_a=int(fa["value"].is_not_null().sum()),
                              n_b=int(fb["value"].is_not_null().sum())))
    return rows


def question_labels(a: Side, b: Side, split: str) -> set[str]:
    """The per-question metric labels (``recall_5``, ``faithfulness``) both sides have at ``split``: what
    ``metrics=`` of :func:`question_changes` may name. Empty when a side kept no per-question values."""
    qa, qb = _per_question(a, split), _per_question(b, split)
    if qa is None or qb is None:
        return set()

    def labels(df: pl.DataFrame) -> set[str]:
        return {trec_name(m, k) for m, k in df.select("metric", "k").unique().iter_rows()}

    return labels(qa) & labels(qb)


def question_changes(a: Side, b: Side, split: str, metrics: Sequence[str] | None = None) -> tuple[list[QuestionChange],
                                                                                                  int]:
    """The questions whose per-question values differ between A and B, and how many were compared unchanged.

    Inputs: the sides, ``split``, ``metrics`` (metric labels to compare, e.g. ["recall_5", "faithfulness"];
    None = every per-question metric on a 0-1 scale: :func:`ranks_questions`). A metric counts
    for a question when both sides have a value. Output: ([QuestionChange], unchanged count), regressions
    first sorted by their largest drop (largest first), then improvements by their largest gain, ties by
    question id. Empty when a side kept no per-question values."""
    qa, qb = _per_question(a, split), _per_question(b, split)
    if qa is None or qb is None:
        return [], 0
    cols = ["question_id", "metric", "k", "value"]
    joined = (qa.select(cols).join(qb.select(cols), on=["question_id", "metric", "k"], suffix="_b", nulls_equal=True)
              .drop_nulls(["value", "value_b"]))
    by_q: dict[str, QuestionChange] = {}
    compared: set[str] = set()
    wanted = set(metrics) if metrics else None
    for r in joined.iter_rows(named=True):
        label = trec_name(r["metric"], r["k"])
        if (label not in wanted) if wanted is not None else not ranks_questions(r["metric"]):
            continue
        compared.add(r["question_id"])
        delta = r["value_b"] - r["value"]
        if abs(delta) <= _EPS:
            continue
        oriented = delta if higher_is_better(r["metric"]) else -delta
        by_q.setdefault(r["question_id"], QuestionChange(r["question_id"])).changes.append(
            (label, r["value"], r["value_b"], oriented))
    changed = list(by_q.values())
    headline = [trec_name(m, k) for m, k in HEADLINE_METRICS]
    for q in changed:  # equal changes: the report's headline metrics name the question's change first
        q.changes.sort(key=lambda c: (c[3], headline.index(c[0]) if c[0] in headline else len(headline), c[0]))
    regressions = sorted((q for q in changed if q.regressed), key=lambda q: (q.key_change[1], q.question_id))
    improvements = sorted((q for q in changed if not q.regressed), key=lambda q: (-q.key_change[1], q.question_id))
    return regressions + improvements, len(compared) - len(changed)


# ------------------------------------------------------------------------------------------------ rendering

def _val(row: dict | None) -> Cell:
    if row is None:
        return Cell("absent", css="na")
    if row.get("value") is None:
        return Cell("not evaluable", css="na")
    nd = "" if row.get("numerator") is None else f" ({fmt_count(row['numerator'])}/{fmt_count(row['denominator'])})"
    return num_cell(f"{row['value']:.4f}{nd}", sort=f"{row['value']:.6f}")


def _metric_blocks(c: Comparison) -> list[Block]:
    rows: list[list[Cell | str]] = []
    for m in c.metrics:
        css = {"better": "status-pass", "worse": "status-regression"}.get(m.direction)
        no_pairs = [Cell("—", css="na", title="no per-question values")] * 2
        shared = [num_cell(f"{v:.4f}", sort=f"{v:.6f}") if v is not None else Cell("—", css="na")
                  for v in (m.a_mean, m.b_mean)] if m.paired else no_pairs
        rows.append([
            Cell(m.label, title=f"{METRIC_NOTES.get(m.metric, '')} ({definition_ref(m.metric)})"), *shared,
            num_cell(f"{m.difference:+.4f}", sort=f"{m.difference:.6f}") if m.difference is not None else Cell("—"),
            Cell(m.direction, css=css),
            num_cell(fmt(m.p_value)) if m.p_value is not None else Cell("—", css="na", title="no paired values"),
            Cell("—" if m.ci_low is None else f"[{m.ci_low:+.4f}, {m.ci_high:+.4f}]"),
            num_cell(str(m.n_pairs)) if m.paired else Cell("—", css="na"),
            f"{m.wins}/{m.ties}/{m.losses}" if m.n_pairs else "—", _val(m.a), _val(m.b)])
    return [heading(f"Every metric (split {c.split})", 2),
            Block("note", text=f"Split {c.split}, segment all. A, B, difference, p, 95% CI and W/T/L are all over "
                               "the same questions: the n pairs both sides have a value for. difference = B − A "
                               "over them; better / worse follow each metric's direction. p: two-sided paired "
                               "randomisation test; 95% CI: paired bootstrap interval of the mean difference; "
                               "W/T/L: questions where B is better / equal / worse. The same test and figures as "
                               "the gates. The last two columns are each side's headline mean over its own "
                               "evaluable questions (with its counts), not the compared figures; when a side kept "
                               "no per-question values, difference is theirs, untested. "
                               "Definitions: " + definition_ref() + "."),
            Block("table", headers=["metric", "A", "B", "difference", "B vs A", "p", "95% CI", "n pairs", "W/T/L",
                                    "A, own questions", "B, own questions"],
                  rows=rows, css="sortable metrics")]


def _side_cells(side: Side, q: str, acc: ReportAccess, evidence: set[str]) -> dict[str, Cell]:
    runs = side.rag_runs
    found = runs.filter(pl.col("question_id") == q).to_dicts() if runs is not None else []
    run = found[0] if found else None
    if run is None:
        na = Cell("(no run row kept)", css="na")
        return {"decision": na, "answer": na, "cited": na, "retrieved": na, "claims": na}
    retrieved = sorted((h for h in (run.get("retrieved") or []) if h),
                       key=lambda h: (h["rank"] is None, h["rank"] or 0))
    cited = [c for c in (run.get("citations") or []) if c]
    restricted = sorted({h["chunk_id"] for h in retrieved} | set(cited), key=str)
    restricted = [cid for cid in restricted if acc.is_restricted(cid)]
    reason = f"the run used {len(restricted)} restricted chunk(s)" if restricted else None
    answer = (acc.show(run.get("answer"), reason) if run.get("answer") is not None
              else Cell(f"(no answer: {run.get('decision')})", css="na"))
    hits = []
    for h in retrieved[:10]:
        title, _prev = acc.preview(h["chunk_id"])
        mark = " ★" if h["chunk_id"] in evidence else ""
        hits.append(f"{h['rank']}. {h['chunk_id']}{mark} {title.text}".rstrip())
    claims = ""
    if side.judge_labels is not None:
        mine = side.judge_labels.filter(pl.col("question_id") == q)
        if mine.height:
            first = mine.filter(pl.col("repeat") == mine["repeat"].min()).sort("claim_id")
            parts = []
            for r in first.iter_rows(named=True):
                text = acc.show(r["claim"], reason).text
                parts.append(f"{r['verdict']}: {text}")
            claims = " · ".join(parts)
    return {"decision": Cell(str(run.get("decision"))), "answer": answer,
            "cited": Cell(", ".join(cited) or "(none)"),
            "retrieved": Cell(" · ".join(hits) or "(nothing retrieved)"),
            "claims": Cell(claims or ("(no claim judged)" if side.judge_labels is not None
                                      else "(the judge's labels were not kept)"))}


def card_anchor(question_id: str) -> str:
    """The HTML id of a question's card on the comparison page: ``cq-<question id>`` (unsafe characters as -,
    as the report's :func:`~rag_eval_pipeline.core.report.questions.anchor_text`)."""
    return "cq-" + anchor_text(question_id)


def _question_blocks(c: Comparison, golden: pl.DataFrame | None, acc: ReportAccess, max_questions: int) -> list[Block]:
    n_reg = sum(q.regressed for q in c.questions)
    blocks = [heading(f"Question by question (split {c.split})", 2),
              Block("note", text=f"{len(c.questions)} question(s) changed: {n_reg} with a regression (listed first, "
                                 "the largest drop first), then the improvements (largest gain first); "
                                 f"{c.unchanged} compared without a change. change = the metric that moved most, "
                                 "signed so that negative is worse. Click a column header to sort; ★ = golden "
                                 "evidence.")]
    if not c.questions:
        blocks.append(para("No per-question value differs (or a side kept no per-question values)."))
        return blocks
    gold = {r["question_id"]: r for r in golden.iter_rows(named=True)} if golden is not None else {}
    shown = c.questions[:max_questions]
    index = []
    for i, q in enumerate(shown, start=1):
        label, d = q.key_change
        n_worse = sum(ch[3] < -_EPS for ch in q.changes)
        n_better = sum(ch[3] > _EPS for ch in q.changes)
        da, db = (_decision(c.a, q.question_id), _decision(c.b, q.question_id))
        index.append([num_cell(str(i), sort=str(i)), Cell(q.question_id, href="#" + card_anchor(q.question_id),
                                                         sort=q.question_id),
                      num_cell(f"{d:+.4f}", css="status-regression" if d < 0 else "status-pass", sort=f"{d:.6f}"),
                      Cell(label), num_cell(str(n_worse), sort=str(n_worse)),
                      num_cell(str(n_better), sort=str(n_better)), Cell(da), Cell(db)])
    blocks.append(Block("table", headers=["#", "question", "change", "metric", "worse", "better", "A decision",
                                          "B decision"], rows=index, css="sortable questions"))
    if len(c.questions) > max_questions:
        blocks.append(Block("note", text=f"{len(c.questions) - max_questions} more changed question(s) not shown "
                                         "(--questions N shows more)."))
    for q in shown:
        g = gold.get(q.question_id) or {}
        evidence = {r["chunk_id"] for r in (g.get("relevant") or []) if r and r.get("chunk_id")}
        sa, sb = _side_cells(c.a, q.question_id, acc, evidence), _side_cells(c.b, q.question_id, acc, evidence)
        label, d = q.key_change
        card = [heading(f"{q.question_id} — {'regressed' if q.regressed else 'improved'}: {label} {d:+.4f}", 4),
                Block("table", headers=["", ""], css="meta", rows=[
                    ["question", acc.show(g.get("question")) if g else Cell("(not in the golden set)", css="na")],
                    ["class / split", f"{g.get('answerability', '?')} / {g.get('split', '?')}"]]),
                Block("table", headers=["metric", "A", "B", "change (negative = worse)"], rows=[
                    [lab, num_cell(fmt(va)), num_cell(fmt(vb)),
                     num_cell(f"{dd:+.4f}", css="status-regression" if dd < 0 else "status-pass")]
                    for lab, va, vb, dd in q.changes]),
                Block("table", headers=["", f"A: {c.a.label}", f"B: {c.b.label}"], css="sides", rows=[
                    [name, sa[name], sb[name]] for name in ("decision", "answer", "cited", "retrieved", "claims")])]
        blocks.append(Block("group", css="card", anchor=card_anchor(q.question_id), children=card))
    return blocks


def _decision(side: Side, q: str) -> str:
    if side.rag_runs is None:
        return "—"
    rows = side.rag_runs.filter(pl.col("question_id") == q)
    return str(rows["decision"][0]) if rows.height else "(no run)"


def build_comparison(a: Side, b: Side, *, split: str = "all", golden: pl.DataFrame | None = None,
                     snapshot: pl.DataFrame, viewer_groups: Sequence[str] = ("customers",),
                     n_permutations: int = 10000, seed: int = 0, max_questions: int = 200,
                     metrics: Sequence[str] | None = None, generated_at: dt.datetime | None = None) -> Comparison:
    """Compare side B with side A and render the page.

    Inputs: the two sides, ``split`` ("all", "test", "dev": every table says which), ``golden`` (golden_set:
    question texts and evidence; None = ids only), ``snapshot`` (corpus_snapshot: the access policy's chunk
    texts and ACLs), ``viewer_groups`` (the reader), ``n_permutations`` / ``seed`` of the paired test,
    ``max_questions`` (question cards shown), ``metrics`` (labels that rank the questions; None = all but
    trec_eval's counts). Output: a :class:`Comparison` with ``markdown`` and ``html`` filled. Notes say when
    golden or corpus versions differ (questions are still paired by id) and what a side did not keep.
    Raises ValueError for ``n_permutations`` < 1 or ``max_questions`` < 0.
    """
    if max_questions < 0:
        raise ValueError(f"max_questions must be >= 0, got {max_questions}")
    notes = [f"A: {n}" for n in a.notes] + [f"B: {n}" for n in b.notes]
    for what, va, vb in (("golden", a.golden_version, b.golden_version),
                         ("corpus", a.corpus_version, b.corpus_version)):
        if va and vb and va != vb:
            notes.append(f"the {what} versions differ (A {va[:12]}, B {vb[:12]}): questions are paired by id; read "
                         "the differences as a change of data as much as of the system")
    if split != "all" and (a.summary is None or b.summary is None):
        notes.append(f"a side kept only its history values, which cover split all, not split {split}")
    rows = compare_metrics(a, b, split, n_permutations=n_permutations, seed=seed)
    changed, unchanged = question_changes(a, b, split, metrics)
    c = Comparison(a, b, split, rows, changed, unchanged, notes)

    access = ReportAccess(snapshot, tuple(viewer_groups))
    for side in (a, b):
        if side.rag_runs is not None:
            access.want(*side.rag_runs["answer"].to_list())
        if side.judge_labels is not None:
            access.want(*side.judge_labels["claim"].to_list())
    if golden is not None:
        access.want(*golden["question"].to_list())
    access.finalize()
    worse = sum(m.direction == "worse" for m in rows)
    better = sum(m.direction == "better" for m in rows)
    head = [heading("Sides", 2),
            Block("table", headers=["", "side", "system", "golden version", "corpus version"], rows=[
                ["A", a.spec.text, a.label, (a.golden_version or "?")[:12], (a.corpus_version or "?")[:12]],
                ["B", b.spec.text, b.label, (b.golden_version or "?")[:12], (b.corpus_version or "?")[:12]]]),
            para(f"Split {split}: {better} metric(s) better, {worse} worse, "
                 f"{sum(m.direction == 'same' for m in rows)} the same; {len(changed)} question(s) changed "
                 f"({sum(q.regressed for q in changed)} regressed)."
                 + (f" Generated {generated_at.isoformat(timespec='seconds')}." if generated_at else ""))]
    head += [Block("note", text=n) for n in notes]
    blocks = head + _metric_blocks(c) + _question_blocks(c, golden, access, max_questions)
    title = f"Comparison: {a.spec.text} vs {b.spec.text}"
    c.markdown = f"# {title}\n\n" + render_markdown(blocks)
    body = (f"<h1>{escape_html(title)}</h1>\n" + toc(blocks) + "\n" + render_html(blocks)
            + f"\n<script>{SORT_SCRIPT}</script>")
    c.html = html_page(title, body)
    return c
