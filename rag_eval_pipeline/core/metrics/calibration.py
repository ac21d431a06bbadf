"""Judge calibration: how far a judge agrees with people on the same items.

Seed ``004_292fd69c3d96947d.txt``: label about fifty cases by hand, run the judge over them and
measure the agreement; if it is poor the judge does not measure what you think and none of its
figures mean anything; repeat the calibration whenever the judge model or the evaluation prompt
changes. Hence every result carries the judge key (judge, judge_model, prompt_sha256), and
:func:`calibration_table` marks a calibration ``stale`` when it was made for another key and
``missing`` when none exists.

Two levels:

- ``claim``: items are (system, question_id, claim_id); people label the judge's own claims
  (claim ids as ``judge_runs`` writes them, "<question_id>:c<n>").
- ``response``: items are (system, question_id); claim verdicts are turned into one label per
  response by a rule (e.g. "attributable" iff every claim is SUPPORTED), and a human label set
  (e.g. BEGIN's "Fully attributable" / "Not fully attributable") is mapped onto the same labels.

The mapping is explicit and stored with every result (:data:`DEFAULT_MAPPINGS`, keys):

- ``judge_rule`` / ``human_rule``: how one side's rows become one raw label per item:
  ``"label"`` (the row's ``verdict``; exactly one row per item), ``"all_supported"`` (response
  level: "attributable" when every claim verdict is SUPPORTED, else "not_attributable"),
  ``"holistic"`` (response level: YES / PARTIAL / NO from
  :func:`~rag_eval_pipeline.core.judges.base.holistic_label`).
- ``judge`` / ``human``: raw label → calibrated label; a value of None drops the item (counted in
  ``n_excluded_*``); a raw label absent from the dict raises :class:`InputError` — nothing is
  mapped silently.
- ``labels``: the calibrated label set, in display order (confusion-matrix rows and columns).

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

import copy
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.judges.base import holistic_label
from rag_eval_pipeline.core.metrics.agreement import (
    cohen_kappa,
    confusion_matrix,
    per_class_precision_recall,
)
from rag_eval_pipeline.core.metrics.stats import wilson_interval
from rag_eval_pipeline.core.metrics.variance import JUDGE_KEY, majority_vote
from rag_eval_pipeline.core.tables import SCHEMAS

__all__ = [
    "DEFAULT_MAPPINGS",
    "HISTORY_SCHEMA",
    "JUDGE_BASED_METRIC_PREFIXES",
    "LEVELS",
    "CalibrationResult",
    "calibrate",
    "calibrate_all",
    "calibration_table",
    "confusion_markdown",
    "inter_labeller_agreement",
    "judge_based_metrics",
    "judge_item_labels",
    "read_human_labels",
    "read_label_file",
    "resolve_mapping",
    "results_from_frame",
    "results_to_frame",
]

LEVELS = ("claim", "response")
_RULES = {"claim": ("label",), "response": ("label", "all_supported", "holistic")}
_CLAIM_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")

#: Default mapping per level (a user mapping overrides these keys one by one).
DEFAULT_MAPPINGS: dict[str, dict[str, Any]] = {
    "claim": {
        "judge_rule": "label",
        "judge": {v: v for v in _CLAIM_VERDICTS},
        "human_rule": "label",
        "human": {v: v for v in _CLAIM_VERDICTS},
        "labels": list(_CLAIM_VERDICTS),
    },
    "response": {
        "judge_rule": "all_supported",
        "judge": {"attributable": "attributable", "not_attributable": "not_attributable"},
        "human_rule": "label",
        "human": {
            # BEGIN (Dziri et al. 2022) labels
            "Fully attributable": "attributable",
            "Not fully attributable": "not_attributable",
            # the calibrated labels themselves
            "attributable": "attributable",
            "not_attributable": "not_attributable",
            # seed 003 whole-answer labels: only YES is fully supported
            "YES": "attributable",
            "PARTIAL": "not_attributable",
            "NO": "not_attributable",
        },
        "labels": ["attributable", "not_attributable"],
    },
}

#: Gate metrics whose values come from a judge (a threshold on one requires a calibration).
JUDGE_BASED_METRIC_PREFIXES = ("faithfulness", "answer_relevance", "context_relevance", "correctness")

#: Columns of the calibration history table (one row per calibration of one judge key and level).
HISTORY_SCHEMA = SCHEMAS["calibration_history"]

#: Columns added after the first release; older history files lack them (read as these defaults).
_ADDED_DEFAULTS: dict[str, Any] = {"n_stale_labels": 0, "stale_labels": "[]", "labellers": "[]", "human_kappa": None,
                                   "human_kappa_reason": None, "human_kappa_n": 0, "human_pairs": "[]"}


@dataclass(frozen=True)
class CalibrationResult:
    """Agreement of one judge key with human labels at one level.

    Fields: ``level`` ("claim" / "response"); ``judge``, ``judge_model``, ``prompt_sha256`` (the
    judge key); ``n`` (items labelled by both, after exclusions); ``kappa`` (Cohen's kappa in
    [-1, 1] or None) and ``kappa_reason`` (None when kappa is a number); ``agreement`` (share of
    items with equal labels, in [0, 1], None when n = 0) with its 95% Wilson interval
    ``agreement_ci_low`` / ``agreement_ci_high``; ``labels`` (display order) and ``confusion``
    (``confusion[i][j]`` = items labelled ``labels[i]`` by people and ``labels[j]`` by the judge);
    ``per_label`` ({label: {"precision", "recall", "support", "predicted"}}, people as the truth,
    precision/recall None when undefined); ``mapping`` (resolved, see module docstring);
    ``n_human_only`` / ``n_judge_only`` (items on one side only); ``n_excluded_human`` /
    ``n_excluded_judge`` (dropped: null or None-mapped label, JUDGE_ERROR); ``calibrated_at``
    (ISO string or None); ``source`` (where the human labels came from, or None);
    ``n_stale_labels`` / ``stale_labels`` (hand labels left out because their item changed since,
    each {system, question_id, claim_id, annotator, line}); ``labellers`` (annotator names);
    ``human_kappa`` / ``human_kappa_reason`` / ``human_kappa_n`` / ``human_pairs`` (agreement
    between people, :func:`inter_labeller_agreement`).
    """

    level: str
    judge: str | None
    judge_model: str | None
    prompt_sha256: str | None
    n: int
    kappa: float | None
    kappa_reason: str | None
    agreement: float | None
    agreement_ci_low: float | None
    agreement_ci_high: float | None
    labels: list[str]
    confusion: list[list[int]]
    per_label: dict[str, dict[str, Any]]
    mapping: dict[str, Any]
    n_human_only: int = 0
    n_judge_only: int = 0
    n_excluded_human: int = 0
    n_excluded_judge: int = 0
    calibrated_at: str | None = None
    source: str | None = None
    n_stale_labels: int = 0
    stale_labels: list[dict[str, Any]] = field(default_factory=list)
    labellers: list[str] = field(default_factory=list)
    human_kappa: float | None = None
    human_kappa_reason: str | None = None
    human_kappa_n: int = 0
    human_pairs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def key(self) -> tuple[str | None, str | None, str | None]:
        """The judge key ``(judge, judge_model, prompt_sha256)``."""
        return self.judge, self.judge_model, self.prompt_sha256

    def to_row(self) -> dict[str, Any]:
        """One :data:`HISTORY_SCHEMA` row (lists and dicts as JSON strings)."""
        return {
            "calibrated_at": self.calibrated_at, "level": self.level, "judge": self.judge,
            "judge_model": self.judge_model, "prompt_sha256": self.prompt_sha256, "n": self.n,
            "kappa": self.kappa, "kappa_reason": self.kappa_reason, "agreement": self.agreement,
            "agreement_ci_low": self.agreement_ci_low, "agreement_ci_high": self.agreement_ci_high,
            "labels": json.dumps(self.labels, ensure_ascii=False),
            "confusion": json.dumps(self.confusion),
            "per_label": json.dumps(self.per_label, ensure_ascii=False, sort_keys=True),
            "mapping": json.dumps(self.mapping, ensure_ascii=False, sort_keys=True),
            "n_human_only": self.n_human_only, "n_judge_only": self.n_judge_only,
            "n_excluded_human": self.n_excluded_human, "n_excluded_judge": self.n_excluded_judge,
            "source": self.source,
            "n_stale_labels": self.n_stale_labels,
            "stale_labels": json.dumps(self.stale_labels, ensure_ascii=False),
            "labellers": json.dumps(self.labellers, ensure_ascii=False),
            "human_kappa": self.human_kappa, "human_kappa_reason": self.human_kappa_reason,
            "human_kappa_n": self.human_kappa_n,
            "human_pairs": json.dumps(self.human_pairs, ensure_ascii=False),
        }


def resolve_mapping(mapping: Mapping[str, Any] | None, level: str) -> dict[str, Any]:
    """The mapping actually used: :data:`DEFAULT_MAPPINGS` for ``level`` overridden key by key.

    Input: ``mapping`` (None, or a dict with any of judge_rule, judge, human_rule, human, labels;
    a given ``judge``/``human`` dict replaces the default one entirely), ``level`` in
    :data:`LEVELS`. Output: a new dict with all five keys; ``labels`` defaults to the mapped
    values in order of first appearance (judge dict, then human dict) when the dicts are given
    but ``labels`` is not. Raises ValueError for an unknown level, key or rule (``"label"`` is
    the only rule for the judge at claim level; the judge has no per-response label at response
    level, so ``"label"`` is refused there), a non-dict label map, or a mapped label missing from
    ``labels``.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    out = copy.deepcopy(DEFAULT_MAPPINGS[level])
    given = dict(mapping or {})
    unknown = set(given) - set(out)
    if unknown:
        raise ValueError(f"calibration mapping has unknown keys {sorted(unknown)}; allowed {sorted(out)}")
    out.update(copy.deepcopy(given))
    if ("judge" in given or "human" in given) and "labels" not in given:
        seen: list[str] = []
        for side in ("judge", "human"):
            for v in (out[side] or {}).values():
                if v is not None and v not in seen:
                    seen.append(v)
        out["labels"] = seen
    for side in ("judge", "human"):
        rule = out[f"{side}_rule"]
        if rule not in _RULES[level] or (side == "judge" and level == "response" and rule == "label"):
            allowed = [r for r in _RULES[level] if not (side == "judge" and level == "response" and r == "label")]
            raise ValueError(f"calibration mapping {side}_rule {rule!r} is not allowed at level {level!r}; "
                             f"use one of {allowed}")
        if not isinstance(out[side], Mapping):
            raise ValueError(f"calibration mapping {side!r} must be a dict raw label -> label, got {out[side]!r}")
        out[side] = {str(k): (None if v is None else str(v)) for k, v in out[side].items()}
        stray = sorted({v for v in out[side].values() if v is not None} - set(out["labels"]))
        if stray:
            raise ValueError(f"calibration mapping {side!r} maps to {stray}, not in labels {out['labels']}")
    out["labels"] = [str(x) for x in out["labels"]]
    return out


