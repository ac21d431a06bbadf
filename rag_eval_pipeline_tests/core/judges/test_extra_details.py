"""Extra details are not support, and the judge's batch and claim-vs-passages entry points
(core/judges/evidence.py, core/judges/rule_based.py). Expected verdicts worked by hand from the rule
in evidence.py's module docstring; parameters are given explicitly where the outcome depends on them."""

from __future__ import annotations

import polars as pl
import pytest

from rag_eval_pipeline.core.judges.base import JudgesInBatches
from rag_eval_pipeline.core.judges.evidence import extra_words, literal_counterpart
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge, tokens
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

# lexical 0.8 and a paraphrase path that any similarity passes: only the extra-detail rule can say no
LOOSE = {"support_lexical": 0.8, "lexical_floor": 0.3, "support_semantic": -1.0}


def _v(j):
    return [c.verdict for c in j.claims]


def test_the_issues_added_detail_is_not_supported():
    # claims: "El plazo es de 30 días naturales." (extra: naturales) and "El plazo se cuenta desde la
    # entrega." (extra: entrega); the sentence has no other word to be their counterpart
    j = RuleBasedJudge(params={**LOOSE, "word_counterpart": -1.0})
    got = j.judge("", "El plazo es de 30 días naturales desde la entrega.", ["El plazo es de 30 días."])
    assert _v(got) == ["NOT_MENTIONED", "NOT_MENTIONED"]
    assert all("extra detail" in c.justification for c in got.claims)
    # the same claims against a sentence that states them: supported
    full = j.judge("", "El plazo es de 30 días naturales desde la entrega.",
                   ["El plazo es de 30 días naturales desde la entrega del pedido."])
    assert _v(full) == ["SUPPORTED", "SUPPORTED"]


def test_english_added_qualifier_unit_and_name():
    j = RuleBasedJudge(params={**LOOSE, "word_counterpart": -1.0})
    ctx = ["The warranty lasts two years."]
    assert _v(j.judge("", "The warranty lasts two years in Europe.", ctx)) == ["NOT_MENTIONED"]   # a name
    assert _v(j.judge("", "The limited warranty lasts two years.", ctx)) == ["NOT_MENTIONED"]     # a qualifier
    assert _v(j.judge("", "The warranty lasts two years.", ctx)) == ["SUPPORTED"]


def test_a_unit_is_never_excused_by_a_similar_word():
    # "30 hours" vs "30 days": numbers agree, the unit differs; even a counterpart threshold every
    # cosine passes cannot excuse a unit
    j = RuleBasedJudge(params={**LOOSE, "word_counterpart": -1.0})
    assert _v(j.judge("", "Refunds take 30 hours.", ["Refunds take 30 days."])) == ["NOT_MENTIONED"]


def test_an_extra_word_with_a_counterpart_is_a_substitution():
    # "price" is missing from the sentence, which has "cost" the claim does not use; with a threshold
    # every cosine passes (-1) the word is excused, with one none passes (1.0 > any real cosine
    # between different words) it is not
    ctx = ["The cost of the dock is 49 euros."]
    claim = "The price of the dock is 49 euros."
    assert _v(RuleBasedJudge(params={**LOOSE, "word_counterpart": -1.0}).judge("", claim, ctx)) == ["SUPPORTED"]
    strict = RuleBasedJudge(params={**LOOSE, "support_semantic": -1.0, "word_counterpart": 1.0})
    assert _v(strict.judge("", claim, ctx)) == ["NOT_MENTIONED"]


def test_topic_words_of_the_passage_are_not_extra():
    # "altavoz" is not in the second sentence but in the chunk's first one: the topic, left implicit
    ctx = ["El altavoz A1 es resistente al agua. Su batería dura 12 horas."]
    j = RuleBasedJudge(params={**LOOSE, "word_counterpart": 1.0}, semantic=False)
    claim = "La batería del altavoz dura 12 horas."  # stems {bater, altavoz, dur, 12, hour}: 4/5 in sentence 2
    got = j.judge("", claim, ctx)
    assert _v(got) == ["SUPPORTED"] and got.claims[0].quote == "Su batería dura 12 horas."


def test_literal_counterparts_and_extra_words_by_hand():
    assert literal_counterpart("gratis", "gratuit")       # first four letters shared
    assert literal_counterpart("env", "envi")              # a short word, all but its last letter
    assert not literal_counterpart("poem", "not")
    claim, sentence = tokens("Ada escribió poemas largos", "spanish"), tokens("Ada escribió notas largas", "spanish")
    # stems: claim {ada, escrib, poem, larg}, sentence {ada, escrib, not, larg}: "poem" is the extra
    assert extra_words(claim, sentence) == (("poem",), 0)


def test_support_is_the_claim_vs_passages_decision():
    j = RuleBasedJudge(semantic=False)
    passages = ["El envío a Canarias tarda 5 días.", "Las devoluciones son gratuitas desde la península."]
    v = j.support("El envío a Canarias tarda 5 días.", passages)
    assert v.verdict == "SUPPORTED" and v.quote == "El envío a Canarias tarda 5 días." and v.quote_found
    assert j.support("El envío a Canarias tarda 7 días.", passages).verdict == "CONTRADICTED"
    assert j.support("El envío a Canarias es gratis.", []).verdict == "NOT_MENTIONED"


