"""Coordinated facts split into self-contained claims (core/judges/coordination.py via split_claims).

Every expected list below was written by hand from the sentence (what facts it states, with the
subject repeated where the second fact has none), before running the splitter.
"""

from __future__ import annotations

import pytest

from rag_eval_pipeline.core.judges.claims import split_claims
from rag_eval_pipeline.core.judges.coordination import looks_verbal, split_coordinated
from rag_eval_pipeline_tests.core.judges import (
    claim_split_heldout2,
    claim_split_heldout3,
    claim_split_heldout4,
    claim_split_holdout,
    claim_split_set,
)

SPANISH = [
    # the example: two facts joined by ", y"; the exception stays with its fact. Changed: a
    # period stated with its start is two facts (its length, its start), as the guides decompose it
    ("El plazo para devolver el altavoz es de 15 días desde la compra, y los gastos de envío los paga "
     "la tienda salvo en pedidos internacionales.",
     ["El plazo para devolver el altavoz es de 15 días.",
      "El plazo para devolver el altavoz se cuenta desde la compra.",
      "Los gastos de envío los paga la tienda salvo en pedidos internacionales."]),
    ("Tarda de 7 a 10 días laborables, y el envío a Canarias es gratuito.",
     ["Tarda de 7 a 10 días laborables.", "El envío a Canarias es gratuito."]),
    ("El altavoz pesa 500 g y mide 20 cm.", ["El altavoz pesa 500 g.", "El altavoz mide 20 cm."]),
    ("La batería dura 12 horas y se carga en 3 horas.",
     ["La batería dura 12 horas.", "La batería se carga en 3 horas."]),
    ("El envío a la península tarda de 2 a 3 días y cuesta 3,90 € por debajo de 49 €.",
     ["El envío a la península tarda de 2 a 3 días.", "El envío a la península cuesta 3,90 € por debajo de 49 €."]),
    ("La garantía cubre los defectos de fabricación, pero no cubre los golpes.",
     ["La garantía cubre los defectos de fabricación.", "La garantía no cubre los golpes."]),
    ("El reembolso se emite en 14 días, aunque puede tardar más con tarjeta.",
     ["El reembolso se emite en 14 días.", "El reembolso puede tardar más con tarjeta."]),
    ("La tienda abre a las 9, pero los domingos está cerrada.",
     ["La tienda abre a las 9.", "Los domingos está cerrada."]),
    ("El A1 tiene una garantía de tres años, que cubre los defectos de fabricación.",
     ["El A1 tiene una garantía de tres años.", "La garantía de tres años cubre los defectos de fabricación."]),
    ("Lumo Audio tiene un centro de servicio en Valencia, donde se reparan los altavoces.",
     ["Lumo Audio tiene un centro de servicio en Valencia.", "Se reparan los altavoces en Valencia."]),
    ("Incluye el cable, la correa y la guía rápida.",
     ["Incluye el cable.", "Incluye la correa.", "Incluye la guía rápida."]),
    ("Enviamos pedidos a la España peninsular, Baleares, Canarias, Ceuta y Melilla.",
     ["Enviamos pedidos a la España peninsular.", "Enviamos pedidos a Baleares.", "Enviamos pedidos a Canarias.",
      "Enviamos pedidos a Ceuta.", "Enviamos pedidos a Melilla."]),
    ("Se puede pagar con tarjeta, PayPal o Bizum.",
     ["Se puede pagar con tarjeta.", "Se puede pagar con PayPal.", "Se puede pagar con Bizum."]),
    ("La caja contiene el altavoz, el cable y la funda.",
     ["La caja contiene el altavoz.", "La caja contiene el cable.", "La caja contiene la funda."]),
    ("El pedido llegó el lunes, y la factura llegó el martes.",
     ["El pedido llegó el lunes.", "La factura llegó el martes."]),
    ("El altavoz es resistente al agua, pero no flota.",
     ["El altavoz es resistente al agua.", "El altavoz no flota."]),
    ("La aplicación muestra el nivel de batería y permite cambiar el ecualizador.",
     ["La aplicación muestra el nivel de batería.", "La aplicación permite cambiar el ecualizador."]),
    ("El modo Dúo une dos altavoces, y el modo Fiesta admite hasta diez.",
     ["El modo Dúo une dos altavoces.", "El modo Fiesta admite hasta diez."]),
    ("Los altavoces vendidos fuera de la UE tienen un año de garantía, aunque la batería tiene 18 meses.",
     ["Los altavoces vendidos fuera de la UE tienen un año de garantía.", "La batería tiene 18 meses."]),
    ("La devolución es gratuita desde la península, pero los envíos desde Canarias los paga el cliente.",
     ["La devolución es gratuita desde la península.", "Los envíos desde Canarias los paga el cliente."]),
    ("El técnico revisa el altavoz y envía un presupuesto en 48 horas.",
     ["El técnico revisa el altavoz.", "El técnico envía un presupuesto en 48 horas."]),
    ("La base necesita un adaptador de 15 W y tarda 3 horas en cargar el altavoz.",
     ["La base necesita un adaptador de 15 W.", "La base tarda 3 horas en cargar el altavoz."]),
    ("El soporte responde en 24 horas, y los casos urgentes se escalan al nivel 2.",
     ["El soporte responde en 24 horas.", "Los casos urgentes se escalan al nivel 2."]),
    ("Los pedidos se envían desde Madrid, que es donde está el almacén.",
     ["Los pedidos se envían desde Madrid.", "Madrid es donde está el almacén."]),
    ("El cliente recibe una etiqueta prepagada, lo cual simplifica la devolución.",
     ["El cliente recibe una etiqueta prepagada.", "Esto simplifica la devolución."]),
    ("El firmware 2.4 añadió el modo Dúo, y el 2.5 añadió avisos de voz.",
     ["El firmware 2.4 añadió el modo Dúo.", "El 2.5 añadió avisos de voz."]),
    ("El grabado es gratuito en verano, pero las unidades grabadas no admiten devolución.",
     ["El grabado es gratuito en verano.", "Las unidades grabadas no admiten devolución."]),
    ("Aceptamos unidades abiertas siempre que no tengan golpes.",
     ["Aceptamos unidades abiertas siempre que no tengan golpes."]),
    # exceptions and conditions restrict their fact: one claim
    ("Los gastos de envío los paga la tienda salvo en pedidos internacionales.",
     ["Los gastos de envío los paga la tienda salvo en pedidos internacionales."]),
    ("La devolución es gratuita excepto desde Canarias.", ["La devolución es gratuita excepto desde Canarias."]),
    ("Si el pedido llegó en varios paquetes, el plazo empieza con el último.",
     ["Si el pedido llegó en varios paquetes, el plazo empieza con el último."]),
    # noun coordination and two-item pairs stay whole
    ("El cable y el cargador vienen en la caja.", ["El cable y el cargador vienen en la caja."]),
    ("Tiene 1.000 páginas y 1,000 notas.", ["Tiene 1.000 páginas y 1,000 notas."]),
    ("Funciona con Android e iOS.", ["Funciona con Android e iOS."]),
    ("Cuesta entre 20 y 30 euros.", ["Cuesta entre 20 y 30 euros."]),
    # restrictive relative clause (no comma): one claim
    ("El altavoz que compraste tiene tres años de garantía.",
     ["El altavoz que compraste tiene tres años de garantía."]),
    # an open list is one claim
    ("Vende cables, fundas, etc.", ["Vende cables, fundas, etc."]),
    # inside brackets nothing splits
    ("El envío (gratis y rápido) llega en 2 días.", ["El envío (gratis y rápido) llega en 2 días."]),
    ("Pesa 3.5 kg y cuesta 3,5 euros.", ["Pesa 3.5 kg.", "Cuesta 3,5 euros."]),
    ("Dispones de 30 días para devolverlo, y el reembolso llega en 14 días.",
     ["Dispones de 30 días para devolverlo.", "El reembolso llega en 14 días."]),
    ("La garantía europea dura tres años, mientras que la de fuera de la UE dura uno.",
     ["La garantía europea dura tres años.", "La de fuera de la UE dura uno."]),
    ("El altavoz se apaga solo tras 20 minutos, así que la batería dura más.",
     ["El altavoz se apaga solo tras 20 minutos.", "La batería dura más."]),
]

