"""Every metric the pipeline writes, declared once with its attributes, in a module that imports no
metric code.

Each metric is one :class:`MetricInfo` in :data:`METRICS`: its name, family, whether its value comes
from a judge (a gate on it makes the judge calibration check blocking), whether higher is better (the
default direction of a gate, the colour of a trend), whether it needs a relevant chunk to be evaluable,
whether it takes a cut-off ``k``, a one-line definition and its public source. Calibration's blocking
decision, the report's bands and judge-error columns, the command line's summary, gate defaults and
the docs test read these attributes; the metric modules take their name lists (:data:`DECISION_METRICS`,
...) from here, and the configuration checks gate names against :data:`PIPELINE_METRICS` and parses
readable retrieval names with :func:`parse_measure`, so it needs no metric module. Definitions,
denominators and null rules in full: ``docs/METRICS.md``.

Retrieval names are trec_eval's (``usnistgov/trec_eval``, ``m_*.c``); the cutoff is stored apart in
the ``k`` column (``recall`` with k = 5) and printed as trec_eval does (``recall_5``, :func:`metric_label`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict, Unpack

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.registry import Registry

FAMILIES = ("retrieval", "claim_evidence", "decision", "faithfulness", "citations", "completeness", "correctness",
            "quality", "latency")
#: The scale of a metric's values (per question and in aggregate). Only ``unit`` values are comparable with
#: one another by their differences: ``rag-eval compare`` orders questions by them alone.
SCALES: dict[str, str] = {
    "unit": "a share or score in [0, 1]",
    "score_1_5": "a judge's integer score from 1 to 5",
    "cosine": "a mean cosine similarity, in [-1, 1]",
    "count": "a count of chunks",
    "ms": "milliseconds",
}
TREC_EVAL = "trec_eval 10.0 (usnistgov/trec_eval)"


@dataclass(frozen=True)
class MetricInfo:
    """One metric. ``family``: one of :data:`FAMILIES`. ``judge_based``: its value comes from a judge's
    labels (a model, the rule-based judge or people); a gate on it needs a calibrated judge.
    ``higher_is_better``: False for error, abstention and latency measures. ``needs_relevant``: null
    (status ``no_relevant``) for a question without a relevant chunk. ``cut``: computed at every k of
    ``metrics.ks``. ``proportion``: a 0/1 value per question (Wilson interval in the summary).
    ``default``: computed by every run (False: only when asked for, e.g. by the trec_eval command).
    ``count``: a trec_eval count measure (summed, not averaged, in its ``all`` line).
    ``summary_only``: a ``metric_summary`` row computed from another metric (latency percentiles).
    ``scale``: one of :data:`SCALES` (``unit``: values in [0, 1], the default).
    ``definition``: one line; ``source``: the public source of the definition."""

    name: str
    family: str
    definition: str
    source: str
    judge_based: bool = False
    higher_is_better: bool = True
    needs_relevant: bool = False
    cut: bool = False
    proportion: bool = False
    default: bool = True
    count: bool = False
    summary_only: bool = False
    scale: str = "unit"


class MetricAttrs(TypedDict, total=False):
    """The optional attributes of :func:`metric`, as keywords (the fields of :class:`MetricInfo`)."""

    judge_based: bool
    higher_is_better: bool
    needs_relevant: bool
    cut: bool
    proportion: bool
    default: bool
    count: bool
    summary_only: bool
    scale: str


#: Every metric, in declaration order (retrieval measures in trec_eval's print order).
METRICS: Registry[MetricInfo] = Registry("metric")


def metric(name: str, family: str, definition: str, source: str, **attrs: Unpack[MetricAttrs]) -> MetricInfo:
    """Declare metric ``name`` (one call per metric, below). Raises RegistryError for a second declaration,
    ValueError for a family not in :data:`FAMILIES` or a scale not in :data:`SCALES`."""
    if family not in FAMILIES:
        raise ValueError(f"metric {name!r}: family {family!r} is not one of {FAMILIES}")
    if attrs.get("scale", "unit") not in SCALES:
        raise ValueError(f"metric {name!r}: scale {attrs['scale']!r} is not one of {tuple(SCALES)}")
    return METRICS.register(MetricInfo(name, family, definition, source, **attrs))


# ----------------------------------------------------------------------------- retrieval (trec_eval)

metric("num_ret", "retrieval", "chunks retrieved", f"{TREC_EVAL}, m_num_ret.c", count=True, scale="count")
metric("num_rel", "retrieval", "relevant chunks in the golden set", f"{TREC_EVAL}, m_num_rel.c", count=True,
       scale="count")
metric("num_rel_ret", "retrieval", "relevant chunks retrieved (whole list)", f"{TREC_EVAL}, m_num_rel_ret.c",
       count=True, scale="count")
metric("map", "retrieval", "mean average precision", f"{TREC_EVAL}, m_map.c",
       needs_relevant=True)
metric("Rprec", "retrieval", "relevant chunks in the top num_rel / num_rel", f"{TREC_EVAL}, m_Rprec.c",
       needs_relevant=True)
metric("bpref", "retrieval", "share of the top num_rel judged non-relevant chunks ranked below each relevant one",
       f"{TREC_EVAL}, m_bpref.c; Buckley & Voorhees, SIGIR 2004", needs_relevant=True, default=False)
metric("recip_rank", "retrieval", "1 / rank of the first relevant chunk", f"{TREC_EVAL}, m_recip_rank.c",
       needs_relevant=True)
metric("ndcg", "retrieval", "nDCG over the whole ranking", f"{TREC_EVAL}, m_ndcg.c", default=False)
metric("P", "retrieval", "share of the top k that is relevant", f"{TREC_EVAL}, m_P.c", cut=True)
metric("recall", "retrieval", "share of a question's relevant chunks found in the top k", f"{TREC_EVAL}, m_recall.c",
       cut=True, needs_relevant=True)
metric("ndcg_cut", "retrieval", "graded ranking quality of the top k", f"{TREC_EVAL}, m_ndcg_cut.c", cut=True)
metric("success", "retrieval", "1 when any relevant chunk is in the top k", f"{TREC_EVAL}, m_success.c",
       cut=True, needs_relevant=True, proportion=True)
metric("F1", "retrieval", "harmonic mean of P@k and recall@k", "van Rijsbergen's F at a cut-off (trec_eval set_F)",
       cut=True, needs_relevant=True)
metric("recip_rank_cut", "retrieval", "recip_rank counting only the top k", "ir_measures' RR@k", cut=True,
       needs_relevant=True, default=False)

CLAIM_METRIC = "claim_evidence_availability"
metric(CLAIM_METRIC, "claim_evidence", "share of golden claims with a supporting chunk in the top k",
       "recall@k taken per golden claim (this pipeline's definition)", cut=True)

# ----------------------------------------------------------------------------- decisions

_SQUAD2 = "SQuAD 2.0's answerable / unanswerable split (Rajpurkar et al., ACL 2018)"
metric("coverage", "decision", "answered share of the answerable and absent questions", _SQUAD2, proportion=True)
metric("answer_without_evidence_rate", "decision", "absent questions answered anyway", _SQUAD2, proportion=True,
       higher_is_better=False)
metric("false_abstention_rate", "decision", "answerable questions the system abstained on", _SQUAD2, proportion=True,
       higher_is_better=False)
metric("clarify_on_binary_rate", "decision", "binary-subset questions the system asked back on",
       "this pipeline's definition", proportion=True)
metric("evidence_retrieved", "decision", "answerable questions where any evidence chunk was retrieved, at any rank",
       "this pipeline's definition", proportion=True)
metric("abstention_with_evidence", "decision",
       "abstentions on answerable questions with the evidence in the context: a generator miss",
       "this pipeline's definition", proportion=True, higher_is_better=False)
metric("abstention_without_evidence", "decision",
       "abstentions on answerable questions without the evidence: a retrieval failure",
       "this pipeline's definition", proportion=True)
metric("clarify_asked_rate", "decision", "clarification questions the system asked back on",
       "this pipeline's definition", proportion=True)
metric("clarify_answered_rate", "decision", "clarification questions the system answered",
       "this pipeline's definition", proportion=True)
metric("clarify_abstained_rate", "decision", "clarification questions the system abstained on",
       "this pipeline's definition", proportion=True)
metric("run_error_rate", "decision", "questions whose run failed", "this pipeline's definition", proportion=True,
       higher_is_better=False)
metric("abstention_text_in_answer", "decision", "answers logged as answers whose text abstains",
       "this pipeline's definition", proportion=True)

# ----------------------------------------------------------------------------- judged claims and answers

_RAGAS = "Ragas (Es et al., EACL 2024 demo; arXiv:2309.15217)"
metric("faithfulness", "faithfulness", "SUPPORTED claims / judged claims, per answer, averaged",
       f"{_RAGAS} faithfulness", judge_based=True)
metric("faithfulness_holistic", "faithfulness", "whole-answer score YES 1 / PARTIAL 0.5 / NO 0, averaged",
       "this pipeline's reading of the claim verdicts", judge_based=True)
metric("contradicted_claim_rate", "faithfulness", "CONTRADICTED claims / judged claims",
       "this pipeline's definition", judge_based=True, higher_is_better=False)
metric("quote_downgrade_rate", "faithfulness", "SUPPORTED verdicts whose quote was not in the retrieved text",
       "this pipeline's definition", judge_based=True, higher_is_better=False)
metric("judge_error_rate", "faithfulness", "claim rows the judge failed on", "this pipeline's definition",
       judge_based=True, higher_is_better=False)

_SQUAD = "the official SQuAD evaluation script (Rajpurkar et al., EMNLP 2016)"
metric("answer_token_f1", "correctness", "F1 of the token overlap of answer and reference", f"{_SQUAD}, compute_f1")
metric("reference_token_recall", "correctness", "reference tokens found in the answer", f"{_SQUAD}, recall side")

_ARES = "ARES (Saad-Falcon et al., NAACL 2024; arXiv:2311.09476)"
metric("answer_relevance", "quality", "the judge's 1-5 score of how well the answer addresses the question",
       _ARES, judge_based=True, scale="score_1_5")
metric("answer_relevancy", "quality", "similarity of the question and questions generated from the answer",
       f"{_RAGAS} answer_relevancy", judge_based=True, scale="cosine")
metric("context_relevance", "quality", "share of the retrieved chunks needed to answer", f"{_RAGAS} and {_ARES}",
       judge_based=True)
metric("answer_correctness", "quality", "share of the reference answer's facts the answer covers",
       "this pipeline's judge rubric", judge_based=True)
metric("faithfulness_holistic_model", "quality", "the judge's own YES / PARTIAL / NO, scored 1 / 0.5 / 0",
       "holistic attribution label; this pipeline's scoring", judge_based=True)

# ----------------------------------------------------------------------------- citations and completeness

_ALCE = "ALCE (Gao, Yen, Yu & Chen, EMNLP 2023; arXiv:2305.14627)"
_TREC_SUPPORT = "TREC 2024 RAG support evaluation (Thakur et al., arXiv:2504.15205)"
_NUGGETS = "TREC 2024 RAG AutoNuggetizer (Pradeep et al., arXiv:2411.09607)"
_VALID = "this pipeline's definition: a citation must exist, have been retrieved, be current, be readable"
metric("citation_recall", "citations", "claims whose cited chunks jointly support them / claims that need a citation",
       f"{_ALCE} citation recall, per claim", judge_based=True)
metric("citation_precision", "citations", "citations that support their claim (not irrelevant) / citations",
       f"{_ALCE} citation precision", judge_based=True)
metric("uncited_claim_rate", "citations", "claims with no citation / claims that need a citation",
       "this pipeline's definition", higher_is_better=False)
metric("weighted_citation_precision", "citations",
       "mean support of (sentence, citation) pairs, full 1 / partial 0.5 / none 0", _TREC_SUPPORT, judge_based=True)
metric("weighted_citation_recall", "citations", "mean over sentences of the best support of their citations",
       _TREC_SUPPORT, judge_based=True)
metric("weighted_citation_f1", "citations", "harmonic mean of weighted citation precision and recall",
       _TREC_SUPPORT, judge_based=True)
metric("citation_validity_rate", "citations", "citations in the snapshot, retrieved, active and readable",
       _VALID)
metric("cited_not_in_snapshot_rate", "citations", "cited ids that are not in the snapshot", _VALID,
       higher_is_better=False)
metric("cited_not_retrieved_rate", "citations", "cited chunks the run did not retrieve", _VALID,
       higher_is_better=False)
metric("cited_inactive_rate", "citations", "cited chunks withdrawn or replaced", _VALID, higher_is_better=False)
metric("citation_acl_leak_rate", "citations", "cited chunks the asking user may not read (ACL leak)", _VALID,
       higher_is_better=False)
metric("unresolved_citation_rate", "citations", "unparseable or out-of-range marker references",
       "this pipeline's definition", higher_is_better=False)
metric("nugget_recall_strict_vital", "completeness", "vital nuggets the answer states / vital nuggets",
       f"{_NUGGETS}, V_strict", judge_based=True)
metric("nugget_recall_strict_all", "completeness", "nuggets the answer states / nuggets", f"{_NUGGETS}, A_strict",
       judge_based=True)
metric("nugget_recall_vital", "completeness", "vital nuggets stated, partial = 0.5, / vital nuggets",
       f"{_NUGGETS}, V", judge_based=True)
metric("nugget_recall_all", "completeness", "nuggets stated, partial = 0.5, / nuggets", f"{_NUGGETS}, A",
       judge_based=True)
metric("nugget_recall_weighted", "completeness", "nuggets stated weighted vital 1 / okay 0.5, partial = 0.5",
       f"{_NUGGETS}, W", judge_based=True)

# ----------------------------------------------------------------------------- latency

_HF7 = "percentile with linear interpolation (Hyndman & Fan 1996, definition 7)"
metric("latency_ms", "latency", "wall time of the call that produced the row, ms", "rag_runs.latency_ms",
       higher_is_better=False, scale="ms")
metric("latency_ms_p50", "latency", "median latency, ms", _HF7, higher_is_better=False, summary_only=True, scale="ms")
metric("latency_ms_p95", "latency", "95th percentile latency, ms", _HF7, higher_is_better=False, summary_only=True,
       scale="ms")


def _names(**where: object) -> tuple[str, ...]:
    return tuple(m.name for m in METRICS if all(getattr(m, k) == v for k, v in where.items()))


#: Measures without a cutoff, in trec_eval's print order (``ndcg`` is full-depth nDCG, ``m_ndcg.c``).
UNCUT_MEASURES = _names(family="retrieval", cut=False)
#: Measures computed at every k, in trec_eval's print order (F1 and recip_rank_cut are not trec_eval's).
CUT_MEASURES = _names(family="retrieval", cut=True)
MEASURES = UNCUT_MEASURES + CUT_MEASURES
#: What the pipeline computes (and ``measures=None`` means): every measure except the cut reciprocal
#: rank and full-depth nDCG, which are computed when asked for (the trec_eval command, a ``measures``
#: list).
DEFAULT_MEASURES = tuple(m for m in MEASURES if METRICS.get(m).default)
#: Measures that are null (status ``no_relevant``) for a question with num_rel == 0 (the nDCGs: with
#: no judged grade > 0).
NEEDS_RELEVANT = frozenset(_names(family="retrieval", needs_relevant=True))
#: Count measures: summed, not averaged, in trec_eval's ``all`` line.
COUNT_MEASURES = _names(count=True)
RANKING_MODES = ("system", "trec_eval")

#: Readable names (lower case, before an optional ``@k``) -> trec_eval base name. With a cutoff,
#: ``mrr@k`` (and ``rr@k``) mean ``recip_rank_cut`` and ``ndcg@k`` means ``ndcg_cut``; without one,
#: ``mrr`` is ``recip_rank`` and ``ndcg`` is trec_eval's full-depth ``ndcg``.
ALIASES: dict[str, str] = {
    "precision": "P",
    "p": "P",
    "recall": "recall",
    "r": "recall",
    "f1": "F1",
    "f": "F1",
    "hit": "success",
    "hits": "success",
    "hit_rate": "success",
    "hitrate": "success",
    "success": "success",
    "mrr": "recip_rank",
    "rr": "recip_rank",
    "recip_rank": "recip_rank",
    "ndcg": "ndcg",
    "ndcg_cut": "ndcg_cut",
    "map": "map",
    "ap": "map",
    "rprec": "Rprec",
    "r_precision": "Rprec",
    "r-precision": "Rprec",
    "num_ret": "num_ret",
    "num_rel": "num_rel",
    "num_rel_ret": "num_rel_ret",
}
#: An uncut base name that takes a cutoff under another name: ``mrr@10`` -> ``recip_rank_cut``.
_CUT_FORM = {"recip_rank": "recip_rank_cut", "ndcg": "ndcg_cut"}
_CUT_NAME = re.compile(r"^(?P<base>.+?)(?:[@_](?P<k>\d+))?$")

# ----------------------------------------------------------------------------- other families

#: Decision metrics (abstention, clarification, run errors; SQuAD 2.0's answerable / unanswerable split).
DECISION_METRICS: tuple[str, ...] = _names(family="decision")
#: Claim-level faithfulness (Ragas' ``faithfulness``) and the judge's error counts beside it.
FAITHFULNESS_METRICS = _names(family="faithfulness")
#: Token overlap with the reference answer (SQuAD's F1 and recall).
CORRECTNESS_METRICS = _names(family="correctness")
#: Model-judged answer quality (Ragas' answer relevancy, ARES' context relevance, correctness).
QUALITY_METRICS = _names(family="quality")
#: Citations (core/metrics/citations.py): ALCE citation recall and precision, uncited claims, the TREC 2024
#: RAG support view, and validity rates that need no judge.
CITATION_METRICS = _names(family="citations")
#: Citation metrics that need no judge (validity and binding).
CITATION_VALIDITY_METRICS = _names(family="citations", judge_based=False)
#: Completeness (core/metrics/nuggets.py): the TREC 2024 RAG AutoNuggetizer scores.
NUGGET_METRICS = _names(family="completeness")
#: The verdict family whose calibration a judge-based metric needs (faithfulness's for the others).
VERDICT_FAMILY_OF = {**{m: "citation_support" for m in _names(family="citations", judge_based=True)},
                     **{m: "nugget_coverage" for m in NUGGET_METRICS}}
#: Metrics whose values come from a judge: a gate on one makes the judge calibration check blocking.
JUDGE_BASED_METRICS: frozenset[str] = frozenset(_names(judge_based=True))
#: Metrics where lower is better (error and abstention rates, latency).
LOWER_IS_BETTER: frozenset[str] = frozenset(_names(higher_is_better=False))
#: Metrics with one 0/1 value per question (Wilson intervals in the summary).
PROPORTION_METRICS: frozenset[str] = frozenset(_names(proportion=True))

#: Every metric name the pipeline writes to ``question_metrics`` and a gate may name (base names; the
#: cutoff is ``k``). Latency is a measurement reported beside the metrics, not gated.
PIPELINE_METRICS: frozenset[str] = frozenset(m.name for m in METRICS
                                             if m.default and not m.summary_only and m.family != "latency")

#: The metrics a run is read by, in reading order, as ``(metric, k)`` (the preferred cut-off; the report
#: takes the nearest computed one): the report's summary table and ``rag-eval run``'s summary. A metric a
#: run did not compute is left out of both.
HEADLINE_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("P", 5), ("success", 5), ("ndcg_cut", 10), ("recip_rank", None), ("map", None),
    ("claim_evidence_availability", 5), ("evidence_retrieved", None), ("coverage", None),
    ("answer_without_evidence_rate", None), ("false_abstention_rate", None),
    ("abstention_with_evidence", None), ("abstention_without_evidence", None),
    ("faithfulness", None), ("faithfulness_holistic", None), ("contradicted_claim_rate", None),
    ("citation_recall", None), ("citation_precision", None), ("uncited_claim_rate", None),
    ("citation_validity_rate", None), ("citation_acl_leak_rate", None),
    ("nugget_recall_strict_vital", None), ("nugget_recall_weighted", None),
    ("judge_error_rate", None), ("run_error_rate", None), ("reference_token_recall", None),
    ("latency_ms_p50", None), ("latency_ms_p95", None),
)
#: The few of :data:`HEADLINE_METRICS` followed across runs and between two runs: the trend page and the
#: lines ``rag-eval compare`` prints (the page has every metric).
KEY_METRICS: tuple[tuple[str, int | None], ...] = (
    ("recall", 5), ("ndcg_cut", 10), ("claim_evidence_availability", 5), ("evidence_retrieved", None),
    ("coverage", None), ("false_abstention_rate", None), ("answer_without_evidence_rate", None),
    ("faithfulness", None), ("run_error_rate", None),
)

_LABEL = re.compile(r"^(?P<base>.+)_(?P<k>\d+)$")


def metric_label(metric: str, k: int | None) -> str:
    """The label of a ``(metric, k)`` row, as trec_eval prints it: ``("recall", 5)`` -> ``"recall_5"``,
    ``("map", None)`` -> ``"map"``. The one label formatter: tables, reports, the CLI and asset metadata
    call it. Raises nothing. Source: trec_eval's measure names (``m_*.c``)."""
    return metric if k is None else f"{metric}_{k}"


