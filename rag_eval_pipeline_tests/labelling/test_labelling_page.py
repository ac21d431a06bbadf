"""The labelling page over HTTP (a real uvicorn server on 127.0.0.1), and ``rag-eval label``'s errors.

The keyboard, restart and SIGKILL checks are in ``e2e/test_label_browser.py``; these cover claim level,
blindness, access control, refusals and the end page on a tiny hand-made evaluation.
"""

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest
import uvicorn
import yaml

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.storage import write_parquet_atomic
from rag_eval_pipeline.labelling.app import build_app
from rag_eval_pipeline.labelling.session import LabellingSession
from rag_eval_pipeline_tests.core.test_labelling import SECRET, tables
from rag_eval_pipeline_tests.servers.local import busy_port, free_port


def evaluation(tmp_path, level="claim"):
    runs, golden, snap, judge = tables()
    out = tmp_path / "out"
    out.mkdir(parents=True)
    for name, df in (("rag_runs", runs), ("golden_set", golden), ("corpus_snapshot", snap), ("judge_labels", judge)):
        write_parquet_atomic(df, out / f"{name}.parquet", name)  # as a run writes them (schema version metadata)
    cfg = {"corpus": {"source": "documents_dir", "path": "docs"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "A", "kind": "reference"}, {"name": "B", "kind": "reference"}],
           "calibration": {"human_labels": "labels.jsonl", "level": level}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    (tmp_path / "docs").mkdir(exist_ok=True)  # the corpus folder must exist when the configuration loads
    return load_config(tmp_path / "config.yaml"), out


