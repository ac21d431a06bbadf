"""``judge.type: human``: imported hand labels used as the judge (``core/judges/human.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.config_sections import JudgeConfig
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.judges.registry import JudgeConfigError, JudgeType, judge_env, register, where
from rag_eval_pipeline.core.sections import key


@dataclass(frozen=True)
class HumanLabels:
    """The key of the human judge: its label file."""

    human_labels: Path | None = key(None, env="RAG_EVAL_HUMAN_LABELS", doc="the label file (CSV, JSONL or Parquet)")


def check(config: JudgeConfig, origin: str, source: str = "the configuration") -> None:
    """The human judge needs an existing label file."""
    labels = config.options.human_labels
    if labels is None:
        raise JudgeConfigError(f"judge type human needs {judge_env()['human_labels']} (path of the label file) "
                               f"or judge.human_labels in {source}")
    if not Path(labels).is_file():
        raise JudgeConfigError(f"judge type human: label file {labels} ({where(config, 'human_labels')}) not found")


def build(config: JudgeConfig, api_key: str | None) -> Judge:
    """The labels of the file as a judge (matched to answers through the runs)."""
    from rag_eval_pipeline.core.judges.human import HumanLabelJudge

    check(config, "judge type human")
    return HumanLabelJudge.from_file(config.options.human_labels)


JUDGE = register(JudgeType(
    name="human", section=HumanLabels, build=build, check=check, order=30,
    doc="People's claim labels imported from a CSV, JSONL or Parquet file, matched to the answers they label "
        "through the runs: the judge whose agreement the others are calibrated against, usable as the judge "
        "of a run.",
))
