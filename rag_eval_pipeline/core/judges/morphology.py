"""Word classes for the claim splitter: closed grammatical classes and verb morphology (es, en).

The splitter (:mod:`~rag_eval_pipeline.core.judges.coordination`) decides where one fact ends and
the next begins from sentence structure. It needs to know, for a word in its context, whether it can
be a verb, and of which kind. No list of content verbs or nouns is used: open-class words are
recognised by their endings and their neighbours; only *closed* grammatical classes are listed
(determiners, prepositions, pronouns, clitics, conjunctions, subordinators, function adverbs,
auxiliaries and modals, number words, and the irregular preterites of the few Spanish verbs whose
preterite changes stem), as any grammar of the two languages lists them.

**Spanish** (Real Academia Española, *Nueva gramática de la lengua española*, 2009: §4 verb
morphology, §16 clitics). A finite third-person form ends in a vowel or "-n": present "-a/-an",
"-e/-en"; preterite "-ó/-ió/-aron/-ieron"; imperfect "-aba/-ía"; future "-rá/-rán"; conditional
"-ría/-rían" ("-aría", "-iría" strong; "-ería" also ends nouns: "panadería"); first person
preterite "-é/-í" ("compré", "pagué", "leí": weak, as "café" ends so too). Accented endings ("-ó",
"-rá", "-aron", "-aba") are *strong* evidence; a bare "-a/-e/-an/-en" is *weak* (nouns and
adjectives end so too) and needs context: of two weak candidates after "determiner + noun", the
first is the noun's adjective when it agrees with the noun ("-a/-o/-as/-os") and a determiner or
number follows the second ("La tarifa plana cuesta 20 euros"). Not a finite verb: a
word after a determiner, preposition or number; a word accented before its last syllable
("eléctrica", "técnico": finite forms are never so stressed, except "-ía/-úa" hiatus); "-mente"
adverbs; "-ción/-sión/-dad" nouns; a capitalised word inside the sentence (a name). After a clitic
("se", "le", "lo", ...) or "no", a word with a verb ending is a verb. Non-finite forms: infinitive
"-ar/-er/-ir" (with enclitics "-arlo", "-erse"), participle "-ado/-ido" (and "-ada", "-idos", ...),
gerund "-ando/-iendo".

**English** (Quirk et al., *A Comprehensive Grammar of the English Language*, 1985, §3 verb
forms). Auxiliaries and modals are listed; "-s" (third person present) and "-ed" (past, participle)
forms are recognised by their endings after a subject or at the start of a conjunct; a bare form
counts when a determiner, number, pronoun or preposition follows it and a noun or name precedes it
("City won the league", "Tickets cost 15 dollars").
"""

from __future__ import annotations

import re
import unicodedata

from rag_eval_pipeline.core.judges.tokens import EN_MARKERS, ES_MARKERS