def read_human_labels(path: str | Path, level: str = "claim") -> pl.DataFrame:
    """Read a human label file: CSV (``.csv``), TSV (``.tsv``), JSON Lines (``.jsonl``/``.ndjson``)
    or Parquet (``.parquet``).

    Needed columns: system, question_id, verdict (the human label, any string), and claim_id at
    claim level. Output: a frame with those columns (claim_id too when present) cast to Utf8,
    other columns dropped. Raises InputError naming the file (and field) when the file is
    missing, has an unknown extension, cannot be parsed, or lacks a needed column.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError("human label file does not exist", path=str(p))
    suffix = p.suffix.lower()
    try:
        if suffix == ".csv":
            df = pl.read_csv(p, infer_schema_length=0)
        elif suffix == ".tsv":
            df = pl.read_csv(p, separator="\t", infer_schema_length=0, quote_char=None)
        elif suffix in (".jsonl", ".ndjson"):
            df = pl.read_ndjson(p)
        elif suffix == ".parquet":
            df = pl.read_parquet(p)
        else:
            raise InputError(f"unknown extension {suffix!r}: expected .csv, .tsv, .jsonl, .ndjson or .parquet",
                             path=str(p))
    except InputError:
        raise
    except Exception as exc:  # polars raises several error types for a malformed file
        raise InputError(f"cannot read human labels: {exc}", path=str(p)) from exc
    needed = ["system", "question_id", "verdict"] + (["claim_id"] if level == "claim" else [])
    for col in needed:
        if col not in df.columns:
            raise InputError(f"missing column (have {df.columns})", path=str(p), field=col)
    keep = needed + (["claim_id"] if level != "claim" and "claim_id" in df.columns else [])
    return df.select([pl.col(c).cast(pl.Utf8) for c in keep])


#: Columns of :func:`read_label_file`.
LABEL_FILE_SCHEMA = pl.Schema({"system": pl.Utf8, "question_id": pl.Utf8, "claim_id": pl.Utf8, "verdict": pl.Utf8,
                               "annotator": pl.Utf8, "labelled_at": pl.Utf8, "content_sha256": pl.Utf8,
                               "note": pl.Utf8, "line": pl.Int64})


def read_label_file(path: str | Path, level: str = "claim", mapping: Mapping[str, Any] | None = None) -> pl.DataFrame:
    """Read and validate a hand-label file for :func:`calibrate`, every error naming file, line and field.

    Input: a .csv, .tsv, .jsonl/.ndjson or .parquet file in the human-label format (see
    ``core/judges/human.py``: claim level needs system, question_id, claim_id, claim, verdict;
    response level system, question_id, verdict); ``level``; ``mapping`` (its ``human`` dict gives
    the raw labels allowed). Output: :data:`LABEL_FILE_SCHEMA` frame, one row per label, file order
    (``line`` = the line, or Parquet row, it came from). Raises InputError (file, line, field) for
    a missing file or column, a blank required field, a verdict the mapping does not know, a
    duplicate item for the same annotator, a malformed content hash; ValueError for a bad mapping.
    """
    from rag_eval_pipeline.core.judges.human import (
        read_human_label_rows,
        read_response_label_rows,
    )

    m = resolve_mapping(mapping, level)
    allowed = list(m["human"])
    if level == "claim":
        rows, _ = read_human_label_rows(path)
        for r in rows:
            if r["verdict"] not in allowed:
                raise InputError(f"verdict {r['verdict']!r} is not one of {allowed} (the calibration mapping's "
                                 "human labels)", path=str(path), line=r["line"], field="verdict")
    else:
        rows, _ = read_response_label_rows(path, allowed if m["human_rule"] == "label" else None)
    return pl.DataFrame([{c: r.get(c) for c in LABEL_FILE_SCHEMA} for r in rows], schema=LABEL_FILE_SCHEMA)


def _map(labels: pl.DataFrame, side: str, table: dict[str, str | None], keys: list[str]) -> tuple[pl.DataFrame, int]:
    """Apply a raw → calibrated label dict; returns (mapped frame, items dropped)."""
    raw = labels["raw"].to_list()
    unknown = sorted({r for r in raw if r is not None and r not in table})
    if unknown:
        raise InputError(f"{side} label(s) {unknown[:10]} are not in the calibration mapping "
                         f"{sorted(table)}; add them (None to leave such items out)", field="verdict")
    mapped = labels.with_columns(
        pl.col("raw").replace_strict(list(table), list(table.values()), default=None, return_dtype=pl.Utf8)
        .alias("label"))
    kept = mapped.filter(pl.col("label").is_not_null())
    return kept.select(*keys, "label"), mapped.height - kept.height


def _per_response(df: pl.DataFrame, rule: str, keys: list[str], side: str) -> pl.DataFrame:
    """Claim rows → one raw label per response by ``rule``; JUDGE_ERROR anywhere → raw null."""
    def label(vs: list[str]) -> str | None:
        if any(v == "JUDGE_ERROR" or v is None for v in vs):
            return None
        if rule == "all_supported":
            return "attributable" if vs and all(v == "SUPPORTED" for v in vs) else "not_attributable"
        return holistic_label(vs)

    grouped = df.group_by(keys, maintain_order=True).agg(pl.col("verdict"))
    raws = [label(vs) for vs in grouped["verdict"].to_list()]
    bad = sorted({v for vs in grouped["verdict"].to_list() for v in vs
                  if v is not None and v not in _CLAIM_VERDICTS + ("JUDGE_ERROR",)})
    if bad:
        raise InputError(f"{side} rule {rule!r} needs claim verdicts {_CLAIM_VERDICTS}, got {bad[:10]}",
                         field="verdict")
    return grouped.select(keys).with_columns(pl.Series("raw", raws, dtype=pl.Utf8))


def _one_per_item(df: pl.DataFrame, keys: list[str], side: str) -> pl.DataFrame:
    dup = df.group_by(keys).len().filter(pl.col("len") > 1)
    if dup.height:
        raise InputError(f"{side} labels: {dup.height} item(s) labelled more than once, e.g. "
                         f"{dup.select(keys).head(3).to_dicts()}", field=", ".join(keys))
    return df.select(*keys, pl.col("verdict").alias("raw"))


def _labels_for(df: pl.DataFrame, rule: str, keys: list[str], side: str) -> pl.DataFrame:
    if rule == "label":
        return _one_per_item(df, keys, side)
    return _per_response(df, rule, keys, side)


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
    Source: seed 004 (calibrate against ~50 hand labels); J. Cohen (1960) for kappa;
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
    human_raw = _labels_for(hl, m["human_rule"], hkeys, "human")
    null_h = human_raw.filter(pl.col("raw").is_null()).height
    human_mapped, drop_h = _map(human_raw.filter(pl.col("raw").is_not_null()), "human", m["human"], hkeys)

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
    low, high = wilson_interval(agree, n)
    kappa, reason = _kappa_or_reason(h, j, labels, "people", "the judge")
    return CalibrationResult(kappa=kappa, kappa_reason=reason, agreement=agree / n, agreement_ci_low=low,
                             agreement_ci_high=high, confusion=confusion, per_label=per_label, **common)


def _kappa_or_reason(a: list[str], b: list[str], labels: list[str], who_a: str, who_b: str
                     ) -> tuple[float | None, str | None]:
    """Cohen's kappa, or None with the reason when it measures nothing (see module docstring)."""
    if len(set(a)) == 1 and who_a == "people":
        return None, (f"people gave every item the label {a[0]!r}: kappa undefined (no variation to agree on); "
                      "label a sample with both outcomes")
    if len(set(a)) == 1:
        return None, f"{who_a} gave every item the label {a[0]!r}: kappa undefined (a constant rater)"
    if len(set(b)) == 1 and who_b == "the judge":
        return None, (f"the judge gave every item the label {b[0]!r}: kappa undefined (a constant rater has kappa 0 "
                      "whatever its quality)")
    if len(set(b)) == 1:
        return None, f"{who_b} gave every item the label {b[0]!r}: kappa undefined (a constant rater)"
    kappa = cohen_kappa(a, b, labels)
    if kappa is None:  # pragma: no cover - p_e == 1 needs both sides constant, handled above
        return None, "kappa undefined (chance agreement is 1)"
    return kappa, None


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
    judge_raw = _labels_for(jl, m["judge_rule"], item, "judge")
    n_err_resp = judge_raw.filter(pl.col("raw").is_null()).height
    judge_raw = judge_raw.filter(pl.col("raw").is_not_null())
    judge_mapped, drop_j = _map(judge_raw, "judge", m["judge"], item)
    return judge_mapped, n_err_claims + n_err_resp + drop_j


