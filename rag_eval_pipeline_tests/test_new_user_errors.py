"""What a new user breaks first: configuration typos, an empty golden set, a gate on a metric that is not
computed, a failed run in a folder that holds an earlier run's tables. Each must give one clear error
(or an honest summary), never a silent default, a stack trace or an earlier run's numbers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli.run_output import step_error_text
from rag_eval_pipeline.core.config import Threshold, load_config
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.gates import evaluate_gates
from rag_eval_pipeline.core.pipeline import build_golden, build_snapshot
from rag_eval_pipeline.core.sources._records import read_records
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home, sample_config_dict


def write_config(tmp_path, cfg: dict):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def config_with(tmp_path, edit) -> object:
    cfg = sample_config_dict()
    edit(cfg)
    return write_config(tmp_path, cfg)


# --- configuration -----------------------------------------------------------------------------------

def test_the_sample_configuration_still_loads():
    cfg = load_config(SAMPLE_DIR / "config.yaml")
    assert cfg.alpha == 0.05 and cfg.quick_subset_size == 24 and cfg.rel_level == 1
    assert [(t.metric, t.k) for t in cfg.thresholds][:3] == [("recall", 5), ("claim_evidence_availability", 5),
                                                           ("ndcg_cut", 10)]


@pytest.mark.parametrize("edit, message", [
    # a typo in a key was ignored: rel_level stayed 1 without a word
    (lambda c: c["metrics"].update(rel_levl=2), r"unknown key\(s\) \['rel_levl'\] in metrics"),
    # a misspelt section would turn every gate off
    (lambda c: c.update(gate=c.pop("gates")), r"unknown key\(s\) \['gate'\] in the top level"),
    (lambda c: c["gates"].update(aplha=0.01), r"unknown key\(s\) \['aplha'\] in gates"),
    # p < 2 always: every drop would be called a regression
    (lambda c: c["gates"].update(alpha=2), r"gates.alpha must be a number in \(0.0, 1.0\), got 2"),
    (lambda c: c["gates"].update(alpha=0), r"gates.alpha must be a number in \(0.0, 1.0\), got 0"),
    (lambda c: c.update(quick_subset_size=0), r"quick_subset_size must be an integer >= 1, got 0"),
    # these were a bare ValueError from int()
    (lambda c: c["metrics"].update(rel_level="high"), r"metrics.rel_level must be an integer >= 0, got 'high'"),
    (lambda c: c["metrics"].update(bootstrap_resamples="lots"),
     r"metrics.bootstrap_resamples must be an integer >= 1, got 'lots'"),
    (lambda c: c["judge"].update(max_error_share=5), r"judge.max_error_share must be a number in \[0.0, 1.0\], got 5"),
    # was raised only when rag_runs ran, without the file or the system
    (lambda c: c["systems"][0]["generator"].update(abstain_threshold="high"),
     r"systems\[0\].generator.abstain_threshold must be a number in \[0.0, 1.0\], got 'high'"),
    # recall_7 with ks [1, 3, 5, 10]: the gate could never be evaluated
    (lambda c: c["gates"]["thresholds"][0].update(metric="recall_7"),
     r"gates.thresholds\[0\] \(recall, k=7\) uses a cut-off that is not in metrics.ks \[1, 3, 5, 10\]"),
])
def test_configuration_mistakes_are_errors_naming_file_and_key(tmp_path, edit, message):
    path = config_with(tmp_path, edit)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("edit, line_key, message", [
    # difflib ratios worked out by hand: 'max_run_error_shar' vs 'max_run_error_share' 2*18/37 = 0.97;
    # 'rel_levl' vs 'rel_level' 2*8/17 = 0.94; 'gate' vs 'gates' 2*4/9 = 0.89 (all >= 0.6: suggested)
    (lambda c: c["gates"].update(max_run_error_shar=0.2), ("gates", "max_run_error_shar"),
     "unknown key(s) ['max_run_error_shar'] in gates (gates.max_run_error_shar: did you mean "
     "'max_run_error_share'?); expected only ["),
    (lambda c: c["metrics"].update(rel_levl=2), ("metrics", "rel_levl"),
     "unknown key(s) ['rel_levl'] in metrics (metrics.rel_levl: did you mean 'rel_level'?)"),
    (lambda c: c.update(gate=c.pop("gates")), ("gate",),
     "unknown key(s) ['gate'] in the top level (gate: did you mean 'gates'?)"),
    (lambda c: c["systems"][0]["retriever"].update(kk=3), ("systems", 0, "retriever", "kk"),
     "unknown key(s) ['kk'] in systems[0].retriever (systems[0].retriever.kk: did you mean 'k'?)"),
    # nothing close ('zzz' shares no letter with any gates key): no guess, the allowed keys only
    (lambda c: c["gates"].update(zzz=1), ("gates", "zzz"), "unknown key(s) ['zzz'] in gates; expected only ["),
])
def test_a_misspelt_key_is_one_line_naming_file_line_and_path_with_a_suggestion(tmp_path, edit, line_key, message):
    from rag_eval_pipeline.core.yamlio import load_yaml_located

    path = config_with(tmp_path, edit)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = str(info.value)
    line = load_yaml_located(path).lines[line_key]
    assert text.startswith(f"{path}, line {line}: ") and message in text and "\n" not in text, text


def test_a_threshold_at_a_configured_cut_off_still_loads(tmp_path):
    path = config_with(tmp_path, lambda c: c["gates"]["thresholds"][0].update(metric="recall_10"))
    assert (load_config(path).thresholds[0].metric, load_config(path).thresholds[0].k) == ("recall", 10)


# --- gates -------------------------------------------------------------------------------------------

def _summary(rows):
    return pl.DataFrame(
        {"system": [r[0] for r in rows], "split": ["test"] * len(rows), "segment": ["all"] * len(rows),
         "metric": [r[1] for r in rows], "k": pl.Series([r[2] for r in rows], dtype=pl.Int32),
         "value": [r[3] for r in rows]})


def _qm(rows):
    return pl.DataFrame(
        {"system": [r[0] for r in rows], "question_id": [r[1] for r in rows], "split": ["test"] * len(rows),
         "metric": [r[2] for r in rows], "k": pl.Series([r[3] for r in rows], dtype=pl.Int32),
         "value": [r[4] for r in rows]})


def test_a_gate_on_a_metric_that_is_not_computed_says_so_not_empty_denominator():
    # recall@5: candidate 1/2 = 0.5 (q1 hit, q2 miss), baseline the same -> pass, difference 0.
    # map: computed but null for both (no relevant ids) -> the empty-denominator reason, as before.
    summary = _summary([("cand", "recall", 5, 0.5), ("base", "recall", 5, 0.5),
                        ("cand", "map", None, None), ("base", "map", None, None)])
    qm = _qm([("cand", "q1", "recall", 5, 1.0), ("cand", "q2", "recall", 5, 0.0),
              ("base", "q1", "recall", 5, 1.0), ("base", "q2", "recall", 5, 0.0)])
    thresholds = [Threshold(metric="recall", k=5, max_abs_drop=0.05), Threshold(metric="recal", k=5, max_abs_drop=0.05),
                  Threshold(metric="recall", k=7, max_abs_drop=0.05), Threshold(metric="map", k=5, max_abs_drop=0.05),
                  Threshold(metric="map", max_abs_drop=0.05)]
    ok, typo, bad_k, k_on_map, null = evaluate_gates("cand", summary, qm, "base", summary, qm, thresholds,
                                                      n_permutations=50)
    assert ok.status == "pass" and ok.difference == 0.0
    assert typo.status == "not_evaluable" and typo.reason.startswith("unknown metric 'recal'")
    assert "'recall'" in typo.reason and "empty denominator" not in typo.reason
    assert bad_k.status == "not_evaluable" and bad_k.reason == "metric 'recall' is computed at k in [5], not at k=7"
    assert k_on_map.reason == "metric 'map' has no cut-off k; expected no k, got k=5"
    assert null.status == "not_evaluable"
    assert null.reason == ("the candidate's and the baseline's values are null (empty denominator: no evaluable "
                           "question)")


# --- inputs ------------------------------------------------------------------------------------------

def test_an_empty_golden_file_is_an_input_error_naming_it(tmp_path):
    empty = tmp_path / "golden.jsonl"
    empty.write_text("\n", encoding="utf-8")
    cfg = load_config(config_with(tmp_path, lambda c: c["golden"].update(path=str(empty))))
    snapshot, _ = build_snapshot(cfg)
    with pytest.raises(InputError, match="no questions in the golden set; expected at least one") as info:
        build_golden(cfg, snapshot)
    assert info.value.path == str(empty)


def test_malformed_json_message_reads_once(tmp_path):
    f = tmp_path / "golden.jsonl"
    f.write_text('{"question_id": "q1"}\n{"question_id": "q2\n', encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_records(f)
    # json's own message ends in "starting at"; the column follows it once, not "at at column"
    assert "Unterminated string starting at column 17" in str(info.value)
    assert "at at" not in str(info.value) and "line 2" in str(info.value)


def test_step_error_text_does_not_repeat_a_quoted_cause():
    class Err:
        def __init__(self, cls_name, message, cause=None):
            self.cls_name, self.message, self.cause, self.context = cls_name, message, cause, None
    cause = Err("ParserError", "yaml.parser.ParserError: while parsing a flow sequence\n  line 3")
    top = Err("ConfigError", "rag_eval_pipeline.core.errors.ConfigError: c.yaml: not valid YAML: while parsing a "
                             "flow sequence\n  line 3", cause)
    wrapper = Err("DagsterExecutionStepExecutionError", "Error occurred while executing op", top)
    # our own error's text without its class path; the YAML cause it quotes is not repeated
    assert step_error_text(wrapper) == "c.yaml: not valid YAML: while parsing a flow sequence\n  line 3"
    # another library's error keeps its class name (it says what kind of failure it was)
    assert step_error_text(Err("ValueError", "ValueError: disk full")) == "ValueError: disk full"


# --- the command line (a subprocess: the CLI binds the code location's resources when it imports it) ---

def _cli(tmp_path, config, out):
    home = dagster_home(tmp_path)
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                           "--output", str(out)], env=cli_env(home), capture_output=True, text=True, timeout=300)


def test_run_with_a_bad_configuration_is_one_line_and_starts_no_run(tmp_path):
    path = config_with(tmp_path, lambda c: c["metrics"].update(rel_levl=2))
    out = tmp_path / "out"
    proc = _cli(tmp_path, path, out)
    assert proc.returncode == 2 and proc.stdout == ""  # 2: a configuration error, no run started
    line = next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "rel_levl:" in text)
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval: {path}, line {line}: unknown key(s) ['rel_levl'] in metrics (metrics.rel_levl: did you mean "
        "'rel_level'?); expected only ['ks', 'ranking_mode', "
        "'rel_level', 'on_duplicate', 'complete', 'bootstrap_resamples', 'small_segment_n']"]
    assert not list(out.glob("*.parquet"))


def test_a_typo_inside_a_system_is_one_line_exit_2_and_no_dagster_run(tmp_path):
    """``retriver:`` (and ``langauge:`` one level down) used to launch a run that failed inside rag_runs."""
    import dagster as dg

    path = config_with(tmp_path, lambda c: c["systems"][1].update(retriver={"k": 3}))
    line = next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "retriver:" in text)
    with pytest.raises(ConfigError, match=rf"^{path}, line {line}: systems\[1\] \(bm25_k10, kind reference\): "
                                          r"unknown key\(s\) \['retriver'\] in systems\[1\]"):
        load_config(path, environ={})
    path = config_with(tmp_path, lambda c: c["systems"][0]["retriever"].update(langauge="spanish"))
    line = next(i for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "langauge:" in text)
    proc = _cli(tmp_path, path, tmp_path / "out")
    assert proc.returncode == 2 and proc.stdout == ""
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"rag-eval: {path}, line {line}: systems[0] (bm25_k5, kind reference): ")
    assert "unknown key(s) ['langauge'] in systems[0].retriever" in err[0]
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        assert instance.get_run_records() == []  # refused before any Dagster run started


def _earlier_summary(out):
    out.mkdir()
    # an earlier run's summary, with a system this configuration does not have
    pl.DataFrame({"system": ["OLD_SYSTEM"], "split": ["all"], "segment": ["all"], "metric": ["recall"],
                  "k": pl.Series([5], dtype=pl.Int32), "value": [0.9], "numerator": [9.0], "denominator": [10.0],
                  "n": [10], "ci_low": [0.6], "ci_high": [0.98], "ci_method": ["wilson"]}
                 ).write_parquet(out / "metric_summary.parquet")


def test_bad_data_is_one_line_before_any_run_and_leaves_earlier_tables_alone(tmp_path):
    out = tmp_path / "out"
    _earlier_summary(out)
    before = (out / "metric_summary.parquet").read_bytes()
    golden = [json.loads(line) for line in (SAMPLE_DIR / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    golden[5]["question_id"] = golden[1]["question_id"]  # a duplicate id: rag-eval check finds it
    bad = tmp_path / "golden.jsonl"
    bad.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in golden), encoding="utf-8")
    path = config_with(tmp_path, lambda c: c["golden"].update(path=str(bad)))
    proc = _cli(tmp_path, path, out)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    assert proc.stdout == ""  # no run, so no earlier run's numbers either
    (line,) = proc.stderr.strip().splitlines()
    assert line.startswith(f"rag-eval: file {bad}, line 6, field 'question_id'") and "first seen on line 2" in line
    assert (out / "metric_summary.parquet").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["metric_summary.parquet"]


# A step that fails inside the run (what rag-eval check cannot see): the summary step raises, as a bug would.
_FAILING_SUMMARY = """
import rag_eval_pipeline.core.pipeline as _pipeline
from rag_eval_pipeline.core.errors import InputError

