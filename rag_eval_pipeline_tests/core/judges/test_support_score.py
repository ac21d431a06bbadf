"""The embedded judge's graded support (core/judges/evidence.py ``support_score``, rule_based.py
``passage_recall``), its answer-level mean and weakest claim (rule_verdict.py ``answer_support``): a
long answer with one unsupported sentence scores between the all-supported and the all-unsupported
answers by the mean, and as low as a short one by the weakest claim. Values worked out by hand."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.judges.base import AnswerJudgement, ClaimVerdict
from rag_eval_pipeline.core.judges.evidence import support_score
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge, context_sentences, passage_recall
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

CTX = ["The library opens on weekdays.", "The reading room holds 200 seats.", "Members borrow books for 21 days.",
       "The archive keeps old maps.", "Visitors park behind the building."]
FAITHFUL = " ".join(CTX)
UNRELATED = ["Dolphins sleep near coral reefs.", "Volcanoes erupt under pressure.", "Glaciers carve deep valleys.",
             "Penguins huddle during storms.", "Comets orbit distant stars."]


@pytest.fixture(scope="module")
def judge():
    return RuleBasedJudge()


def _mean(judgement: AnswerJudgement) -> float:
    scores = [c.support_score for c in judgement.claims]
    assert None not in scores
    return sum(scores) / len(scores)


def test_support_score_by_verdict():
    # SUPPORTED 0.5 + 0.5 r, NOT_MENTIONED 0.5 r, CONTRADICTED 0
    assert support_score("SUPPORTED", 0.6) == pytest.approx(0.8)
    assert support_score("SUPPORTED", 1.0) == pytest.approx(1.0)
    assert support_score("NOT_MENTIONED", 0.6) == pytest.approx(0.3)
    assert support_score("NOT_MENTIONED", 0.0) == 0.0
    assert support_score("CONTRADICTED", 0.9) == 0.0
    with pytest.raises(ValueError):
        support_score("JUDGE_ERROR", 1.0)


def test_passage_recall_is_the_best_passage_not_the_pool():
    # claim tokens: solar, panel, reduc, electr, bill (5). Chunk 1 states solar, panel (2/5);
    # chunk 2 states electr, bill, panel (3/5). Best passage 0.6; the pool of both would be 5/5.
    sents = context_sentences(["Solar panels are cheap.", "Electricity bills rose. Panels help."])
    assert passage_recall("Solar panels reduce electricity bills.", sents) == pytest.approx(0.6)


def test_one_unsupported_sentence_scores_between_all_and_none(judge):
    # 5 verbatim sentences: 5 SUPPORTED claims with lexical recall 1 -> 1.0 each, mean 1.0.
    allsup = judge.judge("", FAITHFUL, CTX)
    assert [c.verdict for c in allsup.claims] == ["SUPPORTED"] * 5
    assert _mean(allsup) == pytest.approx(1.0)
    # the last sentence replaced by one sharing no word with any chunk: NOT_MENTIONED, recall 0 -> 0;
    # mean 4/5 = 0.8
    one_bad = judge.judge("", " ".join(CTX[:4] + UNRELATED[:1]), CTX)
    assert [c.verdict for c in one_bad.claims] == ["SUPPORTED"] * 4 + ["NOT_MENTIONED"]
    assert _mean(one_bad) == pytest.approx(0.8)
    # five unrelated sentences: every claim NOT_MENTIONED with recall 0 -> mean 0.0
    none = judge.judge("", " ".join(UNRELATED), CTX)
    assert [c.verdict for c in none.claims] == ["NOT_MENTIONED"] * 5
    assert _mean(none) == pytest.approx(0.0)


def test_an_added_detail_costs_less_than_an_unrelated_claim(judge):
    # "The archive keeps maps of Lisbon.": tokens archiv, keep, map, lisbon; its chunk states 3 of 4;
    # "Lisbon" is a name the chunk lacks -> NOT_MENTIONED, 0.5 x 3/4 = 0.375; mean (4 + 0.375) / 5
    answer = " ".join(CTX[:3] + ["The archive keeps maps of Lisbon."] + CTX[4:])
    r = judge.judge("", answer, CTX)
    assert [c.verdict for c in r.claims] == ["SUPPORTED"] * 3 + ["NOT_MENTIONED", "SUPPORTED"]
    assert r.claims[3].support_score == pytest.approx(0.375)
    assert _mean(r) == pytest.approx(4.375 / 5)


class _NoScoreJudge:
    """A judge that gives verdicts without a support score (like a model judge)."""

    name, model, prompt_sha256 = "fake", "fake-1", "0" * 64

    def judge(self, question, answer, contexts):
        return AnswerJudgement("judged", [ClaimVerdict("c1", answer, "SUPPORTED", contexts[0], True, "ok")], "YES")


def _runs():
    snapshot = pl.DataFrame({"chunk_id": [f"d#{i}" for i in range(len(CTX))], "text": CTX})
    runs = pl.DataFrame([{"system": "s", "question_id": "q1", "decision": "answer", "answer": FAITHFUL,
                          "retrieved": [{"chunk_id": f"d#{i}", "score": 1.0, "rank": i + 1} for i in range(len(CTX))]}],
                        schema={"system": pl.Utf8, "question_id": pl.Utf8, "decision": pl.Utf8, "answer": pl.Utf8,
                                "retrieved": pl.List(RETRIEVED_HIT)})
    return runs, snapshot


def test_judge_runs_stores_the_score(judge):
    runs, snapshot = _runs()
    labels, _ = judge_runs(runs, snapshot, judge)
    assert labels["support_score"].to_list() == pytest.approx([1.0] * 5)
    # a judge that gives no score: null, never a made-up number
    labels, _ = judge_runs(runs, snapshot, _NoScoreJudge())
    assert labels["support_score"].to_list() == [None]
    # a SUPPORTED verdict whose quote is not in the context is downgraded: NOT_MENTIONED, at most 0.5
    class _BadQuote(_NoScoreJudge):
        def judge(self, question, answer, contexts):
            return AnswerJudgement("judged", [ClaimVerdict("c1", answer, "SUPPORTED", "not there", True, "ok",
                                                           support_score=0.9)], "YES")
    labels, _ = judge_runs(runs, snapshot, _BadQuote())
    assert labels["verdict"].to_list() == ["NOT_MENTIONED"]
    assert labels["support_score"].to_list() == [0.5]


def test_answer_support_is_the_mean_of_the_weakest_claims():
    from rag_eval_pipeline.core.judges.rule_verdict import WEAKEST_CLAIMS, answer_support

    assert WEAKEST_CLAIMS == 2
    # the two lowest of (0.9, 0.25, 0.7) are 0.25 and 0.7: mean 0.475; with k = 1 the minimum 0.25
    assert answer_support([0.9, 0.25, 0.7]) == pytest.approx(0.475)
    assert answer_support([0.9, 0.25, 0.7], k=1) == pytest.approx(0.25)
    # fewer claims than k: the mean of all; a claim without a score is skipped; nothing scored -> None
    assert answer_support([None, 0.6]) == pytest.approx(0.6)
    assert answer_support([]) is None
    assert answer_support([None]) is None
    assert answer_support([0.0, 1.0, 1.0, 1.0], k=1) == 0.0  # a CONTRADICTED claim sinks the answer
    with pytest.raises(ValueError, match="k must be"):
        answer_support([0.5], k=0)


def test_one_unsupported_claim_weighs_the_same_in_a_long_and_a_short_answer(judge):
    from rag_eval_pipeline.core.judges.rule_verdict import answer_support

    # the same unrelated sentence (NOT_MENTIONED, recall 0 -> 0.0) beside 1 or 4 verbatim sentences
    # (SUPPORTED, 1.0 each): the mean is 1/2 = 0.5 in the short answer and 4/5 = 0.8 in the long one
    # (the long answer looks more faithful); the two weakest claims are (0.0, 1.0) in both: 0.5
    short = judge.judge("", " ".join(CTX[:1] + UNRELATED[:1]), CTX)
    long = judge.judge("", " ".join(CTX[:4] + UNRELATED[:1]), CTX)
    assert _mean(short) == pytest.approx(0.5) and _mean(long) == pytest.approx(0.8)
    assert answer_support(c.support_score for c in short.claims) == pytest.approx(0.5)
    assert answer_support(c.support_score for c in long.claims) == pytest.approx(0.5)
    # the added detail (0.375, worked above) and one 1.0 are the two weakest: (0.375 + 1) / 2
    answer = " ".join(CTX[:3] + ["The archive keeps maps of Lisbon."] + CTX[4:])
    assert answer_support(c.support_score for c in judge.judge("", answer, CTX).claims) == pytest.approx(0.6875)
