"""Claim splitting by agreement (rule version 8: core/judges/agreement.py, the gapping and
possessive rules of coordination.py and clauses.py), the known misses of rule version 7.

Every expected list was written by hand from the sentence before the rules were written; these are
development sentences, not a held-out set.
"""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.claims import split_claims

# --- rule version 8: the known misses of rule version 7 (expected claims written by hand before the
# rules; development sentences, not a held-out set) ------------------------------------------------


@pytest.mark.parametrize(("sentence", "expected"), [
    # the article of a Spanish noun in "-e" comes from what agrees with it, not from its ending
    ("La casa tiene jardín y su llave está rota.", ["La casa tiene jardín.", "La llave de la casa está rota."]),
    ("El castillo es del siglo XII y su torre, restaurada en 1990, es la más alta.",
     ["El castillo es del siglo XII.", "La torre del castillo, restaurada en 1990, es la más alta."]),
    ("El barrio tiene la calle más estrecha de la ciudad, y su calle principal está cerrada al tráfico.",
     ["El barrio tiene la calle más estrecha de la ciudad.", "La calle principal del barrio está cerrada al tráfico."]),
    ("El puerto tiene un faro y su puente es levadizo.",
     ["El puerto tiene un faro.", "El puente del puerto es levadizo."]),
    # another sentence of the same text says "La torre"
    ("La catedral tiene tres naves, y su torre mide 90 metros. La torre se ve desde el río.",
     ["La catedral tiene tres naves.", "La torre de la catedral mide 90 metros.", "La torre se ve desde el río."]),
    # no agreement anywhere: the ending decides (masculine for "-e"), a known miss for "torre"
    ("La catedral tiene tres naves, y su torre mide 90 metros.",
     ["La catedral tiene tres naves.", "El torre de la catedral mide 90 metros."]),
])
def test_spanish_possessive_takes_the_nouns_agreeing_gender(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # a bare plural subject before a conjunct that shows no number (a modal) or a plural one ("were")
    ("Young drivers pay more and must carry a green sticker.",
     ["Young drivers pay more.", "Young drivers must carry a green sticker."]),
    ("Local shops charge a fee and can refuse returns.",
     ["Local shops charge a fee.", "Local shops can refuse returns."]),
    ("Senior citizens travel free and were given new cards in May.",
     ["Senior citizens travel free.", "Senior citizens were given new cards in May."]),
    # a preposition after the bare word: it is the object noun's ("fever in children"), the "-s" word the verb
    ("Ibuprofen lowers fever in children and can cause nausea.",
     ["Ibuprofen lowers fever in children.", "Ibuprofen can cause nausea."]),
    ("Anna teaches music in Leeds and can play the harp.", ["Anna teaches music in Leeds.", "Anna can play the harp."]),
])
def test_english_plural_subject_without_a_bare_second_verb(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # an "-s" word followed by its object is a verb, not a second object
    ("The clinic treats emergencies and runs tests.", ["The clinic treats emergencies.", "The clinic runs tests."]),
    ("The bakery sells cakes and makes bread.", ["The bakery sells cakes.", "The bakery makes bread."]),
    ("The school offers courses and organises trips.", ["The school offers courses.", "The school organises trips."]),
    ("La panadería vende pan y hace bollos.", ["La panadería vende pan.", "La panadería hace bollos."]),
    # one word after "and" stays a second object
    ("The kiosk sells maps and postcards.", ["The kiosk sells maps and postcards."]),
    ("La tienda vende pan y leche.", ["La tienda vende pan y leche."]),
    # an irregular participle after a passive and "and"; after "but" a bare word is an adjective
    ("The bread is sliced by hand and sold in paper bags.",
     ["The bread is sliced by hand.", "The bread is sold in paper bags."]),
    ("The cake is baked for 40 minutes and left to cool in the tin.",
     ["The cake is baked for 40 minutes.", "The cake is left to cool in the tin."]),
    ("The restaurant is closed on Mondays but open on holidays.",
     ["The restaurant is closed on Mondays but open on holidays."]),
    # no passive before "and": two predicate adjectives stay one claim (a BEGIN response)
    ("They are also smaller and heavier than those used in candlepin bowling.",
     ["They are also smaller and heavier than those used in candlepin bowling."]),
])
def test_verb_and_object_after_and(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # verb-subject order after a fronted phrase: the verb agrees with the noun phrase after it
    ("El lago es profundo, y en él viven truchas.", ["El lago es profundo.", "En él viven truchas."]),
    ("Los bosques cubren el norte, y en ellos vive el oso pardo.",
     ["Los bosques cubren el norte.", "En ellos vive el oso pardo."]),
    ("La finca tiene un huerto, y en verano crecen tomates.",
     ["La finca tiene un huerto.", "En verano crecen tomates."]),
    # the verb agrees with the first subject: it is carried
    ("Los bares cierran a la una, y en verano cierran a las tres.",
     ["Los bares cierran a la una.", "En verano los bares cierran a las tres."]),
    ("Los socios pagan 20 euros, y desde enero pagan 25.",
     ["Los socios pagan 20 euros.", "Desde enero los socios pagan 25."]),
])
def test_spanish_subject_after_its_verb(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # gapping with a name as the remnant: it stands for the object when the object is a name, else
    # for the subject when that is one
    ("Ana visitó Roma en mayo y París en junio.", ["Ana visitó Roma en mayo.", "Ana visitó París en junio."]),
    ("The band played Madrid in May and Paris in June.",
     ["The band played Madrid in May.", "The band played Paris in June."]),
    ("Ana llegó en mayo y Luis en junio.", ["Ana llegó en mayo.", "Luis llegó en junio."]),
    ("Acme was founded in 1985 and Globex in 1990.", ["Acme was founded in 1985.", "Globex was founded in 1990."]),
    # a remnant that is not a name and shares nothing stays (a known miss)
    ("La empresa abrió una tienda en Madrid en 2010 y otra en París en 2015.",
     ["La empresa abrió una tienda en Madrid en 2010 y otra en París en 2015."]),
])
def test_gapping_with_names(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # rule version 9: a bare form after the plural noun phrase that opens the clause, with an object
    # after it, is the verb (plural concord); by hand: "contain" / "accept" agree with "tablets" /
    # "shops", "lactose" / "cards" are their objects
    ("The tablets contain lactose and must be kept dry.",
     ["The tablets contain lactose.", "The tablets must be kept dry."]),
    ("Most shops accept cards and close at eight.", ["Most shops accept cards.", "Most shops close at eight."]),
    # "costs" before its number is the verb; "bag" is the noun after the modifier "sports"
    ("The sports bag costs 20 euros and weighs 1 kilo.",
     ["The sports bag costs 20 euros.", "The sports bag weighs 1 kilo."]),
    # a possessive's noun phrase is no clause's subject here: lower-case names stay a pair
    ("The novels follow a young wizard and his friends hermione granger and ron weasley.",
     ["The novels follow a young wizard and his friends hermione granger and ron weasley."]),
])
def test_a_bare_verb_after_an_opening_plural_noun_phrase(sentence, expected):
    assert split_claims(sentence) == expected
