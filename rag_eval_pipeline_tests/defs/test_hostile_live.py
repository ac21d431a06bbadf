"""Hostile inputs, round three: live systems, traces, servers, the baseline, suites and the CLI.

Every case is a folder of ``fixtures/hostile/`` (README "Round three") whose ``target`` is one of
:data:`TARGETS`; this module runs it through the real product: the whole chain materialised with a
real Dagster instance under the test's own DAGSTER_HOME and a hostile endpoint on 127.0.0.1
(``servers/hostile_rag.py``), the real ``rag-eval`` CLI in a subprocess, or a real server started by
the test. Every chain case sends a canary key (``headers_from_env``) and looks for it afterwards in
every file of the output folder (Parquet decoded too) and of DAGSTER_HOME: it is found nowhere.
Where the run must refuse, the output folder is byte-identical afterwards.
"""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.report.access import skeleton
from rag_eval_pipeline.core.report.decision import DECISION_FILE, PREVIOUS_DIR
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline.defs.stopped import SET_ASIDE
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.core.systems import reference_callable
from rag_eval_pipeline_tests.core.systems.live_servers import ServeReference
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict
from rag_eval_pipeline_tests.defs.test_hostile_inputs import (
    CASES,
    HOSTILE,
    every_file_hash,
    load_case,
    step_errors,
)
from rag_eval_pipeline_tests.servers.hostile_rag import HostileRagServer, gzip_bomb, u_escaped
from rag_eval_pipeline_tests.servers.local import free_port
from rag_eval_pipeline_tests.servers.processes import stop_group

TARGETS = ("live_http", "live_python", "traces", "traces_size", "traces_values", "traces_line", "cli", "server",
           "baseline", "label", "acl")
CANARY_VAR = "RAG_EVAL_TEST_CANARY_KEY"
TEAM = "team_rag"


def cases(target: str) -> list[str]:
    return [c for c in CASES if load_case(c)["target"] == target]


def new_canary() -> str:
    """A random hex key: no credential pattern (``Bearer ...``, ``sk-...``) knows it, so only scrubbing by
    value can remove it; 32 hex digits, so none of its forms turns up by chance in a run's files."""
    return secrets.token_hex(16)