DET_ES = frozenset("""el la los las un una unos unas este esta estos estas ese esa esos esas aquel aquella
aquellos aquellas su sus mi mis tu tus nuestro nuestra nuestros nuestras vuestro vuestra cada todo toda
todos todas al del otro otra otros otras mucho mucha muchos muchas poco poca pocos pocas varios varias
algún alguna algunos algunas ningún ninguna cualquier ambos ambas dicho dicha mismo misma""".split())
DET_EN = frozenset("""the a an this that these those its their his her our my your each every all some any
no both either neither another other such many much few several most more less fewer""".split())
PREP_ES = frozenset("""a ante bajo con contra de desde durante en entre hacia hasta mediante para por según
sin sobre tras""".split())
PREP_EN = frozenset("""of in on at for with from to by about into over under after before between through
during without within across against along among around behind below beside beyond near off onto per
since than toward towards upon via like""".split())
#: Prepositions that are also verb forms ("para" of parar, "entre" of entrar, "sobre" of sobrar): a
#: closed class. Before another preposition ("para en Córdoba") such a word is read as the verb,
#: since a preposition takes a noun phrase, an infinitive or a clause, not a prepositional phrase
#: (RAE *Nueva gramática* §29.1); "de", "con" and "entre" after it are left to the preposition
#: ("para con", "de entre").
PREP_VERB_ES = frozenset("para entre sobre".split())
SUBJECT_PRONOUNS = frozenset("it they he she él ella ellos ellas".split())
OTHER_PRONOUNS = frozenset("""i we you me him us them itself themselves yo tú usted ustedes nosotros nosotras
vosotros esto eso aquello ello there""".split())
CLITICS_ES = frozenset("se le les lo la los las me te nos os".split())
CONJ = frozenset("y e ni o u pero sino and or nor but yet".split())
SUBORDINATORS = frozenset("""si salvo excepto porque cuando aunque mientras pues como que donde quien cuyo
if unless except because when whenever although though while whereas since where who whom whose which
once until provided""".split())
#: Function adverbs that may stand between a conjunction and its verb ("y ahora dirige", "and now runs").
ADVERBS = frozenset("""ahora siempre nunca jamás antes después luego entonces ya aún todavía también tampoco
solo sólo además incluso bastante muy más menos pronto hoy ayer aquí allí ahí bien mal casi apenas
now then also only still just often always never already later soon even again usually sometimes
recently currently once first finally really yesterday today tomorrow tonight""".split())
#: Time and sequence adverbs that open a clause as its fronted adverbial ("…, y después se hornea",
#: "…, and then is baked"): after ", y" / ", and" the carried subject goes after them.
#: Folded, as :func:`fold` writes them; each is in :data:`ADVERBS`.
FRONTED_ADVERBS = frozenset("""despues luego entonces ahora hoy ayer antes then now later today yesterday
tomorrow tonight finally""".split())
#: Adverbs that focus the phrase after them ("solo los socios", "only members"): part of a subject.
FOCUS_ADVERBS = frozenset("""solo sólo incluso también tampoco además casi apenas muy más menos bastante
only also even just too almost nearly""".split())
NEGATIONS = frozenset("no not never nunca jamás tampoco".split())
AUX_EN = frozenset("""is are was were be been being am has have had do does did can could will would shall
should may might must cannot isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't
can't couldn't won't wouldn't shouldn't mustn't 's 're 'll 'd""".split())
MODALS_EN = frozenset("can could will would shall should may might must cannot".split())
BE_EN = frozenset("is are was were be been being am".split())
#: Forms of ser, estar, haber, ir, poder, deber and soler: auxiliaries, copulas and modals.
AUX_ES = frozenset("""es son era eran fue fueron será serán sería serían sea sean está están estaba estaban
estuvo estuvieron estará estarán estaría hay ha han había habían hubo habrá habrán habría va van iba iban
irá irán puede pueden podía podían pudo pudieron podrá podrán podría podrían debe deben debía debían
debió deberá deberán debería deberían suele suelen solía solían""".split())
BE_ES = frozenset("""es son era eran fue fueron será serán sería serían está están estaba estaban estuvo
estuvieron ha han había habían""".split())
#: Spanish preterites whose stem changes ("pretéritos fuertes", RAE *Nueva gramática* §4.11):
#: (changed stem, its endings, prefixes of the verbs derived from it), for tener, hacer, decir,
#: poner, venir, querer, saber, traer, -ducir, andar and caber — morphology the endings alone
#: cannot show. Every form is generated from this one table (:data:`IRREGULAR_ES`).
_STRONG_PRETERITE_STEMS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("tuv", ("o", "ieron"), ("", "man", "ob", "con", "de", "re", "sos", "entre")),
    ("hiz", ("o",), ("", "des")),
    ("hic", ("ieron",), ("", "des")),
    ("dij", ("o", "eron"), ("", "pre", "contra", "ben")),
    ("pus", ("o", "ieron"), ("", "com", "pro", "dis", "su", "ex", "im", "o", "re", "de")),
    ("vin", ("o", "ieron"), ("", "con", "pre", "inter", "pro", "sobre")),
    ("quis", ("o", "ieron"), ("",)),
    ("sup", ("o", "ieron"), ("",)),
    ("traj", ("o", "eron"), ("", "a", "con", "dis", "ex", "re", "sus")),
    ("duj", ("o", "eron"), ("con", "pro", "re", "tra", "intro", "de", "in", "se")),
    ("anduv", ("o", "ieron"), ("",)),
    ("cup", ("o", "ieron"), ("",)),
    ("d", ("io", "ieron"), ("",)),   # dar: "dio", "dieron"
    ("v", ("io", "ieron"), ("",)),   # ver: "vio", "vieron"
)
IRREGULAR_ES = frozenset(prefix + stem + ending for stem, endings, prefixes in _STRONG_PRETERITE_STEMS
                         for prefix in prefixes for ending in endings)
