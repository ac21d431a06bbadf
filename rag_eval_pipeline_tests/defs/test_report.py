"""evaluation_report materialised on the sample, on a night when the regression gate fails."""

import re
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
    # the sample's judge is calibrated at the 0.4 floor, not at 0.9
    calibration = dict(raw["calibration"], kappa_floor=0.9,
                       human_labels=str(SAMPLE_DIR / raw["calibration"]["human_labels"]))
    config = _config(tmp, gates=gates, report={"viewer_groups": ["customers"]}, calibration=calibration)
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
    # a floor breach is below_floor (nothing was tested), not a regression
    assert "| below_floor |" in md and "is below the floor 0.99" in md and "| regression |" not in md
    for name in ("report.md", "report.html", "trend.html"):
        assert RESTRICTED_MARKER not in (out / name).read_text(encoding="utf-8"), name
    assert "[restricted: " in md


def test_report_metadata_has_headline_floats_and_links(failing_gate_run):
    result, out = failing_gate_run
    mat = result.asset_materializations_for_node("evaluation_report")[0]
    md = mat.metadata
    assert isinstance(md["team_rag/faithfulness"].value, float)
    assert isinstance(md["bm25_k10/recall_5"].value, float)
    # a file path is plain text (a browser cannot open it from the UI), never a link-looking path value
    assert isinstance(md["report_html_file"], dg.TextMetadataValue)
    assert md["report_html_file"].value == str((out / "report.html").resolve())
    assert "report_html" not in md and "report_url" not in md  # RAG_EVAL_REPORT_URL is unset here
    assert md["report"].value == (out / "report.md").read_text(encoding="utf-8")  # the whole report, in the UI
    assert not [k for k, v in md.items() if str(getattr(v, "value", v)).startswith("file:")]  # browsers refuse them
    assert "| system | metric |" in md["summary"].value
    assert md["viewer_groups"].value == ["customers"]


def test_the_samples_uncalibrated_judge_reads_no_band_and_judge_errors_are_shown(failing_gate_run):
    """With the floor at 0.9 the sample's rule-based judge (κ about 0.5) is below it: no faithfulness
    band is read, nothing says "healthy", and every judge-based value carries its judge-error count."""
    result, out = failing_gate_run
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    lines = [line for line in md.splitlines() if line.startswith("| faithfulness |") and len(_cells(line)) == 9]
    assert lines and all(re.search(r"judge not calibrated \(κ 0\.\d{3} below the floor 0\.9\)", line) for line in lines)
    assert "healthy" not in md and "healthy" not in html
    mat = result.asset_materializations_for_node("evaluation_report")[0]
    assert mat.metadata["judge_calibrated"].value is False
    assert isinstance(mat.metadata["team_rag/faithfulness/judge_errors"].value, int)
    summary = mat.metadata["summary"].value
    assert "| judge errors |" in summary.splitlines()[0]
    faith = [line for line in summary.splitlines() if "| faithfulness |" in line]
    assert faith and all(_cells(line)[-1] == "judge not calibrated" for line in faith)


def test_quick_job_builds_the_report_without_metric_history():
    job = defs.resolve_job_def("sample__quick_evaluation")
    quick = {k.to_user_string() for k in job.asset_layer.executable_asset_keys}
    assert "sample/quick/evaluation_report" in quick and "sample/quick/metric_history" not in quick


def test_viewer_groups_from_the_config(tmp_path):
    assert viewer_groups(EvalSettings(config_path=str(_config(tmp_path)))) == ("customers",)
    two_groups = _config(tmp_path, report={"viewer_groups": ["a", "b"]})
    assert viewer_groups(EvalSettings(config_path=str(two_groups))) == ("a", "b")
    with pytest.raises(ConfigError, match="viewer_groups"):
        viewer_groups(EvalSettings(config_path=str(_config(tmp_path, report={"viewer_groups": "customers"}))))


