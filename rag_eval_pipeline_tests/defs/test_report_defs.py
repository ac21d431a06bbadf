"""evaluation_report materialised on the sample, on a night when the regression gate fails."""

from pathlib import Path

import dagster as dg
import pytest
import yaml

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources, defs
from rag_eval_pipeline.defs.report import viewer_groups
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR

RESTRICTED_MARKER = "ZX-INTERNAL-7731"  # text of a support-staff chunk of the sample corpus


def _config(tmp: Path, **extra) -> Path:
    """The sample configuration with absolute paths, plus ``extra`` top-level keys."""
    raw = yaml.safe_load((SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8"))
    raw["corpus"]["path"] = str(SAMPLE_DIR / raw["corpus"]["path"])
    raw["golden"]["path"] = str(SAMPLE_DIR / raw["golden"]["path"])
    for s in raw["systems"]:
        if s.get("path"):
            s["path"] = str(SAMPLE_DIR / s["path"])
    calibration = raw.get("calibration")
    if isinstance(calibration, dict) and calibration.get("human_labels"):
        calibration["human_labels"] = str(SAMPLE_DIR / calibration["human_labels"])
    raw.update(extra)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def failing_gate_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    raw = yaml.safe_load((SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8"))
    gates = raw.get("gates") or {}
    gates["thresholds"] = [*(gates.get("thresholds") or []), {"metric": "recall_5", "min_value": 0.99}]
    config = _config(tmp, gates=gates, report={"viewer_groups": ["customers"]})
    out = tmp / "out"
    result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out)),
                            raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    return result, out


def test_report_is_written_even_when_the_gate_fails(failing_gate_run):
    result, out = failing_gate_run
    failed = {e.check_name for e in result.get_asset_check_evaluations() if not e.passed}
    assert "no_regression_against_baseline" in failed
    assert result.is_node_untouched("promotion")
    for name in ("report.md", "report.html", "trend.html"):
        assert (out / name).is_file(), name
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "| regression |" in md and "is below the floor 0.99" in md
    for name in ("report.md", "report.html", "trend.html"):
        assert RESTRICTED_MARKER not in (out / name).read_text(encoding="utf-8"), name
    assert "[restricted: " in md


def test_report_metadata_has_headline_floats_and_links(failing_gate_run):
    result, out = failing_gate_run
    mat = result.asset_materializations_for_node("evaluation_report")[0]
    md = mat.metadata
    assert isinstance(md["team_rag/faithfulness"].value, float)
    assert isinstance(md["bm25_k10/recall_5"].value, float)
    assert md["report_html"].value == str((out / "report.html").resolve())
    assert md["report"].value == (out / "report.md").read_text(encoding="utf-8")  # the whole report, in the UI
    assert not [k for k, v in md.items() if str(getattr(v, "value", v)).startswith("file:")]  # browsers refuse them
    assert "| system | metric |" in md["summary"].value
    assert md["viewer_groups"].value == ["customers"]


def test_quick_job_builds_the_report_without_metric_history():
    job = defs.resolve_job_def("sample__quick_evaluation")
    quick = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert "sample/quick/evaluation_report" in quick and "sample/quick/metric_history" not in quick


def test_viewer_groups_from_the_config(tmp_path):
    assert viewer_groups(EvalSettings(config_path=str(_config(tmp_path)))) == ("customers",)
    assert viewer_groups(EvalSettings(config_path=str(_config(tmp_path, report={"viewer_groups": ["a", "b"]})))) == ("a", "b")
    with pytest.raises(ConfigError, match="viewer_groups"):
        viewer_groups(EvalSettings(config_path=str(_config(tmp_path, report={"viewer_groups": "customers"}))))
