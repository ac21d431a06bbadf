"""Hostile inputs through the real chain: every case of ``fixtures/hostile/`` (see its README.md).

Each case is the sample configuration with one thing broken (a golden file, a corpus file, a run log),
materialised with every asset and check of the code location into an output folder that already
holds a good run of the sample. A bad input must stop the chain at the asset that reads it, with an
error that names the file, the line (or row) and the field; that asset, and everything after it,
must keep the previous good files byte for byte (every file under the output folder, hidden ones
included, hashed before and after). Repaired and allowed inputs must give the stated result.
Special files that git cannot hold (a named pipe, a symbolic link loop, a file name in NFD) are made
by the test from the case's ``make`` list. ``cli_signal`` cases start the real ``rag-eval run`` in a
subprocess, make one step block, send SIGTERM and time the exit.
"""

import filecmp
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.locking import LOCK_NAME, OutputLock, read_owner
from rag_eval_pipeline.core.report.decision import DECISION_FILE, PREVIOUS_DIR
from rag_eval_pipeline.core.sources.trec import read_trec_run
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline.defs.stopped import SET_ASIDE
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import (
    cli_env,
    dagster_home,
    kill,
    sample_config_dict,
    start_cli,
    visible_tables,
    wait_for,
)

HOSTILE = Path(__file__).resolve().parents[1] / "fixtures" / "hostile"
CASES = sorted(p.name for p in HOSTILE.iterdir() if (p / "case.yaml").is_file())
# round three's targets run in test_hostile_live.py (live systems, servers, the CLI, the baseline)
NOT_THROUGH_MATERIALIZE = ("trec_run", "cli_signal", "config", "live_http", "live_python", "traces", "traces_size",
                           "traces_values", "traces_line", "cli", "server", "baseline", "label", "acl")
TEAM = "team_rag"

# Judge calls seen by the counting judge of the current materialisation (in-process executor).
JUDGE_CALLS: list[tuple[str, str]] = []


class _CountingJudge:
    def __init__(self, inner):
        self.inner = inner
        self.name, self.model, self.prompt_sha256 = inner.name, inner.model, inner.prompt_sha256

    def judge(self, question, answer, contexts, **kw):
        JUDGE_CALLS.append((question, answer))
        return self.inner.judge(question, answer, contexts, **kw)


class CountingJudgeResource(JudgeResource):
    """The rule-based judge, recording every call in JUDGE_CALLS."""

    def get_judge(self):
        return _CountingJudge(super().get_judge())


def load_case(name: str) -> dict:
    return yaml.safe_load((HOSTILE / name / "case.yaml").read_text(encoding="utf-8"))


def sample_config() -> dict:
    """The sample configuration with every path made absolute (it will live in tmp_path)."""
    return sample_config_dict()


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


def _patch_log(sample_log: Path, patch: Path, out: Path) -> Path:
    """Records of ``patch`` replace the sample's records with the same question_id; new ids are appended."""
    records = [json.loads(line) for line in sample_log.read_text(encoding="utf-8").splitlines() if line.strip()]
    new = [json.loads(line) for line in patch.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_id = {r["question_id"]: r for r in new}
    merged = [by_id.pop(r["question_id"], r) for r in records] + list(by_id.values())
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in merged), encoding="utf-8")
    return out


def make_special_files(folder: Path, make: list[dict]) -> None:
    """Create what git cannot hold: ``fifo`` (a named pipe), ``symlink`` (to ``target``), ``copy`` (of
    ``from`` under another ``name``, e.g. the same file name in NFD)."""
    for item in make:
        path = folder / item["name"]
        if item["kind"] == "fifo":
            os.mkfifo(path)
        elif item["kind"] == "symlink":
            os.symlink(item["target"], path)
        elif item["kind"] == "copy":
            shutil.copyfile(folder / item["from"], path)
        else:
            raise AssertionError(f"unknown kind {item['kind']!r}")


