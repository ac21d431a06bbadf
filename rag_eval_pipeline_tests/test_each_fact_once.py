"""Each fact declared once, and a test per place where two declarations used to disagree.

Before the metric registry, "which metrics are judge-based" was two prefix lists (calibration's four
prefixes decided whether the calibration check blocks; the report's nine drew the judge-error columns):
they disagreed on five of the ten judge metrics, so a gate on ``answer_correctness`` left the calibration
check non-blocking. The judge transport checked its own bounds after the configuration had checked
others (``judge.timeout_s: 5000`` loaded, then failed inside judging). Labels were formatted in seven
places, ``REGRESSION_COLUMNS`` repeated the declared schema, ``trec_eval.py`` re-listed the uncut measures.
"""

from __future__ import annotations

import ast
import re

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli.run_output import format_summary
from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.transport import transport_settings
from rag_eval_pipeline.core.metrics import names
from rag_eval_pipeline.core.metrics.calibration import judge_based_metrics
from rag_eval_pipeline.core.report.bands import is_judge_based as report_is_judge_based
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

#: The five judge metrics the two old lists disagreed on (calibration's prefixes missed them).
FORMERLY_MISSED = ("answer_correctness", "answer_relevancy", "contradicted_claim_rate", "quote_downgrade_rate",
                   "judge_error_rate")


def gated(tmp_path, metric: str, **limits):
    cfg = sample_config_dict()
    cfg["gates"]["thresholds"] = [{"metric": metric, **(limits or {"max_abs_drop": 0.05})}]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
    return path


def test_the_judge_based_metrics_are_the_twenty_judge_metrics():
    # faithfulness (5) and model-judged quality (5); citation support (ALCE recall and precision, the three TREC
    # support figures: 5; validity and uncited claims need no judge) and nugget recall (5)
    citation_support = set(names.CITATION_METRICS) - set(names.CITATION_VALIDITY_METRICS)
    assert citation_support == {"citation_recall", "citation_precision", "weighted_citation_precision",
                                "weighted_citation_recall", "weighted_citation_f1"}
    assert names.JUDGE_BASED_METRICS == (set(names.FAITHFULNESS_METRICS) | set(names.QUALITY_METRICS)
                                         | citation_support | set(names.NUGGET_METRICS))
    assert len(names.JUDGE_BASED_METRICS) == 20 and set(FORMERLY_MISSED) <= names.JUDGE_BASED_METRICS
    assert not {"answer_token_f1", "reference_token_recall", "recall", "coverage"} & names.JUDGE_BASED_METRICS


@pytest.mark.parametrize("metric", FORMERLY_MISSED)
def test_a_gate_on_a_formerly_missed_judge_metric_makes_calibration_blocking(tmp_path, metric):
    from rag_eval_pipeline.defs.factory import calibration_blocks

    cfg = load_config(gated(tmp_path, metric), environ={})
    assert judge_based_metrics(t.metric for t in cfg.thresholds) == [metric]
    assert calibration_blocks(cfg)  # the code location declares judge_calibrated_above_floor blocking
    assert report_is_judge_based(metric)  # and the report shows its judge errors beside it
    summary = pl.DataFrame({"system": ["s"], "split": ["all"], "segment": ["all"], "metric": [metric], "k": [None],
                            "value": [0.5], "numerator": [1.0], "denominator": [2.0], "n": [2], "ci_low": [None],
                            "ci_high": [None], "ci_method": ["none"], "judge_errors": [3]},
                           schema_overrides={"k": pl.Int32, "ci_low": pl.Float64, "ci_high": pl.Float64})
    line = format_summary(summary, metrics=((metric, None),)).splitlines()[1]
    assert line.split()[:2] == ["s", metric] and " 3 " in line  # the CLI's judge-error column


def test_a_gate_on_answer_correctness_makes_the_code_locations_check_blocking(tmp_path):
    from rag_eval_pipeline.core.suites import ad_hoc_suite
    from rag_eval_pipeline.defs.judging import JudgeResource
    from rag_eval_pipeline.defs.location import build_definitions, check_suite

    suite = ad_hoc_suite(str(gated(tmp_path, "answer_correctness")), [])
    defs = build_definitions([check_suite(suite)], output_dir=str(tmp_path / "out"), judge=JudgeResource())
    graph = defs.resolve_asset_graph()
    blocking = {key.name: graph.get_check_spec(key).blocking for key in graph.asset_check_keys
                if key.asset_key.path[-1] == "judge_calibration"}
    assert blocking == {"judge_calibrated_above_floor": True}


