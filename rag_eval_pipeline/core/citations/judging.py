"""Citation tables: every citation of every answer, its validity, and its support judged through the
judge's :class:`~rag_eval_pipeline.core.judges.base.JudgesSupport` capability.

Every answered run is read by :func:`~rag_eval_pipeline.core.citations.answers.read_answers` (its claims,
the citations bound to each, their validity); this module judges the claims' support and writes the rows.

**Support** (ALCE, Gao et al., EMNLP 2023; the TREC 2024 RAG support view, Thakur et al., arXiv
2504.15205). The passages shown to the judge are the claim's cited chunks that are in the snapshot
and were retrieved in this run (a citation the generator never saw is never support: ALCE scores a
citation outside the retrieved list 0); for a system whose ids are document ids (``chunk_map:
{doc_ids: true}``) a cited chunk stands for every chunk of its document, in chunk order
(:class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`). Per claim:

- *joint*: the claim against all those chunks together (ALCE citation recall);
- *alone*: with two or more, the claim against each chunk alone (the TREC support view, and ALCE
  precision's condition A);
- *leave-one-out*: where the joint verdict is SUPPORTED and a chunk alone is not, the claim against
  the others (ALCE precision's condition B: the chunk is *irrelevant* when the others support the
  claim without it).

A SUPPORTED or PARTIAL verdict needs its quote found by code
(:func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`) in a chunk of that request, i.e. a
**cited** chunk; otherwise it is stored as NOT_SUPPORTED with :data:`DOWNGRADE_PREFIX`. A judge
exception, an unknown verdict or a missing verdict is JUDGE_ERROR with the reason; other answers
are still judged.

**Precision flags** (``citations.precise``, ALCE): a citation of a claim whose joint verdict is not
SUPPORTED is not precise; with a SUPPORTED joint verdict and one judged chunk it is precise; with
several, it is precise unless it does not support the claim alone *and* the others support it
without it. A citation that could not be judged (not in the snapshot, not retrieved, a document
none of whose chunks was retrieved, an unresolved marker) is not precise. Null where a verdict it
depends on is JUDGE_ERROR. Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import polars as pl

from rag_eval_pipeline.core.citations.answers import CitedAnswer, CitedClaim, read_answers
from rag_eval_pipeline.core.citations.markers import CitationFormat
from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.judges.base import JudgesSupport, SupportRequest, SupportVerdict, judge_concurrency
from rag_eval_pipeline.core.judges.quotes import normalise_text
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
from rag_eval_pipeline.core.tables import SCHEMAS, SUPPORT_VERDICTS, conform

FAMILY = "citation_support"
#: Start of the justification of a SUPPORTED / PARTIAL verdict whose quote was not found in the passages.
DOWNGRADE_PREFIX = "[downgraded: quote not found in the passages judged] "
#: citation_claims.status values.
CLAIM_STATUSES = ("judged", "uncited", "no_judgeable_citation", "not_a_claim", "judge_error")


def judge_citations(
    rag_runs: pl.DataFrame,
    snapshot: pl.DataFrame,
    golden: pl.DataFrame,
    judge: Any,
    *,
    formats: Mapping[str, CitationFormat] | None = None,
    repeats: int = 1,
    abstention_phrases: Mapping[str, Any] | None = None,
    doc_id_systems: Collection[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Build the ``citation_claims`` and ``citations`` tables (rules in the module docstring).

    Inputs: ``rag_runs`` (system, question_id, retrieved, decision, answer, citations),
    ``corpus_snapshot`` (chunk_id, doc_id, chunk_index, text, status, replaced_by, acl),
    ``golden_set`` (question_id, question, user_groups: whose groups decide readability; a question
    outside it reads only chunks without ACL), a judge (with :class:`JudgesSupport` for support;
    without it every support verdict is JUDGE_ERROR and validity is still reported),
    ``formats`` (system → CitationFormat; default every syntax), ``repeats`` (>= 1),
    ``abstention_phrases`` (``judge.abstention_phrases``), ``doc_id_systems`` (systems whose ids are
    document ids: each judged citation is read as all its document's chunks,
    :class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`).
    Output: ``(citation_claims, citations)`` conforming to ``tables.SCHEMAS``; validity columns are
    the same in every repeat. Raises ValueError for repeats < 1, SchemaError for a missing column.
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    run_cols = ("system", "question_id", "retrieved", "decision", "answer", "citations")
    chunk_cols = ("chunk_id", "doc_id", "text", "status", "replaced_by", "acl")
    for df, name, cols in ((rag_runs, "rag_runs", run_cols), (snapshot, "corpus_snapshot", chunk_cols),
                           (golden, "golden_set", ("question_id", "question", "user_groups"))):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise SchemaError(f"table {name!r}: missing columns {missing}")
    answers = read_answers(rag_runs, snapshot, golden, formats=formats, abstention_phrases=abstention_phrases,
                           doc_id_systems=doc_id_systems)
    evidence = JudgingEvidence(snapshot, doc_id_systems)
    supports = isinstance(judge, JudgesSupport)
    claim_rows: list[dict[str, Any]] = []
    cite_rows: list[dict[str, Any]] = []
    for rep in range(repeats):
        verdicts = _judge_all(judge, answers, evidence, rep) if supports else {}
        for ans in answers:
            c_rows, r_rows = _rows_for_answer(ans, verdicts, supports, judge)
            claim_rows += [{**r, "repeat": rep} for r in c_rows]
            cite_rows += [{**r, "repeat": rep} for r in r_rows]
    ident = {"judge": getattr(judge, "name", None), "judge_model": getattr(judge, "model", None),
             "prompt_sha256": judge.support_prompt_sha256(FAMILY) if supports else None}
    claims = conform(pl.DataFrame([{**r, **ident} for r in claim_rows], schema=SCHEMAS["citation_claims"]),
                     "citation_claims")
    cites = conform(pl.DataFrame([{**r, **ident} for r in cite_rows], schema=SCHEMAS["citations"]), "citations")
    return claims, cites


# ------------------------------------------------------------------------------------------------ judging


def _key(ans: CitedAnswer, kind: str, passages: tuple[str, ...]) -> tuple:
    return (ans.system, ans.qid, kind, passages)


def _first_wave(answers: list[CitedAnswer], texts: JudgingEvidence, rep: int
                ) -> dict[tuple, tuple[SupportRequest, list[str]]]:
    """The joint requests (one per answer and distinct set of judged chunks, its claims batched) and,
    for sets of two or more chunks, the alone requests (one per answer and chunk)."""
    key = _key
    first: dict[tuple, tuple[SupportRequest, list[str]]] = {}
    for ans in answers:
        groups: dict[tuple[str, ...], list[CitedClaim]] = {}
        for c in ans.claims:
            if c.needs and c.judged:
                groups.setdefault(tuple(c.judged), []).append(c)
        for judged, claims in groups.items():
            first[key(ans, "joint", judged)] = _request(ans, claims, judged, texts, rep)
            if len(judged) > 1:
                for cid in judged:
                    k = key(ans, "alone", (cid,))
                    prev = first.get(k)
                    extra = [c for c in claims if prev is None or c.claim_id not in prev[1]]
                    first[k] = _request(ans, (_claims_of(prev, ans) if prev else []) + extra, (cid,), texts, rep)
    return first


def support_requests(rag_runs: pl.DataFrame, snapshot: pl.DataFrame, golden: pl.DataFrame, *,
                     formats: Mapping[str, CitationFormat] | None = None,
                     abstention_phrases: Mapping[str, Any] | None = None,
                     doc_id_systems: Collection[str] = ()) -> tuple[list[SupportRequest], int]:
    """What :func:`judge_citations` will ask a judge, without asking: the joint and alone requests of
    one repeat, and an upper bound on the leave-one-out requests (one per answer and chunk of a claim
    citing two or more judged chunks; only those whose joint verdict is SUPPORTED and whose chunk
    alone is not are asked). Inputs as :func:`judge_citations`. Output: (requests, extra_bound)."""
    answers = read_answers(rag_runs, snapshot, golden, formats=formats, abstention_phrases=abstention_phrases,
                           doc_id_systems=doc_id_systems)
    texts = JudgingEvidence(snapshot, doc_id_systems)
    bound = len({(a.system, a.qid, tuple(x for x in c.judged if x != cid))
                 for a in answers for c in a.claims if c.needs and len(c.judged) > 1 for cid in c.judged})
    return [req for req, _ in _first_wave(answers, texts, 0).values()], bound


def _judge_all(judge: Any, answers: list[CitedAnswer], texts: JudgingEvidence, rep: int
               ) -> dict[tuple, dict[str, tuple]]:
    """Run the joint, alone and leave-one-out requests of every answer. Output: request key →
    {claim_id: (verdict, quote, quote_found, quote_chunk_id, justification, error)}."""
    key = _key
    first = _first_wave(answers, texts, rep)
    results = _run(judge, first)
    second: dict[tuple, tuple[SupportRequest, list[str]]] = {}
    for ans in answers:
        for c in ans.claims:
            if not (c.needs and len(c.judged) > 1):
                continue
            joint = results.get(key(ans, "joint", tuple(c.judged)), {}).get(c.claim_id)
            if not joint or joint[0] != "SUPPORTED":
                continue
            for cid in c.judged:
                alone = results.get(key(ans, "alone", (cid,)), {}).get(c.claim_id)
                if alone and alone[0] not in ("SUPPORTED", "JUDGE_ERROR"):
                    rest = tuple(x for x in c.judged if x != cid)
                    k = key(ans, "without", rest)
                    prev = second.get(k)
                    claims = (_claims_of(prev, ans) if prev else [])
                    if all(x.claim_id != c.claim_id for x in claims):
                        claims.append(c)
                    second[k] = _request(ans, claims, rest, texts, rep)
    results.update(_run(judge, second))
    return results


def _claims_of(prev: tuple[SupportRequest, list[str]], ans: CitedAnswer) -> list[CitedClaim]:
    ids = set(prev[1])
    return [c for c in ans.claims if c.claim_id in ids]


def _request(ans: CitedAnswer, claims: list[CitedClaim], cited: tuple[str, ...], evidence: JudgingEvidence,
             rep: int) -> tuple[SupportRequest, list[str]]:
    # the passages of the cited chunks: a document-id system's citation is every chunk of its document
    passage_ids = tuple(evidence.chunk_ids(ans.system, cited))
    req = SupportRequest(FAMILY, tuple(c.text for c in claims),
                         tuple(evidence.texts.get(p, "") or "" for p in passage_ids),
                         tuple(c.claim_id for c in claims), passage_ids, ans.system, ans.qid, ans.question, rep)
    return req, [c.claim_id for c in claims]


def _run(judge: Any, requests: Mapping[tuple, tuple[SupportRequest, list[str]]]) -> dict[tuple, dict[str, tuple]]:
    """Every request through ``judge.judge_support`` (concurrently when the judge serves several
    calls at once); each result checked by :func:`checked_verdicts`."""
    keys = list(requests)

    def one(k: tuple) -> dict[str, tuple]:
        req, _ = requests[k]
        return checked_verdicts(req, call_support(judge, req))

    workers = judge_concurrency(judge)
    if workers > 1 and len(keys) > 1:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="support") as pool:
            return dict(zip(keys, pool.map(one, keys)))
    return {k: one(k) for k in keys}


def call_support(judge: Any, req: SupportRequest) -> list[SupportVerdict] | Exception:
    """``judge.judge_support(req)``, or the exception it raised (never raises)."""
    try:
        return judge.judge_support(req)
    except Exception as exc:  # noqa: BLE001 - one failing request must not stop the others
        return exc


def checked_verdicts(req: SupportRequest, result: list[SupportVerdict] | Exception,
                     verify: Callable[[str | None], str | None] | None = None) -> dict[str, tuple]:
    """item_id → (verdict, quote, quote_found, quote_passage_id, justification, error) for every item of
    ``req``: an exception, a malformed result, a missing or unknown verdict become JUDGE_ERROR with
    the reason; a SUPPORTED or PARTIAL verdict whose quote is not found (``verify(quote)`` → the id of
    the passage holding it, default: searched in ``req.passages`` after
    :func:`~rag_eval_pipeline.core.judges.quotes.normalise_text`) becomes NOT_SUPPORTED with
    :data:`DOWNGRADE_PREFIX`."""
    ids = list(req.item_ids) or [str(i) for i in range(1, len(req.items) + 1)]
    if verify is None:
        norm = [normalise_text(p) for p in req.passages]
        pids = list(req.passage_ids) or [str(i) for i in range(1, len(req.passages) + 1)]

        def verify(quote: str | None) -> str | None:
            q = normalise_text(quote)
            return next((pid for pid, t in zip(pids, norm) if q and q in t), None)

    if isinstance(result, Exception):
        reason = f"{type(result).__name__}: {result}"[:500]
        return {i: ("JUDGE_ERROR", None, False, None, "the judge raised", reason) for i in ids}
    if not isinstance(result, list) or not all(isinstance(v, SupportVerdict) for v in result):
        return {i: ("JUDGE_ERROR", None, False, None, "malformed result",
                    f"judge returned {type(result).__name__}, not a list of SupportVerdict") for i in ids}
    by_id = {v.item_id: v for v in result}
    if not set(ids) <= set(by_id) and len(result) == len(ids):
        by_id = dict(zip(ids, result))  # a judge that numbered the items itself
    out: dict[str, tuple] = {}
    for i in ids:
        v = by_id.get(i)
        if v is None:
            out[i] = ("JUDGE_ERROR", None, False, None, "no verdict", "the judge gave no verdict for this item")
            continue
        if v.verdict not in SUPPORT_VERDICTS:
            out[i] = ("JUDGE_ERROR", v.quote, False, None, v.justification or "", f"unknown verdict {v.verdict!r}")
            continue
        if v.verdict == "JUDGE_ERROR":
            out[i] = ("JUDGE_ERROR", None, False, None, v.justification or "", v.error or "judge error without reason")
            continue
        where = verify(v.quote) if v.quote else None
        verdict, just = v.verdict, v.justification or ""
        if verdict in ("SUPPORTED", "PARTIAL") and where is None:
            verdict, just = "NOT_SUPPORTED", DOWNGRADE_PREFIX + just
        out[i] = (verdict, v.quote, where is not None, where, just, None)
    return out


# ------------------------------------------------------------------------------------------------ rows


def _rows_for_answer(ans: CitedAnswer, verdicts: Mapping[tuple, Mapping[str, tuple]], supports: bool, judge: Any
                     ) -> tuple[list[dict], list[dict]]:
    no_cap = (f"judge {getattr(judge, 'name', judge)!r} cannot judge citation support "
              "(it does not implement JudgesSupport)")
    claim_rows: list[dict] = []
    joint_of: dict[str, tuple | None] = {}
    for c in ans.claims:
        base = {"system": ans.system, "question_id": ans.qid, "claim_id": c.claim_id, "unit": c.unit,
                "claim": c.text, "needs_citation": c.needs,
                "cited": [r.target for _, _, r in c.refs if r.problem is None],
                "judged": list(c.judged), "verdict": None, "quote": None, "quote_found": None,
                "quote_chunk_id": None, "justification": None, "error": None}
        if not c.needs:
            claim_rows.append({**base, "status": "not_a_claim"})
            continue
        if not c.refs:
            claim_rows.append({**base, "status": "uncited"})
            continue
        if not c.judged:
            why = "no cited chunk is in the snapshot and was retrieved in this run"
            joint_of[c.claim_id] = ("NOT_SUPPORTED", None, False, None, why, None)
            claim_rows.append({**base, "status": "no_judgeable_citation", "verdict": "NOT_SUPPORTED",
                               "quote_found": False, "justification": why})
            continue
        v = verdicts.get((ans.system, ans.qid, "joint", tuple(c.judged)), {}).get(c.claim_id) if supports else None
        if v is None:
            v = ("JUDGE_ERROR", None, False, None, "not judged", no_cap if not supports else "no verdict")
        joint_of[c.claim_id] = v
        claim_rows.append({**base, "status": "judge_error" if v[0] == "JUDGE_ERROR" else "judged", "verdict": v[0],
                           "quote": v[1], "quote_found": v[2], "quote_chunk_id": v[3], "justification": v[4],
                           "error": v[5]})
    by_claim = {c.claim_id: c for c in ans.claims}
    cite_rows = []
    for r in ans.rows:
        owner = by_claim.get(r["claim_id"]) if r["claim_id"] else None
        support = precise = error = None
        failures = list(r["failures"])
        if owner is not None and owner.needs and r["problem"] is None and r["target"] in owner.judged:
            if len(owner.judged) == 1:
                alone = joint_of.get(owner.claim_id)
            else:
                alone = verdicts.get((ans.system, ans.qid, "alone", (r["target"],)), {}).get(owner.claim_id) \
                    if supports else None
            if alone is None:
                alone = ("JUDGE_ERROR", None, False, None, "", no_cap if not supports else "no verdict")
            support, error = alone[0], alone[5]
            precise = _precise(owner, r["target"], joint_of.get(owner.claim_id), alone, ans, verdicts)
            if support == "NOT_SUPPORTED":
                failures.append("not_supporting")
        elif owner is not None and owner.needs:
            precise = False  # cited but never judgeable: a person cannot check it against what was retrieved
        cite_rows.append({**r, "support": support, "precise": precise, "failures": failures, "error": error})
    return claim_rows, cite_rows


def _precise(c: CitedClaim, target: str, joint: tuple | None, alone: tuple, ans: CitedAnswer,
             verdicts: Mapping[tuple, Mapping[str, tuple]]) -> bool | None:
    """ALCE's citation precision for one citation of one claim (module docstring)."""
    if joint is None or joint[0] == "JUDGE_ERROR":
        return None
    if joint[0] != "SUPPORTED":
        return False
    if len(c.judged) == 1 or alone[0] == "SUPPORTED":
        return True
    if alone[0] == "JUDGE_ERROR":
        return None
    rest = tuple(x for x in c.judged if x != target)
    without = verdicts.get((ans.system, ans.qid, "without", rest), {}).get(c.claim_id)
    if without is None or without[0] == "JUDGE_ERROR":
        return None
    return without[0] != "SUPPORTED"


