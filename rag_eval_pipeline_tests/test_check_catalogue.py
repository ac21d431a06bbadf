"""``rag-eval check`` over the whole hostile catalogue (``fixtures/hostile/``, its README lists every case).

Every case is in exactly one of two lists:

* :data:`PREFLIGHT`: what ``check`` can find without running a system or a judge. For each, ``check`` exits
  non-zero with one ``rag-eval:`` line on stderr naming the file (and the line and field where the case has
  them) and what was expected; then ``rag-eval run`` on the same suite exits with the same status and the same
  line and **no Dagster run is recorded** (the test's own DAGSTER_HOME is read back through
  ``DagsterInstance.get_runs``). Both commands are called in process (``cli.main``); a few representatives
  again in a subprocess (:func:`test_representatives_through_the_real_cli`).
* :data:`NOT_PREFLIGHT`: cases whose outcome needs a system's or a judge's call, a completed run, or another
  command (``compare``, ``label``, ``serve``...), or that are not mistakes at all (repaired, allowed,
  counted, warned inputs), each with the reason. Those that ``check`` can still say something about before
  the run (a warning, a count) are :data:`NOTED`: ``check`` passes and prints the note.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict
from rag_eval_pipeline_tests.defs.test_hostile_inputs import CASES, HOSTILE, _merge, broken_config, load_case

INPUT_TARGETS = ("golden", "corpus", "beir", "run_log")

# case -> the route that builds it (every error case of the four input targets is "input")
PREFLIGHT: dict[str, str] = {
    **{c: "input" for c in CASES
       if load_case(c)["target"] in INPUT_TARGETS and load_case(c)["expect"]["outcome"] == "error"},
    **{c: "config" for c in CASES if load_case(c)["target"] == "config"},
    "traces_bad_otlp_value": "traces",
    "traces_one_huge_line": "traces_line",
    "suite_name_301": "suites",
    "suite_name_quick": "suites",
    "suite_shared_output": "output",
    "output_is_file": "output",
    "output_read_only": "output",
    "wait_s_nan": "run_option",
    **{c: "baseline" for c in CASES if load_case(c)["target"] == "baseline"},
}

_CALLS = "needs the system's calls: what the endpoint or callable returns is only known by calling it"
_RUN = "the outcome is read off a completed run's outputs"
NOT_PREFLIGHT: dict[str, str] = {
    **{c: _CALLS for c in ("live_body_200mb", "live_concurrency_timeouts", "live_deep_json", "live_gzip_bomb",
                           "live_repeated_key", "live_secret_echo", "live_secret_encoded_echo", "python_20mb_answers",
                           "python_stuck_call_and_bad_exceptions", "python_prints_forge_summary",
                           "python_timed_out_call_prints_later")},
    "acl_accent_stripped_answer": f"not a mistake: an answer withheld from the report ({_RUN})",
    "acl_zero_width_answer": f"not a mistake: an answer withheld from the report ({_RUN})",
    "traces_orphan_span": "not a mistake: resolved by the documented root rule and counted in the run's metadata",
    "traces_two_roots": "not a mistake: resolved by the documented root rule and counted in the run's metadata",
    "traces_phoenix_no_parent_id": "not a mistake: resolved by the documented root rule, counted",
    "traces_1gb": "not a mistake: a large file read in bounded memory (check reads it with the same reader)",
    "traces_wrong_value_shapes": "an error row of one question and counts, not a refusal: the run goes on",
    "corpus_bom_crlf": "not a mistake: repaired (same chunks, same corpus_version)",
    "corpus_file_name_with_spaces": "not a mistake: allowed (percent-encoded docno in the TREC files)",
    "corpus_changed_text": "not a mistake: a new corpus version; the gate's refusal to compare is its designed outcome",
    "golden_evidence_withdrawn": "not a mistake: a WARN check (non-blocking)",
    "runs_missing_score": "not a mistake: allowed (ranks kept)",
    "runs_empty_retrieval": "not a mistake: allowed (recall 0, no judge call)",
    "runs_unknown_question_ids": "not a mistake: counted and left out",
    "compare_baseline_deep_manifest": "another command (rag-eval compare), which starts no Dagster run",
    "compare_doctored_table": "another command (rag-eval compare), which starts no Dagster run",
    "label_deep_json": "another command (rag-eval label), which starts no Dagster run",
    "label_missing_final_newline": "another command (rag-eval label), which starts no Dagster run",
    "serve_dns_rebinding": "a server (rag-eval serve), not an input of a run",
    "serve_reference_dns_rebinding": "a server (rag-eval serve-reference), not an input of a run",
    "serve_symlinked_index": "a server (rag-eval serve), not an input of a run",
    "trec_wrong_columns": "no configured system reads TREC run files (read by rag-eval trec-eval, a separate tool)",
    "signal_step_ignores_interrupt": "a signal sent to a run in progress",
    "signal_step_in_native_loop": "a signal sent to a run in progress",
    "signal_step_waits_on_thread_pool": "a signal sent to a run in progress",
}

# cases check passes, with a note on stdout that contains the string given
NOTED = {
    # the README: q02's relevant chunks and claim support are on promo-grabado-2024 (status: withdrawn)
    "golden_evidence_withdrawn": "1 question(s) rest on withdrawn or replaced documents (warned, not refused): "
                                 "['q02']",
    "runs_unknown_question_ids": "2 outside the golden set (left out): ['q900', 'q901']",
    "corpus_changed_text": "the regression gate will not compare them",
}


def test_every_case_of_the_catalogue_is_classified_once():
    assert set(PREFLIGHT) | set(NOT_PREFLIGHT) == set(CASES)
    assert not set(PREFLIGHT) & set(NOT_PREFLIGHT)
    assert set(NOTED) <= set(NOT_PREFLIGHT)
    # the counts docs/own-system.md gives
    assert (len(CASES), len(PREFLIGHT), len(NOT_PREFLIGHT)) == (92, 56, 36)


# ------------------------------------------------------------------------------------------- the fixtures

@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh DAGSTER_HOME, an output root of the test's own, and no variable that would change the suite."""
    h = dagster_home(tmp_path)
    monkeypatch.setenv("DAGSTER_HOME", str(h))
    monkeypatch.setenv("RAG_EVAL_OUTPUT_DIR", str(tmp_path / "outputs"))
    for var in ("RAG_EVAL_CONFIG", "RAG_EVAL_SUITES", "RAG_EVAL_JUDGE"):
        monkeypatch.delenv(var, raising=False)
    return h


