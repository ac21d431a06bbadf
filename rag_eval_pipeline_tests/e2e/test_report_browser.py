"""The report, the comparison page and the UI's report link, in headless Chromium (Selenium + Debian chromedriver).

One ``rag-eval run`` of the sample (as suite ``alpha``, from the CLI, with no RAG_EVAL_REPORT_URL in its
environment) writes the tables; then:

- the report's first screen (1280 x 720) shows the verdict and the promotion outcome;
- ``rag-eval compare baseline system:team_rag`` writes a page that ``rag-eval serve`` serves: it opens, its
  question table starts with a regression and sorts when a header is clicked;
- ``dagster dev``, started with RAG_EVAL_REPORT_URL pointing at ``rag-eval serve``, links the CLI-launched
  run's report from the ``evaluation_report`` asset page, and the link opens it.

Needs ``apt-get install -y chromium chromium-driver`` and ``pip install selenium``: skipped when missing, a
failure when the environment variable CI is set.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rag_eval_pipeline_tests.e2e.conftest import RESTRICTED_MARKER
from rag_eval_pipeline_tests.e2e.dagster_web import location_name
from rag_eval_pipeline_tests.e2e.polling import wait_until
from rag_eval_pipeline_tests.servers.local import free_port
from rag_eval_pipeline_tests.servers.processes import http_up, start_logged, stop_group

REPO_ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cli_run(chromium_tools, tmp_path_factory):
    """(env, output root, suites file) after ``rag-eval run`` of suite alpha (the sample) from the CLI."""
    tmp = tmp_path_factory.mktemp("report_e2e")
    home = tmp / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    suites = tmp / "suites.yaml"
    suites.write_text(f"suites:\n  alpha: {{config: {REPO_ROOT / 'data' / 'sample' / 'config.yaml'}, nightly: true}}\n",
                      encoding="utf-8")
    out = tmp / "outputs"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_EVAL_", "DAGSTER_"))}
    env.update(DAGSTER_HOME=str(home), RAG_EVAL_OUTPUT_DIR=str(out), RAG_EVAL_JUDGE="rule_based",
               RAG_EVAL_SUITES=str(suites), PYTHONPATH=str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--suite", "alpha"], env=env,
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "compare", "baseline", "system:team_rag",
                           "--suite", "alpha", "--permutations", "2000"], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return env, out, tmp


@pytest.fixture(scope="module")
def report_server(cli_run):
    """The URL of ``rag-eval serve`` over the output root."""
    env, out, tmp = cli_run
    port = free_port()
    log = tmp / "serve.log"
    proc = start_logged([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--dir", str(out), "--port",
                         str(port)], env, log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until("rag-eval serve to answer HTTP", http_up(f"{url}/", proc, log), timeout=60)
        yield url
    finally:
        stop_group(proc)


def _shots(tmp_path: Path) -> Path:
    d = Path(os.environ.get("RAG_EVAL_E2E_SCREENSHOTS") or tmp_path / "screenshots")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _viewport(d, width: int, height: int) -> None:
    """Resize the window so that the page's viewport is ``width`` x ``height`` CSS pixels."""
    d.set_window_size(width, height)
    inner = d.execute_script("return [window.innerWidth, window.innerHeight];")
    d.set_window_size(width + (width - inner[0]), height + (height - inner[1]))


def _in_first_screen(d, element) -> bool:
    return d.execute_script("const r = arguments[0].getBoundingClientRect(); "
                            "return r.top >= 0 && r.bottom <= window.innerHeight && r.height > 0;", element)


