"""What a person labels for judge calibration: the items, their content hash, the sample, the label file.

Label a few dozen cases by hand and measure how far the judge agrees (Cohen's kappa; ARES,
Saad-Falcon et al., NAACL 2024, validates its judges on a small human-labelled set). This module is the pure
part of the labelling page (``rag-eval label``); the page itself lives outside the core.

- An *item* is one claim of one answer (calibration level ``claim``: the judge's own claims, ids
  as ``judge_labels`` writes them) or one answer (level ``response``), for every answer the judge
  labelled (JUDGE_ERROR items are left out: they are not compared).
- :func:`content_sha256` hashes what the labeller sees: the question, the answer, the claim (claim
  level) and the texts of the retrieved chunks in rank order. A label stores it; when the item's
  hash changes later, the label is stale (``core/metrics/calibration.py``).
- A system whose ids are document ids (``chunk_map: {doc_ids: true}``, ``doc_id_systems``) retrieved
  and cited whole documents: the person sees, and the hash covers, every chunk of each retrieved or
  cited document in chunk order (each at the rank of the document that brought it), as the judge read
  them (:class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`). Chunk-id systems are
  unchanged.
- Access: the report's rule (``readable_by`` / ``find_leaks`` of the report module). An item is
  withheld from a labeller when any chunk its run retrieved or cited is outside the labeller's
  groups, or when its question, answer or claim contains text of such a chunk: the answer may
  repeat what the labeller may not read. Withheld items are counted, never shown.
- Sampling (:func:`stratified_order`): strata = (system, the judge's label of the item); within a
  stratum a seeded hash orders the items; the strata are then interleaved round robin, so every
  prefix of the order is as balanced as the strata allow and every label gets items (κ and
  per-label precision / recall are estimable). The order depends only on the seed and the items:
  two people with the same configuration get the same items; a larger ``--n`` extends the sample.
- What a labeller writes (the label choices and the label file) is
  :mod:`rag_eval_pipeline.core.label_file`.

Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.metrics.calibration import judge_item_labels
from rag_eval_pipeline.core.report.access import find_leaks, readable_by
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence

__all__ = [
    "HASH_VERSION",
    "FAMILY_LEVELS",
    "LabelItem",
    "build_family_items",
    "build_items",
    "content_sha256",
    "current_content_hashes",
    "stratified_order",
    "withhold_restricted",
]

HASH_VERSION = 1


def content_sha256(question: str | None, answer: str | None, contexts: Sequence[str | None],
                   claim: str | None = None) -> str:
    """The sha256 (64 lowercase hex digits) of what a labeller sees for one item.

    Input: the question text, the answer text, the retrieved chunk texts in rank order (None for a
    chunk missing from the snapshot), and the claim text at claim level (None at response level).
    Output: sha256 of the canonical JSON ``{"v": 1, "question", "answer", "claim", "contexts"}``
    (sorted keys, no whitespace, UTF-8). Any change of a text or of the context order changes it.
    Never raises.
    """
    doc = {"v": HASH_VERSION, "question": question, "answer": answer, "claim": claim, "contexts": list(contexts)}
    raw = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass
class LabelItem:
    """One thing to label. ``key`` is (system, question_id) or (system, question_id, claim_id);
    ``chunks`` are the retrieved chunks in rank order as dicts (chunk_id, rank, title, status, text;
    title/text None when the chunk is not in the snapshot); ``cited`` the cited chunk ids;
    ``judge_label`` the judge's calibrated label, ``judge_claims`` the judge's claim rows (claim,
    verdict, quote) for adjudication."""

    system: str
    question_id: str
    claim_id: str | None
    question: str | None
    answer: str | None
    claim: str | None
    claims: list[str]
    chunks: list[dict[str, Any]]
    cited: list[str]
    judge_label: str
    judge_claims: list[dict[str, Any]] = field(default_factory=list)
    content_sha256: str = ""
    #: verdict families: the chunk ids the person judges the claim against ("a|b"), or "answer" for a nugget
    passages: str | None = None

    @property
    def key(self) -> tuple[str, ...]:
        return (self.system, self.question_id) + ((self.claim_id,) if self.claim_id is not None else ())

    @property
    def key_text(self) -> str:
        return "/".join(self.key)


def _need(df: pl.DataFrame | None, name: str, cols: Iterable[str]) -> pl.DataFrame:
    if df is None:
        raise InputError(f"table {name} is missing: run the evaluation first (rag-eval run)")
    miss = [c for c in cols if c not in df.columns]
    if miss:
        raise InputError(f"table {name} lacks columns {miss}")
    return df


def _whole_documents(evidence: JudgingEvidence, system: str, hits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A document-id system's hits as every chunk of each document (rank of the hit that brought it,
    a chunk once); other systems' hits unchanged."""
    if system not in evidence.doc_id_systems:
        return hits
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for h in hits:
        for c in evidence.chunk_ids(system, [h["chunk_id"]]):
            if c not in seen:
                seen.add(c)
                out.append({"chunk_id": c, "rank": h["rank"]})
    return out


