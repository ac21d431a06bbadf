"""Suites side by side in one code location: prefixed keys, run tags, one nightly run per suite, and a run of
one suite (or of a quick evaluation) leaving every other suite's materialisations, checks and files alone."""

import datetime as dt
import hashlib
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.suites import ad_hoc_suite, load_suites
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline.defs.location import build_definitions, check_suite
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

CHAIN = {"corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "answer_judgements", "answer_quality",
         "question_metrics", "metric_summary", "metric_history", "judge_calibration", "judge_variance", "gate_results",
         "gate_verdict", "regression_cases", "promotion", "trec_files", "evaluation_report", "citation_claims",
         "citations", "nugget_labels"}
QUICK_CHAIN = CHAIN - {"promotion", "metric_history"}
# not assets of a run, declared as external assets: the promoted baseline (every suite) and the hand-label file
# (a suite whose configuration names one: alpha and gamma, not beta)
EXTERNAL = {"alpha": {"promoted_baseline", "calibration_labels"}, "beta": {"promoted_baseline"},
            "gamma": {"promoted_baseline", "calibration_labels"}}
CHECKS = {("corpus_snapshot", "chunk_ids_unique"), ("golden_set", "golden_consistent_with_snapshot"),
          ("rag_runs", "every_question_has_a_run_row"), ("judge_labels", "verdicts_in_allowed_set"),
          ("judge_labels", "judge_error_share"), ("answer_judgements", "every_answer_has_a_judgement"),
          ("metric_summary", "denominators_consistent"), ("judge_calibration", "judge_calibrated_above_floor"),
          ("gate_verdict", "no_regression_against_baseline"), ("golden_set", "golden_evidence_is_current"),
          ("gate_verdict", "run_errors_within_share")}


def _write(path: Path, cfg: dict) -> Path:
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def suites_dir(tmp_path_factory) -> Path:
    """alpha: the sample (nightly); beta: the sample without team_rag and without calibration (nightly);
    gamma: the sample with a gate on faithfulness (not nightly)."""
    d = tmp_path_factory.mktemp("suites")
    sample = sample_config_dict()
    # alpha's floor is above what the embedded judge reaches on the sample: its calibration check must warn
    _write(d / "alpha.yaml", dict(sample, calibration=dict(sample["calibration"], kappa_floor=0.9)))
    beta = dict(sample, systems=[s for s in sample["systems"] if s["name"] != "team_rag"],
                gates=dict(sample["gates"], candidate_systems=["bm25_k10"]))
    beta.pop("calibration")
    _write(d / "beta.yaml", beta)
    gamma = dict(sample, gates=dict(sample["gates"], thresholds=[{"metric": "faithfulness", "max_abs_drop": 0.05}]))
    _write(d / "gamma.yaml", gamma)
    (d / "suites.yaml").write_text("suites:\n  alpha: {config: alpha.yaml, nightly: true}\n"
                                   "  beta: {config: beta.yaml, nightly: true}\n"
                                   "  gamma: {config: gamma.yaml, nightly: false}\n", encoding="utf-8")
    return d


@pytest.fixture(scope="module")
def location(suites_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("outputs")
    loaded = [check_suite(s) for s in load_suites(suites_dir / "suites.yaml")]
    return build_definitions(loaded, output_dir=str(out), judge=JudgeResource()), out


def _keys(defs) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}