def test_the_gate_direction_defaults_to_the_metrics_own():
    assert names.higher_is_better("recall_5") and not names.higher_is_better("false_abstention_rate")
    assert names.LOWER_IS_BETTER >= {"run_error_rate", "judge_error_rate", "answer_without_evidence_rate"}
    # the sample's thresholds say higher_is_better: false where the registry does too
    cfg = load_config(REPO_ROOT / "data" / "sample" / "config.yaml", environ={})
    assert [(t.metric, t.higher_is_better) for t in cfg.thresholds] == [
        ("recall", True), ("claim_evidence_availability", True), ("ndcg_cut", True),
        ("false_abstention_rate", False), ("answer_without_evidence_rate", False)]


def test_a_gate_without_a_direction_takes_the_registrys(tmp_path):
    cfg = load_config(gated(tmp_path, "run_error_rate", max_abs_drop=0.01), environ={})
    assert cfg.thresholds[0].higher_is_better is False
    cfg = load_config(gated(tmp_path, "run_error_rate", max_abs_drop=0.01, higher_is_better=True), environ={})
    assert cfg.thresholds[0].higher_is_better is True  # as written wins


def test_a_threshold_resolves_its_name_and_direction_once_however_it_is_built():
    # built in code (not through load_config): the label and the alias resolve as in a file, and the direction
    # is the resolved metric's (recall: higher is better; run_error_rate: lower), unless written
    from rag_eval_pipeline.core.config_sections import Threshold

    t = Threshold(metric="recall_5", max_abs_drop=0.1)
    assert (t.metric, t.k, t.higher_is_better) == ("recall", 5, True)
    t = Threshold(metric="mrr", max_abs_drop=0.1)
    assert (t.metric, t.k, t.higher_is_better) == ("recip_rank", None, True)
    assert Threshold(metric="run_error_rate", max_abs_drop=0.01).higher_is_better is False
    assert Threshold(metric="run_error_rate", max_abs_drop=0.01, higher_is_better=True).higher_is_better is True


def test_a_cut_off_on_a_metric_without_one_is_refused(tmp_path):
    with pytest.raises(ConfigError, match=r"gates.thresholds\[0\] \(coverage, k=5\): coverage takes no cut-off"):
        load_config(gated(tmp_path, "coverage", k=5, max_abs_drop=0.1), environ={})


# ---------------------------------------------------------------------------- judge transport bounds


def test_judge_timeout_beyond_the_transports_bound_is_refused_at_load_not_in_judging(tmp_path):
    cfg = sample_config_dict()
    cfg["judge"]["timeout_s"] = 5000
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    lines = path.read_text(encoding="utf-8").splitlines()
    line = next(i for i, text in enumerate(lines, 1) if "timeout_s: 5000" in text)
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}, line {line}: judge.timeout_s must be at most "
                                          r"3600.0 \(an hour per call\), got 5000$"):
        load_config(path, environ={})
    with pytest.raises(ValueError, match=r"timeout_s must be at most 3600.0"):  # the transport: the same bound
        transport_settings(timeout_s=5000, environ={})


def test_what_the_configuration_accepts_the_transport_accepts(tmp_path):
    # backoff_s 200 was accepted by the configuration (<= 300) and refused by the transport (<= 60)
    cfg = sample_config_dict()
    cfg["judge"].update(timeout_s=3600, max_retries=20, backoff_s=200)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    j = load_config(path, environ={}).judge
    st = transport_settings(j.timeout_s, j.max_retries, j.backoff_s, environ={})
    assert (st.timeout_s, st.max_retries, st.backoff_s) == (3600.0, 20, 200.0)
    with pytest.raises(ConfigError, match="RAG_EVAL_JUDGE_BACKOFF_S must be a number in"):
        transport_settings(environ={"RAG_EVAL_JUDGE_BACKOFF_S": "301"})


# ---------------------------------------------------------------------------- one label, one schema, one list


def test_one_label_formatter():
    assert names.metric_label("recall", 5) == "recall_5" and names.metric_label("map", None) == "map"
    from rag_eval_pipeline.cli import run_output
    from rag_eval_pipeline.core.report import bands

    assert run_output.metric_label is names.metric_label and bands.metric_label is names.metric_label
    inline = re.compile(r"""(f["']_\{(r|row|t)\[['"]k['"]\]\}|['"]_['"] \+ str\()""")
    offenders = [str(p.relative_to(REPO_ROOT)) for p in (REPO_ROOT / "rag_eval_pipeline").rglob("*.py")
                 if inline.search(p.read_text(encoding="utf-8"))]
    assert offenders == []


