"""Judge calibration: how far a judge agrees with people on the same items.

Label a few dozen cases by hand, run the judge over them and measure the agreement (Zheng et al.,
NeurIPS 2023; ARES, Saad-Falcon et al., NAACL 2024); if it is poor the judge does not measure what you think
and none of its figures mean anything; repeat the calibration whenever the judge model or the evaluation
prompt
changes. Hence every result carries the judge key (judge, judge_model, prompt_sha256), and
:func:`calibration_table` marks a calibration ``stale`` when it was made for another key and
``missing`` when none exists.

Two levels:

- ``claim``: items are (system, question_id, claim_id); people label the judge's own claims
  (claim ids as ``judge_runs`` writes them, "<question_id>:c<n>").
- ``response``: items are (system, question_id); claim verdicts are turned into one label per
  response by a rule (e.g. "attributable" iff every claim is SUPPORTED), and a human label set
  (e.g. BEGIN's "Fully attributable" / "Not fully attributable") is mapped onto the same labels.

The mapping is explicit and stored with every result: the rules turning each side's rows into one
raw label per item, the raw → calibrated label maps and the label set
(:mod:`rag_eval_pipeline.core.metrics.calibration_mapping`); nothing is mapped silently. Hand-label
files are read and checked by :mod:`rag_eval_pipeline.core.metrics.label_files`; results, the history
and the calibration-in-force table live in :mod:`rag_eval_pipeline.core.metrics.calibration_results`.

Judge repeats are reduced to one verdict per claim by majority vote first
(:func:`~rag_eval_pipeline.core.metrics.variance.majority_vote`, ties → NOT_MENTIONED) unless
``repeat`` picks one. JUDGE_ERROR is not a verdict: such a claim (claim level) or any response
with one (response level) is left out and counted in ``n_excluded_judge``.

Agreement figures come from :mod:`rag_eval_pipeline.core.metrics.agreement` (Cohen 1960). Cohen's
kappa is null, with ``kappa_reason``, when no item is labelled by both sides (n = 0) or when one
side gives the same label to every item: kappa is then undefined (0/0) or, for a constant judge
against varied people, identically 0 whatever the judge's quality — neither is a measurement, so
neither is reported as a number.

Several people (the ``annotator`` column; "" when absent): each person labels an item at most
once. Judge-vs-people figures pool every (item, person) label against the judge's label of that
item (with one person: exactly the single-rater figures); :func:`inter_labeller_agreement` gives
the agreement between people on the items two of them labelled (Cohen's kappa per pair, and the
mean over pairs: Light's kappa, R. J. Light 1971), the ceiling any judge can reach.

Stale labels: a label carrying ``content_sha256`` (a hash of the question, answer or claim and
retrieved chunk texts the person saw, :func:`rag_eval_pipeline.core.labelling.content_sha256`) is
compared with the hash of the same item now; when they differ the label is *stale*: left out of
every figure, counted (``n_stale_labels``) and listed (``stale_labels``). Labels without a hash (older
files) are used as before.

Nothing here imports Dagster.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.metrics.agreement import (
    confusion_matrix,
    inter_labeller_agreement,
    kappa_or_reason,
    per_class_precision_recall,
)
from rag_eval_pipeline.core.metrics.calibration_mapping import (
    DEFAULT_MAPPINGS,
    LEVELS,
    map_labels,
    raw_labels_per_item,
    resolve_mapping,
)
from rag_eval_pipeline.core.metrics.calibration_results import (
    HISTORY_SCHEMA,
    TABLE_SCHEMA,
    CalibrationResult,
    calibration_table,
    confusion_markdown,
    results_from_frame,
    results_to_frame,
)
from rag_eval_pipeline.core.metrics.label_files import LABEL_FILE_SCHEMA, read_label_file
from rag_eval_pipeline.core.metrics.variance import JUDGE_KEY, majority_vote

# The names below are re-exported: callers import them from this module.
__all__ = [
    "DEFAULT_MAPPINGS",
    "HISTORY_SCHEMA",
    "LABEL_FILE_SCHEMA",
    "LEVELS",
    "TABLE_SCHEMA",
    "CalibrationResult",
    "calibrate",
    "calibrate_all",
    "calibration_table",
    "confusion_markdown",
    "inter_labeller_agreement",
    "judge_based_metrics",
    "judge_item_labels",
    "ppi_rates",
    "read_label_file",
    "resolve_mapping",
    "results_from_frame",
    "results_to_frame",
]



def calibrate(
    human_labels: pl.DataFrame,
    judge_labels: pl.DataFrame,
    mapping: Mapping[str, Any] | None = None,
    level: str = "claim",
    *,
    repeat: int | None = None,
    calibrated_at: str | None = None,
    source: str | None = None,
    current_hashes: Mapping[tuple[str, ...], str] | None = None,
) -> CalibrationResult:
    """Agreement between human labels and one judge's labels on the same items.

    Inputs: ``human_labels`` (system, question_id, verdict, and claim_id at claim level or when
    ``human_rule`` aggregates claims; optional ``annotator`` (who labelled), ``content_sha256``
    (hash of what that person saw) and ``line``; see :func:`read_label_file`); ``judge_labels``
    (the judge_labels table of ONE judge key: system, question_id, claim_id, verdict, repeat,
    judge, judge_model, prompt_sha256); ``mapping`` (see :func:`resolve_mapping`; None = the
    default for ``level``); ``level`` "claim" (items (system, question_id, claim_id)) or
    "response" (items (system, question_id)); ``repeat`` (None = majority vote over repeats, ties
    → NOT_MENTIONED; an int = that repeat only); ``calibrated_at`` / ``source`` are stored as
    given; ``current_hashes`` (item key tuple → content sha256 of the item now, from
    :func:`rag_eval_pipeline.core.labelling.current_content_hashes`; None = no staleness check).

    Output: :class:`CalibrationResult`. Items on one side only are counted, not compared. With
    several people, every (item, person) label is compared with the judge's label of the item
    (``n`` counts those pairs). A hashed label whose item changed is stale: left out,
    counted and listed (an item absent now is not compared, hence not stale). ``kappa`` is None with
    ``kappa_reason`` when n = 0 or when one side's labels are all equal (module docstring); otherwise Cohen's kappa from
    ``agreement.cohen_kappa``. Agreement between people: :func:`inter_labeller_agreement`.
    Raises ValueError for an unknown level / bad mapping, or when ``judge_labels`` holds more
    than one judge key (use :func:`calibrate_all`); SchemaError for a missing column; InputError
    for a label absent from the mapping or an item labelled twice by the same person.
    Source: ARES (Saad-Falcon et al. 2024: validate the judge on hand labels); J. Cohen (1960) for kappa;
    E. B. Wilson (1927) for the agreement interval.
    """
    m = resolve_mapping(mapping, level)
    item = ["system", "question_id"] + (["claim_id"] if level == "claim" else [])
    judge_cols = ["system", "question_id", "claim_id", "verdict", "repeat", *JUDGE_KEY]
    miss = [c for c in judge_cols if c not in judge_labels.columns]
    if miss:
        raise SchemaError(f"table 'judge_labels': missing columns {miss}")
    human_need = ["system", "question_id", "verdict"] + (
        ["claim_id"] if level == "claim" or m["human_rule"] != "label" else [])
    miss = [c for c in human_need if c not in human_labels.columns]
    if miss:
        raise SchemaError(f"human labels: missing columns {miss}")
    keys = judge_labels.select(*JUDGE_KEY).unique().rows()
    if len(keys) > 1:
        raise ValueError(f"judge_labels holds {len(keys)} judge keys {sorted(keys, key=str)}; calibrate one at a "
                         "time (calibrate_all does)")
    jkey = keys[0] if keys else (None, None, None)

    judge_mapped, n_excluded_judge = judge_item_labels(judge_labels, m, level, repeat=repeat)

    hl, stale = _fresh_human_labels(human_labels, human_need, item, current_hashes)
    hkeys = item + ["annotator"]
    human_raw = raw_labels_per_item(hl, m["human_rule"], hkeys, "human")
    null_h = human_raw.filter(pl.col("raw").is_null()).height
    human_mapped, drop_h = map_labels(human_raw.filter(pl.col("raw").is_not_null()), "human", m["human"], hkeys)

    joined = human_mapped.rename({"label": "human"}).join(judge_mapped.rename({"label": "judge"}), on=item,
                                                          how="inner")
    n = joined.height
    h, j = joined["human"].to_list(), joined["judge"].to_list()
    labels = list(m["labels"])
    for lab in sorted(set(h) | set(j)):
        if lab not in labels:  # only reachable with a mapping whose labels list was trimmed by hand
            labels.append(lab)
    people = inter_labeller_agreement(human_mapped, item, labels)
    common = dict(level=level, judge=jkey[0], judge_model=jkey[1], prompt_sha256=jkey[2], n=n, labels=labels,
                  mapping=m, n_human_only=human_mapped.height - n,
                  n_judge_only=judge_mapped.join(human_mapped.select(item).unique(), on=item, how="anti").height,
                  n_excluded_human=null_h + drop_h, n_excluded_judge=n_excluded_judge,
                  calibrated_at=calibrated_at, source=source, n_stale_labels=len(stale), stale_labels=stale,
                  **people)
    if n == 0:
        return CalibrationResult(kappa=None, kappa_reason="no item is labelled by both people and the judge (n = 0)",
                                 agreement=None, agreement_ci_low=None, agreement_ci_high=None,
                                 confusion=[[0] * len(labels) for _ in labels],
                                 per_label={lab: {"precision": None, "recall": None, "support": 0, "predicted": 0}
                                            for lab in labels}, **common)
    _, confusion = confusion_matrix(h, j, labels)
    per_label = {str(k): v for k, v in per_class_precision_recall(h, j, labels).items()}
    agree = sum(confusion[i][i] for i in range(len(labels)))
    from rag_eval_pipeline.core.metrics.stats import wilson_interval  # numpy/scipy only when a calibration runs

    low, high = wilson_interval(agree, n)
    kappa, reason = kappa_or_reason(h, j, labels, "people", "the judge")
    return CalibrationResult(kappa=kappa, kappa_reason=reason, agreement=agree / n, agreement_ci_low=low,
                             agreement_ci_high=high, confusion=confusion, per_label=per_label, **common)



def judge_item_labels(judge_labels: pl.DataFrame, mapping: Mapping[str, Any] | None, level: str, *,
                      repeat: int | None = None) -> tuple[pl.DataFrame, int]:
    """The judge's calibrated label of every item, as :func:`calibrate` compares them.

    Input: ``judge_labels`` of one judge key; ``mapping`` (raw or resolved, see
    :func:`resolve_mapping`); ``level``; ``repeat`` (None = majority vote over repeats). Output:
    ``(frame, n_excluded)``: one row per item (system, question_id[, claim_id]) with ``label``;
    ``n_excluded`` = items left out (JUDGE_ERROR, a label mapped to None). Raises as
    :func:`calibrate`.
    """
    m = resolve_mapping(mapping, level)
    item = ["system", "question_id"] + (["claim_id"] if level == "claim" else [])
    judge_cols = ["system", "question_id", "claim_id", "verdict", "repeat", *JUDGE_KEY]
    jl = judge_labels.select(judge_cols).with_columns(pl.col(c).cast(pl.Utf8) for c in item + ["verdict"])
    jl = majority_vote(jl) if repeat is None else jl.filter(pl.col("repeat") == repeat)
    n_err_claims = 0
    if level == "claim":
        n_err_claims = jl.filter(pl.col("verdict") == "JUDGE_ERROR").height
        jl = jl.filter(pl.col("verdict") != "JUDGE_ERROR")
    judge_raw = raw_labels_per_item(jl, m["judge_rule"], item, "judge")
    n_err_resp = judge_raw.filter(pl.col("raw").is_null()).height
    judge_raw = judge_raw.filter(pl.col("raw").is_not_null())
    judge_mapped, drop_j = map_labels(judge_raw, "judge", m["judge"], item)
    return judge_mapped, n_err_claims + n_err_resp + drop_j


def _fresh_human_labels(human_labels: pl.DataFrame, need: list[str], item: list[str],
                        current_hashes: Mapping[tuple[str, ...], str] | None
                        ) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """(labels with an ``annotator`` column, "" when unnamed, minus stale ones; the stale ones listed)."""
    extra: list[str] = [c for c in ("annotator", "content_sha256", "line") if c in human_labels.columns]
    hl = human_labels.select(need + extra).with_columns(pl.col(c).cast(pl.Utf8) for c in need)
    hl = hl.with_columns((pl.col("annotator").cast(pl.Utf8) if "annotator" in extra else pl.lit(None, pl.Utf8))
                         .fill_null("").alias("annotator"))
    stale: list[dict[str, Any]] = []
    if current_hashes is None or "content_sha256" not in extra:
        return hl.select(need + ["annotator"]), stale
    keep = []
    for r in hl.iter_rows(named=True):
        sha = r["content_sha256"]
        now = current_hashes.get(tuple(r[c] for c in item))
        # an item absent now (a quick run's subset, an abstention) is simply not compared, as before
        ok = sha is None or now is None or sha == now
        keep.append(ok)
        if not ok:
            stale.append({"system": r["system"], "question_id": r["question_id"], "claim_id": r.get("claim_id"),
                          "annotator": r["annotator"], "line": r.get("line"),
                          "why": "the question, answer or retrieved context changed since it was labelled"})
    return hl.filter(pl.Series(keep, dtype=pl.Boolean)).select(need + ["annotator"]), stale



def calibrate_all(
    human_labels: pl.DataFrame,
    judge_labels: pl.DataFrame,
    mapping: Mapping[str, Any] | None = None,
    level: str = "claim",
    *,
    repeat: int | None = None,
    calibrated_at: str | None = None,
    source: str | None = None,
    current_hashes: Mapping[tuple[str, ...], str] | None = None,
) -> list[CalibrationResult]:
    """:func:`calibrate` once per judge key (judge, judge_model, prompt_sha256) in ``judge_labels``.

    Output: a list of :class:`CalibrationResult`, sorted by key; empty when ``judge_labels`` has
    no row. Raises as :func:`calibrate`.
    """
    miss = [c for c in JUDGE_KEY if c not in judge_labels.columns]
    if miss:
        raise SchemaError(f"table 'judge_labels': missing columns {miss}")
    keys = sorted(judge_labels.select(*JUDGE_KEY).unique().rows(), key=lambda k: tuple(str(x) for x in k))
    out = []
    for key in keys:
        sub = judge_labels.filter(pl.all_horizontal(
            (pl.col(c).is_null() if v is None else pl.col(c) == v) for c, v in zip(JUDGE_KEY, key)))
        out.append(calibrate(human_labels, sub, mapping, level, repeat=repeat, calibrated_at=calibrated_at,
                             source=source, current_hashes=current_hashes))
    return out



def judge_based_metrics(metrics: Iterable[str]) -> list[str]:
    """The metric names (e.g. of gate thresholds) whose values come from a judge.

    Input: metric names (base names or labels such as ``faithfulness``). Output: those declared
    ``judge_based`` in ``core/metrics/names.py`` (faithfulness and its companions, the model-judged
    answer quality), sorted and deduplicated. Never raises.
    """
    from rag_eval_pipeline.core.metrics.names import is_judge_based

    return sorted({m for m in metrics if is_judge_based(m)})


def ppi_rates(
    human_labels: pl.DataFrame,
    judge_labels: pl.DataFrame,
    mapping: Mapping[str, Any] | None = None,
    positive: str = "attributable",
    confidence: float = 0.95,
) -> pl.DataFrame:
    """Prediction-powered estimates of the rate of ``positive`` responses, per system.

    Inputs: response-level human labels and the judge_labels table of one judge key (as
    :func:`calibrate` at level "response"). For each system, the judge's mapped
    label on every judged response is f; responses people labelled form the labelled set (f, Y), the
    others the unlabelled set; :func:`rag_eval_pipeline.core.metrics.ppi.ppi_rate` combines them
    (Angelopoulos et al. 2023; ARES, Saad-Falcon et al. 2023). Systems are never pooled: PPI needs the
    labelled answers to be a sample of the same population as the unlabelled ones. Output: one row per system with
    ``estimate``, ``ci_low``, ``ci_high`` (null with ``reason`` when either set is empty),
    ``judge_rate`` (the judge's uncorrected rate), ``n_labelled``, ``n_unlabelled``. When several people
    labelled an answer, its first label (in the given order) is used.
    Raises what :func:`calibrate` raises for bad labels or mappings.
    """
    from rag_eval_pipeline.core.metrics.ppi import ppi_rate

    m = resolve_mapping(mapping, "response")
    item = ["system", "question_id"]
    jl = judge_labels.select("system", "question_id", "claim_id", "verdict", "repeat", *JUDGE_KEY).with_columns(
        pl.col(c).cast(pl.Utf8) for c in ("system", "question_id", "claim_id", "verdict"))
    jl = majority_vote(jl)
    judge_raw = raw_labels_per_item(jl, m["judge_rule"], item, "judge").filter(pl.col("raw").is_not_null())
    judge_mapped, _ = map_labels(judge_raw, "judge", m["judge"], item)
    hl = human_labels.select("system", "question_id", "verdict").with_columns(
        pl.col(c).cast(pl.Utf8) for c in item + ["verdict"])
    hl = hl.unique(subset=item, keep="first", maintain_order=True)  # several people: the first label of each answer
    human_raw = raw_labels_per_item(hl, m["human_rule"], item, "human").filter(pl.col("raw").is_not_null())
    human_mapped, _ = map_labels(human_raw, "human", m["human"], item)
    f = judge_mapped.with_columns((pl.col("label") == positive).cast(pl.Float64).alias("f")).select(*item, "f")
    y = human_mapped.with_columns((pl.col("label") == positive).cast(pl.Float64).alias("y")).select(*item, "y")
    rows = []
    for system in sorted(f["system"].unique().to_list()):
        fs = f.filter(pl.col("system") == system)
        labelled = fs.join(y, on=item, how="inner")
        unlabelled = fs.join(y, on=item, how="anti")
        r = ppi_rate(unlabelled["f"].to_numpy(), labelled["f"].to_numpy(), labelled["y"].to_numpy(), confidence)
        rows.append({"system": system, "rate": positive, "estimate": r.estimate, "ci_low": r.ci_low,
                     "ci_high": r.ci_high, "judge_rate": r.judge_rate, "n_labelled": r.n_labelled,
                     "n_unlabelled": r.n_unlabelled, "reason": r.reason})
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "rate": pl.Utf8, "estimate": pl.Float64, "ci_low": pl.Float64,
                                      "ci_high": pl.Float64, "judge_rate": pl.Float64, "n_labelled": pl.Int64,
                                      "n_unlabelled": pl.Int64, "reason": pl.Utf8})