def broken_config(name: str, case: dict, tmp_path: Path) -> Path:
    """Write the sample configuration with this case's one broken input into tmp_path; return its path."""
    src = HOSTILE / name
    cfg = sample_config()
    target, mode = case["target"], case["mode"]
    if target == "golden":
        cfg["golden"]["path"] = str(src / case["file"])
    elif target == "corpus":
        corpus = tmp_path / "corpus"
        shutil.copytree(SAMPLE_DIR / "corpus", corpus)
        if (src / "corpus").is_dir():
            for f in (src / "corpus").iterdir():
                shutil.copyfile(f, corpus / f.name)  # overlay: add, or replace the sample file of that name
        make_special_files(corpus, case.get("make") or [])
        cfg["corpus"]["path"] = str(corpus)
    elif target == "beir":
        cfg["corpus"] = {"source": "beir", "path": str(src / case["file"])}
        cfg["golden"] = {}
    elif target == "run_log":
        team = next(s for s in cfg["systems"] if s["name"] == TEAM)
        if mode == "replace":
            team["path"] = str(src / case["file"])
        else:
            team["path"] = str(_patch_log(SAMPLE_DIR / "runs" / "team_rag.jsonl", src / case["file"],
                                          tmp_path / "team_rag.jsonl"))
    else:
        raise AssertionError(f"unknown target {target!r}")
    _merge(cfg, case.get("config") or {})
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def materialize(config: Path, out: Path):
    JUDGE_CALLS.clear()
    return dg.materialize(
        [*ASSETS, *CHECKS],
        resources=build_resources(str(config), str(out), judge=CountingJudgeResource()),
        raise_on_error=False,
        instance=dg.DagsterInstance.ephemeral(),
    )


@pytest.fixture(scope="module")
def good_run(tmp_path_factory):
    """One good materialisation of the sample (paths absolute, as in every case's configuration)."""
    root = tmp_path_factory.mktemp("hostile_good")
    config = root / "config.yaml"
    config.write_text(yaml.safe_dump(sample_config(), allow_unicode=True), encoding="utf-8")
    out = root / "out"
    result = materialize(config, out)
    assert result.success
    return result, out


# A table file's own record of when and by which run it was written: an upstream asset that a later run
# materialises again writes the same rows with a new stamp, which is not a loss.
WRITE_STAMP_KEYS = {b"rag_eval.written_at", b"rag_eval.run_id"}


def content_hash(p: Path, exact: bool = False) -> str:
    """sha256 of a file's bytes; for a Parquet table, of its rows, schema and metadata less the write stamp
    (of its bytes with ``exact``)."""
    try:
        table = pq.read_table(p) if p.suffix == ".parquet" and not exact else None
    except (pa.ArrowException, OSError):  # a damaged file (a case's own doing) is compared byte for byte
        table = None
    if table is None:
        return hashlib.sha256(p.read_bytes()).hexdigest()
    kept = {k: v for k, v in (table.schema.metadata or {}).items() if k not in WRITE_STAMP_KEYS}
    table = table.replace_schema_metadata(kept)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()


