"""The gender of a Spanish noun, for the article the claim splitter writes before a possessive's
noun ("su tarjeta" → "la tarjeta de la cuenta") or a relative's antecedent: by agreement first
(the words that agree with the head noun), then by the endings that are reliably feminine. Used by
:mod:`~rag_eval_pipeline.core.judges.clauses`; rules documented in
:mod:`~rag_eval_pipeline.core.judges.coordination`.

Source: RAE and ASALE, *Nueva gramática de la lengua española* (2009), §2 (gender), §2.3a (the
article "el" before a feminine noun with a stressed initial "a").
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.judges.morphology import (
    ADVERBS,
    BE_ES,
    FUNCTION_ES,
    NEGATIONS,
    PREP_ES,
    es_form,
    fold,
    is_number,
)

_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_SENTENCE: list[str] = []  # the sentence being split (set by split_coordinated): gender evidence


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


_MASCULINE = frozenset("el un este ese aquel del al otro mucho poco ningun algun nuestro vuestro dicho mismo "
                       "los unos estos esos aquellos otros muchos pocos algunos nuestros vuestros dichos".split())
_FEMININE = frozenset("la una esta esa aquella otra mucha poca ninguna alguna nuestra vuestra dicha misma "
                      "las unas estas esas aquellas otras muchas pocas algunas nuestras vuestras dichas".split())
_DEGREE = frozenset("mas menos mejor peor mayor menor".split())


def _agreement_gender(noun: str, after: list[str]) -> bool | None:
    """The gender a Spanish noun shows by agreement (RAE *Nueva gramática* §2.1: gender is the
    noun's, seen in the words that agree with it): True feminine, False masculine, None unseen.
    Evidence, first found: the same noun after a gendered determiner elsewhere in the sentence or
    the text it comes from ("la torre", "un puente"); in ``after`` (the words that follow the noun in its clause), an
    adjective or participle in "-o/-a/-os/-as" right after it ("su torre, restaurada en ..."), or the
    predicate after a copula ("su llave está rota", "su torre es la más alta"). Words inside the
    noun's complement agree with the complement's noun, not with it: after a preposition no
    adjective counts ("su tarjeta de débito es gratuita": "débito" is not evidence, "gratuita" is)."""
    target = fold(noun)
    words = _words(_SENTENCE[-1]) if _SENTENCE else []
    for k in range(1, len(words)):
        if fold(words[k]) == target:
            det = fold(words[k - 1])
            if det in _FEMININE or det in _MASCULINE:
                return det in _FEMININE
    k = 0
    complement = False
    while k < len(after):  # up to the clause's verb: a participle agreeing with the noun
        if fold(after[k]) in PREP_ES:
            complement = True  # "su tarjeta de débito": the complement's noun agrees with nothing here
            k += 1
            continue
        form = es_form(after[k])
        if not complement and (form == "participle" or form is None and fold(after[k]).endswith(("o", "os"))
                               and fold(after[k]) not in FUNCTION_ES and not is_number(after[k])):
            return fold(after[k]).endswith(("a", "as"))
        if form in ("aux", "strong", "mid", "weak") and after[k].casefold() not in FUNCTION_ES:
            break
        k += 1
    if k >= len(after) or after[k].casefold() not in BE_ES:
        return None  # a full verb: what follows is its object, not the noun's predicate
    k += 1
    while k < len(after) and (fold(after[k]) in ADVERBS or fold(after[k]) in NEGATIONS):
        k += 1
    if k >= len(after):
        return None
    w = fold(after[k])
    if (w in _FEMININE or w in _MASCULINE) and k + 1 < len(after) and fold(after[k + 1]) in _DEGREE:
        return w in _FEMININE  # "es la más alta": the article of a superlative agrees
    if w in FUNCTION_ES or after[k][:1].isupper() or is_number(after[k]):
        return None
    if w.endswith(("a", "as")):
        return True
    if w.endswith(("o", "os")):
        return False
    return None


_VOWEL_GROUP = re.compile(r"[aeiouáéíóúü]+")
_STRONG_VOWELS = frozenset("aeoáéóíú")


def _stressed_initial_a(noun: str) -> bool:
    """True when a Spanish noun starts with a stressed "a" or "ha" ("aula", "agua", "área", "hacha"):
    a written accent on that "a", or two syllables (a diphthong is one) and no written accent, so
    the stress falls on the first (the rule of stress for words ending in a vowel, "n" or "s")."""
    w = noun.casefold()
    w = w[1:] if w.startswith("h") else w
    if w.startswith("á"):
        return True
    if not w.startswith("a") or any(ch in "áéíóú" for ch in w) or not w.endswith(tuple("aeiouns")):
        return False
    syllables = sum(max(1, sum(ch in _STRONG_VOWELS for ch in g)) for g in _VOWEL_GROUP.findall(w))
    return syllables == 2


def _spanish_article(noun: str, plural: bool, after: list[str] | tuple[str, ...] = ()) -> str:
    """The definite article for a Spanish noun: its gender by agreement (:func:`_agreement_gender`),
    else by the endings that are reliably feminine ("-a", "-ión", "-dad", "-tad", "-tud", "-umbre",
    and their plurals), else masculine, the gender of most nouns in "-e", consonants and "-o". A
    feminine singular noun whose first syllable, stressed, starts with "a" takes "el" ("el aula",
    RAE *Nueva gramática* §2.3a), found by :func:`_stressed_initial_a`."""
    feminine = _agreement_gender(noun, list(after))
    if feminine is None:
        f = fold(noun)
        feminine = f.endswith(("a", "ion", "dad", "tad", "tud", "umbre", "as", "iones", "dades", "tades",
                               "tudes", "umbres"))
    if plural:
        return "las" if feminine else "los"
    return "la" if feminine and not _stressed_initial_a(noun) else "el"
