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
        calls_first = len(calls)
        second = _materialize(out)
    return {"first": first, "second": second, "first_gates": first_gates, "first_manifest": first_manifest,
            "first_summary": first_summary, "second_gates": pl.read_parquet(out / "gate_results.parquet"),
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

    for r in gates.iter_rows(named=True):
        assert r["baseline"] == pytest.approx(value("bm25_k5", r["metric"], r["k"]))
        assert r["candidate"] == pytest.approx(value(r["system"], r["metric"], r["k"]))
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
    first = two_runs["first_gates"].filter(pl.col("system") == "bm25_k10").select("metric", "k", "candidate")
    team = gates.filter(pl.col("system") == "team_rag").join(first, on=["metric", "k"], suffix="_first_run",
                                                             nulls_equal=True)
    assert team.height == 5 and set(team["status"]) == {"pass"}
    assert team["baseline"].to_list() == pytest.approx(team["candidate_first_run"].to_list())
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
