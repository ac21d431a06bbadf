"""An extra detail is excused only by the aligned part of the passage (core/judges/evidence.py
``substituted``, rule_based.py ``_row``): a claim word that the sentence replaces by another word
is not excused because the passage states it elsewhere. Expected verdicts worked out by hand."""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.evidence import substituted
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

CTX_EN = ["Acme was founded in 1985. Globex was founded in 1990."]
CTX_ES = ["Acme se fundó en 1985. Globex se fundó en 1990."]


@pytest.mark.parametrize("scope", ["passage", "neighbours"])
@pytest.mark.parametrize("answer, ctx", [
    ("Acme was founded in 1990. Globex was founded in 1985.", CTX_EN),
    ("Acme se fundó en 1990. Globex se fundó en 1985.", CTX_ES),
])
def test_swapped_facts_are_not_supported(answer, ctx, scope):
    # By hand, claim "Acme was founded in 1990" (content tokens acm, found, 1990):
    # - sentence 2 "Globex was founded in 1990" shares found, 1990 (lexical 2/3 >= 0.65) and lacks
    #   "acm"; in the claim "acm" sits before "found", and in the sentence the word before "found"
    #   is "globex": the sentence replaces it, so the passage (which names Acme in sentence 1) does
    #   not excuse it, and "Globex" is a name (capitalised inside the chunk): no word similarity
    #   excuses it either -> not SUPPORTED by sentence 2;
    # - sentence 1 "Acme was founded in 1985": every word, number conflict 1990 / 1985 -> CONTRADICTED.
    # Symmetrically "Globex ... 1985" is CONTRADICTED by sentence 2. Whole answer: NO.
    j = RuleBasedJudge(params={**RuleBasedJudge().params, "extra_scope": scope})
    r = j.judge("", answer, ctx)
    assert [c.verdict for c in r.claims] == ["CONTRADICTED", "CONTRADICTED"]
    assert r.holistic == "NO"


@pytest.mark.parametrize("scope", ["passage", "neighbours"])
def test_the_same_facts_in_order_stay_supported(scope):
    j = RuleBasedJudge(params={**RuleBasedJudge().params, "extra_scope": scope})
    r = j.judge("", "Acme was founded in 1985. Globex was founded in 1990.", CTX_EN)
    assert [c.verdict for c in r.claims] == ["SUPPORTED", "SUPPORTED"]


@pytest.mark.parametrize("answer, ctx", [
    # the sentence leaves the subject to a pronoun ("It"): nothing stands in "Lumo"'s place, so the
    # passage's first sentence states it -> SUPPORTED
    ("Lumo was founded in 1985.", ["Lumo is a company from Madrid. It was founded in 1985."]),
    # "altavoz" in the claim sits between "batería" and "dura", which are adjacent in the sentence
    # "Su batería dura 12 horas": nothing in its place, the passage's topic -> SUPPORTED
    ("La batería del altavoz dura 12 horas.", ["El altavoz A1 es resistente al agua. Su batería dura 12 horas."]),
])
def test_a_word_the_sentence_leaves_implicit_is_still_excused_by_the_passage(answer, ctx):
    assert RuleBasedJudge().judge("", answer, ctx).holistic == "YES"


def test_substituted_by_hand():
    # claim (acm, found), sentence (globex, found): "acm"'s right neighbour "found" is at sentence
    # position 1; the word before it is "globex", a word the claim does not use -> substituted
    assert substituted(frozenset({"acm"}), ("acm", "found"), ("globex", "found"),
                       frozenset({"globex"}), 1) == {"acm": ("globex",)}
    # sentence (found,): nothing before "found" -> no aligned word, not substituted
    assert substituted(frozenset({"lumo"}), ("lumo", "found"), ("found",), frozenset(), 1) == {}
    # no neighbour the sentence shares: no aligned place
    assert substituted(frozenset({"x"}), ("x", "y"), ("u", "v"), frozenset({"u", "v"}), 1) == {}


@pytest.mark.parametrize("claim, context, verdict", [
    # every content word (museum, open, sunday) is in the sentence, lexical 1.0; "only" says which
    # days, a detail the sentence does not give -> NOT_MENTIONED; without it -> SUPPORTED
    ("The museum opens only on Sundays.", "The museum opens on Sundays.", "NOT_MENTIONED"),
    ("The museum opens on Sundays.", "The museum opens on Sundays.", "SUPPORTED"),
    # "todos" says how many: not in the sentence -> NOT_MENTIONED
    ("Todos los socios pagan 20 euros.", "Los socios pagan 20 euros.", "NOT_MENTIONED"),
    # the sentence has the quantifier too -> SUPPORTED
    ("Todos los socios pagan 20 euros.", "Todos los socios pagan 20 euros al año.", "SUPPORTED"),
])
def test_a_quantifier_the_sentence_lacks_is_an_extra_detail(claim, context, verdict):
    assert [c.verdict for c in RuleBasedJudge().judge("", claim, [context]).claims] == [verdict]