def test_every_suite_has_its_own_prefixed_assets_checks_and_jobs(location):
    defs, _ = location
    expected = {f"{s}/{a}" for s in ("alpha", "beta", "gamma") for a in CHAIN}
    expected |= {f"{s}/quick/{a}" for s in ("alpha", "beta", "gamma") for a in QUICK_CHAIN}
    expected |= {f"{s}/{a}" for s, names in EXTERNAL.items() for a in names}
    assert _keys(defs) == expected
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.to_user_string(), k.name) for k in graph.asset_check_keys}
    assert checks == {(f"{s}/{a}", c) for s in ("alpha", "beta", "gamma") for a, c in CHECKS} | {
        (f"{s}/quick/{a}", c) for s in ("alpha", "beta", "gamma") for a, c in CHECKS}
    full = defs.resolve_job_def("alpha__full_evaluation")
    assert {k.to_user_string() for k in full.asset_layer.executable_asset_keys} == {f"alpha/{a}" for a in CHAIN}
    quick = defs.resolve_job_def("alpha__quick_evaluation")
    assert {k.to_user_string() for k in quick.asset_layer.executable_asset_keys} == {
        f"alpha/quick/{a}" for a in QUICK_CHAIN}
    # the quick report's trend reads the full history, its gates the full evaluation's promoted baseline: the
    # lineage says so, and the UI says the keys are its own
    report = graph.get(dg.AssetKey(["alpha", "quick", "evaluation_report"]))
    assert dg.AssetKey(["alpha", "metric_history"]) in report.parent_keys
    assert dg.AssetKey(["alpha", "promoted_baseline"]) in graph.get(
        dg.AssetKey(["alpha", "quick", "gate_results"])).parent_keys
    assert "never writes the full evaluation's tables, history, metadata plots" in report.description
    assert "never writes the full evaluation's history" in quick.description


def test_the_calibration_check_blocks_only_in_a_suite_that_gates_a_judge_based_metric(location):
    graph = location[0].resolve_asset_graph()

    def blocking(suite):
        return graph.get_check_spec(dg.AssetCheckKey(dg.AssetKey([suite, "judge_calibration"]),
                                                     "judge_calibrated_above_floor")).blocking
    assert blocking("alpha") is False and blocking("beta") is False  # the sample gates retrieval and decisions only
    assert blocking("gamma") is True
    assert graph.get_check_spec(dg.AssetCheckKey(dg.AssetKey(["alpha", "metric_summary"]),
                                                 "denominators_consistent")).blocking is True


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_nightly_schedule_launches_one_run_per_nightly_suite(location, suites_dir):
    defs, out = location
    schedule = defs.resolve_schedule_def("nightly_full_evaluation")
    assert schedule.cron_schedule == "0 2 * * *" and schedule.execution_timezone == "UTC"
    tick = dt.datetime(2026, 3, 4, 2, 0, tzinfo=dt.UTC)
    with dg.instance_for_test() as instance:
        data = schedule.evaluate_tick(dg.build_schedule_context(instance=instance, scheduled_execution_time=tick))
    requests = sorted(data.run_requests, key=lambda r: r.tags["rag_eval/suite"])
    assert [r.tags["rag_eval/suite"] for r in requests] == ["alpha", "beta"]  # gamma is not nightly
    for r, suite in zip(requests, ["alpha", "beta"]):
        assert {k.to_user_string() for k in r.asset_selection} == {f"{suite}/{a}" for a in CHAIN}
        assert {(k.asset_key.to_user_string(), k.name) for k in r.asset_check_keys} == {
            (f"{suite}/{a}", c) for a, c in CHECKS}
        config = suites_dir / f"{suite}.yaml"
        assert r.tags["rag_eval/config_path"] == str(config)
        assert r.tags["rag_eval/config_sha256"] == _sha(config)
        assert r.tags["rag_eval/output_dir"] == str(out / suite)
        assert r.run_key == f"{suite}:{tick.isoformat()}"


def _latest(instance, key: list[str]) -> str | None:
    event = instance.get_latest_materialization_event(dg.AssetKey(key))
    return None if event is None else event.run_id


def _latest_check(instance, key: list[str], name: str) -> str | None:
    history = instance.event_log_storage.get_asset_check_execution_history(
        dg.AssetCheckKey(dg.AssetKey(key), name), limit=1)
    return history[0].run_id if history else None


def _materialization(result, key: list[str]) -> dict:
    """The metadata of the one materialisation of ``key`` in ``result``."""
    found = [e.materialization.metadata for e in result.get_asset_materialization_events() if e.asset_key.path == key]
    assert len(found) == 1, key
    return found[0]


def _files(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): _sha(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".rag-eval.lock"}


