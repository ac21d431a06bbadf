"""Per-question decision metrics: coverage, answering without evidence, false abstention,
retrieval failure versus abstention, clarifications and execution errors.

Definitions (the answerable / unanswerable split of SQuAD 2.0, Rajpurkar, Jia & Liang, ACL 2018; the
rates beyond it are this pipeline's, docs/METRICS.md):

- The *binary subset* is the answerable and absent questions; clarification questions are kept
  out of it and reported in their own table, and execution errors (``decision == "error"``) are
  counted apart and never enter a rate.
- ``coverage``: over the binary subset, 1 when the system answered, else 0.
- ``answer_without_evidence_rate``: over absent questions, 1 when the system answered.
- ``false_abstention_rate``: over answerable questions, 1 when the system abstained.
- Retrieval failure is not abstention: ``evidence_retrieved`` (answerable: 1 when any evidence
  chunk was retrieved) and, over the answerable questions the system abstained on,
  ``abstention_with_evidence`` (the evidence was in the context: a generator error) and
  ``abstention_without_evidence`` (it was not: a retrieval failure, where abstaining was the
  right call for the generator).

Decision ``clarify`` on a binary-subset question: it is *not answered* (0 in ``coverage`` and in
``answer_without_evidence_rate``) and *not an abstention* (0 in ``false_abstention_rate``): the
seed counts abstentions, and asking back is another behaviour. So that it is not hidden by either
rate, it has its own indicator ``clarify_on_binary_rate`` over the binary subset.

On clarification questions (answerability ``clarify``): ``clarify_asked_rate``,
``clarify_answered_rate`` and ``clarify_abstained_rate`` (each over the clarification questions
with a non-error run, so the three add up to 1). ``run_error_rate`` is over every golden question
with a run.

Abstention wording (``abstention_text_in_answer``): over the non-error runs whose logged decision
is ``answer``, 1 when the answer's text abstains ("No encuentro esa información", "I don't know";
:func:`~rag_eval_pipeline.core.judges.abstention.abstention_phrase`). Its numerator in the summary
is the number of re-classified answers: with ``text_abstention_is_abstention=True`` (the default)
those answers count as ``abstain`` in every other rate (they are not answers to judge, and an
"I don't know" to an absent question is the right behaviour, not an answer without evidence).

Every row is a 0/1 indicator: ``value`` in {0.0, 1.0}, ``numerator = value``,
``denominator = 1.0``; or null with ``status`` saying why (first reason that applies):
``not_in_denominator`` (the question is not of the rate's class), ``missing_run`` (the golden
question has no run for that system), ``run_error`` (decision ``error``), ``no_relevant``
(answerable question with no evidence chunk, for the evidence metrics). ``status == "ok"``
otherwise. Aggregation (sum of values / count of non-null) is done by ``summary.summarise``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import polars as pl

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.judges.abstention import abstention_phrase, phrases_from_config
from rag_eval_pipeline.core.metrics.names import DECISION_METRICS  # declared once, in the registry
from rag_eval_pipeline.core.plain_names import ANSWERABILITY, DECISIONS

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence

OUTPUT_COLUMNS = ("system", "question_id", "metric", "k", "value", "numerator", "denominator",
                  "status", "ranking_mode")


def evidence_chunks(golden: pl.DataFrame, snapshot: pl.DataFrame | None = None, *,
                    readable_only: bool = True) -> pl.DataFrame:
    """The evidence chunk ids of each golden question.

    Input: a ``golden_set`` frame (columns ``question_id``, ``relevant``, ``claims``,
    ``user_groups`` are read); optionally a ``corpus_snapshot`` frame (``chunk_id``, ``acl``).
    Output: one row per golden question: ``question_id`` (str), ``evidence`` (list[str], sorted,
    unique, possibly empty): the ``relevant`` chunks with grade > 0 (a null grade counts as
    relevant), the chunks that support a golden claim and, when ``snapshot`` is given, every chunk of
    the ``relevant_docs`` documents with grade > 0 (relevance judged per document: any of their chunks
    is evidence). When ``snapshot`` is given and ``readable_only`` (the default), chunks the
    question's ``user_groups`` cannot read (non-empty ``acl`` sharing no group) are dropped: evidence in
    the *authorised* corpus; ``readable_only=False`` keeps them (the corpus segments ask whether the
    evidence is restricted). Chunks absent from the snapshot are kept.
    Raises nothing beyond polars' own errors for a frame without those columns.
    """
    rel = (
        golden.select("question_id", pl.col("relevant"))
        .explode("relevant")
        .drop_nulls("relevant")
        .select(
            "question_id",
            pl.col("relevant").struct.field("chunk_id").alias("chunk_id"),
            pl.col("relevant").struct.field("grade").alias("grade"),
        )
        .filter(pl.col("grade").is_null() | (pl.col("grade") > 0))
        .select("question_id", "chunk_id")
    )
    claims = (
        golden.select("question_id", "claims")
        .explode("claims")
        .drop_nulls("claims")
        .select("question_id", pl.col("claims").struct.field("supporting").alias("chunk_id"))
        .explode("chunk_id")
    )
    parts = [rel, claims]
    if snapshot is not None and "relevant_docs" in golden.columns and "doc_id" in snapshot.columns:
        docs = (golden.select("question_id", "relevant_docs").explode("relevant_docs").drop_nulls("relevant_docs")
                .select("question_id", pl.col("relevant_docs").struct.field("doc_id").alias("doc_id"),
                        pl.col("relevant_docs").struct.field("grade").alias("grade"))
                .filter(pl.col("grade").is_null() | (pl.col("grade") > 0)))
        if docs.height:
            parts.append(docs.join(snapshot.select("doc_id", "chunk_id"), on="doc_id", how="inner")
                         .select("question_id", "chunk_id"))
    ev = pl.concat(parts).drop_nulls("chunk_id").unique()
    if snapshot is not None and readable_only:
        groups = golden.select("question_id", pl.col("user_groups").fill_null(pl.lit([], pl.List(pl.Utf8))))
        acl = snapshot.select("chunk_id", "acl").unique("chunk_id", keep="first")
        ev = (
            ev.join(groups, on="question_id", how="left")
            .join(acl, on="chunk_id", how="left")
            .filter(readable_expr())
            .select("question_id", "chunk_id")
        )
    lists = ev.group_by("question_id").agg(pl.col("chunk_id").unique().sort().alias("evidence"))
    return (
        golden.select("question_id")
        .join(lists, on="question_id", how="left")
        .with_columns(pl.col("evidence").fill_null(pl.lit([], pl.List(pl.Utf8))))
    )


def readable_expr() -> pl.Expr:
    """True where a chunk's ``acl`` (null or empty = everyone) shares a group with ``user_groups``."""
    acl = pl.col("acl")
    return (
        acl.is_null()
        | (acl.list.len() == 0)
        | (acl.list.set_intersection(pl.col("user_groups").fill_null(pl.lit([], pl.List(pl.Utf8)))).list.len() > 0)
    )