def recorded_runs(home: Path) -> int:
    """Runs recorded in DAGSTER_HOME and in its ad-hoc instance (``adhoc/``, where runs of an unlisted
    configuration are recorded)."""
    total = 0
    for folder in (home, home / "adhoc"):
        if (folder / "dagster.yaml").exists() or folder == home:
            with dg.DagsterInstance.from_config(str(folder)) as instance:
                total += len(instance.get_runs())
    return total


def write_config(tmp_path: Path, cfg: dict, name: str = "config.yaml", append: str = "") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False) + append, encoding="utf-8")
    return path


def promote_fake_baseline(out: Path, corpus_version: str = "c" * 64, golden_version: str = "g" * 64) -> None:
    """A promoted baseline as the promotion asset leaves it (empty tables of the declared schemas, their sha256
    in the manifest and in promotion.json), made without a run."""
    from rag_eval_pipeline.core import tables
    from rag_eval_pipeline.core.baseline import TABLES, read_baseline, with_file_hashes
    from rag_eval_pipeline.core.storage import write_parquet_atomic

    base = out / "baseline"
    base.mkdir(parents=True)
    for t in TABLES:
        write_parquet_atomic(tables.empty(t), base / f"{t}.parquet", table=t)
    manifest = with_file_hashes({"system": "bm25_k10", "corpus_version": corpus_version,
                                 "golden_version": golden_version, "promoted_at": "2026-12-01T00:00:00+00:00",
                                 "run_id": "r" * 36}, out)
    for path in (base / "manifest.json", out / "promotion.json"):
        path.write_text(json.dumps(manifest), encoding="utf-8")
    assert read_baseline(out) is not None  # intact before the case damages it