def metric_info(name: str) -> MetricInfo | None:
    """The declaration of metric ``name``, a base name (``recall``) or a label (``recall_5``); None for a
    name the pipeline does not write. Never raises."""
    if not isinstance(name, str):
        return None
    if name in METRICS:
        return METRICS.get(name)
    m = _LABEL.match(name)
    if m and m.group("base") in METRICS and METRICS.get(m.group("base")).cut:
        return METRICS.get(m.group("base"))
    return None


def is_judge_based(name: str) -> bool:
    """True when the values of metric ``name`` (base name or label) come from a judge. Never raises."""
    info = metric_info(name)
    return bool(info and info.judge_based)


def higher_is_better(name: str) -> bool:
    """The direction of metric ``name`` (base name or label): False for error, abstention and latency
    measures, True otherwise (and for an unknown name). Never raises."""
    info = metric_info(name)
    return True if info is None else info.higher_is_better


#: The trec_eval spelling of ``(metric, k)`` (``"P_5"``, ``"ndcg_cut_10"``, ``"map"``): :func:`metric_label`.
trec_name = metric_label


def level_label(metric: str, k: int | None, level: str | None = None) -> str:
    """A metric row's printed name: :func:`metric_label`, with `` (doc)`` for a document-level row
    (``("recall", 5, "doc")`` -> ``"recall_5 (doc)"``); chunk-level and level-less rows print bare.
    Input: base name, cut-off or None, the row's ``level`` (``chunk`` / ``doc`` / None). Never raises."""
    return metric_label(metric, k) + (" (doc)" if level == "doc" else "")


