"""Crashes and concurrent runs, with real ``rag-eval run`` subprocesses.

(a) A run SIGKILLed in the middle of a Parquet write leaves the previous tables intact and readable;
    its temporary file is hidden (name starts with '.') and the next run removes it.
(b) Two runs on one output folder: the second fails at once, naming the first (pid, run id), or waits
    for it with ``--wait-s``; nothing either of them wrote is mixed or corrupted. Dagster's run queue
    (``.dagster_home/dagster.yaml``) does not cover ``rag-eval run`` (it executes in process), so the
    output-folder lock (``core/locking.py``) is what is tested here, at the CLI and at the IO manager.
(c) A run killed while the OpenAI-compatible judge is working, then re-run: every judge call finished
    before the kill comes from the SQLite judge cache, only the rest reach the server.

The slow write is the test hook ``RAG_EVAL_TEST_SLOW_WRITE_S`` of ``core/storage.py``.
"""

import contextlib
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.locking import LOCK_NAME, OutputLock, OutputLocked, read_owner
from rag_eval_pipeline.core.storage import SLOW_WRITE_ENV
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline_tests.defs.subprocess_runs import (
    ad_hoc_home,
    cli_env,
    dagster_home,
    kill,
    materialize_sample,
    sample_config,
    start_cli,
    visible_tables,
    wait_for,
)
from rag_eval_pipeline_tests.servers.fault_server import FaultServer


@pytest.fixture(scope="module")
def good_out(tmp_path_factory):
    """A good in-process run of the sample; each test copies it into its own output folder."""
    root = tmp_path_factory.mktemp("crash_good")
    out = root / "out"
    result = materialize_sample(sample_config(root), out)
    assert result.success
    return out


@contextlib.contextmanager
def _holding(*args: str):
    """A Python process running ``args`` (``-c`` script and its arguments) that has printed "held": yields it,
    and kills it on the way out."""
    proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _temp_files(out: Path) -> list[Path]:
    return sorted(out.rglob(".*.tmp"))