class Built:
    """One case made ready: the arguments that select the suite (``--config`` or ``--suite``) and the output
    folder, what the line must contain, and the exit status."""

    def __init__(self, args: list[str], out: Path, status: int, parts: list[str], extra_run_args=()):
        self.args, self.out, self.status, self.parts, self.extra_run_args = args, out, status, parts, extra_run_args


def build(name: str, tmp_path: Path, monkeypatch) -> Built:
    """Make the case's files and return what check and run are called with (module docstring)."""
    case = load_case(name)
    expect = case.get("expect") or {}
    route = PREFLIGHT[name]
    out = tmp_path / "outputs" / "suite"
    if route == "input":
        config = broken_config(name, case, tmp_path)
        parts = [f"/{expect['file']}", f"field {expect['field']!r}", expect["message"], "expected"]
        if expect.get("line") is not None:
            parts.append(f"line {expect['line']},")
        return Built(["--config", str(config)], out, 1, parts)
    if route == "config":
        cfg = _merge(sample_config_dict(), case.get("config") or {})
        if case.get("system_prompt_version_chars"):
            cfg["systems"][0]["prompt_version"] = "v" * case["system_prompt_version_chars"]
        config = write_config(tmp_path, cfg, "broken_config.yaml", case.get("append", ""))
        parts = [str(config), expect["message"]] + ([expect["key"]] if expect.get("key") else [])
        return Built(["--config", str(config)], out, 2, parts + (["line "] if expect.get("names_line") else []))
    if route in ("traces", "traces_line"):
        if route == "traces":
            path = HOSTILE / name / case["file"]
            parts = [f"/{expect['file']}", f"line {expect['line']},", f"field {expect['field']!r}", expect["message"]]
        else:  # one line just past the reader's bound (the catalogue's 200 MiB costs the same refusal)
            from rag_eval_pipeline.core.systems.trace_sources import MAX_LINE_BYTES

            path = tmp_path / "one_line.jsonl"
            with path.open("wb") as fh:
                fh.write(b'{"resourceSpans": [{"pad": "')
                for _ in range((MAX_LINE_BYTES >> 20) + 1):
                    fh.write(b"x" * (1 << 20))
            parts = ["/one_line.jsonl", "line 1,", "field 'json'", expect["message"]]
        cfg = sample_config_dict()
        cfg["systems"].append({"name": "team_traces", "kind": "traces", "path": str(path),
                               "question_id_attribute": "rag.question_id"})
        return Built(["--config", str(write_config(tmp_path, cfg))], out, 1, parts + ["system team_traces (traces)"])
    if route == "suites":
        good = write_config(tmp_path, sample_config_dict(), "good.yaml")
        text = case["suites_file"].replace("CONFIG", str(good)).replace("OTHER", str(good))
        text = text.replace("LONGNAME", "s" * case.get("long_name_chars", 8))
        suites = tmp_path / "suites.yaml"
        suites.write_text(text, encoding="utf-8")
        monkeypatch.setenv("RAG_EVAL_SUITES", str(suites))
        return Built(["--suite", "sample"], out, 2, [str(suites), expect["message"]])
    config = write_config(tmp_path, sample_config_dict())
    if route == "output":
        if name == "output_is_file":
            out.parent.mkdir(parents=True)
            out.write_text("not a folder\n", encoding="utf-8")
        elif name == "suite_shared_output":  # the folder records another suite (as a run of it leaves it)
            from rag_eval_pipeline.core.suites import claim_output_folder

            claim_output_folder(out, "adhoc_other_0123456789", tmp_path / "other" / "config.yaml")
        else:
            out.mkdir(parents=True)
            if os.geteuid() == 0:
                if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(out)]).returncode != 0:
                    pytest.skip("running as root and the folder cannot be made immutable here")
            else:
                out.chmod(0o555)
        return Built(["--config", str(config)], out, 2, [str(out), expect["message"]])
    if route == "run_option":
        return Built(["--config", str(config)], out, 2, [expect["message"]], extra_run_args=("--wait-s", "nan"))
    if route == "baseline":
        from rag_eval_pipeline_tests.defs.test_hostile_live import damage

        promote_fake_baseline(out)
        damage(out, case["damage"])
        return Built(["--config", str(config)], out, 1,
                     ["the promoted baseline is damaged", str(out / "baseline"), expect["message"],
                      "start again without a baseline"])
    raise AssertionError(route)


