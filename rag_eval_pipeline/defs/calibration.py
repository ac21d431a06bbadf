"""Judge trust: calibration against human labels, and the judge's own repeat-to-repeat noise.

``judge_calibration`` compares the judge's labels with hand labels named in the configuration
(``core.config.CalibrationConfig``: ``human_labels``, ``kappa_floor`` (default 0.4), ``mapping``,
``level`` ("claim" default, or "response"), all checked when the configuration loads), appends each result to
``calibration_history.parquet`` in the suite's folder (its own record, read back by the next run), and
returns the calibration in force for each current judge key. It reads ``judge_labels`` and, to tell
which hand labels are stale (the item changed since it was labelled), ``rag_runs``, ``golden_set`` and
``corpus_snapshot``: all declared inputs. The hand-label file is not an asset of a run: it is declared
as the external asset ``<suite>/calibration_labels``, so the lineage shows it. The blocking check
``judge_calibrated_above_floor`` stops promotion when the judge's kappa is under the floor, null,
missing or stale (a judge not calibrated against people measures nothing you can trust, Zheng et al.,
NeurIPS 2023; recalibrate when the judge model or prompt changes), and warns for the same reasons in a
suite whose gates use no judge-based metric: missing or stale never passes
(``core.metrics.calibration_status``). ``judge_variance`` reports flip rates and the minimum resolution
from repeated judging. Both tables are computed in the aggregate stage (``defs/aggregate.py``).
"""


import datetime as dt
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.defs.resources import EvalSettings, TableFolder
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

HISTORY_FILE = "calibration_history.parquet"


def _load_human_labels(path, level: str, mapping=None) -> pl.DataFrame:
    """Hand labels for ``level``, validated line by line (``core.metrics.calibration.read_label_file``:
    errors name the file, line and field), with annotator and content hash; none when the file does not
    exist yet (nothing labelled: the calibration is then missing, not an error)."""
    from rag_eval_pipeline.core.metrics.calibration import LABEL_FILE_SCHEMA, read_label_file
    if not Path(path).exists():
        return pl.DataFrame(schema=LABEL_FILE_SCHEMA)
    return read_label_file(path, level, mapping)


def _current_hashes(tables: tuple, judge_labels: pl.DataFrame, level: str,
                    doc_id_systems: frozenset[str] = frozenset()) -> dict | None:
    """What each item is now (content hash), to find stale hand labels; None when a table is not given.
    ``tables``: (rag_runs, golden_set, corpus_snapshot); ``doc_id_systems``: systems whose items show
    whole documents (``core.pipeline.doc_id_systems``), as the labelling page shows them."""
    from rag_eval_pipeline.core.labelling import current_content_hashes
    rag_runs, golden, snapshot = tables
    if rag_runs is None or golden is None or snapshot is None:
        return None
    return current_content_hashes(rag_runs, golden, snapshot, judge_labels, level, doc_id_systems=doc_id_systems)


def _current_keys(judge_labels: pl.DataFrame) -> list[tuple]:
    from rag_eval_pipeline.core.metrics.variance import JUDGE_KEY
    return sorted(judge_labels.select(*JUDGE_KEY).unique().rows(), key=lambda k: tuple(str(x) for x in k))


def _fmt(v, spec: str = ".3f") -> str:
    return "null" if v is None else format(v, spec)


def calibration_markdown(table: pl.DataFrame) -> str:
    """Markdown summary of a calibration table: one line per judge key and level, then each confusion matrix."""
    from rag_eval_pipeline.core.metrics.calibration import confusion_markdown
    from rag_eval_pipeline.core.report.markdown import markdown_table
    lines = [markdown_table(
        ["level", "judge", "model", "prompt", "n", "kappa", "agreement", "kappa between people", "stale labels",
         "stale", "missing"],
        [[r["level"], r["judge"], r["judge_model"], (r["prompt_sha256"] or "")[:12],
          r["n"] if r["n"] is not None else "null", _fmt(r["kappa"]), _fmt(r["agreement"]),
          f"{_fmt(r['human_kappa'])} (n {r['human_kappa_n'] or 0})", r["n_stale_labels"] or 0, r["stale"],
          r["missing"]]
         for r in table.iter_rows(named=True)])]
    for r in table.iter_rows(named=True):
        if r["confusion"]:
            lines += ["", f"**{r['level']} / {r['judge']} / {r['judge_model']}** (rows = people, columns = judge)"
                      + (f": kappa null - {r['kappa_reason']}" if r["kappa"] is None else ""), "",
                      confusion_markdown(json.loads(r["labels"]), json.loads(r["confusion"]))]
    return "\n".join(lines)