def _fresh_human_labels(human_labels: pl.DataFrame, need: list[str], item: list[str],
                        current_hashes: Mapping[tuple[str, ...], str] | None
                        ) -> tuple[pl.DataFrame, list[dict[str, Any]]]:
    """(labels with an ``annotator`` column, "" when unnamed, minus stale ones; the stale ones listed)."""
    extra = [c for c in ("annotator", "content_sha256", "line") if c in human_labels.columns]
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


def inter_labeller_agreement(human_mapped: pl.DataFrame, item: Sequence[str], labels: Sequence[str]
                             ) -> dict[str, Any]:
    """Agreement between people on the items two or more of them labelled.

    Input: one calibrated ``label`` per (item, ``annotator``) (columns ``item`` + annotator +
    label), the label set. Output: {"labellers": sorted names, "human_kappa": Cohen's kappa for two
    people, Light's kappa (the mean of the pairwise Cohen's kappas, R. J. Light 1971) for more, or
    None, "human_kappa_reason": why None, "human_kappa_n": items labelled by at least two people,
    "human_pairs": [{a, b, n, kappa, agreement, reason}] per pair with common items}. A pair's
    kappa is None (with the reason) when one person gave every common item the same label.
    Source: J. Cohen (1960); R. J. Light, Psychological Bulletin 76(5), 1971. Never raises.
    """
    item = list(item)
    names = sorted(set(human_mapped["annotator"].to_list())) if human_mapped.height else []
    out: dict[str, Any] = {"labellers": names, "human_kappa": None, "human_kappa_n": 0, "human_pairs": []}
    if len(names) < 2:
        out["human_kappa_reason"] = ("one labeller only: agreement between people needs two people labelling the "
                                     "same items" if names else "no hand labels")
        return out
    by_person = {a: {tuple(r[:-1]): r[-1] for r in human_mapped.filter(pl.col("annotator") == a)
                     .select(*item, "label").rows()} for a in names}
    counts: dict[tuple, int] = {}
    for d in by_person.values():
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    out["human_kappa_n"] = sum(1 for c in counts.values() if c >= 2)
    kappas = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(by_person[a]) & set(by_person[b]))
            if not common:
                continue
            la, lb = [by_person[a][k] for k in common], [by_person[b][k] for k in common]
            kappa, reason = _kappa_or_reason(la, lb, list(labels), repr(a), repr(b))
            agree = sum(x == y for x, y in zip(la, lb)) / len(common)
            out["human_pairs"].append({"a": a, "b": b, "n": len(common), "kappa": kappa, "agreement": agree,
                                       "reason": reason})
            if kappa is not None:
                kappas.append(kappa)
    if not out["human_pairs"]:
        out["human_kappa_reason"] = "no item is labelled by two people"
    elif not kappas:
        out["human_kappa_reason"] = "; ".join(f"{p['a']} vs {p['b']}: {p['reason']}" for p in out["human_pairs"])
    else:
        out["human_kappa"] = sum(kappas) / len(kappas)
        out["human_kappa_reason"] = None
    return out


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


