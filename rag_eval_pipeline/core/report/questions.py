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
                    regressed: Sequence[tuple[str, str, list[str]]] = ()) -> Callable[[ReportAccess], list[Block]]:
    """Select the questions now (registering their texts with ``access``); render after ``access.finalize()``.

    ``ranks``: where each run placed its question's evidence (``core.report.context.evidence_ranks``): a
    false abstention whose evidence sat only below the generator's ``context_k`` is a context-window
    miss, never "with the evidence retrieved". ``regressed``: :func:`regressed_questions` of the gate
    table; the first ``worst_n`` per system get a card (reason "regressed against the baseline on ...").
    Every card carries the anchor :func:`question_anchor`."""
    ranks = ranks or {}
    per_q = question_metrics.filter(pl.col("k").is_null() & pl.col("metric").is_in(
        ["faithfulness", "answer_without_evidence_rate", "false_abstention_rate", "abstention_with_evidence",
         "run_error_rate"]))
    vals = {(r["system"], r["question_id"], r["metric"]): (r["value"], r["status"])
            for r in per_q.iter_rows(named=True)}
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
            errors = sum(c["verdict"] == "JUDGE_ERROR" for c in claims_by.get((system, q), []))
            chosen.setdefault(q, []).append(f"faithfulness {value:.2f}"
                                            + (f" ({errors} judge errors)" if errors else ""))
        failures: list[tuple[str, str]] = []
        for (s, q, m), (v, _st) in sorted(vals.items()):
            if s != system or v != 1.0:
                continue
            if m == "answer_without_evidence_rate":
                failures.append((q, "answered an absent question"))
            elif m == "false_abstention_rate":
                with_ev = vals.get((s, q, "abstention_with_evidence"), (None, None))[0]
                where = ranks.get((s, q))
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
        for q, reason in failures[:worst_n]:
            chosen.setdefault(q, []).append(reason)
        mine = [(q, labels) for s, q, labels in regressed if s == system]
        for q, labels in mine[:worst_n]:
            chosen.setdefault(q, []).append("regressed against the baseline on " + ", ".join(labels))
        for q, reasons in chosen.items():
            selected.append((system, q, reasons))
        selected_more = (max(0, len(faith) - worst_n), max(0, len(failures) - worst_n),
                         max(0, len(mine) - worst_n))
        if any(selected_more):
            selected.append((system, "", [f"{selected_more[0]} more low-faithfulness, {selected_more[1]} "
                                          f"more failed and {selected_more[2]} more regressed questions not shown"]))

    # register every text that may be shown, for the leak check
    for system, q, _ in selected:
        run = runs.get((system, q)) or {}
        g = gold.get(q) or {}
        access.want(g.get("question"), g.get("reference_answer"), run.get("answer"), run.get("error"))
        for c in claims_by.get((system, q), []):
            access.want(c["claim"], c["quote"], c["justification"], c["error"])

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
                         vals, acc, ranks.get((system, q)))
            blocks.append(Block("group", css="card", anchor=question_anchor(system, q), children=card))
        return blocks

    return render


def _card(system, q, reasons, run, g, claims, vals, acc: ReportAccess,
          where: EvidenceRank | None = None) -> list[Block]:
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
    missing_ev = [c for c in evidence if c not in {h["chunk_id"] for h in retrieved}]
    if missing_ev:
        blocks.append(Block("note", text="Golden evidence not retrieved: " + ", ".join(sorted(missing_ev))))
    return blocks

