"""Every table's schema, declared once.

Each asset that writes a table calls :func:`conform` before the write, so a column that is missing,
extra or of the wrong type stops the write with a message naming the table and the column.
Nothing here imports Dagster.
"""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError

RETRIEVED_HIT = pl.Struct({"chunk_id": pl.Utf8, "score": pl.Float64, "rank": pl.Int32})
RELEVANT_ID = pl.Struct({"chunk_id": pl.Utf8, "grade": pl.Int32})
RELEVANT_DOC = pl.Struct({"doc_id": pl.Utf8, "grade": pl.Int32})
GOLDEN_CLAIM = pl.Struct({"claim_id": pl.Utf8, "text": pl.Utf8, "supporting": pl.List(pl.Utf8)})

ANSWERABILITY = ("answerable", "absent", "clarify")
DECISIONS = ("answer", "abstain", "clarify", "error")
VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "JUDGE_ERROR")
CHUNK_STATUS = ("active", "withdrawn", "replaced")
SPLITS = ("dev", "test")
LEVELS = ("chunk", "doc")  # what a retrieval metric row was scored against (core/metrics/doc_level.py)

SCHEMAS: dict[str, pl.Schema] = {
    # one chunk of one document version
    "corpus_snapshot": pl.Schema(
        {
            "chunk_id": pl.Utf8,  # "doc_id#n", n counted from 0 within the document
            "doc_id": pl.Utf8,
            "chunk_index": pl.Int32,
            "text": pl.Utf8,
            "title": pl.Utf8,
            "source": pl.Utf8,  # file path or dataset name the document came from
            "doc_type": pl.Utf8,
            "language": pl.Utf8,
            "status": pl.Utf8,  # CHUNK_STATUS
            "replaced_by": pl.Utf8,  # doc_id of the newer document, null unless replaced
            "acl": pl.List(pl.Utf8),  # groups allowed to read; empty list = everyone
            "valid_from": pl.Date,
            "valid_to": pl.Date,
            "sha256": pl.Utf8,  # of the chunk text
        }
    ),
    # one question
    "golden_set": pl.Schema(
        {
            "question_id": pl.Utf8,
            "golden_version": pl.Utf8,
            "question": pl.Utf8,
            "answerability": pl.Utf8,  # ANSWERABILITY
            "relevant": pl.List(RELEVANT_ID),
            "relevant_docs": pl.List(RELEVANT_DOC),  # relevance judged per document (doc ids, graded)
            "reference_answer": pl.Utf8,
            "claims": pl.List(GOLDEN_CLAIM),
            "split": pl.Utf8,  # SPLITS
            "segments": pl.List(pl.Utf8),  # "key=value" tags
            "user_groups": pl.List(pl.Utf8),
        }
    ),
    # one question answered by one system configuration
    "rag_runs": pl.Schema(
        {
            "system": pl.Utf8,
            "question_id": pl.Utf8,
            "retrieved": pl.List(RETRIEVED_HIT),
            "decision": pl.Utf8,  # DECISIONS
            "answer": pl.Utf8,
            "citations": pl.List(pl.Utf8),
            "error": pl.Utf8,  # why decision == "error"; null otherwise
            "corpus_version": pl.Utf8,
            "golden_version": pl.Utf8,
            "retriever": pl.Utf8,  # JSON of the retriever configuration
            "generator": pl.Utf8,
            "model": pl.Utf8,
            "prompt_version": pl.Utf8,
            # the system call's wall time (http, python) or root span (traces); null if unmeasured
            "latency_ms": pl.Float64,
            "system_version": pl.Utf8,  # the reply's version header (http version_header); null otherwise
            "trace_id": pl.Utf8,  # traces: the trace this row came from (hex); null otherwise
            "decision_rule": pl.Utf8,  # traces / mapped replies: which rule set the decision; null = the system said
        }
    ),
    # one claim of one answer, judged once
    "judge_labels": pl.Schema(
        {
            "system": pl.Utf8,
            "question_id": pl.Utf8,
            "claim_id": pl.Utf8,
            "claim": pl.Utf8,
            "verdict": pl.Utf8,  # VERDICTS
            "quote": pl.Utf8,
            "quote_found": pl.Boolean,
            "justification": pl.Utf8,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "prompt_sha256": pl.Utf8,
            "repeat": pl.Int32,
            "error": pl.Utf8,  # reason when verdict == "JUDGE_ERROR"
        }
    ),
    # one answer of one system, judged as a whole: why it has (or has not) claim labels
    "answer_judgements": pl.Schema(
        {
            "system": pl.Utf8,
            "question_id": pl.Utf8,
            # judged / abstained / abstention_text_in_answer / no_claims / no_retrieval / judge_error
            "status": pl.Utf8,
            "n_claims": pl.Int32,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "prompt_sha256": pl.Utf8,
            "repeat": pl.Int32,
            "error": pl.Utf8,  # the judge's failure reason when status == "judge_error"
        }
    ),
    # one metric of one question for one system
    "question_metrics": pl.Schema(
        {
            "system": pl.Utf8,
            "question_id": pl.Utf8,
            "split": pl.Utf8,
            "metric": pl.Utf8,
            "k": pl.Int32,
            "value": pl.Float64,  # null = not evaluable for this question
            "numerator": pl.Float64,
            "denominator": pl.Float64,
            "status": pl.Utf8,  # why value is null, or "ok"
            "ranking_mode": pl.Utf8,
            "level": pl.Utf8,  # retrieval rows: LEVELS ("chunk" or "doc"); null for metrics without one
        }
    ),
    # one metric for one system, segment and k
    "metric_summary": pl.Schema(
        {
            "system": pl.Utf8,
            "split": pl.Utf8,  # "all", "dev" or "test"
            "segment": pl.Utf8,  # "all" or "key=value"
            "metric": pl.Utf8,
            "k": pl.Int32,
            "value": pl.Float64,  # null = not evaluable (denominator 0)
            "numerator": pl.Float64,
            "denominator": pl.Float64,
            "n": pl.Int64,  # questions in the segment
            "n_not_evaluable": pl.Int64,  # questions left out because their value is null
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "ci_method": pl.Utf8,  # wilson / bootstrap / none
            "judge_errors": pl.Int64,  # judge-based metrics only; 0 elsewhere
            "ranking_mode": pl.Utf8,
            "small_segment": pl.Boolean,
            "level": pl.Utf8,  # as in question_metrics
        }
    ),
    # one gated metric of one candidate against the baseline (core/gates.py)
    "gate_results": pl.Schema(
        {
            "system": pl.Utf8,
            "metric": pl.Utf8,
            "k": pl.Int32,
            "candidate": pl.Float64,
            "baseline": pl.Float64,
            "difference": pl.Float64,  # candidate - baseline
            "ci_low": pl.Float64,  # paired bootstrap interval of the difference
            "ci_high": pl.Float64,
            "p_value": pl.Float64,  # two-sided paired randomisation test
            "wins": pl.Int64,
            "ties": pl.Int64,
            "losses": pl.Int64,
            "status": pl.Utf8,  # core.gates.GateResult.status, or version_mismatch
            "reason": pl.Utf8,
            "blocking": pl.Boolean,
            "passed": pl.Boolean,
            "regressed_questions": pl.List(pl.Utf8),
            "level": pl.Utf8,  # the level of the gated rows (chunk / doc); null for metrics without one
        }
    ),
    # one model-judged metric of one answer: the question_metrics columns minus split (core/answer_quality.py)
    "answer_quality": pl.Schema(
        {
            "system": pl.Utf8,
            "question_id": pl.Utf8,
            "metric": pl.Utf8,
            "k": pl.Int32,
            "value": pl.Float64,  # null = not evaluable (status says why)
            "numerator": pl.Float64,
            "denominator": pl.Float64,
            "status": pl.Utf8,
            "ranking_mode": pl.Utf8,
            "error": pl.Utf8,  # the judge's failure reason on judge_error rows
        }
    ),
    # one current judge key (judge, judge_model, prompt_sha256) and calibration level
    "judge_calibration": pl.Schema(
        {
            "level": pl.Utf8,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "prompt_sha256": pl.Utf8,
            "calibrated_judge": pl.Utf8,
            "calibrated_judge_model": pl.Utf8,
            "calibrated_prompt_sha256": pl.Utf8,
            "calibrated_at": pl.Utf8,
            "n": pl.Int64,
            "kappa": pl.Float64,
            "kappa_reason": pl.Utf8,
            "agreement": pl.Float64,
            "agreement_ci_low": pl.Float64,
            "agreement_ci_high": pl.Float64,
            "labels": pl.Utf8,
            "confusion": pl.Utf8,
            "per_label": pl.Utf8,
            "mapping": pl.Utf8,
            "stale": pl.Boolean,
            "missing": pl.Boolean,
            "n_stale_labels": pl.Int64,
            "stale_labels": pl.Utf8,
            "labellers": pl.Utf8,
            "human_kappa": pl.Float64,
            "human_kappa_reason": pl.Utf8,
            "human_kappa_n": pl.Int64,
            "human_pairs": pl.Utf8,
        }
    ),
    # one calibration of one judge key and level, appended on every run that calibrates
    "calibration_history": pl.Schema(
        {
            "calibrated_at": pl.Utf8,  # ISO 8601 UTC, or null
            "level": pl.Utf8,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "prompt_sha256": pl.Utf8,
            "n": pl.Int64,
            "kappa": pl.Float64,
            "kappa_reason": pl.Utf8,
            "agreement": pl.Float64,
            "agreement_ci_low": pl.Float64,
            "agreement_ci_high": pl.Float64,
            "labels": pl.Utf8,  # JSON list
            "confusion": pl.Utf8,  # JSON list of lists, rows = human, columns = judge
            "per_label": pl.Utf8,  # JSON {label: {precision, recall, support, predicted}}
            "mapping": pl.Utf8,  # JSON, the resolved mapping
            "n_human_only": pl.Int64,
            "n_judge_only": pl.Int64,
            "n_excluded_human": pl.Int64,
            "n_excluded_judge": pl.Int64,
            "source": pl.Utf8,  # where the human labels came from
            "n_stale_labels": pl.Int64,  # hand labels whose item changed since they were made (left out)
            "stale_labels": pl.Utf8,  # JSON list of {system, question_id, claim_id, annotator, line}
            "labellers": pl.Utf8,  # JSON list of annotator names ("" = unnamed)
            "human_kappa": pl.Float64,  # agreement between people: Cohen's kappa (2 people) / Light's kappa (more)
            "human_kappa_reason": pl.Utf8,  # why human_kappa is null
            "human_kappa_n": pl.Int64,  # items labelled by at least two people
            "human_pairs": pl.Utf8,  # JSON list of {a, b, n, kappa, agreement, reason}
        }
    ),
    # one system and judge key: the judge's repeat-to-repeat noise
    "judge_variance": pl.Schema(
        {
            "system": pl.Utf8,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "prompt_sha256": pl.Utf8,
            "n_repeats": pl.Int64,
            "n_items": pl.Int64,
            "n_flipped": pl.Int64,
            "flip_rate": pl.Float64,  # n_flipped / n_items
            "faithfulness_mean": pl.Float64,
            "faithfulness_min": pl.Float64,
            "faithfulness_max": pl.Float64,
            "faithfulness_spread": pl.Float64,  # max - min; null with one repeat
            "faithfulness_std": pl.Float64,
            "resolution": pl.Float64,  # the judge's minimum resolution (= spread)
            "rule": pl.Utf8,
        }
    ),
    # one prediction-powered estimate of a judge-based rate for one system (Angelopoulos et al. 2023)
    "ppi_estimates": pl.Schema(
        {
            "system": pl.Utf8,
            "rate": pl.Utf8,  # which label's rate, e.g. "attributable"
            "estimate": pl.Float64,  # null with reason when either set is empty
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "judge_rate": pl.Float64,  # the judge's uncorrected rate
            "n_labelled": pl.Int64,
            "n_unlabelled": pl.Int64,
            "reason": pl.Utf8,
        }
    ),
    # one (run, system, metric, k) of the overall headline; appended every full run
    "metric_history": pl.Schema(
        {
            "run_id": pl.Utf8,
            "evaluated_at": pl.Datetime("us", "UTC"),
            "night": pl.Date,
            "system": pl.Utf8,
            "metric": pl.Utf8,
            "k": pl.Int32,
            "value": pl.Float64,
            "numerator": pl.Float64,
            "denominator": pl.Float64,
            "n": pl.Int64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "corpus_version": pl.Utf8,
            "golden_version": pl.Utf8,
            "golden_questions": pl.Int32,
            "judge": pl.Utf8,
            "judge_model": pl.Utf8,
            "judge_prompt_sha256": pl.Utf8,
            "level": pl.Utf8,  # as in metric_summary (null in rows written before the column existed)
        }
    ),
    # one question that regressed once on a gated metric; kept across runs
    "regression_cases": pl.Schema(
        {
            "system": pl.Utf8,
            "metric": pl.Utf8,
            "k": pl.Int32,
            "question_id": pl.Utf8,
            "baseline_value": pl.Float64,
            "value_when_found": pl.Float64,
            "first_seen_run": pl.Utf8,
            "first_seen_at": pl.Utf8,  # ISO 8601 UTC
            "current_value": pl.Float64,  # null when the question has no value now
            "status": pl.Utf8,  # still_regressed / recovered / no_value_now
        }
    ),
}