def unknown_run_questions(rag_runs: pl.DataFrame, golden: pl.DataFrame) -> pl.DataFrame:
    """Runs whose question is not in the golden set (they are left out of every decision metric).

    Input: ``rag_runs`` and ``golden_set`` frames. Output: columns ``system``, ``question_id``
    (str), sorted, one row per such run; empty when every run's question is golden.
    """
    return (
        rag_runs.select("system", "question_id")
        .join(golden.select("question_id"), on="question_id", how="anti")
        .unique()
        .sort("system", "question_id")
    )


def _validate(rag_runs: pl.DataFrame, golden: pl.DataFrame) -> None:
    bad_class = golden.filter(~pl.col("answerability").is_in(list(ANSWERABILITY)) | pl.col("answerability").is_null())
    if bad_class.height:
        row = bad_class.row(0, named=True)
        raise InputError(
            f"golden question {row['question_id']!r}: answerability {row['answerability']!r} not in {ANSWERABILITY}",
            field="answerability",
        )
    dup_golden = golden.group_by("question_id").len().filter(pl.col("len") > 1)
    if dup_golden.height:
        raise InputError(f"golden question {dup_golden['question_id'][0]!r} appears more than once",
                         field="question_id")
    bad_dec = rag_runs.filter(~pl.col("decision").is_in(list(DECISIONS)) | pl.col("decision").is_null())
    if bad_dec.height:
        row = bad_dec.row(0, named=True)
        raise InputError(
            f"run of system {row['system']!r} for question {row['question_id']!r}: decision "
            f"{row['decision']!r} not in {DECISIONS}",
            field="decision",
        )
    dup = rag_runs.group_by("system", "question_id").len().filter(pl.col("len") > 1)
    if dup.height:
        row = dup.row(0, named=True)
        raise InputError(
            f"system {row['system']!r} has {row['len']} runs for question {row['question_id']!r}; expected one",
            field="question_id",
        )


