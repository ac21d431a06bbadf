"""``rag-eval serve``, started for real on 127.0.0.1: it serves the report pages and refuses everything else."""

import http.client
import signal
import subprocess
import sys
import time

import pytest

from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home
from rag_eval_pipeline_tests.servers.local import busy_port, free_port
from rag_eval_pipeline_tests.servers.processes import stop_group


def _request(port: int, method: str, path: str, body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        # the path is sent as written (no client-side normalisation)
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


@pytest.fixture
def served(tmp_path):
    root = tmp_path / "outputs"
    (root / "sample" / "quick").mkdir(parents=True)
    (root / "sample" / "report.html").write_text("<html><body>REPORT-OF-SAMPLE</body></html>", encoding="utf-8")
    (root / "sample" / "quick" / "report.html").write_text("QUICK-REPORT", encoding="utf-8")
    (root / "sample" / "corpus_snapshot.parquet").write_bytes(b"PAR1 restricted chunk text")
    (root / "sample" / "compare").mkdir()
    (root / "sample" / "compare" / "compare-baseline--system-x.html").write_text("COMPARE-PAGE", encoding="utf-8")
    (root / "sample" / "compare" / "notes.html").write_text("NOT-A-COMPARISON", encoding="utf-8")
    (root / "sample" / "history" / "r1").mkdir(parents=True)
    (root / "sample" / "history" / "r1" / "compare-x.html").write_text("WRONG-FOLDER", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "report.html").write_text("OUTSIDE-SECRET", encoding="utf-8")
    (root / "link").symlink_to(outside, target_is_directory=True)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--dir", str(root),
                             "--port", str(port)], cwd=REPO_ROOT, env=cli_env(dagster_home(tmp_path)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if _request(port, "GET", "/")[0] == 200:
                    break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"rag-eval serve did not come up: {proc.stdout.read().decode(errors='replace')}")
            time.sleep(0.2)
        yield port, root, tmp_path, proc
    finally:
        stop_group(proc, term_wait_s=20)  # a test may have stopped it already


def test_sigterm_stops_serve_cleanly_with_status_0(served):
    port, _, _, proc = served
    assert _request(port, "GET", "/")[0] == 200
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=20) == 0  # not 143: the signal uvicorn re-raises after its clean shutdown


def test_serve_gives_the_report_pages(served):
    port, root, _, _ = served
    assert _request(port, "GET", "/sample/report.html") == (200, b"<html><body>REPORT-OF-SAMPLE</body></html>")
    assert _request(port, "GET", "/sample/quick/report.html") == (200, b"QUICK-REPORT")
    status, index = _request(port, "GET", "/")
    assert status == 200 and b'href="sample/report.html"' in index and b'href="sample/quick/report.html"' in index
    assert b"parquet" not in index


def test_serve_refuses_tables_listing_writing_and_paths_outside_its_folder(served):
    port, root, tmp_path, _ = served
    assert _request(port, "GET", "/sample/corpus_snapshot.parquet")[0] == 404  # tables hold withheld text
    assert _request(port, "GET", "/sample/")[0] == 404  # no directory listing
    for path in ("/../outside/report.html", "/%2e%2e/outside/report.html", "/sample/..%2f..%2foutside/report.html",
                 "/link/report.html"):
        status, body = _request(port, "GET", path)
        assert status in (400, 404), (path, status)
        assert b"OUTSIDE-SECRET" not in body
    for method in ("PUT", "POST", "DELETE"):
        status, _ = _request(port, method, "/sample/new.html", body=b"written")
        assert status == 415, method  # not JSON: refused before any route (local_guard.py)
        status, _ = _request(port, method, "/sample/report.html", body=b"overwritten",
                             headers={"Content-Type": "application/json"})
        assert status == 405, method
    assert not (root / "sample" / "new.html").exists()
    assert (root / "sample" / "report.html").read_text(encoding="utf-8") == "<html><body>REPORT-OF-SAMPLE</body></html>"


def test_serve_of_a_missing_folder_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--dir", str(tmp_path / "nope")],
                          cwd=REPO_ROOT, env=cli_env(dagster_home(tmp_path)), capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval: folder {tmp_path / 'nope'} not found (run rag-eval run first, or give --dir)"]


def test_serve_on_a_port_in_use_is_one_line_and_exit_2(tmp_path):
    with busy_port() as port:
        proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--dir", str(tmp_path),
                               "--port", str(port)], cwd=REPO_ROOT, env=cli_env(dagster_home(tmp_path)),
                              capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr  # a usage mistake, not 3 (another run holds the folder)
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval: port {port} on 127.0.0.1 is in use (another server listens there); pick another with --port"]


def test_serve_gives_comparison_pages_and_nothing_else_beside_them(served):
    port, _root, _, _ = served
    assert _request(port, "GET", "/sample/compare/compare-baseline--system-x.html") == (200, b"COMPARE-PAGE")
    assert _request(port, "GET", "/sample/compare/notes.html")[0] == 404  # not a page rag-eval compare writes
    assert _request(port, "GET", "/sample/history/r1/compare-x.html")[0] == 404  # only in a compare/ folder
    status, index = _request(port, "GET", "/")
    assert status == 200 and b'href="sample/compare/compare-baseline--system-x.html"' in index
    assert b"notes.html" not in index and b"history" not in index


def test_serve_and_serve_reference_default_to_different_ports_and_the_live_config_reaches_serve_reference():
    """The docs start ``rag-eval serve`` and ``rag-eval serve-reference`` side by side with their defaults: one
    default port for both made the second one exit 2 (port in use)."""
    import yaml

    from rag_eval_pipeline.cli import build_parser

    parser = build_parser()
    serve = parser.parse_args(["serve"]).port
    reference = parser.parse_args(["serve-reference", "--system", "bm25_k5"]).port
    assert (serve, reference) == (8765, 8766)
    live = yaml.safe_load((REPO_ROOT / "data" / "configs" / "live_http.yaml").read_text(encoding="utf-8"))
    urls = [s["url"] for s in live["systems"] if s["kind"] == "http"]
    assert urls == [f"http://127.0.0.1:{reference}/answer"]


@pytest.mark.parametrize("host, allowed", [
    ("127.0.0.1", True), ("localhost:8765", True), ("LOCALHOST", True), ("[::1]:80", True), ("[::1]", True),
    ("127.0.0.1:80@evil.com", False),  # userinfo-like: the host is evil.com
    ("localhost:evil", False),  # a port must be digits
    ("[::1].evil.com", False),  # nothing but ":port" may follow "]"
    ("localhost:80:80", False), ("localhost.evil.com", False), ("evil.com", False), ("", False), (None, False),
])
def test_only_a_loopback_host_with_a_numeric_port_passes(host, allowed):
    from rag_eval_pipeline.local_guard import loopback_host

    assert loopback_host(host) is allowed