def _cells(line: str) -> list[str]:
    """One Markdown table line split on unescaped pipes (GitHub's table extension)."""
    import re

    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_metadata_tables_are_escaped_markdown_tables():
    """Every Markdown table of the asset metadata goes through one helper: a "|" or a newline in a
    value (a system name, a reason) keeps each row on one line with its column count."""
    import polars as pl

    from rag_eval_pipeline.defs.metrics import summary_markdown
    from rag_eval_pipeline.defs.promotion import gates_markdown
    from rag_eval_pipeline.defs.report import headline_markdown

    odd = "team|rag\nv2"
    gates = pl.DataFrame([{"system": odd, "metric": "recall", "k": 5, "candidate": 0.7, "baseline": 0.8,
                           "difference": -0.1, "ci_low": -0.2, "ci_high": 0.0, "p_value": 0.01, "wins": 1, "ties": 2,
                           "losses": 5, "status": "regression", "n": 8, "n_baseline": 9,
                           "n_candidate_errors": 1}]).cast({"k": pl.Int32}, strict=False)
    headline_rows = [{"system": odd, "metric": "recall_5", "value": 0.5, "numerator": 1.0, "denominator": 2.0, "n": 2,
                      "n_not_evaluable": 0, "ci_low": 0.1, "ci_high": 0.9, "judge_errors": None, "band": None}]
    summary = pl.DataFrame([{"system": odd, "metric": "recall", "k": 5, "value": 0.5, "numerator": 1.0,
                             "denominator": 2.0, "n": 2, "ci_low": 0.1, "ci_high": 0.9}])
    # the gate table: system, metric, candidate, baseline, diff, n compared, 95% CI, p, W/T/L, status = 10
    assert "| n 8 of 9; 1 candidate error |" in gates_markdown(gates)
    for table, columns in ((gates_markdown(gates), 10), (headline_markdown(headline_rows), 8),
                           (summary_markdown(summary), 6)):
        lines = table.splitlines()
        assert len(lines) == 3, table  # header, separator, one row: the newline did not split the row
        assert [len(_cells(line)) for line in lines] == [columns] * 3, table
        assert _cells(lines[2])[0] == "team\\|rag v2"


def test_the_report_leads_with_the_decision(failing_gate_run):
    """The gate recall_5 >= 0.99 fails for every candidate (the sample's recall_5 on split test is 0.63 for
    bm25_k10 and 0.87 for team_rag): verdict FAIL, promotion blocked, each failure on one line with its reason;
    the calibration (floor 0.9 above κ 0.597, no judge-based gate) is a warning, not a failure."""
    import json

    import polars as pl

    result, out = failing_gate_run
    md = (out / "report.md").read_text(encoding="utf-8")
    first = md.split("\n## Run")[0]  # everything above the run metadata
    assert first.index("## Decision") < first.index("Verdict: FAIL")
    assert "Promotion: not promoted: " in first and "bm25_k10" in first
    gates = pl.read_parquet(out / "gate_results.parquet")
    failed = gates.filter(pl.col("blocking") & ~pl.col("passed"))
    assert failed.height >= 2
    for r in failed.iter_rows(named=True):
        label = r["metric"] + ("" if r["k"] is None else f"_{r['k']}")
        line = f"gate {r['system']}/{label} (split test): {r['status']}: {r['reason']}"
        assert line.replace("|", "\\|") in first, line
    assert "| comparison split | test (26 golden questions)" in first  # 26 of the 52 questions are in test
    assert ("| judge calibration | warning (blocks nothing: no judge-based gate): κ below the floor; "
            "κ 0.597 below floor 0.9") in first
    assert (md.index("## Run") < md.index("## Summary (split all)")
            < md.index("## Comparison with the baseline (split test)"))
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert decision["verdict"] == "fail" and decision["promotion_action"] == "blocked"
    assert len(decision["blocking_failures"]) == failed.height
    meta = result.asset_materializations_for_node("evaluation_report")[0].metadata
    assert list(meta)[:3] == ["decision", "verdict", "promotion"]  # the UI shows the decision first
    assert meta["verdict"].value == "FAIL" and meta["blocking_failures"].value == decision["blocking_failures"]
    assert meta["judge_kappa"].value == pytest.approx(302 / 506)  # confusion [[20, 3], [3, 8]], see test_cli_run