ENGLISH = [
    ("The speaker weighs 500 g and lasts 20 hours on a charge.",
     ["The speaker weighs 500 g.", "The speaker lasts 20 hours on a charge."]),
    ("The warranty covers manufacturing defects and does not cover accidental damage.",
     ["The warranty covers manufacturing defects.", "The warranty does not cover accidental damage."]),
    ("Lumo Audio does not refund UK import duties, but your customs office may refund them on request.",
     ["Lumo Audio does not refund UK import duties.", "Your customs office may refund them on request."]),
    ("The A1 has a three-year warranty, which covers manufacturing defects.",
     ["The A1 has a three-year warranty.", "The three-year warranty covers manufacturing defects."]),
    ("Outside the EU, claims are handled by the distributor in the country of purchase, who will ask for the receipt.",
     ["Outside the EU, claims are handled by the distributor in the country of purchase.",
      "The distributor in the country of purchase will ask for the receipt."]),
    # changed: a subject pronoun whose antecedent is the sentence's subject is replaced by it
    ("The speaker is sent to Valencia, where it is repaired.",
     ["The speaker is sent to Valencia.", "The speaker is repaired in Valencia."]),
    ("The box contains the speaker, a USB-C cable and a strap.",
     ["The box contains the speaker.", "The box contains a USB-C cable.", "The box contains a strap."]),
    ("The battery lasts 12 hours, and it charges in 3 hours.",  # changed: "it" -> the subject
     ["The battery lasts 12 hours.", "The battery charges in 3 hours."]),
    ("Refunds take 14 days, but card payments can take longer.",
     ["Refunds take 14 days.", "Card payments can take longer."]),
    ("The dock is sold separately, although it is included in the bundle.",  # changed: "it" -> the subject
     ["The dock is sold separately.", "The dock is included in the bundle."]),
    ("The store opens at 9, and the warehouse opens at 7.",
     ["The store opens at 9.", "The warehouse opens at 7."]),
    ("Returns are free from mainland Spain, but customers pay for returns from the Canary Islands.",
     ["Returns are free from mainland Spain.", "Customers pay for returns from the Canary Islands."]),
    ("The app shows the battery level and controls the equaliser.",
     ["The app shows the battery level.", "The app controls the equaliser."]),
    ("Version 2.4 added Duo stereo mode, and version 2.5 added a low-battery voice prompt.",
     ["Version 2.4 added Duo stereo mode.", "Version 2.5 added a low-battery voice prompt."]),
    ("The technician inspects the speaker and sends a quote within 48 hours.",
     ["The technician inspects the speaker.", "The technician sends a quote within 48 hours."]),
    ("Support answers within 24 hours, while urgent cases are escalated to level 2.",
     ["Support answers within 24 hours.", "Urgent cases are escalated to level 2."]),
    ("The parcel must be tracked, so the customer keeps the receipt.",
     ["The parcel must be tracked.", "The customer keeps the receipt."]),
    ("John Grisham is an American writer, who is known for legal thrillers.",
     ["John Grisham is an American writer.", "The American writer is known for legal thrillers."]),
    ("The speaker is waterproof but does not float.", ["The speaker is waterproof.", "The speaker does not float."]),
    ("Orders are shipped from Madrid, which has the main warehouse.",
     ["Orders are shipped from Madrid.", "Madrid has the main warehouse."]),
    ("The charger costs 19 euros, and the case costs 25 euros.",
     ["The charger costs 19 euros.", "The case costs 25 euros."]),
    ("The speaker was released in 2021 and was updated in 2023.",
     ["The speaker was released in 2021.", "The speaker was updated in 2023."]),
    ("We ship to Spain, Portugal, France and Italy.",
     ["We ship to Spain.", "We ship to Portugal.", "We ship to France.", "We ship to Italy."]),
    ("The kit includes the speaker, the cable, the strap and the guide.",
     ["The kit includes the speaker.", "The kit includes the cable.", "The kit includes the strap.",
      "The kit includes the guide."]),
    ("The Seine flows through Paris, and the Thames flows through London.",
     ["The Seine flows through Paris.", "The Thames flows through London."]),
    ("The museum opened in 1990, but the library opened in 1995.",
     ["The museum opened in 1990.", "The library opened in 1995."]),
    ("Elvis was born in 1935 and died in 1977.", ["Elvis was born in 1935.", "Elvis died in 1977."]),
    ("Yes, he was born in 1935 and died in 1977.", ["Yes, he was born in 1935.", "He died in 1977."]),
    ("The dock charges the A1, and the A1 plays music while it charges.",
     ["The dock charges the A1.", "The A1 plays music while it charges."]),
    # exceptions and conditions restrict their fact: one claim
    ("Shipping is free except for international orders.", ["Shipping is free except for international orders."]),
    ("Returns are accepted unless the seal is broken.", ["Returns are accepted unless the seal is broken."]),
    ("If the case bulges, stop using the speaker.", ["If the case bulges, stop using the speaker."]),
    # noun coordination, pairs and ranges stay whole
    ("Cables and speakers are accepted.", ["Cables and speakers are accepted."]),
    ("Opened and lightly used speakers are accepted if they have no impact marks.",
     ["Opened and lightly used speakers are accepted if they have no impact marks."]),
    ("Charge the speaker between 0 °C and 40 °C.", ["Charge the speaker between 0 °C and 40 °C."]),
    ("The dock charges the A1 but not other speakers.", ["The dock charges the A1 but not other speakers."]),
    ("Rock and roll became popular in the 1950s.", ["Rock and roll became popular in the 1950s."]),
    # restrictive relative clause (no comma): one claim
    ("The speaker that you bought has a two-year warranty.", ["The speaker that you bought has a two-year warranty."]),
    # inside brackets nothing splits
    ("The warranty (three years and free repairs) starts at delivery.",
     ["The warranty (three years and free repairs) starts at delivery."]),
    ("It has the cable, strap, etc.", ["It has the cable, strap, etc."]),
    ("The event is held over Memorial Day weekend in late May.",
     ["The event is held over Memorial Day weekend in late May."]),
    ("The speaker is light, and it is easy to carry.",  # changed: "it" -> the subject
     ["The speaker is light.", "The speaker is easy to carry."]),
]


