"""The report's "Citations and completeness" section: per system the citation and nugget rates with their
counts, the citation failures by kind (ids only), and the questions whose answer left out a vital nugget.

Definitions: ``docs/METRICS.md`` (Citations; Completeness). Chunk text never appears here: a citation is
named by its chunk id, so a citation to a restricted chunk (an ACL leak) is counted and named without
showing what it says. Nugget texts are the golden set's reviewed claims: shown through the access policy
(withheld when the question's golden evidence is restricted for the viewer). Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from rag_eval_pipeline.core.metrics.names import CITATION_METRICS, NUGGET_METRICS, is_judge_based, metric_label
from rag_eval_pipeline.core.report.access import ReportAccess
from rag_eval_pipeline.core.report.blocks import Block, Cell, heading, num_cell, value_cell

#: Failure kinds in the order the section lists them (validity first, then support).
FAILURE_KINDS = ("not_in_snapshot", "not_retrieved", "withdrawn", "replaced", "acl_restricted", "out_of_range",
                 "unparseable", "not_supporting")


def citation_section(summary: pl.DataFrame, systems: Sequence[str], citations: pl.DataFrame | None,
                     nugget_labels: pl.DataFrame | None, golden: pl.DataFrame, access: ReportAccess,
                     worst_n: int = 10, split: str = "all") -> list[Block]:
    """The section's blocks (register the nugget texts it shows with ``access`` before ``finalize``: see
    :func:`nugget_texts`).

    Inputs: ``metric_summary``; the systems; the ``citations`` and ``nugget_labels`` tables (None: the
    run has none, the section says so); ``golden_set`` (to withhold a nugget whose evidence is restricted);
    ``access``; ``worst_n`` (questions listed per system and list); ``split`` of the rates ("all").
    Output: blocks. A null rate reads "not evaluable (k of n)", never 0. Raises nothing for conforming
    tables."""
    blocks = [heading("Citations and completeness", 2),
              Block("note", text="Does each citation support what it is attached to (a link is not support), "
                                 "and did the answer leave out what the reviewed reference says? Citation support "
                                 "and nugget coverage are judge-based: read them with the judge's calibration for "
                                 f"each verdict family (Judge trust). Split: {split}. Definitions: docs/METRICS.md, "
                                 "Citations and Completeness.")]
    if citations is None and nugget_labels is None:
        blocks.append(Block("note", text="No citation or nugget table in this run."))
        return blocks
    rows_by = {(r["system"], r["metric"]): r for r in summary.filter(
        (pl.col("split") == split) & (pl.col("segment") == "all") & pl.col("k").is_null()
        & pl.col("metric").is_in(list(CITATION_METRICS + NUGGET_METRICS))).iter_rows(named=True)}
    rows = [[metric_label(m, None)] + [value_cell(rows_by.get((s, m)), is_judge_based(m)) for s in systems]
            for m in CITATION_METRICS + NUGGET_METRICS if any((s, m) in rows_by for s in systems)]
    if rows:
        blocks.append(Block("table", headers=["metric"] + list(systems), rows=rows))
    if citations is not None and citations.height:
        blocks += _failures(citations.filter(pl.col("repeat") == citations["repeat"].min()), systems, worst_n)
    if nugget_labels is not None and nugget_labels.height:
        blocks += _omitted(nugget_labels, systems, golden, access, worst_n)
    return blocks


def nugget_texts(nugget_labels: pl.DataFrame | None) -> list[str]:
    """The nugget texts :func:`citation_section` may show (register them with ``access.want``)."""
    if nugget_labels is None or nugget_labels.height == 0:
        return []
    return nugget_labels["nugget"].drop_nulls().unique().to_list()


def _failures(cites: pl.DataFrame, systems: Sequence[str], worst_n: int) -> list[Block]:
    """Counts of failing citations by kind per system, then the first questions with a failure."""
    out = [heading("Citation failures", 3),
           Block("note", text="Distinct (question, cited chunk) pairs of the first judge repeat with each failure; a "
                              "citation may fail several ways. Replacements are named; restricted chunks by id only.")]
    exploded = (cites.select("system", "question_id", "target", "written", "replaced_by", "failures")
                .explode("failures").drop_nulls("failures")
                .with_columns(pl.coalesce("target", "written").alias("cited"))
                .unique(["system", "question_id", "cited", "failures"]))
    counts = {(r["system"], r["failures"]): r["len"] for r in exploded.group_by("system", "failures").len()
              .iter_rows(named=True)}
    out.append(Block("table", headers=["failure"] + list(systems), rows=[
        [kind] + [num_cell(str(counts.get((s, kind), 0))) for s in systems] for kind in FAILURE_KINDS]))
    listed: list[list[Cell | str]] = []
    for s in systems:
        mine = exploded.filter(pl.col("system") == s).sort("question_id", "cited")
        per_q: dict[str, list[str]] = {}
        for r in mine.iter_rows(named=True):
            why = r["failures"] + (f" (replaced by {r['replaced_by']})" if r["failures"] == "replaced"
                                   and r["replaced_by"] else "")
            per_q.setdefault(r["question_id"], []).append(f"{r['cited']}: {why}")
        for q, whys in list(per_q.items())[:worst_n]:
            listed.append([s, q, "; ".join(whys)])
        if len(per_q) > worst_n:
            listed.append([s, "", Cell(f"{len(per_q) - worst_n} more questions not listed", css="na")])
    if listed:
        out.append(Block("table", headers=["system", "question", "cited chunk: why it failed"], rows=listed))
    return out


def _omitted(nuggets: pl.DataFrame, systems: Sequence[str], golden: pl.DataFrame, access: ReportAccess,
             worst_n: int) -> list[Block]:
    """The vital nuggets each system's answers left out (first repeat), nugget text through the access policy."""
    first = nuggets.filter(pl.col("repeat") == nuggets["repeat"].min())
    missed = first.filter((pl.col("verdict") == "NOT_SUPPORTED") & (pl.col("importance").fill_null("vital") == "vital"))
    restricted = set()
    for q, claims, relevant in golden.select("question_id", "claims", "relevant").iter_rows():
        ids = [c for cl in claims or [] for c in (cl or {}).get("supporting") or []]
        ids += [r["chunk_id"] for r in relevant or [] if r]
        if any(access.is_restricted(c) for c in ids):
            restricted.add(q)
    out = [heading("Vital nuggets left out", 3),
           Block("note", text="Reference claims marked vital that the answer does not state (NOT_SUPPORTED); "
                              "PARTIAL ones are not listed. An answer can be faithful and still leave these out.")]
    rows: list[list[Cell | str]] = []
    for s in systems:
        mine = missed.filter(pl.col("system") == s).sort("question_id", "nugget_id")
        judged = first.filter(pl.col("system") == s)["question_id"].n_unique()
        qs = mine["question_id"].unique(maintain_order=True).to_list()
        rows.append([s, num_cell(str(len(qs))), num_cell(str(judged))])
    out.append(Block("table", headers=["system", "answers leaving out a vital nugget", "answers judged"], rows=rows))
    detail = []
    for s in systems:
        mine = missed.filter(pl.col("system") == s).sort("question_id", "nugget_id")
        shown_q = 0
        last = None
        for r in mine.iter_rows(named=True):
            if r["question_id"] != last:
                shown_q += 1
                last = r["question_id"]
            if shown_q > worst_n:
                break
            reason = "its golden evidence is restricted" if r["question_id"] in restricted else None
            detail.append([s, r["question_id"], r["nugget_id"], access.show(r["nugget"], reason)])
    if detail:
        out.append(Block("table", headers=["system", "question", "nugget", "left out"], rows=detail))
    return out
