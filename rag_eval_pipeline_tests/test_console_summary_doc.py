"""What ``rag-eval run`` prints as its summary is what the manual says: the headline metrics over all questions,
one line per system and headline metric; the rest is in metric_summary.parquet (README, docs/gates-and-reports.md)."""

import re
from pathlib import Path

import polars as pl

from rag_eval_pipeline.cli.run_output import format_summary
from rag_eval_pipeline.core.metrics.names import HEADLINE_METRICS, metric_label

ROOT = Path(__file__).resolve().parents[1]


def _row(metric, k, value, num, den, split="all", segment="all"):
    return {"system": "s", "metric": metric, "k": k, "split": split, "segment": segment, "level": None,
            "value": value, "numerator": num, "denominator": den, "n": den, "ci_low": None, "ci_high": None,
            "ci_method": None, "judge_errors": 0}


def test_the_summary_prints_headline_metrics_over_all_questions_only():
    summary = pl.DataFrame([
        _row("recall", 5, 0.75, 3, 4),              # headline: printed, 3/4 = 0.7500
        _row("recall", 20, 1.0, 4, 4),              # recall_20: not a headline metric
        _row("recall", 5, 0.5, 1, 2, split="test"),  # the test split: not printed
        _row("recall", 5, 0.0, 0, 1, segment="es"),  # a segment: not printed
    ])
    lines = format_summary(summary).splitlines()
    assert len(lines) == 2 and re.match(r"s\s+recall_5\s+0\.7500\s+3/4\s+4\s", lines[1]), lines


def test_the_manual_lists_exactly_the_printed_metrics():
    page = (ROOT / "docs" / "gates-and-reports.md").read_text(encoding="utf-8")
    section = page.split("### Headline metrics on the console", 1)[1].split("###", 1)[0]
    listed = section.split("in this order:", 1)[1].split("(`HEADLINE_METRICS`", 1)[0]
    names = [n.strip() for n in re.sub(r"\s+", " ", listed).split(",")]
    assert names == [metric_label(m, k) for m, k in HEADLINE_METRICS]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "the headline metrics only" in readme and "metric_summary.parquet" in readme
    assert "one line per system and metric with value" not in readme  # the old, wider promise