@pytest.mark.parametrize(("sentence", "expected"), SPANISH, ids=[s[:40] for s, _ in SPANISH])
def test_spanish_sentences(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), ENGLISH, ids=[s[:40] for s, _ in ENGLISH])
def test_english_sentences(sentence, expected):
    assert split_claims(sentence) == expected


def test_at_least_forty_sentences_per_language():
    assert len(SPANISH) >= 40 and len(ENGLISH) >= 40


def test_sentence_level_splitting_still_comes_first():
    text = "El altavoz pesa 500 g y mide 20 cm. La garantía dura tres años."
    assert split_claims(text) == ["El altavoz pesa 500 g.", "El altavoz mide 20 cm.", "La garantía dura tres años."]
    assert split_claims(text, coordinated=False) == ["El altavoz pesa 500 g y mide 20 cm.",
                                                     "La garantía dura tres años."]


def test_verbs_are_recognised_by_form_and_accent():
    assert looks_verbal("el envío llegó ayer")       # "llegó" is a verb form
    assert not looks_verbal("el envío de la caja")   # "envío" (accented í) is the noun
    assert looks_verbal("the speaker weighs 500 g")
    assert not looks_verbal("the cable and the strap")


def test_no_rule_keeps_the_sentence_as_written():
    s = "Gracias por tu paciencia."
    assert split_coordinated(s) == [s]
    assert split_coordinated("") == [""]