def parse_measure(name: str) -> tuple[str, int | None]:
    """Parse a measure name into ``(base measure, cutoff or None)``.

    Input: a trec_eval name (``"P_5"``, ``"ndcg_cut_10"``, ``"recip_rank"``, ``"map"``, ``"ndcg"`` =
    full depth), a base name (``"recall"`` -> ``("recall", None)``, meaning "at every k"), or a
    readable alias from :data:`ALIASES` with an optional ``@k`` or ``_k`` (``"recall@5"``,
    ``"hit@1"``, ``"mrr"``, ``"mrr@10"`` -> ``("recip_rank_cut", 10)``, ``"ndcg@10"`` ->
    ``("ndcg_cut", 10)``). Cutoffs are integers >= 1.
    Raises ConfigError for an unknown name, a cutoff below 1, or a cutoff on a measure that takes
    none (``map@5``). Source: trec_eval measure names; readable aliases as ir_measures and ranx
    spell them.
    """
    raw = name.strip()
    if raw in MEASURES:
        return raw, None
    m = _CUT_NAME.match(raw)
    if not m:
        raise ConfigError(f"unknown retrieval measure {name!r}")
    base_raw, k_raw = m.group("base"), m.group("k")
    if base_raw in MEASURES:
        base = base_raw
    else:
        base = ALIASES.get(base_raw.lower())
        if base is None:
            raise ConfigError(f"unknown retrieval measure {name!r}; known: {sorted(MEASURES)} "
                              f"and aliases {sorted(ALIASES)}")
    if k_raw is None:
        return base, None
    k = int(k_raw)
    if k < 1:
        raise ConfigError(f"measure {name!r}: cutoff must be >= 1, got {k}")
    base = _CUT_FORM.get(base, base)
    if base not in CUT_MEASURES:
        raise ConfigError(f"measure {name!r}: {base!r} takes no cutoff")
    return base, k


