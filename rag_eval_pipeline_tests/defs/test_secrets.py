"""Secrets and restricted text stay out of everything Dagster and the pipeline write.

One real ``rag-eval run`` subprocess with the OpenAI-compatible judge against the local fault server,
with a fresh DAGSTER_HOME (real SQLite run and event storage, compute logs):

- the API key (a random canary) reaches the server in the Authorization header, and nowhere else:
  not in stdout/stderr, not in any file under DAGSTER_HOME, the output folder (label rows, reports)
  or the judge cache, even though the server echoes the key back in the 401 errors about one of the
  answers and copies the Authorization header into the justification of every successful reply;
- the text of a document outside the test user's ACL groups (``ZX-INTERNAL-7731``, in
  ``escalado-interno.md``, acl support-staff) is in the team's logged answers (``rag_runs``, what is
  being evaluated) but never in asset or check metadata, nor in any report (JSON / Markdown / HTML).
"""

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import ad_hoc_home, cli_env, dagster_home, sample_config
from rag_eval_pipeline_tests.servers.fault_server import FaultServer

RESTRICTED = "ZX-INTERNAL-7731"
REPORT_SUFFIXES = (".json", ".md", ".html", ".htm", ".txt", ".csv")


@pytest.fixture(scope="module")
def judged_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("secrets")
    key = f"sk-test-LEAKCANARY-{secrets.token_hex(12)}"
    home, out, cache = dagster_home(tmp), tmp / "out", tmp / "judge_cache.sqlite"
    # Every request about one of the team's answers is refused with a 401 that echoes the key back
    # (as some servers do): the key then sits in an error text that the pipeline records.
    first_answer = json.loads((SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()[0])
    # Every other reply succeeds but copies the Authorization header into its justifications and model name.
    with FaultServer("echo_auth", poison=first_answer["answer"], poison_mode="auth_echo") as server:
        env = cli_env(home, RAG_EVAL_JUDGE="openai_compatible", RAG_EVAL_JUDGE_BASE_URL=server.base_url,
                      RAG_EVAL_JUDGE_MODEL="fault-model", RAG_EVAL_JUDGE_API_KEY=key,
                      RAG_EVAL_JUDGE_CACHE=str(cache))
        proc = subprocess.run(
            [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(sample_config(tmp)),
             "--output", str(out)],
            env=env, capture_output=True, timeout=600)
        requests = server.chat_requests()
    stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    match = re.search(r"^run ([0-9a-f-]{36}) \(full_evaluation\)", stdout, re.MULTILINE)
    assert match, stdout[-3000:] + stderr[-3000:]
    return {"key": key, "home": home, "out": out, "cache": cache, "requests": requests, "proc": proc,
            "run_id": match.group(1), "stdout": stdout, "stderr": stderr, "poisoned": first_answer["question_id"]}


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def test_the_api_key_reaches_the_server_and_nothing_else(judged_run):
    key = judged_run["key"]
    auth = [r["headers"].get("authorization") for r in judged_run["requests"]]
    assert len(auth) > 20 and all(a == f"Bearer {key}" for a in auth)  # the test is not vacuous
    assert {"auth_echo", "echo_auth"} <= {r["mode"] for r in judged_run["requests"]}
    needle = key.encode()
    assert needle not in judged_run["proc"].stdout and needle not in judged_run["proc"].stderr
    home_files, out_files = _files(judged_run["home"]), _files(judged_run["out"])
    assert any(p.suffix == ".db" for p in home_files)  # real SQLite event / run storage
    assert any(p.suffix == ".parquet" for p in out_files)
    cache_files = [p for p in _files(judged_run["cache"].parent) if p.name.startswith(judged_run["cache"].name)]
    leaks = [str(p) for p in home_files + out_files + cache_files if needle in p.read_bytes()]
    assert leaks == []
    # the echoed error is recorded, scrubbed
    labels = pl.read_parquet(judged_run["out"] / "judge_labels.parquet")
    errors = labels.filter((pl.col("verdict") == "JUDGE_ERROR") & (pl.col("question_id") == judged_run["poisoned"]))
    assert errors.height >= 1
    assert errors["error"].str.contains("auth_error", literal=True).all()
    assert not labels["error"].drop_nulls().str.contains("LEAKCANARY", literal=True).any()
    # the echo inside successful replies arrived, scrubbed, in the label rows
    judged = labels.filter(pl.col("verdict") != "JUDGE_ERROR")
    assert judged.height > 20 and judged["justification"].str.contains("Authorization: Bearer ***", literal=True).all()
    assert not judged["justification"].str.contains("LEAKCANARY", literal=True).any()


def _metadata_texts(instance: dg.DagsterInstance, run_id: str) -> list[tuple[str, str]]:
    """(where, text) of every metadata value of the run's materialisations and check evaluations."""
    texts = []
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None:
            continue
        if ev.event_type_value == "ASSET_MATERIALIZATION":
            where, md = ev.asset_key.to_user_string(), ev.event_specific_data.materialization.metadata
        elif ev.event_type_value == "ASSET_CHECK_EVALUATION":
            data = ev.event_specific_data
            where, md = f"{data.asset_key.to_user_string()}:{data.check_name}", data.metadata
        else:
            continue
        texts += [(f"{where}.{k}", str(getattr(v, "value", v))) for k, v in md.items()]
    return texts


def test_restricted_text_never_reaches_metadata_or_reports(judged_run):
    out = judged_run["out"]
    # it is in the data being evaluated (the team's answers), so its absence below means something
    runs = pl.read_parquet(out / "rag_runs.parquet")
    assert runs.filter(pl.col("answer").str.contains(RESTRICTED, literal=True)).height >= 1
    with dg.DagsterInstance.from_config(str(ad_hoc_home(judged_run["home"]))) as instance:  # an ad-hoc run
        texts = _metadata_texts(instance, judged_run["run_id"])
        messages = [e.user_message or "" for e in instance.all_logs(judged_run["run_id"])]
    assert len(texts) > 50
    assert [where for where, text in texts if RESTRICTED in text] == []
    assert [m for m in messages if RESTRICTED in m] == []
    reports = [p for p in _files(out) if p.suffix.lower() in REPORT_SUFFIXES]
    assert [str(p) for p in reports if RESTRICTED.encode() in p.read_bytes()] == []