def _rate(cases):
    return sum(claim_split_set.exact(split_claims(s), exp) for s, exp in cases) / len(cases)


def test_public_set_exact_split_rate_per_language():
    # The set (claim_split_set.py) was written and committed before the splitter was run on it.
    # Measured: es 110/112 = 0.982, en 112/113 = 0.991 (before the structural rules of issue 26:
    # 105/112 and 110/113; the verb-list splitter before that: 0.500 and 0.469).
    # Guard a little below, so a regression of three sentences fails.
    assert len(claim_split_set.SPANISH) >= 100 and len(claim_split_set.ENGLISH) >= 100
    assert _rate(claim_split_set.SPANISH) >= 0.96
    assert _rate(claim_split_set.ENGLISH) >= 0.97


def test_extra_development_sentences_exact_split_rate():
    # claim_split_set.SPANISH_EXTRA / ENGLISH_EXTRA: written before their first run, then developed
    # against. Measured es 23/23, en 22/22 under rule version 8 (rule version 7: 23/23 and 19/22;
    # before issue 26's rules: 16/23 and 14/22).
    assert _rate(claim_split_set.SPANISH_EXTRA) >= 0.9
    assert _rate(claim_split_set.ENGLISH_EXTRA) >= 0.86


def test_rule_version_9_development_sentences_exact_split_rate():
    # claim_split_set.SPANISH_V9 / ENGLISH_V9: written with their expected claims before the splitter
    # was run on them, then developed against. Measured on rule version 8 (main at f1e404a): es 8/21,
    # en 7/18 (right number of claims 19/21, 17/18); rule version 9: es 21/21, en 18/18 (17/18
    # until its last rule, a bare verb after the plural noun phrase that opens the clause: "The
    # tablets contain lactose, so ...")
    assert len(claim_split_set.SPANISH_V9) == 21 and len(claim_split_set.ENGLISH_V9) == 18
    assert _rate(claim_split_set.SPANISH_V9) >= 21 / 21
    assert _rate(claim_split_set.ENGLISH_V9) >= 18 / 18


