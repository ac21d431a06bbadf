"""The in-process evaluation of the sample that the executor and deployment tests compare against."""

import subprocess
import sys

import pytest

from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home


@pytest.fixture(scope="session")
def inprocess_sample(tmp_path_factory):
    """``rag-eval run`` on the sample (every step in one process): (its output folder, its DAGSTER_HOME)."""
    tmp = tmp_path_factory.mktemp("inprocess_sample")
    home, out = dagster_home(tmp), tmp / "sample"
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config",
                           str(SAMPLE_DIR / "config.yaml"), "--output", str(out)],
                          env=cli_env(home), cwd=REPO_ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, home
