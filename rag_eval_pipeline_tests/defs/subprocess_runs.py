"""Helpers for tests that run ``rag-eval run`` in a real subprocess (crash, concurrency, secrets)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import yaml

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR

# Variables of the parent environment that would change what the child run does.
_CLEARED = ("RAG_EVAL_CONFIG", "RAG_EVAL_OUTPUT_DIR", "RAG_EVAL_JUDGE", "RAG_EVAL_JUDGE_BASE_URL",
            "RAG_EVAL_JUDGE_MODEL", "RAG_EVAL_JUDGE_API_KEY", "RAG_EVAL_JUDGE_CACHE", "RAG_EVAL_HUMAN_LABELS",
            "RAG_EVAL_TEST_SLOW_WRITE_S", "RAG_EVAL_SUITES", "RAG_EVAL_REPORT_URL", "DAGSTER_HOME",
            "RAG_EVAL_EXECUTOR", "RAG_EVAL_CELERY_CONFIG")


def _absolute(value):
    """Every string of the configuration that names a file or folder of the sample, made absolute."""
    if isinstance(value, dict):
        return {k: _absolute(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v) for v in value]
    if isinstance(value, str) and value and not Path(value).is_absolute() and (SAMPLE_DIR / value).exists():
        return str((SAMPLE_DIR / value).resolve())
    return value


def sample_config_dict() -> dict:
    """The sample configuration with every relative path made absolute (so a copy can live anywhere)."""
    return _absolute(yaml.safe_load((SAMPLE_DIR / "config.yaml").read_text(encoding="utf-8")))


def sample_config(tmp_path: Path, **overrides) -> Path:
    """The sample configuration with absolute paths (and top-level ``overrides``), written into tmp_path."""
    cfg = sample_config_dict()
    cfg.update(overrides)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def dagster_home(tmp_path: Path) -> Path:
    """A fresh DAGSTER_HOME (SQLite run, event and schedule storage; telemetry off)."""
    home = tmp_path / "dagster_home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    return home


def ad_hoc_home(home: Path) -> Path:
    """Where ``rag-eval run --config FILE`` records the runs of a configuration no suites file lists: its own
    Dagster instance inside DAGSTER_HOME (cli/common.py: dagster_home), which the UI does not read."""
    from rag_eval_pipeline.cli.common import AD_HOC_HOME

    return home / AD_HOC_HOME


def cli_env(home: Path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env.update({"DAGSTER_HOME": str(home), "PYTHONUNBUFFERED": "1"}, **extra)
    return env


def start_cli(config: Path, out: Path, env: dict, *args: str, log: Path | None = None) -> subprocess.Popen:
    """Start ``python -m rag_eval_pipeline.cli run`` in its own session; output goes to ``log`` (a file)."""
    cmd = [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config), "--output", str(out), *args]
    sink = open(log, "wb") if log is not None else subprocess.DEVNULL
    try:
        return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True)
    finally:
        if log is not None:
            sink.close()


def kill(proc: subprocess.Popen) -> None:
    """SIGKILL the process group this test started (the CLI and anything it spawned)."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def wait_for(predicate, timeout_s: float, proc: subprocess.Popen | None = None, what: str = "condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"the run exited ({proc.returncode}) before {what}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


def materialize_sample(config: Path, out: Path, judge=None):
    """A good in-process materialisation of every asset and check."""
    return dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out), judge=judge),
                          raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


def visible_tables(out: Path) -> dict[str, bytes]:
    """Every file a reader would pick up (names not starting with '.'), path -> bytes."""
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(out).parts)}
