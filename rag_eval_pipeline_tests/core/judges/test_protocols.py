"""The judge interface is declared: one required Protocol, one small Protocol per optional capability."""

import re

import polars as pl

from rag_eval_pipeline.core.answer_quality import supports_quality
from rag_eval_pipeline.core.judges.base import (
    AcceptsRepeat,
    AnswerJudgement,
    BindsRuns,
    ClaimVerdict,
    Concurrent,
    EstimatesCost,
    EstimatesSupportCost,
    Judge,
    JudgesSupport,
    QualityJudge,
    ReportsStats,
    ReverseQuestions,
    SizesBatches,
    accepts_repeat,
    judge_concurrency,
    judge_stats,
)
from rag_eval_pipeline.core.judges.human import HumanLabelJudge
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline_tests.conftest import REPO_ROOT

CAPABILITIES = (Judge, BindsRuns, ReportsStats, Concurrent, AcceptsRepeat, EstimatesCost, QualityJudge,
                ReverseQuestions, JudgesSupport, EstimatesSupportCost, SizesBatches)


def capabilities(judge) -> set[str]:
    return {c.__name__ for c in CAPABILITIES if isinstance(judge, c)}


def test_each_judge_declares_what_it_offers():
    assert capabilities(RuleBasedJudge()) == {"Judge", "JudgesSupport", "SizesBatches"}
    assert capabilities(HumanLabelJudge([], "0" * 64)) == {"Judge", "BindsRuns", "JudgesSupport"}
    model = OpenAICompatibleJudge("http://127.0.0.1:9/v1", "m", "sk-test")  # no call is made
    assert capabilities(model) == {"Judge", "ReportsStats", "Concurrent", "AcceptsRepeat", "EstimatesCost",
                                   "QualityJudge", "ReverseQuestions", "JudgesSupport", "EstimatesSupportCost"}
    assert supports_quality(model) and not supports_quality(RuleBasedJudge())
    assert judge_concurrency(model) == 4 and judge_concurrency(RuleBasedJudge()) == 1
    assert accepts_repeat(model) and not accepts_repeat(RuleBasedJudge())
    assert judge_stats(RuleBasedJudge()) == {"calls": 0}
    assert judge_stats(model)["calls"] == 0 and "errors" not in judge_stats(model)  # numbers only


class MinimalJudge:
    """A new judge: one class with the four required members and nothing else."""

    name, model, prompt_sha256 = "minimal", "minimal-v1", "a" * 64

    def __init__(self):
        self.kwargs = []

    def judge(self, question, answer, contexts, **kwargs):
        self.kwargs.append(kwargs)
        return AnswerJudgement("judged", [ClaimVerdict("c1", answer, "NOT_MENTIONED", None, False, "")])


class RepeatingJudge(MinimalJudge):
    accepts_repeat = True


def _runs():
    runs = pl.DataFrame({"system": ["s"], "question_id": ["q1"], "decision": ["answer"], "answer": ["It is red."],
                         "retrieved": [[{"chunk_id": "d#0", "score": 1.0, "rank": 1}]]})
    return runs, pl.DataFrame({"chunk_id": ["d#0"], "text": ["The box is blue."]})


def test_a_new_judge_is_one_class_and_its_capabilities_are_asked_by_protocol():
    runs, snapshot = _runs()
    plain, repeating = MinimalJudge(), RepeatingJudge()
    assert isinstance(plain, Judge) and capabilities(plain) == {"Judge"}
    labels, _ = judge_runs(runs, snapshot, plain, repeats=2)
    assert labels.height == 2 and plain.kwargs == [{}, {}]  # no repeat= for a judge that does not take it
    judge_runs(runs, snapshot, repeating, repeats=2)
    assert repeating.kwargs == [{}, {"repeat": 1}]


def test_call_sites_ask_protocols_not_hasattr():
    files = ["rag_eval_pipeline/core/judging.py", "rag_eval_pipeline/core/answer_quality.py",
             "rag_eval_pipeline/defs/judging.py", "rag_eval_pipeline/cli/estimate.py"]
    # hasattr on a judge, or getattr of anything but its name for a message
    pattern = re.compile(r"hasattr\(\s*(judge|j)\b|getattr\(\s*(judge|j)\s*,(?!\s*'name')")
    offenders = [(f, m.group(0)) for f in files for m in pattern.finditer((REPO_ROOT / f).read_text(encoding="utf-8"))]
    assert offenders == []
