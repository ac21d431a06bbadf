"""Word alignment of extra words, the claim's part of a sentence for the semantic signal, lazy
word-level scoring, and the splitting and first-person fixes found on long answers
(core/judges/evidence.py, tokens.py, rule_signals.py, claims.py, coordination.py, rule_based.py).
Expected values worked out by hand in the comments."""

from __future__ import annotations

import math

import pytest

from rag_eval_pipeline.core.judges.claims import split_claims, split_sentences
from rag_eval_pipeline.core.judges.evidence import Evidence, aligned_candidates, extras_left
from rag_eval_pipeline.core.judges.numbers import normalise_quantities
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge, first_person
from rag_eval_pipeline.core.judges.tokens import aligned_span, stem_sequence


def test_stem_sequence_keeps_order_and_repeats():
    # content words only ("the", "of", "is" are stopwords), Snowball English stems, numbers left out;
    # "euros" is a unit, written as its canonical word "eur" (numbers.UNITS)
    assert stem_sequence("The price of the dock is 49 euros, the dock price", "english") == (
        "price", "dock", "eur", "dock", "price")


@pytest.mark.parametrize("claim, sentence, extra, width, expected", [
    # "price" has no left neighbour; its right neighbour "dock" is at sentence position 1, so the one
    # word before it (position 0, "cost") is the only candidate
    (("price", "dock", "euro"), ("cost", "dock", "euro"), "price", 1, ["cost"]),
    # x between a and b: the word after a (u) and the word before b (v)
    (("a", "x", "b"), ("a", "u", "v", "b"), "x", 1, ["u", "v"]),
    # width 2 reaches two words on each side, inside the sentence
    (("a", "x", "b"), ("a", "u", "v", "w", "b"), "x", 2, ["u", "v", "w"]),
    # reordered neighbours: after a (position 2) comes v; before b (position 0) nothing
    (("a", "x", "b"), ("b", "u", "a", "v"), "x", 1, ["v"]),
    # no neighbour the sentence shares, or width 0: every allowed word
    (("x", "y"), ("u", "v"), "x", 1, ["u", "v"]),
    (("a", "x", "b"), ("a", "u", "v", "b"), "x", 0, ["u", "v"]),
])
def test_aligned_candidates_by_hand(claim, sentence, extra, width, expected):
    allowed = frozenset(sentence) - frozenset(claim)
    assert aligned_candidates(extra, claim, sentence, allowed, width) == expected


def test_aligned_candidates_only_returns_allowed_words():
    # "v" is the aligned word but the claim uses it elsewhere (not allowed): nothing is left
    assert aligned_candidates("x", ("a", "x", "v"), ("a", "v"), frozenset(), 1) == []


def test_aligned_span_is_the_claims_part_of_the_sentence():
    s = "Elvis Aaron Presley (January 8, 1935 – August 16, 1977) was an American singer, musician, and actor."
    # shared words: "Elvis" (first word) and "singer": the span runs from one to the other
    assert aligned_span(s, "Elvis was a singer", "english", 0) == (
        "Elvis Aaron Presley (January 8, 1935 – August 16, 1977) was an American singer")
    # one more word on each side: none before "Elvis", "musician" after "singer"
    assert aligned_span(s, "Elvis was a singer", "english", 1).endswith("singer, musician")
    assert aligned_span(s, "Elvis was a singer", "english", -1) == s  # -1: the whole sentence
    assert aligned_span(s, "Ada wrote poems", "english", 0) == s      # nothing shared: the whole sentence


def test_unknown_counterparts_count_as_not_excused():
    # NaN marks a word the lazy path did not score because an earlier one already failed
    ev = Evidence(1.0, 1.0, None, True, False, frozenset(), extra=("a", "b"), counterpart=(0.95, math.nan))
    assert extras_left(ev, {"word_counterpart": 0.9}) == 1
    assert extras_left(ev, {"word_counterpart": 0.99}) == 2


def test_lazy_word_scores_give_the_verdicts_of_scoring_every_word():
    # the judge's own path (lazy rounds) against the fitting path (every extra word scored), same
    # parameters: the SUPPORTED / not decision of every claim must agree
    params = {"support_lexical": 0.6, "lexical_floor": 0.5, "support_semantic": 0.85,
              "word_counterpart": 0.86, "counterpart_window": 1}
    ctx = ["The cost of the dock is 49 euros and it ships from Madrid within two days.",
           "Every country aims to provide basic education, but the systems remain unique to them."]
    answer = ("The price of the dock is 49 euros. Every country strives to provide basic education. "
              "The lovely blue dock ships quickly from Madrid.")
    j = RuleBasedJudge(params=params)
    lazy = [c.verdict == "SUPPORTED" for c in j.judge("", answer, ctx).claims]
    full = [any(_decide(ev, params) for ev in row) for _, fixed, row in j.analyse(answer, ctx) if fixed is None]
    assert lazy == full


def _decide(ev, params):
    from rag_eval_pipeline.core.judges.evidence import decide

    return decide(ev, params) == "SUPPORTED"


def test_a_lowercase_technical_term_starts_a_sentence():
    assert split_sentences("All six macaques were protected. cDNA analysis found a 4437 bp cDNA.") == [
        "All six macaques were protected.", "cDNA analysis found a 4437 bp cDNA."]
    # an abbreviation still does not end a sentence, and a plain lowercase word does not start one
    assert split_sentences("We measured it, e.g. mRNA levels. p53 was high.") == [
        "We measured it, e.g. mRNA levels.", "p53 was high."]
    assert split_sentences("It weighs approx. three kilos.") == ["It weighs approx. three kilos."]


def test_nor_keeps_its_negation():
    # split at "nor", the second part would state the opposite ("... changed significantly")
    s = "Neither the incidence of sepsis nor the combined outcome changed significantly."
    assert split_claims(s) == [s]
    assert split_claims("No drug was used, nor was any placebo given.") == [
        "No drug was used, nor was any placebo given."]


@pytest.mark.parametrize("claim, first", [
    ("The RIG-I-like receptors (RLRs) RIG-I and MDA5 sense RNA.", False),   # "I" inside a name
    ("Vaccination by intracolorectal (i.c.r.) administration works.", False),  # an abbreviation
    ("I think the battery lasts long.", True),
    ("My phone - I love it.", True),
])
def test_first_person_is_not_a_hyphenated_name_or_an_abbreviation(claim, first):
    assert first_person(claim) is first


def test_number_words_fast_path_keeps_the_rewrites():
    # no number word, date or unit: unchanged; otherwise rewritten as before (by hand: "dos mil" =
    # 2000, "metros" -> "m"; "quince" = 15, "dias" -> "day"; "primero de enero" -> m01d01)
    assert normalise_quantities("el cliente paga la vuelta") == "el cliente paga la vuelta"
    assert normalise_quantities("dos mil metros") == "2000 m"
    assert normalise_quantities("quince dias") == "15 day"
    assert normalise_quantities("el primero de enero") == "el m01d01"
