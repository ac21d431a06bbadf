"""How much a judge's labels move when nothing else changes: flip rates and minimum resolution.

A model judge is not deterministic, so run the same evaluation
two or three times on the same system version and see how far the result moves; that movement is
the minimum resolution, and any difference smaller than it is a fluctuation, not an improvement.
The input is the ``judge_labels`` table with several ``repeat`` values (``judge_runs(...,
repeats=k)``).

Definitions (an *item* is one claim: system, question_id, claim_id, judged by one judge key
(judge, judge_model, prompt_sha256)):

- JUDGE_ERROR rows are not verdicts: they are left out of every figure here (they are counted by
  the ``judge_error_share`` check and by ``metric_summary.judge_errors``).
- **flipped**: the item has a verdict in at least two repeats and not all of them are equal.
  **flip rate** = flipped items / items with a verdict in at least two repeats (None when no item
  has two).
- **majority label**: the most frequent verdict of the item over its repeats. A tie between two
  or more verdicts gives NOT_MENTIONED: a claim on which the judge cannot make up its mind is
  neither credited as SUPPORTED nor charged as CONTRADICTED.
- **per-repeat faithfulness** = SUPPORTED claims / judged claims of that repeat (micro average
  over all claims of the system, JUDGE_ERROR left out; None when the repeat has no claim).
- **spread** = max - min of the per-repeat faithfulness over repeats; **std** = its sample
  standard deviation (ddof = 1; None with fewer than 2 repeats).
- **minimum resolution** (rule :data:`RESOLUTION_RULE`): the spread (max - min) of the per-repeat
  faithfulness, the largest over systems and judge keys. This is the rule "run it two or three times
  and see how much it moves" read literally: with 2-3 repeats a standard deviation
  has 1-2 degrees of freedom and is too unstable to scale, while the range is exactly the
  movement observed; for 2 repeats the range |a - b| is also the smallest difference that the
  judge alone has been seen to produce. The largest over systems is taken because one number per
  metric is used by ``core.gates.evaluate_gates(noise_resolution=...)``.

Nothing here imports Dagster.
"""

from __future__ import annotations

from typing import cast

import polars as pl

from rag_eval_pipeline.core.errors import SchemaError

__all__ = [
    "JUDGE_KEY",
    "ITEM_KEY",
    "RESOLUTION_RULE",
    "item_stability",
    "majority_vote",
    "flip_rates",
    "repeat_faithfulness",
    "variance_table",
    "minimum_resolution",
    "resolution_from_table",
]

JUDGE_KEY = ("judge", "judge_model", "prompt_sha256")
ITEM_KEY = ("system", "question_id", "claim_id")
#: How the minimum resolution is derived (stored with every variance table row).
RESOLUTION_RULE = "max-min of per-repeat faithfulness (SUPPORTED/claims), largest over systems"
#: Label given to an item whose repeats tie between two or more verdicts.
TIE_LABEL = "NOT_MENTIONED"

_NEEDED = ITEM_KEY + JUDGE_KEY + ("verdict", "repeat")


def _check(judge_labels: pl.DataFrame) -> pl.DataFrame:
    missing = [c for c in _NEEDED if c not in judge_labels.columns]
    if missing:
        raise SchemaError(f"table 'judge_labels': missing columns {missing}")
    return judge_labels.filter(pl.col("verdict") != "JUDGE_ERROR")