NUMBER_WORDS = frozenset("""cero uno una dos tres cuatro cinco seis siete ocho nueve diez once doce trece
catorce quince veinte treinta cuarenta cincuenta sesenta setenta ochenta noventa cien ciento mil millón
millones media medio one two three four five six seven eight nine ten eleven twelve twenty thirty forty
fifty sixty seventy eighty ninety hundred thousand million half dozen""".split())
OTHER_FUNCTION_ES = frozenset("que como donde cuando quien cual cuales cuyo cuya se no ni y e o u".split())
FUNCTION_ES = DET_ES | PREP_ES | CLITICS_ES | CONJ | ADVERBS | NEGATIONS | OTHER_FUNCTION_ES | SUBORDINATORS \
    | frozenset(SUBJECT_PRONOUNS | OTHER_PRONOUNS)
FUNCTION_EN = DET_EN | PREP_EN | CONJ | ADVERBS | NEGATIONS | SUBORDINATORS | SUBJECT_PRONOUNS | OTHER_PRONOUNS \
    | frozenset("what which who how why where there here yes so as up down out off away back".split())

_ACCENTED = "áéíóú"
_ES_STRONG = re.compile(r"(?:ó|ió|aron|ieron|aba|aban|ará|erá|irá|arán|erán|irán|aría|iría|arían|erían|irían)$")
#: First person singular preterite, "-é" ("compré", "viajé") and "-í" ("viví", "recibí"): weak, since
#: a few nouns end so too ("café", "esquí"); after a determiner they are read as nouns.
_ES_FIRST_PRETERITE = re.compile(r"(?:[^aeiouáéíóú]|[gq]u|e)[éí]$")  # "compré", "pagué", "leí"
#: "-ía/-ían" (imperfect, conditional) are also the endings of "batería", "garantía", "cafetería".
_ES_MID = re.compile(r"(?:ía|ían)$")
_ES_SECOND_PERSON = re.compile(r"(?:as|es)$")
_ES_WEAK = re.compile(r"(?:a|e|an|en)$")
_ES_INFINITIVE = re.compile(r"(?:ar|er|ir|ír)(?:se|lo|la|los|las|le|les)?$")
_ES_PARTICIPLE = re.compile(r"(?:ado|ada|ados|adas|ido|ida|idos|idas)$")
_ES_GERUND = re.compile(r"(?:ando|iendo|yendo)(?:se|lo|la|le)?$")
_ES_NOT_VERB = re.compile(r"(?:mente|ción|sión|dad|tad|tud|umbre|aje|ista|ismo|ante|ente|iente|ble)$")


def fold(word: str) -> str:
    """``word`` case folded (str.casefold) with its accents stripped (NFKD, combining marks
    removed): "Está" → "esta". Output: str; never raises."""
    w = unicodedata.normalize("NFKD", word.casefold())
    return "".join(c for c in w if not unicodedata.combining(c))