_GATE_CUT_SUFFIX = re.compile(r"^(.*[A-Za-z])[_@](\d+)$")


def gate_metric(name: str, k: int | None = None) -> tuple[str, int | None]:
    """The ``(metric, k)`` a gate's metric name means, as a configuration may write it: a base name
    (``recall``, with ``k`` apart), a trec_eval label (``recall_5``, ``ndcg_cut_10``) or a readable alias
    (``ndcg@10`` -> ``("ndcg_cut", 10)``, ``mrr`` -> ``("recip_rank", None)``). A ``k`` given apart wins
    over one in the name. A name that is none of these is returned unchanged (the configuration reports
    it). Never raises. Source: trec_eval's measure names; the aliases of :func:`parse_measure`."""
    metric = name
    cut = _GATE_CUT_SUFFIX.match(name)
    if cut and k is None:  # "recall_5" / "recall@5" -> metric "recall", k 5
        metric, k = cut.group(1), int(cut.group(2))
    if metric not in PIPELINE_METRICS:  # a readable alias: ndcg@10, mrr, hit@5, precision@5 ...
        try:
            base, cut_k = parse_measure(name)
        except ConfigError:
            return metric, k
        metric, k = base, (k if k is not None else cut_k)
    return metric, k


__all__ = [
    "ALIASES", "CITATION_METRICS", "CITATION_VALIDITY_METRICS", "CLAIM_METRIC", "CORRECTNESS_METRICS",
    "COUNT_MEASURES", "CUT_MEASURES", "DECISION_METRICS", "DEFAULT_MEASURES", "FAITHFULNESS_METRICS",
    "HEADLINE_METRICS", "JUDGE_BASED_METRICS", "KEY_METRICS", "LOWER_IS_BETTER", "MEASURES", "METRICS",
    "NEEDS_RELEVANT", "NUGGET_METRICS", "PIPELINE_METRICS", "PROPORTION_METRICS", "QUALITY_METRICS", "RANKING_MODES",
    "SCALES", "UNCUT_MEASURES", "VERDICT_FAMILY_OF", "MetricInfo", "gate_metric", "higher_is_better",
    "is_judge_based", "level_label", "metric", "metric_info", "metric_label", "parse_measure", "trec_name",
]