def test_a_run_of_one_suite_and_a_quick_run_leave_the_other_materialisations_untouched(location, suites_dir,
                                                                                       monkeypatch):
    defs, out = location
    monkeypatch.setenv("RAG_EVAL_REPORT_URL", "http://127.0.0.1:8765/")
    with dg.instance_for_test() as instance:
        alpha = defs.resolve_job_def("alpha__full_evaluation").execute_in_process(instance=instance)
        assert alpha.success
        alpha_files = _files(out / "alpha")
        latest = {a: _latest(instance, ["alpha", a]) for a in CHAIN}
        assert set(latest.values()) == {alpha.run_id}
        checks = {(a, c): _latest_check(instance, ["alpha", a], c) for a, c in CHECKS}
        assert set(checks.values()) == {alpha.run_id}

        beta = defs.resolve_job_def("beta__full_evaluation").execute_in_process(instance=instance)
        assert beta.success
        assert {a: _latest(instance, ["alpha", a]) for a in CHAIN} == latest
        assert {k: _latest_check(instance, ["alpha", k[0]], k[1]) for k in CHECKS} == checks
        assert _files(out / "alpha") == alpha_files
        assert _latest(instance, ["beta", "metric_summary"]) == beta.run_id
        assert not (out / "beta" / "quick").exists()

        quick = defs.resolve_job_def("alpha__quick_evaluation").execute_in_process(instance=instance)
        assert quick.success
        # the quick run has its own keys and folder: the full run's latest values, plots and files are as they were
        assert {a: _latest(instance, ["alpha", a]) for a in CHAIN} == latest
        assert {p: h for p, h in _files(out / "alpha").items() if not p.startswith("quick/")} == alpha_files
        assert _latest(instance, ["alpha", "quick", "metric_summary"]) == quick.run_id
        quick_golden = _materialization(quick, ["alpha", "quick", "golden_set"])
        assert quick_golden["questions"].value == 24  # quick_subset_size of the sample configuration
        assert quick_golden["subset"].value == "quick"

        # every run carries suite, configuration path, its sha256 and output folder
        for run, suite in ((alpha, "alpha"), (beta, "beta"), (quick, "alpha")):
            tags = instance.get_run_by_id(run.run_id).tags
            config = suites_dir / f"{suite}.yaml"
            assert tags["rag_eval/suite"] == suite
            assert tags["rag_eval/config_path"] == str(config)
            assert tags["rag_eval/config_sha256"] == _sha(config)
            assert tags["rag_eval/output_dir"] == str(out / suite)

        # the report: the whole Markdown in the metadata, a link to `rag-eval serve`, never a file:// link
        report = _materialization(alpha, ["alpha", "evaluation_report"])
        assert report["report"].value == (out / "alpha" / "report.md").read_text(encoding="utf-8")
        assert report["report_url"].value == "http://127.0.0.1:8765/alpha/report.html"
        assert not [k for k, v in report.items() if "file://" in str(getattr(v, "value", v))]
        quick_report = _materialization(quick, ["alpha", "quick", "evaluation_report"])
        assert quick_report["report_url"].value == "http://127.0.0.1:8765/alpha/quick/report.html"

        # alpha's calibration check warns (kappa below its 0.9 floor) and is not blocking; kappa is a number,
        # the one judge_calibration holds
        calib = next(e for e in alpha.get_asset_check_evaluations() if e.check_name == "judge_calibrated_above_floor")
        assert not calib.passed and calib.severity == dg.AssetCheckSeverity.WARN
        assert isinstance(calib.metadata["kappa"], dg.FloatMetadataValue)
        table = pl.read_parquet(out / "alpha" / "judge_calibration.parquet")
        assert calib.metadata["kappa"].value == pytest.approx(table["kappa"][0]) and calib.metadata["kappa"].value < 0.9


def test_a_run_launched_without_the_suites_tags_gets_them_when_it_starts(location, suites_dir):
    # e.g. "Materialize" on an asset in the UI: the implicit asset job carries no job tags
    defs, out = location
    job = defs.resolve_implicit_global_asset_job_def()
    with dg.instance_for_test() as instance:
        result = job.execute_in_process(instance=instance, asset_selection=[dg.AssetKey(["beta", "corpus_snapshot"])])
        assert result.success
        tags = instance.get_run_by_id(result.run_id).tags
    assert tags["rag_eval/suite"] == "beta"
    assert tags["rag_eval/config_sha256"] == _sha(suites_dir / "beta.yaml")
    assert tags["rag_eval/output_dir"] == str(out / "beta")


