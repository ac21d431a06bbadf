"""SIGTERM frees an output folder within seconds (core/locking.py ``end_on_signal``), without Dagster.

A child process takes the folder's lock, installs ``end_on_signal`` and then either waits in Python
(the installed handler ends it at once) or runs a C loop that holds the GIL and never checks for
signals (only the watchdog process can end it). Either way the test's own lock attempt must then
succeed.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from rag_eval_pipeline.core.locking import OutputLock, read_owner

REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent("""
    import sys, time
    from rag_eval_pipeline.core.locking import OutputLock, end_on_signal
    out, mode, marker = sys.argv[1], sys.argv[2], sys.argv[3]
    OutputLock(out).acquire()
    end_on_signal(grace_s=1.0)
    open(marker, "w").close()
    if mode == "native":
        sum(range(10**15))  # C code: no Python signal handler runs until it returns (hours)
    else:
        time.sleep(3600)
""")


def _start(tmp_path: Path, mode: str):
    out, marker = tmp_path / "out", tmp_path / "ready"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(out), mode, str(marker)], env=env,
                            stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "the child never got ready"
        time.sleep(0.02)
    assert read_owner(out)["pid"] == proc.pid
    return proc, out


def _stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode, status, within_s", [("python", 128 + signal.SIGTERM, 2.0),
                                                    ("native", -signal.SIGKILL, 6.0)])
def test_sigterm_ends_the_process_and_frees_the_lock(tmp_path, mode, status, within_s):
    proc, out = _start(tmp_path, mode)
    try:
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=within_s + 10)
        except subprocess.TimeoutExpired:
            pass
        took = time.monotonic() - sent
        assert proc.returncode == status, f"status {proc.returncode} after {took:.1f} s"
        assert took <= within_s
        err = proc.stderr.read().decode()
        if mode == "native":  # the grace period (1 s) passed, then the watchdog killed it and said so
            assert took >= 1.0 and "SIGTERM received" in err and "killed it" in err, err
        else:
            assert "stopped by SIGTERM" in err, err
    finally:
        _stop(proc)
    OutputLock(out, wait_s=0).acquire().release()  # raises OutputLocked while anyone holds it


def test_a_second_call_returns_the_same_watchdog():
    code = ("from rag_eval_pipeline.core.locking import end_on_signal\n"
            "a = end_on_signal(); b = end_on_signal(); print(a is not None and a is b)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