def test_rule_version_10_development_sentences_exact_split_rate():
    # claim_split_set.SPANISH_V10 / ENGLISH_V10: written with their expected claims before the
    # splitter was run on them, then developed against. Measured on rule version 9 (main at 8fc9c35):
    # es 6/18, en 5/10 (right number of claims 17/18, 8/10); rule version 10: es 17/18, en 8/10
    # (right number 17/18, 9/10). The misses are named in docs/judges.md ("pan, queso y vino", where
    # "vino" is also a verb; "get free parking" after a plural subject; "travel free" read as a noun
    # and a verb).
    assert len(claim_split_set.SPANISH_V10) == 18 and len(claim_split_set.ENGLISH_V10) == 10
    assert _rate(claim_split_set.SPANISH_V10) >= 17 / 18
    assert _rate(claim_split_set.ENGLISH_V10) >= 8 / 10


def test_held_out_set_exact_split_rate_per_language():
    # claim_split_holdout.py was committed before the splitter was run on it and is never tuned on:
    # measured es 35/40 = 0.875, en 35/40 = 0.875 (right number of claims 37/40 and 38/40), the same
    # before and after issue 26's structural rules; rule version 8: en 37/40 (its two rises are
    # sentences of the known misses named in docs/judges.md, so not blind)
    assert _rate(claim_split_holdout.SPANISH) >= 0.85
    assert _rate(claim_split_holdout.ENGLISH) >= 0.85