def test_the_reports_first_screen_shows_the_verdict_and_the_promotion(cli_run, report_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    d = browser
    _viewport(d, 1280, 720)
    d.get(f"{report_server}/alpha/report.html")
    verdict = d.find_element(By.CSS_SELECTOR, "p.verdict")
    promotion = d.find_element(By.CSS_SELECTOR, "p.promotion")
    d.save_screenshot(str(_shots(tmp_path) / "report_first_screen.png"))
    assert d.execute_script("return window.scrollY;") == 0
    assert verdict.text.startswith("Verdict: PASS — every gate passed on split test")
    assert promotion.text.startswith("Promotion: promotes bm25_k10 as the baseline")  # gates.promote of the sample
    assert _in_first_screen(d, verdict) and _in_first_screen(d, promotion)
    table = d.find_element(By.CSS_SELECTOR, "table.decision")
    assert _in_first_screen(d, table)
    assert "judge calibration" in table.text and "κ 0.597 [95% CI 0.304, 0.890] ≥ floor 0.4" in table.text
    assert "comparison split" in table.text and "test (26 golden questions)" in table.text
    # the run metadata comes after the decision
    run = d.find_element(By.ID, "run")
    assert run.location["y"] > table.location["y"]
    assert RESTRICTED_MARKER not in d.page_source


def _question_ids(d) -> list[str]:
    from selenium.webdriver.common.by import By

    return [row.find_elements(By.TAG_NAME, "td")[1].text
            for row in d.find_elements(By.CSS_SELECTOR, "table.questions tbody tr")]


def _changes(d) -> list[float]:
    from selenium.webdriver.common.by import By

    return [float(row.find_elements(By.TAG_NAME, "td")[2].text)
            for row in d.find_elements(By.CSS_SELECTOR, "table.questions tbody tr")]


def test_the_compare_page_opens_and_sorts(cli_run, report_server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    d = browser
    _viewport(d, 1400, 900)
    d.get(report_server + "/")
    link = next(a for a in d.find_elements(By.TAG_NAME, "a")
                if a.text == "alpha/compare/compare-baseline--system-team_rag.html")
    link.click()
    wait_until("the comparison page", lambda: "Comparison: baseline vs system:team_rag" in d.title, timeout=30)
    d.save_screenshot(str(_shots(tmp_path) / "compare.png"))
    assert RESTRICTED_MARKER not in d.page_source
    metrics = d.find_element(By.CSS_SELECTOR, "table.metrics").text
    assert "recall_5" in metrics and "faithfulness" in metrics
    changes = _changes(d)
    assert len(changes) > 3 and changes[0] < 0  # regressions first
    first_improvement = next(i for i, c in enumerate(changes) if c > 0)
    regressions, improvements = changes[:first_improvement], changes[first_improvement:]
    assert all(c < 0 for c in regressions) and regressions == sorted(regressions)  # the largest drop first
    assert all(c > 0 for c in improvements) and improvements == sorted(improvements, reverse=True)

    headers = {h.text: h for h in d.find_elements(By.CSS_SELECTOR, "table.questions thead th")}
    headers["question"].click()
    ids = _question_ids(d)
    assert ids == sorted(ids, key=str.lower)
    headers["question"].click()
    assert _question_ids(d) == sorted(ids, key=str.lower, reverse=True)
    headers["change"].click()
    assert _changes(d) == sorted(changes)
    headers["change"].click()
    assert _changes(d) == sorted(changes, reverse=True)
    # a question links to its card: both answers, both retrievals, the verdicts and the citations
    first = d.find_element(By.CSS_SELECTOR, "table.questions tbody tr td a")
    qid = first.text
    first.click()
    card = d.find_element(By.ID, f"cq-{qid}")
    assert _in_first_screen(d, card.find_element(By.TAG_NAME, "h4"))
    text = card.text
    for row in ("decision", "answer", "cited", "retrieved", "claims"):
        assert row in text


@pytest.fixture
def dagster_ui(cli_run, report_server, tmp_path):
    """(base URL, location name) of a ``dagster dev`` over the CLI run's instance, with RAG_EVAL_REPORT_URL set."""
    env, _out, _tmp = cli_run
    ui_env = dict(env, RAG_EVAL_REPORT_URL=report_server)
    port = free_port()
    exe = Path(sys.executable).with_name("dagster")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "dagster"]
    cmd += ["dev", "-h", "127.0.0.1", "-p", str(port), "-w", "workspace.yaml"]
    log = tmp_path / "dagster_dev.log"
    proc = start_logged(cmd, ui_env, log)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until("dagster dev to answer HTTP", http_up(f"{base}/server_info", proc, log), timeout=240,
                   interval=1.0)
        yield base, location_name(base)
    finally:
        stop_group(proc)


def _click_past_overlays(d, element, tries: int = 10) -> None:
    """Click ``element``; a dialog the Dagster UI opens on its own (a tour, a notice) covers the page with a
    backdrop that takes the click: close it (its Skip button, or Escape) and try again."""
    from selenium.common.exceptions import ElementClickInterceptedException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    for attempt in range(tries):
        try:
            element.click()
            return
        except ElementClickInterceptedException:
            if attempt == tries - 1:
                raise
            for button in d.find_elements(By.XPATH, "//button[normalize-space()='Skip' or normalize-space()='Close'"
                                                    " or normalize-space()='Dismiss']"):
                if button.is_displayed():
                    button.click()
            d.find_element(By.TAG_NAME, "body").send_keys(Keys.ESCAPE)
            time.sleep(1.0)


def test_the_ui_links_the_report_of_a_cli_launched_run(cli_run, report_server, dagster_ui, browser, tmp_path):
    from selenium.webdriver.common.by import By

    base, _location = dagster_ui
    d = browser
    _viewport(d, 1600, 1100)
    d.get(f"{base}/assets/alpha/evaluation_report")
    href = f"{report_server}/alpha/report.html"
    shots = _shots(tmp_path)

    def the_link():
        for button in d.find_elements(By.XPATH, "//button[normalize-space()='Skip']"):
            if button.is_displayed():
                button.click()
        # the metadata table renders only the rows in view: filter it to the link's key
        for box in d.find_elements(By.CSS_SELECTOR, "input[placeholder='Filter metadata keys']"):
            if box.is_displayed() and box.get_attribute("value") != "latest_report":
                box.clear()
                box.send_keys("latest_report")
        return next((a for a in d.find_elements(By.TAG_NAME, "a")
                     if a.get_attribute("href") == href and a.is_displayed()), None)

    try:
        link = wait_until("the report link on the asset page", the_link, timeout=120, interval=1.0)
    except AssertionError:
        d.save_screenshot(str(shots / "FAILED_ui_report_link.png"))
        raise
    d.save_screenshot(str(shots / "ui_report_link.png"))
    assert "latest_report" in d.find_element(By.TAG_NAME, "body").text
    windows = set(d.window_handles)
    _click_past_overlays(d, link)
    new = wait_until("the report to open",
                     lambda: set(d.window_handles) - windows or (d.current_url == href and {None}), timeout=30)
    if None not in new:
        d.switch_to.window(new.pop())
    wait_until("the report page", lambda: "RAG evaluation report" in d.title, timeout=30)
    assert d.current_url == href
    assert d.find_element(By.CSS_SELECTOR, "p.verdict").text.startswith("Verdict: PASS")
