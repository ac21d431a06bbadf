"""Ad-hoc runs stay out of the UI's catalog, read through GraphQL from a real ``dagster-webserver``.

Two ``rag-eval run --config FILE`` of configurations no suites file lists, and one run of the listed suite
``sample``, all with the same DAGSTER_HOME as the webserver (started on 127.0.0.1 by the test, stopped by it).
The ad-hoc runs are recorded in their own instance (``$DAGSTER_HOME/adhoc``), so the UI lists only what its code
location defines: the ``sample`` group holds exactly the sample's assets, no ``adhoc_*`` key or group appears
in the catalog, and the UI's run list holds only the sample's run. Before, each ad-hoc run left ~17 materialised
assets without a definition in the catalog.
"""

import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest

from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import ad_hoc_home, cli_env, dagster_home, sample_config
from rag_eval_pipeline_tests.e2e.dagster_web import graphql, location_name
from rag_eval_pipeline_tests.e2e.polling import wait_until
from rag_eval_pipeline_tests.servers.local import free_port
from rag_eval_pipeline_tests.servers.processes import start_logged, stop_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SAMPLE_ASSETS = {"corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "answer_judgements", "answer_quality",
                 "citation_claims", "citations", "nugget_labels",
                 "question_metrics", "metric_summary", "metric_history", "judge_calibration", "judge_variance",
                 "gate_results", "gate_verdict", "regression_cases", "promotion", "trec_files", "evaluation_report",
                 "promoted_baseline", "calibration_labels"}

GROUP_NODES = """query G($selector: AssetGroupSelector!) {
  assetNodes(group: $selector) { assetKey { path } groupName } }"""
CATALOG = """{ assetsOrError { __typename ... on AssetConnection { nodes { key { path } } } } }"""
GROUPS = """query R($selector: RepositorySelector!) { repositoryOrError(repositorySelector: $selector) {
  __typename ... on Repository { assetGroups { groupName } } } }"""
RUNS = """{ runsOrError { __typename ... on Runs { results { runId tags { key value } } } } }"""


def _cli(args: list[str], env: dict) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _webserver(env: dict, port: int, log: Path) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("dagster-webserver")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dagster_webserver"]
    cmd += ["-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"]
    return start_logged(cmd, env, log)


def test_ad_hoc_runs_are_not_listed_among_the_ui_groups(tmp_path):
    home, out = dagster_home(tmp_path), tmp_path / "outputs"
    suites = tmp_path / "suites.yaml"
    suites.write_text(f"suites:\n  sample: {{config: {SAMPLE_DIR / 'config.yaml'}, nightly: true}}\n",
                      encoding="utf-8")
    env = cli_env(home, RAG_EVAL_SUITES=str(suites), RAG_EVAL_OUTPUT_DIR=str(out), RAG_EVAL_JUDGE="rule_based")
    # two ad-hoc configurations (the quick evaluation: the same keys and steps, fewer questions) and the sample
    ad_hoc = []
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        proc = _cli(["run", "--config", str(sample_config(tmp_path / name)), "--job", "quick_evaluation"], env)
        ad_hoc += [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("suite adhoc_")]
    assert len(set(ad_hoc)) == 2, ad_hoc
    sample = _cli(["run", "--suite", "sample", "--job", "quick_evaluation"], env)
    sample_run = next(line.split()[1] for line in sample.stdout.splitlines() if line.startswith("run "))

    # the ad-hoc runs are recorded, in their own instance
    with dg.DagsterInstance.from_config(str(ad_hoc_home(home))) as instance:
        tagged = sorted(r.tags.get("rag_eval/suite") for r in instance.get_runs())
        materialised = {k.path[0] for k in instance.get_asset_keys()}
    assert tagged == sorted(ad_hoc) and materialised == set(ad_hoc)

    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / "webserver.log"
    server = _webserver(env, port, log)
    try:
        def up():
            if server.poll() is not None:
                raise RuntimeError(f"dagster-webserver exited: {log.read_text(errors='replace')[-3000:]}")
            return graphql(base, "{ version }")
        wait_until("dagster-webserver to answer GraphQL", up, timeout=180, interval=1.0)
        location = location_name(base)
        selector = {"groupName": "sample", "repositoryName": "__repository__", "repositoryLocationName": location}
        nodes = graphql(base, GROUP_NODES, {"selector": selector})["assetNodes"]
        keys = {tuple(n["assetKey"]["path"]) for n in nodes}
        assert keys == {("sample", a) for a in SAMPLE_ASSETS}
        catalog = graphql(base, CATALOG)["assetsOrError"]["nodes"]
        listed = {tuple(n["key"]["path"]) for n in catalog}
        assert ("sample", "quick", "metric_summary") in listed  # the catalog is read
        assert not [k for k in listed if k[0].startswith("adhoc_")]
        groups = graphql(base, GROUPS, {"selector": {"repositoryName": "__repository__",
                                                     "repositoryLocationName": location}})
        names = {g["groupName"] for g in groups["repositoryOrError"]["assetGroups"]}
        assert names == {"sample", "sample_quick"}
        runs = graphql(base, RUNS)["runsOrError"]["results"]
        assert [r["runId"] for r in runs] == [sample_run]
    finally:
        stop_group(server)