def test_third_held_out_set_exact_split_rate_per_language():
    # claim_split_heldout2.py was committed on its own before the splitter was run on it, never tuned
    # on. Measured before issue 26's rules: es 33/40 = 0.825, en 32/40 = 0.800; after: es 35/40 =
    # 0.875, en 33/40 = 0.825 (right number of claims 39/40 and 37/40)
    assert len(claim_split_heldout2.SPANISH) == 40 and len(claim_split_heldout2.ENGLISH) == 40
    assert _rate(claim_split_heldout2.SPANISH) >= 0.85
    assert _rate(claim_split_heldout2.ENGLISH) >= 0.80


def test_fourth_held_out_set_exact_split_rate_per_language():
    # claim_split_heldout3.py (manuals, legal terms, medicine leaflets, sports, recipes, travel) was
    # committed on its own before the splitter was first run on it, and never tuned on. Measured
    # blind (rule version 7): exact es 42/49 = 0.857, en 46/49 = 0.939; right number of claims 48/49
    # and 49/49. Rule version 8: the same. Rule version 9 (not blind: its rules address this set's
    # misses, named in docs/judges.md): es 47/49, en 49/49; right number 49/49 and 49/49. Guard one
    # sentence below.
    assert len(claim_split_heldout3.SPANISH) == 49 and len(claim_split_heldout3.ENGLISH) == 49
    assert _rate(claim_split_heldout3.SPANISH) >= 46 / 49
    assert _rate(claim_split_heldout3.ENGLISH) >= 48 / 49


def _right_count(cases):
    return sum(len(split_claims(s)) == len(exp) for s, exp in cases)


def test_fifth_held_out_set_exact_split_rate_per_language():
    # claim_split_heldout4.py (banking and insurance, public transport, school rules, release notes,
    # real estate, weather, museums and libraries, HR policies) was committed on its own (d270be2)
    # before the splitter was first run on it, and never tuned on. Measured blind (rule version 8):
    # exact es 43/50 = 0.860, en 46/50 = 0.920; right number of claims 50/50 and 49/50. Rule version 9,
    # written without sight of it, measured once at merge (still blind): es 43/50, en 47/50. Rule
    # version 10 (not blind: its rules address this set's misses, named in docs/judges.md): es 47/50,
    # en 50/50; right number 50/50 and 50/50. The floors are the measured figures: a change that
    # loses any of these sentences fails here.
    assert len(claim_split_heldout4.SPANISH) == 50 and len(claim_split_heldout4.ENGLISH) == 50
    assert _rate(claim_split_heldout4.SPANISH) >= 47 / 50
    assert _rate(claim_split_heldout4.ENGLISH) >= 50 / 50
    assert _right_count(claim_split_heldout4.SPANISH) >= 50
    assert _right_count(claim_split_heldout4.ENGLISH) >= 50


def test_the_guides_compound_sentence_is_three_claims():
    s = ("El plazo de devolución internacional es de 30 días naturales desde la entrega, y el coste del envío "
         "de vuelta corre a cargo del cliente salvo en productos defectuosos.")
    assert split_claims(s) == [
        "El plazo de devolución internacional es de 30 días naturales.",
        "El plazo de devolución internacional se cuenta desde la entrega.",
        "El coste del envío de vuelta corre a cargo del cliente salvo en productos defectuosos.",
    ]


