"""One writer per output folder: an advisory lock (``fcntl.flock``) on ``<folder>/.rag-eval.lock``.

Why: Dagster's run queue (``concurrency: runs: max_concurrent_runs`` in ``dagster.yaml``) only
limits runs submitted through the queue (UI, schedules, ``dagster job launch``); ``rag-eval run``
and tests execute in process and bypass it. Two runs writing the same folder would each write whole
files atomically, but the set of tables would mix two runs (one run's ``golden_set`` beside the
other's ``rag_runs``), and history / baseline files are read-modify-write. So every run that writes a
folder holds this lock for as long as it runs; a second run on the same folder either waits
(``wait_s``) or fails at once with an :class:`OutputLocked` error naming the folder and the holder
(pid, run id, start time, command).

Rules:

- The kernel drops a ``flock`` when its process dies (even on SIGKILL), so a crashed run never leaves
  a stale lock; the owner line left in the file is only information and is overwritten.
- Re-entrant within one process: the IO manager, the table store and the CLI of one run share one
  hold (a count per folder); the lock is released when the last holder lets go.
- Steps of one run in separate processes (the multiprocess executor, Celery workers on one host)
  carry the same run id. An exclusive holder (``rag-eval run``) that finds the folder held by its own
  run waits for it (``same_run_wait_s``) instead of failing. A *run-shared* holder (``shared=True``:
  each step's IO manager and table store) takes a shared ``flock``: any number of processes of the same
  run hold the folder together, so steps of one run (question shards, parallel branches) run side by
  side, while a holder of another run, or an exclusive holder, still waits or fails. Which run holds the
  folder is the owner line written by the first shared holder; a short exclusive lock on
  ``.rag-eval.lock.gate`` makes "look at the holders, then join" one step, so two runs never both join.
- Dagster's run queue keeps whole runs apart in a deployment (``deploy/dagster.yaml``: at most one
  queued run per output folder, by the ``rag_eval/output_dir`` tag); this lock keeps the steps apart.
- While holding the lock, the first holder in a process removes leftover temporary files
  (``.<name>.*.tmp``, written by :mod:`rag_eval_pipeline.core.storage`) that a killed writer left:
  nobody else can be writing them (a run-shared holder does so only when it is the folder's first holder).

- A signal must free the folder within seconds whatever the run is doing: :func:`end_on_signal`
  (installed by ``rag-eval run``) has a small watchdog process SIGKILL the run when SIGTERM or SIGINT
  has not ended it after a grace period, since a step stuck in native code, or one that swallows
  Dagster's interrupt, would otherwise hold the lock indefinitely.

Nothing here imports Dagster. POSIX only (``fcntl``).
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from rag_eval_pipeline.core.errors import EvalError

LOCK_NAME = ".rag-eval.lock"
GATE_NAME = ".rag-eval.lock.gate"
_POLL_S = 0.1

_registry_lock = threading.Lock()
_held: dict[str, dict] = {}  # realpath of the lock file -> {"fd": int, "count": int, "owner": dict}


class OutputLocked(EvalError):
    """Another run holds the output folder. Attributes: ``folder`` (str), ``owner`` (dict, may be empty)."""

    def __init__(self, folder: str, owner: dict, waited_s: float):
        who = ", ".join(f"{k} {owner[k]}" for k in ("pid", "run_id", "started_at", "host") if owner.get(k))
        cmd = owner.get("command")
        super().__init__(
            f"another run is writing {folder} ({who or 'holder unknown'}"
            + (f"; command: {cmd}" if cmd else "")
            + ")"
            + (f"; still held after waiting {waited_s:.0f} s" if waited_s >= 0.5 else "")
            + ". Wait for it to finish (rag-eval run --wait-s N), or write to another output folder"
        )
        self.folder, self.owner = folder, owner


def read_owner(folder: str | Path) -> dict:
    """The owner line recorded in ``folder``'s lock file ({} when none or unreadable)."""
    try:
        text = (Path(folder) / LOCK_NAME).read_text(encoding="utf-8").strip()
        return json.loads(text) if text else {}
    except (OSError, ValueError):
        return {}


def remove_stale_temp_files(folder: str | Path) -> list[str]:
    """Delete ``.*.tmp`` files under ``folder`` (left by a killed atomic write). Call only while holding
    the folder's lock. Output: the removed paths."""
    removed = []
    for p in Path(folder).rglob(".*.tmp"):
        if p.is_file():
            try:
                p.unlink()
                removed.append(str(p))
            except OSError:
                pass
    return removed


