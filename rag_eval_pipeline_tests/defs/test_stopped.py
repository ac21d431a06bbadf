"""``defs/stopped.py``: the failure hook on every step upstream of the report, through Dagster's own
``materialize`` (the path of an asset selection materialised in the UI: Dagster's implicit asset job).

A run that selects the report and fails on golden_set moves the last report aside and leaves a stopped
decision naming the step and this run; a run that does not select the report leaves decision.json alone.
"""

import json
import shutil

import dagster as dg
import pytest
import yaml

from rag_eval_pipeline.core.report.decision import DECISION_FILE, PREVIOUS_DIR
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline.defs.factory import chain
from rag_eval_pipeline.defs.scope import SuiteScope
from rag_eval_pipeline.defs.stopped import SET_ASIDE, set_aside
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config

BROKEN_GOLDEN = REPO_ROOT / "rag_eval_pipeline_tests" / "fixtures" / "hostile" / "golden_absent_with_relevant"


def test_the_hook_is_on_every_step_upstream_of_the_report_and_only_there():
    assets, checks = chain(SuiteScope(suite="s"))

    def hooked(defs) -> set[str]:
        return {k.name if isinstance(k, dg.AssetCheckKey) else k.path[-1]
                for d in defs if getattr(d, "hook_defs", None) for k in [*d.keys, *d.check_keys]}

    # the blocking checks on tables the report reads (read off the graph: each one's asset is an input of the
    # report or upstream of one)
    assert hooked(checks) == {"chunk_ids_unique", "golden_consistent_with_snapshot", "every_question_has_a_run_row",
                              "every_answer_has_a_judgement", "verdicts_in_allowed_set", "judge_error_share",
                              "denominators_consistent"}
    # the checks the report decides itself (gate, calibration, run errors) and the steps after it carry none
    every = hooked(assets)
    assert "evaluation_report" in every and "golden_set" in every and "judge_labels" in every
    assert not {"promotion", "regression_cases", "trec_files"} & every


def test_set_aside_moves_the_last_report_into_previous_byte_for_byte(tmp_path):
    for name in (*SET_ASIDE, "trend.html", "metric_summary.parquet"):
        (tmp_path / name).write_text(f"the last report's {name}", encoding="utf-8")
    (tmp_path / PREVIOUS_DIR).mkdir()
    (tmp_path / PREVIOUS_DIR / "report.md").write_text("an older one", encoding="utf-8")
    assert set_aside(tmp_path) == list(SET_ASIDE)
    for name in SET_ASIDE:
        assert not (tmp_path / name).exists()
        assert (tmp_path / PREVIOUS_DIR / name).read_text(encoding="utf-8") == f"the last report's {name}"
    # the trend and the tables stay where they are
    assert (tmp_path / "trend.html").exists() and (tmp_path / "metric_summary.parquet").exists()
    assert set_aside(tmp_path) == []  # nothing left to move: nothing changes


@pytest.fixture
def folder_with_a_decided_run(tmp_path):
    """A suite folder holding a decided run's report and decision (promote), and a configuration whose golden
    set is broken on line 2 (an absent question that lists relevant chunks)."""
    out = tmp_path / "out"
    out.mkdir()
    decided = {"run_id": "earlier-run", "verdict": "pass", "promotion_action": "promote",
               "stopped_before_report": False}
    (out / DECISION_FILE).write_text(json.dumps(decided), encoding="utf-8")
    (out / "report.md").write_text("# the earlier run's report\n", encoding="utf-8")
    (out / "report.html").write_text("<p>the earlier run's report</p>\n", encoding="utf-8")
    golden = tmp_path / "golden.jsonl"
    shutil.copyfile(BROKEN_GOLDEN / "golden.jsonl", golden)
    config = sample_config(tmp_path)
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    cfg["golden"]["path"] = str(golden)
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return config, out, decided


def _materialize(config, out, selection):
    return dg.materialize([*ASSETS, *CHECKS], selection=selection, resources=build_resources(str(config), str(out)),
                          raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


def test_a_selection_with_the_report_that_fails_upstream_leaves_a_stopped_decision(folder_with_a_decided_run):
    config, out, decided = folder_with_a_decided_run
    # everything upstream of the report, and the report: what "Materialize" on the report plus upstream does
    result = _materialize(config, out, dg.AssetSelection.assets("evaluation_report").upstream())
    assert not result.success
    stopped = json.loads((out / DECISION_FILE).read_text(encoding="utf-8"))
    assert stopped["run_id"] == result.run_id and stopped["stopped_before_report"] is True
    assert stopped["verdict"] == "fail" and stopped["promotion_action"] == "blocked"  # the sample promotes bm25_k10
    [line] = stopped["blocking_failures"]
    assert line.startswith("step golden_set: InputError: ") and "line 2" in line, line
    assert stopped["inputs"]["config_path"] == str(config) and len(stopped["inputs"]["config_sha256"]) == 64
    assert json.loads((out / PREVIOUS_DIR / DECISION_FILE).read_text(encoding="utf-8")) == decided
    assert (out / PREVIOUS_DIR / "report.md").read_text(encoding="utf-8") == "# the earlier run's report\n"
    assert not (out / "report.md").exists() and not (out / "report.html").exists()

    # a second stopped run in a row: its own stopped decision; previous/ still holds the last decided run's
    again = _materialize(config, out, dg.AssetSelection.assets("evaluation_report").upstream())
    assert json.loads((out / DECISION_FILE).read_text(encoding="utf-8"))["run_id"] == again.run_id != result.run_id
    assert json.loads((out / PREVIOUS_DIR / DECISION_FILE).read_text(encoding="utf-8")) == decided


def test_a_selection_without_the_report_leaves_the_decision_alone(folder_with_a_decided_run):
    config, out, decided = folder_with_a_decided_run
    result = _materialize(config, out, dg.AssetSelection.assets("golden_set").upstream())
    assert not result.success  # golden_set failed, but this run never meant to write a report
    assert json.loads((out / DECISION_FILE).read_text(encoding="utf-8")) == decided
    assert (out / "report.md").exists() and not (out / PREVIOUS_DIR).exists()


def test_a_step_ended_by_system_exit_still_leaves_this_runs_stopped_decision(folder_with_a_decided_run, monkeypatch):
    """A step ended by ``SystemExit`` (a BaseException, not an Exception: a ``sys.exit()`` in code a step calls)
    still fires the failure hook: decision.json is this run's stopped decision, naming the step and SystemExit.
    (A python system's own SystemExit is an error row since core/systems/python_callable.py catches it; this is
    any other step's.)"""
    import rag_eval_pipeline.core.pipeline as pipeline

    config, out, decided = folder_with_a_decided_run

    def exits(*args, **kwargs):
        raise SystemExit(3)

    monkeypatch.setattr(pipeline, "build_golden", exits)
    result = _materialize(config, out, dg.AssetSelection.assets("evaluation_report").upstream())
    assert not result.success
    stopped = json.loads((out / DECISION_FILE).read_text(encoding="utf-8"))
    assert stopped["run_id"] == result.run_id and stopped["stopped_before_report"] is True
    assert stopped["blocking_failures"] == ["step golden_set: SystemExit: 3"]
    assert json.loads((out / PREVIOUS_DIR / DECISION_FILE).read_text(encoding="utf-8")) == decided
