"""Judge trust: calibration against human labels, and the judge's own repeat-to-repeat noise.

``judge_calibration`` compares the judge's labels with hand labels named in the configuration
(section ``calibration``: ``human_labels`` path relative to the config file, ``kappa_floor``
(default 0.4), ``mapping``, ``level`` ("claim" default, or "response")), appends each result to
``calibration_history.parquet`` in the table store, and returns the calibration in force for each
current judge key. The blocking check ``judge_calibrated_above_floor`` stops promotion when the
judge's kappa is under the floor, null, missing or stale (seed ``004_292fd69c3d96947d.txt``: a
judge not calibrated against people measures nothing you can trust; recalibrate when the judge
model or prompt changes). ``judge_variance`` reports flip rates and the minimum resolution from
repeated judging.
"""


import datetime as dt
import json

import dagster as dg
import polars as pl

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.metrics.calibration import (
    LEVELS,
    calibrate_all,
    calibration_table,
    confusion_markdown,
    judge_based_metrics,
    read_human_labels,
    results_from_frame,
    results_to_frame,
)
from rag_eval_pipeline.core.metrics.variance import JUDGE_KEY, RESOLUTION_RULE, resolution_from_table, variance_table
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore

HISTORY_FILE = "calibration_history.parquet"
DEFAULT_KAPPA_FLOOR = 0.4


def _section(settings: EvalSettings) -> dict | None:
    """The ``calibration`` section of the configuration, or None when absent or empty."""
    section = settings.config.raw.get("calibration")
    if section in (None, {}):
        return None
    if not isinstance(section, dict):
        raise ConfigError(f"{settings.config.path}: calibration must be a mapping, got {section!r}")
    return section


def _floor(section: dict | None, settings: EvalSettings) -> float:
    value = (section or {}).get("kappa_floor", DEFAULT_KAPPA_FLOOR)
    try:
        floor = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{settings.config.path}: calibration.kappa_floor must be a number, got {value!r}") from None
    if not -1.0 <= floor <= 1.0:
        raise ConfigError(f"{settings.config.path}: calibration.kappa_floor must lie in [-1, 1], got {floor}")
    return floor


def _level(section: dict | None, settings: EvalSettings) -> str:
    level = (section or {}).get("level", "claim")
    if level not in LEVELS:
        raise ConfigError(f"{settings.config.path}: calibration.level must be one of {LEVELS}, got {level!r}")
    return level


def _load_human_labels(path, level: str) -> pl.DataFrame:
    """Hand labels for ``level``: claim labels through ``core.judges.human.load_human_labels`` (the
    validated human-label format: claim text, verdicts, quotes), response labels (any label set,
    e.g. BEGIN's) through ``core.metrics.calibration.read_human_labels``."""
    if level == "claim":
        try:
            from rag_eval_pipeline.core.judges.human import load_human_labels
        except ImportError:  # pragma: no cover - the human-label module ships with the package
            return read_human_labels(path, level)
        return load_human_labels(path)
    return read_human_labels(path, level)


def _current_keys(judge_labels: pl.DataFrame) -> list[tuple]:
    return sorted(judge_labels.select(*JUDGE_KEY).unique().rows(), key=lambda k: tuple(str(x) for x in k))


def _fmt(v, spec: str = ".3f") -> str:
    return "null" if v is None else format(v, spec)


