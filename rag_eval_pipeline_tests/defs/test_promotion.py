"""The gate verdict is computed once per run, read by the report, the regression list and promotion; a
promoted candidate compared with its own copy says so instead of passing vacuously."""

import json

import dagster as dg
import polars as pl
import pytest

from rag_eval_pipeline.core import gates as core_gates
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources, defs
from rag_eval_pipeline.defs import promotion as promotion_defs
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR


def _materialize(out):
    return dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(SAMPLE_DIR / "config.yaml"), str(out)),
                          raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    """The sample materialised twice into one output folder, counting gate computations."""
    out = tmp_path_factory.mktemp("gate_out")
    calls = []
    real = core_gates.compute_gate_verdict

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(core_gates, "compute_gate_verdict", counting)  # promotion imports it when the step runs
        first = _materialize(out)
        first_gates = pl.read_parquet(out / "gate_results.parquet")
        first_manifest = json.loads((out / "baseline" / "manifest.json").read_text())
        first_summary = pl.read_parquet(out / "metric_summary.parquet")
        first_qm = pl.read_parquet(out / "question_metrics.parquet")
        calls_first = len(calls)
        second = _materialize(out)
    return {"first": first, "second": second, "first_gates": first_gates, "first_manifest": first_manifest,
            "first_summary": first_summary, "first_qm": first_qm,
            "second_gates": pl.read_parquet(out / "gate_results.parquet"),
            "second_manifest": json.loads((out / "baseline" / "manifest.json").read_text()),
            "calls_first": calls_first, "calls": len(calls), "out": out}


def test_the_verdict_is_computed_once_per_run(two_runs):
    assert two_runs["first"].success and two_runs["second"].success
    assert two_runs["calls_first"] == 1 and two_runs["calls"] == 2


def test_report_regression_list_and_promotion_read_the_one_verdict():
    graph = defs.resolve_asset_graph()

    def parents(key):  # the sample suite's assets: keys sample/<asset>
        return {k.path[-1] for k in graph.get(dg.AssetKey(["sample", key])).parent_keys}

    for reader in ("regression_cases", "evaluation_report", "gate_verdict"):
        assert "gate_results" in parents(reader), reader
    assert "gate_verdict" in parents("promotion")
    # the blocking gate check guards promotion only: the report and the regression list are not below it
    assert "gate_verdict" not in parents("evaluation_report") | parents("regression_cases")
    spec = graph.get_check_spec(dg.AssetCheckKey(dg.AssetKey(["sample", "gate_verdict"]),
                                                 "no_regression_against_baseline"))
    assert spec.blocking


def test_the_sample_compares_different_systems(two_runs):
    gates = two_runs["first_gates"]
    assert set(gates["system"]) == {"bm25_k10", "team_rag"}
    # first run: candidates against the configured baseline bm25_k5 of the same run
    summary = two_runs["first_summary"].filter((pl.col("split") == "test") & (pl.col("segment") == "all"))

    def value(system, metric, k):
        row = summary.filter((pl.col("system") == system) & (pl.col("metric") == metric)
                             & (pl.col("k").is_null() if k is None else pl.col("k") == k))
        return row["value"][0]

    qm = two_runs["first_qm"].filter(pl.col("split") == "test")

    def per_question(system, metric, k, level):
        rows = qm.filter((pl.col("system") == system) & (pl.col("metric") == metric) & pl.col("value").is_not_null()
                         & (pl.col("k").is_null() if k is None else pl.col("k") == k)
                         & (pl.col("level").is_null() if level is None else pl.col("level") == level))
        return dict(zip(rows["question_id"], rows["value"], strict=True))

    for r in gates.iter_rows(named=True):
        # the headline figures: each side's mean over its own evaluable questions (the summary's values)
        assert r["baseline_all"] == pytest.approx(value("bm25_k5", r["metric"], r["k"]))
        assert r["candidate_all"] == pytest.approx(value(r["system"], r["metric"], r["k"]))
        # the gate's figures: both means over the questions both systems have a value for, worked out here
        # with plain Python from question_metrics
        cand, base = (per_question(s, r["metric"], r["k"], r["level"]) for s in (r["system"], "bm25_k5"))
        shared = sorted(set(cand) & set(base))
        assert r["n"] == len(shared) and r["n_baseline"] == len(base)
        assert r["candidate"] == pytest.approx(sum(cand[q] for q in shared) / len(shared))
        assert r["baseline"] == pytest.approx(sum(base[q] for q in shared) / len(shared))
        assert r["difference"] == pytest.approx(sum(cand[q] - base[q] for q in shared) / len(shared))
        assert r["ci_low"] - 1e-12 <= r["difference"] <= r["ci_high"] + 1e-12
    team = gates.filter(pl.col("system") == "team_rag")
    assert (team["difference"].abs() > 0.05).all() and set(team["status"]) == {"pass"}


