"""The Dagster UI and the report, driven in headless Chromium (Selenium + the Debian chromium-driver).

Starts ``dagster dev`` on a free port with two suites (fresh DAGSTER_HOME with a copy of .dagster_home/dagster.yaml,
outputs in a temporary folder) and ``rag-eval serve`` on another (RAG_EVAL_REPORT_URL points at it). Checks that
the suites are apart in the UI (groups, catalog), runs suite alpha by clicking "Materialize all" on its job
(GraphQL ``launchRun`` when the click does not launch a run), then suite beta, and checks that beta's run left
alpha's latest materialisations, checks, plotted values and files untouched; that runs carry the suite's tags;
that the calibration check the sample cannot block says so; and opens the report from the link on the
``evaluation_report`` asset page: the headline table is there and the restricted marker of the corpus is not.

Needs: ``apt-get install -y chromium chromium-driver`` and ``pip install selenium``. Skipped when either is
missing, except when the environment variable CI is set: then it fails. Screenshots go to
``$RAG_EVAL_E2E_SCREENSHOTS`` when set (else the test's temporary folder).
"""

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline_tests.e2e.conftest import RESTRICTED_MARKER
from rag_eval_pipeline_tests.e2e.dagster_web import graphql, location_name
from rag_eval_pipeline_tests.e2e.polling import wait_until
from rag_eval_pipeline_tests.servers.local import free_port
from rag_eval_pipeline_tests.servers.processes import http_up, start_logged, stop_group

REPO_ROOT = Path(__file__).resolve().parents[2]
# A run launched from the UI uses Dagster's default executor (jobs name none): a process per step, each loading
# the code location, so two full runs take minutes on a busy machine.
pytestmark = [pytest.mark.browser, pytest.mark.timeout(1800)]


def _two_suites(tmp_path: Path) -> Path:
    """alpha: the sample; beta: the sample without the logged team_rag system and without calibration."""
    from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

    d = tmp_path / "suites"
    d.mkdir()
    sample = sample_config_dict()
    # alpha's floor is above what the embedded judge reaches on the sample: its calibration check warns
    alpha = dict(sample, calibration=dict(sample["calibration"], kappa_floor=0.9))
    (d / "alpha.yaml").write_text(yaml.safe_dump(alpha, allow_unicode=True), encoding="utf-8")
    beta = dict(sample, systems=[s for s in sample["systems"] if s["name"] != "team_rag"],
                gates=dict(sample["gates"], candidate_systems=["bm25_k10"]))
    beta.pop("calibration")
    (d / "beta.yaml").write_text(yaml.safe_dump(beta, allow_unicode=True), encoding="utf-8")
    (d / "suites.yaml").write_text("suites:\n  alpha: {config: alpha.yaml, nightly: true}\n"
                                   "  beta: {config: beta.yaml, nightly: true}\n", encoding="utf-8")
    return d / "suites.yaml"