def results_to_frame(results: Iterable[CalibrationResult]) -> pl.DataFrame:
    """Calibration results as a :data:`HISTORY_SCHEMA` frame, one row per result, in order."""
    return pl.DataFrame([r.to_row() for r in results], schema=HISTORY_SCHEMA)


def results_from_frame(df: pl.DataFrame | None) -> list[CalibrationResult]:
    """Inverse of :func:`results_to_frame` (None or an empty frame → ``[]``).

    Raises SchemaError when a :data:`HISTORY_SCHEMA` column is missing.
    """
    if df is None or df.height == 0:
        return []
    miss = [c for c in HISTORY_SCHEMA if c not in df.columns and c not in _ADDED_DEFAULTS]
    if miss:
        raise SchemaError(f"calibration history: missing columns {miss}")
    out = []
    for r in df.iter_rows(named=True):
        r = {**_ADDED_DEFAULTS, **r}
        out.append(CalibrationResult(
            level=r["level"], judge=r["judge"], judge_model=r["judge_model"], prompt_sha256=r["prompt_sha256"],
            n=int(r["n"] or 0), kappa=r["kappa"], kappa_reason=r["kappa_reason"], agreement=r["agreement"],
            agreement_ci_low=r["agreement_ci_low"], agreement_ci_high=r["agreement_ci_high"],
            labels=json.loads(r["labels"] or "[]"), confusion=json.loads(r["confusion"] or "[]"),
            per_label=json.loads(r["per_label"] or "{}"), mapping=json.loads(r["mapping"] or "{}"),
            n_human_only=int(r["n_human_only"] or 0), n_judge_only=int(r["n_judge_only"] or 0),
            n_excluded_human=int(r["n_excluded_human"] or 0), n_excluded_judge=int(r["n_excluded_judge"] or 0),
            calibrated_at=r["calibrated_at"], source=r["source"],
            n_stale_labels=int(r["n_stale_labels"] or 0), stale_labels=json.loads(r["stale_labels"] or "[]"),
            labellers=json.loads(r["labellers"] or "[]"), human_kappa=r["human_kappa"],
            human_kappa_reason=r["human_kappa_reason"], human_kappa_n=int(r["human_kappa_n"] or 0),
            human_pairs=json.loads(r["human_pairs"] or "[]"),
        ))
    return out


