"""The multi-worker deployment of ``deploy/`` on this machine: Postgres storage, a Redis broker, two
``dagster-celery`` workers, the webserver and the daemon (``services.py`` starts and stops them).

The nightly schedule runs the sample suite end to end on both workers, and its tables equal the in-process
run's; a worker killed in the middle of a step costs the run nothing but time (the step is handed to the
other worker), and leaves no half-written table, no held lock and a promotion file that agrees with the
promoted baseline.
"""

import json
import shutil
import subprocess
import time

import dagster as dg
import polars as pl
import pytest

from rag_eval_pipeline.core.locking import OutputLock
from rag_eval_pipeline.defs.pools import JUDGE_POOL, LIVE_SYSTEMS_POOL
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.deploy.sample import sample_suites_file
from rag_eval_pipeline_tests.deploy.services import BIN, Deployment, new_root, require_tools
from rag_eval_pipeline_tests.deploy.tables import table_differences
from rag_eval_pipeline_tests.e2e.polling import wait_until

pytestmark = pytest.mark.slow
NIGHTLY = "nightly_full_evaluation"
RUN_TIMEOUT_S = 900
JUDGE_STEP = "sample__judging"  # the judging step of the sample suite (answers, claims and verdicts)


@pytest.fixture(scope="module")
def deployment():
    require_tools()
    root = new_root()
    dep = Deployment(root, suites_file=sample_suites_file(root))
    try:
        dep.start()
        with pytest.MonkeyPatch.context() as mp:  # this process reads the same instance (Postgres)
            for key in ("DAGSTER_HOME", "DAGSTER_PG_URL"):
                mp.setenv(key, dep.env[key])
            yield dep
    finally:
        dep.stop()
        shutil.rmtree(root, ignore_errors=True)


def _instance(dep: Deployment) -> dg.DagsterInstance:
    return dg.DagsterInstance.from_config(str(dep.home))


def _cli(dep: Deployment, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(BIN / "dagster"), *args, "-w", str(REPO_ROOT / "workspace.yaml")], env=dep.env,
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _wait_finished(dep: Deployment, run_id: str) -> dg.DagsterRun:
    def finished():
        with _instance(dep) as instance:
            run = instance.get_run_by_id(run_id)
        return run if run.is_finished else None
    return wait_until(f"run {run_id} to finish", finished, timeout=RUN_TIMEOUT_S, interval=2.0)


