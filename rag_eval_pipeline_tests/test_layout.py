"""Pins the code location's shape and the core's independence from Dagster."""

import ast
from pathlib import Path

from rag_eval_pipeline.definitions import defs

CORE = Path(__file__).resolve().parents[1] / "rag_eval_pipeline" / "core"


def test_core_imports_nothing_from_dagster_or_defs():
    offenders = []
    for path in CORE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.name}: {n}" for n in names
                          if n.split(".")[0] == "dagster" or n.startswith("rag_eval_pipeline.defs")]
    assert offenders == []


def test_asset_keys_are_pinned():
    # the sample suite is always loaded (the public suites only where their data is); see defs/test_location.py
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {f"sample/{k}" for k in (
        "corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "answer_judgements",
        "question_metrics", "metric_summary", "metric_history", "promotion", "judge_calibration",
        "judge_variance", "gate_results", "gate_verdict", "regression_cases", "answer_quality", "trec_files",
        "evaluation_report")} <= keys


def test_blocking_checks_guard_the_chain():
    graph = defs.resolve_asset_graph()
    checks = {(key.asset_key.to_user_string(), key.name): graph.get_check_spec(key).blocking
              for key in graph.asset_check_keys}
    for key in [("metric_summary", "denominators_consistent"), ("gate_verdict", "no_regression_against_baseline"),
                ("rag_runs", "every_question_has_a_run_row"), ("golden_set", "golden_consistent_with_snapshot"),
                ("judge_labels", "verdicts_in_allowed_set"),
                ("corpus_snapshot", "chunk_ids_unique"), ("judge_labels", "judge_error_share"),
                ("answer_judgements", "every_answer_has_a_judgement"), ("gate_verdict", "run_errors_within_share")]:
        assert checks.get((f"sample/{key[0]}", key[1])) is True, key
    # the sample gates no judge-based metric: its calibration check can only warn, and is defined so
    assert checks[("sample/judge_calibration", "judge_calibrated_above_floor")] is False


def test_jobs_and_nightly_schedule():
    full = defs.resolve_job_def("sample__full_evaluation")
    quick = defs.resolve_job_def("sample__quick_evaluation")
    full_keys = {k.to_user_string() for k in full.asset_layer.executable_asset_keys}
    assert {"sample/promotion", "sample/metric_history", "sample/corpus_snapshot"} <= full_keys
    quick_keys = {k.to_user_string() for k in quick.asset_layer.executable_asset_keys}
    assert not {"sample/quick/promotion", "sample/quick/metric_history"} & quick_keys
    assert "sample/quick/metric_summary" in quick_keys and not any(k.startswith("sample/metric") for k in quick_keys)
    sched = defs.resolve_schedule_def("nightly_full_evaluation")
    assert sched.cron_schedule == "0 2 * * *"
    assert sched.execution_timezone == "UTC"


DEFS = CORE.parent / "defs"
DEFS_TESTS = Path(__file__).resolve().parent / "defs"
# shell modules without a test module of their own, and the tests that materialise them
COVERED_BY = {"corpus": "defs/test_chain_sample.py", "golden": "defs/test_chain_sample.py",
              "runs": "defs/test_chain_sample.py", "metrics": "defs/test_chain_sample.py",
              "schedules": "defs/test_location.py", "citations": "defs/test_chain_sample.py",
              "pools": "deploy/test_pools.py", "executors": "deploy/test_executors.py"}


def test_the_shell_tests_mirror_the_shell():
    # defs/ is a plain package (not a folder dg loads by itself); rag_eval_pipeline_tests/defs/test_<module>.py
    # tests each of its modules
    modules = {p.stem for p in DEFS.glob("*.py") if p.stem != "__init__"}
    tested = {p.stem.removeprefix("test_") for p in DEFS_TESTS.glob("test_*.py")}
    assert modules - tested == set(COVERED_BY)
    assert all((DEFS_TESTS.parent / path).exists() for path in COVERED_BY.values())