def test_regression_columns_come_from_the_declared_schema():
    from rag_eval_pipeline.core.regressions import REGRESSION_COLUMNS

    # written out: the columns a case keeps across runs (current_value and status are recomputed every run)
    assert list(REGRESSION_COLUMNS) == ["system", "metric", "k", "question_id", "value_when_found", "first_seen_run",
                                        "first_seen_at"]
    assert all(REGRESSION_COLUMNS[c] == tables.SCHEMAS["regression_cases"][c] for c in REGRESSION_COLUMNS)


def test_facts_of_the_output_folder_and_the_metric_lists_are_declared_once():
    from rag_eval_pipeline.cli import compare as cli_compare
    from rag_eval_pipeline.cli import run_output
    from rag_eval_pipeline.core import config_sections, corpus, storage
    from rag_eval_pipeline.core.metrics import calibration_mapping
    from rag_eval_pipeline.core.report import bands, build, ci, compare_sides
    from rag_eval_pipeline.core.report.questions import WORST_N
    from rag_eval_pipeline.defs import promotion
    from rag_eval_pipeline.defs import report as report_defs

    assert compare_sides.ARCHIVE is storage.RUN_ARCHIVE is report_defs.RUN_ARCHIVE
    assert promotion.BASELINE_DIR is storage.BASELINE_DIR
    assert bands.HEADLINE_METRICS is names.HEADLINE_METRICS is run_output.DEFAULT_METRICS
    key_labels = tuple(names.metric_label(m, k) for m, k in names.KEY_METRICS)
    assert cli_compare.PRINTED == key_labels == report_defs.TREND_METRICS
    assert set(names.KEY_METRICS) <= set(names.HEADLINE_METRICS)
    assert config_sections.CALIBRATION_LEVELS is calibration_mapping.LEVELS
    assert config_sections.CHUNKING_STRATEGIES is corpus.STRATEGIES
    import inspect

    assert inspect.signature(build.build_report).parameters["worst_n"].default == WORST_N
    assert inspect.signature(ci.summary_markdown).parameters["linked_per_system"].default == WORST_N


def test_trec_eval_py_does_not_relist_measure_names():
    tree = ast.parse((REPO_ROOT / "rag_eval_pipeline" / "trec_eval.py").read_text(encoding="utf-8"))
    measures = set(names.MEASURES)
    relisted = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Tuple) and len(node.elts) >= 3
                and all(isinstance(e, ast.Constant) and e.value in measures for e in node.elts)]
    assert relisted == []


def test_every_metric_is_defined_in_the_metrics_page():
    page = (REPO_ROOT / "docs" / "METRICS.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', page))
    assert sorted(m.name for m in names.METRICS if m.name.lower() not in anchors) == []
    for m in names.METRICS:
        assert m.definition and m.source, m.name


def test_the_registry_holds_exactly_the_names_the_metric_modules_write(tmp_path):
    """The sample's chain, rule-based judge: every per-question metric it writes is registered, and every
    default metric of a family the rule-based judge can compute is written (model-judged quality and
    latency need a model judge and a live system)."""
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
    from rag_eval_pipeline.core.judging import judge_runs
    from rag_eval_pipeline.core.pipeline import (
        build_citations,
        build_golden,
        build_nuggets,
        build_question_metrics,
        build_runs,
        build_snapshot,
    )

    cfg = load_config(REPO_ROOT / "data" / "sample" / "config.yaml", environ={})
    snapshot, version = build_snapshot(cfg)
    golden = build_golden(cfg, snapshot)
    runs = build_runs(cfg, snapshot, golden, version)
    judge = RuleBasedJudge(semantic=False)
    labels, judgements = judge_runs(runs, snapshot, judge)
    qm, _ = build_question_metrics(cfg, snapshot, golden, runs, labels, judgements,
                                   citations=build_citations(cfg, snapshot, golden, runs, judge),
                                   nugget_labels=build_nuggets(cfg, snapshot, golden, runs, judge))
    written = set(qm["metric"].unique().to_list())
    assert written <= {m.name for m in names.METRICS}
    assert written == set(names.PIPELINE_METRICS) - set(names.QUALITY_METRICS)