def _runs_index(rag_runs: pl.DataFrame, golden: pl.DataFrame, snapshot: pl.DataFrame,
                doc_id_systems: Collection[str] = ()):
    _need(rag_runs, "rag_runs", ("system", "question_id", "retrieved", "answer", "citations"))
    _need(golden, "golden_set", ("question_id", "question"))
    _need(snapshot, "corpus_snapshot", ("chunk_id", "text", "title", "status", "acl"))
    questions = dict(zip(golden["question_id"].to_list(), golden["question"].to_list()))
    evidence = JudgingEvidence(snapshot, doc_id_systems)
    chunks: dict[str, dict[str, Any]] = {}
    for r in snapshot.select("chunk_id", "text", "title", "status", "acl").iter_rows(named=True):
        chunks.setdefault(r["chunk_id"], r)
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for r in rag_runs.select("system", "question_id", "retrieved", "answer", "citations").iter_rows(named=True):
        hits = sorted((h for h in (r["retrieved"] or []) if h and h.get("chunk_id")),
                      key=lambda h: (h["rank"] is None, h["rank"] or 0))
        hits = _whole_documents(evidence, r["system"], hits)
        r["cited"] = evidence.chunk_ids(r["system"], [c for c in (r.get("citations") or []) if c])
        r["hits"] = [{"chunk_id": h["chunk_id"], "rank": h["rank"],
                      "title": (chunks.get(h["chunk_id"]) or {}).get("title"),
                      "status": (chunks.get(h["chunk_id"]) or {}).get("status"),
                      "text": (chunks.get(h["chunk_id"]) or {}).get("text")} for h in hits]
        runs[(r["system"], r["question_id"])] = r
    return questions, chunks, runs, evidence


def _claim_rows(judge_labels: pl.DataFrame) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Each answer's claims (first repeat), in claim order."""
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    first = judge_labels.filter(pl.col("repeat") == pl.col("repeat").min().over("system", "question_id"))
    for r in first.select("system", "question_id", "claim_id", "claim", "verdict", "quote").iter_rows(named=True):
        if r["verdict"] == "JUDGE_ERROR":
            continue
        out.setdefault((r["system"], r["question_id"]), []).append(r)
    for rows in out.values():
        rows.sort(key=lambda r: _claim_order(r["claim_id"]))
    return out


def _claim_order(claim_id: str) -> tuple:
    tail = claim_id.rsplit(":c", 1)[-1]
    return (0, int(tail), claim_id) if tail.isdigit() else (1, 0, claim_id)


