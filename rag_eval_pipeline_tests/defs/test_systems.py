"""Live systems through the real chain: the shipped ``live_http.yaml`` against ``rag-eval
serve-reference``, a python callable, the secrets canary in a real ``rag-eval run`` subprocess,
the sensor and ``rag-eval estimate``."""

import json
import re
import secrets
import subprocess
import sys
from pathlib import Path

import dagster as dg
import polars as pl
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources, defs
from rag_eval_pipeline.defs.resources import EvalSettings
from rag_eval_pipeline.defs.scope import SuiteScope
from rag_eval_pipeline.defs.systems import live_sources_sensor
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.core.systems import reference_callable
from rag_eval_pipeline_tests.core.systems.live_servers import RagFaultServer, ServeReference
from rag_eval_pipeline_tests.defs.subprocess_runs import ad_hoc_home, cli_env, dagster_home, sample_config_dict
from rag_eval_pipeline_tests.servers.local import busy_port

LIVE_CONFIG = REPO_ROOT / "data" / "configs" / "live_http.yaml"
PY_CALLABLE = "rag_eval_pipeline_tests.core.systems.reference_callable:answer"


def live_config(tmp_path: Path, url: str) -> Path:
    """``data/configs/live_http.yaml`` with absolute paths, the http system at ``url``, plus a python
    system running the same reference system."""
    cfg = yaml.safe_load(LIVE_CONFIG.read_text(encoding="utf-8"))
    for section in ("corpus", "golden"):
        cfg[section]["path"] = str((LIVE_CONFIG.parent / cfg[section]["path"]).resolve())
    http = next(s for s in cfg["systems"] if s["kind"] == "http")
    assert http["url"] == "http://127.0.0.1:8766/answer"  # what the README's two commands reach
    http["url"] = url
    cfg["systems"].append({"name": "bm25_k5_py", "kind": "python", "callable": PY_CALLABLE, "concurrency": 2})
    path = tmp_path / "live.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def _without(df: pl.DataFrame, system: str) -> pl.DataFrame:
    return (df.filter((pl.col("system") == system) & ~pl.col("metric").str.starts_with("latency_ms"))
            .drop("system").sort(df.columns[1:], nulls_last=True))


def test_live_http_and_python_systems_have_the_metric_tables_of_the_in_process_system(tmp_path):
    out = tmp_path / "out"
    with ServeReference(LIVE_CONFIG, "bm25_k5") as srv:
        config = live_config(tmp_path, srv.url)
        result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out)),
                                raise_on_error=False)
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["every_question_has_a_run_row"] and checks["denominators_consistent"]
    summary = pl.read_parquet(out / "metric_summary.parquet")
    qm = pl.read_parquet(out / "question_metrics.parquet")
    reference = _without(summary, "bm25_k5")
    assert reference.height > 100
    for live in ("bm25_k5_http", "bm25_k5_py"):
        assert _without(summary, live).equals(reference), live
        assert _without(qm, live).equals(_without(qm, "bm25_k5")), live
        lat = summary.filter((pl.col("system") == live) & (pl.col("split") == "all") & (pl.col("segment") == "all")
                             & pl.col("metric").str.starts_with("latency_ms"))
        assert sorted(lat["metric"]) == ["latency_ms_p50", "latency_ms_p95"]
        assert lat["ci_method"].to_list() == ["none", "none"] and lat["ci_low"].null_count() == 2
        assert (lat["value"] > 0).all() and lat["n"].to_list() == [52, 52]
    assert summary.filter(pl.col("system") == "bm25_k5")["metric"].str.starts_with("latency").sum() == 0
    runs = pl.read_parquet(out / "rag_runs.parquet")
    http_rows = runs.filter(pl.col("system") == "bm25_k5_http")
    assert http_rows.height == 52 and http_rows["system_version"].n_unique() == 1
    md = result.asset_materializations_for_node("rag_runs")[0].metadata
    assert md["live_systems"].value["bm25_k5_http"]["calls"] == 52


def test_a_canary_key_appears_nowhere_but_in_the_request(tmp_path):
    token = f"sk-live-LEAKCANARY-{secrets.token_hex(12)}"
    home, out = dagster_home(tmp_path), tmp_path / "out"
    cfg = sample_config_dict()
    cfg["systems"] = [s for s in cfg["systems"] if s["kind"] == "reference"] + [
        {"name": "team_http", "kind": "http", "url": "PLACEHOLDER", "max_retries": 0,
         "headers_from_env": {"Authorization": "RAG_EVAL_TEST_CANARY_TOKEN"}, "version_header": "X-Model-Version"}]
    cfg["gates"]["candidate_systems"] = ["bm25_k10", "team_http"]
    cfg.pop("calibration")
    with RagFaultServer(reference_callable.answer, {"q01": "echo_auth", "q02": "echo_auth_200"}) as srv:
        cfg["systems"][-1]["url"] = srv.url
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
        env = cli_env(home, RAG_EVAL_TEST_CANARY_TOKEN=f"Bearer {token}", PYTHONPATH=str(REPO_ROOT))
        proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                               "--output", str(out)], env=env, capture_output=True, timeout=600)
        auth = [r["headers"].get("authorization") for r in srv.requests]
    stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert re.search(r"^run [0-9a-f-]{36} \(full_evaluation\)", stdout, re.MULTILINE), stdout[-2000:] + stderr[-2000:]
    assert len(auth) == 52 and set(auth) == {f"Bearer {token}"}  # the key reached the server, every time
    needle = token.encode()
    assert needle not in proc.stdout and needle not in proc.stderr
    files = [p for root in (home, out) for p in root.rglob("*") if p.is_file()]
    assert any(p.suffix == ".db" for p in files) and any(p.suffix == ".html" for p in files)
    assert [str(p) for p in files if needle in p.read_bytes()] == []
    runs = pl.read_parquet(out / "rag_runs.parquet").filter(pl.col("system") == "team_http")
    q01 = runs.filter(pl.col("question_id") == "q01").row(0, named=True)
    assert q01["decision"] == "error" and "HTTP 401" in q01["error"] and "[redacted]" in q01["error"]
    # run tags and config hold no secret either (an ad-hoc configuration: its runs are in their own instance)
    with dg.DagsterInstance.from_config(str(ad_hoc_home(home))) as instance:
        records = instance.get_run_records()
        assert records
        for record in records:
            assert token not in json.dumps(record.dagster_run.tags) + json.dumps(record.dagster_run.run_config)


