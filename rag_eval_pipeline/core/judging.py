"""Run a faithfulness judge over the answers of ``rag_runs`` and build the judge tables.

Faithfulness is decided claim by claim (Ragas, Es et al. 2024), and a claim can only be SUPPORTED by a
literal quote of the retrieved context (ALCE, Gao et al., EMNLP 2023, checks citations the same way). That
rule is enforced here, in code, for every judge: a SUPPORTED verdict whose quote is not found in the retrieved
text (see
:func:`~rag_eval_pipeline.core.judges.quotes.quote_in_context`) is stored as NOT_MENTIONED with
``quote_found = False`` and a justification that starts with :data:`DOWNGRADE_PREFIX`.
Abstentions, clarifications and execution errors are recorded apart, never judged and never folded
into the faithfulness rate (docs/METRICS.md, decision metrics).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
from rag_eval_pipeline.core.judges.base import (
    JUDGEMENT_STATUSES,
    AnswerJudgement,
    Judge,
    JudgesInBatches,
    accepts_repeat,
    judge_batch_size,
    judge_concurrency,
)
from rag_eval_pipeline.core.judges.quotes import quote_in_context
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
from rag_eval_pipeline.core.tables import DECISIONS, SCHEMAS, VERDICTS, conform

#: Start of the justification of a SUPPORTED verdict downgraded because its quote was not found.
DOWNGRADE_PREFIX = "[downgraded from SUPPORTED: quote not found in the retrieved text] "

#: answer_judgements status of an answer whose text abstains although its decision is "answer".
ABSTENTION_TEXT = "abstention_text_in_answer"
#: answer_judgements statuses set without calling the judge, by run decision.
_DECISION_STATUS = {"abstain": "abstained", "clarify": "clarify", "error": "run_error"}

_RUN_COLUMNS = ("system", "question_id", "retrieved", "decision", "answer")


def judge_runs(
    rag_runs: pl.DataFrame,
    snapshot: pl.DataFrame,
    judge: Judge,
    repeats: int = 1,
    *,
    questions: Mapping[str, str] | pl.DataFrame | None = None,
    progress: Callable[[dict[str, Any]], None] | None = None,
    abstention_phrases: Mapping[str, Any] | None = None,
    citation_formats: Mapping[str, Any] | None = None,
    doc_id_systems: Collection[str] = (),
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Judge every answer of ``rag_runs`` ``repeats`` times.

    Inline citation markers (``[1]``, ``【2】``, ``[doc_id#n]``, ...) are stripped from each answer
    before it is judged, with its system's
    :class:`~rag_eval_pipeline.core.citations.markers.CitationFormat` from ``citation_formats``
    (system → format; default: every syntax), so that no claim carries a marker.

    Inputs: ``rag_runs`` (the rag_runs table; needs system, question_id, retrieved, decision,
    answer), ``snapshot`` (corpus_snapshot; needs chunk_id, text), a :class:`Judge`, ``repeats``
    (int >= 1; repeat numbers 0 .. repeats-1), optional ``questions`` (question_id → question
    text, as a mapping or a frame with those two columns; "" when absent), ``doc_id_systems``
    (systems whose ids are document ids, ``chunk_map: {doc_ids: true}``: each retrieved chunk, their
    document's first, is read as every chunk of its document in chunk order,
    :class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`; other systems unchanged).

    Per run and repeat, one ``answer_judgements`` row with status:
    "abstained" / "clarify" / "run_error" for decisions abstain / clarify / error,
    "abstention_text_in_answer" for an answer whose text abstains although its decision is
    ``answer`` (:func:`~rag_eval_pipeline.core.judges.abstention.abstention_phrase` with
    ``abstention_phrases``, the configuration's ``judge.abstention_phrases``; None = the default
    lists), "no_retrieval" for an answer with no retrieved chunk, "no_claims" for a null/blank
    answer — all without calling the judge, and without claim rows; otherwise the judge is called once with
    the retrieved texts in rank order, and the status is "judged", "no_claims" (judge found no
    claim), "no_retrieval" / "abstained" (as the judge says), or "judge_error". A judge exception
    (or a malformed result) gives status "judge_error" and one ``judge_labels`` row with
    claim_id "<question_id>:c0" (the answer as a whole), claim = the answer, verdict JUDGE_ERROR
    and the reason in ``error``; other answers are still judged. The reason is also stored in
    the answer's ``answer_judgements`` row (``error``; null unless the status is judge_error).
    ``n_claims`` counts claim rows (0 without claims, null when the judge failed before giving claims).

    ``judge_labels``: one row per claim, claim_id "<question_id>:c<n>" with n = 1, 2, ... in the
    judge's order; ``quote_found`` is recomputed here; an unverified SUPPORTED becomes NOT_MENTIONED
    (justification prefixed with :data:`DOWNGRADE_PREFIX`; count them with
    :func:`count_downgraded`); an unknown verdict becomes JUDGE_ERROR. An answer whose every claim
    is JUDGE_ERROR has status "judge_error".

    ``progress`` (optional): called with a dict (see :class:`JudgingProgress`: done, total, errors,
    calls, elapsed_s, calls_per_s, final) every ~10% of the items and at least every ~2 s, and once
    at the end; an item is one (run, repeat). An exception raised by the callback is swallowed
    and stops further progress calls, never the judging.

    Outputs: ``(judge_labels, answer_judgements)`` conforming to ``tables.SCHEMAS``.
    Raises: ValueError (repeats < 1), SchemaError (missing input columns), InputError (duplicate
    system/question_id, unknown decision, retrieved chunk id not in the snapshot).
    """
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
    _need_columns(rag_runs, "rag_runs", _RUN_COLUMNS)
    _need_columns(snapshot, "corpus_snapshot", ("chunk_id", "text"))
    if not isinstance(judge, Judge):
        raise TypeError(f"judge {judge!r} does not implement the Judge protocol (name, model, prompt_sha256, judge)")
    for attr, value in (("name", judge.name), ("model", judge.model), ("prompt_sha256", judge.prompt_sha256)):
        if not isinstance(value, str):
            raise TypeError(f"judge {judge!r} has no string attribute {attr!r}")
    evidence = JudgingEvidence(snapshot, doc_id_systems)
    strip = _marker_stripper(evidence.doc_of, citation_formats)
    qtext = _question_texts(questions)
    phrases = phrases_from_config(abstention_phrases)

    # First pass: validate every run and decide which answers need the judge at all.
    fixed_rows: list[dict[str, Any]] = []  # answers settled without a judge call
    # (system, qid, question, answer, contexts): the answer is non-blank text (else it is settled without a call)
    pending: list[tuple[str, str, str, str, list[str]]] = []
    seen: set[tuple[str, str]] = set()
    for row_no, run in enumerate(rag_runs.select(_RUN_COLUMNS).iter_rows(named=True), start=1):
        system, qid, decision = run["system"], run["question_id"], run["decision"]
        if (system, qid) in seen:
            raise InputError(f"duplicate run for system {system!r}, question {qid!r}",
                             path="rag_runs", line=row_no, field="question_id")
        seen.add((system, qid))
        if decision not in DECISIONS:
            raise InputError(f"decision {decision!r} is not one of {DECISIONS}",
                             path="rag_runs", line=row_no, field="decision")
        contexts = _contexts(run["retrieved"], evidence, system, qid, row_no)
        answer = strip(system, run["answer"])
        fixed = _DECISION_STATUS.get(decision)
        if fixed is None and abstention_phrase(answer, phrases):
            fixed = ABSTENTION_TEXT
        if fixed is None and not contexts:
            fixed = "no_retrieval"
        if fixed is None and not (answer and answer.strip()):
            fixed = "no_claims"
        if fixed is not None:
            fixed_rows.append({"system": system, "question_id": qid, "status": fixed, "n_claims": 0,
                               "error": None})
        else:
            pending.append((system, qid, qtext.get(qid, ""), answer or "", contexts))  # never blank here

    labels: list[dict[str, Any]] = []
    answers: list[dict[str, Any]] = []
    tracker = JudgingProgress(progress, total=rag_runs.height * repeats)
    concurrency = judge_concurrency(judge)
    for rep in range(repeats):
        for row in fixed_rows:
            answers.append({**row, "repeat": rep})
            tracker.step()
        # Repeats after the first must reach the judge again (no cache read) to measure its noise.
        kwargs = {"repeat": rep} if rep and accepts_repeat(judge) else {}
        results = _call_judge_by_question(judge, pending, concurrency, kwargs, on_result=tracker.judged)
        for (system, qid, _, answer, contexts), result in zip(pending, results):
            status, n_claims, rows = _rows_from_result(result, qid, answer, contexts)
            base = {"system": system, "question_id": qid, "repeat": rep}
            reason = next((r["error"] for r in rows if r["verdict"] == "JUDGE_ERROR"), None) \
                if status == "judge_error" else None
            answers.append({**base, "status": status, "n_claims": n_claims, "error": reason})
            labels.extend({**base, **r} for r in rows)

    tracker.errors = sum(a["status"] == "judge_error" for a in answers)  # exact count for the final report
    tracker.finish()
    # Read the judge's identity after judging: a model endpoint reports its exact version only then.
    ident = {"judge": judge.name, "judge_model": judge.model, "prompt_sha256": judge.prompt_sha256}
    labels = [{**r, **ident} for r in labels]
    answers = [{**r, **ident} for r in answers]
    judge_labels = conform(pl.DataFrame(labels, schema=SCHEMAS["judge_labels"]), "judge_labels")
    answer_judgements = conform(pl.DataFrame(answers, schema=SCHEMAS["answer_judgements"]),
                                "answer_judgements")
    return judge_labels, answer_judgements