def every_file_hash(folder: Path, exact: bool = False) -> dict[str, str]:
    """content_hash of every file under the folder, hidden ones included; the lock file only as present: its
    owner line is information that each run holding the folder writes again (core/locking.py)."""
    return {str(p.relative_to(folder)): "present" if p.name == LOCK_NAME else content_hash(p, exact)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def visible_files(folder: Path) -> list[Path]:
    return sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


def step_errors(result) -> dict[str, list[tuple[str, str]]]:
    """step key -> [(error class, message)] along the cause chain of each failed step."""
    out: dict[str, list[tuple[str, str]]] = {}
    for ev in result.all_events:
        if ev.is_step_failure:
            chain, err = [], ev.event_specific_data.error
            while err is not None:
                chain.append((err.cls_name, err.message))
                err = err.cause or err.context
            out[ev.step_key] = chain
    return out


def metadata(result, asset: str) -> dict:
    """The metadata of ``asset``'s last materialisation in ``result`` (found by key: a stage's step holds several)."""
    mats = [e.materialization for e in result.get_asset_materialization_events() if e.asset_key.path[-1] == asset]
    assert mats, f"{asset} was not materialised"
    return {k: getattr(v, "value", v) for k, v in mats[-1].metadata.items()}


def test_the_readme_lists_every_case():
    readme = (HOSTILE / "README.md").read_text(encoding="utf-8")
    for name in CASES:
        assert f"`{name}`" in readme, name


@pytest.mark.timeout(120)  # a case that blocks (a FIFO read) fails here instead of hanging the suite
@pytest.mark.parametrize("name", [c for c in CASES if load_case(c)["target"] not in NOT_THROUGH_MATERIALIZE])
def test_hostile_input_through_the_chain(name, good_run, tmp_path):
    case = load_case(name)
    expect = case["expect"]
    good_result, good_out = good_run
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    hashes_before = every_file_hash(out)
    result = materialize(broken_config(name, case, tmp_path), out)

    if expect["outcome"] == "error":
        assert not result.success
        errors = step_errors(result)
        assert list(errors) == [expect["asset"]], f"failed steps: {list(errors)}"
        located = [msg for cls, msg in errors[expect["asset"]] if cls == InputError.__name__]
        assert located, f"no InputError in the failure of {expect['asset']}: {errors}"
        msg = located[0]
        assert f"/{expect['file']}" in msg, msg
        if expect.get("line") is not None:
            assert f"line {expect['line']}," in msg, msg
        else:
            assert ", line " not in msg, msg
        assert f"field {expect['field']!r}" in msg, msg
        assert expect["message"] in msg, msg
        assert "expected" in msg, msg  # says what was expected, not only what is wrong
        # Nothing downstream of the failure ran, and nothing the good run wrote has changed: the failing
        # asset's file (and every later one) is byte-identical and still reads. The run stopped before its
        # report: the good run's report and decision are kept, byte for byte, under previous/ (defs/stopped.py),
        # and decision.json is this run's stopped decision, naming the failed step.
        aside = {Path(n) for n in SET_ASIDE}
        assert visible_files(out) == sorted((set(visible_files(good_out)) - aside)
                                            | {Path(PREVIOUS_DIR) / n for n in aside} | {Path(DECISION_FILE)})
        for rel in visible_files(good_out):
            now = Path(PREVIOUS_DIR) / rel if rel in aside else rel
            assert content_hash(out / now) == content_hash(good_out / rel), f"{rel} changed"
        failing = out / f"{expect['asset']}.parquet"
        assert filecmp.cmp(failing, good_out / f"{expect['asset']}.parquet", shallow=False), "rewritten"
        assert pl.read_parquet(failing).equals(pl.read_parquet(good_out / f"{expect['asset']}.parquet"))
        assert not [p for p in out.rglob(".*.tmp")], "temporary files left behind"
        moved = {(f"{PREVIOUS_DIR}/{k}" if k in SET_ASIDE else k): v for k, v in hashes_before.items()}
        after = every_file_hash(out)
        assert {k: v for k, v in after.items() if k != DECISION_FILE} == moved
        stopped = json.loads((out / DECISION_FILE).read_text(encoding="utf-8"))
        assert stopped["run_id"] == result.run_id and stopped["stopped_before_report"] is True
        assert stopped["verdict"] == "fail" and stopped["promotion_action"] in ("blocked", "none")
        [line] = stopped["blocking_failures"]
        assert line.startswith(f"step {expect['asset']}: InputError: "), line
        return

    assert result.success == expect.get("success", True), step_errors(result)
    CHECKS_BY_CASE[name](case, result, out, good_result, good_out)


# ------------------------------------------------------------------ repaired / allowed / changed inputs

def _snapshot(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "corpus_snapshot.parquet")


def check_bom_crlf(case, result, out, good_result, good_out):
    version = metadata(result, "corpus_snapshot")["corpus_version"]
    assert version == metadata(good_result, "corpus_snapshot")["corpus_version"]
    assert _snapshot(out).equals(_snapshot(good_out))
    assert content_hash(out / "corpus_snapshot.parquet") == content_hash(good_out / "corpus_snapshot.parquet")


def check_changed_text(case, result, out, good_result, good_out):
    version = metadata(result, "corpus_snapshot")["corpus_version"]
    assert version != metadata(good_result, "corpus_snapshot")["corpus_version"]
    new = dict(_snapshot(out).select("chunk_id", "sha256").iter_rows())
    old = dict(_snapshot(good_out).select("chunk_id", "sha256").iter_rows())
    assert set(new) == set(old)
    changed = sorted(c for c in new if new[c] != old[c])
    assert changed == case["expect"]["changed_chunks"]
    # every run row now carries the new version
    new_version = metadata(result, "corpus_snapshot")["corpus_version"]
    runs = pl.read_parquet(out / "rag_runs.parquet")
    assert runs["corpus_version"].unique().to_list() == [new_version]
    # the baseline was promoted on the old version: the gate refuses the comparison and nothing is promoted
    gate = [e for e in result.get_asset_check_evaluations() if e.check_name == "no_regression_against_baseline"]
    assert len(gate) == 1 and not gate[0].passed
    assert "corpus_version" in json.dumps({k: str(getattr(v, "value", v)) for k, v in gate[0].metadata.items()})
    assert result.is_node_untouched("promotion")
    assert filecmp.cmp(out / "baseline" / "manifest.json", good_out / "baseline" / "manifest.json", shallow=False)


def check_missing_score(case, result, out, good_result, good_out):
    runs = pl.read_parquet(out / "rag_runs.parquet").filter((pl.col("system") == TEAM)
                                                            & (pl.col("question_id") == "q02"))
    hits = runs["retrieved"][0].to_list()
    assert hits and all(h["score"] is None for h in hits)
    assert [h["rank"] for h in hits] == list(range(1, len(hits) + 1))
    qm = pl.read_parquet(out / "question_metrics.parquet").filter(
        (pl.col("system") == TEAM) & (pl.col("question_id") == "q02")
        & (pl.col("metric") == "recall") & (pl.col("k") == 5))
    good = pl.read_parquet(good_out / "question_metrics.parquet").filter(
        (pl.col("system") == TEAM) & (pl.col("question_id") == "q02")
        & (pl.col("metric") == "recall") & (pl.col("k") == 5))
    assert qm["value"].to_list() == good["value"].to_list()  # ranking by rank: the scores were never needed


def check_unknown_question_ids(case, result, out, good_result, good_out):
    md = metadata(result, "rag_runs")
    assert md["unknown_question_rows"] == len(case["expect"]["unknown_question_ids"])
    assert md["unknown_question_ids"] == case["expect"]["unknown_question_ids"]
    for table in ("rag_runs", "question_metrics", "judge_labels", "answer_judgements"):
        qids = set(pl.read_parquet(out / f"{table}.parquet")["question_id"].to_list())
        assert not qids & set(case["expect"]["unknown_question_ids"]), table
    assert pl.read_parquet(out / "metric_summary.parquet").equals(pl.read_parquet(good_out / "metric_summary.parquet"))


def check_empty_retrieval(case, result, out, good_result, good_out):
    qid = case["expect"]["question_id"]
    patched = json.loads((HOSTILE / "runs_empty_retrieval" / "team_rag.jsonl").read_text(encoding="utf-8"))
    golden = pl.read_parquet(out / "golden_set.parquet").filter(pl.col("question_id") == qid)
    assert golden["answerability"][0] == "answerable"
    qm = pl.read_parquet(out / "question_metrics.parquet").filter(
        (pl.col("system") == TEAM) & (pl.col("question_id") == qid)
        & (pl.col("metric") == "recall") & (pl.col("k") == 5))
    assert qm["value"].to_list() == [0.0] and qm["status"].to_list() == ["ok"]
    aj = pl.read_parquet(out / "answer_judgements.parquet").filter((pl.col("system") == TEAM)
                                                                   & (pl.col("question_id") == qid))
    assert aj["status"].to_list() == ["no_retrieval"]
    labels = pl.read_parquet(out / "judge_labels.parquet").filter((pl.col("system") == TEAM)
                                                                  & (pl.col("question_id") == qid))
    assert labels.height == 0
    assert JUDGE_CALLS, "the judge was called for the other answers"
    assert [a for _, a in JUDGE_CALLS if a == patched["answer"]] == []  # zero judge calls for this answer


def check_evidence_withdrawn(case, result, out, good_result, good_out):
    expect = case["expect"]
    evaluations = [e for e in result.get_asset_check_evaluations() if e.check_name == expect["check"]]
    assert len(evaluations) == 1
    warning = evaluations[0]
    assert not warning.passed and warning.severity == dg.AssetCheckSeverity.WARN
    assert warning.metadata["withdrawn_or_replaced_ids"].value == expect["listed"]
    # the question is in the withdrawn-document segment of the summary the report shows
    summary = pl.read_parquet(out / "metric_summary.parquet")
    assert summary.filter(pl.col("segment") == "doc_status=withdrawn").height > 0
    golden = pl.read_parquet(out / "golden_set.parquet")
    assert golden["question_id"].to_list() == ["q01", "q02"]  # accepted: a warning, not an error
    # the only blocking failure is the gate's refusal to compare across golden versions
    failed = [e.check_name for e in result.get_asset_check_evaluations()
              if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]
    assert failed == ["no_regression_against_baseline"], failed


def check_file_name_with_spaces(case, result, out, good_result, good_out):
    """A doc id with spaces goes through promotion and trec_files: its docno is percent-encoded."""
    snapshot = _snapshot(out)
    assert "guia de envios#0" in snapshot["chunk_id"].to_list()
    failed = [e.check_name for e in result.get_asset_check_evaluations()
              if not e.passed and e.severity == dg.AssetCheckSeverity.ERROR]
    assert failed == ["no_regression_against_baseline"], failed  # the corpus version changed, nothing else
    assert list(step_errors(result)) == ["gate_verdict_no_regression_against_baseline"]  # trec_files did not fail
    md = metadata(result, "trec_files")
    assert md["skipped"] == {}
    qrels = (out / "trec" / "qrels.txt").read_text(encoding="utf-8")
    assert all(len(line.split()) == 4 for line in qrels.splitlines())
    for system in ("bm25_k5", "bm25_k10"):
        lines = (out / "trec" / f"{system}.run").read_text(encoding="utf-8").splitlines()
        assert lines and all(len(line.split()) == 6 for line in lines)
    runs = pl.read_parquet(out / "rag_runs.parquet")
    hit = any(h["chunk_id"] == "guia de envios#0" for r in runs["retrieved"].to_list() for h in r)
    run_text = "".join((out / "trec" / f"{s}.run").read_text(encoding="utf-8") for s in ("bm25_k5", "bm25_k10"))
    assert hit and case["expect"]["docno"] in run_text  # the file's chunk was retrieved, written encoded
    assert not [p for p in (out / "trec").iterdir() if p.name.endswith(".tmp")]


CHECKS_BY_CASE = {
    "corpus_file_name_with_spaces": check_file_name_with_spaces,
    "golden_evidence_withdrawn": check_evidence_withdrawn,
    "corpus_bom_crlf": check_bom_crlf,
    "corpus_changed_text": check_changed_text,
    "runs_missing_score": check_missing_score,
    "runs_unknown_question_ids": check_unknown_question_ids,
    "runs_empty_retrieval": check_empty_retrieval,
}


def test_every_non_error_case_has_a_check():
    for name in CASES:
        case = load_case(name)
        if case["expect"]["outcome"] != "error" and case["target"] not in NOT_THROUGH_MATERIALIZE:
            assert name in CHECKS_BY_CASE, name


def test_the_sample_warns_about_its_question_on_a_replaced_document(good_run):
    """The sample's q26 is about the 2023 return policy (devoluciones-a1-2023.md, front matter
    ``status: replaced``, ``replaced_by: devoluciones-a1``): both its relevant chunks are listed."""
    result, _ = good_run
    (warning,) = [e for e in result.get_asset_check_evaluations() if e.check_name == "golden_evidence_is_current"]
    assert not warning.passed and warning.severity == dg.AssetCheckSeverity.WARN
    assert warning.metadata["withdrawn_or_replaced_ids"].value == [
        "q26:devoluciones-a1-2023#0 (replaced by devoluciones-a1)",
        "q26:devoluciones-a1-2023#1 (replaced by devoluciones-a1)",
    ]
    assert warning.metadata["questions"].value == ["q26"]


# ------------------------------------------------------------------ SIGTERM while a step is stuck

# Installed with sitecustomize in the child only: the corpus reader blocks in a way that Dagster's own
# interrupt (an exception raised in the step when Python code next runs) cannot end.
_HOOKS = {
    "swallow_interrupts": """
def _blocked(path):
    while True:
        try:  # the marker is written inside the try: a SIGTERM sent on seeing it lands in here, never before
            _entered()
            time.sleep(3600)
        except BaseException:  # Dagster's DagsterExecutionInterruptedError included
            pass
""",
    "native_loop": """
def _blocked(path):
    _entered()
    sum(range(10**15))  # a C loop that holds the GIL and never looks at pending signals
""",
    "thread_pool": """
def _blocked(path):
    from concurrent.futures import ThreadPoolExecutor
    _entered()
    with ThreadPoolExecutor(max_workers=1) as pool:  # __exit__ and interpreter exit both join the worker
        pool.submit(time.sleep, 3600).result()
""",
}
_HOOK_HEADER = """
import os, sys, time
import rag_eval_pipeline.core.sources.documents as _documents

_real = _documents.load_documents_dir

def _entered():
    open(os.environ["RAG_EVAL_TEST_HOOK_MARKER"], "w").close()

def _in_step():  # the checks before the run read the corpus for real; only the corpus_snapshot step blocks
    f = sys._getframe(1)
    while f is not None:
        if f.f_code.co_name == "corpus_snapshot":
            return True
        f = f.f_back
    return False
"""


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", [c for c in CASES if load_case(c)["target"] == "cli_signal"])
def test_sigterm_ends_a_stuck_run_and_frees_the_folder(name, good_run, tmp_path):
    case = load_case(name)
    _, good_out = good_run
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    before = visible_tables(out)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(
        _HOOK_HEADER + _HOOKS[case["hook"]] + "\n_documents.load_documents_dir = "
        "lambda path: _blocked(path) if _in_step() else _real(path)\n", encoding="utf-8")
    marker = tmp_path / "entered"
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(sample_config(), allow_unicode=True), encoding="utf-8")
    env = cli_env(dagster_home(tmp_path), RAG_EVAL_TEST_HOOK_MARKER=str(marker))
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), str(Path(__file__).resolve().parents[2]),
                                         env.get("PYTHONPATH", "")])
    proc = start_cli(config, out, env, log=tmp_path / "run.log")
    try:
        wait_for(marker.exists, 150, proc, "corpus_snapshot to start reading")
        assert read_owner(out)["pid"] == proc.pid  # the stuck run holds the folder
        sent = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=case["expect"]["within_s"] + 20)
        except Exception:
            pass
        took = time.monotonic() - sent
        assert proc.poll() is not None, f"still running {took:.0f} s after SIGTERM"
        assert took <= case["expect"]["within_s"], f"took {took:.1f} s to end after SIGTERM"
    finally:
        kill_group(proc)
    log = (tmp_path / "run.log").read_text(encoding="utf-8", errors="replace")
    assert "SIGTERM received" in log, log[-2000:]
    lock = OutputLock(out, wait_s=0).acquire()  # free: raises OutputLocked otherwise
    lock.release()
    assert visible_tables(out) == before  # stopped before writing anything


def kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    if proc.poll() is None:
        kill(proc)


@pytest.mark.parametrize("name", [c for c in CASES if load_case(c)["target"] == "trec_run"])
def test_trec_run_file(name):
    """TREC run files are read by ``core.sources.trec.read_trec_run`` (no configured system reads them yet)."""
    case = load_case(name)
    expect = case["expect"]
    with pytest.raises(InputError) as exc:
        read_trec_run(HOSTILE / name / case["file"])
    msg = str(exc.value)
    assert f"/{expect['file']}" in msg and f"line {expect['line']}," in msg and f"field {expect['field']!r}" in msg, msg
    assert expect["message"] in msg
    assert exc.value.line == expect["line"] and exc.value.field == expect["field"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("name", [c for c in CASES if load_case(c)["target"] == "config"])
def test_a_configuration_that_would_switch_a_gate_off_or_exhaust_memory_is_refused_at_load(name, good_run, tmp_path):
    """The real ``rag-eval run --config``: exit 2 within seconds, one line naming the file (and line) and the
    key, and the output folder of the previous run byte-identical."""
    case, expect = load_case(name), load_case(name)["expect"]
    _, good_out = good_run
    out = tmp_path / "out"
    shutil.copytree(good_out, out)
    before = every_file_hash(out)
    cfg = _merge(sample_config(), case.get("config") or {})
    if case.get("system_prompt_version_chars"):
        cfg["systems"][0]["prompt_version"] = "v" * case["system_prompt_version_chars"]
    config = tmp_path / "broken_config.yaml"
    config.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False) + case.get("append", ""),
                      encoding="utf-8")
    env = cli_env(dagster_home(tmp_path))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                           "--output", str(out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=90)
    took = time.monotonic() - started
    assert proc.returncode == 2, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and len(lines[0]) < 1000, proc.stderr[-3000:]  # one line, never a value's whole repr
    assert str(config) in lines[0] and expect["message"] in lines[0], lines[0]
    if expect.get("key"):
        assert expect["key"] in lines[0], lines[0]
    if expect.get("names_line"):
        assert re.search(r"line \d+", lines[0]), lines[0]
    assert took < 30, f"took {took:.1f} s to refuse"
    assert every_file_hash(out) == before  # nothing written, nothing lost