#: rag_runs columns that older tables (written before they existed) lack; read as null.
RAG_RUNS_OPTIONAL = ("latency_ms", "system_version", "trace_id", "decision_rule")


def empty(table: str) -> pl.DataFrame:
    """Return an empty DataFrame with the declared schema of ``table``.

    Raises KeyError for an unknown table name.
    """
    return pl.DataFrame(schema=SCHEMAS[table])


def conform(df: pl.DataFrame, table: str) -> pl.DataFrame:
    """Check ``df`` against the declared schema of ``table`` and return it in declared column order.

    Input: a polars DataFrame. Output: the same rows, columns reordered, dtypes unchanged
    (a Null-typed column, as polars infers for an all-null literal, is cast to the declared type).
    Raises SchemaError naming the table and column when a column is missing, extra or of another
    dtype, or when a float column holds NaN (null means "not evaluable"; NaN is never stored).
    """
    schema = SCHEMAS[table]
    missing = [c for c in schema if c not in df.columns]
    extra = [c for c in df.columns if c not in schema]
    if missing or extra:
        raise SchemaError(f"table {table!r}: missing columns {missing}, unexpected columns {extra}")
    casts = {}
    for name, dtype in schema.items():
        got = df.schema[name]
        if got == dtype:
            continue
        if got == pl.Null or _null_inner(got, dtype):
            casts[name] = dtype
            continue
        raise SchemaError(f"table {table!r}: column {name!r} has dtype {got}, expected {dtype}")
    if casts:
        df = df.with_columns([pl.col(c).cast(t) for c, t in casts.items()])
    for name, dtype in schema.items():
        if dtype in (pl.Float64, pl.Float32):
            bad = df.filter(pl.col(name).is_nan())
            if bad.height:
                raise SchemaError(
                    f"table {table!r}: column {name!r} holds NaN in {bad.height} row(s); "
                    "store null for 'not evaluable'"
                )
    return df.select(list(schema))


def _null_inner(got: pl.DataType, want: pl.DataType) -> bool:
    """True when ``got`` is a List of Null (an empty literal list) and ``want`` is any List."""
    return isinstance(got, pl.List) and isinstance(want, pl.List) and got.inner == pl.Null
