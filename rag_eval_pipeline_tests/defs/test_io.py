"""One IO manager per suite: its keys to its folder, the quick evaluation's to quick/, no other suite's key."""

import dagster as dg
import pytest

from rag_eval_pipeline.defs.io import ParquetIOManager


def _asset_value(manager: ParquetIOManager, key: list[str], value, metadata: dict | None = None):
    context = dg.build_output_context(asset_key=dg.AssetKey(key))
    manager.handle_output(context, value)
    return manager.load_input(dg.build_input_context(asset_key=dg.AssetKey(key), definition_metadata=metadata or {}))


def test_a_suites_tables_go_to_its_folder_and_the_quick_ones_to_quick(tmp_path):
    manager = ParquetIOManager(base_dir=str(tmp_path / "alpha_out"), suite="alpha")
    assert _asset_value(manager, ["alpha", "gate_verdict"], {"passed": False}) == {"passed": False}
    assert (tmp_path / "alpha_out" / "gate_verdict.json").exists()
    assert _asset_value(manager, ["alpha", "quick", "gate_verdict"], {"passed": True}) == {"passed": True}
    assert (tmp_path / "alpha_out" / "quick" / "gate_verdict.json").exists()
    with pytest.raises(dg.Failure, match="asset beta/gate_verdict is not in suite alpha"):
        manager.handle_output(dg.build_output_context(asset_key=dg.AssetKey(["beta", "gate_verdict"])), {})


def test_an_input_never_materialised_is_none_only_where_allowed(tmp_path):
    manager = ParquetIOManager(base_dir=str(tmp_path), suite="alpha")
    allowed = dg.build_input_context(asset_key=dg.AssetKey(["alpha", "metric_history"]),
                                     definition_metadata={"allow_missing": True})
    assert manager.load_input(allowed) is None
    with pytest.raises(FileNotFoundError, match="asset alpha/metric_history has not been materialised yet"):
        manager.load_input(dg.build_input_context(asset_key=dg.AssetKey(["alpha", "metric_history"])))
