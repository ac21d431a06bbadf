"""A judge calibrated on a handful of labels is not calibrated: ``calibration.min_labels`` (default 30) and
κ's 95% interval beside κ (Cohen 1960's large-sample standard error)."""

import json

import polars as pl
import pytest

from rag_eval_pipeline.core.metrics.agreement import kappa_interval
from rag_eval_pipeline.core.metrics.calibration_status import calibration_status
from rag_eval_pipeline.core.tables import SCHEMAS

# The new-user trial's five claim labels: rows = people, columns = judge, labels SUPPORTED / PARTIAL /
# NOT_SUPPORTED. p_o = (3 + 0 + 1) / 5 = 0.8; row marginals 3/5, 1/5, 1/5; column marginals 3/5, 0, 2/5;
# p_e = 0.36 + 0 + 0.08 = 0.44; κ = (0.8 - 0.44) / 0.56 = 0.642857.
FIVE = [[3, 0, 0], [0, 0, 1], [0, 0, 1]]


def _row(confusion, kappa, n, level="claim"):
    row = {"level": level, "judge": "j", "judge_model": "m", "prompt_sha256": "p", "stale": False, "missing": False,
           "kappa": kappa, "n": n, "labels": json.dumps(["SUPPORTED", "PARTIAL", "NOT_SUPPORTED"][:len(confusion)]),
           "confusion": json.dumps(confusion)}
    return pl.DataFrame([row], schema=SCHEMAS["judge_calibration"])


def test_kappa_interval_by_hand():
    # σ = sqrt(p_o (1 - p_o) / (n (1 - p_e)²)) = sqrt(0.8·0.2 / (5·0.56²)) = sqrt(0.16 / 1.568) = 0.319438;
    # 1.959964 σ = 0.626088 → [0.642857 - 0.626088, 0.642857 + 0.626088] = [0.016769, 1.268945 → 1]
    low, high = kappa_interval(FIVE)
    assert low == pytest.approx(0.016769, abs=1e-5) and high == 1.0
    # the sample's 34 response labels [[20, 3], [3, 8]]: p_o = 28/34, p_e = 650/1156, κ = 302/506 = 0.596838;
    # σ = sqrt((28/34)(6/34) / (34 (506/1156)²)) = 0.149365; 1.959964 σ = 0.292750 → [0.304088, 0.889588]
    low, high = kappa_interval([[20, 3], [3, 8]])
    assert (low, high) == (pytest.approx(0.304088, abs=1e-5), pytest.approx(0.889588, abs=1e-5))
    assert kappa_interval([[0, 0], [0, 0]]) == (None, None)  # n = 0: not evaluable
    assert kappa_interval([[5, 0], [0, 0]]) == (None, None)  # p_e = 1: κ undefined


def test_five_labels_are_not_a_calibration():
    table = _row(FIVE, 0.642857, 5)
    status = calibration_status(table, configured=True, kappa_floor=0.4, gated_metrics=["faithfulness"])
    # κ 0.643 clears the floor 0.4, but n 5 < the default 30: uncalibrated, and the faithfulness gate blocks
    assert (status.passed, status.state, status.blocks) == (False, "too_few_labels", True)
    assert status.why_not == "not enough labels (n 5 < 30)"
    assert status.line().startswith("too few labels: not enough labels (n 5 < 30); κ 0.643 [95% CI 0.017, 1.000]")
    assert "blocks promotion (gates on faithfulness)" in status.line()
    # with 30 or more items compared it passes; the configured minimum is what counts
    assert calibration_status(table, configured=True, kappa_floor=0.4, gated_metrics=["faithfulness"],
                              min_labels=5).passed
    assert not calibration_status(_row(FIVE, 0.642857, 29), configured=True, kappa_floor=0.4,
                                  gated_metrics=[]).passed
    assert calibration_status(_row(FIVE, 0.642857, 30), configured=True, kappa_floor=0.4, gated_metrics=[]).passed


def test_min_labels_is_configured_and_checked(tmp_path):
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError

    (tmp_path / "docs").mkdir()
    base = ("corpus: {source: documents_dir, path: docs}\ngolden: {path: golden.jsonl}\n"
            "systems: [{name: s, kind: reference}]\n")
    (tmp_path / "a.yaml").write_text(base + "calibration: {human_labels: h.jsonl}\n", encoding="utf-8")
    assert load_config(tmp_path / "a.yaml").calibration.min_labels == 30
    (tmp_path / "b.yaml").write_text(base + "calibration: {human_labels: h.jsonl, min_labels: 0}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="min_labels"):
        load_config(tmp_path / "b.yaml")