def test_sensor_starts_quick_evaluation_when_a_source_changes_content(tmp_path):
    log = tmp_path / "team.jsonl"
    log.write_bytes((SAMPLE_DIR / "runs" / "team_rag.jsonl").read_bytes())
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "a.jsonl").write_text('{"resourceSpans": []}\n', encoding="utf-8")
    cfg = sample_config_dict()
    cfg["systems"] = [s for s in cfg["systems"] if s["kind"] == "reference"] + [
        {"name": "team_rag", "kind": "logged", "path": str(log)},
        {"name": "team_traces", "kind": "traces", "path": str(traces)}]
    cfg.pop("calibration")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    # the code location has one sensor per suite with a logged or traces system: the sample has team_rag
    assert "sample__live_sources_changed" in [s.name for s in defs.sensors]
    live_sources_changed = live_sources_sensor(SuiteScope("alpha"), {"rag_eval/suite": "alpha"})
    assert live_sources_changed.default_status == dg.DefaultSensorStatus.STOPPED
    assert live_sources_changed.job_name == "alpha__quick_evaluation"
    cursor = None

    def tick():
        nonlocal cursor
        resources = {"alpha__settings": EvalSettings(config_path=str(config), suite="alpha")}
        with dg.build_sensor_context(cursor=cursor, resources=resources) as ctx:
            result = live_sources_changed(ctx)
            cursor = ctx.cursor
        return result

    assert isinstance(tick(), dg.SkipReason)  # the first tick records
    assert isinstance(tick(), dg.SkipReason)
    log.write_bytes(log.read_bytes())  # same bytes, new modification time: no run
    assert isinstance(tick(), dg.SkipReason)
    with log.open("a", encoding="utf-8") as fh:
        fh.write("\n")  # a blank line: the content changed
    request = tick()
    assert isinstance(request, dg.RunRequest) and request.tags["rag_eval/changed_systems"] == "team_rag"
    assert request.tags["rag_eval/suite"] == "alpha"
    (traces / "b.jsonl").write_text('{"resourceSpans": []}\n', encoding="utf-8")
    request2 = tick()
    assert request2.tags["rag_eval/changed_systems"] == "team_traces" and request2.run_key != request.run_key
    assert isinstance(tick(), dg.SkipReason)


def test_estimate_counts_system_calls_and_makes_none(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    monkeypatch.setenv("RAG_EVAL_JUDGE", "rule_based")
    with RagFaultServer(reference_callable.answer) as srv:
        config = live_config(tmp_path, srv.url)
        monkeypatch.setenv("RAG_EVAL_CONFIG", str(config))
        assert main(["estimate", "--config", str(config)]) == 0
        assert srv.requests == []
    out = capsys.readouterr().out
    # 52 golden questions; max_retries 2 in live_http.yaml: 52 x 3 calls at most
    assert "system bm25_k5_http (http): 52 calls for a full run, at most 156 with every retry" in out
    assert "system bm25_k5_py (python): 52 calls for a full run;" in out


def test_serve_reference_refuses_a_system_it_cannot_serve(capsys, tmp_path):
    """Usage and configuration mistakes are exit 2, as for rag-eval run; one line on stderr."""
    assert main(["serve-reference", "--config", str(SAMPLE_DIR / "config.yaml"), "--system", "team_rag"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "team_rag" in err[0] and "kind 'logged'" in err[0]
    assert main(["serve-reference", "--config", str(SAMPLE_DIR / "config.yaml"), "--system", "nope"]) == 2
    assert "no system named 'nope'" in capsys.readouterr().err
    assert main(["serve-reference", "--config", str(LIVE_CONFIG), "--system", "bm25_k5_http"]) == 2  # kind: http
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kind 'http'" in err[0]
    assert main(["serve-reference", "--config", str(tmp_path / "missing.yaml"), "--system", "bm25_k5"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    with busy_port() as port:
        assert main(["serve-reference", "--config", str(SAMPLE_DIR / "config.yaml"), "--system", "bm25_k5",
                     "--port", str(port)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"rag-eval serve-reference: port {port} on 127.0.0.1 is in use (another server listens there); "
                   "pick another with --port"]