def _marker_stripper(doc_of: Mapping[str, str], formats: Mapping[str, Any] | None
                     ) -> Callable[[str, str | None], str | None]:
    """``strip(system, answer)``: the answer without its inline citation markers (None stays None).
    ``doc_of``: the snapshot's chunk id -> document id (so that ``[doc_id]`` is a marker whatever the
    chunk ids look like, and an id shaped like the chunk ids is one even when invented)."""
    from rag_eval_pipeline.core.citations.markers import DEFAULT_FORMAT, strip_markers

    def strip(system: str, answer: str | None) -> str | None:
        if not answer or ("[" not in answer and "【" not in answer):
            return answer
        fmt = (formats or {}).get(system, DEFAULT_FORMAT)
        return strip_markers(answer, fmt, known_chunks=doc_of)

    return strip


def count_downgraded(judge_labels: pl.DataFrame) -> int:
    """Number of ``judge_labels`` rows whose SUPPORTED verdict was downgraded by
    :func:`judge_runs` because the quote was not in the retrieved text (justification starts with
    :data:`DOWNGRADE_PREFIX`). Input: a judge_labels frame. Output: int >= 0."""
    if judge_labels.height == 0:
        return 0
    return int(judge_labels["justification"].fill_null("").str.starts_with(DOWNGRADE_PREFIX).sum())