def test_an_ad_hoc_configuration_is_its_own_suite(suites_dir, tmp_path):
    listed = load_suites(suites_dir / "suites.yaml")
    assert ad_hoc_suite(suites_dir / "alpha.yaml", listed).name == "alpha"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = ad_hoc_suite(_write(tmp_path / "a" / "config.yaml", {}), listed)
    two = ad_hoc_suite(_write(tmp_path / "b" / "config.yaml", {}), listed)
    assert one.ad_hoc and two.ad_hoc and one.name != two.name
    assert one.name.startswith("adhoc_config_") and one.name not in {s.name for s in listed}


@pytest.mark.parametrize("text, message", [
    ("suites:\n  bad-name: {config: x.yaml}\n", "a suite name must be letters, digits and underscores"),
    ("suites:\n  quick: {config: x.yaml}\n", "a suite name must not be one of ['quick'"),
    # the asset group of sample's quick evaluation is sample_quick: no suite may take that name
    ("suites:\n  sample: {config: x.yaml}\n  sample_quick: {config: y.yaml}\n", "must not end in ['_quick']"),
    ("suites:\n  " + "s" * 301 + ": {config: x.yaml}\n", "at most 100 characters (got 301)"),
    ("suites:\n  a: {config: x.yaml, nightly: yes please}\n", "nightly must be true or false"),
    ("suites:\n  a: {config: x.yaml, nighty: true}\n", "unknown key(s) ['nighty']"),
    ("suites:\n  a: {config: x.yaml}\n  b: {config: ./x.yaml}\n", "is already suite 'a'"),
    ("suits:\n  a: {config: x.yaml}\n", "expected one top-level key 'suites'"),
])
def test_a_bad_suites_file_is_an_error_naming_the_file_and_suite(tmp_path, text, message):
    path = tmp_path / "suites.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_suites(path)
    assert str(path) in str(exc.value) and message in str(exc.value)


def test_a_suite_whose_data_folder_is_absent_is_skipped_with_the_path(tmp_path):
    cfg = sample_config_dict()
    cfg["corpus"] = {"source": "beir", "path": "../nowhere/scifact_beir"}
    path = _write(tmp_path / "public.yaml", cfg)
    (tmp_path / "suites.yaml").write_text("suites:\n  public: {config: public.yaml}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        check_suite(load_suites(tmp_path / "suites.yaml")[0])
    missing = tmp_path.parent / "nowhere" / "scifact_beir"
    # the line of the key as written in the file (found in its text, not from the loader)
    line = path.read_text(encoding="utf-8").splitlines().index("  path: ../nowhere/scifact_beir") + 1
    assert str(exc.value) == (f"suite public: data not found: corpus.path {missing} not found "
                              f"(set in {path}, line {line})")


def test_a_missing_system_log_is_a_configuration_error_naming_the_file_line_and_key(tmp_path):
    """A system's ``path`` that does not exist is refused like a missing ``corpus.path`` (a ConfigError, exit 2
    in the CLI), naming the key, the configuration file and its line. It used to pass the configuration and
    fail later as a data error (exit 1) naming only ``file .../cnd.jsonl, field 'file': file not found``."""
    corpus = Path(__file__).resolve().parents[2] / "data" / "sample" / "corpus"
    path = tmp_path / "config.yaml"
    path.write_text(f"corpus: {{source: documents_dir, path: {corpus}}}\n"  # line 1
                    "golden: {path: golden.jsonl}\n"                    # line 2
                    "systems:\n"                                         # line 3
                    "  - name: cand\n"                                   # line 4
                    "    kind: logged\n"                                 # line 5
                    "    path: cnd.jsonl\n", encoding="utf-8")           # line 6
    (tmp_path / "golden.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        check_suite(ad_hoc_suite(path, []))
    assert str(exc.value).endswith(f"data not found: systems[0].path (system 'cand') {tmp_path / 'cnd.jsonl'} "
                                   f"not found (set in {path}, line 6)")