# ---------------------------------------------------- the blocking checks, on tables that bypassed the readers

def test_golden_check_catches_a_table_that_bypassed_validation(good_run):
    """The check beside golden_set (column expressions, no loop over questions) on a hand-broken table."""
    from rag_eval_pipeline.defs.golden import golden_consistent_with_snapshot

    _, out = good_run
    golden = pl.read_parquet(out / "golden_set.parquet")
    snapshot = pl.read_parquet(out / "corpus_snapshot.parquet", columns=["chunk_id"])
    assert golden_consistent_with_snapshot(golden_set=golden, corpus_snapshot=snapshot).passed
    ids = golden["question_id"].to_list()
    first_answerable = golden.filter(pl.col("answerability") == "answerable")["question_id"][0]
    first_absent = golden.filter(pl.col("answerability") == "absent")["question_id"][0]
    claim_q = golden.filter(pl.col("claims").list.len() > 0)["question_id"][1]
    broken = golden.with_columns(
        pl.when(pl.col("question_id") == ids[3]).then(pl.lit("maybe")).otherwise(pl.col("answerability"))
        .alias("answerability"),
        pl.when(pl.col("question_id") == first_answerable).then(pl.lit([], dtype=golden.schema["relevant"]))
        .when(pl.col("question_id") == first_absent)
        .then(pl.lit([{"chunk_id": "envios#0", "grade": 1}, {"chunk_id": "envios#404", "grade": 1}],
                     dtype=golden.schema["relevant"]))
        .otherwise(pl.col("relevant")).alias("relevant"),
        pl.when(pl.col("question_id") == claim_q)
        .then(pl.col("claims").list.eval(pl.element().struct.with_fields(
            pl.concat_list(pl.element().struct.field("supporting"), pl.lit(["nodoc#1"])).alias("supporting"))))
        .otherwise(pl.col("claims")).alias("claims"),
    )
    dup_q = next(q for q in ids[4:] if q not in {first_answerable, first_absent, claim_q})
    broken = pl.concat([broken, broken.filter(pl.col("question_id") == dup_q)])  # a duplicated question id
    result = golden_consistent_with_snapshot(golden_set=broken, corpus_snapshot=snapshot)
    md = {k: v.value for k, v in result.metadata.items()}
    assert not result.passed
    assert md["unknown_answerability"] == [ids[3]]
    assert md["answerable_without_relevant"] == [first_answerable]
    assert md["absent_with_relevant"] == [first_absent]
    n_claims = golden.filter(pl.col("question_id") == claim_q)["claims"].list.len()[0]
    expected_unknown = [f"{first_absent}:envios#404"] + [f"{claim_q}:nodoc#1"] * n_claims
    order = {q: i for i, q in enumerate(ids)}
    assert md["unknown_chunk_ids"] == sorted(expected_unknown, key=lambda s: order[s.split(":")[0]])
    assert md["duplicate_question_ids"] == [dup_q]


