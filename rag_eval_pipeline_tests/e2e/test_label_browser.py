"""The labelling page (``rag-eval label``) driven in headless Chromium with the keyboard.

Runs the sample evaluation into a temporary folder (a copy of ``data/sample``: its hand-label file is
appended to), starts ``rag-eval label`` on 127.0.0.1, labels five items with the keys 1 / 2, undoes the
last one with ``u``, restarts the server and checks the label file holds exactly the expected lines (the
content hash recomputed here from the tables, by the documented definition); then labels one more, kills
the server with SIGKILL right after the page showed the label saved, and finds it in the file; finally
``judge_calibration`` is materialised and uses the new labels.

Needs chromium, chromedriver and selenium (skipped when missing; fails when CI is set).
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline_tests.e2e.conftest import RESTRICTED_MARKER
from rag_eval_pipeline_tests.e2e.polling import wait_until
from rag_eval_pipeline_tests.servers.local import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
LABELLER = "alice"
N = 6

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RAG_EVAL_", "DAGSTER_"))}
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    env.update(DAGSTER_HOME=str(home), RAG_EVAL_JUDGE="rule_based",
               PYTHONPATH=str(REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", ""))
    return env


def _rag_eval() -> list[str]:
    exe = Path(sys.executable).with_name("rag-eval")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "rag_eval_pipeline.cli"]


@pytest.fixture
def browser_window() -> str:
    """The labelling page's layout checks are written for a 1400 x 1000 window."""
    return "1400,1000"


@pytest.fixture
def evaluated(chromium_tools, tmp_path):
    """(config path, output folder, label file) of the sample evaluated into tmp_path."""
    data = tmp_path / "sample"
    shutil.copytree(REPO_ROOT / "data" / "sample", data)
    out = tmp_path / "out"
    run = subprocess.run([*_rag_eval(), "run", "--config", str(data / "config.yaml"), "--output", str(out)],
                         env=_env(tmp_path), cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False)
    assert (out / "judge_labels.parquet").exists(), run.stdout[-2000:] + run.stderr[-3000:]
    return data / "config.yaml", out, data / "human_labels.jsonl"


class LabelServer:
    """``rag-eval label`` as a real process on a free port."""

    def __init__(self, tmp_path: Path, config: Path, out: Path):
        self.tmp_path, self.config, self.out = tmp_path, config, out
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc = None

    def start(self) -> None:
        log = (self.tmp_path / "label_server.log").open("ab")
        self.proc = subprocess.Popen(
            [*_rag_eval(), "label", "--config", str(self.config), "--output", str(self.out), "--labeller", LABELLER,
             "--n", str(N), "--port", str(self.port)],
            env=_env(self.tmp_path), cwd=self.tmp_path, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError((self.tmp_path / "label_server.log").read_text(errors="replace")[-2000:])
            with urllib.request.urlopen(f"{self.base}/healthz", timeout=2) as r:
                return r.status == 200
        wait_until("the labelling page to answer", up, timeout=60, interval=0.3)

    def stop(self, sig=signal.SIGTERM) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, sig)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


