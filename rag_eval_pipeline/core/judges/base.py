"""The judge interface: what every faithfulness judge (rule, model, person) returns.

A judge receives one question, one answer and the texts of the chunks retrieved for it (in rank
order) and returns an :class:`AnswerJudgement`: one :class:`ClaimVerdict` per claim of the answer,
each with a three-way verdict and the literal quote of the context it relies on (claim
decomposition as in Ragas' faithfulness, Es et al. 2024, and FActScore, Min et al., EMNLP 2023; three
verdicts as FEVER's SUPPORTS / REFUTES / NOT ENOUGH INFO, Thorne et al., NAACL 2018; a literal quote
required for SUPPORTED, as attribution to identified sources, Rashkin et al., Computational
Linguistics 2023), plus an optional whole-answer YES / PARTIAL / NO label.

The judge's own ``quote_found`` is advisory: :func:`rag_eval_pipeline.core.judging.judge_runs`
re-checks every quote against the retrieved text in code and downgrades an unverified SUPPORTED.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from rag_eval_pipeline.core.plain_names import SUPPORT_VERDICTS, VERDICT_FAMILIES, VERDICTS

#: Statuses a judge may return for an answer. ``judge_runs`` adds "clarify" and "run_error"
#: for runs it never sends to a judge.
JUDGEMENT_STATUSES = ("judged", "abstained", "no_claims", "no_retrieval", "judge_error")
#: The levels a judge is calibrated at against people (``calibration.level``): one label per claim, or one per
#: answer. Declared here, a leaf both the configuration and the calibration mapping import (no import circle).
CALIBRATION_LEVELS = ("claim", "response")

#: Whole-answer labels and their scores (this pipeline's scoring: YES = 1, PARTIAL = 0.5, NO = 0).
HOLISTIC_SCORES: dict[str, float] = {"YES": 1.0, "PARTIAL": 0.5, "NO": 0.0}
#: Support levels and their scores: full 1, partial 0.5, none 0 (TREC 2024 RAG support evaluation,
#: Thakur et al., arXiv 2504.15205; AutoNuggetizer's support / partial_support / not_support, Pradeep
#: et al., arXiv 2411.09607).
SUPPORT_SCORES: dict[str, float] = {"SUPPORTED": 1.0, "PARTIAL": 0.5, "NOT_SUPPORTED": 0.0}

__all__ = [
    "VERDICTS",
    "SUPPORT_VERDICTS",
    "SUPPORT_SCORES",
    "VERDICT_FAMILIES",
    "SupportRequest",
    "SupportVerdict",
    "JudgesSupport",
    "EstimatesSupportCost",
    "JUDGEMENT_STATUSES",
    "HOLISTIC_SCORES",
    "ClaimVerdict",
    "AnswerJudgement",
    "Judge",
    "BindsRuns",
    "ReportsStats",
    "Concurrent",
    "AcceptsRepeat",
    "EstimatesCost",
    "QualityJudge",
    "ReverseQuestions",
    "JudgesInBatches",
    "judge_concurrency",
    "judge_batch_size",
    "SizesBatches",
    "accepts_repeat",
    "judge_stats",
    "holistic_label",
]


@dataclass(frozen=True)
class ClaimVerdict:
    """One claim of one answer and the judge's verdict on it.

    Fields: ``claim_id`` (the judge's local id, e.g. "c1"; ``judge_runs`` renumbers it as
    "<question_id>:c<n>"), ``claim`` (text), ``verdict`` (one of ``VERDICTS``), ``quote`` (the
    passage of the retrieved context relied on, or None), ``quote_found`` (the judge's claim that
    the quote is literally in the context), ``justification`` (free text), ``error`` (reason,
    only when ``verdict == "JUDGE_ERROR"``), ``support_score`` (the judge's graded support of the
    claim in [0, 1], ordered like the verdicts: CONTRADICTED 0 < NOT_MENTIONED < 0.5 <= SUPPORTED;
    None when the judge gives none, e.g. a model or human judge).
    """

    claim_id: str
    claim: str
    verdict: str
    quote: str | None
    quote_found: bool
    justification: str
    error: str | None = None
    support_score: float | None = None


@dataclass(frozen=True)
class AnswerJudgement:
    """A judge's output for one answer.

    ``status`` is one of ``JUDGEMENT_STATUSES``; ``claims`` is empty unless the status is
    "judged" (or "judge_error" with per-claim JUDGE_ERROR verdicts); ``holistic`` is "YES",
    "PARTIAL", "NO" or None when the judge gives no whole-answer label.
    """

    status: str
    claims: list[ClaimVerdict] = field(default_factory=list)
    holistic: str | None = None


@runtime_checkable
class Judge(Protocol):
    """What the pipeline needs from a judge.

    Attributes: ``name`` (e.g. "rule_based"), ``model`` (pinned version),
    ``prompt_sha256`` (hex sha256 of the prompt or of the canonical parameter description, so that
    any change to what the judge does changes this value). Read-only: a plain attribute or a property.

    ``judge(question, answer, contexts)``: ``contexts`` are the retrieved chunk texts in rank
    order (non-empty when called by ``judge_runs``). Returns an :class:`AnswerJudgement`. May raise
    any exception; ``judge_runs`` records it as a JUDGE_ERROR for that answer and carries on.
    """

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def prompt_sha256(self) -> str: ...

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement: ...


# Optional capabilities. Each is a small runtime-checkable Protocol: a judge class has one when it
# defines the members, and callers ask ``isinstance(judge, Capability)``, never ``hasattr``. A new
# judge is one class that implements :class:`Judge` plus whichever of these it offers. mypy (``.ci/run``)
# checks every judge class against :class:`Judge` (each judge type's builder returns one); which
# capabilities a judge has is decided by ``isinstance`` at run time, and a test pins them per judge.


@runtime_checkable
class BindsRuns(Protocol):
    """Matches its labels to answers through the runs (human labels): ``bind_runs(rag_runs,
    questions=None)`` is called with the ``rag_runs`` frame (and question_id -> question text) before
    any ``judge`` call and returns the judge."""

    def bind_runs(self, rag_runs: Any, questions: Mapping[str, str] | None = None) -> Any: ...


@runtime_checkable
class ReportsStats(Protocol):
    """Counts what it spent: ``stats`` is a dict snapshot (``calls``, ``prompt_tokens``,
    ``completion_tokens``, ``seconds``, ...; numbers are recorded in the run metadata)."""

    @property
    def stats(self) -> Mapping[str, Any]: ...


@runtime_checkable
class Concurrent(Protocol):
    """Can serve ``concurrency`` (int >= 1) calls at once from several threads."""

    concurrency: int


@runtime_checkable
class SizesBatches(Protocol):
    """Says how many answers it judges best in one ``judge_batch`` call (``batch_size``, an int >= 1;
    see :class:`JudgesInBatches`)."""

    batch_size: int


@runtime_checkable
class AcceptsRepeat(Protocol):
    """``judge(question, answer, contexts, *, repeat=n)`` makes repeat n a fresh judgement (no cache
    read) when ``accepts_repeat`` is True, so repeats measure the judge's noise."""

    accepts_repeat: bool

    def judge(self, question: str, answer: str, contexts: list[str], *, repeat: int = 0) -> AnswerJudgement: ...