def _early_accent(w: str) -> bool:
    """An accented vowel before the last syllable, other than the "-ía/-úa/-íe" hiatus: never a finite
    verb ("eléctrica", "música", "técnico"; but "envía", "continúa", "está" are)."""
    idx = [i for i, ch in enumerate(w) if ch in _ACCENTED]
    if not idx:
        return False
    i = idx[-1]
    tail = w[i + 1:]
    if w[i] in "íú" and tail[:1] in ("a", "e", "o") and len(tail) <= 2:
        return False  # hiatus: envía, continúa, varían
    vowels_after = sum(ch in "aeiou" for ch in tail)
    return vowels_after >= 2 or (vowels_after == 1 and not tail.endswith(("n", "s")) and len(tail) > 1
                                 and tail[-1] not in "aeiou")


def es_form(word: str) -> str | None:
    """Morphological class of a Spanish word in isolation: "aux", "strong", "mid", "weak" (finite
    candidates, by decreasing certainty), "infinitive", "participle", "gerund", or None."""
    w = word.casefold()
    if w in AUX_ES:
        return "aux"
    if w in IRREGULAR_ES:
        return "strong"
    f = fold(w)
    if w in FUNCTION_ES or f in NUMBER_WORDS or len(w) < 2:
        return None
    if _early_accent(w):
        return None
    if _ES_GERUND.search(w):
        return "gerund"
    if _ES_PARTICIPLE.search(w) and len(w) > 4:
        return "participle"
    if _ES_INFINITIVE.search(w) and len(w) > 3:
        return "infinitive"
    if _ES_NOT_VERB.search(w):
        return None
    if _ES_STRONG.search(w) and len(w) > 2:
        return "strong"
    if _ES_MID.search(w):
        return "mid"
    if _ES_WEAK.search(w) and len(w) > 2:
        return "weak"
    if _ES_FIRST_PRETERITE.search(w) and len(w) > 2:
        return "weak"
    if w.endswith(("amos", "emos", "imos")) and len(w) > 5:
        return "weak"  # first person plural: "enviamos", "ofrecemos"
    return None


def en_form(word: str) -> str | None:
    """Morphological class of an English word in isolation: "aux", "modal", "ed", "s", "ing",
    "bare" (any other lower-case open-class word) or None (function word, number, name)."""
    w = word.casefold().replace("’", "'")
    if w in MODALS_EN:
        return "modal"
    if w in AUX_EN:
        return "aux"
    if w in FUNCTION_EN or w in NUMBER_WORDS or not w.isalpha() and "-" not in w:
        return None
    if w.endswith("ed") and len(w) > 3:
        return "ed"
    if w.endswith("ing") and len(w) > 4:
        return "ing"
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "ous", "ics")) and len(w) > 2:
        return "s"
    if w.endswith("ly") and len(w) > 4:
        return None  # adverb
    return "bare" if len(w) > 2 else None


def is_number(word: str) -> bool:
    """True when ``word`` starts with a digit or is a number word (:data:`NUMBER_WORDS`, es and
    en). Never raises."""
    return word[:1].isdigit() or fold(word) in NUMBER_WORDS


def is_name(words: list[str], i: int) -> bool:
    """True when ``words[i]`` is a name: a capitalised word that does not start the text, or a
    letter-digit code ("A1") anywhere. Input: the clause's words and an index into them (IndexError
    outside). Output: bool."""
    w = words[i]
    if any(ch.isdigit() for ch in w) and any(ch.isalpha() for ch in w):
        return True
    return i > 0 and w[:1].isupper()


def _function(w: str, spanish: bool) -> bool:
    f = w.casefold()
    return f in (FUNCTION_ES if spanish else FUNCTION_EN)