def _unlock(out: Path) -> None:
    if out.is_dir() and os.geteuid() == 0 and shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(out)], check=False)
    elif out.is_dir():
        out.chmod(0o755)


def _every_file(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    if folder.is_file():
        return {".": folder.read_bytes()}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# ------------------------------------------------------------------------------------------- the tests

@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", sorted(PREFLIGHT))
def test_check_finds_it_and_run_records_no_dagster_run(name, tmp_path, home, monkeypatch, capsys):
    built = build(name, tmp_path, monkeypatch)
    before = _every_file(built.out)
    try:
        if PREFLIGHT[name] == "run_option":  # an option of run alone: check has nothing to read
            line = None
        else:
            assert main(["check", *built.args, "--output", str(built.out)]) == built.status
            captured = capsys.readouterr()
            lines = captured.err.strip().splitlines()
            assert len(lines) == 1, captured.err  # one line per problem, and this case has one
            line = lines[0]
            assert line.startswith("rag-eval: ") and len(line) < 2000, line
            for part in built.parts:
                assert part in line, (part, line)
            if PREFLIGHT[name] not in ("config", "suites"):  # a configuration that does not load is the line alone
                assert f"problems found (one line each on stderr); exit {built.status}" in captured.out
        try:
            status = main(["run", *built.args, "--output", str(built.out), *built.extra_run_args])
        except SystemExit as exc:  # argparse refuses an option's value before any command runs
            status = exc.code
        captured = capsys.readouterr()
        assert status == built.status
        err = captured.err.strip().splitlines()
        if line is not None:
            assert err == [line]  # the same one line, the run's exit status
            assert captured.out == ""
        else:
            assert built.parts[0] in err[-1], captured.err
        assert "Traceback" not in captured.err
        assert recorded_runs(home) == 0  # no Dagster run was launched, so none is recorded
        assert _every_file(built.out) == before  # nothing written, nothing lost
    finally:
        _unlock(built.out)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("name", sorted(NOTED))
def test_check_passes_what_is_not_a_mistake_and_says_it_before_the_run(name, tmp_path, home, monkeypatch, capsys):
    case = load_case(name)
    config = broken_config(name, case, tmp_path)
    out = tmp_path / "outputs" / "suite"
    if name == "corpus_changed_text":  # a baseline promoted on another corpus version (the sample's golden set)
        from rag_eval_pipeline.core.config import load_config
        from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot

        cfg = load_config(config)
        golden = build_golden(cfg, build_snapshot(cfg)[0])
        promote_fake_baseline(out, golden_version=golden["golden_version"][0])
    assert main(["check", "--config", str(config), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert NOTED[name] in captured.out, captured.out
    # every case is built on the sample, whose q26 rests on a replaced document: at least that warning, so the
    # summary line never says "no problem"
    assert re.search(r"^check: \d+ warning\(s\) above, nothing that stops the run", captured.out, flags=re.M)
    assert "no problem" not in captured.out
    if name == "corpus_changed_text":
        assert "evaluated on corpus_version cccccccccccc" in captured.out
        assert "evaluated on golden_version" not in captured.out  # the same golden set: no note about it
    assert recorded_runs(home) == 0


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", ["golden_relevant_not_in_snapshot", "baseline_edited", "suite_shared_output"])
def test_representatives_through_the_real_cli(name, tmp_path, monkeypatch):
    """``python -m rag_eval_pipeline.cli`` in a subprocess: the exit status, one line on stderr, no traceback,
    no Dagster run recorded in its DAGSTER_HOME."""
    home = dagster_home(tmp_path)
    built = build(name, tmp_path, monkeypatch)
    env = cli_env(home, RAG_EVAL_OUTPUT_DIR=str(tmp_path / "outputs"))
    for command in ("check", "run"):
        proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", command, *built.args,
                               "--output", str(built.out)], cwd=REPO_ROOT, env=env, capture_output=True, text=True,
                              timeout=240)
        assert proc.returncode == built.status, proc.stdout[-2000:] + proc.stderr[-2000:]
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and all(p in lines[0] for p in built.parts), proc.stderr[-2000:]
    assert recorded_runs(home) == 0