@pytest.fixture
def serve():
    servers = []

    def start(session):
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(build_app(session), host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            assert time.monotonic() < deadline, "server did not start"
            time.sleep(0.05)
        servers.append((server, thread))
        return f"http://127.0.0.1:{port}"
    yield start
    for server, thread in servers:
        server.should_exit = True
        thread.join(timeout=10)


def get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.geturl(), r.read().decode()


def post(url, body, content_type="application/json"):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_claim_level_blind_page_refusals_and_end_page(tmp_path, serve):
    cfg, out = evaluation(tmp_path)
    s = LabellingSession(cfg, out, "alice", n=50)
    # B's answers draw on the support-staff chunk: withheld; A has 3 claims, all offered
    assert s.n_items == 5 and s.n_withheld == 2
    assert sorted(it.key for it in s.sample) == [("A", "q1", "q1:c1"), ("A", "q1", "q1:c2"), ("A", "q2", "q2:c1")]
    base = serve(s)
    url, page = get(base + "/")
    assert url.endswith("/item/0") and '<span id=progress>0 / 3</span>' in page
    pages = [get(f"{base}/item/{i}")[1] for i in range(3)]
    assert all(SECRET not in p and "ZX-99" not in p for p in pages)
    assert all('id=judge' not in p for p in pages), "blind by default: no judge verdict on the page"
    it = s.sample[0]
    assert f"id=claim>{it.claim}</div>" in pages[0] and "withdrawn" in "".join(pages)

    sha = it.content_sha256
    code, body = post(base + "/api/label", {"pos": 0, "verdict": "SUPPORTED", "content_sha256": sha})
    assert code == 400 and "quote" in body["error"]
    code, body = post(base + "/api/label", {"pos": 0, "verdict": "MAYBE", "content_sha256": sha})
    assert code == 400 and "not one of" in body["error"]
    code, body = post(base + "/api/label", {"pos": 0, "verdict": "NOT_MENTIONED", "content_sha256": "0" * 64})
    assert code == 409
    code, _ = post(base + "/api/label", {"pos": 0, "verdict": "NOT_MENTIONED", "content_sha256": sha},
                   content_type="text/plain")
    assert code == 415
    # SUPPORTED needs a quote literally in a chunk shown (the judge's rule, core.judges.quotes): the item's chunks
    # hold no "moon", so this quote is refused like a missing one
    assert not any("moon" in (c.get("text") or "").lower() for c in it.chunks)
    code, body = post(base + "/api/label", {"pos": 0, "verdict": "SUPPORTED", "quote": "the moon is cheese",
                                            "content_sha256": sha})
    assert code == 400 and "'the moon is cheese' is in none" in body["error"] and "chunk" in body["error"]
    assert not (tmp_path / "labels.jsonl").exists(), "nothing refused is written"

    for pos, verdict in ((0, "SUPPORTED"), (1, "NOT_MENTIONED"), (2, "CONTRADICTED")):
        code, body = post(base + "/api/label", {"pos": pos, "verdict": verdict, "quote": " Returns are free ",
                                                "note": "", "content_sha256": s.sample[pos].content_sha256})
        assert code == 200 and body["done"] == pos + 1 and body["total"] == 3
    assert body["next"] == "/done"
    lines = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [(r["claim_id"], r["verdict"], r.get("quote")) for r in lines] == [
        (s.sample[0].claim_id, "SUPPORTED", "Returns are free"), (s.sample[1].claim_id, "NOT_MENTIONED", None),
        (s.sample[2].claim_id, "CONTRADICTED", "Returns are free")]
    assert all(r["claim"] == s.sample[i].claim for i, r in enumerate(lines))
    url, done = get(base + "/")
    assert url.endswith("/done") and "Done: 3 of 3 items labelled by alice" in done
    assert f"rag-eval run --config {cfg.path} --output {out}" in done
    assert "κ =" not in done and "kappa =" not in done
    code, body = post(base + "/api/undo", {})
    assert code == 200 and body["next"] == "/item/2"
    assert len((tmp_path / "labels.jsonl").read_text().splitlines()) == 2


def test_show_judge_and_groups(tmp_path, serve):
    cfg, out = evaluation(tmp_path, level="response")
    s = LabellingSession(cfg, out, "bob", n=1, groups=("customers", "support-staff"), show_judge=True)
    assert s.n_withheld == 0 and len(s.sample) == 1
    _, page = get(serve(s) + "/item/0")
    assert "id=judge" in page and s.sample[0].judge_label in page and "judge shown" in page


def test_rag_eval_label_mistakes_are_one_line(tmp_path, capsys):
    from rag_eval_pipeline.cli import main

    cfg, out = evaluation(tmp_path)
    (out / "rag_runs.parquet").unlink()
    assert main(["label", "--config", str(cfg.path), "--output", str(out), "--labeller", "a"]) == 1  # data: no table
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "rag_runs" in err and f"rag-eval run --config {cfg.path} --output {out}" in err
    cfg, out = evaluation(tmp_path / "x")
    (tmp_path / "x" / "labels.jsonl").write_text('{"system": "A", "question_id": "q1", "claim_id": "q1:c1", '
                                                 '"claim": "c", "verdict": "PERHAPS"}\n')
    assert main(["label", "--config", str(cfg.path), "--output", str(out), "--labeller", "a"]) == 1  # data: a bad label
    err = capsys.readouterr().err.strip()
    assert "line 1" in err and "'verdict'" in err and str(tmp_path / "x" / "labels.jsonl") in err
    with busy_port() as port:
        (tmp_path / "x" / "labels.jsonl").unlink()
        assert main(["label", "--config", str(cfg.path), "--output", str(out), "--labeller", "a",
                     "--port", str(port)]) == 2  # usage: a port in use
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"port {port} on 127.0.0.1 is in use" in err
    assert main(["label", "--suite", "nope", "--labeller", "a"]) == 2  # usage: an unknown suite
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "unknown suite 'nope'" in err
    assert main(["label", "--config", str(cfg.path), "--output", str(out), "--labeller", "a", "--n", "0"]) == 2
    (tmp_path / "x" / "config.yaml").write_text(yaml.safe_dump({**yaml.safe_load(
        (tmp_path / "x" / "config.yaml").read_text()), "calibration": None}), encoding="utf-8")
    assert main(["label", "--config", str(cfg.path), "--output", str(out), "--labeller", "a"]) == 2  # configuration
    assert "calibration" in capsys.readouterr().err


def test_label_finds_the_tables_where_rag_eval_run_writes_them(tmp_path, capsys, monkeypatch):
    """``--config FILE`` without ``--output``: the ad-hoc suite's folder under $RAG_EVAL_OUTPUT_DIR (as ``rag-eval
    run --config FILE`` writes it), not the root; ``--suite`` through $RAG_EVAL_SUITES. A session that finds its
    tables goes on to the port, so a busy port (exit 2) proves the tables were found; absent tables are exit 1."""
    from rag_eval_pipeline.cli import main
    from rag_eval_pipeline.core.suites import ad_hoc_suite

    cfg, out = evaluation(tmp_path / "e")
    root = tmp_path / "outputs"
    monkeypatch.setenv("RAG_EVAL_OUTPUT_DIR", str(root))
    monkeypatch.delenv("RAG_EVAL_CONFIG", raising=False)
    suite_dir = root / ad_hoc_suite(cfg.path).name  # the folder rag-eval run --config FILE writes
    assert main(["label", "--config", str(cfg.path), "--labeller", "a"]) == 1
    err = capsys.readouterr().err.strip()
    assert f"file {suite_dir / 'rag_runs.parquet'}" in err
    assert f"rag-eval run --config {cfg.path} --output {suite_dir}" in err  # the command that writes them there
    out.rename(suite_dir.parent.mkdir(parents=True) or suite_dir)
    with busy_port() as number:
        port = str(number)
        assert main(["label", "--config", str(cfg.path), "--labeller", "a", "--port", port]) == 2
        assert "is in use" in capsys.readouterr().err
        # a listed suite: its own folder under the root
        (tmp_path / "suites.yaml").write_text(f"suites:\n  mine:\n    config: {cfg.path}\n", encoding="utf-8")
        monkeypatch.setenv("RAG_EVAL_SUITES", str(tmp_path / "suites.yaml"))
        assert main(["label", "--suite", "mine", "--labeller", "a", "--port", port]) == 1
        assert f"file {root / 'mine' / 'rag_runs.parquet'}" in capsys.readouterr().err
        suite_dir.rename(root / "mine")
        assert main(["label", "--suite", "mine", "--labeller", "a", "--port", port]) == 2
        assert "is in use" in capsys.readouterr().err
        # --output is the suite's own folder, as for rag-eval run
        assert main(["label", "--suite", "mine", "--output", str(root / "mine"), "--labeller", "a",
                     "--port", port]) == 2
        assert "is in use" in capsys.readouterr().err


def test_the_label_files_lock_is_ignored_by_git(tmp_path):
    from rag_eval_pipeline.core.label_file import LabelFile
    from rag_eval_pipeline_tests.conftest import REPO_ROOT

    (tmp_path / "human_labels.jsonl").write_text("", encoding="utf-8")
    LabelFile(tmp_path / "human_labels.jsonl", "claim").rows()  # takes the lock: the file appears beside the labels
    (lock,) = [p.name for p in tmp_path.iterdir() if p.name != "human_labels.jsonl"]
    assert lock == ".human_labels.jsonl.lock"
    for folder in ("data/sample", "data/labels"):
        proc = subprocess.run(["git", "check-ignore", "-q", "--no-index", f"{folder}/{lock}"], cwd=REPO_ROOT,
                              capture_output=True, timeout=30)
        if proc.returncode == 128:
            pytest.skip("not a git checkout")
        assert proc.returncode == 0, f"{folder}/{lock} is not ignored"
    assert subprocess.run(["git", "check-ignore", "-q", "--no-index", "data/sample/human_labels.jsonl"],
                          cwd=REPO_ROOT, timeout=30).returncode == 1  # the labels themselves are not


def test_resume_skips_labelled_items_and_offers_stale_ones_again(tmp_path, serve):
    cfg, out = evaluation(tmp_path)
    probe = LabellingSession(cfg, out, "alice", n=3)
    first, second = probe.sample[0], probe.sample[1]
    # alice labelled the first item when its answer read differently (stale) and the second as it is now;
    # bob labelled the third: his label does not count for alice
    rows = [{"system": first.system, "question_id": first.question_id, "claim_id": first.claim_id,
             "claim": first.claim, "verdict": "NOT_MENTIONED", "annotator": "alice", "content_sha256": "0" * 64},
            {"system": second.system, "question_id": second.question_id, "claim_id": second.claim_id,
             "claim": second.claim, "verdict": "NOT_MENTIONED", "annotator": "alice",
             "content_sha256": second.content_sha256},
            {"system": probe.sample[2].system, "question_id": probe.sample[2].question_id,
             "claim_id": probe.sample[2].claim_id, "claim": probe.sample[2].claim, "verdict": "NOT_MENTIONED",
             "annotator": "bob"}]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    s = LabellingSession(cfg, out, "alice", n=3)
    base = serve(s)
    url, page = get(base + "/")
    assert url.endswith("/item/0") and "<span id=progress>1 / 3</span>" in page and "stale" in page
    code, body = post(base + "/api/label",
                      {"pos": 0, "verdict": "CONTRADICTED", "content_sha256": first.content_sha256})
    assert code == 200 and body["done"] == 2 and body["next"] == "/item/2"  # the second is skipped: labelled
    lines = [json.loads(x) for x in (tmp_path / "labels.jsonl").read_text().splitlines()]
    assert [(r["annotator"], r["verdict"]) for r in lines] == [("alice", "CONTRADICTED"), ("alice", "NOT_MENTIONED"),
                                                               ("bob", "NOT_MENTIONED")]