@pytest.fixture
def dagster_ui(chromium_tools, tmp_path):
    """(base URL, output folder, location name, report server URL) of a ``dagster dev`` with two suites and a
    ``rag-eval serve`` of its output folder, started for this test; both stopped afterwards."""
    home = tmp_path / "dagster_home"
    home.mkdir()
    src = REPO_ROOT / ".dagster_home" / "dagster.yaml"
    if src.exists():
        shutil.copy(src, home / "dagster.yaml")
    else:
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    out = tmp_path / "outputs"
    out.mkdir()
    port, serve_port = free_port(), free_port()
    reports = f"http://127.0.0.1:{serve_port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_EVAL_", "DAGSTER_"))}
    # in_process: every step in the run's process, as rag-eval run does (Dagster's default multiprocess executor
    # would start ~25 step processes per run; the executors have their own tests in deploy/)
    env.update(DAGSTER_HOME=str(home), RAG_EVAL_OUTPUT_DIR=str(out), RAG_EVAL_JUDGE="rule_based",
               RAG_EVAL_SUITES=str(_two_suites(tmp_path)), RAG_EVAL_REPORT_URL=reports, RAG_EVAL_EXECUTOR="in_process")
    exe = Path(sys.executable).with_name("dagster")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dagster"]
    cmd += ["dev", "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"]
    ui_log, serve_log = tmp_path / "dagster_dev.log", tmp_path / "serve.log"
    proc = start_logged(cmd, env, ui_log)
    server = start_logged([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--port", str(serve_port)], env,
                          serve_log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until("rag-eval serve to answer HTTP", http_up(f"{reports}/", server, serve_log), timeout=60)
        wait_until("dagster dev to answer HTTP", http_up(f"{base}/server_info", proc, ui_log), timeout=180,
                   interval=1.0)
        yield base, out, location_name(base), reports
    finally:
        stop_group(server)
        stop_group(proc)


def _shots(tmp_path: Path) -> Path:
    d = Path(os.environ.get("RAG_EVAL_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _body(driver) -> str:
    from selenium.webdriver.common.by import By

    return driver.find_element(By.TAG_NAME, "body").text


def _expect_text(driver, shots: Path, name: str, *needles: str, timeout: float = 60) -> None:
    try:
        wait_until(f"{list(needles)} on {driver.current_url}", lambda: all(n in _body(driver) for n in needles),
                   timeout)
    except AssertionError:
        driver.save_screenshot(str(shots / f"FAILED_{name}.png"))
        missing = [n for n in needles if n not in _body(driver)]
        raise AssertionError(f"{driver.current_url}: not shown: {missing}") from None
    _dismiss_dialogs(driver)
    driver.save_screenshot(str(shots / f"{name}.png"))


def _dismiss_dialogs(driver) -> None:
    from selenium.webdriver.common.by import By

    for button in driver.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
        if button.is_displayed():
            button.click()
            time.sleep(0.5)


def _run_ids(base: str) -> set[str]:
    data = graphql(base, "{ runsOrError(limit: 50) { __typename ... on Runs { results { runId } } } }")
    return {r["runId"] for r in data["runsOrError"].get("results") or []}


def _launch_from_ui(driver, base: str, location: str, job: str, shots: Path) -> str | None:
    """Click "Materialize all" on a job page; the new run's id, or None when none appeared.

    The launch is recognised by a new run in the instance (GraphQL), not by the toast, which can come late
    while the code server builds the first execution plan.
    """
    from selenium.webdriver.common.by import By

    before = _run_ids(base)
    driver.get(f"{base}/locations/{location}/jobs/{job}")
    button = wait_until("the Materialize all button", lambda: next(
        (b for b in driver.find_elements(By.XPATH, "//button[normalize-space()='Materialize all']")
         if b.is_displayed() and b.is_enabled()), None), timeout=60)
    time.sleep(2.0)  # let the graph finish loading the job's assets
    _dismiss_dialogs(driver)
    button.click()
    try:
        new = wait_until("a run launched by the click", lambda: _run_ids(base) - before, timeout=90, interval=1.0)
    except AssertionError:
        driver.save_screenshot(str(shots / f"FAILED_materialize_click_{job}.png"))
        return None
    driver.save_screenshot(str(shots / f"launched_{job}.png"))
    return sorted(new)[0]


def _launch_with_graphql(base: str, location: str, job: str) -> str:
    data = graphql(base, """
        mutation Launch($params: ExecutionParams!) {
          launchRun(executionParams: $params) {
            __typename
            ... on LaunchRunSuccess { run { runId } }
            ... on PythonError { message }
            ... on InvalidStepError { invalidStepKey }
            ... on RunConfigValidationInvalid { errors { message } }
          }
        }""", {"params": {"selector": {"repositoryLocationName": location, "repositoryName": "__repository__",
                                        "jobName": job}, "runConfigData": {}}})
    result = data["launchRun"]
    assert result["__typename"] == "LaunchRunSuccess", result
    return result["run"]["runId"]


def _run_job(driver, base: str, location: str, job: str, shots: Path) -> str:
    """Launch ``job`` (the UI button first, GraphQL when the click launched nothing) and wait for success."""
    run_id, how = _launch_from_ui(driver, base, location, job, shots), "UI button"
    if run_id is None:
        run_id, how = _launch_with_graphql(base, location, job), "GraphQL launchRun (the UI click launched nothing)"
    print(f"{job}: run {run_id} launched with the {how}")
    driver.get(f"{base}/runs/{run_id}")

    def finished():
        title = driver.title
        if "[FAILURE]" in title or "[CANCELED]" in title:
            driver.save_screenshot(str(shots / f"FAILED_run_{job}.png"))
            raise AssertionError(f"run {run_id} of {job} ended as {title}")
        return "[SUCCESS]" in title

    deadline = time.monotonic() + 900
    while True:
        try:
            wait_until(f"run {run_id} to succeed", finished, timeout=20, interval=1.0)
            break
        except AssertionError as exc:
            if "ended as" in str(exc) or time.monotonic() > deadline:
                raise
            driver.refresh()
    status = graphql(base, "query R($id: ID!) { runOrError(runId: $id) { ... on Run { status } } }", {"id": run_id})
    assert status["runOrError"]["status"] == "SUCCESS"
    return run_id


ASSET_STATE = """query A($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) { ... on AssetNode {
    assetMaterializations(limit: 1) { runId metadataEntries { label ... on FloatMetadataEntry { floatValue } } }
    assetChecksOrError { ... on AssetChecks { checks { name blocking
      executionForLatestMaterialization { runId status evaluation { severity } } } } } } } }"""
SUITE_ASSETS = ("corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "question_metrics", "metric_summary",
                "metric_history", "judge_calibration", "gate_results", "promotion", "evaluation_report")


def _suite_state(base: str, suite: str) -> dict:
    """Per asset of the suite: the latest materialisation's run id and numeric metadata (what the UI plots),
    and each check's latest execution (run id, status, severity)."""
    state = {}
    for asset in SUITE_ASSETS:
        node = graphql(base, ASSET_STATE, {"key": {"path": [suite, asset]}})["assetNodeOrError"]
        mats = node["assetMaterializations"]
        checks = (node.get("assetChecksOrError") or {}).get("checks") or []
        state[asset] = {
            "run": mats[0]["runId"] if mats else None,
            "plots": sorted((e["label"], e.get("floatValue")) for e in (mats[0]["metadataEntries"] if mats else [])
                            if "floatValue" in e),
            "checks": sorted((c["name"], c["blocking"],
                              json.dumps(c["executionForLatestMaterialization"], sort_keys=True))
                             for c in checks),
        }
    return state


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != ".rag-eval.lock"}


def test_two_suites_side_by_side_in_the_ui_and_the_report_opens_from_the_asset_page(dagster_ui, browser, tmp_path):
    from selenium.webdriver.common.by import By

    base, out, location, reports = dagster_ui
    shots = _shots(tmp_path)
    d = browser

    # each suite is its own asset group: its whole lineage in one graph, apart from the other suite's
    d.get(f"{base}/asset-groups")
    _dismiss_dialogs(d)
    _expect_text(d, shots, "01_groups", "alpha", "alpha_quick", "beta", "beta_quick")
    d.get(f"{base}/assets/alpha")
    _expect_text(d, shots, "02_catalog_alpha", "metric_summary", "evaluation_report", "quick")
    d.get(f"{base}/automation")
    _expect_text(d, shots, "03_automation", "nightly_full_evaluation")

    alpha_run = _run_job(d, base, location, "alpha__full_evaluation", shots)
    _expect_text(d, shots, "04_alpha_run", "Success", "evaluation_report")
    alpha_state, alpha_files = _suite_state(base, "alpha"), _files(out / "alpha")
    assert {v["run"] for v in alpha_state.values()} == {alpha_run}

    # the run list shows which suite, configuration and output folder each run is
    tags = graphql(base, "query R($id: ID!) { runOrError(runId: $id) { ... on Run { tags { key value } } } }",
                   {"id": alpha_run})["runOrError"]["tags"]
    tags = {t["key"]: t["value"] for t in tags}
    config = tmp_path / "suites" / "alpha.yaml"
    assert tags["rag_eval/suite"] == "alpha" and tags["rag_eval/config_path"] == str(config)
    assert tags["rag_eval/config_sha256"] == hashlib.sha256(config.read_bytes()).hexdigest()
    assert tags["rag_eval/output_dir"] == str(out / "alpha")
    d.get(f"{base}/runs")
    _expect_text(d, shots, "05_run_list", "rag_eval/suite", "alpha")

    beta_run = _run_job(d, base, location, "beta__full_evaluation", shots)
    assert beta_run != alpha_run
    # suite beta's run left suite alpha's latest materialisations, checks, plotted values and files as they were
    assert _suite_state(base, "alpha") == alpha_state
    assert _files(out / "alpha") == alpha_files
    assert {v["run"] for v in _suite_state(base, "beta").values()} == {beta_run}
    # each suite's asset page shows its own rows: 52 questions x 3 systems in alpha, x 2 (no team_rag) in beta
    d.get(f"{base}/assets/alpha/rag_runs")
    _expect_text(d, shots, "06_alpha_rag_runs", "Row count", "156", "team_rag")
    d.get(f"{base}/assets/beta/rag_runs")
    _expect_text(d, shots, "07_beta_rag_runs", "Row count", "104", "bm25_k10")
    assert "team_rag" not in _body(d)

    # the calibration check of the sample cannot block: the UI says so
    d.get(f"{base}/assets/alpha/judge_calibration?view=checks&checkDetail=judge_calibrated_above_floor")
    _expect_text(d, shots, "08_calibration_check", "judge_calibrated_above_floor", "non-blocking asset check",
                 "A warning only")
    d.get(f"{base}/assets/alpha/metric_summary?view=checks&checkDetail=denominators_consistent")
    _expect_text(d, shots, "09_denominators_check", "denominators_consistent", "This is a blocking asset check")

    # the report opens from the asset page's link (served by rag-eval serve, not a file:// link)
    d.get(f"{base}/assets/alpha/evaluation_report")
    href = f"{reports}/alpha/report.html"
    link = wait_until("the report link on the asset page", lambda: next(
        (a for a in d.find_elements(By.TAG_NAME, "a") if a.get_attribute("href") == href and a.is_displayed()), None),
        timeout=60)
    d.save_screenshot(str(shots / "10_report_link.png"))
    assert not [a for a in d.find_elements(By.TAG_NAME, "a") if (a.get_attribute("href") or "").startswith("file:")]
    windows = set(d.window_handles)
    link.click()
    new = wait_until("the report to open",
                     lambda: set(d.window_handles) - windows or (d.current_url == href and {None}),
                     timeout=30)
    if None not in new:
        d.switch_to.window(new.pop())
    _expect_text(d, shots, "11_report", "RAG evaluation report", "Summary", "faithfulness", "recall_5", "[restricted: ")
    assert d.current_url == href
    headline = d.find_elements(By.CSS_SELECTOR, "table.headline")
    assert headline and "faithfulness" in headline[0].text and "num/den" in headline[0].text
    assert RESTRICTED_MARKER not in d.page_source and RESTRICTED_MARKER not in _body(d)
    d.get(f"{reports}/alpha/trend.html")
    _expect_text(d, shots, "12_trend", "RAG evaluation trend", "faithfulness")
    assert RESTRICTED_MARKER not in d.page_source