def test_after_promotion_the_promoted_candidate_is_unchanged_not_a_vacuous_pass(two_runs):
    gates = two_runs["second_gates"]
    promoted = gates.filter(pl.col("system") == "bm25_k10")
    assert promoted.height == 5 and set(promoted["status"]) == {"unchanged_since_promotion"}
    assert promoted["passed"].all()
    assert all("is the promoted baseline itself" in r for r in promoted["reason"])
    assert (promoted["difference"] == 0).all()
    # team_rag is now compared with the promoted bm25_k10 (its first-run values), a real comparison
    # (headline means over each side's own questions: the promoted tables are bm25_k10's first-run ones)
    first = two_runs["first_gates"].filter(pl.col("system") == "bm25_k10").select("metric", "k", "candidate_all")
    team = gates.filter(pl.col("system") == "team_rag").join(first, on=["metric", "k"], suffix="_first_run",
                                                             nulls_equal=True)
    assert team.height == 5 and set(team["status"]) == {"pass"}
    assert team["baseline_all"].to_list() == pytest.approx(team["candidate_all_first_run"].to_list())
    # the stored baseline is kept as promoted, not rewritten by a run that changed nothing
    assert two_runs["second_manifest"] == two_runs["first_manifest"]
    promo = two_runs["second"].asset_materializations_for_node("promotion")[0].metadata
    assert promo["unchanged_since_promotion"].value is True
    # the report's decision said "kept" from the same manifest comparison the promotion step made
    decision = json.loads((two_runs["out"] / "decision.json").read_text(encoding="utf-8"))
    assert decision["promotion_action"] == "keep"


def test_a_changed_configuration_under_the_same_name_is_compared_for_real(two_runs):
    """Only the same system, configuration and versions is "unchanged"; a new prompt version is a real candidate,
    and a promoted baseline on another golden version is a version error, never compared."""
    from rag_eval_pipeline.core.config import load_config

    out = two_runs["out"]
    tables = {name: pl.read_parquet(out / f"{name}.parquet") for name in
              ("metric_summary", "question_metrics", "rag_runs", "golden_set", "corpus_snapshot", "judge_variance")}
    stored = promotion_defs.load_baseline(promotion_defs.TableFolder(out))
    cfg = load_config(SAMPLE_DIR / "config.yaml", environ={})

    def verdict(**manifest_changes):
        promoted = core_gates.PromotedBaseline({**stored.manifest, **manifest_changes}, stored.metric_summary,
                                               stored.question_metrics)
        return core_gates.compute_gate_verdict(cfg, *tables.values(), promoted, n_permutations=200)

    assert verdict().unchanged == ["bm25_k10"]
    changed = verdict(prompt_version="v2")
    assert changed.unchanged == [] and {r.status for r in changed.results if r.system == "bm25_k10"} == {"pass"}
    other = verdict(golden_version="0" * 16)
    assert other.results == [] and not other.passed
    assert all("golden_version" in e and "0" * 16 in e for e in other.errors) and len(other.errors) == 2