def calibration_markdown(table: pl.DataFrame) -> str:
    """Markdown summary of a calibration table: one line per judge key and level, then each confusion matrix."""
    lines = ["| level | judge | model | prompt | n | kappa | agreement | stale | missing |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in table.iter_rows(named=True):
        lines.append(f"| {r['level']} | {r['judge']} | {r['judge_model']} | {(r['prompt_sha256'] or '')[:12]} | "
                     f"{r['n'] if r['n'] is not None else 'null'} | {_fmt(r['kappa'])} | {_fmt(r['agreement'])} | "
                     f"{r['stale']} | {r['missing']} |")
    for r in table.iter_rows(named=True):
        if r["confusion"]:
            lines += ["", f"**{r['level']} / {r['judge']} / {r['judge_model']}** (rows = people, columns = judge)"
                      + (f": kappa null - {r['kappa_reason']}" if r["kappa"] is None else ""), "",
                      confusion_markdown(json.loads(r["labels"]), json.loads(r["confusion"]))]
    return "\n".join(lines)


@dg.asset(group_name="judging", kinds={"polars", "parquet"})
def judge_calibration(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableStore,
                      judge_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Agreement (Cohen's kappa, raw agreement, confusion) of each current judge key with the hand labels.

    One row per current (judge, judge_model, prompt_sha256) and level; ``stale`` when the only
    calibration found was made for another judge key, ``missing`` when there is none. Each new
    result is appended to ``calibration_history.parquet`` in the table store.
    """
    section = _section(settings)
    level = _level(section, settings)
    history_df = store.read(HISTORY_FILE)
    history = results_from_frame(history_df)
    current = _current_keys(judge_labels)
    fresh = []
    source = None
    if section is not None:
        if not section.get("human_labels"):
            raise ConfigError(f"{settings.config.path}: calibration.human_labels is required "
                              "in the calibration section")
        path = settings.config.resolve(section["human_labels"])
        source = str(path)
        human = _load_human_labels(path, level)
        now = dt.datetime.now(dt.timezone.utc).isoformat()
        fresh = calibrate_all(human, judge_labels, section.get("mapping"), level, calibrated_at=now, source=source)
        if fresh:
            new_rows = results_to_frame(fresh)
            updated = new_rows if history_df is None else pl.concat([history_df, new_rows], how="vertical_relaxed")
            store.write(updated, HISTORY_FILE)
    table = calibration_table(history + fresh, current, levels=[level])
    md: dict = {
        "configured": section is not None,
        "level": level,
        "kappa_floor": _floor(section, settings),
        "human_labels": source or "none (no calibration section)",
        "history_rows": (0 if history_df is None else history_df.height) + len(fresh),
        "calibration": dg.MetadataValue.md(calibration_markdown(table)),
        "stale": dg.MetadataValue.json(table["stale"].to_list()),
        "missing": dg.MetadataValue.json(table["missing"].to_list()),
    }
    if table.height == 1:
        row = table.row(0, named=True)
        for name in ("kappa", "agreement"):
            md[name] = dg.MetadataValue.null() if row[name] is None else float(row[name])
        md["n"] = dg.MetadataValue.null() if row["n"] is None else int(row["n"])
        if row["kappa_reason"]:
            md["kappa_reason"] = row["kappa_reason"]
        if row["confusion"]:
            md["confusion"] = dg.MetadataValue.md(confusion_markdown(json.loads(row["labels"]),
                                                                     json.loads(row["confusion"])))
    if section is not None and level == "response" and judge_labels.height:
        # Prediction-powered estimates of the attributable rate: the judge's rate corrected by its
        # measured bias on the hand-labelled answers (null with a reason when a set is empty).
        from rag_eval_pipeline.core.metrics.calibration import ppi_rates

        latest = judge_labels.filter(pl.struct(*JUDGE_KEY) == pl.struct(*JUDGE_KEY).last())
        ppi = ppi_rates(human, latest, section.get("mapping"))
        store.write(ppi, "ppi_estimates.parquet")
        lines = ["| system | judge rate | PPI estimate | 95% CI | labelled | unlabelled | note |", "|---|---|---|---|---|---|---|"]
        for r in ppi.iter_rows(named=True):
            f = lambda v: "null" if v is None else f"{v:.3f}"  # noqa: E731
            ci = "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]"
            lines.append(f"| {r['system']} | {f(r['judge_rate'])} | {f(r['estimate'])} | {ci} | {r['n_labelled']} | "
                         f"{r['n_unlabelled']} | {r['reason'] or ''} |")
        md["ppi_attributable_rate"] = dg.MetadataValue.md("\n".join(lines))
    for r in fresh:
        if r.n and (r.n_human_only or r.n_judge_only):
            context.log.info(f"calibration of {r.judge}/{r.judge_model}: {r.n} items compared, "
                             f"{r.n_human_only} hand-labelled items without a judge label, "
                             f"{r.n_judge_only} judged items without a hand label")
    return dg.Output(table, metadata=md)


@dg.asset_check(asset=judge_calibration, blocking=True,
                description="The judge agrees with hand labels (Cohen's kappa >= calibration.kappa_floor) for its "
                            "current model and prompt. Blocking (ERROR) whenever a gate is on a judge-based metric; "
                            "a warning otherwise.")
def judge_calibrated_above_floor(settings: EvalSettings, judge_calibration: pl.DataFrame) -> dg.AssetCheckResult:
    cfg = settings.config
    section = _section(settings)
    gated = judge_based_metrics(t.metric for t in cfg.thresholds)
    if section is None:
        if gated:
            return dg.AssetCheckResult(passed=False, metadata={
                "reason": "calibration is required: gates are set on judge-based metrics "
                          f"{gated} but the configuration has no calibration section (human_labels, kappa_floor)",
                "judge_based_gates": dg.MetadataValue.json(gated),
            })
        return dg.AssetCheckResult(passed=True, metadata={"reason": "no judge-based gate configured"})
    floor = _floor(section, settings)
    failures = []
    for r in judge_calibration.iter_rows(named=True):
        who = f"{r['level']} {r['judge']}/{r['judge_model']}/{(r['prompt_sha256'] or '')[:12]}"
        if r["missing"]:
            failures.append(f"{who}: no calibration exists")
        elif r["stale"]:
            failures.append(f"{who}: stale, calibrated for {r['calibrated_judge']}/{r['calibrated_judge_model']}/"
                            f"{(r['calibrated_prompt_sha256'] or '')[:12]}; recalibrate after a model or prompt change")
        elif r["kappa"] is None:
            failures.append(f"{who}: kappa null ({r['kappa_reason']})")
        elif r["kappa"] < floor:
            failures.append(f"{who}: kappa {r['kappa']:.3f} < floor {floor}")
    if judge_calibration.height == 0:
        failures.append("no judge labels to calibrate")
    # A judge below the floor blocks only when a gate rests on its numbers; otherwise the failure is a
    # warning, visible in the UI and the report, so a night is not lost to an ungated instrument.
    severity = dg.AssetCheckSeverity.ERROR if gated else dg.AssetCheckSeverity.WARN
    kappas = [r["kappa"] for r in judge_calibration.iter_rows(named=True) if r["kappa"] is not None]
    said = ("; ".join(failures) + (". Blocks promotion: a gate is on a judge-based metric" if gated else
                                   ". A warning only: no gate is on a judge-based metric")) if failures else None
    return dg.AssetCheckResult(passed=not failures, severity=severity, description=said, metadata={
        # the lowest current kappa as a number, so the UI plots it over runs beside the floor
        "kappa": float(min(kappas)) if kappas else dg.MetadataValue.null(),
        "blocks_promotion": bool(gated and failures),
        "kappa_floor": floor,
        "failures": dg.MetadataValue.json(failures),
        "kappas": dg.MetadataValue.json(judge_calibration.select("level", "judge", "judge_model", "kappa", "n",
                                                                 "stale", "missing").to_dicts()),
        "judge_based_gates": dg.MetadataValue.json(gated),
    })


@dg.asset(group_name="judging", kinds={"polars", "parquet"})
def judge_variance(context: dg.AssetExecutionContext, judge_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Per system and judge key: repeats, item flip rate, spread of per-repeat faithfulness, minimum resolution."""
    table = variance_table(judge_labels)
    resolution = resolution_from_table(table)
    max_repeats = int(table["n_repeats"].max() or 0) if table.height else 0
    lines = ["| system | judge | repeats | flipped / items | flip rate | faithfulness min-max | resolution |",
             "|---|---|---|---|---|---|---|"]
    for r in table.iter_rows(named=True):
        lines.append(f"| {r['system']} | {r['judge']}/{r['judge_model']} | {r['n_repeats']} | {r['n_flipped']}/"
                     f"{r['n_items']} | {_fmt(r['flip_rate'])} | {_fmt(r['faithfulness_min'])}-"
                     f"{_fmt(r['faithfulness_max'])} | {_fmt(r['resolution'])} |")
    md = {"max_repeats": max_repeats, "rule": RESOLUTION_RULE, "variance": dg.MetadataValue.md("\n".join(lines))}
    if resolution:
        md["minimum_resolution"] = dg.MetadataValue.json(resolution)
    else:
        md["minimum_resolution"] = "single repeat: resolution unknown"
    return dg.Output(table, metadata=md)
