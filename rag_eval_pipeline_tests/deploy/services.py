"""The multi-worker deployment of ``deploy/`` started for real on 127.0.0.1, and stopped, by a test.

Postgres (Debian's ``postgresql``, a fresh cluster with ``initdb``; run as the ``postgres`` user when the
test runs as root), ``redis-server``, two ``dagster-celery`` workers, ``dagster-webserver`` and
``dagster-daemon``, all with ``deploy/dagster.yaml`` as the instance and ``deploy/celery.yaml`` as the
Celery settings, read unchanged; the only difference is the Celery ``visibility_timeout`` (30 s here,
3600 s in the file), so that a step whose worker was killed is handed to the other worker within the
test's time. Every process is started in its own session and carries a marker variable, so the
teardown stops exactly the processes this deployment started (and their children), by pid.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env
from rag_eval_pipeline_tests.e2e.dagster_web import graphql
from rag_eval_pipeline_tests.e2e.polling import wait_until
from rag_eval_pipeline_tests.servers.local import free_port
from rag_eval_pipeline_tests.servers.processes import start_logged

PG_BIN = Path("/usr/lib/postgresql/15/bin")
DEPLOY = REPO_ROOT / "deploy"
BIN = Path(sys.executable).parent  # the virtual environment's console scripts (dagster, dagster-celery, celery)
MARKER = "RAG_EVAL_TEST_DEPLOYMENT"
TEST_VISIBILITY_TIMEOUT_S = 30


def service_commands(web_host: str, web_port: int, celery_config: str, worker_name: str | None = None) -> dict:
    """The command of each Dagster service, as ``deploy/docker-compose.yaml`` runs it and as this test starts it
    (from the repository root, the virtual environment's bin first on PATH). ``worker_name``: ``-n NAME`` (the
    test names its two workers; compose lets each replica name itself)."""
    name = ["-n", worker_name] if worker_name else []
    return {
        "webserver": ["dagster-webserver", "-h", web_host, "-p", str(web_port), "-w", "workspace.yaml"],
        "daemon": ["dagster-daemon", "run", "-w", "workspace.yaml"],
        "worker": ["dagster-celery", "worker", "start", "-A", "dagster_celery.app", "-y", celery_config, *name,
                   "--", "--concurrency=1"],
    }


def missing_tools() -> str | None:
    """Why the deployment cannot start here (None when everything is installed)."""
    if not (PG_BIN / "initdb").exists():
        return f"Postgres 15 not installed ({PG_BIN}/initdb): apt-get install postgresql"
    if shutil.which("redis-server") is None:
        return "redis-server not installed: apt-get install redis-server"
    for tool in ("dagster-celery", "dagster-daemon", "dagster-webserver", "celery"):
        if not (BIN / tool).exists():
            return f"{tool} not installed in {BIN}: pip install -r requirements-deploy.txt"
    return None


def require_tools() -> None:
    """Skip when a tool is missing; fail instead when CI is set (CI installs them: .ci/run)."""
    reason = missing_tools()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {reason}")
        pytest.skip(reason)


def _as_postgres(cmd: list[str]) -> list[str]:
    """Postgres refuses to run as root: as root, run ``cmd`` as the ``postgres`` user."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@dataclass