def canary_forms(token: str) -> list[bytes]:
    """The canary and its header value (``Bearer <token>``) as written, and in the forms a server can echo
    them in, whether or not the scrubber knows them: JSON-, URL- and HTML-escaped, upper-cased, base64 (the
    characters made of the token's bytes alone, at each of the three byte alignments, both alphabets), hex,
    and its first and last 12 characters (an echo cut short)."""
    forms = {token, token.upper(), u_escaped(token), urllib.parse.quote(token, safe=""),
             "".join(f"&#{ord(c)};" for c in token), token.encode().hex(), token[:12], token[-12:]}
    for text in (token, f"Bearer {token}", f"user:{token}"):
        raw = text.encode()
        forms.add(raw.hex())
        for pad in range(3):
            enc = base64.b64encode(b"\0" * pad + raw).decode()
            inner = enc[-(-8 * pad // 6):(8 * (pad + len(raw))) // 6]
            forms.update({inner, inner.replace("+", "-").replace("/", "_")})
    return sorted(f.encode() for f in forms if len(f) >= 12)


def assert_canary_nowhere(token: str, *roots: Path, texts: tuple[str, ...] = ()) -> None:
    """No file under ``roots`` (raw bytes, and every Parquet file decoded) and none of ``texts`` holds the
    canary in any of its forms."""
    forms = canary_forms(token)
    found = []
    for root in roots:
        for p in sorted(root.rglob("*")):
            if not p.is_file():
                continue
            data = p.read_bytes()
            if p.suffix == ".parquet" and data:
                data += json.dumps(pl.read_parquet(p).to_dicts(), default=str, ensure_ascii=False).encode()
            found += [f"{p} ({f[:12]!r}...)" for f in forms if f in data]
    for i, text in enumerate(texts):
        found += [f"text {i}" for f in forms if f in text.encode()]
    assert found == [], found


def chain_config(tmp_path: Path, system: dict | None, name: str = "config.yaml") -> Path:
    """The sample configuration (absolute paths) plus one system under test, written as ``name``."""
    cfg = sample_config_dict()
    if system:
        cfg["systems"].append(system)
        # the case's own error rows are what it tests: the share-of-errors gate is left out of its way
        cfg.setdefault("gates", {})["max_run_error_share"] = 1.0
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def materialize_in(home: Path, config: Path, out: Path):
    """Every asset and check, into ``out``, recorded in a real (SQLite) instance under ``home``."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out)),
                              raise_on_error=False, instance=instance)


def live_info(result, system: str) -> dict:
    md = result.asset_materializations_for_node("rag_runs")[-1].metadata
    return md["live_systems"].value[system]


def check_error_rows(case: dict, runs: pl.DataFrame, system: str, info: dict) -> None:
    expect = case["expect"]
    rows = {r["question_id"]: r for r in runs.filter(pl.col("system") == system).iter_rows(named=True)}
    assert len(rows) == 52, len(rows)
    attacked = set(case.get("faults") or expect["errors"])
    for qid, message in expect["errors"].items():
        assert rows[qid]["decision"] == "error" and message in rows[qid]["error"], (qid, rows[qid]["error"])
        assert rows[qid]["retrieved"] == [] and rows[qid]["answer"] is None
        assert len(rows[qid]["error"]) < 1000  # a reason, never the reply itself
    for qid, text in (expect.get("answers") or {}).items():  # answered word for word
        assert (rows[qid]["decision"], rows[qid]["answer"], rows[qid]["error"]) == ("answer", text, None), rows[qid]
    for qid, fields in (expect.get("redacted") or {}).items():  # answered, the key replaced in each field
        assert rows[qid]["decision"] != "error", rows[qid]["error"]
        for name in fields:
            assert "[redacted]" in (rows[qid][name] or ""), (qid, name, rows[qid][name])
    others = [r for q, r in rows.items() if q not in attacked]
    assert others and all(r["decision"] != "error" for r in others), [r["error"] for r in others if r["error"]][:3]
    for name in ("bm25_k5", "bm25_k10", TEAM):  # the other systems are unaffected
        assert runs.filter(pl.col("system") == name).height == 52
    if "kinds" in expect:
        assert info["errors_by_kind"] == expect["kinds"], info["errors_by_kind"]


# ------------------------------------------------------------------------------- live systems in the chain

@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("live_http"))
def test_live_http_attack_is_an_error_row_of_that_question_only(name, tmp_path, monkeypatch):
    case = load_case(name)
    token = new_canary()
    monkeypatch.setenv(CANARY_VAR, f"Bearer {token}")
    home, out = dagster_home(tmp_path), tmp_path / "out"
    if "gzip_bomb" in case["faults"].values():
        gzip_bomb()  # compressing 1 GiB takes seconds: done before the run, not inside the first request's timeout
    with HostileRagServer(reference_callable.answer, case["faults"], **(case.get("server") or {})) as srv:
        system = {"name": "team_http", "kind": "http", "url": srv.url, "max_retries": 0, "concurrency": 4,
                  "headers_from_env": {"Authorization": CANARY_VAR}, "version_header": "X-Model-Version",
                  **(case.get("system") or {})}
        result = materialize_in(home, chain_config(tmp_path, system), out)
        max_in_flight = srv.max_in_flight
    assert result.success, step_errors(result)
    runs = pl.read_parquet(out / "rag_runs.parquet")
    check_error_rows(case, runs, "team_http", live_info(result, "team_http"))
    if "max_in_flight" in case["expect"]:
        # every attempt timed out and was retried: never more requests open at once than `concurrency`
        assert max_in_flight == case["expect"]["max_in_flight"], max_in_flight
    assert_canary_nowhere(token, out, home)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("live_python"))
def test_live_python_oversized_results_are_error_rows_never_judged(name, tmp_path):
    case = load_case(name)
    home, out = dagster_home(tmp_path), tmp_path / "out"
    system = {"name": "team_py", "kind": "python", "callable": case["callable"], "concurrency": 2,
              **(case.get("system") or {})}
    started = time.monotonic()
    result = materialize_in(home, chain_config(tmp_path, system), out)
    assert result.success, step_errors(result)
    assert time.monotonic() - started < 300  # it used to be still judging 20 MB answers after 300 s
    runs = pl.read_parquet(out / "rag_runs.parquet")
    check_error_rows(case, runs, "team_py", live_info(result, "team_py"))
    labels = pl.read_parquet(out / "judge_labels.parquet").filter(pl.col("system") == "team_py")
    assert not set(labels["question_id"].to_list()) & set(case["expect"]["errors"])  # nothing judged


# ------------------------------------------------------------------------------------------------- traces

@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("traces"))
def test_traces_ambiguity_is_counted_listed_and_resolved_by_the_rule(name, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    home, out = dagster_home(tmp_path), tmp_path / "out"
    system = {"name": "team_traces", "kind": "traces", "path": str(HOSTILE / name / case["file"]),
              "question_id_attribute": "rag.question_id"}
    config = chain_config(tmp_path, system)
    if expect["outcome"] == "error":
        # a good run first: the refused one must leave every file as it was
        assert materialize_in(home, chain_config(tmp_path, None, "good.yaml"), out).success
        before = every_file_hash(out)
        result = materialize_in(home, config, out)
        assert not result.success
        errors = step_errors(result)
        assert list(errors) == [expect["asset"]], list(errors)
        msg = next(m for cls, m in errors[expect["asset"]] if cls == InputError.__name__)
        assert f"/{expect['file']}" in msg and f"line {expect['line']}," in msg, msg
        assert f"field {expect['field']!r}" in msg and expect["message"] in msg, msg
        # The run stopped before its report: the good run's report and decision are kept, byte for byte,
        # under previous/, and decision.json is this run's stopped decision naming the failed step.
        moved = {(f"{PREVIOUS_DIR}/{k}" if k in SET_ASIDE else k): v for k, v in before.items()}
        after = every_file_hash(out)
        assert {k: v for k, v in after.items() if k != DECISION_FILE} == moved
        stopped = json.loads((out / DECISION_FILE).read_text(encoding="utf-8"))
        assert stopped["run_id"] == result.run_id and stopped["stopped_before_report"] is True
        assert stopped["verdict"] == "fail"
        [line] = stopped["blocking_failures"]
        assert line.startswith(f"step {expect['asset']}: InputError: "), line
        return
    result = materialize_in(home, config, out)
    assert result.success, step_errors(result)
    info = live_info(result, "team_traces")
    assert {k: info[k] for k in expect["counts"]} == expect["counts"], info
    listed = info["orphan_span_examples"] + info["ambiguous_root_examples"] + info["rootless_examples"]
    assert len(listed) == sum(1 for v in expect["counts"].values() if v)  # each shape listed, with its trace id
    row = pl.read_parquet(out / "rag_runs.parquet").filter(
        (pl.col("system") == "team_traces") & (pl.col("question_id") == "q01")).row(0, named=True)
    assert (row["decision"], row["answer"]) == ("answer", expect["answer"])
    assert row["retrieved"] == [{"chunk_id": "devoluciones-a1#1", "score": 0.9, "rank": 1}]
    with dg.DagsterInstance.from_config(str(home)) as instance:
        logs = [e.user_message for e in instance.all_logs(result.run_id)]
    assert any("documented root rule" in (m or "") for m in logs)  # warned, never silent


def _otlp_line(span: dict) -> str:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"


def _attr(key: str, value) -> dict:
    if isinstance(value, list):
        return {"key": key, "value": {"arrayValue": {"values": [{"stringValue": v} for v in value]}}}
    return {"key": key, "value": {"stringValue": value}}


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("traces_values"))
def test_trace_values_of_the_wrong_shape_are_refused_cut_or_counted(name, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    t0 = 1_733_000_000_000_000_000
    spans = [  # (trace, start, end, attributes)
        ("1" * 32, t0, t0 + 10**8, [_attr("rag.question_id", "q01"),
                                    _attr("output.value", ["palabras restringidas"] * case["array_items"])]),
        ("2" * 32, t0 + 10**8, t0, [_attr("rag.question_id", "q02"),
                                    _attr("output.value", "Tienes 30 días naturales desde la entrega.")]),
        ("3" * 32, t0, t0 + 10**8, [_attr("rag.question_id", ["x" * 50] * case["id_items"]),
                                    _attr("output.value", "fine")]),
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(_otlp_line({"traceId": trace, "spanId": "0000000000000001", "name": "rag",
                                        "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                                        "attributes": attrs}) for trace, start, end, attrs in spans),
                    encoding="utf-8")
    home, out = dagster_home(tmp_path), tmp_path / "out"
    system = {"name": "team_traces", "kind": "traces", "path": str(path), "question_id_attribute": "rag.question_id"}
    result = materialize_in(home, chain_config(tmp_path, system), out)
    assert result.success, step_errors(result)
    rows = {r["question_id"]: r for r in pl.read_parquet(out / "rag_runs.parquet").filter(
        pl.col("system") == "team_traces").iter_rows(named=True)}
    q01, q02 = rows["q01"], rows["q02"]
    assert (q01["decision"], q01["decision_rule"], q01["answer"]) == ("error", expect["q01_rule"], None)
    assert q01["error"].endswith(expect["q01_error"]) and len(q01["error"]) < 1000
    assert (q02["decision"], q02["latency_ms"]) == ("answer", None)
    info = live_info(result, "team_traces")
    assert info["negative_latency_traces"] == expect["negative_latency_traces"]
    assert info["negative_latency_trace_ids"] == ["2" * 32]
    (unmatched,) = info["unmatched_examples"]
    assert unmatched["trace_id"] == "3" * 32 and unmatched["reason"].startswith(expect["unmatched_reason"])
    assert len(json.dumps(info)) < expect["metadata_max_chars"], len(json.dumps(info))


LINE_AND_MEASURE = """
import json, sys
from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.systems.trace_sources import read_spans

def hwm():  # peak RSS of this process image (VmHWM): ru_maxrss would include the forking parent's
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])

