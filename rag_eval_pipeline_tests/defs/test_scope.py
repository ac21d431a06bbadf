"""What a suite's definitions are named: keys, groups, op names and resource keys, decided by the scope."""

import dagster as dg
import pytest

from rag_eval_pipeline.defs.scope import SuiteScope


def test_a_suite_scope_names_keys_groups_ops_and_resources():
    full, quick = SuiteScope("sample"), SuiteScope("sample", quick=True)
    assert full.key("metric_summary") == dg.AssetKey(["sample", "metric_summary"])
    assert quick.key("metric_summary") == dg.AssetKey(["sample", "quick", "metric_summary"])
    assert quick.full_key("metric_history") == dg.AssetKey(["sample", "metric_history"])
    assert (full.group("metrics"), quick.group("metrics")) == ("sample", "sample_quick")
    assert (full.op("judging"), quick.op("judging")) == ("sample__judging", "sample__quick__judging")
    # the quick evaluation uses its suite's resources: same configuration, folder, judge
    assert full.needs("settings", "judge") == quick.needs("settings", "judge") == {"sample__settings", "sample__judge"}
    assert full.io_manager_key == "sample__io_manager"


def test_the_unprefixed_scope_keeps_plain_names():
    scope = SuiteScope()
    assert scope.key("golden_set") == dg.AssetKey(["golden_set"])
    assert scope.group("golden") == "golden" and scope.op("judging") == "judging"
    assert scope.needs("settings", "store", "io_manager", "judge") == {"settings", "store", "io_manager", "judge"}
    with pytest.raises(ValueError, match="unknown resource kind 'systems'"):
        scope.resource_key("systems")


def test_a_quick_description_says_first_that_it_never_writes_the_full_evaluation():
    quick = SuiteScope("sample", quick=True, quick_size=24)
    text = quick.describe("One metric for one system.")
    assert text.startswith("Quick evaluation: a fixed stratified subset of 24 golden questions.")
    assert text.endswith("One metric for one system.") and SuiteScope("sample").describe("x") == "x"
