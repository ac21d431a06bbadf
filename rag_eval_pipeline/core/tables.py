"""Every table's schema, declared once: an Arrow schema with a description per column and a version.

One :func:`~rag_eval_pipeline.core.table_schema.declare` call per table (name, schema version, what
one row is, which versions its rows depend on, and its columns with type, nullability and a one-line
description: units, range, what null means). Each asset that writes a table calls :func:`conform`
before the write, so a column that is missing, extra, of the wrong type, or null where it is declared
not null stops the write with a message naming the table and the column; the written Parquet file
carries the Arrow schema, the descriptions and the table's provenance (``core/table_files.py``).

Changing a table: add or change its ``column(...)`` lines, bump its ``version`` and follow the message
of the version test (``core/table_schema.py``: changelog row, ``--record``). :data:`SCHEMAS` (polars
schemas) is derived from the declarations. Nothing here imports Dagster.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.plain_names import (  # noqa: F401 - re-exported: the tables' categorical values
    ANSWERABILITY,
    CHUNK_STATUS,
    DECISIONS,
    LEVELS,
    NUGGET_IMPORTANCE,
    SPLITS,
    SUPPORT_VERDICTS,
    VERDICT_FAMILIES,
    VERDICTS,
)
from rag_eval_pipeline.core.table_schema import (
    BOOL,
    DATE,
    FLOAT64,
    INT32,
    INT64,
    STRING,
    TABLES,
    UTC_MICROSECONDS,
    TableSpec,
    column,
    conform,
    declare,
    list_of,
    migration,
    polars_type,
    spec_of,
    struct,
)

RETRIEVED_HIT_ARROW = struct(chunk_id=STRING, score=FLOAT64, rank=INT32)
RELEVANT_ID_ARROW = struct(chunk_id=STRING, grade=INT32)
RELEVANT_DOC_ARROW = struct(doc_id=STRING, grade=INT32)
# importance: "vital" / "okay" (NUGGET_IMPORTANCE; null = vital), the claim's weight as a nugget
GOLDEN_CLAIM_ARROW = struct(claim_id=STRING, text=STRING, supporting=list_of(STRING), importance=STRING)
#: The same types as polars reads them (derived: declared once, in Arrow).
RETRIEVED_HIT = polars_type(RETRIEVED_HIT_ARROW)
RELEVANT_ID = polars_type(RELEVANT_ID_ARROW)
RELEVANT_DOC = polars_type(RELEVANT_DOC_ARROW)
GOLDEN_CLAIM = polars_type(GOLDEN_CLAIM_ARROW)

# the values of the categorical columns: declared in core.plain_names, which the code location imports

JUDGED = ("corpus", "golden", "judge")
_SYSTEM = column("system", STRING, "the system under test, as named in the configuration", nullable=False)
_QUESTION = column("question_id", STRING, "the golden question's id", nullable=False)
_JUDGE = [
    column("judge", STRING, "the judge's name (rule_based, openai_compatible, human, python)"),
    column("judge_model", STRING, "the judge's model or rule-set version"),
    column("prompt_sha256", STRING, "hex sha256 of the judge's prompt (or parameter description); with judge "
           "and judge_model the judge key"),
]
_METRIC = column("metric", STRING, "trec_eval or pipeline metric name, without the cut-off (its definition: "
                 "this file's rag_eval.metrics metadata, docs/METRICS.md)", nullable=False)
_K = column("k", INT32, "cut-off (top k retrieved chunks); null for a metric without one")
_LEVEL = column("level", STRING, "retrieval rows and claim evidence: chunk (relevance judged per chunk) or doc (per "
                "document, from the ranked chunks); null for a metric without a level")


def _value_columns(null_rule: str) -> list:
    return [
        column("value", FLOAT64, f"the metric's value (a rate in [0, 1] unless its definition says otherwise); "
               f"null = not evaluable ({null_rule}), never 0"),
        column("numerator", FLOAT64, "what the value counts (value = numerator / denominator for a ratio of counts)"),
        column("denominator", FLOAT64, "what the value is counted over; 0 when not evaluable"),
    ]


declare("corpus_snapshot", 1, "one chunk of one document version", depends_on=("corpus",), columns=[
    column("chunk_id", STRING, "doc_id#n, n counted from 0 within the document (corpus.source chunks: the team's "
           "own id, kept); stable for the same input", nullable=False),
    column("doc_id", STRING, "the document's id (Unicode NFC)", nullable=False),
    column("chunk_index", INT32, "n of chunk_id: position of the chunk in its document, from 0", nullable=False),
    column("text", STRING, "the chunk's text", nullable=False),
    column("title", STRING, "the document's title; null when it has none"),
    column("source", STRING, "file path or dataset name the document came from"),
    column("doc_type", STRING, "the document's type tag (a segment of the report); null when untagged"),
    column("language", STRING, "the document's language tag; null when untagged"),
    column("status", STRING, "active, withdrawn or replaced", nullable=False),
    column("replaced_by", STRING, "doc_id of the newer document; null unless status is replaced"),
    column("acl", list_of(STRING), "groups allowed to read the chunk; empty list = everyone"),
    column("valid_from", DATE, "first day the document is valid; null = always was"),
    column("valid_to", DATE, "last day the document is valid; null = still valid"),
    column("sha256", STRING, "hex sha256 of the chunk text", nullable=False),
])

declare("golden_set", 3, "one golden question", columns=[
    column("question_id", STRING, "the question's id, unique in the golden set", nullable=False),
    column("golden_version", STRING, "content hash of the whole golden set", nullable=False),
    column("question", STRING, "the question as a user asks it", nullable=False),
    column("answerability", STRING, "answerable, absent (the corpus does not hold the answer) or clarify",
           nullable=False),
    column("relevant", list_of(RELEVANT_ID_ARROW), "relevant chunk ids with graded relevance (grade >= 1); "
           "empty for a question without evidence"),
    column("relevant_docs", list_of(RELEVANT_DOC_ARROW), "relevance judged per document: doc ids with graded "
           "relevance; empty when the question judges chunks only"),
    column("reference_answer", STRING, "the reviewed reference answer; null when there is none"),
    column("claims", list_of(GOLDEN_CLAIM_ARROW), "person-reviewed claims (nuggets) with their supporting "
           "chunk ids and importance (vital: a good answer must state it; okay: worthwhile; null = vital)"),
    column("split", STRING, "dev (tuning) or test (held out for accepting changes)", nullable=False),
    column("segments", list_of(STRING), "key=value tags the summary is segmented by"),
    column("user_groups", list_of(STRING), "groups of the asking user (chunk acl); empty = no restriction"),
])

declare("rag_runs", 1, "one golden question answered by one system configuration", columns=[
    _SYSTEM, _QUESTION,
    column("retrieved", list_of(RETRIEVED_HIT_ARROW), "ranked retrieved chunks (chunk_id, score, rank from 1); "
           "empty when nothing was retrieved"),
    column("decision", STRING, "answer, abstain, clarify or error", nullable=False),
    column("answer", STRING, "the answer text; null when the system gave none"),
    column("citations", list_of(STRING), "chunk ids the answer cites"),
    column("error", STRING, "why decision is error; null otherwise"),
    column("corpus_version", STRING, "corpus version the system ran against"),
    column("golden_version", STRING, "golden set version the run answered"),
    column("retriever", STRING, "JSON of the retriever configuration; null when unknown"),
    column("generator", STRING, "the generator and its settings; null when unknown"),
    column("model", STRING, "the generator's model; null when unknown"),
    column("prompt_version", STRING, "the generator's prompt version; null when unknown"),
    column("latency_ms", FLOAT64, "wall time of the system call (http, python) or root span (traces), "
           "milliseconds; null if unmeasured"),
    column("system_version", STRING, "the reply's version header (http version_header); null otherwise"),
    column("trace_id", STRING, "traces: the trace this row came from (hex); null otherwise"),
    column("decision_rule", STRING, "which rule set the decision (traces, mapped replies); null = the system said"),
])

declare("judge_labels", 2, "one claim of one answer, judged once", depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("claim_id", STRING, "the claim's id within the answer", nullable=False),
    column("claim", STRING, "the claim's text"),
    column("verdict", STRING, "SUPPORTED, CONTRADICTED, NOT_MENTIONED, or JUDGE_ERROR (counted apart)",
           nullable=False),
    column("quote", STRING, "the judge's supporting quote; null when it gave none"),
    column("quote_found", BOOL, "true when the quote is literally in the retrieved text (checked by code)"),
    column("justification", STRING, "the judge's reason"),
    *_JUDGE,
    column("repeat", INT32, "repeat number of the judgement, from 0", nullable=False),
    column("error", STRING, "the judge's failure reason when verdict is JUDGE_ERROR; null otherwise"),
    column("support_score", FLOAT64, "graded support in [0, 1]: CONTRADICTED 0, NOT_MENTIONED in [0, 0.5], "
           "SUPPORTED in [0.5, 1] (the embedded judge's); null when the judge gives none or on JUDGE_ERROR"),
])

_FAMILY_JUDGE = [
    column("judge", STRING, "the judge's name (rule_based, openai_compatible, human, python)"),
    column("judge_model", STRING, "the judge's model or rule-set version"),
    column("prompt_sha256", STRING, "hex sha256 pinning what the judge does for this verdict family (its prompt "
           "file, rule and parameters, or label file)"),
    column("repeat", INT32, "repeat number of the judgement, from 0", nullable=False),
]

declare("citation_claims", 1, "one claim of one answer, with its citations judged together against it",
        depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("claim_id", STRING, "<question_id>:c<n>, n in answer order", nullable=False),
    column("unit", INT32, "the citation unit (sentence, list item or ';'-clause, from 1) the claim is in; the "
           "unit's markers are its citations", nullable=False),
    column("claim", STRING, "the claim's text (citation markers stripped)"),
    column("needs_citation", BOOL, "false for a question or a first-person claim, which cite nothing",
           nullable=False),
    column("cited", list_of(STRING), "chunk (or document) ids bound to the claim, in order"),
    column("judged", list_of(STRING), "the cited chunks shown to the judge: in the snapshot and retrieved"),
    column("status", STRING, "judged, uncited, no_judgeable_citation, not_a_claim or judge_error",
           nullable=False),
    column("verdict", STRING, "SUPPORTED, PARTIAL, NOT_SUPPORTED (the cited chunks together) or JUDGE_ERROR; "
           "null when uncited or not a claim"),
    column("quote", STRING, "the judge's quote"),
    column("quote_found", BOOL, "true when the quote is literally in a cited (judged) chunk, checked by code"),
    column("quote_chunk_id", STRING, "the cited chunk the quote was found in"),
    column("justification", STRING, "the judge's reason"),
    *_FAMILY_JUDGE,
    column("error", STRING, "the judge's failure reason when verdict is JUDGE_ERROR; null otherwise"),
])

declare("citations", 1, "one citation of one claim (or of the answer: claim_id null), its validity and its "
        "support alone", depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("claim_id", STRING, "the citing claim; null for a citation bound to no claim"),
    column("unit", INT32, "the citation unit the marker ends; null for a logged citation bound to no claim"),
    column("origin", STRING, "inline (a marker in the answer) or run_log (the answer-level citations list)",
           nullable=False),
    column("marker", STRING, "the inline marker as written ([1], [a#0], ...); null for run_log"),
    column("written", STRING, "the reference as written inside the marker, or the logged id", nullable=False),
    column("target", STRING, "the cited chunk id (a document id when level is document); null when the marker "
           "could not be resolved"),
    column("level", STRING, "chunk or document", nullable=False),
    column("problem", STRING, "unparseable or out_of_range when the reference could not be resolved; else null"),
    column("in_snapshot", BOOL, "the cited id exists in the snapshot; null when unresolved"),
    column("retrieved", BOOL, "the cited chunk was retrieved in this run; null when unresolved"),
    column("rank", INT32, "its rank in the run's retrieved list; null when not retrieved"),
    column("status", STRING, "active, withdrawn or replaced; null when not in the snapshot"),
    column("replaced_by", STRING, "the replacement document when status is replaced"),
    column("readable", BOOL, "the question's user_groups may read it (false: an ACL leak); null when unknown"),
    column("valid", BOOL, "in the snapshot, retrieved, active and readable", nullable=False),
    column("support", STRING, "SUPPORTED, PARTIAL, NOT_SUPPORTED or JUDGE_ERROR of this chunk alone for the claim; "
           "null when not judged"),
    column("precise", BOOL, "ALCE citation precision: this citation is not irrelevant to its claim; null when a "
           "verdict it needs is a judge error or it is bound to no claim"),
    column("failures", list_of(STRING), "why it fails: not_in_snapshot, not_retrieved, withdrawn, replaced, "
           "acl_restricted, unparseable, out_of_range, not_supporting"),
    *_FAMILY_JUDGE,
    column("error", STRING, "the judge's failure reason when support is JUDGE_ERROR; null otherwise"),
])

declare("nugget_labels", 1, "one reference claim (nugget) of one golden question, judged against one answer",
        depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("nugget_id", STRING, "the golden claim_id", nullable=False),
    column("nugget", STRING, "the golden claim's text"),
    column("importance", STRING, "vital or okay"),
    column("verdict", STRING, "SUPPORTED, PARTIAL or NOT_SUPPORTED (is the nugget in the answer?) or JUDGE_ERROR",
           nullable=False),
    column("quote", STRING, "the words of the answer the judge relied on"),
    column("quote_found", BOOL, "true when the quote is in the answer (markers stripped), checked by code"),
    column("justification", STRING, "the judge's reason"),
    *_FAMILY_JUDGE,
    column("error", STRING, "the judge's failure reason when verdict is JUDGE_ERROR; null otherwise"),
])

declare("answer_judgements", 1, "one answer of one system, judged as a whole: why it has (or lacks) claim labels",
        depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("status", STRING, "judged, abstained, abstention_text_in_answer, clarify, no_claims, no_retrieval, "
           "run_error or judge_error", nullable=False),
    column("n_claims", INT32, "claims split from the answer; null when it was not judged"),
    *_JUDGE,
    column("repeat", INT32, "repeat number of the judgement, from 0", nullable=False),
    column("error", STRING, "the judge's failure reason when status is judge_error; null otherwise"),
])

declare("question_metrics", 2, "one metric of one question for one system", depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION,
    column("split", STRING, "the question's split: dev or test"),
    _METRIC, _K,
    *_value_columns("status says why"),
    column("status", STRING, "ok, or why value is null (no_relevant, not_answerable, run_error, ...)",
           nullable=False),
    column("ranking_mode", STRING, "retrieval rows: system (the system's ranks) or trec_eval (by score); "
           "null for other metrics"),
    _LEVEL,
])

declare("metric_summary", 2, "one metric for one system, split, segment, k and level", depends_on=JUDGED,
        columns=[
    _SYSTEM,
    column("split", STRING, "all, dev or test", nullable=False),
    column("segment", STRING, "all, or a key=value segment of the questions", nullable=False),
    _METRIC, _K,
    *_value_columns("no question of the segment is evaluable: denominator 0"),
    column("n", INT64, "questions in the segment", nullable=False),
    column("n_not_evaluable", INT64, "questions left out because their value is null"),
    column("ci_low", FLOAT64, "lower bound of the 95% interval of value; null when there is none"),
    column("ci_high", FLOAT64, "upper bound of the 95% interval of value; null when there is none"),
    column("ci_method", STRING, "wilson (proportions), bootstrap (means) or none"),
    column("judge_errors", INT64, "judge failures left out of a judge-based metric; 0 elsewhere"),
    column("ranking_mode", STRING, "retrieval rows: system or trec_eval; null for other metrics"),
    column("small_segment", BOOL, "true when the segment has fewer than metrics.small_segment_n questions"),
    _LEVEL,
])

declare("gate_results", 3, "one gated metric of one candidate system against the promoted baseline",
        depends_on=JUDGED, columns=[
    _SYSTEM,
    column("metric", STRING, "the gated metric (or versions, for a version mismatch row)", nullable=False),
    _K,
    column("candidate", FLOAT64, "the candidate's mean over the n questions both systems evaluated (the gate's "
           "figure); null when nothing was compared"),
    column("baseline", FLOAT64, "the baseline's mean over the same n questions; null when nothing was compared"),
    column("difference", FLOAT64, "candidate - baseline over the n shared questions: the paired mean difference "
           "the thresholds, the interval and p are about"),
    column("ci_low", FLOAT64, "lower bound of the paired bootstrap 95% interval of the difference"),
    column("ci_high", FLOAT64, "upper bound of the paired bootstrap 95% interval of the difference"),
    column("p_value", FLOAT64, "two-sided paired randomisation test, in [0, 1]; null when not tested"),
    column("wins", INT64, "questions where the candidate is better"),
    column("ties", INT64, "questions where both are equal"),
    column("losses", INT64, "questions where the candidate is worse"),
    column("status", STRING, "the gate's outcome (pass, fail, ...) or version_mismatch", nullable=False),
    column("reason", STRING, "why the gate has this status"),
    column("blocking", BOOL, "true when a failure blocks promotion", nullable=False),
    column("passed", BOOL, "true when the gate passed", nullable=False),
    column("regressed_questions", list_of(STRING), "question ids that got worse"),
    column("level", STRING, "the level of the gated rows (chunk or doc); null for a metric without one"),
    column("n", INT64, "questions of the split both systems have a value for (the paired set); null when not "
           "compared"),
    column("n_baseline", INT64, "questions of the split the baseline has a value for; n_baseline - n were not "
           "compared"),
    column("n_candidate_errors", INT64, "of the baseline questions not compared, those whose candidate run errored "
           "(counted by the run-error check)"),
    column("candidate_all", FLOAT64, "headline: the candidate's mean over all its own evaluable questions of the "
           "split (what a floor, min_value, reads); not the gate's compared figure"),
    column("baseline_all", FLOAT64, "headline: the baseline's mean over all its own evaluable questions of the "
           "split; not the gate's compared figure"),
])

declare("answer_quality", 1, "one model-judged metric of one answer", depends_on=JUDGED, columns=[
    _SYSTEM, _QUESTION, _METRIC, _K,
    *_value_columns("status says why"),
    column("status", STRING, "ok, or why value is null (judge_error, not_answered, ...)", nullable=False),
    column("ranking_mode", STRING, "null (no retrieval metric here)"),
    column("error", STRING, "the judge's failure reason on judge_error rows; null otherwise"),
])

_CALIBRATION = [
    column("n", INT64, "items labelled by both people and the judge"),
    column("kappa", FLOAT64, "Cohen's kappa between people and the judge, in [-1, 1]; null with kappa_reason"),
    column("kappa_reason", STRING, "why kappa is null"),
    column("agreement", FLOAT64, "share of items where people and judge agree, in [0, 1]"),
    column("agreement_ci_low", FLOAT64, "lower bound of the Wilson 95% interval of agreement"),
    column("agreement_ci_high", FLOAT64, "upper bound of the Wilson 95% interval of agreement"),
    column("labels", STRING, "JSON list of the labels compared"),
    column("confusion", STRING, "JSON list of lists: rows = people, columns = judge"),
    column("per_label", STRING, "JSON {label: {precision, recall, support, predicted}}"),
    column("mapping", STRING, "JSON, the resolved mapping of human and judge labels"),
]
_PEOPLE = [
    column("n_stale_labels", INT64, "hand labels left out because their item changed since they were made"),
    column("stale_labels", STRING, "JSON list of {system, question_id, claim_id, annotator, line}"),
    column("labellers", STRING, "JSON list of annotator names (\"\" = unnamed)"),
    column("human_kappa", FLOAT64, "agreement between people: Cohen's kappa (2 people) or Light's kappa (more)"),
    column("human_kappa_reason", STRING, "why human_kappa is null"),
    column("human_kappa_n", INT64, "items labelled by at least two people"),
    column("human_pairs", STRING, "JSON list of {a, b, n, kappa, agreement, reason}"),
]

declare("judge_calibration", 1, "one current judge key and level with the calibration in force",
        depends_on=JUDGED, columns=[
    column("level", STRING, "claim or response", nullable=False),
    *_JUDGE,
    column("calibrated_judge", STRING, "judge of the calibration in force; null when missing"),
    column("calibrated_judge_model", STRING, "judge model of the calibration in force"),
    column("calibrated_prompt_sha256", STRING, "prompt sha256 of the calibration in force"),
    column("calibrated_at", STRING, "ISO 8601 UTC time of that calibration; null when missing"),
    *_CALIBRATION,
    column("stale", BOOL, "true when the calibration in force was made for another judge key"),
    column("missing", BOOL, "true when this judge key has no calibration"),
    *_PEOPLE,
])

declare("calibration_history", 1, "one calibration of one judge key and level, appended on every run that "
        "calibrates", depends_on=JUDGED, columns=[
    column("calibrated_at", STRING, "ISO 8601 UTC time of the calibration; null when unknown"),
    column("level", STRING, "claim or response", nullable=False),
    *_JUDGE,
    *_CALIBRATION,
    column("n_human_only", INT64, "items only people labelled"),
    column("n_judge_only", INT64, "items only the judge labelled"),
    column("n_excluded_human", INT64, "human labels left out by the mapping"),
    column("n_excluded_judge", INT64, "judge labels left out by the mapping"),
    column("source", STRING, "where the human labels came from"),
    *_PEOPLE,
])

declare("judge_variance", 1, "one system and judge key: the judge's repeat-to-repeat noise", depends_on=JUDGED,
        columns=[
    _SYSTEM,
    *_JUDGE,
    column("n_repeats", INT64, "repeats of the judgement"),
    column("n_items", INT64, "claims judged in every repeat"),
    column("n_flipped", INT64, "claims whose verdict differs between repeats"),
    column("flip_rate", FLOAT64, "n_flipped / n_items, in [0, 1]; null when n_items is 0"),
    column("faithfulness_mean", FLOAT64, "mean over repeats of the faithfulness (SUPPORTED / claims)"),
    column("faithfulness_min", FLOAT64, "lowest faithfulness of a repeat"),
    column("faithfulness_max", FLOAT64, "highest faithfulness of a repeat"),
    column("faithfulness_spread", FLOAT64, "max - min; null with one repeat"),
    column("faithfulness_std", FLOAT64, "standard deviation over repeats; null with one repeat"),
    column("resolution", FLOAT64, "the judge's minimum resolution (= spread): smaller differences are noise"),
    column("rule", STRING, "how resolution was computed"),
])

declare("ppi_estimates", 1, "one prediction-powered estimate of a judge-based rate for one system "
        "(Angelopoulos et al., Science 2023)", depends_on=JUDGED, columns=[
    _SYSTEM,
    column("rate", STRING, "which label's rate, e.g. attributable", nullable=False),
    column("estimate", FLOAT64, "the corrected rate in [0, 1]; null with reason when either set is empty"),
    column("ci_low", FLOAT64, "lower bound of the 95% interval"),
    column("ci_high", FLOAT64, "upper bound of the 95% interval"),
    column("judge_rate", FLOAT64, "the judge's uncorrected rate"),
    column("n_labelled", INT64, "items people labelled"),
    column("n_unlabelled", INT64, "items only the judge labelled"),
    column("reason", STRING, "why estimate is null, or how it was computed"),
])

declare("metric_history", 2, "one (run, system, metric, k, level) of the overall headline, appended every full run",
        depends_on=JUDGED, columns=[
    column("run_id", STRING, "the Dagster run id that evaluated", nullable=False),
    column("evaluated_at", UTC_MICROSECONDS, "when the run evaluated (UTC)", nullable=False),
    column("night", DATE, "the UTC day of evaluated_at", nullable=False),
    _SYSTEM, _METRIC, _K,
    *_value_columns("denominator 0"),
    column("n", INT64, "questions evaluated"),
    column("ci_low", FLOAT64, "lower bound of the 95% interval of value"),
    column("ci_high", FLOAT64, "upper bound of the 95% interval of value"),
    column("corpus_version", STRING, "corpus version of that run"),
    column("golden_version", STRING, "golden set version of that run"),
    column("golden_questions", INT32, "questions in that golden set"),
    column("judge", STRING, "judge of that run"),
    column("judge_model", STRING, "judge model of that run"),
    column("judge_prompt_sha256", STRING, "judge prompt sha256 of that run"),
    _LEVEL,
])

declare("regression_cases", 3, "one question that regressed once on a gated metric; kept across runs",
        depends_on=JUDGED, columns=[
    _SYSTEM, _METRIC, _K, _QUESTION,
    column("level", STRING, "the gated rows' level: chunk or doc (relevance judged per chunk or per document); null "
                            "for a metric without a level"),
    column("value_when_found", FLOAT64, "the candidate's value when the regression was found"),
    column("first_seen_run", STRING, "Dagster run id that found it"),
    column("first_seen_at", STRING, "ISO 8601 UTC time it was found"),
    column("current_value", FLOAT64, "the value now; null when the question has no value now"),
    column("status", STRING, "still_regressed, recovered (better than when found, by the metric's direction) or "
                             "no_value_now", nullable=False),
])


@migration("golden_set", 1)
def _claims_with_importance(df: pl.DataFrame) -> pl.DataFrame:
    """golden_set 1 -> 2: every claim gains ``importance``, null (= vital)."""
    from rag_eval_pipeline.core.table_schema import add_struct_fields

    return df.with_columns(add_struct_fields(df, "claims", pl.List(GOLDEN_CLAIM)))


@migration("regression_cases", 1)
def drop_baseline_value(df: pl.DataFrame) -> pl.DataFrame:
    """Version 1 declared ``baseline_value``, which no release ever wrote (always null): version 2 drops it."""
    return df.drop("baseline_value", strict=False)


@migration("gate_results", 2)
def _gate_means_as_headline(df: pl.DataFrame) -> pl.DataFrame:
    """gate_results 2 -> 3: version 2's ``candidate`` / ``baseline`` / ``difference`` were each side's mean
    over its own questions, not over the questions both evaluated: they become ``candidate_all`` /
    ``baseline_all``, and the compared figures (and ``n``) read null, since version 2 did not record them."""
    return df.with_columns(pl.col("candidate").alias("candidate_all"), pl.col("baseline").alias("baseline_all"),
                           pl.lit(None, dtype=pl.Float64).alias("candidate"),
                           pl.lit(None, dtype=pl.Float64).alias("baseline"),
                           pl.lit(None, dtype=pl.Float64).alias("difference"))


#: Every table's polars schema, derived from its Arrow declaration (what :func:`conform` checks).
SCHEMAS: dict[str, pl.Schema] = {spec.name: spec.polars for spec in TABLES}

#: rag_runs columns that older tables (written before they existed) lack; read as null.
RAG_RUNS_OPTIONAL = ("latency_ms", "system_version", "trace_id", "decision_rule")


def empty(table: str) -> pl.DataFrame:
    """Return an empty DataFrame with the declared schema of ``table``.

    Raises KeyError for an unknown table name.
    """
    return pl.DataFrame(schema=SCHEMAS[table])


__all__ = [
    "ANSWERABILITY", "CHUNK_STATUS", "DECISIONS", "GOLDEN_CLAIM", "LEVELS", "NUGGET_IMPORTANCE", "RAG_RUNS_OPTIONAL",
    "RELEVANT_DOC", "RELEVANT_ID", "RETRIEVED_HIT", "SCHEMAS", "SPLITS", "SUPPORT_VERDICTS", "TABLES", "VERDICTS",
    "VERDICT_FAMILIES", "TableSpec", "conform", "empty", "migration", "spec_of",
]