def _need_columns(df: pl.DataFrame, table: str, cols: tuple[str, ...]) -> None:
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise SchemaError(f"table {table!r}: missing columns {missing}")


def _question_texts(questions: Mapping[str, str] | pl.DataFrame | None) -> dict[str, str]:
    if questions is None:
        return {}
    if isinstance(questions, pl.DataFrame):
        _need_columns(questions, "questions", ("question_id", "question"))
        return dict(zip(questions["question_id"].to_list(), questions["question"].to_list()))
    return dict(questions)


def _contexts(retrieved, evidence: JudgingEvidence, system: str, qid: str, row_no: int) -> list[str]:
    """Texts of the retrieved chunks in rank order (ties keep the stored order); a document-id system's
    chunk is every chunk of its document (:class:`JudgingEvidence`)."""
    hits = [h for h in (retrieved or []) if h is not None]
    hits = sorted(enumerate(hits), key=lambda ih: (ih[1]["rank"] is None, ih[1]["rank"], ih[0]))
    texts = evidence.texts
    for _, h in hits:
        cid = h["chunk_id"]
        if cid not in texts:
            raise InputError(
                f"system {system!r}, question {qid!r}: retrieved chunk {cid!r} is not in the "
                "corpus snapshot", path="rag_runs", line=row_no, field="retrieved")
    return [texts[cid] or "" for cid in evidence.chunk_ids(system, [h["chunk_id"] for _, h in hits])]