def build_items(rag_runs: pl.DataFrame, golden: pl.DataFrame, snapshot: pl.DataFrame, judge_labels: pl.DataFrame,
                level: str, mapping: Mapping[str, Any] | None = None,
                doc_id_systems: Collection[str] = ()) -> list[LabelItem]:
    """Every item the judge labelled, with what the page shows and its content hash.

    Inputs: the ``rag_runs``, ``golden_set``, ``corpus_snapshot`` and ``judge_labels`` tables of one
    evaluation (one judge key); ``level`` "claim" or "response"; the calibration ``mapping``.
    Output: one :class:`LabelItem` per item that has a judge label after the mapping (response
    level: per answer, by the mapping's ``judge_rule``; claim level: per claim, majority over
    repeats), sorted by key; ``doc_id_systems`` (systems whose ids are document ids,
    ``core.pipeline.doc_id_systems``): their items show every chunk of each retrieved or cited document
    (module docstring). Raises InputError when a table or column is missing; ValueError /
    InputError from the mapping as :func:`~rag_eval_pipeline.core.metrics.calibration.calibrate`.
    """
    _need(judge_labels, "judge_labels", ("system", "question_id", "claim_id", "claim", "verdict", "quote", "repeat"))
    questions, _chunks, runs, _evidence = _runs_index(rag_runs, golden, snapshot, doc_id_systems)
    judged, _ = judge_item_labels(judge_labels, mapping, level)
    claims = _claim_rows(judge_labels)
    items = []
    for row in judged.sort(judged.columns[:-1]).iter_rows(named=True):
        run = runs.get((row["system"], row["question_id"]))
        if run is None or not run.get("answer"):
            continue
        answer_claims = claims.get((row["system"], row["question_id"]), [])
        claim_id = row.get("claim_id") if level == "claim" else None
        claim = None
        if claim_id is not None:
            claim = next((c["claim"] for c in answer_claims if c["claim_id"] == claim_id), None)
            if claim is None:
                continue
        q = questions.get(row["question_id"])
        items.append(LabelItem(
            system=row["system"], question_id=row["question_id"], claim_id=claim_id, question=q,
            answer=run["answer"], claim=claim, claims=[c["claim"] for c in answer_claims], chunks=run["hits"],
            cited=run["cited"], judge_label=row["label"],
            judge_claims=answer_claims if claim_id is None else [c for c in answer_claims if c["claim_id"] == claim_id],
            content_sha256=content_sha256(q, run["answer"], [h["text"] for h in run["hits"]], claim)))
    return items


#: Calibration levels of the verdict families beside faithfulness (one label per claim or nugget).
FAMILY_LEVELS = ("citation_support", "nugget_coverage")