def _as_documents(base: pl.DataFrame, doc_evidence: JudgingEvidence) -> pl.DataFrame:
    """``base`` (one row per system x question, list columns ``retrieved_ids`` and ``evidence``) with both
    lists read as documents on the rows of document-id systems: each id replaced by its document's key
    (:meth:`JudgingEvidence.documents`), so that a retrieved document meets every evidence chunk it
    holds. An id outside the snapshot stands for itself. Rows of other systems are unchanged."""
    docs = doc_evidence.documents()

    def as_docs(col: str) -> pl.Expr:
        mapped = pl.col(col).list.eval(pl.element().replace_strict(
            docs["chunk_id"], docs["document"], default=pl.element(), return_dtype=pl.Utf8))
        return (pl.when(pl.col("system").is_in(list(doc_evidence.doc_id_systems)))
                .then(mapped).otherwise(pl.col(col)).alias(col))

    return base.with_columns(as_docs("retrieved_ids"), as_docs("evidence"))


def decision_question_metrics(rag_runs: pl.DataFrame, golden: pl.DataFrame,
                              snapshot: pl.DataFrame | None = None, *,
                              abstention_phrases: Mapping[str, Sequence[str]] | None = None,
                              text_abstention_is_abstention: bool = True,
                              doc_evidence: JudgingEvidence | None = None) -> pl.DataFrame:
    """Per-question 0/1 decision indicators for every system in ``rag_runs`` and every golden question.

    Input: ``rag_runs`` (``rag_runs`` schema; ``system``, ``question_id``, ``retrieved``,
    ``decision`` are read), ``golden`` (``golden_set`` schema), optional ``snapshot``
    (``corpus_snapshot``; when given, evidence the question's user cannot read does not count,
    see :func:`evidence_chunks`).
    Output: the ``question_metrics`` columns minus ``split``: ``system``, ``question_id``,
    ``metric`` (one of :data:`DECISION_METRICS`), ``k`` (null Int32), ``value`` (0.0, 1.0 or null),
    ``numerator`` (= value), ``denominator`` (1.0, or null with value), ``status``, ``ranking_mode``
    (null); one row per system x golden question x metric, sorted by system, question_id, metric.
    Runs whose question is not golden are left out (list them with :func:`unknown_run_questions`);
    a golden question without a run of a system gets ``status == "missing_run"``.
    ``abstention_phrases``: the configuration's ``judge.abstention_phrases`` (None = the default
    lists); ``text_abstention_is_abstention``: count abstaining answers as abstentions (module
    docstring). ``doc_evidence``: the snapshot's documents for the systems whose ids are document ids
    (``chunk_map: {doc_ids: true}``; :class:`~rag_eval_pipeline.core.systems.doc_evidence.JudgingEvidence`,
    the mapping judging reads): for those systems a retrieved document retrieves every chunk of it, so
    ``evidence_retrieved`` and abstention with/without evidence ask whether a document holding an
    evidence chunk was retrieved (None: every id is one chunk).
    Raises ConfigError for malformed phrase lists, InputError for an answerability outside
    ``tables.ANSWERABILITY``, a decision outside ``tables.DECISIONS``, a duplicated golden question or two
    runs of one system for one question.
    Source: module docstring (every definition); SQuAD 2.0 (Rajpurkar, Jia & Liang, ACL 2018).
    """
    _validate(rag_runs, golden)
    ev = evidence_chunks(golden, snapshot)
    questions = golden.select("question_id", "answerability").join(ev, on="question_id", how="left")
    systems = rag_runs.select("system").unique().sort("system")
    phrases = phrases_from_config(abstention_phrases)
    answers = rag_runs["answer"].to_list() if "answer" in rag_runs.columns else [None] * rag_runs.height
    text_abstains = [d == "answer" and abstention_phrase(a, phrases) is not None
                     for d, a in zip(rag_runs["decision"].to_list(), answers)]
    runs = rag_runs.with_columns(pl.Series("text_abstains", text_abstains, dtype=pl.Boolean))
    if text_abstention_is_abstention:
        runs = runs.with_columns(
            pl.when(pl.col("text_abstains")).then(pl.lit("abstain")).otherwise(pl.col("decision")).alias("decision"))
    runs = runs.select(
        "system",
        "question_id",
        "decision",
        "text_abstains",
        pl.col("retrieved").list.eval(pl.element().struct.field("chunk_id")).alias("retrieved_ids"),
        pl.lit(True).alias("has_run"),
    )
    base = (
        systems.join(questions, how="cross")
        .join(runs, on=["system", "question_id"], how="left")
        .with_columns(
            pl.col("has_run").fill_null(False),
            pl.col("text_abstains").fill_null(False),
            pl.col("retrieved_ids").fill_null(pl.lit([], pl.List(pl.Utf8))),
        )
    )
    if doc_evidence is not None and doc_evidence.doc_id_systems:
        base = _as_documents(base, doc_evidence)
    base = (
        base.with_columns(
            (pl.col("retrieved_ids").list.set_intersection(pl.col("evidence")).list.len() > 0).alias("hit"),
            (pl.col("evidence").list.len() == 0).alias("no_evidence"),
        )
    )
    cls = pl.col("answerability")
    dec = pl.col("decision")
    binary = cls.is_in(["answerable", "absent"])
    answerable = cls == "answerable"
    absent = cls == "absent"
    clarify_q = cls == "clarify"
    abstained = dec == "abstain"
    always = pl.lit(True)

    # metric -> (in class, extra null reasons [(condition, status)], indicator)
    specs: dict[str, tuple[pl.Expr, list[tuple[pl.Expr, str]], pl.Expr]] = {
        "coverage": (binary, [], dec == "answer"),
        "answer_without_evidence_rate": (absent, [], dec == "answer"),
        "false_abstention_rate": (answerable, [], abstained),
        "clarify_on_binary_rate": (binary, [], dec == "clarify"),
        "evidence_retrieved": (answerable, [(pl.col("no_evidence"), "no_relevant")], pl.col("hit")),
        "abstention_with_evidence": (
            answerable,
            [(~abstained, "not_in_denominator"), (pl.col("no_evidence"), "no_relevant")],
            pl.col("hit"),
        ),
        "abstention_without_evidence": (
            answerable,
            [(~abstained, "not_in_denominator"), (pl.col("no_evidence"), "no_relevant")],
            ~pl.col("hit"),
        ),
        "clarify_asked_rate": (clarify_q, [], dec == "clarify"),
        "clarify_answered_rate": (clarify_q, [], dec == "answer"),
        "clarify_abstained_rate": (clarify_q, [], abstained),
        "run_error_rate": (always, [], dec == "error"),
        "abstention_text_in_answer": (
            always, [(~(pl.col("text_abstains") | (dec == "answer")), "not_in_denominator")],
            pl.col("text_abstains"),
        ),
    }
    frames = []
    for metric in DECISION_METRICS:
        in_class, extra, indicator = specs[metric]
        status = (
            pl.when(~in_class).then(pl.lit("not_in_denominator"))
            .when(~pl.col("has_run")).then(pl.lit("missing_run"))
        )
        if metric != "run_error_rate":
            status = status.when(dec == "error").then(pl.lit("run_error"))
        for cond, why in extra:
            status = status.when(cond).then(pl.lit(why))
        status_expr = status.otherwise(pl.lit("ok"))
        ok = pl.col("status") == "ok"
        value = pl.when(ok).then(indicator.cast(pl.Float64)).otherwise(None)
        frames.append(
            base.with_columns(status_expr.alias("status"))
            .select(
                "system",
                "question_id",
                pl.lit(metric).alias("metric"),
                pl.lit(None, pl.Int32).alias("k"),
                value.alias("value"),
                value.alias("numerator"),
                pl.when(ok).then(pl.lit(1.0)).otherwise(None).alias("denominator"),
                "status",
                pl.lit(None, pl.Utf8).alias("ranking_mode"),
            )
        )
    if not frames or systems.height == 0:
        return pl.DataFrame(schema={
            "system": pl.Utf8, "question_id": pl.Utf8, "metric": pl.Utf8, "k": pl.Int32,
            "value": pl.Float64, "numerator": pl.Float64, "denominator": pl.Float64,
            "status": pl.Utf8, "ranking_mode": pl.Utf8,
        })
    return pl.concat(frames).sort("system", "question_id", "metric")