def finite_at(words: list[str], i: int, spanish: bool, *, conjunct_start: bool = False) -> str | None:
    """How surely ``words[i]`` is a finite verb in its context: "strong", "weak" or None.

    ``conjunct_start``: the word opens a conjunct (after "y", "and", a comma; clitics, negation and
    function adverbs skipped by the caller), where a weak form is read as a verb.
    Rules: module docstring.
    """
    w = words[i]
    low = w.casefold()
    p = i - 1
    while p > 0 and words[p].casefold() in ADVERBS and words[p].casefold() not in ("no", "not") \
            and words[p - 1].casefold() not in PREP_ES | PREP_EN:
        p -= 1  # "it also sells", "ahora dirige": the word before the adverb decides
    prev = words[p].casefold() if p >= 0 else ""
    nxt = words[i + 1].casefold() if i + 1 < len(words) else ""
    if is_name(words, i) and not (i > 0 and low in (AUX_ES | AUX_EN)):
        return None
    if spanish:
        form = es_form(w)
        if low in PREP_VERB_ES and nxt in PREP_ES and nxt not in ("de", "con", "entre") \
                and (i > 0 or conjunct_start):
            form = "weak"  # "y para en Córdoba": a preposition cannot govern a preposition, so a verb
        if form is None and (i == 0 or prev in ("te", "no")) and _ES_SECOND_PERSON.search(low) and len(low) > 4 \
                and not _early_accent(low) and (nxt in PREP_ES or nxt in DET_ES or nxt[:1].isdigit()):
            return "weak"  # "Dispones de 30 días", "tienes dos opciones": second person
        if form is None or form in ("infinitive", "participle", "gerund"):
            return None
        if prev in ("se", "me", "te", "nos", "le", "les", "lo", "os") or prev in NEGATIONS:
            return "strong"
        if prev in ("la", "las", "los") and form in ("aux", "strong"):
            return "strong"  # "la ganó": a clitic
        if prev in ("la", "las", "los") and i >= 2 and (words[i - 2].casefold() in CONJ | {","}
                                                      or finite_at(words, i - 2, True) is None and
                                                      not _function(words[i - 2], True)) \
                and (nxt[:1].isdigit() or nxt in DET_ES or nxt in PREP_ES or nxt in SUBORDINATORS or not nxt):
            return "strong"  # "y la devuelve si ...", "y la conserva 30 días": clitic + verb
        if prev in DET_ES or prev in PREP_ES:
            return None
        if form in ("aux", "strong"):
            return "strong"
        if prev[:1].isdigit() or fold(prev) in NUMBER_WORDS:
            return None
        if conjunct_start:
            return "weak"
        if i == 0:
            # a sentence-initial verb ("Incluye el cable") has a complement; a name ("Ana y Luis",
            # "Sevilla, que ...", "Marta estudió") does not take one
            return "weak" if nxt and nxt not in CONJ and finite_at(words, 1, True) is None else None
        if _function(words[p], True) and prev not in ("que",) and prev not in SUBJECT_PRONOUNS:
            return None
        return "weak"
    form = en_form(w)
    if form is None or form == "ing":
        return None
    if form in ("aux", "modal"):
        return None if prev in DET_EN else "strong"
    if prev in DET_EN or prev in PREP_EN:
        return None
    if (prev[:1].isdigit() or prev in NUMBER_WORDS) and form != "ed" and not _after_number_modifier(words, i, p):
        return None
    if prev in SUBJECT_PRONOUNS or prev in ("i", "we", "you"):
        return "strong"
    starts_complement = (nxt in DET_EN or nxt[:1].isdigit() or nxt in NUMBER_WORDS or nxt in PREP_EN
                         or nxt in ("it", "them", "him", "her", "us", "me", "you", "up", "down", "out", "off",
                                    "away", "back", "not") or nxt in ADVERBS)
    if conjunct_start:
        if form == "ed":
            return "strong"
        if form == "s":
            return "weak"
        return "weak" if starts_complement or not nxt else None
    if i == 0:
        return None
    if prev in ("them", "us", "these", "those") and p > 0 and words[p - 1].casefold() == "of" and form == "bare":
        return "weak"  # "most of them work"
    if _function(words[p], False):
        return None
    if form == "ed":
        return "strong"
    if form == "s":
        return "weak"  # of two in a row ("sales figures rose") first_verb takes the later one
    # a bare form after a noun or name, before a complement: "City won the league"; after a plural
    # noun a preposition may follow ("customers pay for returns")
    if starts_complement:
        return "weak"  # first_verb meets it before any object, so "the law came into force" is a verb
    if _after_plural_noun_phrase(words, i, p):
        return "weak"
    return "weak" if i + 1 < len(words) and words[i + 1][:1].isupper() and words[i - 1][:1].isupper() else None