def test_run_row_check_catches_missing_duplicate_and_stale_rows(good_run):
    from rag_eval_pipeline.defs.resources import EvalSettings
    from rag_eval_pipeline.defs.runs import every_question_has_a_run_row

    _, out = good_run
    settings = EvalSettings(config_path=str(SAMPLE_DIR / "config.yaml"))
    runs = pl.read_parquet(out / "rag_runs.parquet")
    golden = pl.read_parquet(out / "golden_set.parquet", columns=["question_id"])
    snapshot = pl.read_parquet(out / "corpus_snapshot.parquet")
    assert every_question_has_a_run_row(settings=settings, rag_runs=runs, golden_set=golden,
                                        corpus_snapshot=snapshot).passed
    team = runs.filter(pl.col("system") == TEAM)
    broken = pl.concat([
        runs.filter((pl.col("system") != TEAM) | ~pl.col("question_id").is_in(["q01", "q02"])),
        team.filter(pl.col("question_id") == "q03"),  # q03 twice
    ]).with_columns(pl.when((pl.col("system") == "bm25_k5") & (pl.col("question_id") == "q04"))
                    .then(pl.lit("0" * 64)).otherwise(pl.col("corpus_version")).alias("corpus_version"))
    check = every_question_has_a_run_row(settings=settings, rag_runs=broken, golden_set=golden,
                                         corpus_snapshot=snapshot)
    md = {k: v.value for k, v in check.metadata.items()}
    assert not check.passed
    assert md["missing_question_ids"] == {TEAM: ["q01", "q02"]}
    # the check's reason (what the CLI and the UI show first) names the run file beside the question ids
    assert md["reason"] == (f"system {TEAM}: 2 golden question(s) have no run row in "
                            f"{(SAMPLE_DIR / 'runs' / 'team_rag.jsonl').resolve()}: ['q01', 'q02']")
    assert md["duplicate_question_ids"] == {TEAM: ["q03"]}
    assert len(md["corpus_version_mismatch"]) == 1 and md["corpus_version_mismatch"][0].startswith("bm25_k5: ['000")