def compute_calibration(section, judge_labels: pl.DataFrame, history_df: pl.DataFrame | None,
                        hashes: dict | None, *, citation_claims: pl.DataFrame | None = None,
                        nugget_labels: pl.DataFrame | None = None) -> tuple[pl.DataFrame, list, pl.DataFrame | None]:
    """The calibration in force for each current judge key: (table, this run's fresh results, hand labels).

    Inputs: the typed ``calibration`` section, this run's judge_labels, the calibration history (or None)
    and the current content hashes of the labelled items (``core.labelling.current_content_hashes``;
    None = not known); ``citation_claims`` / ``nugget_labels`` (this run's verdict-family tables, or None).
    Reads the hand-label file when the section is configured, and the family label file
    (``calibration.family_labels``, default ``family_labels.jsonl`` beside it) when it exists; writes
    nothing (the ``judge_calibration`` asset appends the fresh results to the history, the report reads
    the same table without waiting on the calibration check). The table holds the rows of
    ``calibration.level`` and, for each verdict family whose table is given, one row per current judge
    key of that family with ``level`` = the family name (citation_support, nugget_coverage: Cohen's
    kappa over SUPPORTED / PARTIAL / NOT_SUPPORTED, ``core.metrics.calibration_families``). Raises
    InputError for a bad label file.
    """
    from rag_eval_pipeline.core.metrics.calibration import calibrate_all, calibration_table, results_from_frame
    from rag_eval_pipeline.core.metrics.calibration_families import family_judge_labels
    level = section.level
    history = results_from_frame(history_df)
    current = _current_keys(judge_labels)
    fresh, human = [], None
    if section.configured:
        human = _load_human_labels(section.human_labels, level, section.mapping)
        now = dt.datetime.now(dt.UTC).isoformat()
        fresh = calibrate_all(human, judge_labels, section.mapping, level, calibrated_at=now,
                              source=str(section.human_labels), current_hashes=hashes)
    table = calibration_table(history + fresh, current, levels=[level])
    family_tables = {"citation_support": citation_claims, "nugget_coverage": nugget_labels}
    family_fresh = _family_results(section, citation_claims, nugget_labels)
    for family, df in family_tables.items():
        if df is None or df.height == 0:
            continue
        keys = _current_keys(family_judge_labels(family, df))
        if keys:
            table = pl.concat([table, calibration_table(history + family_fresh, keys, levels=[family])],
                              how="vertical_relaxed")
    return table, fresh + family_fresh, human


def _family_results(section, citation_claims: pl.DataFrame | None, nugget_labels: pl.DataFrame | None) -> list:
    """This run's calibration of the verdict families against ``calibration.family_labels`` (none when the
    section is not configured or the file does not exist yet). Raises InputError for a bad label file."""
    from rag_eval_pipeline.core.metrics.calibration_families import calibrate_families
    path = section.family_labels_path if section.configured else None
    if path is None or not Path(path).exists():
        return []
    from rag_eval_pipeline.core.judges.human import read_human_label_rows

    rows, _sha = read_human_label_rows(path)
    return calibrate_families(rows, citation_claims, nugget_labels, calibrated_at=dt.datetime.now(dt.UTC).isoformat(),
                              source=str(path))