#: Columns of :func:`calibration_table`.
TABLE_SCHEMA = SCHEMAS["judge_calibration"]


def _latest(results: list[CalibrationResult]) -> CalibrationResult:
    # stable: among equal timestamps (or none) the later entry of the list wins
    order = sorted(range(len(results)), key=lambda i: (results[i].calibrated_at or "", i))
    return results[order[-1]]


def calibration_table(
    results: Iterable[CalibrationResult],
    current_keys: Iterable[Sequence[str | None]] | None = None,
    levels: Iterable[str] | None = None,
) -> pl.DataFrame:
    """The calibration in force for each current judge key and level, flagged stale or missing.

    Inputs: ``results`` (calibrations, e.g. the history plus this run's); ``current_keys``
    (the (judge, judge_model, prompt_sha256) keys producing labels now; None = every key in
    ``results``); ``levels`` (None = the levels in ``results``, or ("claim",) when there is none).
    Output: :data:`TABLE_SCHEMA` frame, one row per current key × level:

    1. the latest calibration (by ``calibrated_at``, then list order) of exactly that key with
       n > 0 → ``stale`` False, ``missing`` False;
    2. else the latest calibration with n > 0 at that level for another key → its figures, the
       ``calibrated_*`` columns naming the key it was made for, ``stale`` True: the judge, model
       or prompt changed since (seed 004: recalibrate on any such change);
    3. else the latest calibration of that key with n = 0 → ``stale`` False, ``missing`` False,
       kappa null with its reason (the hand labels do not cover the items judged);
    4. else nulls with ``missing`` True.

    Never raises for valid results.
    """
    results = list(results)
    keys = ([tuple(k) for k in current_keys] if current_keys is not None
            else sorted({r.key for r in results}, key=lambda k: tuple(str(x) for x in k)))
    lv = list(levels) if levels is not None else (sorted({r.level for r in results}) or ["claim"])
    rows = []
    for level in lv:
        at_level = [r for r in results if r.level == level]
        for key in keys:
            same = [r for r in at_level if r.key == key]
            same_n = [r for r in same if r.n > 0]
            other_n = [r for r in at_level if r.key != key and r.n > 0]
            stale = False
            if same_n:
                chosen = _latest(same_n)
            elif other_n:
                chosen, stale = _latest(other_n), True
            else:
                chosen = _latest(same) if same else None
            row: dict[str, Any] = {"level": level, "judge": key[0], "judge_model": key[1], "prompt_sha256": key[2],
                                   "stale": stale, "missing": chosen is None}
            if chosen is not None:
                d = chosen.to_row()
                row.update({k: d[k] for k in ("calibrated_at", "n", "kappa", "kappa_reason", "agreement",
                                              "agreement_ci_low", "agreement_ci_high", "labels", "confusion",
                                              "per_label", "mapping", "n_stale_labels", "stale_labels",
                                              "labellers", "human_kappa", "human_kappa_reason", "human_kappa_n",
                                              "human_pairs")})
                row.update(calibrated_judge=chosen.judge, calibrated_judge_model=chosen.judge_model,
                           calibrated_prompt_sha256=chosen.prompt_sha256)
            else:
                row["kappa_reason"] = "no calibration against human labels exists for this judge"
            rows.append(row)
    return pl.DataFrame(rows, schema=TABLE_SCHEMA) if rows else pl.DataFrame(schema=TABLE_SCHEMA)