def item_stability(judge_labels: pl.DataFrame) -> pl.DataFrame:
    """One row per item and judge key: how its verdict varies across repeats.

    Input: ``judge_labels`` (needs system, question_id, claim_id, judge, judge_model,
    prompt_sha256, verdict, repeat; JUDGE_ERROR rows are dropped; if an item has several rows in
    one repeat each counts as a vote). Output columns: the item and judge key, ``n_repeats``
    (repeats with a verdict, Int64), ``verdicts`` (list[str], in repeat order), ``n_distinct``
    (UInt32), ``flipped`` (bool: n_repeats >= 2 and n_distinct > 1), ``majority`` (most frequent
    verdict; ties → NOT_MENTIONED), ``majority_share`` (votes of the majority verdict / n_repeats;
    for a tie, the share of the tied verdicts' count). Sorted by item key.
    Raises SchemaError when a needed column is missing.
    Source: majority vote over repeated samples, as self-consistency (Wang et al., ICLR 2023).
    """
    keys = list(ITEM_KEY + JUDGE_KEY)
    labels = _check(judge_labels)
    if labels.height == 0:
        return pl.DataFrame(schema={**{k: pl.Utf8 for k in keys}, "n_repeats": pl.Int64,
                                    "verdicts": pl.List(pl.Utf8), "n_distinct": pl.UInt32,
                                    "flipped": pl.Boolean, "majority": pl.Utf8,
                                    "majority_share": pl.Float64})
    counts = labels.group_by(keys + ["verdict"]).agg(pl.len().alias("votes"))
    top = (
        counts.with_columns(pl.col("votes").max().over(keys).alias("top"))
        .filter(pl.col("votes") == pl.col("top"))
        .group_by(keys)
        .agg(pl.col("verdict").alias("winners"), pl.col("top").first())
        .with_columns(
            pl.when(pl.col("winners").list.len() == 1)
            .then(pl.col("winners").list.first())
            .otherwise(pl.lit(TIE_LABEL))
            .alias("majority")
        )
    )
    per_item = (
        labels.sort("repeat")
        .group_by(keys, maintain_order=True)
        .agg(pl.len().cast(pl.Int64).alias("n_repeats"), pl.col("verdict").alias("verdicts"),
             pl.col("verdict").n_unique().alias("n_distinct"))
    )
    return (
        per_item.join(top, on=keys, how="left")
        .with_columns(
            ((pl.col("n_repeats") >= 2) & (pl.col("n_distinct") > 1)).alias("flipped"),
            (pl.col("top") / pl.col("n_repeats")).alias("majority_share"),
        )
        .select(*keys, "n_repeats", "verdicts", "n_distinct", "flipped", "majority", "majority_share")
        .sort(keys)
    )


def majority_vote(judge_labels: pl.DataFrame) -> pl.DataFrame:
    """The majority-vote verdict of each item over its repeats, as a ``judge_labels``-shaped frame.

    Input: ``judge_labels`` with one or more repeats. Output: one row per item and judge key with
    the judge_labels columns present in the input; ``verdict`` is the majority label (ties →
    NOT_MENTIONED, see module docstring); the other columns (claim, quote, ...) come from the
    lowest repeat whose verdict equals the majority (or the lowest repeat for a tie);
    ``repeat`` is -1 to mark a vote. Items whose every row is JUDGE_ERROR are kept with their
    first row unchanged (no vote is possible). Raises SchemaError when a needed column is missing.
    """
    keys = list(ITEM_KEY + JUDGE_KEY)
    stab = item_stability(judge_labels).select(*keys, "majority")
    ordered = judge_labels.sort("repeat")
    voted = (
        ordered.filter(pl.col("verdict") != "JUDGE_ERROR")
        .join(stab, on=keys, how="inner")
        .with_columns((pl.col("verdict") == pl.col("majority")).alias("_hit"))
        .sort(["_hit", "repeat"], descending=[True, False])
        .group_by(keys, maintain_order=True).first()
        .with_columns(pl.col("majority").alias("verdict"), pl.lit(-1, pl.Int32).alias("repeat"))
        .drop("majority", "_hit")
    )
    errors_only = ordered.join(stab.select(keys), on=keys, how="anti").group_by(keys, maintain_order=True).first()
    cols = judge_labels.columns
    out = pl.concat([voted.select(cols), errors_only.select(cols)], how="vertical_relaxed")
    return out.sort(keys)


def flip_rates(judge_labels: pl.DataFrame) -> pl.DataFrame:
    """Share of items whose verdict differs across repeats, per system and judge key.

    Input: ``judge_labels``. Output columns: system, judge, judge_model, prompt_sha256,
    ``n_items`` (items with a verdict in >= 2 repeats, Int64), ``n_flipped`` (Int64),
    ``flip_rate`` (n_flipped / n_items in [0, 1]; null when n_items is 0 — e.g. a single repeat).
    Raises SchemaError when a needed column is missing.
    """
    by = ["system", *JUDGE_KEY]
    stab = item_stability(judge_labels)
    return (
        stab.group_by(by)
        .agg((pl.col("n_repeats") >= 2).sum().cast(pl.Int64).alias("n_items"),
             pl.col("flipped").sum().cast(pl.Int64).alias("n_flipped"))
        .with_columns(
            pl.when(pl.col("n_items") > 0).then(pl.col("n_flipped") / pl.col("n_items")).otherwise(None)
            .alias("flip_rate")
        )
        .sort(by)
    )