def _celery_engine_events(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(step key, Celery worker name) of every step a worker picked up in the run, in order."""
    out = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ENGINE_EVENT):
        data = entry.dagster_event.engine_event_data
        if data is not None and "Celery worker" in data.metadata:
            out.append((entry.step_key, data.metadata["Celery worker"].value))
    return out


def _folder_is_consistent(out) -> None:
    """No held lock, no temporary file a killed write left, every table readable, and the promotion file
    naming the promoted baseline's run."""
    with OutputLock(out, run_id="checker", wait_s=0) as lock:  # raises OutputLocked while anyone holds it
        assert lock.held
    assert [p.name for p in out.rglob(".*.tmp")] == []
    for p in out.rglob("*.parquet"):
        pl.read_parquet(p)  # a half-written Parquet file does not read
    promoted = json.loads((out / "promotion.json").read_text(encoding="utf-8"))
    assert promoted == json.loads((out / "baseline" / "manifest.json").read_text(encoding="utf-8"))
    return promoted


def test_the_nightly_schedule_runs_the_sample_on_two_celery_workers_and_survives_a_lost_worker(deployment,
                                                                                                inprocess_sample):
    """One scheduled run (one run, so the suite stays within CI's time): the daemon fires the nightly schedule,
    both workers run steps, and the worker that picks up the judge step is killed in the middle of it."""
    dep = deployment
    # start the schedule through the webserver (schedule state lives in Postgres; the daemon ticks it)
    started = dep.graphql(
        "mutation($s: ScheduleSelector!) { startSchedule(scheduleSelector: $s) { __typename "
        "... on ScheduleStateResult { scheduleState { status } } ... on PythonError { message } } }",
        {"s": {"repositoryLocationName": dep.location, "repositoryName": "__repository__", "scheduleName": NIGHTLY}})
    assert started["startSchedule"]["scheduleState"]["status"] == "RUNNING", started

    def first_nightly_run():
        with _instance(dep) as instance:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/schedule_name": NIGHTLY}))
        return runs[-1] if runs else None
    try:
        run = wait_until("the nightly schedule's first run", first_nightly_run, timeout=240, interval=1.0)
    finally:
        _cli(dep, "schedule", "stop", NIGHTLY)  # one tick is enough (its cron is every minute here)
    assert run.tags["rag_eval/suite"] == "sample" and run.tags["rag_eval/output_dir"] == str(dep.out / "sample")

    def judging_worker():  # the longest step of the sample: the judge
        with _instance(dep) as instance:
            hits = [w for s, w in _celery_engine_events(instance, run.run_id) if s == JUDGE_STEP]
        return hits[0] if hits else None
    worker = wait_until("a worker to pick up the judge step", judging_worker, timeout=RUN_TIMEOUT_S, interval=0.2)
    killed = worker.split("@")[0]
    time.sleep(1.0)  # inside the step: resources up, inputs being read or the judge at work
    dep.kill_worker(killed)

    run = _wait_finished(dep, run.run_id)
    with _instance(dep) as instance:
        # a run that still failed is retried once by the daemon (run_retries in deploy/dagster.yaml)
        chain = [run]
        while chain[-1].status != dg.DagsterRunStatus.SUCCESS:
            retries = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/parent_run_id": chain[-1].run_id}))
            assert retries, f"run {chain[-1].run_id} ended {chain[-1].status} and was not retried: " + \
                dep.log("daemon")[-3000:]
            chain.append(_wait_finished(dep, retries[0].run_id))
        picked = [(s, w.split("@")[0]) for r in chain for s, w in _celery_engine_events(instance, r.run_id)]
        started_steps = {e.step_key for r in chain
                         for e in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.STEP_START)}
        judge_starts = [e for r in chain for e in instance.all_logs(r.run_id, of_type=dg.DagsterEventType.STEP_START)
                        if e.step_key == JUDGE_STEP]
        pools = {p: instance.event_log_storage.get_concurrency_info(p) for p in (JUDGE_POOL, LIVE_SYSTEMS_POOL)}
    assert {w for _, w in picked} == {"w1", "w2"}  # both workers ran steps
    assert {s for s, _ in picked} == started_steps and len(started_steps) >= 20  # every step went through Celery
    judged_by = [w for s, w in picked if s == JUDGE_STEP]
    assert judged_by[0] == killed and judged_by[-1] != killed  # started on the killed worker, finished on the other
    assert len(judge_starts) >= 2
    # the steps that call the judge or a system claimed slots of their pools in Postgres (set to the instance's
    # default_limit, 2, on first claim) and gave them back, the killed step's too
    assert {p: (i.slot_count, i.active_slot_count) for p, i in pools.items()} == {JUDGE_POOL: (2, 0),
                                                                                   LIVE_SYSTEMS_POOL: (2, 0)}

    # the webserver reads the same run storage
    seen = dep.graphql("query($t: [ExecutionTag!]) { runsOrError(filter: {tags: $t}) "
                       "{ ... on Runs { results { runId status } } } }",
                       {"t": [{"key": "dagster/schedule_name", "value": NIGHTLY}]})
    assert {"runId": chain[0].run_id, "status": chain[0].status.value} in seen["runsOrError"]["results"]

    inproc_out, _ = inprocess_sample
    assert table_differences(inproc_out, dep.out / "sample") == []  # the tables of a whole run, none half-written
    promoted = _folder_is_consistent(dep.out / "sample")
    assert promoted["run_id"] in {r.run_id for r in chain}  # the first run of this folder promoted its candidate