def test_sigkill_mid_write_keeps_the_previous_tables(good_out, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    before = visible_tables(out)
    proc = start_cli(sample_config(tmp_path), out, cli_env(dagster_home(tmp_path), **{SLOW_WRITE_ENV: "60"}),
                     log=tmp_path / "run.log")
    try:
        # the first table write (corpus_snapshot) has written and synced its temporary file, and sleeps
        temp = wait_for(lambda: _temp_files(out), 120, proc, "the first temporary Parquet file")
        assert read_owner(out)["pid"] == proc.pid  # the run holds the folder's lock
    finally:
        kill(proc)
    assert proc.returncode == -9
    # the killed write is invisible: the temporary file is a dot-file that no '*.parquet' glob matches
    assert [p.name for p in temp] and all(p.name.startswith(".") and p.name.endswith(".tmp") for p in temp)
    assert not {p.name for p in temp} & {p.name for p in out.glob("*.parquet")}
    # every previous table is intact, byte for byte, and readable
    assert visible_tables(out) == before
    for name in before:
        if name.endswith(".parquet"):
            pl.read_parquet(out / name)
    # the kernel dropped the dead run's lock: the next run starts, removes the leftover, and succeeds
    result = materialize_sample(sample_config(tmp_path), out)
    assert result.success
    assert _temp_files(out) == []
    after = set(visible_tables(out))
    # each full run also keeps its per-question tables under history/<run_id>/ (for rag-eval compare)
    archived = {name for name in after - set(before) if name.startswith("history/")}
    assert after - archived == set(before)
    assert len({name.split("/")[1] for name in archived}) == 1


def test_a_second_run_on_the_same_folder_fails_clearly(good_out, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    before = visible_tables(out)
    home = dagster_home(tmp_path)
    config = sample_config(tmp_path)
    first = start_cli(config, out, cli_env(home, **{SLOW_WRITE_ENV: "60"}), log=tmp_path / "first.log")
    try:
        wait_for(lambda: _temp_files(out), 120, first, "the first run's first write")
        second = subprocess.run(
            [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config), "--output", str(out)],
            env=cli_env(home), capture_output=True, text=True, timeout=120)
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"another run is writing {out}" in second.stderr
        assert f"pid {first.pid}" in second.stderr
        owner = read_owner(out)
        assert owner["run_id"] and f"run_id {owner['run_id']}" in second.stderr
        assert first.poll() is None  # the first run was not disturbed
        # the second run started no Dagster run at all (both are ad-hoc: recorded in their own instance)
        with dg.DagsterInstance.from_config(str(ad_hoc_home(home))) as instance:
            runs = instance.get_runs()
        assert [r.run_id for r in runs] == [owner["run_id"]]
        # an in-process materialisation (as a run launched from the UI executes) is refused by the IO manager
        result = materialize_sample(config, out)
        assert not result.success
        failure = [e for e in result.all_events if e.event_type_value == "RESOURCE_INIT_FAILURE"]
        assert failure and "another run is writing" in str(failure[0].event_specific_data.error.to_string())
    finally:
        kill(first)
    assert visible_tables(out) == before


def test_the_lock_waits_for_another_process_and_for_steps_of_the_same_run(tmp_path):
    out = tmp_path / "out"
    holder = ("import sys, time\nfrom rag_eval_pipeline.core.locking import OutputLock\n"
              "lock = OutputLock(sys.argv[1], run_id=sys.argv[2]).acquire()\n"
              "print('held', flush=True)\ntime.sleep(float(sys.argv[3]))\nlock.release()\n")
    # another run holds the folder for ~1.5 s: fail at once without waiting, succeed when waiting
    with _holding("-c", holder, str(out), "run-A", "1.5") as proc:
        with pytest.raises(OutputLocked, match=rf"another run is writing .*pid {proc.pid}, run_id run-A"):
            OutputLock(out, run_id="run-B").acquire()
        start = time.monotonic()
        with OutputLock(out, run_id="run-B", wait_s=60) as lock:
            assert lock.held and read_owner(out)["run_id"] == "run-B"
        assert time.monotonic() - start > 0.5
    # a step of the same run in another process (multiprocess executor) waits instead of failing
    with _holding("-c", holder, str(out), "run-C", "1.0"), OutputLock(out, run_id="run-C", wait_s=0) as lock:
        assert lock.held
    # re-entrant within a process: the CLI, the IO manager and the table store share one hold
    with OutputLock(out, run_id="r") as a, OutputLock(out, run_id="r") as b:
        assert a.held and b.held
    assert (out / LOCK_NAME).read_text() == ""  # released: the owner line is cleared


def test_kill_during_judging_then_rerun_reuses_the_judge_cache(good_out, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    cache_path = tmp_path / "judge_cache.sqlite"
    config = sample_config(tmp_path)
    with FaultServer("ok", latency_s=0.05) as server:
        env = cli_env(dagster_home(tmp_path), RAG_EVAL_JUDGE="openai_compatible",
                      RAG_EVAL_JUDGE_BASE_URL=server.base_url, RAG_EVAL_JUDGE_MODEL="fault-model",
                      RAG_EVAL_JUDGE_API_KEY="sk-test-crash", RAG_EVAL_JUDGE_CACHE=str(cache_path))
        proc = start_cli(config, out, env, log=tmp_path / "run.log")
        try:
            wait_for(lambda: len(server.chat_requests()) >= 30, 180, proc, "30 judge calls")
        finally:
            kill(proc)
        sent_before_kill = len(server.chat_requests())
        with JudgeCache(cache_path) as cache:
            cached_at_kill = len(cache)
        assert cached_at_kill >= 20  # finished calls were committed one by one
        assert cached_at_kill <= sent_before_kill
        # judging never finished: the previous judge tables are still there, untouched
        for table in ("judge_labels.parquet", "answer_judgements.parquet"):
            assert (out / table).read_bytes() == (good_out / table).read_bytes()
        rule_based = pl.read_parquet(good_out / "judge_labels.parquet")["judge"].unique().to_list()

        server.reset()
        judge = JudgeResource.of("openai_compatible", base_url=server.base_url, model="fault-model",
                                 api_key="sk-test-crash", cache=str(cache_path))
        result = materialize_sample(config, out, judge=judge)
        assert result.success
        with JudgeCache(cache_path) as cache:
            total = len(cache)
        rerun_bodies = {json.dumps(r["body"], sort_keys=True) for r in server.chat_requests()}
        rerun_calls = len(server.chat_requests())
    # only the calls not finished before the kill were sent again, each exactly once: an identical call asked at
    # the same moment by another thread or step waits for the one in flight (the cache's single flight), and the
    # killed run's claims (its process is gone) are taken over at once
    assert len(rerun_bodies) == total - cached_at_kill
    duplicates = rerun_calls - len(rerun_bodies)
    assert duplicates == 0, f"{duplicates} duplicate request(s) of {rerun_calls}"
    assert 0 < len(rerun_bodies) < total
    labels = pl.read_parquet(out / "judge_labels.parquet")
    assert labels["judge"].unique().to_list() != rule_based
    assert labels.filter(pl.col("verdict") == "JUDGE_ERROR").height == 0


def test_a_second_run_with_wait_queues_behind_the_first(good_out, tmp_path):
    """``rag-eval run --wait-s N`` waits for the run holding the folder, then runs (here: after the first is killed)."""
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    home = dagster_home(tmp_path)
    config = sample_config(tmp_path)
    first = start_cli(config, out, cli_env(home, **{SLOW_WRITE_ENV: "60"}), log=tmp_path / "first.log")
    second = None
    try:
        wait_for(lambda: _temp_files(out), 120, first, "the first run's first write")
        second = start_cli(config, out, cli_env(home), "--wait-s", "300", log=tmp_path / "second.log")
        time.sleep(3)
        assert second.poll() is None, (tmp_path / "second.log").read_text()  # queued, not failed
        assert read_owner(out)["pid"] == first.pid
        kill(first)
        assert second.wait(timeout=300) == 0, (tmp_path / "second.log").read_text()[-3000:]
    finally:
        kill(first)
        if second is not None:
            kill(second)
    log = (tmp_path / "second.log").read_text()
    assert "succeeded" in log
    assert _temp_files(out) == []  # the killed run's leftover was removed by the run that followed
    for name in visible_tables(out):
        if name.endswith(".parquet"):
            pl.read_parquet(out / name)


def test_a_waiter_of_the_same_run_rides_out_a_holder_clearing_its_line_before_it_unlocks(tmp_path):
    # A holder releases by clearing its owner line, then closing the lock file. A waiter of the same run that
    # looks in between sees the lock held by nobody it can name; under load that moment lasted long enough
    # for the waiter (which had already waited > 1 s for its own run) to give up "holder unknown". Here the
    # moment is stretched to 0.3 s after 1.2 s of a named hold: the waiter must get the lock.
    out = tmp_path / "out"
    out.mkdir()
    holder = ("import fcntl, json, os, sys, time\n"
              "fd = os.open(os.path.join(sys.argv[1], sys.argv[2]), os.O_RDWR | os.O_CREAT, 0o644)\n"
              "fcntl.flock(fd, fcntl.LOCK_EX)\n"
              "os.pwrite(fd, (json.dumps({'pid': os.getpid(), 'run_id': 'run-C'}) + '\\n').encode(), 0)\n"
              "print('held', flush=True)\ntime.sleep(1.2)\nos.ftruncate(fd, 0)\ntime.sleep(0.3)\nos.close(fd)\n")
    with _holding("-c", holder, str(out), LOCK_NAME), OutputLock(out, run_id="run-C", wait_s=0) as lock:
        assert lock.held
