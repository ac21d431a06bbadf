"""The aggregate stage: everything computed over all questions before the decision, in one step.

``metric_summary`` (metrics.py), ``judge_variance`` and ``judge_calibration`` (calibration.py),
``gate_results`` and ``gate_verdict`` (promotion.py) are one Dagster multi-asset, ``aggregate``: the step
reads ``question_metrics`` (scanned, never loaded whole), ``judge_labels``, ``rag_runs``, ``golden_set``,
``corpus_snapshot``, ``citation_claims`` and ``nugget_labels`` once (and the promoted baseline and the
hand-label file, declared as observable sources). The lineage draws each table from the nearest tables
it is computed from, so a table whose inputs are already upstream of another input is not drawn from them
again: ``gate_results`` from ``metric_summary``, ``judge_variance``
and the promoted baseline (``question_metrics``, ``rag_runs``, ``golden_set`` and ``corpus_snapshot`` are
upstream of ``metric_summary``). Every table a step reads is still a declared input of that step, and
an ancestor of each table computed from it (``rag_eval_pipeline_tests/defs/test_lineage.py``).

The checks beside these tables (``denominators_consistent``, ``judge_calibrated_above_floor``,
``no_regression_against_baseline``, ``run_errors_within_share``) block what lies downstream of the stage:
``metric_history``,
``regression_cases``, the report and ``promotion``. The stage can be subset: materialising
``judge_calibration`` alone computes only it; ``gate_results`` alone recomputes the summary and the
variance it needs without writing them.
"""

from typing import TYPE_CHECKING

import dagster as dg

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.plain_names import CALIBRATION_CHECK, GATE_CHECK, RUN_ERRORS_CHECK
from rag_eval_pipeline.defs import calibration, metrics, promotion
from rag_eval_pipeline.defs.scope import SuiteScope

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

STAGE = "aggregate"
TABLES = ("metric_summary", "judge_variance", "judge_calibration", "gate_results", "gate_verdict")
KINDS = {"metric_summary": {"polars", "parquet"}, "judge_variance": {"polars", "parquet"},
         "judge_calibration": {"polars", "parquet"}, "gate_results": {"polars", "parquet"}, "gate_verdict": {"json"}}


def _descriptions() -> dict[str, str | None]:
    return {"metric_summary": metrics.metric_summary.__doc__, "judge_variance": calibration.judge_variance.__doc__,
            "judge_calibration": calibration.judge_calibration.__doc__,
            "gate_results": promotion.gate_results.__doc__, "gate_verdict": promotion.gate_verdict.__doc__}


def build(scope: SuiteScope) -> tuple[list, list]:
    """(assets, checks) of the aggregate stage for ``scope``. A quick scope reads its suite's promoted
    baseline and hand-label file (``<suite>/promoted_baseline``, ``<suite>/calibration_labels``)."""
    key = scope.key
    baseline = scope.full_key("promoted_baseline")
    labels_source = [scope.full_key("calibration_labels")] if scope.calibration_labels else []
    outs = {name: dg.AssetOut(key=key(name), kinds=KINDS[name], is_required=False,
                              description=scope.describe(text), io_manager_key=scope.io_manager_key,
                              group_name=scope.group(STAGE), tags={"stage": STAGE})
            for name, text in _descriptions().items()}
    deps = {
        "metric_summary": {key("question_metrics"), key("golden_set"), key("corpus_snapshot")},
        "judge_variance": {key("judge_labels")},
        # rag_runs is read here first in the stage (for the stale-label check): drawn here, once
        "judge_calibration": {key("judge_labels"), key("rag_runs"), key("citation_claims"), key("nugget_labels"),
                              *labels_source},
        "gate_results": {key("metric_summary"), key("judge_variance"), baseline},
        "gate_verdict": {key("gate_results")},
    }

    @dg.multi_asset(name=scope.op(STAGE), outs=outs, deps=[baseline, *labels_source],
                    ins=scope.ins("question_metrics", "judge_labels", "rag_runs", "golden_set", "corpus_snapshot",
                                  "citation_claims", "nugget_labels"),
                    internal_asset_deps=deps, can_subset=True,
                    required_resource_keys=scope.needs("settings", "store"))
    def aggregate(context: dg.AssetExecutionContext, question_metrics: pl.LazyFrame, judge_labels: pl.DataFrame,
                  rag_runs: pl.DataFrame, golden_set: pl.DataFrame, corpus_snapshot: pl.DataFrame,
                  citation_claims: pl.DataFrame, nugget_labels: pl.DataFrame):
        selected = context.selected_output_names
        settings, store = scope.settings(context), scope.store(context)
        done: dict[str, dg.Output] = {}

        def table(name: str):  # computed once, when selected or needed by a selected table
            if name not in done:
                if name == "metric_summary":
                    done[name] = metrics.metric_summary(context, settings, corpus_snapshot, golden_set,
                                                        question_metrics)
                elif name == "judge_variance":
                    done[name] = calibration.judge_variance(context, judge_labels)
                elif name == "judge_calibration":
                    done[name] = calibration.judge_calibration(context, settings, store, judge_labels, rag_runs,
                                                               golden_set, corpus_snapshot, citation_claims,
                                                               nugget_labels)
                elif name == "gate_results":
                    done[name] = promotion.gate_results(context, settings, store, table("metric_summary"),
                                                        question_metrics, rag_runs, golden_set, corpus_snapshot,
                                                        table("judge_variance"))
                elif name == "gate_verdict":
                    done[name] = promotion.gate_verdict(context, settings, table("gate_results"), rag_runs,
                                                        golden_set)
            return done[name].value

        for name in TABLES:
            if name in selected:
                table(name)
                yield dg.Output(done[name].value, output_name=name, metadata=done[name].metadata)

    @dg.asset_check(asset=key("metric_summary"), name="denominators_consistent", blocking=True,
                    description=metrics.DENOMINATORS_DESCRIPTION)
    def denominators(metric_summary: pl.DataFrame) -> dg.AssetCheckResult:
        return metrics.denominators_consistent(metric_summary)

    blocks = scope.calibration_blocks
    @dg.asset_check(asset=key("judge_calibration"), name=CALIBRATION_CHECK, blocking=blocks,
                    required_resource_keys=scope.needs("settings"),
                    description=("" if blocks else calibration.WARNING_ONLY) + calibration.CALIBRATED_DESCRIPTION)
    def calibrated(context, judge_calibration: pl.DataFrame) -> dg.AssetCheckResult:
        return calibration.judge_calibrated_above_floor(scope.settings(context), judge_calibration)

    @dg.asset_check(asset=key("gate_verdict"), name=GATE_CHECK, blocking=True,
                    additional_ins=scope.ins("gate_results"), description=promotion.NO_REGRESSION_DESCRIPTION)
    def no_regression(gate_verdict: dict, gate_results: pl.DataFrame) -> dg.AssetCheckResult:
        return promotion.no_regression_against_baseline(gate_verdict, gate_results)

    @dg.asset_check(asset=key("gate_verdict"), name=RUN_ERRORS_CHECK, blocking=True,
                    additional_ins=scope.ins("rag_runs"), required_resource_keys=scope.needs("settings"),
                    description=promotion.RUN_ERRORS_DESCRIPTION)
    def run_errors(context, gate_verdict: dict, rag_runs: pl.DataFrame) -> dg.AssetCheckResult:
        return promotion.run_errors_within_share(scope.settings(context), rag_runs)

    return [aggregate], [denominators, calibrated, no_regression, run_errors]