def _error_row(qid: str, answer: str, reason: str) -> dict[str, Any]:
    return {"claim_id": f"{qid}:c0", "claim": answer, "verdict": "JUDGE_ERROR", "quote": None,
            "quote_found": False, "justification": "the judge gave no verdicts for this answer",
            "error": reason}


def _call_judge(judge: Judge, pending: list, concurrency: int, kwargs: dict,
                on_result: Callable[[bool], None] | None = None) -> list:
    """Judge every pending answer, in order; an exception becomes that item's result, never a raise.

    ``on_result(is_error)`` is called after each item as it finishes (progress while the calls run).
    """
    if isinstance(judge, JudgesInBatches) and not kwargs and len(pending) > 1:
        return _call_in_batches(judge, pending, on_result)
    if concurrency > 1 and len(pending) > 1:
        from rag_eval_pipeline.core.judges.many import judge_many

        seen_errors = [0]

        def each(p: dict) -> None:
            if on_result is not None:
                on_result(p["errors"] > seen_errors[0])
                seen_errors[0] = p["errors"]

        return judge_many(judge, [(q, a, c) for _, _, q, a, c in pending], concurrency=concurrency,
                          repeat=kwargs.get("repeat", 0), progress=each)
    out: list[AnswerJudgement | Exception] = []
    for _, _, question, answer, contexts in pending:
        try:
            out.append(judge.judge(question, answer, contexts, **kwargs))
        except Exception as exc:  # noqa: BLE001 - one failing answer must not stop the others
            out.append(exc)
        if on_result is not None:
            last = out[-1]
            on_result(isinstance(last, Exception) or getattr(last, "status", None) == "judge_error")
    return out


#: Answers per ``judge_batch`` call unless the judge sets its own ``batch_size``: large enough to
#: share the encoder's work, small enough that progress is reported often and one failing batch is
#: retried item by item quickly.
BATCH_SIZE = 64
#: A judge with a larger ``batch_size`` gets batches sized by its measured speed: about this many
#: seconds each (so that progress is reported that often), at least :data:`MIN_ADAPTIVE_BATCH`
#: answers (so that each batch still shares the encoder's fixed cost per call) and at most its
#: ``batch_size``; the first batch is :data:`MIN_ADAPTIVE_BATCH` answers, and a remainder smaller
#: than that joins the batch before it.
BATCH_TARGET_S = 5.0
MIN_ADAPTIVE_BATCH = 16


def next_batch_size(done: int, seconds: float, cap: int) -> int:
    """The size of the next batch of an adaptive judge that judged ``done`` answers in ``seconds``:
    ``BATCH_TARGET_S / (seconds / done)`` rounded down, within [``MIN_ADAPTIVE_BATCH``, ``cap``]
    (``cap`` alone when nothing was timed). Inputs: ``done`` >= 0, ``seconds`` >= 0, ``cap`` >= 1.
    Output: an int in [min(``MIN_ADAPTIVE_BATCH``, ``cap``), ``cap``]. Never raises."""
    if done <= 0 or seconds <= 0:
        return cap
    return max(min(MIN_ADAPTIVE_BATCH, cap), min(cap, int(BATCH_TARGET_S * done / seconds)))