class Deployment:
    """One deployment's folders, ports and processes. ``start()`` / ``stop()``; ``env`` is what every
    Dagster process of it sees (also what a test needs to reach its instance)."""

    root: Path
    suites_file: Path
    workers: int = 2
    nightly_cron: str = "* * * * *"
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    env: dict = field(default_factory=dict)

    def __post_init__(self):
        self.pg_dir, self.home = self.root / "pg", self.root / "dagster_home"
        self.out, self.logs = self.root / "outputs", self.root / "logs"
        self.pg_port, self.redis_port, self.web_port = free_port(), free_port(), free_port()
        self.marker = uuid.uuid4().hex
        self.webserver_url = f"http://127.0.0.1:{self.web_port}"

    # --- the pieces ---------------------------------------------------------------------------------

    def _start_postgres(self) -> None:
        self.pg_dir.mkdir()
        if os.geteuid() == 0:
            shutil.chown(self.pg_dir, "postgres")
        subprocess.run(_as_postgres([str(PG_BIN / "initdb"), "-D", str(self.pg_dir), "-A", "trust", "-U", "postgres",
                                     "--no-sync"]), check=True, capture_output=True, timeout=300)
        subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.pg_dir), "-l", str(self.pg_dir / "log"),
                                     "-w", "-t", "120", "-o",
                                     f"-p {self.pg_port} -k {self.pg_dir} -c listen_addresses=127.0.0.1 -c fsync=off",
                                     "start"]), check=True, capture_output=True, timeout=180)
        subprocess.run([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres",
                        "dagster"], check=True, capture_output=True, timeout=60)

    def _start(self, name: str, cmd: list[str], env: dict | None = None) -> subprocess.Popen:
        proc = start_logged(cmd, env or self.env, self.logs / f"{name}.log")
        self.procs[name] = proc
        return proc

    def _celery_config(self) -> Path:
        """deploy/celery.yaml with the test's visibility timeout (the one difference, see the module docstring)."""
        doc = yaml.safe_load((DEPLOY / "celery.yaml").read_text(encoding="utf-8"))
        doc["execution"]["config"]["config_source"]["broker_transport_options"]["visibility_timeout"] = \
            TEST_VISIBILITY_TIMEOUT_S
        path = self.root / "celery.yaml"
        path.write_text(yaml.safe_dump(doc), encoding="utf-8")
        return path

    def log(self, name: str) -> str:
        path = self.logs / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def commands(self, worker_name: str | None = None) -> dict:
        return service_commands("127.0.0.1", self.web_port, self.env["RAG_EVAL_CELERY_CONFIG"], worker_name)

    def start_worker(self, index: int) -> subprocess.Popen:
        """``dagster-celery worker start`` named ``w<index>``, one step at a time (one pool process)."""
        return self._start(f"w{index}", self.commands(f"w{index}")["worker"])

    def start(self) -> Deployment:
        self.logs.mkdir(parents=True)
        self.home.mkdir()
        shutil.copy(DEPLOY / "dagster.yaml", self.home / "dagster.yaml")
        self._start_postgres()
        self.env = cli_env(
            self.home, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", PYTHONPATH=str(REPO_ROOT),
            DAGSTER_PG_URL=f"postgresql+psycopg2://postgres@127.0.0.1:{self.pg_port}/dagster",
            DAGSTER_CELERY_BROKER_URL=f"redis://127.0.0.1:{self.redis_port}/0",
            DAGSTER_CELERY_BACKEND_URL=f"redis://127.0.0.1:{self.redis_port}/1",
            RAG_EVAL_EXECUTOR="celery", RAG_EVAL_CELERY_CONFIG=str(self._celery_config()),
            RAG_EVAL_SUITES=str(self.suites_file), RAG_EVAL_OUTPUT_DIR=str(self.out),
            RAG_EVAL_NIGHTLY_CRON=self.nightly_cron, **{MARKER: self.marker})
        (self.root / "redis").mkdir()
        self._start("redis", ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(self.root / "redis")])
        for i in range(1, self.workers + 1):
            self.start_worker(i)
        self._start("daemon", self.commands()["daemon"])
        self._start("webserver", self.commands()["webserver"])
        for i in range(1, self.workers + 1):
            wait_until(f"worker w{i} to be ready", lambda i=i: self._alive(f"w{i}") and " ready." in self.log(f"w{i}"),
                       timeout=240, interval=1.0)
        wait_until("the daemon to run", lambda: self._alive("daemon") and "daemons:" in self.log("daemon"),
                   timeout=240, interval=1.0)
        wait_until("the webserver's code location", self._location_loaded, timeout=240, interval=1.0)
        return self

    def _alive(self, name: str) -> bool:
        proc = self.procs[name]
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {self.log(name)[-3000:]}")
        return True

    def _location_loaded(self) -> str | None:
        self._alive("webserver")
        try:
            data = graphql(self.webserver_url, "{ workspaceOrError { ... on Workspace { locationEntries { name "
                                               "loadStatus locationOrLoadError { __typename } } } } }")
        except OSError:
            return None
        entries = data["workspaceOrError"].get("locationEntries") or []
        ok = [e["name"] for e in entries
              if e["loadStatus"] == "LOADED" and e["locationOrLoadError"]["__typename"] == "RepositoryLocation"]
        self.location = ok[0] if ok else None
        return self.location

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        return graphql(self.webserver_url, query, variables)

    # --- stopping -------------------------------------------------------------------------------------

    def kill_worker(self, name: str) -> None:
        """SIGKILL a worker's whole process group (the wrapper, Celery's main process, its pool process):
        as a machine that is lost."""
        os.killpg(self.procs[name].pid, signal.SIGKILL)
        self.procs[name].wait(timeout=30)

    def _marked_pids(self) -> list[int]:
        """Processes carrying this deployment's marker: those it started and their children."""
        found = []
        needle = f"{MARKER}={self.marker}".encode()
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit() and int(entry.name) != os.getpid():
                try:
                    if needle in (entry / "environ").read_bytes().split(b"\0"):
                        found.append(int(entry.name))
                except OSError:
                    continue
        return found

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 30
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for pid in self._marked_pids():  # what is left: run workers, code servers, anything that outlived SIGTERM
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if (self.pg_dir / "postmaster.pid").exists():
            subprocess.run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", str(self.pg_dir), "-m", "immediate", "-w",
                                         "stop"]), capture_output=True, timeout=120)


def new_root() -> Path:
    """A folder the ``postgres`` user can enter (pytest's tmp_path lies under a 0700 folder of root's)."""
    root = Path(tempfile.mkdtemp(prefix="rag-eval-deploy-"))
    root.chmod(0o755)
    return root