@runtime_checkable
class EstimatesCost(Protocol):
    """``dry_run_estimate(items)`` over ``(question, answer, contexts)`` tuples returns a dict with
    ``calls``, ``prompt_tokens_est``, ``cached_calls`` and ``items``, without calling anything."""

    def dry_run_estimate(self, items: Iterable[Sequence]) -> dict: ...


@dataclass(frozen=True)
class SupportRequest:
    """Items to judge against passages *alone*, for one verdict family.

    ``family``: one of ``VERDICT_FAMILIES`` — "citation_support" (items = claims of an answer,
    passages = the chunks they cite) or "nugget_coverage" (items = the golden set's reference claims,
    passages = the answer). ``items`` (non-empty strings) and their ``item_ids`` (same length; the
    stored claim or nugget ids); ``passages`` (texts) and their ``passage_ids`` (chunk ids, or
    ("answer",)); ``system``, ``question_id``, ``question`` (for judges that look labels up, and for
    the prompt); ``repeat`` (> 0: a fresh judgement, no cache read).
    """

    family: str
    items: tuple[str, ...]
    passages: tuple[str, ...]
    item_ids: tuple[str, ...] = ()
    passage_ids: tuple[str, ...] = ()
    system: str = ""
    question_id: str = ""
    question: str = ""
    repeat: int = 0


@dataclass(frozen=True)
class SupportVerdict:
    """A judge's verdict on one item of a :class:`SupportRequest`: ``item_id``, ``verdict`` (one of
    ``SUPPORT_VERDICTS``), ``quote`` (the passage text relied on, or None; the caller checks it in
    code and downgrades a SUPPORTED or PARTIAL whose quote is not found), ``justification``,
    ``error`` (only with JUDGE_ERROR)."""

    item_id: str
    verdict: str
    quote: str | None
    justification: str
    error: str | None = None