def test_judge_batch_equals_one_by_one():
    j = RuleBasedJudge(semantic=False)
    items = [("", "El envío tarda 5 días. Cuesta 3 euros.", ["El envío tarda 5 días y cuesta 3 euros."]),
             ("", "", ["x"]), ("", "Sí.", ["El envío tarda 5 días."]),
             ("", "The dock charges the A1.", [])]
    assert isinstance(j, JudgesInBatches)
    assert j.judge_batch(items) == [j.judge(*it) for it in items]


class _BatchSpy:
    name, model, prompt_sha256 = "spy", "spy-1", "0" * 64

    def __init__(self, fail_on: str | None = None):
        self.batches, self.singles, self.fail_on = [], 0, fail_on
        self.inner = RuleBasedJudge(semantic=False)

    def judge(self, question, answer, contexts):
        self.singles += 1
        if answer == self.fail_on:
            raise RuntimeError("boom")
        return self.inner.judge(question, answer, contexts)

    def judge_batch(self, items):
        self.batches.append(len(items))
        if any(a == self.fail_on for _, a, _ in items):
            raise RuntimeError("boom")
        return self.inner.judge_batch(items)


def _runs(answers):
    snapshot = pl.DataFrame({"chunk_id": ["d#0"], "text": ["El envío tarda 5 días."]})
    runs = pl.DataFrame([{"system": "s", "question_id": f"q{i}", "decision": "answer", "answer": a,
                          "retrieved": [{"chunk_id": "d#0", "score": 1.0, "rank": 1}]} for i, a in enumerate(answers)],
                        schema={"system": pl.Utf8, "question_id": pl.Utf8, "decision": pl.Utf8, "answer": pl.Utf8,
                                "retrieved": pl.List(RETRIEVED_HIT)})
    return runs, snapshot


def test_judge_runs_uses_batches_and_isolates_a_failing_item():
    answers = ["El envío tarda 5 días.", "El envío tarda 6 días.", "fallo total aquí"]
    runs, snapshot = _runs(answers)
    spy = _BatchSpy()
    _, ans = judge_runs(runs, snapshot, spy)
    assert spy.batches == [3] and spy.singles == 0
    assert ans["status"].to_list() == ["judged", "judged", "judged"]
    spy = _BatchSpy(fail_on="fallo total aquí")
    labels, ans = judge_runs(runs, snapshot, spy)
    assert spy.batches == [3] and spy.singles == 3  # the batch failed: each item judged on its own
    assert ans["status"].to_list() == ["judged", "judged", "judge_error"]
    assert labels.filter(pl.col("question_id") == "q0")["verdict"].to_list() == ["SUPPORTED"]


@pytest.mark.parametrize("workers", [0, -1, True])
def test_workers_must_be_positive(workers):
    with pytest.raises(ValueError, match="workers"):
        RuleBasedJudge(workers=workers)


def test_neighbours_scope_is_narrower_than_the_passage():
    # "cuero" is in the chunk's third sentence only: stated for the passage scope, an extra detail
    # for the neighbours scope (first sentence and the one before the matching sentence)
    ctx = ["El altavoz A1 es resistente al agua. Su batería dura 12 horas. La funda es de cuero."]
    claim = "La batería de cuero dura 12 horas."  # stems {bater, cuer, dur, 12, hour}: 4/5 in sentence 2
    passage = RuleBasedJudge(params={**LOOSE, "word_counterpart": 1.0}, semantic=False)
    near = RuleBasedJudge(params={**LOOSE, "word_counterpart": 1.0, "extra_scope": "neighbours"}, semantic=False)
    assert _v(passage.judge("", claim, ctx)) == ["SUPPORTED"]
    assert _v(near.judge("", claim, ctx)) == ["NOT_MENTIONED"]
    with pytest.raises(ValueError, match="extra_scope"):
        RuleBasedJudge(params={**LOOSE, "extra_scope": "document"})


@pytest.mark.parametrize(("claim", "first"), [
    ("I love that band.", True), ("My brother lives in Boston.", True), ("He told me so.", True),
    ('The single "I Found You" was a hit.', False),      # a quoted title
    ("It was signed after World War I.", False),          # a numeral after a capitalised word
    ("The film Show Me Love was released in 1998.", False),  # a capitalised title word
    ("Creo que abre a las nueve.", True),
])
def test_first_person_is_not_a_title_or_a_numeral(claim, first):
    from rag_eval_pipeline.core.judges.rule_based import first_person

    assert first_person(claim) is first


def test_a_day_and_month_without_year_match_a_full_date_and_codes_are_words():
    j = RuleBasedJudge(semantic=False)
    ctx = ["The final took place on January 8, 2006 in Dallas."]
    assert _v(j.judge("", "The final took place on January 8.", ctx)) == ["SUPPORTED"]
    assert _v(j.judge("", "The final took place on January 9.", ctx)) == ["CONTRADICTED"]
    # "p53" is one word (a name), not the number 53
    assert tokens("PPM1D activation suppresses p53").numbers == frozenset()
    assert {"p53", "ppm1d"} <= tokens("PPM1D activation suppresses p53").words