def build_family_items(family: str, rag_runs: pl.DataFrame, golden: pl.DataFrame, snapshot: pl.DataFrame,
                       table: pl.DataFrame, formats: Mapping[str, Any] | None = None,
                       doc_id_systems: Collection[str] = ()) -> list[LabelItem]:
    """The items of a verdict family the judge labelled, with what the page shows and its content hash.

    ``citation_support``: one item per claim of ``citation_claims`` (first repeat) that was judged
    against its cited chunks; the page shows the claim and only those cited chunks (``passages`` =
    their ids joined by "|", sorted). ``nugget_coverage``: one item per (answer, nugget) of
    ``nugget_labels`` (first repeat, no JUDGE_ERROR); the page shows the nugget and the answer with its
    citation markers stripped (what the judge read, so a quote can be selected from it), and no chunk
    (``passages`` = "answer"; the run's retrieved and cited ids are kept in ``cited`` for the withholding
    rule only). ``judge_label`` is the judge's verdict. ``content_sha256`` hashes the question, the answer,
    the item's text and the passages shown. ``formats``: system → CitationFormat for stripping markers.
    ``doc_id_systems``: systems whose ids are document ids; a judged or retrieved id of theirs shows (and
    hashes) every chunk of its document, as the judge read them (``passages`` keeps the judged ids).
    Raises InputError for a missing table or column, ValueError for an unknown family.
    """
    from rag_eval_pipeline.core.citations.markers import DEFAULT_FORMAT, strip_markers

    if family not in FAMILY_LEVELS:
        raise ValueError(f"unknown verdict family {family!r}; expected one of {FAMILY_LEVELS}")
    questions, chunks, runs, evidence = _runs_index(rag_runs, golden, snapshot, doc_id_systems)
    items = []
    if family == "citation_support":
        _need(table, "citation_claims", ("system", "question_id", "claim_id", "claim", "judged", "verdict", "status",
                                         "repeat"))
        first = table.filter((pl.col("repeat") == pl.col("repeat").min()) & (pl.col("status") == "judged"))
        for r in first.sort("system", "question_id", "unit").iter_rows(named=True):
            run = runs.get((r["system"], r["question_id"]))
            if run is None or not run.get("answer"):
                continue
            ranks = {h["chunk_id"]: h["rank"] for h in run["hits"]}
            shown = [{"chunk_id": c, "rank": ranks.get(c), "title": (chunks.get(c) or {}).get("title"),
                      "status": (chunks.get(c) or {}).get("status"), "text": (chunks.get(c) or {}).get("text")}
                     for c in evidence.chunk_ids(r["system"], r["judged"] or [])]
            same = first.filter((pl.col("system") == r["system"]) & (pl.col("question_id") == r["question_id"]))
            q = questions.get(r["question_id"])
            items.append(LabelItem(
                system=r["system"], question_id=r["question_id"], claim_id=r["claim_id"], question=q,
                answer=run["answer"], claim=r["claim"], claims=same["claim"].to_list(), chunks=shown,
                cited=evidence.chunk_ids(r["system"], r["judged"] or []), judge_label=r["verdict"],
                judge_claims=[{"claim": r["claim"], "verdict": r["verdict"], "quote": r.get("quote")}],
                content_sha256=content_sha256(q, run["answer"], [h["text"] for h in shown], r["claim"]),
                passages="|".join(sorted(r["judged"] or []))))
        return items
    _need(table, "nugget_labels", ("system", "question_id", "nugget_id", "nugget", "verdict", "repeat"))
    first = table.filter((pl.col("repeat") == pl.col("repeat").min()) & (pl.col("verdict") != "JUDGE_ERROR"))
    known_chunks = {c: row.get("doc_id") or c.rsplit("#", 1)[0] for c, row in chunks.items()}  # chunk -> document
    for r in first.iter_rows(named=True):
        run = runs.get((r["system"], r["question_id"]))
        if run is None or not run.get("answer"):
            continue
        answer = strip_markers(run["answer"], (formats or {}).get(r["system"], DEFAULT_FORMAT),
                               known_chunks=known_chunks)
        q = questions.get(r["question_id"])
        used = [h["chunk_id"] for h in run["hits"]] + run["cited"]
        items.append(LabelItem(
            system=r["system"], question_id=r["question_id"], claim_id=r["nugget_id"], question=q, answer=answer,
            claim=r["nugget"], claims=[], chunks=[], cited=used, judge_label=r["verdict"],
            judge_claims=[{"claim": r["nugget"], "verdict": r["verdict"], "quote": r.get("quote")}],
            content_sha256=content_sha256(q, answer, [], r["nugget"]), passages="answer"))
    return sorted(items, key=lambda it: it.key)