_POSSESSIVE_EN = frozenset("my your his her its our their".split())


def _after_plural_noun_phrase(words: list[str], i: int, p: int) -> bool:
    """English agreement: a bare form after the plural noun phrase that opens the clause with a
    determiner other than a possessive ("the", "most", adjectives between: "The tablets contain
    lactose", "The new trains carry bikes") agrees
    with it as a present-tense verb when an open-class word, its object, follows; not when that word
    is itself an "-s" verb before its complement ("The sports bag costs 20 euros": "costs" is the
    verb). Quirk et al. 1985, §10.34 (subject-verb concord)."""
    if p != i - 1 or en_form(words[p]) != "s" or words[p][:1].isupper() or i + 1 >= len(words):
        return False
    k = p - 1
    while k >= 0 and k > p - 3 and en_form(words[k]) == "bare" and not words[k][:1].isupper():
        k -= 1  # adjectives before the noun
    if k != 0 or words[0].casefold() not in DET_EN or words[0].casefold() in _POSSESSIVE_EN:
        return False  # the clause's opening noun phrase, not a possessive's ("his friends hermione …")
    nxt = words[i + 1]
    if nxt[:1].isupper() or en_form(nxt) not in ("bare", "s"):
        return False
    after = words[i + 2].casefold() if i + 2 < len(words) else ""
    return not (en_form(nxt) == "s" and (after in DET_EN or after[:1].isdigit() or after in NUMBER_WORDS
                                         or after in PREP_EN))


def _after_number_modifier(words: list[str], i: int, p: int) -> bool:
    """English agreement: a bare form after the plural noun that opens the clause and a phrase that
    ends in a number ("Customers under 25 pay no fees", "Members over 60 pay half price") agrees with
    that noun as a present-tense verb when a complement follows (any word but a name, a
    conjunction, an auxiliary or a modal). The number is the preposition's object, not a quantity of
    the bare word. Quirk et al. 1985, §10.34 (subject-verb concord)."""
    if p != i - 1 or p < 2 or words[p - 1].casefold() not in PREP_EN or i + 1 >= len(words):
        return False
    noun = p - 2
    if en_form(words[noun]) != "s" or words[noun][:1].isupper() and noun > 0:
        return False
    k = noun - 1
    while k >= 0 and k > noun - 3 and en_form(words[k]) == "bare" and not words[k][:1].isupper():
        k -= 1  # adjectives before the noun
    if k >= 0 and (k != 0 or words[0].casefold() not in DET_EN or words[0].casefold() in _POSSESSIVE_EN):
        return False  # the clause's opening noun phrase
    nxt = words[i + 1]
    return not nxt[:1].isupper() and nxt.casefold() not in CONJ and en_form(nxt) not in ("aux", "modal")