@runtime_checkable
class JudgesSupport(Protocol):
    """Judges items against given passages alone (citation support; nugget coverage):
    ``judge_support(request)`` returns one :class:`SupportVerdict` per item, in order (a judge that
    fails returns JUDGE_ERROR verdicts with the reason; it may also raise, and the caller records
    JUDGE_ERROR); ``support_prompt_sha256(family)`` is the hex sha256 pinning what the judge does for
    that family (prompt file, parameter file or label file), stored on every row."""

    def judge_support(self, request: SupportRequest) -> list[SupportVerdict]: ...

    def support_prompt_sha256(self, family: str) -> str: ...


@runtime_checkable
class EstimatesSupportCost(Protocol):
    """``dry_run_estimate_support(requests)`` over :class:`SupportRequest` objects returns a dict with
    ``calls``, ``prompt_tokens_est``, ``cached_calls``, ``items`` and ``by_family``, without calling anything."""

    def dry_run_estimate_support(self, requests: Iterable[SupportRequest]) -> dict: ...


@runtime_checkable
class QualityJudge(Protocol):
    """Judges answer quality beside faithfulness (``core/answer_quality.py``):
    ``answer_relevance`` (1..5), ``context_relevance`` (share of contexts needed, [0, 1]),
    ``correctness`` (dict with ``n_facts`` and ``facts`` of ``{"status": "COVERED" | ...}``),
    ``holistic`` ("YES" | "PARTIAL" | "NO")."""

    def answer_relevance(self, question: str, answer: str) -> int: ...

    def context_relevance(self, question: str, contexts: list[str]) -> float: ...

    def correctness(self, answer: str, reference: str) -> dict: ...

    def holistic(self, question: str, answer: str, contexts: list[str]) -> str: ...


@runtime_checkable
class JudgesInBatches(Protocol):
    """Judges many answers in one call, each exactly as ``judge`` would (shared work such as one
    encoder batch for every text, each encoded once): ``judge_batch(items)`` over ``(question,
    answer, contexts)`` tuples returns one AnswerJudgement per item, in order. ``judge_runs`` uses
    it when present (no repeats, no concurrency of the judge's own), in batches of the judge's
    ``batch_size`` when it is also :class:`SizesBatches` (else
    :data:`~rag_eval_pipeline.core.judging.BATCH_SIZE`)."""

    def judge_batch(self, items: Sequence[Sequence]) -> list[AnswerJudgement]: ...


@runtime_checkable
class ReverseQuestions(Protocol):
    """Generates ``n`` questions an answer would answer (Ragas' answer_relevancy)."""

    def reverse_questions(self, answer: str, n: int = 3) -> list[str]: ...


def judge_concurrency(judge: object) -> int:
    """Calls ``judge`` can serve at once: its ``concurrency`` when :class:`Concurrent` (>= 1), else 1."""
    if isinstance(judge, Concurrent):
        return max(1, int(judge.concurrency or 1))
    return 1


def judge_batch_size(judge: object, default: int) -> int:
    """Answers per ``judge_batch`` call for ``judge``: its ``batch_size`` when :class:`SizesBatches`
    and an int >= 1, else ``default``. Never raises."""
    if isinstance(judge, SizesBatches):
        size = judge.batch_size
        if isinstance(size, int) and not isinstance(size, bool) and size >= 1:
            return size
    return default


def accepts_repeat(judge: object) -> bool:
    """True when ``judge`` is :class:`AcceptsRepeat` and says so (its ``judge`` takes ``repeat=``)."""
    return isinstance(judge, AcceptsRepeat) and bool(judge.accepts_repeat)


def judge_stats(judge: object) -> dict[str, int | float]:
    """The numeric counters of a :class:`ReportsStats` judge (``{"calls": 0}`` for one that keeps none)."""
    if isinstance(judge, ReportsStats) and isinstance(judge.stats, Mapping):
        return {k: v for k, v in judge.stats.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return {"calls": 0}


def holistic_label(verdicts: list[str]) -> str | None:
    """Whole-answer label (YES / PARTIAL / NO) from claim verdicts; docs/METRICS.md, faithfulness_holistic.

    Input: verdicts of one answer (JUDGE_ERROR entries are ignored). Output: "YES" when every
    claim is SUPPORTED; "NO" when any is CONTRADICTED or none is SUPPORTED; "PARTIAL" otherwise;
    None when no verdict other than JUDGE_ERROR is given. Raises ValueError for a verdict not in
    ``VERDICTS``.
    """
    bad = [v for v in verdicts if v not in VERDICTS]
    if bad:
        raise ValueError(f"unknown verdict(s) {bad}; expected one of {VERDICTS}")
    vs = [v for v in verdicts if v != "JUDGE_ERROR"]
    if not vs:
        return None
    n_sup = sum(v == "SUPPORTED" for v in vs)
    if n_sup == len(vs):
        return "YES"
    if n_sup == 0 or any(v == "CONTRADICTED" for v in vs):
        return "NO"
    return "PARTIAL"