def _broken(*args, **kwargs):
    raise InputError("summary broken by the test; expected a working summary", path="metric_summary",
                     field="value")

_pipeline.build_summary = _broken
"""


def test_a_failed_run_does_not_print_an_earlier_runs_summary(tmp_path):
    out = tmp_path / "out"
    _earlier_summary(out)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_FAILING_SUMMARY, encoding="utf-8")
    path = config_with(tmp_path, lambda c: None)
    home = dagster_home(tmp_path)
    env = cli_env(home)
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(path),
                           "--output", str(out)], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr[-3000:]
    stdout = proc.stdout
    assert "OLD_SYSTEM" not in stdout
    assert "  metric_summary.parquet  (from an earlier run, not rewritten by this one)" in stdout
    assert "no summary: this run did not rewrite metric_summary.parquet" in stdout
    assert "  corpus_snapshot.parquet\n" in stdout  # written by this run before the summary failed
    assert "field 'value': summary broken by the test" in stdout


def test_trec_eval_duplicate_docno_names_the_run_file_not_a_pipeline_option(tmp_path, capsys):
    from rag_eval_pipeline.trec_eval import main as trec_eval_main

    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("q1 0 d1 1\n", encoding="utf-8")
    run.write_text("q1 Q0 d1 1 0.9 sys\nq1 Q0 d2 2 0.7 sys\nq1 Q0 d1 3 0.5 sys\n", encoding="utf-8")
    assert trec_eval_main(["-m", "map", str(qrels), str(run)]) == 2
    err = capsys.readouterr().err
    assert f"file {run}, field 'docno'" in err and "docno 'd1' is retrieved more than once" in err
    assert "(lines 1, 3)" in err  # both lines of the duplicate, as the manual promises
    assert "on_duplicate" not in err
    # without the duplicate: d1 at rank 1 is the only relevant document, AP = 1
    run.write_text("q1 Q0 d1 1 0.9 sys\nq1 Q0 d2 2 0.5 sys\n", encoding="utf-8")
    assert trec_eval_main(["-m", "map", str(qrels), str(run)]) == 0
    assert capsys.readouterr().out.split() == ["map", "all", "1.0000"]


def test_threshold_metric_names_are_checked_when_the_config_loads(tmp_path):
    import yaml

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError

    base = sample_config_dict()  # absolute paths: the corpus folder must exist when the file loads

    def load(thresholds, **sections):
        cfg = dict(base, gates=dict(base["gates"], thresholds=thresholds), **sections)
        path = tmp_path / "c.yaml"
        path.write_text(yaml.safe_dump(cfg))
        return load_config(path)

    got = load([{"metric": "ndcg@10", "max_abs_drop": 0.1}, {"metric": "mrr", "max_abs_drop": 0.1}]).thresholds
    assert [(t.metric, t.k) for t in got] == [("ndcg_cut", 10), ("recip_rank", None)]
    with pytest.raises(ConfigError, match="'faithfullness' is not a metric"):
        load([{"metric": "faithfullness", "max_abs_drop": 0.1}])
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['repeat'\] in judge"):
        load([], judge={"type": "rule_based", "repeat": 3})
    with pytest.raises(ConfigError, match=r"unknown key\(s\) \['viewer_group'\] in report"):
        load([], report={"viewer_group": ["x"]})


# --- no stack trace on stderr for a user's data mistake ---------------------------------------------

def _hostile_golden_run(tmp_path, **env):
    from rag_eval_pipeline_tests.defs.test_hostile_inputs import broken_config, load_case

    name = "golden_duplicate_question_id"  # q01 twice: line 4, field question_id
    config = broken_config(name, load_case(name), tmp_path)
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config", str(config),
                           "--output", str(tmp_path / "out")], env=cli_env(dagster_home(tmp_path), **env),
                          capture_output=True, text=True, timeout=300)


def _failing_summary_run(tmp_path, **extra_env):
    """The sample run with its summary step raising an InputError (a data error only a run can meet)."""
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_FAILING_SUMMARY, encoding="utf-8")
    env = cli_env(dagster_home(tmp_path), **extra_env)
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--config",
                           str(config_with(tmp_path, lambda c: None)), "--output", str(tmp_path / "out")], env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_bad_golden_line_is_one_clean_error_without_a_stack_trace(tmp_path):
    proc = _hostile_golden_run(tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    golden = "rag_eval_pipeline_tests/fixtures/hostile/golden_duplicate_question_id/golden.jsonl"
    (line,) = proc.stderr.strip().splitlines()  # found before the run: one line, no run, no event log
    assert line.startswith("rag-eval: file ") and golden in line
    assert "line 4, field 'question_id': " in line and "first seen on line 1" in line
    assert proc.stdout == ""


def test_a_data_error_inside_a_run_has_no_stack_trace_unless_asked(tmp_path):
    proc = _failing_summary_run(tmp_path)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    # metric_summary is computed in the aggregate step (one step for summary, judge trust and gates)
    failed = [line for line in lines if line.startswith("step aggregate failed: ")]
    # the message, not the class path (it read "rag_eval_pipeline.core.errors.InputError: file ...")
    assert len(failed) == 1 and failed[0].startswith("step aggregate failed: file metric_summary, field 'value'")
    assert "rag_eval_pipeline.core.errors" not in proc.stdout
    # the reason comes first: right under the run line, before the summary, the check list and the verdict
    header = next(i for i, line in enumerate(lines) if line.startswith("run ") and line.endswith(": FAILED"))
    assert lines[header + 1] == failed[0], lines[header:header + 3]
    assert "verdict: not decided (the run stopped before its report; see the failed step above)" in lines
    assert "Traceback" not in proc.stderr and "Stack Trace" not in proc.stderr
    assert "STEP_FAILURE" in proc.stderr  # the event log stays


def test_rag_eval_tracebacks_keeps_the_stack_trace(tmp_path):
    proc = _failing_summary_run(tmp_path, RAG_EVAL_TRACEBACKS="1")
    assert proc.returncode == 1
    assert "Stack Trace:" in proc.stderr and "in _broken" in proc.stderr


def _failure_record(exc: BaseException):
    """A log record as Dagster's log manager hands it to a logger: the event's error and its text."""
    import logging
    from types import SimpleNamespace

    from dagster._utils.error import serializable_error_info_from_exc_info

    try:
        try:
            raise exc
        except BaseException as inner:
            raise RuntimeError("Error occurred while executing op") from inner
    except RuntimeError:
        error = serializable_error_info_from_exc_info(sys.exc_info())
    event = SimpleNamespace(event_specific_data=SimpleNamespace(error=error))
    record = logging.LogRecord("dagster", logging.ERROR, __file__, 1,
                               'STEP_FAILURE - Execution of step "x" failed.\n\n' + error.to_string(), None, None)
    record.dagster_meta = {"dagster_event": event}
    return record


def test_the_console_logger_cuts_the_stack_trace_only_of_a_users_mistake(monkeypatch):
    import logging

    import dagster as dg

    from rag_eval_pipeline.defs.schedules import cli_console_logger

    def formatted(record, **env) -> str:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        logger = cli_console_logger.logger_fn(dg.build_init_logger_context({"log_level": "DEBUG", "name": "t"}))
        (handler,) = [h for h in logger.handlers if isinstance(h, logging.StreamHandler)]
        return handler.format(record)

    user = _failure_record(InputError("duplicate question_id", path="g.jsonl", line=4, field="question_id"))
    text = formatted(user)
    assert "file g.jsonl, line 4, field 'question_id': duplicate question_id" in text
    assert "Stack Trace" not in text and "File \"" not in text
    assert "Stack Trace:" in user.msg  # the record itself is unchanged: other handlers see it whole
    assert "Stack Trace" in formatted(_failure_record(ConfigError("c.yaml: bad")), RAG_EVAL_TRACEBACKS="1")
    monkeypatch.delenv("RAG_EVAL_TRACEBACKS")
    bug = formatted(_failure_record(KeyError("question_id")))  # a bug in the pipeline's own code
    assert "Stack Trace:" in bug and "KeyError" in bug
    # only rag-eval run gives its jobs this logger: the code location's jobs (the Dagster UI) keep Dagster's own
    from rag_eval_pipeline.definitions import defs

    assert not defs.resolve_job_def("sample__full_evaluation").has_specified_loggers