def _call_in_batches(judge, pending: list, on_result: Callable[[bool], None] | None) -> list:
    """Judge ``pending`` through ``judge.judge_batch`` in batches: :data:`BATCH_SIZE` answers each,
    or, for a judge whose own ``batch_size`` is larger
    (:func:`~rag_eval_pipeline.core.judges.base.judge_batch_size`), :data:`MIN_ADAPTIVE_BATCH` first
    and then :func:`next_batch_size` of the last batch's speed (about :data:`BATCH_TARGET_S` seconds
    per batch, so progress is reported that often). A batch that raises is judged again item by
    item, so an exception stays that item's result. Verdicts do not depend on the batches (a
    ``judge_batch`` judges each item as ``judge`` would)."""
    out: list = []
    cap = judge_batch_size(judge, BATCH_SIZE)
    adaptive = cap > BATCH_SIZE
    size = MIN_ADAPTIVE_BATCH if adaptive else cap
    start = 0
    while start < len(pending):
        if adaptive and len(pending) - start - size < MIN_ADAPTIVE_BATCH:
            size = len(pending) - start  # a small remainder joins this batch
        chunk = pending[start:start + size]
        start += len(chunk)
        t0 = time.monotonic()
        items = [(q, a, c) for _, _, q, a, c in chunk]
        try:
            results = list(judge.judge_batch(items))
            if len(results) != len(items):
                raise ValueError(f"judge_batch returned {len(results)} results for {len(items)} items")
        except Exception:  # noqa: BLE001 - find the failing item(s): each is judged on its own
            results = []
            for item in items:
                try:
                    results.append(judge.judge(*item))
                except Exception as exc:  # noqa: BLE001 - one failing answer must not stop the others
                    results.append(exc)
        if adaptive:
            size = next_batch_size(len(chunk), time.monotonic() - t0, cap)
        for r in results:
            out.append(r)
            if on_result is not None:
                on_result(isinstance(r, Exception) or getattr(r, "status", None) == "judge_error")
    return out


def _call_judge_by_question(judge: Judge, pending: list, concurrency: int, kwargs: dict,
                            on_result: Callable[[bool], None] | None = None) -> list:
    """:func:`_call_judge` with the systems' answers to one question judged one after the other (rag_runs is
    in system order), so the judge's per-text caches reuse one question's retrieved passages across systems;
    the results come back in ``pending``'s order.

    Two systems that gave the same answer on the same passages (common among retriever variants) are judged
    once and share the result: judged side by side they would otherwise both miss the judge's cache and
    both be paid for. Repeats (``kwargs`` set) are left alone: each answer reaches the judge to measure its
    noise."""
    order = sorted(range(len(pending)), key=lambda i: pending[i][1])  # stable: system order within a question
    first: dict[tuple, int] = {}
    todo: list[int] = []
    same_as: dict[int, int] = {}
    for i in order:
        _, _, question, answer, contexts = pending[i]
        key = (question, answer, tuple(contexts))
        if kwargs or key not in first:
            first.setdefault(key, i)
            todo.append(i)
        else:
            same_as[i] = first[key]
    results = _call_judge(judge, [pending[i] for i in todo], concurrency, kwargs, on_result=on_result)
    out: list = [None] * len(pending)
    for i, result in zip(todo, results):
        out[i] = result
    for i, j in same_as.items():
        out[i] = out[j]
        if on_result is not None:
            on_result(isinstance(out[j], Exception) or getattr(out[j], "status", None) == "judge_error")
    return out


def _rows_from_result(result, qid: str, answer: str, contexts: list[str]):
    """Turn one judge result into (status, n_claims, label rows without the shared columns)."""
    if isinstance(result, Exception):
        return "judge_error", None, [_error_row(qid, answer, f"{type(result).__name__}: {result}")]
    if (isinstance(result, AnswerJudgement) and result.status == "judge_error" and len(result.claims or []) == 1
            and result.claims[0].claim_id == "c0"):
        return "judge_error", None, [_error_row(qid, answer, result.claims[0].error or "judge error")]
    if not isinstance(result, AnswerJudgement):
        return "judge_error", None, [_error_row(
            qid, answer, f"judge returned {type(result).__name__}, not AnswerJudgement")]
    if result.status not in JUDGEMENT_STATUSES:
        return "judge_error", None, [_error_row(
            qid, answer, f"judge returned unknown status {result.status!r}")]
    claims = list(result.claims or [])
    if not claims:
        if result.status == "judge_error":
            return "judge_error", None, [_error_row(
                qid, answer, "judge reported judge_error without claim verdicts")]
        if result.status == "judged":
            return "no_claims", 0, []
        return result.status, 0, []

    rows = []
    for n, cv in enumerate(claims, start=1):
        verdict, error = cv.verdict, cv.error
        justification = cv.justification or ""
        found = quote_in_context(cv.quote, contexts)
        if verdict not in VERDICTS:
            verdict, error = "JUDGE_ERROR", f"unknown verdict {cv.verdict!r}"
        elif verdict == "JUDGE_ERROR" and not error:
            error = "judge gave JUDGE_ERROR without a reason"
        elif verdict == "SUPPORTED" and not found:
            verdict = "NOT_MENTIONED"
            justification = DOWNGRADE_PREFIX + justification
        if verdict != "JUDGE_ERROR":
            error = None
        rows.append({"claim_id": f"{qid}:c{n}", "claim": cv.claim, "verdict": verdict,
                     "quote": cv.quote, "quote_found": found, "justification": justification,
                     "error": error, "support_score": _support_score(cv, verdict)})
    status = "judge_error" if all(r["verdict"] == "JUDGE_ERROR" for r in rows) else "judged"
    return status, len(rows), rows