class OutputLock:
    """Hold ``<folder>/.rag-eval.lock`` (see the module docstring).

    ``OutputLock(folder, run_id=None, wait_s=0.0, same_run_wait_s=900.0, shared=False)``; :meth:`acquire` /
    :meth:`release`, or use it as a context manager. :meth:`acquire` raises :class:`OutputLocked`
    when another run still holds the folder after ``wait_s`` seconds (0: fail at once). ``shared=True``
    (needs ``run_id``): hold the folder together with the other processes of the same run.
    """

    def __init__(self, folder: str | Path, *, run_id: str | None = None, wait_s: float = 0.0,
                 same_run_wait_s: float = 900.0, shared: bool = False):
        self.folder = Path(folder)
        self.run_id, self.wait_s, self.same_run_wait_s = run_id, float(wait_s), float(same_run_wait_s)
        self.shared = bool(shared and run_id)
        self._key: str | None = None
        self._unknown_since: float | None = None  # when this waiter first saw the owner line empty
        self.removed_temp_files: list[str] = []

    def _owner_line(self) -> dict:
        return {"pid": os.getpid(), "run_id": self.run_id, "host": socket.gethostname(),
                "started_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                "command": " ".join(sys.argv)[:300]}

    def _give_up(self, start: float, owner: dict) -> bool:
        """Whether to stop waiting for ``owner``'s run (its own run gets ``same_run_wait_s``)."""
        waited = time.monotonic() - start
        same_run = self.run_id is not None and owner.get("run_id") == self.run_id
        if waited >= (self.same_run_wait_s if same_run else self.wait_s):
            raise OutputLocked(str(self.folder), owner, waited) from None
        return False

    def _unknown_holder(self, owner: dict) -> bool:
        """Whether to look again: the lock is held but its owner line is empty, which happens for a moment
        between a holder's flock and its line (acquiring) and between clearing its line and closing (releasing).
        True for up to 1 s from when this waiter first saw the line empty; then the holder is named unknown."""
        if owner:
            self._unknown_since = None
            return False
        now = time.monotonic()
        if self._unknown_since is None:
            self._unknown_since = now
        return now - self._unknown_since < 1.0

    def _try_exclusive(self, fd: int, start: float) -> bool:
        """One attempt at the exclusive lock: True when taken, False to try again, OutputLocked to give up."""
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            owner = read_owner(self.folder)
            if self._unknown_holder(owner):
                return False
            return self._give_up(start, owner)

    def _try_shared(self, fd: int, start: float) -> bool | None:
        """One attempt to hold the folder with the other processes of this run. Output: None when taken as
        the first holder, True when joined, False to try again; OutputLocked to give up."""
        gate = os.open(self.folder / GATE_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(gate, fcntl.LOCK_EX)  # held for microseconds: decisions below are one step
            probe = os.open(self.folder / LOCK_NAME, os.O_RDWR)
            try:
                try:
                    fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    free = True
                except BlockingIOError:
                    free = False
            finally:
                os.close(probe)  # drops the probe's lock, if it got one
            owner = {} if free else read_owner(self.folder)
            if not free and owner.get("run_id") != self.run_id:
                if self._unknown_holder(owner):
                    return False
                return self._give_up(start, owner)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:  # an exclusive holder came in after the probe (or holds it for this run)
                return self._give_up(start, read_owner(self.folder))
            if free:
                os.ftruncate(fd, 0)
                os.pwrite(fd, (json.dumps(self._owner_line()) + "\n").encode("utf-8"), 0)
                return None
            return True
        finally:
            os.close(gate)  # and with it the gate's lock

    def acquire(self) -> OutputLock:
        if self._key is not None:
            return self
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / LOCK_NAME
        key = os.path.realpath(path)
        with _registry_lock:
            entry = _held.get(key)
            if entry is not None:
                entry["count"] += 1
                self._key = key
                return self
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.monotonic()
        self._unknown_since = None
        first = True
        try:
            while True:
                if self.shared:
                    got = self._try_shared(fd, start)
                    if got is not False:
                        first = got is None
                        break
                elif self._try_exclusive(fd, start):
                    break
                time.sleep(_POLL_S)
        except BaseException:
            os.close(fd)
            raise
        if not self.shared:
            owner = self._owner_line()
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(owner) + "\n").encode("utf-8"), 0)
        else:
            owner = read_owner(self.folder)
        # temporary files are only stale when no other process of the run can be writing them
        self.removed_temp_files = remove_stale_temp_files(self.folder) if first else []
        with _registry_lock:
            _held[key] = {"fd": fd, "count": 1, "owner": owner, "shared": self.shared}
        self._key = key
        return self

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None:
            return
        with _registry_lock:
            entry = _held.get(key)
            if entry is None:
                return
            entry["count"] -= 1
            if entry["count"] > 0:
                return
            del _held[key]
        if not entry["shared"]:  # a shared holder may not be the last of its run: it leaves the line
            try:
                os.ftruncate(entry["fd"], 0)  # the owner line is only meaningful while held
            except OSError:
                pass
        fcntl.flock(entry["fd"], fcntl.LOCK_UN)
        os.close(entry["fd"])

    @property
    def held(self) -> bool:
        return self._key is not None

    def __enter__(self) -> OutputLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