def judge_calibration(context: dg.AssetExecutionContext, settings: EvalSettings, store: TableFolder,
                      judge_labels: pl.DataFrame, rag_runs: pl.DataFrame | None = None,
                      golden_set: pl.DataFrame | None = None,
                      corpus_snapshot: pl.DataFrame | None = None, citation_claims: pl.DataFrame | None = None,
                      nugget_labels: pl.DataFrame | None = None) -> dg.Output[pl.DataFrame]:
    """Agreement (Cohen's kappa, raw agreement, confusion) of each current judge key with the hand labels.

    One row per current (judge, judge_model, prompt_sha256) and level; ``stale`` when the only
    calibration found was made for another judge key, ``missing`` when there is none. The verdict
    families citation_support and nugget_coverage have rows of their own (``level`` = the family),
    against ``calibration.family_labels``, from ``citation_claims`` and ``nugget_labels`` (None: no such
    rows). Each new result is appended to ``calibration_history.parquet`` in the suite's folder. Hand
    labels whose item (question, answer, retrieved text, claim) changed since labelling are stale; without
    ``rag_runs``, ``golden_set`` and ``corpus_snapshot`` that cannot be told and none is counted stale.
    """
    from rag_eval_pipeline.core.metrics.calibration import confusion_markdown, results_to_frame
    from rag_eval_pipeline.core.metrics.variance import JUDGE_KEY
    from rag_eval_pipeline.core.pipeline import doc_id_systems
    from rag_eval_pipeline.core.report.markdown import markdown_table
    section = settings.config.calibration
    level = section.level
    history_df = store.read(HISTORY_FILE)
    table, fresh, human = compute_calibration(
        section, judge_labels, history_df,
        _current_hashes((rag_runs, golden_set, corpus_snapshot), judge_labels, level,
                        doc_id_systems(settings.config)) if section.configured else None,
        citation_claims=citation_claims, nugget_labels=nugget_labels)
    source = str(section.human_labels) if section.configured else None
    if fresh:
        new_rows = results_to_frame(fresh)
        updated = new_rows if history_df is None else pl.concat([history_df, new_rows], how="diagonal_relaxed")
        store.write(updated, HISTORY_FILE, table="calibration_history")
    md: dict = {
        "configured": section.configured,
        "level": level,
        "kappa_floor": section.kappa_floor,
        "human_labels": source or "none (no calibration section)",
        "history_rows": (0 if history_df is None else history_df.height) + len(fresh),
        "calibration": dg.MetadataValue.md(calibration_markdown(table)),
        "stale": dg.MetadataValue.json(table["stale"].to_list()),
        "missing": dg.MetadataValue.json(table["missing"].to_list()),
    }
    for r in table.filter(pl.col("level") != level).iter_rows(named=True):  # the verdict families
        name = f"kappa_{r['level']}" + ("" if table.filter(pl.col("level") == r["level"]).height == 1
                                        else f"/{r['judge']}/{r['judge_model']}")
        md[name] = dg.MetadataValue.null() if r["kappa"] is None else float(r["kappa"])
        md[f"n_{r['level']}"] = int(r["n"] or 0)
    base = table.filter(pl.col("level") == level)
    if base.height == 1:
        row = base.row(0, named=True)
        for name in ("kappa", "agreement"):
            md[name] = dg.MetadataValue.null() if row[name] is None else float(row[name])
        md["n"] = dg.MetadataValue.null() if row["n"] is None else int(row["n"])
        if row["kappa_reason"]:
            md["kappa_reason"] = row["kappa_reason"]
        md["human_kappa"] = dg.MetadataValue.null() if row["human_kappa"] is None else float(row["human_kappa"])
        if row["human_kappa_reason"]:
            md["human_kappa_reason"] = row["human_kappa_reason"]
        md["n_stale_labels"] = int(row["n_stale_labels"] or 0)
        if row["n_stale_labels"]:
            md["stale_labels"] = dg.MetadataValue.json(json.loads(row["stale_labels"]))
        if row["confusion"]:
            md["confusion"] = dg.MetadataValue.md(confusion_markdown(json.loads(row["labels"]),
                                                                     json.loads(row["confusion"])))
    if section.configured and human is not None and level == "response" and judge_labels.height:
        # Prediction-powered estimates of the attributable rate: the judge's rate corrected by its
        # measured bias on the hand-labelled answers (null with a reason when a set is empty).
        from rag_eval_pipeline.core.metrics.calibration import ppi_rates

        latest = judge_labels.filter(pl.struct(*JUDGE_KEY) == pl.struct(*JUDGE_KEY).last())
        ppi = ppi_rates(human, latest, section.mapping)
        store.write(ppi, "ppi_estimates.parquet", table="ppi_estimates")
        md["ppi_attributable_rate"] = dg.MetadataValue.md(markdown_table(
            ["system", "judge rate", "PPI estimate", "95% CI", "labelled", "unlabelled", "note"],
            [[r["system"], _fmt(r["judge_rate"]), _fmt(r["estimate"]),
              "" if r["ci_low"] is None else f"[{r['ci_low']:.3f}, {r['ci_high']:.3f}]", r["n_labelled"],
              r["n_unlabelled"], r["reason"] or ""] for r in ppi.iter_rows(named=True)]))
    for r in fresh:
        if r.n and (r.n_human_only or r.n_judge_only):
            context.log.info(f"calibration of {r.judge}/{r.judge_model}: {r.n} items compared, "
                             f"{r.n_human_only} hand-labelled items without a judge label, "
                             f"{r.n_judge_only} judged items without a hand label")
    return dg.Output(table, metadata=md)


CALIBRATED_DESCRIPTION = ("The judge agrees with hand labels (Cohen's kappa >= calibration.kappa_floor) for its "
                          "current model and prompt. Missing or stale never passes. Blocking (ERROR) whenever a gate "
                          "is on a judge-based metric; a warning otherwise.")
