"""bench/judge_agreement.py end to end against a real llama.cpp server with SmolLM2-135M (127.0.0.1).

It proves the wiring only (BEGIN and the sample's hand labels through the OpenAI-compatible judge,
kappa printed, judge errors counted): a 135M model's agreement figures mean nothing.
The server fixture (started and stopped on 127.0.0.1) is the one of test_llama_server.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.core.judges.test_llama_server import llama_url  # noqa: F401 - the fixture

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1500)]

REPO = Path(__file__).resolve().parents[3]


def _datasets() -> Path:
    root = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    if not (root / "begin_wow" / "begin_dev_wow.tsv").is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {root}/begin_wow is missing")
        pytest.skip(f"{root}/begin_wow is missing")
    return root


def test_judge_agreement_script_runs_against_a_llama_cpp_server(llama_url):  # noqa: F811
    datasets = _datasets()
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "judge_agreement.py"), "--base-url", llama_url, "--model", "smollm2",
         "--limit", "3", "--concurrency", "1", "--timeout-s", "240", "--datasets", str(datasets)],
        capture_output=True, text=True, timeout=1400, cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.strip().splitlines()
    assert re.fullmatch(r"kappa BEGIN (-?\d\.\d{3}|undefined) sample (-?\d\.\d{3}|undefined)", lines[-1])
    assert "n = 3 (Generic rows dropped: 0)" in out.stdout   # BEGIN, first 3 rows
    assert re.search(r"^n = 3, agreement \d\.\d{3}", out.stdout, re.M)  # the sample's first 3 hand labels
    assert "its kappa means nothing" in out.stdout
    assert "judge_model smollm2" in out.stdout
