"""``judge.type: rule_based``: the embedded judge (``core/judges/rule_based.py``)."""

from __future__ import annotations

from rag_eval_pipeline.core.config_sections import JudgeConfig
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.judges.registry import JudgeType, register


def build(config: JudgeConfig, api_key: str | None) -> Judge:
    """The rule-based judge with its fitted parameters."""
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

    return RuleBasedJudge()


JUDGE = register(JudgeType(
    name="rule_based", build=build, order=10,
    doc="The embedded judge: deterministic and offline. It splits an answer into claims and decides each "
        "SUPPORTED / CONTRADICTED / NOT_MENTIONED from lexical, numeric, negation and semantic evidence in the "
        "retrieved text, with parameters fitted on public data; every SUPPORTED carries a quote found by code. "
        "The default.",
))
