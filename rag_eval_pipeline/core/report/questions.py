"""The "questions to read" section: per system the answers with the lowest faithfulness and the
failed questions, each as a card with the question, decision, answer, claims with verdict and quote,
and previews of the retrieved chunks, all shown through the access policy. Nothing here imports Dagster.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl

from rag_eval_pipeline.core.metrics.names import trec_name
from rag_eval_pipeline.core.report.access import PREVIEW_CHARS, ReportAccess
from rag_eval_pipeline.core.report.blocks import Block, Cell, fmt, heading, num_cell, para
from rag_eval_pipeline.core.report.context import EvidenceRank

#: The per-question metrics (k null) the question cards are chosen by and show: all the report reads of
#: ``question_metrics`` (a caller with a scanned file reads only these rows).
CARD_METRICS = ("faithfulness", "answer_without_evidence_rate", "false_abstention_rate", "abstention_with_evidence",
                "run_error_rate")

#: Questions per system and list that get a card in the report (``build_report(worst_n=)``); the CI summary links
#: at most this many regressed questions per system, those that have a card.
WORST_N = 10


def anchor_text(text: str) -> str:
    """``text`` safe in an HTML id and a URL fragment: every character outside ``[A-Za-z0-9_.-]`` replaced by
    ``-``. Raises nothing."""
    return re.sub(r"[^A-Za-z0-9_.-]", "-", text)


def question_anchor(system: str, question_id: str) -> str:
    """The HTML id of a question's card in the report: ``q-<system>-<question_id>`` (:func:`anchor_text`).
    Raises nothing."""
    return "q-" + anchor_text(f"{system}-{question_id}")


def regressed_questions(gates: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, list[str]]]:
    """The questions that got worse against the baseline on a gated metric, most metrics first.

    Input: gate rows (system, metric, k, regressed_questions: the questions where the candidate's
    per-question value is worse than the baseline's on the gate split). Output: [(system, question_id,
    [metric labels])] sorted by the number of regressed metrics (descending), then system and question
    id. The report's cards, the CLI's ``--summary-md`` and its links use this one order. Raises nothing.
    """
    found: dict[tuple[str, str], list[str]] = {}
    for g in gates:
        label = trec_name(str(g.get("metric")), g.get("k"))
        for q in g.get("regressed_questions") or []:
            found.setdefault((str(g.get("system")), str(q)), []).append(label)
    return sorted(((s, q, labels) for (s, q), labels in found.items()), key=lambda t: (-len(t[2]), t[0], t[1]))


def worst_questions(question_metrics, rag_runs, golden, judge_labels, systems, worst_n, access: ReportAccess,
                    ranks: dict[tuple[str, str], EvidenceRank] | None = None,
                    regressed: Sequence[tuple[str, str, list[str]]] = (), *,
                    citation_detail: pl.DataFrame | None = None,
                    omitted: pl.DataFrame | None = None) -> Callable[[ReportAccess], list[Block]]:
    """Select the questions now (registering their texts with ``access``); render after ``access.finalize()``.

    ``ranks``: where each run placed its question's evidence (``core.report.context.evidence_ranks``): a
    false abstention whose evidence sat only below the generator's ``context_k`` is a context-window
    miss, never "with the evidence retrieved". ``regressed``: :func:`regressed_questions` of the gate
    table; the first ``worst_n`` per system get a card (reason "regressed against the baseline on ...").
    ``citation_detail`` (:func:`~rag_eval_pipeline.core.citations.judging.citation_detail`) and ``omitted``
    (:func:`~rag_eval_pipeline.core.completeness.omitted_nuggets`): the first ``worst_n`` questions per
    system with a failing citation, and with a vital nugget left out, get a card too, and every card
    shows which claim cites what and why each citation failed, and the nuggets the answer left out.
    Every card carries the anchor :func:`question_anchor`."""
    ranks = ranks or {}
    per_q = question_metrics.filter(pl.col("k").is_null() & pl.col("metric").is_in(list(CARD_METRICS)))
    per_q = per_q.select("system", "question_id", "metric", "value", "status")
    min_rep = judge_labels.group_by("system", "question_id").agg(pl.col("repeat").min().alias("_r"))
    first_repeat = (judge_labels.join(min_rep, on=["system", "question_id"])
                    .filter(pl.col("repeat") == pl.col("_r")).sort("system", "question_id", "claim_id"))

    def claims_for(keys) -> dict[tuple[str, str], list[dict]]:
        """The claim rows of only these (system, question_id) keys: a card needs a few, the table has millions."""
        out: dict[tuple[str, str], list[dict]] = {}
        for r in first_repeat.join(_keys_frame(keys), on=["system", "question_id"], how="semi").iter_rows(named=True):
            out.setdefault((r["system"], r["question_id"]), []).append(r)
        return out

    def values_for(keys) -> dict[tuple[str, str, str], tuple]:
        """(system, question_id, metric) -> (value, status) of only these (system, question_id) keys."""
        rows = per_q.join(_keys_frame(keys), on=["system", "question_id"], how="semi").iter_rows()
        return {(s, q, m): (v, st) for s, q, m, v, st in rows}

    # Selected in polars: a dict of every question's five values took ~0.8 KB per value (GBs at 100,000 questions).
    selected: list[tuple[str, str, list[str]]] = []
    for system in systems:
        mine_q = per_q.filter(pl.col("system") == system)
        low = (mine_q.filter((pl.col("metric") == "faithfulness") & pl.col("value").is_not_null()
                             & (pl.col("value") < 1 - 1e-12)).sort("value", "question_id"))
        faith = list(zip(low["value"].head(worst_n).to_list(), low["question_id"].head(worst_n).to_list()))
        chosen: dict[str, list[str]] = {}
        faith_claims = claims_for({(system, q) for _, q in faith})
        for value, q in faith:
            errors = sum(c["verdict"] == "JUDGE_ERROR" for c in faith_claims.get((system, q), []))
            chosen.setdefault(q, []).append(f"faithfulness {value:.2f}"
                                            + (f" ({errors} judge errors)" if errors else ""))
        failed = (mine_q.filter(pl.col("metric").is_in(["answer_without_evidence_rate", "false_abstention_rate",
                                                         "run_error_rate"]) & (pl.col("value") == 1.0))
                  .sort("question_id", "metric"))
        top = failed.head(worst_n)
        vals = values_for({(system, q) for q in top["question_id"].to_list()})
        failures: list[tuple[str, str]] = []
        for q, m in top.select("question_id", "metric").iter_rows():
            if m == "answer_without_evidence_rate":
                failures.append((q, "answered an absent question"))
            elif m == "false_abstention_rate":
                with_ev = vals.get((system, q, "abstention_with_evidence"), (None, None))[0]
                where = ranks.get((system, q))
                if with_ev == 1.0 and where is not None and where.miss:
                    detail = (f", context-window miss (evidence retrieved at rank {where.first_rank}, below the "
                              f"generator's context_k {where.context_k})")
                elif with_ev == 1.0:
                    detail = " with the evidence retrieved"
                else:
                    detail = " (evidence not retrieved)" if with_ev == 0.0 else ""
                failures.append((q, "false abstention" + detail))
            elif m == "run_error_rate":
                failures.append((q, "run error"))
        for q, reason in failures:
            chosen.setdefault(q, []).append(reason)
        mine = [(q, labels) for s, q, labels in regressed if s == system]
        for q, labels in mine[:worst_n]:
            chosen.setdefault(q, []).append("regressed against the baseline on " + ", ".join(labels))
        for q, why in _citation_reasons(citation_detail, omitted, system)[:worst_n]:
            chosen.setdefault(q, []).append(why)
        for q, reasons in chosen.items():
            selected.append((system, q, reasons))
        selected_more = (max(0, low.height - worst_n), max(0, failed.height - worst_n),
                         max(0, len(mine) - worst_n))
        if any(selected_more):
            selected.append((system, "", [f"{selected_more[0]} more low-faithfulness, {selected_more[1]} "
                                          f"more failed and {selected_more[2]} more regressed questions not shown"]))

    # the rows behind the cards, and only those
    cards = {(system, q) for system, q, _ in selected if q}
    claims_by = claims_for(cards)
    vals = values_for(cards)
    runs = {(r["system"], r["question_id"]): r
            for r in rag_runs.join(_keys_frame(cards), on=["system", "question_id"], how="semi").iter_rows(named=True)}
    wanted_q = pl.DataFrame({"question_id": sorted({q for _, q in cards})}, schema={"question_id": pl.Utf8})
    gold = {r["question_id"]: r for r in golden.join(wanted_q, on="question_id", how="semi").iter_rows(named=True)}
    cites_by: dict[tuple[str, str], list[dict]] = {}
    for r in (citation_detail.iter_rows(named=True) if citation_detail is not None else []):
        cites_by.setdefault((r["system"], r["question_id"]), []).append(r)
    omitted_by: dict[tuple[str, str], list[dict]] = {}
    for r in (omitted.iter_rows(named=True) if omitted is not None else []):
        omitted_by.setdefault((r["system"], r["question_id"]), []).append(r)

    # register every text that may be shown, for the leak check
    for system, q, _ in selected:
        run = runs.get((system, q)) or {}
        g = gold.get(q) or {}
        access.want(g.get("question"), g.get("reference_answer"), run.get("answer"), run.get("error"))
        for c in claims_by.get((system, q), []):
            access.want(c["claim"], c["quote"], c["justification"], c["error"])
        access.want(*(c["claim"] for c in cites_by.get((system, q), [])),
                    *(n["nugget"] for n in omitted_by.get((system, q), [])))

    def render(acc: ReportAccess) -> list[Block]:
        blocks = [heading("Questions to read", 2),
                  Block("note", text=f"Per system: up to {worst_n} answers with the lowest faithfulness (below 1), and "
                                     f"up to {worst_n} failures (absent questions answered, false abstentions, run "
                                     f"errors), and up to {worst_n} questions that regressed against the baseline "
                                     "on a gated metric (gate split). Claims of the first judge repeat. Chunk "
                                     "previews show the first "
                                     f"{PREVIEW_CHARS} characters; restricted chunks and any answer that drew on them "
                                     "are withheld for this viewer.")]
        if not selected:
            blocks.append(para("No question below full faithfulness and no failure."))
        current = None
        for system, q, reasons in selected:
            if system != current:
                blocks.append(heading(system, 3))
                current = system
            if not q:
                blocks.append(Block("note", text=reasons[0]))
                continue
            card = _card(system, q, reasons, runs.get((system, q)), gold.get(q), claims_by.get((system, q), []),
                         vals, acc, ranks.get((system, q)), cites_by.get((system, q), []),
                         omitted_by.get((system, q), []))
            blocks.append(Block("group", css="card", anchor=question_anchor(system, q), children=card))
        return blocks

    return render


def _citation_reasons(detail: pl.DataFrame | None, omitted: pl.DataFrame | None, system: str
                      ) -> list[tuple[str, str]]:
    """(question_id, reason) of the system's questions with a failing citation, then with a vital nugget left
    out, each question once per kind, in question order."""
    out: list[tuple[str, str]] = []
    if detail is not None:
        found: dict[str, set[str]] = {}
        for r in detail.filter(pl.col("system") == system).iter_rows(named=True):
            for c in r["citations"] or []:
                found.setdefault(r["question_id"], set()).update(c["failures"] or [])
        out += [(q, "citation failures: " + ", ".join(sorted(f))) for q, f in sorted(found.items()) if f]
    if omitted is not None:
        vital = omitted.filter((pl.col("system") == system) & (pl.col("importance").fill_null("vital") == "vital"))
        out += [(q, "left out a vital nugget") for q in sorted(set(vital["question_id"].to_list()))]
    return out


def _citation_blocks(cites: list[dict], omitted: list[dict], acc: ReportAccess, answer_reason: str | None,
                     ref_reason: str | None) -> list[Block]:
    """Which claim cites what and why each citation failed (chunk ids, never chunk text), and the nuggets the
    answer left out (golden texts, withheld when the question's evidence is restricted)."""
    blocks: list[Block] = []
    rows: list[list[Cell | str]] = []
    for r in cites:
        for c in r["citations"] or []:
            rows.append([r["claim_id"] or "(no claim)", acc.show(r["claim"], answer_reason) if r["claim"] else
                         Cell("(bound to no claim)", css="na"), c["target"] or "?", c["marker"] or "(run log)",
                         Cell(c["support"] or "not judged", css=f"verdict-{c['support']}" if c["support"] else "na"),
                         ", ".join(c["failures"] or []) or "ok"])
        if not r["citations"] and r["status"] == "uncited":
            rows.append([r["claim_id"], acc.show(r["claim"], answer_reason), Cell("(none)", css="na"), "", "",
                         "uncited"])
    if rows:
        blocks.append(Block("table", headers=["claim", "text", "cites", "marker", "support alone", "why it failed"],
                            rows=rows))
    if omitted:
        blocks.append(Block("table", headers=["nugget", "importance", "left out of the answer"],
                            rows=[[n["nugget_id"], n["importance"] or "vital", acc.show(n["nugget"], ref_reason)]
                                  for n in omitted]))
    return blocks


def _keys_frame(keys) -> pl.DataFrame:
    """A two-column frame (system, question_id) of ``keys`` (an iterable of pairs), for semi joins."""
    keys = sorted(keys)
    return pl.DataFrame({"system": [k[0] for k in keys], "question_id": [k[1] for k in keys]},
                        schema={"system": pl.Utf8, "question_id": pl.Utf8})


def _card(system, q, reasons, run, g, claims, vals, acc: ReportAccess,
          where: EvidenceRank | None = None, cites: list[dict] | None = None,
          omitted: list[dict] | None = None) -> list[Block]:
    blocks = [heading(f"{q} — {'; '.join(reasons)}", 4)]
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
    facts: list[list[Cell | str]] = [
        ["question", acc.show(g.get("question"))],
        ["class / split", f"{g.get('answerability', '?')} / {g.get('split', '?')}"],
        ["segments", ", ".join(g.get("segments") or [])],
        ["decision", run.get("decision") or "(no run)"],
        ["faithfulness", (fmt(faith[0], 3) if faith[0] is not None else f"not evaluable ({faith[1] or 'no row'})")
         + f" · judge errors {sum(c['verdict'] == 'JUDGE_ERROR' for c in claims)}"],
        ["reference answer", acc.show(g.get("reference_answer"), ref_reason)],
    ]
    if where is not None and where.context_k is not None:
        facts.append(["context window", f"the generator reads the first {where.context_k} chunk(s)"
                      + ("" if where.first_rank is None else
                         f"; first evidence at rank {where.first_rank}"
                         + (": a context-window miss" if where.miss else ""))])
    # rule 5: an answer withheld for its own text takes everything derived from it along
    answer_reason = answer_reason or (
        f"derived from an answer that {reason}" if (reason := acc.leak_reason(run.get("answer"))) else None)
    if run.get("error"):
        facts.append(["run error", acc.show(run.get("error"), answer_reason)])
    blocks.append(Block("table", headers=["", ""], rows=facts, css="meta"))
    blocks.append(para("Answer:"))
    if run.get("answer") is None:
        shown = Cell({"abstain": "(no answer: the system abstained)",
                      "clarify": "(no answer: it asked for clarification)",
                      "error": "(no answer: the run failed)"}.get(run.get("decision"), "(no answer)"), css="na")
    else:
        shown = acc.show(run.get("answer"), answer_reason)
    blocks.append(Block("quote", text=shown.text, css=shown.css))
    if cited:
        blocks.append(para("Cited: " + ", ".join(cited)))
    if claims:
        rows = []
        for c in claims:
            note = c["error"] if c["verdict"] == "JUDGE_ERROR" else c["justification"]
            # rule 5: a claim, its quote and the note beside it stand or fall together
            own = acc.leak_reason(c["claim"], c["quote"], note)
            row_reason = answer_reason or (f"derived from a claim that {own}" if own else None)
            rows.append([c["claim_id"], acc.show(c["claim"], row_reason),
                         Cell(c["verdict"], css=f"verdict-{c['verdict']}"),
                         acc.show(c["quote"], row_reason) if c["quote"] else Cell("(no quote)", css="na"),
                         "yes" if c["quote_found"] else "no",
                         acc.show(note, row_reason) if note else Cell("")])
        blocks.append(Block("table", headers=["claim", "text", "verdict", "quote", "quote in context", "judge note"],
                            rows=rows))
    if retrieved:
        rows = []
        for h in retrieved:
            cid = h["chunk_id"]
            title, prev = acc.preview(cid)
            status = (acc.chunks.get(cid) or {}).get("status") or "?"
            ev = "" if cid not in evidence else (
                "evidence" + (f" (grade {evidence[cid]})" if evidence[cid] is not None else ""))
            if ev and where is not None and where.context_k is not None and (h["rank"] or 0) > where.context_k:
                ev += ", below the context window"
            rows.append([num_cell(str(h["rank"])), cid, title, status, ev, "cited" if cid in cited else "", prev])
        blocks.append(Block("table", headers=["rank", "chunk", "title", "status", "golden", "cited", "preview"],
                            rows=rows))
    else:
        blocks.append(para("No chunk retrieved."))
    blocks += _citation_blocks(cites or [], omitted or [], acc, answer_reason, ref_reason)
    missing_ev = [c for c in evidence if c not in {h["chunk_id"] for h in retrieved}]
    if missing_ev:
        blocks.append(Block("note", text="Golden evidence not retrieved: " + ", ".join(sorted(missing_ev))))
    return blocks