# The watchdog (run with ``python -I -S -c``): its stdin is the read end of a pipe whose write end is
# this process's signal wakeup fd. Python's C-level signal handler writes the signal number there at
# once, even while the main thread is stuck in native code or holds the GIL, so the watchdog learns of
# the signal whatever the run is doing. EOF means the run has exited.
_WATCHDOG = r"""
import os, select, signal, sys, time
pid, grace = int(sys.argv[1]), float(sys.argv[2])
wanted = {int(s) for s in sys.argv[3].split(",")}
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    data = os.read(0, 512)
    if not data:
        sys.exit(0)
    got = wanted.intersection(data)
    if got:
        break
deadline = time.monotonic() + grace
while True:
    left = deadline - time.monotonic()
    if left <= 0:
        break
    ready, _, _ = select.select([0], [], [], left)
    if ready and not os.read(0, 512):
        sys.exit(0)
name = signal.Signals(min(got)).name
os.write(2, ("rag-eval: %s received and the run had not stopped after %g s; killed it (pid %d). Its "
             "output folder is unlocked; tables it had not finished writing keep their previous version.\n"
             % (name, grace, pid)).encode())
try:
    os.kill(pid, signal.SIGKILL)
except ProcessLookupError:
    pass
"""


_watchdog: dict[int, subprocess.Popen] = {}  # pid -> the watchdog started by end_on_signal in that process


def end_on_signal(grace_s: float = 3.0, signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGINT)
                  ) -> subprocess.Popen | None:
    """Make SIGTERM (and SIGINT) end this process, and so free its output-folder lock, within ``grace_s``
    seconds whatever it is doing.

    Call once from the main thread of a command-line process, before its long work. Input: the grace
    period in seconds (the process's own handling, e.g. Dagster marking the run failed, gets that
    long) and the signals to watch. Output: the watchdog process (it exits by itself when this process
    exits); a second call in the same process returns the first one's; None, changing nothing, when
    the signal wakeup fd is already used by someone else (an asyncio loop) or when not called from the
    main thread. Where a signal has no Python handler (a default or ignored disposition) one is installed
    that ends the process at once with status 128 + signal number (the kernel frees the lock); Dagster
    replaces it with its own during a run, which ends the run's current step when Python code runs
    next, and whose signals the watchdog sees as well. After the grace period the watchdog
    sends SIGKILL: the kernel then drops the ``flock``, so the folder is free; the files of the folder
    stay as the atomic writes left them (each table is the old or the new version, never a mix).
    Raises OSError only when the watchdog cannot be started.
    Definition: ``signal.set_wakeup_fd`` (Python docs, "signal" module).
    """
    if threading.current_thread() is not threading.main_thread():
        return None
    if os.getpid() in _watchdog:
        return _watchdog[os.getpid()]
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    watchdog = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", _WATCHDOG, str(os.getpid()), str(grace_s),
         ",".join(str(int(s)) for s in signals)],
        stdin=read_end, close_fds=True, start_new_session=True)
    os.close(read_end)
    previous = signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    if previous != -1:
        signal.set_wakeup_fd(previous)
        os.close(write_end)  # the watchdog reads EOF and exits
        watchdog.wait()
        return None
    for signum in signals:
        if signal.getsignal(signum) in (signal.SIG_DFL, signal.SIG_IGN, None):
            signal.signal(signum, _exit_now)
    _watchdog[os.getpid()] = watchdog
    return watchdog


def _exit_now(signum, frame):
    os.write(2, f"rag-eval: stopped by {signal.Signals(signum).name}\n".encode())
    os._exit(128 + signum)