def repeat_faithfulness(judge_labels: pl.DataFrame) -> pl.DataFrame:
    """Aggregate faithfulness of each repeat: SUPPORTED claims / judged claims (micro average).

    Input: ``judge_labels``. Output columns: system, judge, judge_model, prompt_sha256,
    ``repeat`` (Int32), ``supported`` and ``claims`` (Int64; JUDGE_ERROR left out),
    ``faithfulness`` (supported / claims in [0, 1]). A repeat whose every row is JUDGE_ERROR has
    no row. Raises SchemaError when a needed column is missing.
    Source: Ragas' faithfulness (supported claims / total claims; Es et al. 2024).
    """
    by = ["system", *JUDGE_KEY, "repeat"]
    labels = _check(judge_labels)
    return (
        labels.group_by(by)
        .agg((pl.col("verdict") == "SUPPORTED").sum().cast(pl.Int64).alias("supported"),
             pl.len().cast(pl.Int64).alias("claims"))
        .with_columns((pl.col("supported") / pl.col("claims")).alias("faithfulness"),
                      pl.col("repeat").cast(pl.Int32))
        .sort(by)
    )


def variance_table(judge_labels: pl.DataFrame) -> pl.DataFrame:
    """Per system and judge key: repeats, flip rate and the spread of per-repeat faithfulness.

    Input: ``judge_labels`` (one or more repeats). Output: one row per (system, judge,
    judge_model, prompt_sha256) with ``n_repeats`` (Int64), ``n_items``, ``n_flipped``,
    ``flip_rate`` (see :func:`flip_rates`), ``faithfulness_mean``, ``faithfulness_min``,
    ``faithfulness_max``, ``faithfulness_spread`` (max - min; null with fewer than 2 repeats),
    ``faithfulness_std`` (ddof = 1; null with fewer than 2 repeats), ``resolution`` (= spread,
    the rule :data:`RESOLUTION_RULE`), ``rule`` (that text). Empty input → empty frame with these
    columns. Raises SchemaError when a needed column is missing.
    Source: this pipeline's definition (minimum resolution from 2-3 repeats; docs/METRICS.md).
    """
    by = ["system", *JUDGE_KEY]
    per_repeat = repeat_faithfulness(judge_labels)
    agg = per_repeat.group_by(by).agg(
        pl.len().cast(pl.Int64).alias("n_repeats"),
        pl.col("faithfulness").mean().alias("faithfulness_mean"),
        pl.col("faithfulness").min().alias("faithfulness_min"),
        pl.col("faithfulness").max().alias("faithfulness_max"),
        pl.col("faithfulness").std(ddof=1).alias("faithfulness_std"),
    )
    multi = pl.col("n_repeats") >= 2
    out = (
        agg.join(flip_rates(judge_labels), on=by, how="left")
        .with_columns(
            pl.when(multi).then(pl.col("faithfulness_max") - pl.col("faithfulness_min")).otherwise(None)
            .alias("faithfulness_spread"),
            pl.when(multi).then(pl.col("faithfulness_std")).otherwise(None).alias("faithfulness_std"),
        )
        .with_columns(pl.col("faithfulness_spread").alias("resolution"), pl.lit(RESOLUTION_RULE).alias("rule"))
        .select(*by, "n_repeats", "n_items", "n_flipped", "flip_rate", "faithfulness_mean", "faithfulness_min",
                "faithfulness_max", "faithfulness_spread", "faithfulness_std", "resolution", "rule")
        .sort(by)
    )
    return out


def resolution_from_table(table: pl.DataFrame) -> dict[str, float]:
    """Turn a :func:`variance_table` into ``{metric: resolution}`` for ``evaluate_gates``.

    Input: a frame with a ``resolution`` column (Float64, null when unknown). Output:
    ``{"faithfulness": largest non-null resolution}``, or ``{}`` when every resolution is null
    (single repeat: resolution unknown; gates then allow no noise margin). Never raises for a
    frame with that column; KeyError without it.
    """
    values = table["resolution"].drop_nulls()
    # a non-empty Float64 column without nulls: its max is a float
    return {"faithfulness": float(cast(float, values.max()))} if values.len() else {}


def minimum_resolution(judge_labels: pl.DataFrame) -> dict[str, float]:
    """The judge's minimum resolution per metric, usable as ``noise_resolution`` in ``core.gates``.

    Input: ``judge_labels`` with several ``repeat`` values. Output: ``{"faithfulness": r}`` with
    r in [0, 1] the largest max - min spread of per-repeat faithfulness over systems and judge
    keys (rule in the module docstring); ``{}`` when no system has two repeats with claims.
    Raises SchemaError when a needed column is missing.
    Source: this pipeline's definition (a difference smaller than the spread of repeats is noise).
    """
    return resolution_from_table(variance_table(judge_labels))