WARNING_ONLY = ("Warning only in this suite: no gate is on a judge-based metric, so a judge below the floor cannot "
                "block promotion. ")


def judge_calibrated_above_floor(settings: EvalSettings, judge_calibration: pl.DataFrame) -> dg.AssetCheckResult:
    from rag_eval_pipeline.core.metrics.calibration_status import calibration_status
    cfg = settings.config
    section = cfg.calibration
    status = calibration_status(judge_calibration, configured=section.configured, kappa_floor=section.kappa_floor,
                                gated_metrics=[t.metric for t in cfg.thresholds], min_labels=section.min_labels)
    # A failure blocks only when a gate rests on the judge's numbers; otherwise it is a warning, visible in the
    # UI, the CLI and the report, so a night is not lost to an ungated instrument. Missing or stale never passes.
    severity = dg.AssetCheckSeverity.ERROR if status.judge_based_gates else dg.AssetCheckSeverity.WARN
    return dg.AssetCheckResult(passed=status.passed, severity=severity,
                               description=None if status.passed else status.reason, metadata={
        "summary": status.line(),  # the CLI prints it beside the check
        "state": status.state,
        "reason": status.reason,
        # the lowest current kappa as a number, so the UI plots it over runs beside the floor
        "kappa": dg.MetadataValue.null() if status.kappa is None else float(status.kappa),
        "n": dg.MetadataValue.null() if status.n is None else int(status.n),
        "min_labels": status.min_labels,
        "kappa_ci": (dg.MetadataValue.null() if status.kappa_ci is None
                     else dg.MetadataValue.json(list(status.kappa_ci))),
        "blocks_promotion": status.blocks,
        "kappa_floor": status.floor,
        "failures": dg.MetadataValue.json(status.failures),
        # a stale row's κ is labelled with the judge/model/prompt it was made for (calibrated_*)
        "kappas": dg.MetadataValue.json(judge_calibration.select(
            "level", "judge", "judge_model", "kappa", "n", "stale", "missing", "calibrated_judge",
            "calibrated_judge_model", "calibrated_prompt_sha256").to_dicts()),
        "judge_based_gates": dg.MetadataValue.json(status.judge_based_gates),
    })


def judge_variance(context: dg.AssetExecutionContext, judge_labels: pl.DataFrame) -> dg.Output[pl.DataFrame]:
    """Per system and judge key: repeats, item flip rate, spread of per-repeat faithfulness, minimum resolution."""
    from rag_eval_pipeline.core.metrics.variance import RESOLUTION_RULE, resolution_from_table, variance_table
    from rag_eval_pipeline.core.report.markdown import markdown_table
    table = variance_table(judge_labels)
    resolution = resolution_from_table(table)
    # an integer column: its max is an int (or None)
    max_repeats = int(cast(int | None, table["n_repeats"].max()) or 0) if table.height else 0
    lines = markdown_table(
        ["system", "judge", "repeats", "flipped / items", "flip rate", "faithfulness min-max", "resolution"],
        [[r["system"], f"{r['judge']}/{r['judge_model']}", r["n_repeats"], f"{r['n_flipped']}/{r['n_items']}",
          _fmt(r["flip_rate"]), f"{_fmt(r['faithfulness_min'])}-{_fmt(r['faithfulness_max'])}", _fmt(r["resolution"])]
         for r in table.iter_rows(named=True)])
    md: dict[str, Any] = {"max_repeats": max_repeats, "rule": RESOLUTION_RULE, "variance": dg.MetadataValue.md(lines)}
    if resolution:
        md["minimum_resolution"] = dg.MetadataValue.json(resolution)
    else:
        md["minimum_resolution"] = "single repeat: resolution unknown"
    return dg.Output(table, metadata=md)


def labels_file(config) -> Path | None:
    """The hand-label file a configuration calibrates against (None without a calibration section)."""
    section = config.calibration
    return Path(section.human_labels) if section.configured and section.human_labels else None


def build(scope: SuiteScope) -> tuple[list, list]:
    """The external asset ``<suite>/calibration_labels`` (the hand-label file, not an asset of a run) of a
    full scope whose configuration names one; nothing otherwise (a quick evaluation reads its suite's)."""
    if scope.quick or not scope.calibration_labels:
        return [], []
    calibration_labels = dg.AssetSpec(
        key=scope.key("calibration_labels"), group_name=scope.group("calibration"), tags={"stage": "calibration"},
        description="The hand labels the judge is calibrated against (calibration.human_labels of the configuration): "
                    "a file people write with rag-eval label, not an asset of a run.",
        metadata={"path": dg.MetadataValue.path(scope.calibration_labels)})

    return [calibration_labels], []