before = hwm()
try:
    read_spans(sys.argv[1], "auto")
    message = None
except InputError as exc:
    message = str(exc)
print(json.dumps({"message": message, "extra_kib": hwm() - before}))
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("traces_line"))
def test_one_huge_trace_line_is_refused_in_bounded_memory(name, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    path = tmp_path / "one_line.jsonl"
    with path.open("wb") as fh:
        fh.write(b'{"resourceSpans": [{"pad": "')
        block = b"x" * (1 << 20)
        for _ in range(case["line_bytes"] >> 20):
            fh.write(block)
    proc = subprocess.run([sys.executable, "-c", LINE_AND_MEASURE, str(path)], cwd=REPO_ROOT,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["message"] and expect["message"] in got["message"] and "line 1" in got["message"], got
    assert got["extra_kib"] / 1024 < expect["extra_peak_mib"], got


def write_big_traces(path: Path, golden: pl.DataFrame, total_bytes: int) -> None:
    """An OTLP JSON file of about ``total_bytes``: one trace per golden question (root, retriever, and an
    LLM span whose ``llm.input_messages`` attributes carry the padding, one span per line)."""
    rows = list(golden.select("question_id", "question").iter_rows())
    pad_per = max(1, total_bytes // len(rows))
    t0 = 1_733_000_000_000_000_000
    with path.open("w", encoding="utf-8") as fh:
        for i, (qid, question) in enumerate(rows):
            trace = f"{i + 1:032x}"

            def line(span: dict) -> str:
                return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"

            def attrs(**kv) -> list:
                return [{"key": k.replace("__", "."), "value": {"stringValue": v}} for k, v in kv.items()]

            fh.write(line({"traceId": trace, "spanId": "0000000000000001", "name": "rag", "startTimeUnixNano": str(t0),
                           "endTimeUnixNano": str(t0 + 10**8), "attributes": attrs(
                               openinference__span__kind="CHAIN", rag__question_id=qid, input__value=question,
                               output__value=f"Respuesta a {qid}.")}))
            fh.write(line({"traceId": trace, "spanId": "0000000000000002", "parentSpanId": "0000000000000001",
                           "name": "retrieve", "startTimeUnixNano": str(t0 + 1), "endTimeUnixNano": str(t0 + 2),
                           "attributes": attrs(openinference__span__kind="RETRIEVER") + [
                               {"key": "retrieval.documents.0.document.id",
                                "value": {"stringValue": "devoluciones-a1#1"}}]}))
            chunk = "lorem ipsum " * 100_000  # 1.2 MB per message
            n = max(1, -(-pad_per // len(chunk)))
            fh.write(line({"traceId": trace, "spanId": "0000000000000003", "parentSpanId": "0000000000000001",
                           "name": "llm", "startTimeUnixNano": str(t0 + 3), "endTimeUnixNano": str(t0 + 4),
                           "attributes": attrs(openinference__span__kind="LLM") + [
                               {"key": f"llm.input_messages.{j}.message.content", "value": {"stringValue": chunk}}
                               for j in range(n)]}))


IMPORT_AND_MEASURE = """
import json, sys
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot
from rag_eval_pipeline.core.systems.records import RunContext
from rag_eval_pipeline.core.systems.base import system_from_mapping
from rag_eval_pipeline.core.systems.kinds.traces import TracesRunner
cfg = load_config(sys.argv[1]); snap, v = build_snapshot(cfg); golden = build_golden(cfg, snap)
spec = system_from_mapping({"name": "t", "kind": "traces", "path": sys.argv[2],
                            "question_id_attribute": "rag.question_id"}, source="x")
run = TracesRunner(spec).run(golden, RunContext("t", v, golden["golden_version"][0], frozenset(snap["chunk_id"])))
# peak RSS of this process image (VmHWM): ru_maxrss would include the forking parent's (a long pytest run)
peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1])
print(json.dumps({"matched": run.info["matched_by_attribute"], "peak_kib": peak}))
"""


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("traces_size"))
def test_a_large_trace_file_is_read_in_bounded_memory(name, tmp_path):
    case = load_case(name)
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot

    cfg = load_config(SAMPLE_DIR / "config.yaml")
    snap, _ = build_snapshot(cfg)
    path = tmp_path / "big.jsonl"
    write_big_traces(path, build_golden(cfg, snap), case["test_bytes"])
    size = path.stat().st_size
    assert size >= case["test_bytes"] * 0.9
    proc = subprocess.run([sys.executable, "-c", IMPORT_AND_MEASURE, str(SAMPLE_DIR / "config.yaml"), str(path)],
                          cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)}, capture_output=True,
                          text=True, timeout=500)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["matched"] == 52
    peak_mib = got["peak_kib"] / 1024
    # bounded by one line and the kept attributes, not by the file: well under the file's size here
    assert peak_mib < min(case["expect"]["peak_mib"], 600), (peak_mib, size)


# ------------------------------------------------------------------------------- the promoted baseline

@pytest.fixture(scope="module")
def good_chain(tmp_path_factory):
    """One good materialisation of the sample (a promoted baseline included), with its DAGSTER_HOME."""
    root = tmp_path_factory.mktemp("hostile_live_good")
    home, out = dagster_home(root), root / "out"
    config = chain_config(root, None)
    result = materialize_in(home, config, out)
    assert result.success and (out / "baseline" / "manifest.json").exists() and (out / "promotion.json").exists()
    return config, out


def damage(out: Path, how: str) -> None:
    base = out / "baseline"
    if how == "deleted":
        shutil.rmtree(base)
    elif how == "edited":  # the baseline's recall lowered by hand: a regression would pass against it
        df = pl.read_parquet(base / "metric_summary.parquet")
        df.with_columns(pl.when(pl.col("metric") == "recall").then(pl.col("value") * 0.5)
                        .otherwise(pl.col("value")).alias("value")).write_parquet(base / "metric_summary.parquet")
    elif how == "zeroed":
        (base / "question_metrics.parquet").write_bytes(b"")
    elif how == "files_removed":  # the check switched off by hand, then a table replaced
        manifest = json.loads((base / "manifest.json").read_text(encoding="utf-8"))
        del manifest["files"]
        (base / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
        (base / "rag_runs.parquet").write_bytes(b"not the promoted table")
    elif how == "newer_table_version":  # as a newer release would leave it: footer and hashes consistent
        import pyarrow.parquet as pq

        from rag_eval_pipeline.core.baseline import with_file_hashes

        table = pq.read_table(base / "metric_summary.parquet")
        meta = {**table.schema.metadata, b"rag_eval.schema_version": b"99"}
        pq.write_table(table.replace_schema_metadata(meta), base / "metric_summary.parquet")
        manifest = json.loads((base / "manifest.json").read_text(encoding="utf-8"))
        manifest = with_file_hashes({k: v for k, v in manifest.items() if k != "files"}, out)
        for path in (base / "manifest.json", out / "promotion.json"):
            path.write_text(json.dumps(manifest), encoding="utf-8")
    else:
        raise AssertionError(how)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("baseline"))
def test_a_damaged_baseline_blocks_loudly_and_is_never_replaced_quietly(name, good_chain, tmp_path):
    case = load_case(name)
    config, good_out = good_chain
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    damage(out, case["damage"])
    # byte for byte: promotion recorded the tables' sha256, so even a same-rows rewrite would be damage
    baseline_before = every_file_hash(out / "baseline", exact=True) if (out / "baseline").exists() else None
    record_before = (out / "promotion.json").read_bytes()
    result = materialize_in(dagster_home(tmp_path), config, out)
    assert not result.success  # a blocking check failed: the CLI would exit 1
    gates = pl.read_parquet(out / "gate_results.parquet")
    damaged = gates.filter(pl.col("status") == "baseline_damaged")
    assert damaged.height == 2 and set(damaged["system"]) == {"bm25_k10", TEAM}, gates.select("system", "status")
    assert all(case["expect"]["message"] in r for r in damaged["reason"]), damaged["reason"].to_list()
    assert all("start again without a baseline" in r for r in damaged["reason"])  # says the way back
    check = next(e for e in result.get_asset_check_evaluations() if e.check_name == "no_regression_against_baseline")
    assert not check.passed
    assert result.is_node_untouched("promotion")  # nothing promoted against another reference
    after = every_file_hash(out / "baseline", exact=True) if (out / "baseline").exists() else None
    assert after == baseline_before and (out / "promotion.json").read_bytes() == record_before
    # gate_results is one output of the aggregate step (defs/aggregate.py): its own materialisation, by key
    [md] = [m.metadata for m in result.asset_materializations_for_node("aggregate")
            if m.asset_key == dg.AssetKey("gate_results")]
    assert md["baseline_source"].value.startswith("DAMAGED")


# ------------------------------------------------------------------------------------ restricted text

def zero_width(text: str) -> str:
    return "\u200b".join(text)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", cases("acl"))
def test_withheld_text_and_everything_derived_from_it_is_shown_nowhere(name, good_chain, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    _, good_out = good_chain
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    records = [json.loads(x) for x in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()
               if x.strip()]
    if "answers" in case:  # the answers as written in the case
        attacked = dict(case["answers"])
    else:  # a restricted sentence, as is and with a zero-width space between every character
        attacked = {case["question_id"]: case["restricted_sentence"],
                    case["zero_width_question_id"]: zero_width(case["restricted_sentence"])}
    for r in records:
        if r["question_id"] in attacked:
            r["answer"], r["decision"] = attacked[r["question_id"]], "answer"
            r["citations"] = r["citations"][:1]
            assert not any("escalado" in h["chunk_id"] for h in r["retrieved"])  # no restricted chunk retrieved
    log = tmp_path / "team_rag.jsonl"
    log.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    cfg = sample_config_dict()
    next(s for s in cfg["systems"] if s["name"] == TEAM)["path"] = str(log)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    result = materialize_in(dagster_home(tmp_path), config, out)
    if "question_id" in case:
        labels = pl.read_parquet(out / "judge_labels.parquet").filter(
            (pl.col("system") == TEAM) & (pl.col("question_id") == case["question_id"]))
        notes = " ".join(labels["justification"].fill_null("").to_list())
        assert "missing:" in notes and "7731" in notes  # the judge's notes do derive from the withheld text
    report_md = (out / "report.md").read_text(encoding="utf-8")
    report_html = (out / "report.html").read_text(encoding="utf-8")
    metadata = result.asset_materializations_for_node("evaluation_report")[-1].metadata["report"].value
    for qid in attacked:  # both questions are in the report: there is something to withhold
        assert f"{qid} —" in report_md, qid
    for shown in (report_md, report_html, metadata):
        for needle in expect["never_shown"]:
            assert needle not in shown, needle
        for text in attacked.values():
            assert text[:40] not in shown and skeleton(text)[:20] not in skeleton(shown), text[:40]
    # the labelling page (same rule): the item is not offered to a labeller outside support-staff
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.labelling.session import LabellingSession

    session = LabellingSession(load_config(config), out, "tester", n=500, groups=("customers",))
    offered = {(it.system, it.question_id) for it in session.sample}
    assert not offered & {(TEAM, q) for q in attacked} and session.n_withheld >= len(attacked)


# ------------------------------------------------------------------------------------------- servers

def _http(port: int, method: str, path: str, headers: dict, body: bytes | None = None) -> tuple[int, bytes]:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for k, v in headers.items():
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def start_serve(folder: Path, tmp_path: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "rag_eval_pipeline.cli", "serve", "--dir", str(folder), "--port",
                             str(port)], cwd=REPO_ROOT, env=cli_env(dagster_home(tmp_path)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if _http(port, "GET", "/", {"Host": f"127.0.0.1:{port}"})[0] == 200:
                return proc, port
        except OSError:
            time.sleep(0.2)
    stop_group(proc, term_wait_s=20)
    raise AssertionError("rag-eval serve did not start")


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", cases("server"))
def test_local_servers_refuse_foreign_hosts_cross_site_posts_and_linked_pages(name, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    if case["scenario"] == "serve_reference_host":
        with ServeReference(SAMPLE_DIR / "config.yaml", "bm25_k5") as srv:
            port = srv.port
            body = json.dumps({"question_id": "q27", "question": "¿Qué código anota el agente?",
                               "user_groups": ["support-staff"]}).encode()
            here = f"127.0.0.1:{port}"
            tries = {
                "foreign_host": {"Host": f"rebound.example:{port}", "Content-Type": "application/json"},
                "cross_site_origin": {"Host": here, "Content-Type": "application/json",
                                      "Origin": "http://rebound.example"},
                "text_plain": {"Host": here, "Content-Type": "text/plain"},
                "sec_fetch_cross_site": {"Host": here, "Content-Type": "application/json",
                                         "Sec-Fetch-Site": "cross-site"},
                "loopback_json": {"Host": here, "Content-Type": "application/json",
                                  "Origin": f"http://localhost:{port}"},
            }
            got = {k: _http(port, "POST", "/answer", h, body) for k, h in tries.items()}
        assert {k: s for k, (s, _) in got.items()} == expect["statuses"]
        for k, (_, data) in got.items():
            if k != "loopback_json":
                assert b"ZX-INTERNAL" not in data and b"retrieved" not in data  # no chunk, no answer
        return
    root = tmp_path / "outputs"
    (root / "sample").mkdir(parents=True)
    (root / "sample" / "report.html").write_text("<p>REPORT</p>", encoding="utf-8")
    outside = tmp_path / "elsewhere"
    (outside / "deep").mkdir(parents=True)
    (outside / "report.html").write_text("<p>OUTSIDE-SECRET</p>", encoding="utf-8")
    (outside / "deep" / "report.html").write_text("<p>OUTSIDE-SECRET</p>", encoding="utf-8")
    os.symlink(outside, root / "linked")
    os.symlink(outside / "report.html", root / "sample" / "trend.html")
    proc, port = start_serve(root, tmp_path)
    try:
        if case["scenario"] == "serve_host":
            status, data = _http(port, "GET", "/sample/report.html", {"Host": f"rebound.example:{port}"})
            assert status == expect["status"] and b"REPORT" not in data
            assert _http(port, "GET", "/", {"Host": "rebound.example"})[0] == expect["status"]
            for host in case.get("foreign_hosts", []):  # they used to pass for 127.0.0.1, localhost, [::1]
                status, data = _http(port, "GET", "/sample/report.html", {"Host": host})
                assert (status, b"REPORT" in data) == (expect["status"], False), host
            for host in (f"127.0.0.1:{port}", "localhost", f"[::1]:{port}"):
                assert _http(port, "GET", "/sample/report.html", {"Host": host}) == (200, b"<p>REPORT</p>"), host
            assert _http(port, "GET", "/sample/report.html", {"Host": f"localhost:{port}"}) == (200, b"<p>REPORT</p>")
        else:
            status, index = _http(port, "GET", "/", {"Host": f"127.0.0.1:{port}"})
            assert status == 200 and b"sample/report.html" in index
            assert b"linked" not in index and b"trend.html" not in index  # nothing behind a link is listed
            for path in ("/linked/report.html", "/linked/deep/report.html", "/sample/trend.html"):
                status, data = _http(port, "GET", path, {"Host": f"127.0.0.1:{port}"})
                assert status == expect["status"] and b"OUTSIDE-SECRET" not in data, path
    finally:
        stop_group(proc, term_wait_s=20)


# ---------------------------------------------------------------------------------------- label files

def label_config(tmp_path: Path, labels: Path) -> Path:
    cfg = sample_config_dict()
    cfg["calibration"]["human_labels"] = str(labels)
    path = tmp_path / "label_config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", cases("label"))
def test_label_files_that_used_to_crash_or_block_saving(name, good_chain, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    _, good_out = good_chain
    sample_lines = (SAMPLE_DIR / "human_labels.jsonl").read_text(encoding="utf-8").splitlines()
    labels = tmp_path / "labels.jsonl"
    port = free_port()
    if case["scenario"] == "deep_json":
        labels.write_text(sample_lines[0] + "\n" + "[" * 100_000 + "]" * 100_000 + "\n", encoding="utf-8")
    else:
        labels.write_text("\n".join(sample_lines), encoding="utf-8")  # no newline after the last line
    before = labels.read_bytes()
    cmd = [sys.executable, "-m", "rag_eval_pipeline.cli", "label", "--config", str(label_config(tmp_path, labels)),
           "--output", str(good_out), "--port", str(port), "--labeller", "hostile-tester"]
    env = cli_env(dagster_home(tmp_path))
    if case["scenario"] == "deep_json":
        proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == expect["exit"], proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and expect["message"] in lines[0] and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert str(labels) in lines[0] and len(lines[0]) < 1000
        assert labels.read_bytes() == before
        return
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        here = {"Host": f"127.0.0.1:{port}"}
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            try:
                status, page = _http(port, "GET", "/item/0", here)
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.3)
        state = json.loads(re.search(rb'<script id="state" type="application/json">(.*?)</script>', page, re.S)
                           .group(1).decode().replace("\\u003c", "<"))
        body = json.dumps({"pos": 0, "verdict": state["options"][0]["raw"], "content_sha256": state["sha"]}).encode()
        status, reply = _http(port, "POST", "/api/label", {**here, "Content-Type": "application/json"}, body)
        assert status == expect["status"], reply
    finally:
        stop_group(proc, term_wait_s=20)
    text = labels.read_text(encoding="utf-8")
    assert text.startswith(before.decode()) and text.endswith("\n")
    rows = [strict_json(x) for x in text.splitlines()]  # every line whole: the old last one and the new one
    assert len(rows) == len(sample_lines) + 1 and rows[-1]["annotator"] == "hostile-tester"
    assert rows[-2] == json.loads(sample_lines[-1])


# ------------------------------------------------------------------------------------- the real CLI

@pytest.fixture(scope="module")
def cli_good(tmp_path_factory):
    """A good ``rag-eval run`` of the sample (ad-hoc suite of a copy of its configuration)."""
    root = tmp_path_factory.mktemp("hostile_cli_good")
    config = chain_config(root, None)
    out = root / "out"
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                           "--output", str(out)], cwd=REPO_ROOT, env=cli_env(dagster_home(root)),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return config, out


def run_cli(tmp_path: Path, *args: str, env_extra: dict | None = None, command: str = "run"
            ) -> subprocess.CompletedProcess:
    env = cli_env(dagster_home(tmp_path), **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", command, *args], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", cases("cli"))
def test_cli_refusals_and_leaks(name, cli_good, tmp_path):
    case, expect = load_case(name), load_case(name)["expect"]
    scenario = case["scenario"]
    good_config, good_out = cli_good
    if scenario in ("secret_echo", "python_prints"):
        token = new_canary()
        home, out = dagster_home(tmp_path), tmp_path / "out"
        with HostileRagServer(reference_callable.answer, case.get("faults") or {}) as srv:
            if scenario == "secret_echo":
                system = {"name": "team_http", "kind": "http", "url": srv.url, "max_retries": 0,
                          "headers_from_env": {"Authorization": CANARY_VAR}, "version_header": "X-Model-Version"}
            else:
                system = {"name": "team_py", "kind": "python", "callable": case["callable"], "concurrency": 2,
                          **(case.get("system") or {})}
            mark = tmp_path / "late_print_done"
            proc = run_cli(tmp_path, "--config", str(chain_config(tmp_path, system)), "--output", str(out),
                           env_extra={CANARY_VAR: f"Bearer {token}", "PYTHONPATH": str(REPO_ROOT),
                                      "RAG_EVAL_TEST_LATE_PRINT_MARK": str(mark)})
            auth = {r["headers"].get("authorization") for r in srv.requests}
        assert proc.returncode == expect["exit"], proc.stdout[-3000:] + proc.stderr[-3000:]
        if scenario == "python_prints":
            if case.get("late_print"):  # the forged lines were printed while the run still lived
                assert mark.is_file()
            assert expect["forged"] not in proc.stdout and expect["forged"] not in proc.stderr
            assert proc.stdout.count("(full_evaluation):") == 1  # the one real summary line
            return
        assert auth == {f"Bearer {token}"}  # the key reached the server on every request
        assert_canary_nowhere(token, out, home, texts=(proc.stdout, proc.stderr))
        runs = pl.read_parquet(out / "rag_runs.parquet").filter(pl.col("system") == "team_http")
        rows = {r["question_id"]: r for r in runs.iter_rows(named=True)}
        assert "HTTP 401" in rows["q01"]["error"] and "[redacted]" in rows["q01"]["error"]
        for q in ("q02", "q03", "q04"):
            assert "[redacted]" in rows[q]["system_version"], rows[q]["system_version"]
            if rows[q]["answer"]:
                assert "[redacted]" in rows[q]["answer"]
            assert "[redacted]" in rows[q]["model"]
        with dg.DagsterInstance.from_config(str(home)) as instance:
            for record in instance.get_run_records():
                assert token not in json.dumps(record.dagster_run.tags) + json.dumps(record.dagster_run.run_config)
        return
    out = tmp_path / "out"
    args = ["--config", str(good_config), "--output", str(out)]
    env_extra = {}
    command = "run"
    if scenario == "shared_output":
        shutil.copytree(good_out, out)
        other = tmp_path / "other" / "config.yaml"  # the same content, another file: another ad-hoc suite
        other.parent.mkdir()
        other.write_bytes(good_config.read_bytes())
        args = ["--config", str(other), "--output", str(out)]
    elif scenario == "suites_file":
        text = case["suites_file"].replace("CONFIG", str(good_config)).replace("OTHER", str(SAMPLE_DIR / "config.yaml"))
        text = text.replace("LONGNAME", "s" * case.get("long_name_chars", 8))
        (tmp_path / "suites.yaml").write_text(text, encoding="utf-8")
        env_extra["RAG_EVAL_SUITES"] = str(tmp_path / "suites.yaml")
        args = ["--suite", "sample", "--output", str(out)]
        out.mkdir()
    elif scenario == "output_read_only":
        if shutil.which("chattr") is None and os.geteuid() == 0:
            pytest.skip("running as root without chattr: no folder is read-only for this user")
        shutil.copytree(good_out, out)
    elif scenario == "output_is_file":
        out.write_text("not a folder\n", encoding="utf-8")
    elif scenario == "wait_s_nan":
        shutil.copytree(good_out, out)
        args += ["--wait-s", "nan"]
    elif scenario == "compare_damaged_baseline":
        shutil.copytree(good_out, out)
        (out / "baseline" / "manifest.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
        args = ["baseline", "system:team_rag", "--config", str(good_config), "--output", str(out)]
        command = "compare"
    elif scenario == "compare_doctored_table":
        shutil.copytree(good_out, out)
        import pyarrow as pa
        import pyarrow.parquet as pq

        other = out / "doctored"
        shutil.copytree(good_out, other, ignore=shutil.ignore_patterns("baseline", "history", "compare"))
        meta = pq.read_schema(other / "metric_summary.parquet").metadata  # says: metric_summary, its current version
        pq.write_table(pa.table({"system": pa.array([None, "team_rag"], pa.large_string())})
                       .replace_schema_metadata(meta), other / "metric_summary.parquet")
        args = [f"dir:{other}:team_rag", "system:team_rag", "--config", str(good_config), "--output", str(out)]
        command = "compare"
    else:
        raise AssertionError(scenario)
    before = every_file_hash(out) if out.is_dir() else out.read_bytes()
    locked = False
    if scenario == "output_read_only":
        if os.geteuid() == 0:
            subprocess.run(["chattr", "+i", str(out)], check=True)
            locked = True
        else:
            out.chmod(0o555)
    try:
        started = time.monotonic()
        proc = run_cli(tmp_path, *args, env_extra=env_extra, command=command)
        took = time.monotonic() - started
    finally:
        if locked:
            subprocess.run(["chattr", "-i", str(out)], check=True)
        elif scenario == "output_read_only":
            out.chmod(0o755)
    assert proc.returncode == expect["exit"], proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    err = proc.stderr.strip().splitlines()
    assert err and expect["message"] in err[-1], proc.stderr[-2000:]
    if scenario != "wait_s_nan":  # argparse's usage line comes first there
        assert len(err) == 1 and len(err[0]) < 1000, err
    assert took < 60
    assert (every_file_hash(out) if out.is_dir() else out.read_bytes()) == before  # nothing written


def test_every_round_three_case_is_in_the_readme_with_its_item():
    readme = (HOSTILE / "README.md").read_text(encoding="utf-8")
    items = set()
    for name in CASES:
        case = load_case(name)
        if case["target"] in TARGETS or case.get("item"):
            assert f"`{name}`" in readme, name
            items.add(case.get("item"))
    assert items >= set(range(1, 12)), sorted(i for i in items if i)
