"""Model-judged answer quality beside faithfulness: relevance, context relevance, correctness.

Ragas (Es et al., EACL 2024 demo) and ARES (Saad-Falcon et al., NAACL 2024) separate three generation
metrics (faithfulness, answer relevance, context relevance); only a comparison with a reviewed
reference answer catches omissions (Ragas' ``answer_correctness``); the holistic YES / PARTIAL / NO
label is kept as a second faithfulness reading. These need a model judge
(``core/judges/openai_compatible.py``): with a judge that lacks the methods (the rule-based baseline),
nothing is computed and the caller reports why.

Metrics (one row per answered question that had retrieved context, question_metrics shape):
``answer_relevance`` (1..5 judge score), ``answer_relevancy`` (Ragas' reverse-question method: mean
cosine similarity between the question and ``n`` questions generated from the answer, when an
embedder is given), ``context_relevance`` (share of retrieved chunks needed), ``answer_correctness``
(share of the reference answer's facts the answer covers), ``faithfulness_holistic_model``
(YES/PARTIAL/NO as 1/0.5/0). A failed judge call gives a null value with status ``judge_error``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

import numpy as np
import polars as pl

from rag_eval_pipeline.core.judges.base import HOLISTIC_SCORES, QualityJudge, ReverseQuestions, judge_concurrency
from rag_eval_pipeline.core.metrics.names import QUALITY_METRICS as QUALITY_METRICS  # re-exported
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
from rag_eval_pipeline.core.tables import SCHEMAS

QUALITY_METHODS = ("answer_relevance", "context_relevance", "correctness", "holistic")
_SCHEMA = SCHEMAS["answer_quality"]  # ``error``: the judge's failure reason (kept out of question_metrics)


def supports_quality(judge) -> bool:
    """True when ``judge`` is a :class:`~rag_eval_pipeline.core.judges.base.QualityJudge` (it has
    every method of ``QUALITY_METHODS``)."""
    return isinstance(judge, QualityJudge)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=-1, keepdims=True)
    b = b / np.linalg.norm(b, axis=-1, keepdims=True)
    return b @ a


def answer_quality_metrics(
    rag_runs: pl.DataFrame,
    golden: pl.DataFrame,
    snapshot: pl.DataFrame,
    judge,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    n_reverse_questions: int = 3,
    concurrency: int | None = None,
    doc_id_systems: Collection[str] = (),
) -> pl.DataFrame:
    """Judge answer relevance, context relevance, correctness and the holistic label of every answer.

    Inputs: rag_runs, golden_set and corpus_snapshot tables; a judge with ``QUALITY_METHODS`` (and
    ``reverse_questions`` when ``embed`` is given: ``embed(texts) -> (len(texts), d)`` array).
    Output: question_metrics rows without ``split``; only answered runs with retrieved context are
    judged (others get no row: their faithfulness status already says why). Judge calls run on
    ``concurrency`` threads (default ``judge.concurrency`` or 1); one failing call gives that one
    metric a null value with status ``judge_error`` and the reason in ``error`` ("<exception
    class>: <message>", at most 200 characters), and never stops the others. ``doc_id_systems``
    (systems whose ids are document ids, ``chunk_map: {doc_ids: true}``): each retrieved id of theirs
    is every chunk of its document, each a context of its own, in chunk order (as faithfulness reads
    it, :class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`); other systems' contexts
    are their retrieved chunks in rank order, unchanged.
    Raises TypeError when the judge lacks the methods (check :func:`supports_quality` first).
    """
    if not supports_quality(judge):
        raise TypeError(f"judge {getattr(judge, 'name', judge)!r} lacks {QUALITY_METHODS}")
    evidence = JudgingEvidence(snapshot, doc_id_systems)
    texts = evidence.texts
    info = golden.select("question_id", "question", "reference_answer")
    items = []
    for r in rag_runs.join(info, on="question_id", how="inner").iter_rows(named=True):
        hits = sorted((h for h in (r["retrieved"] or []) if h), key=lambda h: (h["rank"] is None, h["rank"]))
        ids = evidence.chunk_ids(r["system"], [h["chunk_id"] for h in hits])
        contexts = [texts[cid] for cid in ids if cid in texts]
        if r["decision"] == "answer" and (r["answer"] or "").strip() and contexts:
            items.append((r["system"], r["question_id"], r["question"], r["answer"], contexts, r["reference_answer"]))

    def one(item: Sequence) -> list[dict]:
        system, qid, question, answer, contexts, reference = item
        base = {"system": system, "question_id": qid, "k": None, "ranking_mode": None}
        out = []

        def record(metric: str, fn: Callable[[], tuple[float, float, float] | None]) -> None:
            try:
                got = fn()
            except Exception as exc:  # noqa: BLE001 - one failed call is one judge_error value
                out.append(base | {"metric": metric, "value": None, "numerator": None, "denominator": None,
                                   "status": "judge_error", "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
                return
            if got is None:
                out.append(base | {"metric": metric, "value": None, "numerator": None, "denominator": None,
                                   "status": "not_evaluable"})
            else:
                out.append(base | {"metric": metric, "value": got[0], "numerator": got[1], "denominator": got[2],
                                   "status": "ok"})

        def relevance():
            s = float(judge.answer_relevance(question, answer))
            return s, s, 1.0

        def context_rel():
            share = float(judge.context_relevance(question, contexts))
            return share, share * len(contexts), float(len(contexts))

        def correctness():
            if not (reference or "").strip():
                return None
            res = judge.correctness(answer, reference)
            if not res.get("n_facts"):
                return None
            covered = sum(f["status"] == "COVERED" for f in res["facts"])
            return covered / res["n_facts"], float(covered), float(res["n_facts"])

        def holistic():
            s = HOLISTIC_SCORES[judge.holistic(question, answer, contexts)]
            return s, s, 1.0

        def reverse(embed_texts: Callable[[list[str]], np.ndarray]) -> tuple[float, float, float]:
            generated = judge.reverse_questions(answer, n=n_reverse_questions)
            vecs = np.asarray(embed_texts([question, *generated]), dtype=float)
            sim = float(_cosine(vecs[0], vecs[1:]).mean())
            return sim, sim, 1.0

        record("answer_relevance", relevance)
        record("context_relevance", context_rel)
        record("answer_correctness", correctness)
        record("faithfulness_holistic_model", holistic)
        if embed is not None and isinstance(judge, ReverseQuestions):
            record("answer_relevancy", partial(reverse, embed))
        return out

    workers = int(concurrency or judge_concurrency(judge))
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        rows = [row for result in pool.map(one, items) for row in result]
    for row in rows:
        row.setdefault("error", None)
    return pl.DataFrame(rows, schema=_SCHEMA)