def current_content_hashes(rag_runs: pl.DataFrame, golden: pl.DataFrame, snapshot: pl.DataFrame,
                           judge_labels: pl.DataFrame, level: str,
                           doc_id_systems: Collection[str] = ()) -> dict[tuple[str, ...], str]:
    """Item key → :func:`content_sha256` of the item now, for every answer of ``rag_runs``.

    Keys: (system, question_id) at response level; (system, question_id, claim_id) at claim level
    for every claim ``judge_labels`` holds (its claim text is part of the hash); ``doc_id_systems`` as
    :func:`build_items` (pass the same, or a document-id system's labels all read as stale). Used by
    ``judge_calibration`` to find stale hand labels. Raises InputError when a table or column is
    missing.
    """
    questions, _chunks, runs, _evidence = _runs_index(rag_runs, golden, snapshot, doc_id_systems)
    out: dict[tuple[str, ...], str] = {}
    if level == "response":
        for (system, qid), run in runs.items():
            if run.get("answer"):
                out[(system, qid)] = content_sha256(questions.get(qid), run["answer"], [h["text"] for h in run["hits"]])
        return out
    _need(judge_labels, "judge_labels", ("system", "question_id", "claim_id", "claim", "verdict", "quote", "repeat"))
    for (system, qid), rows in _claim_rows(judge_labels).items():
        run = runs.get((system, qid))
        if run is None or not run.get("answer"):
            continue
        texts = [h["text"] for h in run["hits"]]
        for c in rows:
            out[(system, qid, c["claim_id"])] = content_sha256(questions.get(qid), run["answer"], texts, c["claim"])
    return out


def withhold_restricted(items: Sequence[LabelItem], snapshot: pl.DataFrame, viewer_groups: Sequence[str]
                        ) -> tuple[list[LabelItem], list[LabelItem]]:
    """Split items into (shown, withheld) for a labeller in ``viewer_groups``, by the report's rule.

    Withheld: any retrieved or cited chunk is unreadable for these groups (``readable_by``: an acl
    sharing no group, or an unknown acl), or the question, answer or claim contains text of such
    a chunk (``find_leaks``: compared on skeletons, so invisible or confusable characters hide
    nothing), and so does anything the page would show beside them (the judge's claims, quotes and
    notes). Output keeps the input order. Never raises.
    """
    acl = {cid: a for cid, a in zip(snapshot["chunk_id"].to_list(), snapshot["acl"].to_list())}
    text = {cid: t for cid, t in zip(snapshot["chunk_id"].to_list(), snapshot["text"].to_list())}
    restricted = {cid for cid, a in acl.items() if not readable_by(a, viewer_groups)}
    def texts(it: LabelItem) -> list[str]:
        derived = [c.get(k) for c in it.judge_claims for k in ("claim", "quote", "justification")]
        return [t for t in (it.question, it.answer, it.claim, *it.claims, *derived) if isinstance(t, str) and t]

    leaks = find_leaks({t for it in items for t in texts(it)}, (text[c] for c in restricted))
    shown: list[LabelItem] = []
    withheld: list[LabelItem] = []
    for it in items:
        used = [h["chunk_id"] for h in it.chunks] + it.cited
        bad = any(c in restricted for c in used) or any(t in leaks for t in texts(it))
        (withheld if bad else shown).append(it)
    return shown, withheld


def _rank_hash(seed: int, key: tuple[str, ...]) -> str:
    return hashlib.sha256(json.dumps([seed, *key], ensure_ascii=False).encode("utf-8")).hexdigest()


def stratified_order(items: Sequence[LabelItem], seed: int) -> list[LabelItem]:
    """All items in sampling order: strata (system, judge label) interleaved round robin.

    Within a stratum, items are ordered by sha256 of (seed, item key); strata are visited in sorted
    (system, label) order, one item each per round, skipping exhausted strata. The first n items
    are the sample of size n (equal allocation, capped by stratum size). Deterministic in the seed
    and the items. Never raises.
    """
    strata: dict[tuple[str, str], list[LabelItem]] = {}
    for it in items:
        strata.setdefault((it.system, it.judge_label), []).append(it)
    queues = [sorted(strata[k], key=lambda it: _rank_hash(seed, it.key)) for k in sorted(strata)]
    out: list[LabelItem] = []
    depth = 0
    while len(out) < len(items):
        for q in queues:
            if depth < len(q):
                out.append(q[depth])
        depth += 1
    return out