def expected_sha(out: Path, system: str, question_id: str) -> str:
    """The documented content hash, worked out here from the tables: sha256 of the canonical JSON of
    {"v": 1, "question", "answer", "claim": null, "contexts": chunk texts in rank order}."""
    runs = pl.read_parquet(out / "rag_runs.parquet").filter((pl.col("system") == system)
                                                            & (pl.col("question_id") == question_id))
    golden = pl.read_parquet(out / "golden_set.parquet").filter(pl.col("question_id") == question_id)
    texts = dict(pl.read_parquet(out / "corpus_snapshot.parquet").select("chunk_id", "text").iter_rows())
    run = runs.row(0, named=True)
    hits = sorted(run["retrieved"], key=lambda h: h["rank"])
    doc = {"v": 1, "question": golden["question"][0], "answer": run["answer"], "claim": None,
           "contexts": [texts.get(h["chunk_id"]) for h in hits]}
    return hashlib.sha256(json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def _item(d) -> tuple[str, str, int]:
    from selenium.webdriver.common.by import By

    def read():
        el = d.find_element(By.ID, "item")
        return el.get_attribute("data-system"), el.get_attribute("data-question-id"), int(el.get_attribute("data-pos"))
    return wait_until("the item on the page", read, timeout=20, interval=0.2)


def _progress(d) -> str:
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By

    try:  # the page may be navigating to the next item
        return d.find_element(By.ID, "progress").text
    except WebDriverException:
        return ""


def _press(d, key: str) -> None:
    from selenium.webdriver.common.by import By

    d.find_element(By.TAG_NAME, "body").send_keys(key)


def _wait_progress(d, text: str) -> None:
    try:
        wait_until(f"progress {text!r}", lambda: _progress(d) == text, timeout=20, interval=0.2)
    except AssertionError:
        raise AssertionError(f"progress {text!r} not shown; the page shows {_progress(d)!r}") from None


def _new_lines(path: Path, original: bytes) -> list[dict]:
    data = path.read_bytes()
    assert data.startswith(original), "the lines that were in the file before must stay byte for byte"
    return [json.loads(line) for line in data[len(original):].decode().splitlines() if line.strip()]


def test_label_five_undo_restart_kill_and_calibrate(evaluated, browser, tmp_path):
    config, out, labels_path = evaluated
    original = labels_path.read_bytes()
    server = LabelServer(tmp_path, config, out)
    d = browser
    server.start()
    try:
        d.get(server.base + "/")
        wait_until("the first item", lambda: d.find_elements("id", "item"), timeout=20)
        assert _progress(d) == f"0 / {N}"
        assert "blind" in d.find_element("tag name", "header").text
        plan = ["1", "2", "1", "2", "1"]  # response level: 1 = attributable, 2 = not_attributable
        verdict = {"1": "attributable", "2": "not_attributable"}
        labelled = []
        for i, key in enumerate(plan, start=1):
            system, qid, _ = _item(d)
            assert RESTRICTED_MARKER not in d.page_source
            _press(d, key)
            _wait_progress(d, f"{i} / {N}")
            labelled.append((system, qid, verdict[key]))
        _press(d, "u")
        _wait_progress(d, f"4 / {N}")
        assert _item(d)[:2] == labelled[-1][:2], "undo shows the item whose label it removed"
        kept = labelled[:4]
        server.stop()

        lines = _new_lines(labels_path, original)
        assert [(r["system"], r["question_id"], r["verdict"]) for r in lines] == kept
        for r in lines:
            assert set(r) == {"system", "question_id", "verdict", "annotator", "labelled_at", "content_sha256"}
            assert r["annotator"] == LABELLER
            assert r["content_sha256"] == expected_sha(out, r["system"], r["question_id"])
            assert r["labelled_at"].endswith("+00:00")

        # a restarted server resumes: same progress, the open item is the one undone
        server.start()
        d.get(server.base + "/")
        _wait_progress(d, f"4 / {N}")
        assert _item(d)[:2] == labelled[-1][:2]

        # SIGKILL right after the page reported the label saved: the label is in the file
        system, qid, _ = _item(d)
        _press(d, "2")
        _wait_progress(d, f"5 / {N}")
        server.stop(signal.SIGKILL)
        lines = _new_lines(labels_path, original)
        got = [(r["system"], r["question_id"], r["verdict"]) for r in lines]
        assert got == kept + [(system, qid, "not_attributable")]
        server.start()
        d.get(server.base + "/")
        _wait_progress(d, f"5 / {N}")
    finally:
        server.stop()

    # the next judge_calibration uses them (its table lists the labeller; every new label is compared)
    import dagster as dg

    from rag_eval_pipeline.defs.io import ParquetIOManager
    from rag_eval_pipeline.defs.resources import EvalSettings, TableStore
    from rag_eval_pipeline_tests.defs.test_calibration import trust_assets

    frame = pl.read_parquet(out / "judge_labels.parquet")
    tables = tuple(pl.read_parquet(out / f"{name}.parquet") for name in ("rag_runs", "golden_set", "corpus_snapshot"))
    # the run's citation and nugget tables, as they are (judge_calibration reads them for its family rows)
    families = {name: pl.read_parquet(out / f"{name}.parquet") for name in ("citation_claims", "nugget_labels")}
    assets = trust_assets(EvalSettings(config_path=str(config)), TableStore(base_dir=str(out)), frame, tables,
                          **families)
    result = dg.materialize(assets, selection=["judge_labels", "judge_calibration"],
                            resources={"io_manager": ParquetIOManager(base_dir=str(out))})
    assert result.success
    table = pl.read_parquet(out / "judge_calibration.parquet").row(0, named=True)
    old = [json.loads(x) for x in original.decode().splitlines() if x.strip()]
    assert json.loads(table["labellers"]) == sorted({"helper-annotator-1", LABELLER})
    assert table["n"] == len(old) + 5  # every label (old and new) is on an answer the judge labelled
    assert table["n_stale_labels"] == 0
    overlap = {(r["system"], r["question_id"]) for r in old} & {(r["system"], r["question_id"]) for r in lines}
    assert table["human_kappa_n"] == len(overlap)


def test_claim_level_quote_from_a_selection(browser, tmp_path):
    """At claim level the selected sentence of a chunk becomes the quote; SUPPORTED without one is refused."""
    from selenium.webdriver.common.by import By

    from rag_eval_pipeline_tests.labelling.test_labelling_page import evaluation

    cfg, out = evaluation(tmp_path)
    server = LabelServer(tmp_path, cfg.path, out)
    d = browser
    server.start()
    try:
        d.get(server.base + "/")
        _wait_progress(d, "0 / 3")
        assert d.find_elements(By.ID, "claim") and not d.find_elements(By.ID, "judge")
        _press(d, "1")  # SUPPORTED with no quote
        wait_until("the refusal", lambda: "quote" in d.find_element(By.ID, "status").text, timeout=10, interval=0.2)
        assert _progress(d) == "0 / 3"
        d.execute_script("""
            const el = document.querySelector('.ctext'); const r = document.createRange();
            r.setStart(el.firstChild, 0); r.setEnd(el.firstChild, 16);
            const s = window.getSelection(); s.removeAllRanges(); s.addRange(r);
            document.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));""")
        first_chunk = d.find_element(By.CSS_SELECTOR, ".ctext").text
        assert d.find_element(By.ID, "quote").get_attribute("value") == first_chunk[:16].strip()
        system, qid, _ = _item(d)
        _press(d, "1")
        _wait_progress(d, "1 / 3")
        _press(d, "3")
        _wait_progress(d, "2 / 3")
    finally:
        server.stop()
    lines = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [(r["verdict"], r.get("quote")) for r in lines] == [("SUPPORTED", first_chunk[:16].strip()),
                                                               ("NOT_MENTIONED", None)]
    assert (lines[0]["system"], lines[0]["question_id"]) == (system, qid)


def _rect(d, element) -> dict:
    return d.execute_script("const r = arguments[0].getBoundingClientRect(); "
                            "return {top: r.top, bottom: r.bottom, h: window.innerHeight};", element)


def test_keys_and_definitions_stay_in_view_chunks_collapse_and_the_done_page_fits(evaluated, browser, tmp_path):
    """Response level on the sample: the panel with the keys and what "attributable" means stays in the viewport
    while the chunks scroll (wide and narrow windows); chunks after the third start closed and e opens them;
    the done page has no horizontal scroll at 700 px."""
    from selenium.webdriver.common.by import By

    config, out, _labels = evaluated
    server = LabelServer(tmp_path, config, out)
    d = browser
    server.start()
    try:
        d.set_window_size(1400, 700)
        d.get(server.base + "/")
        _item(d)
        panel = d.find_element(By.ID, "panel")
        definitions = d.find_element(By.ID, "definitions").text
        assert "attributable" in definitions and "Attributable: every statement the answer makes" in definitions
        assert "Not attributable: at least one statement" in definitions
        assert "1" in d.find_element(By.ID, "buttons").text
        for width in (1400, 800):
            d.set_window_size(width, 700)
            d.execute_script("window.scrollTo(0, document.body.scrollHeight);")
            wait_until("the page to scroll", lambda: d.execute_script("return window.scrollY;") > 0, timeout=5,
                       interval=0.2)
            r = _rect(d, panel)
            assert r["top"] >= 0 and r["bottom"] <= r["h"] + 1, (width, r)
            assert d.find_element(By.ID, "definitions").is_displayed()
        d.set_window_size(1400, 700)
        chunks = d.find_elements(By.CSS_SELECTOR, "details.chunk")
        cited = [c.get_attribute("open") is not None for c in chunks]
        assert all(cited[:3])
        closed = [c for c in chunks[3:] if c.get_attribute("open") is None]
        if closed:  # more than three chunks, not all cited: "e" opens every one, again closes every one
            _press(d, "e")
            assert all(c.get_attribute("open") is not None for c in chunks)
            _press(d, "e")
            assert all(c.get_attribute("open") is None for c in chunks)
        for i in range(N):
            _press(d, "1")
            if i < N - 1:
                _wait_progress(d, f"{i + 1} / {N}")
        wait_until("the done page", lambda: d.current_url.endswith("/done"), timeout=20, interval=0.2)
        d.set_window_size(700, 800)
        summary = d.find_element(By.ID, "summary").text
        assert summary.startswith(f"Done: {N} of {N} items labelled by {LABELLER}")
        widths = d.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
        assert widths[0] <= widths[1], widths  # nothing runs off the side: the long command wraps
        command = d.find_element(By.ID, "command")
        assert command.is_displayed() and "rag-eval run --config" in command.text
    finally:
        server.stop()
