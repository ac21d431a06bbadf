"""The output-folder lock shared by the step processes of one run (multiprocess / Celery executors).

Every other holder is a real subprocess: the lock is re-entrant within one process, so only separate
processes show who keeps whom out.
"""

import subprocess
import sys

import pytest

from rag_eval_pipeline.core.locking import OutputLock, OutputLocked, read_owner

HOLDER = ("import sys, time\nfrom rag_eval_pipeline.core.locking import OutputLock\n"
          "lock = OutputLock(sys.argv[1], run_id=sys.argv[2] or None, shared=sys.argv[3] == 'shared').acquire()\n"
          "print('held', len(lock.removed_temp_files), flush=True)\nsys.stdin.readline()\nlock.release()\n")


def _hold(folder, run_id: str, mode: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder), run_id, mode],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().split()
    assert line[:1] == ["held"], line
    proc.removed = int(line[1])
    return proc


def _release(*procs: subprocess.Popen) -> None:
    for proc in procs:
        proc.stdin.write("\n")
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0


def test_steps_of_one_run_hold_the_folder_together_and_keep_other_runs_out(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / ".rag_runs.parquet.1234.tmp").write_bytes(b"left by a killed write")
    first = _hold(out, "run-A", "shared")
    assert first.removed == 1  # the first holder of the folder cleans what a killed writer left
    (out / ".metric_summary.parquet.99.tmp").write_bytes(b"being written by step 1")
    second = _hold(out, "run-A", "shared")  # another step process of the same run: joins at once
    assert second.removed == 0 and (out / ".metric_summary.parquet.99.tmp").exists()  # never another step's file
    try:
        assert read_owner(out)["run_id"] == "run-A" and read_owner(out)["pid"] == first.pid
        with pytest.raises(OutputLocked, match=r"another run is writing .*run_id run-A"):
            OutputLock(out, run_id="run-B", shared=True).acquire()  # a step of another run
        with pytest.raises(OutputLocked, match=r"run_id run-A"):
            OutputLock(out, run_id="run-C").acquire()  # rag-eval run (exclusive)
        _release(first)  # the second step still holds the folder: still closed to others
        with pytest.raises(OutputLocked):
            OutputLock(out, run_id="run-B", shared=True).acquire()
    finally:
        _release(second)
    with OutputLock(out, run_id="run-B", shared=True) as lock:  # free again
        assert lock.held and read_owner(out)["run_id"] == "run-B"


def test_an_exclusive_holder_keeps_out_even_the_steps_of_its_own_run_until_they_wait(tmp_path):
    out = tmp_path / "out"
    cli = _hold(out, "run-A", "exclusive")
    try:
        with pytest.raises(OutputLocked, match=r"run_id run-A"):  # another run's step
            OutputLock(out, run_id="run-B", shared=True).acquire()
        with pytest.raises(OutputLocked, match=r"still held after waiting"):  # its own run's step waits first
            OutputLock(out, run_id="run-A", shared=True, same_run_wait_s=0.6).acquire()
    finally:
        _release(cli)
    with OutputLock(out, run_id="run-A", shared=True) as lock:
        assert lock.held


def test_a_killed_step_frees_its_share(tmp_path):
    out = tmp_path / "out"
    step = _hold(out, "run-A", "shared")
    step.kill()  # SIGKILL: the kernel drops the flock
    step.wait()
    with OutputLock(out, run_id="run-B", wait_s=0) as lock:
        assert lock.held