@pytest.mark.parametrize(("sentence", "expected"), [
    ("El altavoz pesa 900 gramos, mide 20 centímetros y resiste salpicaduras.",
     ["El altavoz pesa 900 gramos.", "El altavoz mide 20 centímetros.", "El altavoz resiste salpicaduras."]),
    ("The shop opens at nine, closes at eight and stays closed on Sundays.",
     ["The shop opens at nine.", "The shop closes at eight.", "The shop stays closed on Sundays."]),
    # verbs no list has ever held: the decision is the verb's ending and its place after the subject
    ("La lámpara parpadea dos veces, zumba un poco y atenúa la luz.",
     ["La lámpara parpadea dos veces.", "La lámpara zumba un poco.", "La lámpara atenúa la luz."]),
    ("The drone hovers at ten metres, films in 4K and lands by itself.",
     ["The drone hovers at ten metres.", "The drone films in 4K.", "The drone lands by itself."]),
])
def test_three_part_verb_phrase_coordination(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    ("El altavoz pesa 500 g y su batería dura 12 horas.",
     ["El altavoz pesa 500 g.", "La batería del altavoz dura 12 horas."]),
    ("The speaker weighs 500 g and its battery lasts 12 hours.",
     ["The speaker weighs 500 g.", "The speaker's battery lasts 12 hours."]),
    ("Ada Lovelace wrote the first program, and she worked with Babbage.",
     ["Ada Lovelace wrote the first program.", "Ada Lovelace worked with Babbage."]),
    # a pronoun whose antecedent is not the subject stays: "it" is the sofa, not "I"
    ("I bought the sofa in the sales and it cost me 300 euros.",
     ["I bought the sofa in the sales.", "It cost me 300 euros."]),
])
def test_pronouns_and_possessives_take_the_subject(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize("sentence", [
    "La devolución es gratuita salvo si el producto está abierto y usado.",
    "Returns are free unless the box is opened and the seal is broken.",
    "Si el pedido llega roto, se devuelve el dinero y se recoge el paquete.",
    "Shipping is free provided the order is over 50 euros and the address is in Spain.",
])
def test_conditions_and_exceptions_stay_with_their_fact(sentence):
    assert split_claims(sentence) == [sentence]


@pytest.mark.parametrize("word", ["mantuvieron", "sostuvo", "tradujeron", "intervino", "dispuso", "extrajo"])
def test_strong_preterites_of_derived_verbs(word):
    # by hand: each is a preterite of a verb derived from tener, traducir (-ducir), venir, poner,
    # traer, whose stem changes; endings alone ("-o", "-eron") would read them as weak or not at all
    from rag_eval_pipeline.core.judges.morphology import es_form

    assert es_form(word) == "strong"


def test_one_list_of_language_markers():
    # the splitter's language test and the tokens' one count the same words: "lo" and "está"
    # (folded "esta") are Spanish markers for both
    from rag_eval_pipeline.core.judges.morphology import is_spanish
    from rag_eval_pipeline.core.judges.tokens import language_of

    for text in ["lo está", "the dock", "Lo compró en la tienda", "It is in the box"]:
        assert is_spanish(text.split()) == (language_of(text) == "spanish")


# --- issue 26: structure the first splitter read wrong (expected claims written by hand) -------------


@pytest.mark.parametrize(("sentence", "expected"), [
    # a fronted adverbial belongs to its own conjunct: the second takes the subject, not "En enero"
    ("En enero el museo abre a las diez, y en julio abre a las nueve.",
     ["En enero el museo abre a las diez.", "En julio el museo abre a las nueve."]),
    ("In January the museum opens at ten, and in July it opens at nine.",
     ["In January the museum opens at ten.", "In July the museum opens at nine."]),
])
def test_a_fronted_adverbial_stays_with_its_conjunct(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # existential "hay" has no subject to take
    ("El hotel está en el centro, y hay parada de metro en la puerta.",
     ["El hotel está en el centro.", "Hay parada de metro en la puerta."]),
    # a passive "se" after a fronted phrase: its subject ("funciones de pago") follows the verb
    ("La app es gratuita, y desde 2024 se ofrecen funciones de pago.",
     ["La app es gratuita.", "Desde 2024 se ofrecen funciones de pago."]),
    # after a consequence, a verb governing an infinitive is impersonal
    ("El puerto está cerrado, así que conviene reservar otro ferry.",
     ["El puerto está cerrado.", "Conviene reservar otro ferry."]),
    # an extraposed clause's "it" is no pronoun for the road; "it is easy to fold" is the bag
    ("The road is icy, so it is wise to drive slowly.", ["The road is icy.", "It is wise to drive slowly."]),
    ("The bag is light, and it is easy to fold.", ["The bag is light.", "The bag is easy to fold."]),
])
def test_clauses_without_the_first_subject(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # first person preterite "-é" is a verb form: a split with no subject to carry
    ("Reservé la mesa por teléfono y pagué al llegar.", ["Reservé la mesa por teléfono.", "Pagué al llegar."]),
    # conditional "-aría", "-iría"
    ("El plan bajaría los impuestos y crearía empleo.", ["El plan bajaría los impuestos.", "El plan crearía empleo."]),
    # an adjective agreeing with its noun is not the verb: the subject is "El coche nuevo"
    ("El coche nuevo consume 5 litros y emite poco.",
     ["El coche nuevo consume 5 litros.", "El coche nuevo emite poco."]),
    # a relative after a preposition: the preposition and its antecedent open the claim
    ("La ciudad tiene un puerto, del que salen ferris a Mallorca.",
     ["La ciudad tiene un puerto.", "Del puerto salen ferris a Mallorca."]),
])
def test_spanish_verb_forms_and_relatives(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("sentence", "expected"), [
    # ", y" / ", and" is the higher boundary; the pair of objects before it stays whole
    ("El bar sirve tapas y raciones, y abre hasta las dos.",
     ["El bar sirve tapas y raciones.", "El bar abre hasta las dos."]),
    ("The bar serves tapas and salads, and opens until two.",
     ["The bar serves tapas and salads.", "The bar opens until two."]),
    # gapping: the verbless conjunct repeats the predicate with its own subject and phrase
    ("Los turistas llegan en mayo y los pájaros en abril.",
     ["Los turistas llegan en mayo.", "Los pájaros llegan en abril."]),
    ("The tourists arrive in May and the birds in April.",
     ["The tourists arrive in May.", "The birds arrive in April."]),
    # an irregular participle ("sent") in a series of participles
    ("The letters are sorted, stamped and sent by post.",
     ["The letters are sorted.", "The letters are stamped.", "The letters are sent by post."]),
    # agreement: the bare "end" cannot share a third-person "-s" verb ("classes" read as one), so
    # "classes" is the plural subject's head and "begin" the verb; with an "-s" second verb the first
    # reading stays ("Anna teaches")
    ("Evening classes begin at six and end at nine.",
     ["Evening classes begin at six.", "Evening classes end at nine."]),
    ("Anna teaches music in Leeds and plays in a band.", ["Anna teaches music in Leeds.", "Anna plays in a band."]),
])
def test_coordination_boundaries(sentence, expected):
    assert split_claims(sentence) == expected


