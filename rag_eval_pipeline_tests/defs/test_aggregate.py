"""The aggregate stage: one step for summary, judge trust and gates, that can still be materialised in part."""

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR

UPSTREAM = ["corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "answer_judgements", "answer_quality",
            "citation_claims", "citations", "nugget_labels",
            "question_metrics"]


def _materialize(out, selection):
    return dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(SAMPLE_DIR / "config.yaml"), str(out)),
                          selection=selection, raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


def _materialised(result) -> set[str]:
    return {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}


@pytest.mark.slow
def test_a_part_of_the_stage_computes_and_writes_only_that_part(tmp_path):
    out = tmp_path / "out"
    assert _materialize(out, UPSTREAM).success
    calibration = _materialize(out, ["judge_calibration"])
    assert calibration.success and _materialised(calibration) == {"judge_calibration"}
    assert not (out / "metric_summary.parquet").exists() and not (out / "gate_results.parquet").exists()
    # the gates alone: the summary and the variance they need are computed, not written
    gates = _materialize(out, ["gate_results"])
    assert gates.success and _materialised(gates) == {"gate_results"}
    assert not (out / "metric_summary.parquet").exists() and not (out / "judge_variance.parquet").exists()
    alone = pl.read_parquet(out / "gate_results.parquet")
    # the whole stage gives the same gate table
    whole = _materialize(out, ["metric_summary", "judge_variance", "judge_calibration", "gate_results",
                               "gate_verdict"])
    assert whole.success and _materialised(whole) == {"metric_summary", "judge_variance", "judge_calibration",
                                                      "gate_results", "gate_verdict"}
    assert_frame_equal(pl.read_parquet(out / "gate_results.parquet"), alone)