def _support_score(cv, verdict: str) -> float | None:
    """The claim's ``support_score`` as stored: the judge's (``ClaimVerdict.support_score``, a number
    in [0, 1]) or null when it gives none, on JUDGE_ERROR, or when it is not a finite number in
    range; a SUPPORTED verdict downgraded for its quote keeps at most 0.5, the top of NOT_MENTIONED."""
    score = getattr(cv, "support_score", None)
    if verdict == "JUDGE_ERROR" or isinstance(score, bool) or not isinstance(score, (int, float)):
        return None
    score = float(score)
    if not 0.0 <= score <= 1.0:  # also NaN
        return None
    return min(score, 0.5) if verdict == "NOT_MENTIONED" else score


class JudgingProgress:
    """Progress of a long judging loop, reported to a callback (the run prints where it is).

    ``callback`` gets a dict: ``done`` and ``total`` items (one item = one run and repeat), ``errors``
    (items whose status is judge_error), ``calls`` (judge calls made; abstentions and the like need
    none), ``elapsed_s``, ``calls_per_s`` (calls / elapsed seconds, 0.0 at first) and ``final``
    (True on the last call). It is called when ``done`` reaches a multiple of ``every`` (default: a
    tenth of ``total``, at least 1), when ``interval_s`` seconds have passed since the previous call,
    and by :meth:`finish`. A callback that raises is not called again; the error is swallowed so that
    progress reporting never stops the judging. ``callback`` None makes every method a no-op.
    """

    def __init__(self, callback: Callable[[dict[str, Any]], None] | None, total: int, every: int | None = None,
                 interval_s: float = 2.0, clock: Callable[[], float] = time.monotonic):
        self.callback, self.total, self.clock, self.interval_s = callback, total, clock, interval_s
        self.every = every if every is not None else max(1, -(-total // 10))
        self.done = self.errors = self.calls = 0
        self.start = self.last = clock()

    def snapshot(self, final: bool = False) -> dict[str, Any]:
        """The current counts as the dict the callback receives."""
        elapsed = max(self.clock() - self.start, 0.0)
        return {"done": self.done, "total": self.total, "errors": self.errors, "calls": self.calls,
                "elapsed_s": round(elapsed, 3), "calls_per_s": round(self.calls / elapsed, 3) if elapsed > 0 else 0.0,
                "final": final}

    def _emit(self, final: bool = False) -> None:
        if self.callback is None:
            return
        self.last = self.clock()
        try:
            self.callback(self.snapshot(final))
        except Exception:  # noqa: BLE001 - progress must never stop the judging
            self.callback = None

    def step(self, called: bool = False, error: bool = False) -> None:
        """Count one finished item; report when due."""
        self.done += 1
        self.calls += int(called)
        self.errors += int(error)
        if self.callback is not None and (self.done % self.every == 0 or self.clock() - self.last >= self.interval_s):
            self._emit(final=self.done >= self.total)
            if self.done >= self.total:
                self.callback = None  # the final report was just made

    def judged(self, error: bool = False) -> None:
        """Count one answer the judge has just finished (``error``: it ended as judge_error); report when due."""
        self.step(called=True, error=error)

    def finish(self) -> None:
        """Report the final counts (once)."""
        self._emit(final=True)
        self.callback = None