@pytest.mark.parametrize(("word", "stressed"), [
    # by hand from the rule of Spanish stress: two syllables ending in a vowel, "n" or "s" stress the
    # first; a written accent marks the stressed vowel; "au", "ua", "ia" are one syllable each
    ("aula", True), ("agua", True), ("hacha", True), ("área", True), ("águila", True),
    ("ayuda", False), ("agenda", False), ("aldea", False), ("audiencia", False), ("piscina", False),
])
def test_stressed_initial_a(word, stressed):
    from rag_eval_pipeline.core.judges.spanish_gender import _stressed_initial_a

    assert _stressed_initial_a(word) is stressed


@pytest.mark.parametrize(("sentence", "expected"), [
    # "la" with no feminine noun phrase before it (other than the subject) is an article, not a clitic
    ("El bono incluye el gimnasio y la piscina.", ["El bono incluye el gimnasio y la piscina."]),
    ("La tienda vende el pan y la leche.", ["La tienda vende el pan y la leche."]),
    # with one, the clitic reading stays
    ("El cliente recibe la factura y la firma.", ["El cliente recibe la factura.", "El cliente la firma."]),
    ("Pedro compra los libros y los lee.", ["Pedro compra los libros.", "Pedro los lee."]),
])
def test_a_clitic_needs_an_antecedent_of_its_gender(sentence, expected):
    assert split_claims(sentence) == expected