def citation_detail(citation_claims: pl.DataFrame, citations: pl.DataFrame, repeat: int = 0) -> pl.DataFrame:
    """Which claim cites what, and why each citation failed, per answer: the per-question view of the
    two tables (report question pages, the labelling page).

    Input: the ``citation_claims`` and ``citations`` tables; ``repeat`` (which judge repeat to show).
    Output: one row per claim (and, per answer, one row holding the citations bound to no claim,
    ``claim_id`` null, status "unbound"), columns
    system, question_id, claim_id, unit, claim, status, verdict, and ``citations``: a list of
    {target, marker, support, failures} in binding order, where ``failures`` lists the validity
    failures (not_in_snapshot, not_retrieved, withdrawn, replaced, acl_restricted), an unresolved
    marker (unparseable, out_of_range) and ``not_supporting``. Only chunk ids appear, never chunk
    text (a restricted chunk's text is never shown). Sorted by system, question, claim order.
    """
    cite_struct = pl.Struct({"target": pl.Utf8, "marker": pl.Utf8, "support": pl.Utf8, "failures": pl.List(pl.Utf8)})
    c = citations.filter(pl.col("repeat") == repeat).with_row_index("_o")
    per_claim = (c.group_by("system", "question_id", "claim_id", maintain_order=True)
                 .agg(pl.struct(pl.coalesce("target", "written").alias("target"), "marker", "support", "failures")
                      .sort_by("_o").alias("citations"), pl.col("unit").first().alias("_unit")))
    claims = citation_claims.filter(pl.col("repeat") == repeat).select(
        "system", "question_id", "claim_id", "unit", "claim", "status", "verdict").with_row_index("_c")
    out = claims.join(per_claim.drop("_unit"), on=["system", "question_id", "claim_id"], how="left")
    unbound = per_claim.filter(pl.col("claim_id").is_null()).select(
        "system", "question_id", "claim_id", pl.col("_unit").alias("unit"), pl.lit(None, pl.Utf8).alias("claim"),
        pl.lit("unbound").alias("status"), pl.lit(None, pl.Utf8).alias("verdict"), "citations",
        pl.lit(10**9, pl.UInt32).alias("_c"))
    out = pl.concat([out.with_columns(pl.col("citations").cast(pl.List(cite_struct))),
                     unbound.with_columns(pl.col("citations").cast(pl.List(cite_struct)))], how="diagonal_relaxed")
    return (out.with_columns(pl.col("citations").fill_null(pl.lit([], pl.List(cite_struct))))
            .sort("system", "question_id", "_c").drop("_c"))
