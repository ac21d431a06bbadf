"""core/judges/many.py: many answers judged at once by any judge; an exception becomes that item's error."""

import pytest

from rag_eval_pipeline.core.judges.many import judge_many


def test_judge_many_catches_exceptions_of_any_judge():
    class Boom:
        name, model, prompt_sha256 = "boom", "b", "0" * 64

        def judge(self, q, a, ctx):
            if a == "bad":
                raise RuntimeError("exploded with Bearer sk-leakyleakyleaky")
            from rag_eval_pipeline.core.judges.base import AnswerJudgement
            return AnswerJudgement("no_claims")

    res = judge_many(Boom(), [("q", "ok", ["c"]), ("q", "bad", ["c"])], concurrency=2)
    assert res[0].status == "no_claims" and res[1].status == "judge_error"
    assert res[1].claims[0].error.startswith("RuntimeError: exploded") and "leaky" not in res[1].claims[0].error
    with pytest.raises(ValueError):
        judge_many(Boom(), [], concurrency=0)
