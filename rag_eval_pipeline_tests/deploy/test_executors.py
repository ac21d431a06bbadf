"""Executors chosen by the deployment: no job pins one; the multiprocess executor gives the in-process tables."""

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.defs.executors import executor_from_env
from rag_eval_pipeline.defs.location import build_definitions, check_suite
from rag_eval_pipeline.defs.schedules import FULL, QUICK_JOB, job_name
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home
from rag_eval_pipeline_tests.deploy.sample import sample_suites_file
from rag_eval_pipeline_tests.deploy.tables import table_differences

DAGSTER = str(Path(sys.executable).parent / "dagster")


def _sample_defs(tmp_path, executor=None):
    from rag_eval_pipeline.core.suites import load_suites

    suite = [s for s in load_suites(REPO_ROOT / "data" / "suites.yaml") if s.name == "sample"][0]
    return build_definitions([check_suite(suite)], output_dir=str(tmp_path), executor=executor)


def test_no_job_pins_an_executor_and_the_deployment_chooses_one(tmp_path):
    default = _sample_defs(tmp_path)
    for kind in (FULL, QUICK_JOB):
        job = default.resolve_job_def(job_name("sample", kind))
        assert job.executor_def is dg.multi_or_in_process_executor  # Dagster's default
        # the default executor takes both choices as run config (rejected before, when in_process was pinned)
        for choice in ({"in_process": {}}, {"multiprocess": {"max_concurrent": 2}}):
            assert dg.validate_run_config(job, {"execution": {"config": choice}})
    assert default.resolve_implicit_global_asset_job_def().executor_def is dg.multi_or_in_process_executor
    chosen = _sample_defs(tmp_path, executor="in_process")
    assert chosen.resolve_job_def(job_name("sample", FULL)).executor_def is dg.in_process_executor
    assert executor_from_env({"RAG_EVAL_EXECUTOR": "multiprocess"}) is dg.multiprocess_executor
    assert executor_from_env({}) is None


def test_an_unknown_executor_or_a_bad_celery_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"RAG_EVAL_EXECUTOR='threads': expected one of default, in_process"):
        executor_from_env({"RAG_EVAL_EXECUTOR": "threads"})
    with pytest.raises(ConfigError, match=r"RAG_EVAL_CELERY_CONFIG: file .*nosuch.yaml: cannot read"):
        executor_from_env({"RAG_EVAL_EXECUTOR": "celery", "RAG_EVAL_CELERY_CONFIG": str(tmp_path / "nosuch.yaml")})
    bad = tmp_path / "celery.yaml"
    bad.write_text("broker: redis://127.0.0.1:6379/0\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"celery.yaml: expected an 'execution: config:' mapping"):
        executor_from_env({"RAG_EVAL_EXECUTOR": "celery", "RAG_EVAL_CELERY_CONFIG": str(bad)})


def _step_pids(home, run_id: str) -> dict[str, int]:
    with dg.DagsterInstance.from_config(str(home)) as instance:
        starts = instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_START)
        return {e.step_key: e.dagster_event.pid for e in starts}


@pytest.mark.slow
def test_the_sample_under_the_multiprocess_executor_writes_the_in_process_tables(tmp_path, inprocess_sample):
    """``rag-eval run`` (in process) and ``dagster job execute`` with the multiprocess executor, both on the sample:
    every Parquet table equal, row by row, except the run-specific columns named in ``tables.py``.

    The steps' processes are forked from a forkserver that imported the code location and the instance's
    storages once (``start_method: forkserver`` with ``preload_modules: [rag_eval_pipeline.defs.preload]``, as
    docs/scale-out.md recommends): each step is still a process of its own, without paying the imports again
    (Dagster's default, ``spawn``, pays them in every step)."""
    inproc_out, inproc_home = inprocess_sample
    home = dagster_home(tmp_path)
    env = cli_env(home, RAG_EVAL_SUITES=str(sample_suites_file(tmp_path)), RAG_EVAL_OUTPUT_DIR=str(tmp_path / "mp"))
    run_config = tmp_path / "multiprocess.yaml"
    run_config.write_text("execution:\n  config:\n    multiprocess:\n      max_concurrent: 2\n      start_method:\n"
                          "        forkserver:\n          preload_modules: [rag_eval_pipeline.defs.preload]\n",
                          encoding="utf-8")
    mp = subprocess.run([DAGSTER, "job", "execute", "-m", "rag_eval_pipeline.definitions",
                         "-j", "sample__full_evaluation", "-c", str(run_config)],
                        env=env, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert mp.returncode == 0, mp.stdout[-3000:] + mp.stderr[-3000:]

    with dg.DagsterInstance.from_config(str(home)) as instance:
        (mp_run,) = instance.get_runs()
    with dg.DagsterInstance.from_config(str(inproc_home)) as instance:
        (cli_run,) = instance.get_runs()
    assert mp_run.is_success and mp_run.job_name == cli_run.job_name == "sample__full_evaluation"
    # where the steps ran: all in the CLI's one process; one fresh process per step under multiprocess
    cli_pids, mp_pids = _step_pids(inproc_home, cli_run.run_id), _step_pids(home, mp_run.run_id)
    assert len(cli_pids) >= 20 and len(set(cli_pids.values())) == 1
    assert set(mp_pids) == set(cli_pids) and len(set(mp_pids.values())) == len(mp_pids)

    assert table_differences(inproc_out, tmp_path / "mp" / "sample") == []