def confusion_markdown(labels: Sequence[str], confusion: Sequence[Sequence[int]]) -> str:
    """A Markdown table of a confusion matrix: rows = human label, columns = judge label.

    Inputs: ``labels`` (k names) and a k × k matrix of counts. Output: a Markdown string
    (header, separator, k rows). Raises ValueError when the matrix is not k × k.
    """
    if len(confusion) != len(labels) or any(len(r) != len(labels) for r in confusion):
        raise ValueError(f"confusion matrix must be {len(labels)} x {len(labels)}")
    lines = ["| human \\ judge | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
    for lab, r in zip(labels, confusion):
        lines.append(f"| {lab} | " + " | ".join(str(x) for x in r) + " |")
    return "\n".join(lines)


def judge_based_metrics(metrics: Iterable[str]) -> list[str]:
    """The metric names (e.g. of gate thresholds) whose values come from a judge.

    Input: metric names. Output: those starting with one of
    :data:`JUDGE_BASED_METRIC_PREFIXES` (faithfulness*, answer_relevance*, context_relevance*,
    correctness*), sorted and deduplicated. Never raises.
    """
    return sorted({m for m in metrics if isinstance(m, str) and m.startswith(JUDGE_BASED_METRIC_PREFIXES)})


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
    judge_raw = _labels_for(jl, m["judge_rule"], item, "judge").filter(pl.col("raw").is_not_null())
    judge_mapped, _ = _map(judge_raw, "judge", m["judge"], item)
    hl = human_labels.select("system", "question_id", "verdict").with_columns(
        pl.col(c).cast(pl.Utf8) for c in item + ["verdict"])
    hl = hl.unique(subset=item, keep="first", maintain_order=True)  # several people: the first label of each answer
    human_raw = _labels_for(hl, m["human_rule"], item, "human").filter(pl.col("raw").is_not_null())
    human_mapped, _ = _map(human_raw, "human", m["human"], item)
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
