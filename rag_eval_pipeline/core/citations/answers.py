"""An answered run read for its citations: its claims, the citations bound to each, and every citation's
validity (no judge); the support of each claim is judged by :mod:`rag_eval_pipeline.core.citations.judging`.

**Claims and their citations.** An answered run (decision ``answer``, text not an abstention; the
statuses of :func:`answer_status` are skipped, as faithfulness skips them) is read with its system's
:class:`~rag_eval_pipeline.core.citations.markers.CitationFormat`: markers are stripped and bound to
citation units, and each unit's claims (:func:`~rag_eval_pipeline.core.judges.rule_based.checkable_claims`,
ids ``<question_id>:c<n>`` in answer order) take the unit's citations. An answer without inline
markers binds its run-log ``citations`` (answer level) to every claim; an answer with markers binds
by marker, and a logged citation no marker names is listed bound to no claim. A claim "needs a
citation" unless it is a question or speaks in the first person.

**Document-id systems** (``chunk_map: {doc_ids: true}``): a retrieved document stands for all its
chunks, so a cited chunk of a retrieved document (``[kb-08]`` when the system retrieved ``warranty``,
stored as its first chunk ``kb-07``) is retrieved, at the document's rank, exactly as for a chunk-id
system that retrieved every chunk of that document; the mapping is
:class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`, the one judging reads.

Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from rag_eval_pipeline.core.citations.markers import DEFAULT_FORMAT, CitationFormat, Reference, parse_answer
from rag_eval_pipeline.core.citations.validity import SnapshotIndex, check_citation
from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence

__all__ = ["CitedAnswer", "CitedClaim", "answer_status", "formats_for_systems", "read_answers"]

_DECISION_STATUS = {"abstain": "abstained", "clarify": "clarify", "error": "run_error"}


def answer_status(decision: str | None, answer: str | None, phrases: Mapping[str, Any] | None = None) -> str | None:
    """Why an answer is not evaluated for citations or nuggets, or None when it is: "abstained",
    "clarify", "run_error" (by decision), "abstention_text_in_answer" (decision ``answer`` but the
    text abstains, :func:`~rag_eval_pipeline.core.judges.abstention.abstention_phrase`), "no_claims"
    (blank answer). The same statuses faithfulness gives these answers (core/judging.py)."""
    fixed = _DECISION_STATUS.get(decision or "")
    if fixed:
        return fixed
    if abstention_phrase(answer, phrases):
        return "abstention_text_in_answer"
    if not (answer and answer.strip()):
        return "no_claims"
    return None


def formats_for_systems(systems: Sequence[Any], where: str = "systems") -> dict[str, CitationFormat]:
    """system name → :class:`CitationFormat` from the configuration's ``systems`` entries (typed
    sections or mappings; key ``citation_format``, absent = every syntax). Raises ConfigError naming
    the entry."""
    out = {}
    for i, s in enumerate(systems):
        name = s.get("name") if isinstance(s, Mapping) else getattr(s, "name", None)
        value = s.get("citation_format") if isinstance(s, Mapping) else getattr(s, "citation_format", None)
        if name:
            out[name] = CitationFormat.from_config(value, f"{where}[{i}].citation_format")
    return out


@dataclass
class CitedClaim:
    """One claim of an answer (id ``<question_id>:c<n>``, citation unit ``unit`` from 1) with its bound
    citations (``refs``: origin "inline" / "run_log", marker text, reference), whether it needs a citation,
    and ``judged``: the cited chunk ids in the snapshot and retrieved in this run, in binding order."""

    system: str
    qid: str
    claim_id: str
    unit: int
    text: str
    needs: bool
    refs: list[tuple[str, str | None, Reference]]  # (origin, marker text, reference)
    judged: list[str] = field(default_factory=list)


@dataclass
class CitedAnswer:
    """One answered run: its question, its claims and one validity row per citation (``citations`` columns
    before judging; ``claim_id`` None for a citation bound to no claim)."""

    system: str
    qid: str
    question: str
    claims: list[CitedClaim]
    rows: list[dict[str, Any]]  # validity rows (claim_id may be None), without judge fields


def read_answers(rag_runs: pl.DataFrame, snapshot: pl.DataFrame, golden: pl.DataFrame, *,
                 formats: Mapping[str, CitationFormat] | None = None,
                 abstention_phrases: Mapping[str, Any] | None = None,
                 doc_id_systems: Collection[str] = ()) -> list[CitedAnswer]:
    """Every answered run's claims, their bound citations and the citations' validity (no judge).

    Inputs: ``rag_runs`` (system, question_id, retrieved, decision, answer, citations), ``snapshot``
    (corpus_snapshot), ``golden`` (question_id, question, user_groups), ``formats`` (system →
    CitationFormat; default every syntax), ``abstention_phrases``, ``doc_id_systems`` (systems whose ids
    are document ids: a retrieved document ranks each of its chunks at its rank). Output: one :class:`CitedAnswer` per
    answered run (runs with an :func:`answer_status` are left out), in ``rag_runs`` order. Rules: the module
    docstring (ALCE, Gao et al., EMNLP 2023, for binding citations to claims)."""
    from rag_eval_pipeline.core.judges.rule_based import checkable_claims, fixed_reason

    index = SnapshotIndex(snapshot)
    known_chunks = {cid: f.doc_id for cid, f in index.chunks.items()}  # chunk -> document: [doc_id] for any chunk ids
    known_docs = set(index.docs)
    documents = JudgingEvidence(snapshot, doc_id_systems)  # chunk id -> its document's chunks (doc-id systems)
    phrases = phrases_from_config(abstention_phrases)
    groups = {q: list(g or []) for q, g in golden.select("question_id", "user_groups").iter_rows()}
    questions = dict(golden.select("question_id", "question").iter_rows())
    out: list[CitedAnswer] = []
    for run in rag_runs.select("system", "question_id", "retrieved", "decision", "answer",
                               "citations").iter_rows(named=True):
        system, qid = run["system"], run["question_id"]
        if answer_status(run["decision"], run["answer"], phrases) is not None:
            continue
        hits = [h for h in (run["retrieved"] or []) if h is not None]
        hits = sorted(enumerate(hits), key=lambda ih: (ih[1]["rank"] is None, ih[1]["rank"], ih[0]))
        retrieved = [h["chunk_id"] for _, h in hits]
        ranks: dict[str, int] = {}
        for i, cid in enumerate(retrieved, start=1):  # a doc-id system's document: each of its chunks, at its rank
            for chunk in documents.chunk_ids(system, (cid,)):
                ranks.setdefault(chunk, i)
        log = [c for c in (run["citations"] or []) if c]
        fmt = (formats or {}).get(system, DEFAULT_FORMAT)
        parsed = parse_answer(run["answer"], fmt, retrieved=retrieved, citations=log,
                              known_chunks=known_chunks, known_docs=known_docs)
        inline = bool(parsed.markers)
        user_groups = groups.get(qid, [])
        claims: list[CitedClaim] = []
        rows: list[dict[str, Any]] = []
        bound_targets: set[str] = set()

        def row(claim_id: str | None, unit: int | None, origin: str, marker: str | None, ref: Reference,
                *, _ranks: dict = ranks, _groups: list = user_groups, _system: str = system,
                _qid: str = qid) -> dict[str, Any]:
            base = {"system": _system, "question_id": _qid, "claim_id": claim_id, "unit": unit, "origin": origin,
                    "marker": marker, "written": ref.written, "target": ref.target, "level": ref.level,
                    "problem": ref.problem}
            if ref.problem is not None:
                return {**base, "in_snapshot": None, "retrieved": None, "rank": None, "status": None,
                        "replaced_by": None, "readable": None, "valid": False, "failures": [ref.problem]}
            assert ref.target is not None  # a reference without a problem is resolved
            chk = check_citation(ref.target, ref.level, index, _ranks, _groups)
            return {**base, "in_snapshot": chk.in_snapshot, "retrieved": chk.retrieved, "rank": chk.rank,
                    "status": chk.status, "replaced_by": chk.replaced_by, "readable": chk.readable,
                    "valid": chk.valid, "failures": list(chk.failures)}

        n = 0
        for u in range(len(parsed.units)):
            if inline:
                refs: list[tuple[str, str | None, Reference]] = []
                seen: set[tuple[str, str | None]] = set()
                for m in parsed.markers:
                    if m.unit != u:
                        continue
                    for r in m.references:
                        key = (r.level, r.target)
                        if r.problem is None and key in seen:
                            continue
                        seen.add(key)
                        refs.append(("inline", m.text, r))
            else:
                refs = [("run_log", None, Reference(c, c)) for c in log]
            texts = checkable_claims(parsed.unit_text(u))
            if not texts and inline:  # a marker on a unit that states nothing ("Sí [1].")
                rows += [row(None, u + 1, o, mk, r) for o, mk, r in refs]
            for text in texts:
                n += 1
                c = CitedClaim(system, qid, f"{qid}:c{n}", u + 1, text, fixed_reason(text) is None, refs)
                for o, mk, r in refs:
                    rr = row(c.claim_id, u + 1, o, mk, r)
                    rows.append(rr)
                    if r.problem is None and r.target is not None:
                        bound_targets.add(r.target)
                        if rr["in_snapshot"] and rr["retrieved"] and r.level == "chunk" and r.target not in c.judged:
                            c.judged.append(r.target)
                claims.append(c)
        if not inline and not claims:  # logged citations of an answer that states nothing checkable
            rows += [row(None, None, "run_log", None, Reference(c, c)) for c in log]
        if inline:
            for m in parsed.markers:
                if m.unit < 0:
                    rows += [row(None, None, "inline", m.text, r) for r in m.references]
            rows += [row(None, None, "run_log", None, Reference(c, c)) for c in log if c not in bound_targets]
        out.append(CitedAnswer(system, qid, questions.get(qid, ""), claims, rows))
    return out