def plural_head_before_auxiliary(words: list[str], k: int, i: int) -> bool:
    """English agreement: an "-s" word at ``k`` followed, across adverbs and bare or "-ed" modifiers
    only, by a finite auxiliary or modal at ``i`` is a plural noun, the auxiliary's subject ("but
    lockers are not included", "months already paid are not refunded", "transfers made abroad can
    take"): a third-person "-s" verb is never followed by a finite auxiliary (Quirk et al. 1985,
    §3.21: one finite verb per verb phrase). Input: a clause's words and two indices into them,
    ``k`` < ``i`` (IndexError outside). Output: bool."""
    if en_form(words[k]) != "s" or en_form(words[i]) not in ("aux", "modal") \
            or fold(words[i]) in ("be", "been", "being"):
        return False
    return all(fold(w) in ADVERBS or en_form(w) in ("bare", "ed") and not w[:1].isupper() for w in words[k + 1:i])


#: Spanish clitics that are never articles: before a finite verb they mark it ("se fundó").
_PROCLITICS = frozenset("se le les me te nos os".split())


def first_verb(words: list[str], spanish: bool) -> int | None:
    """Index of the first finite verb of a clause (module docstring), or None. A weak candidate right
    before a strong one is not taken ("la tienda online se cierra"), nor one right before a clitic
    and its verb ("Acme se fundó": clitics precede the finite verb, RAE *Nueva gramática* §16)."""
    for i in range(len(words)):
        got = finite_at(words, i, spanish)
        if got is None:
            continue
        if got == "weak" and i + 1 < len(words):
            nxt = finite_at(words, i + 1, spanish)
            if nxt == "strong":
                continue
            if spanish and i + 2 < len(words) and words[i + 1].casefold() in _PROCLITICS \
                    and finite_at(words, i + 2, True) is not None:
                continue  # "Acme se fundó": a clitic goes before its verb, so "Acme" is not one
            if spanish and nxt is not None and _agreeing_adjective(words, i):
                continue
        return i
    return None


def _agreeing_adjective(words: list[str], i: int) -> bool:
    """Spanish "determiner + noun + W + verb + complement": W, ending as the noun ends ("-a", "-o",
    "-as", "-os": gender and number agreement), is the noun's adjective and the next word the verb,
    when a determiner or a number follows that word ("La tarifa plana cuesta 20 euros", "El coche
    nuevo consume 5 litros"; RAE *Nueva gramática* §13: the adjective agrees with its noun)."""
    if i < 2 or i + 2 >= len(words) or words[i - 2].casefold() not in DET_ES or _function(words[i - 1], True):
        return False
    after = fold(words[i + 2])
    if not (after in DET_ES and after not in ("al", "del") or is_number(words[i + 2])):
        return False
    noun, adj = fold(words[i - 1]), fold(words[i])
    return any(noun.endswith(e) and adj.endswith(e) for e in ("as", "os", "a", "o"))


#: Closed-class words of one language only (determiners, prepositions, clitics, conjunctions,
#: relatives), folded; words of both ("a", "no", "me") count for neither.
_ES_ONLY = frozenset(DET_ES | PREP_ES | CLITICS_ES | frozenset(
    "y e ni o u pero sino que como donde cuando quien cual porque aunque mientras".split()))
_EN_ONLY = frozenset(DET_EN | PREP_EN | frozenset("and or nor but yet what which who whom whose".split()))
_ES_CLOSED = frozenset(ES_MARKERS | _ES_ONLY) - (EN_MARKERS | _EN_ONLY)
_EN_CLOSED = frozenset(EN_MARKERS | _EN_ONLY) - (ES_MARKERS | _ES_ONLY)


def is_spanish(words: list[str]) -> bool:
    """True when more of ``words`` (surface words, folded here) are Spanish than English
    closed-class words: :data:`~rag_eval_pipeline.core.judges.tokens.ES_MARKERS`, ``EN_MARKERS``
    and the determiners, prepositions, clitics and conjunctions of this module, a word of both
    languages ("a", "no") counting for neither ("Ana viaja a Lima, pero su hermano ..." is Spanish
    by "pero" and "su"); ties: English."""
    es = en = 0
    for w in words:
        f = fold(w)
        es += f in _ES_CLOSED
        en += f in _EN_CLOSED
    return es > en
