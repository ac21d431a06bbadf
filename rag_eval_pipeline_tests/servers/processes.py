"""Servers that tests start as processes of their own (``dagster dev``, ``rag-eval serve``, ...): started in
a session of their own with the output in a log file, polled until they answer HTTP, stopped by process group.
"""

from __future__ import annotations

import os
import signal
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from rag_eval_pipeline_tests.conftest import REPO_ROOT


def _default_signals() -> None:  # an ignored SIGINT would be copied onto SIGTERM by Dagster (TECH-NOTES)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def start_logged(cmd: list[str], env: dict, log_path: Path, cwd: Path = REPO_ROOT) -> subprocess.Popen:
    """``cmd`` started in ``cwd`` in a new session (so :func:`stop_group` reaches its children), SIGINT and
    SIGTERM at their defaults, stdout and stderr written to ``log_path`` (truncated first)."""
    with log_path.open("wb") as log:
        return subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_default_signals)


def stop_group(proc: subprocess.Popen, term_wait_s: float = 30.0) -> None:
    """SIGTERM to ``proc``'s process group (``proc`` started in a session of its own), SIGKILL when it has not
    exited after ``term_wait_s`` seconds; returns once it exited or 10 s after the SIGKILL. A group already
    gone is not an error."""
    for sig, wait_s in ((signal.SIGTERM, term_wait_s), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def http_up(url: str, proc: subprocess.Popen, log_path: Path) -> Callable[[], bool]:
    """A check for ``wait_until``: True once a GET of ``url`` answers 200, False while it does not answer;
    raises RuntimeError with the end of ``log_path`` when ``proc`` has exited."""
    def up() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"{proc.args[:3]} exited with {proc.returncode}: "
                               + log_path.read_text(errors="replace")[-3000:])
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            return False
    return up
