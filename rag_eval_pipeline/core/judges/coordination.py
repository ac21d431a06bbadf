"""Split one sentence into self-contained claims at coordinated facts (Spanish and English, by structure).

A sentence that joins two facts ("El plazo es de 15 días, y los gastos los paga la tienda") is two
claims: a judge that checks each fact against the context sentence that states it must not need both
in one sentence. The decision is made from the sentence's structure: clause boundaries, conjunctions,
the verb morphology of :mod:`~rag_eval_pipeline.core.judges.morphology` (endings and neighbours, no
list of content verbs or nouns) and the subject carried over. :func:`split_coordinated` applies,
recursively, the first rule that fits:

1. **Contrast and consequence** ("pero", "aunque", "mientras que", ", así que", ", por lo que",
   "but", "although", "though", "whereas", ", while", ", so", "yet"): split when the left side holds a
   finite verb and the right side is a clause (its own subject and verb) or a verb phrase (it starts
   with a finite verb, after negation, clitics or a function adverb).
2. **Relative clauses after a comma** (", que", ", which", ", who", ", donde", ", where", ", lo
   cual"): the relative becomes a claim about its antecedent, the noun phrase that ends the left side
   from its last determiner (an indefinite article becomes definite; a trailing "en 1937" / "in 1889"
   is not part of it; a noun phrase that starts with a number gets a definite article); "donde" /
   "where" put "en" / "in" + antecedent at the end; "lo cual" becomes "Esto"; a Spanish relative after
   a preposition (", en la que", ", al que") puts the preposition and the last noun phrase in front
   ("…, del que salen ferris" → "Del puerto salen ferris"). A relative between
   two commas before the main verb ("Sevilla, que fue sede ..., tiene ...") is taken out of the main
   clause the same way.
3. **Coordination** ("y", "e", "ni", "and", with or without a comma, and a series "A, B y C"):
   every conjunct after the first that starts with a finite verb is a verb phrase sharing the first
   conjunct's subject — the words before its first verb (fronted adverbials included) — and, when
   the conjunct's verb is an infinitive or participle, the first conjunct's auxiliary or modal too
   ("pueden reservar ... y pagar" → "pueden pagar"; "was built ... and restored" → "was restored";
   not after "born"). A conjunct with its own subject and verb is a clause. A series is split when
   every conjunct is a verb phrase or a clause; the series is a list of objects instead (rule 4) when
   every conjunct starts with a weak verb candidate, is short, and the word after the first verb is an
   open-class word too ("incluye asistencia..., coche ... y cobertura ..."). After a copula a bare
   word is a predicate adjective ("es cómoda y barata"); in English a bare form cannot follow a
   third-person "-s" verb unless a modal chain is shared ("lets you check ... and make ...").
   "ni" carries the negation ("no imprime ... ni escanea" → "no escanea"). English "nor" is not a
   split point: its clause is inverted ("nor was any placebo given") or pairs with "neither"
   ("neither A nor B changed"), so a split part would lose the negation. ", y" / ", and" is tried
   before a bare "y" / "and": the comma marks the higher boundary ("vende pan y bollos, y reparte
   ..."). A one-word conjunct that only a weak verb reading would make a verb phrase, after a first
   conjunct whose verb has its object, is a second object ("vende pan y leche", "sells bread and
   cakes"). In a series of participles after "be", a bare form is an irregular participle ("are
   sorted, stamped and sent"). English agreement: a bare verb conjunct cannot share a third-person
   "-s" verb, so an "-s" word followed by a bare word opening a complement is then the plural
   subject's head ("Summer hours start in June and end in September"). **Gapping** (Quirk et al.
   1985, §13.92): a verbless conjunct "NP + prepositional phrase" whose preposition heads a phrase
   of the first predicate repeats that predicate ("Los turistas llegan en mayo y los pájaros en
   abril" → "Los pájaros llegan en abril"), the NP replacing the subject or the object whose
   determiner or head word it shares.
4. **Lists** of three or more short items (at most four words, no strong verb) ending the sentence,
   joined by commas and a final "y" / "e" / "o" / "u" / "and" / "or": each item becomes a claim with
   the words before the list, which must hold a verb ("Incluye el cable, la correa y la guía").
5. **A period and its start** in a copular sentence whose subject names the period ("El plazo es de
   30 días naturales desde la entrega"): the length and the start are two facts, "El plazo es de 30
   días naturales" and "El plazo se cuenta desde la entrega" ("The period is 30 days" / "The period
   counts from delivery").

Agreement decides more of rule 3 (each check in :mod:`~rag_eval_pipeline.core.judges.agreement`):
an "-s" word followed by its object after "and" is a verb, not a list item ("treats emergencies and
runs tests"; in Spanish a word followed by one that does not agree in number: "vende pan y hace
bollos"); a second conjunct that shows no number (a modal, a past form) or a plural one lets a bare
noun phrase be the plural subject ("Young drivers pay more and must carry ..."); a bare form after
a passive and "and" is an irregular participle ("is sliced ... and sold ..."); a Spanish verb after
a fronted phrase that disagrees in number with the subject that would be carried, with a noun
phrase after it, has its own subject ("..., y en él viven truchas"); and gapping takes a name as
the remnant of a name ("Ana visitó Roma en mayo y París en junio"). Rule version 9 adds: an English
"-s" word followed by a finite auxiliary or modal is a plural subject ("but lockers are not
included"); in an English series whose other conjuncts are verb phrases, a conjunct that would be a
clause with a bare subject of their verbs' form is a verb phrase too ("…, avoids obstacles and
resists wind up to 40 km/h"); a Spanish preposition that is also a verb form, before another
preposition, is the verb ("y para en Córdoba"). Rule version 10 adds: in "X y Y y <verb phrase>"
the first "y" joins two nouns and the second closes the series ("vale para el metro y el autobús y
se recarga ..."); a Spanish "la" + weak form that ends a conjunct is a clitic and a verb only when a
feminine singular noun phrase other than the subject can be its antecedent ("incluye el gimnasio y
la piscina" is a noun pair; "compra la fruta y la lava" is not); an English bare form after the
plural noun that opens the clause and a phrase ending in a number is the verb ("Customers under 25
pay no fees and ...").

Rules 1 and 3 live here; rules 2, 4 and 5 in :mod:`~rag_eval_pipeline.core.judges.relatives`; the
clause pieces they share (first verb, subject, a conjunct's kind) in
:mod:`~rag_eval_pipeline.core.judges.clauses`; the agreement checks in
:mod:`~rag_eval_pipeline.core.judges.agreement`.

**Self-contained claims.** A clause whose subject is a pronoun ("it", "she", "él") gets the first
conjunct's subject in its place; a possessive at the start of its subject ("its", "their", "su",
"sus") becomes the subject's genitive ("its battery" → "the speaker's battery"; "su batería" → "la
batería del altavoz"; the article from what agrees with the head noun in the answer, a determiner
before it elsewhere or a participle or predicate after it, never the noun of its complement ("su
tarjeta de débito es gratuita" → "La tarjeta de débito"), else from the noun's ending; a feminine
noun with a stressed initial "a" takes "el": "el aula"). What is carried is the subject, without
the first conjunct's adverbs before its verb ("La aplicación ya no ..., y su sistema ..." → "de la
aplicación"; "The app no longer ..." → "The app's") and without its fronted phrases when the
second conjunct has its own ("En enero el
museo abre ..., y en julio abre ..." → "En julio el museo abre ..."; "Yesterday it ..." gives "it").
Nothing is carried into a clause with no subject to take: existential "hay"; after a fronted
phrase, a passive "se" whose subject follows the verb ("y desde 2024 se ofrecen funciones"); after
"así que" / "por lo que" / "so", a full verb governing an infinitive ("conviene reservar") or "se" +
modal + infinitive ("no se debe conducir"); after "so", an imperative ("so drive slowly", "so do not
take them"); a Spanish passive "se" whose verb disagrees in number with the subject that would be
carried ("pero no se aceptan devoluciones"); an extraposed "it" ("it is wise to drive slowly", but
not "it is easy to fold", whose infinitive has no object of its own). A pronoun after a
preposition ("en ella", "with it") is not a subject. After ", y" / ", and", a time adverb opening
the clause goes before the carried subject ("…, y luego se hornea" → "Luego el pan se hornea").

**Kept whole.** A question; a sentence that starts with a condition or concession ("Si", "Cuando", "If",
"Unless", "Aunque", ...); coordination after a condition, exception or cause in the same clause
("salvo", "excepto", "si", "porque", "a menos que", "siempre que", "unless", "except", "if",
"because", "provided", "as long as", "when", "while" without a comma), which stays with the fact it
restricts; ranges ("entre los días 31 y 45", "between 0 °C and 40 °C"); amounts ("dos horas y
media"); two nouns or names ("cable y cargador"); a verbless conjunct ("but not other speakers");
restrictive relatives; anything inside brackets or quotes.
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.judges.agreement import (
    _agreement,
    _chain_index,
    _imperative,
    _inverted_subject,
    _parallel_kinds,
    _passive_se_own_subject,
    _plural_subject_reading,
    _shared_prefix,
    _verb_and_object,
    _vp_ok,
)
from rag_eval_pipeline.core.judges.clauses import (  # noqa: F401 - looks_verbal re-exported
    _INTERJECTION,
    _LANG,
    _SENTENCE,
    DETERMINERS,
    _cap,
    _conjunct_kind,
    _impersonal,
    _join_vp,
    _lower_first,
    _object_index,
    _own_subject,
    _spanish,
    _spans,
    _subject_only,
    _subject_prefix,
    _top_commas,
    _top_level,
    _verb_group_start,
    _verb_then_infinitive,
    _words,
    looks_verbal,
)
from rag_eval_pipeline.core.judges.morphology import (
    FRONTED_ADVERBS,
    NUMBER_WORDS,
    PREP_EN,
    PREP_ES,
    en_form,
    es_form,
    finite_at,
    fold,
    is_name,
    is_spanish,
)
from rag_eval_pipeline.core.judges.relatives import _split_list, _split_origin, _split_relative

_END = re.compile(r"[\s.!?…]+$")
_OPENING_SUBORDINATOR = re.compile(
    r"^\s*(?:si|cuando|aunque|mientras|salvo|excepto|a menos que|siempre que|if|when|whenever|unless|"
    r"although|though|while|because|porque|except|provided|as long as|once)\b", re.IGNORECASE)
_BLOCKERS = re.compile(
    r"\b(?:si|salvo|excepto|porque|cuando|a menos que|siempre que|if|unless|except|because(?! of)|provided|"
    r"as long as|when|whenever)\b|(?<!,)\s(?:while|mientras)\b", re.IGNORECASE)
_CONSEQUENCE = frozenset(("asi que", "por lo que", "so"))
_CONTRAST = re.compile(r",?\s+(pero|but|aunque|although|though|mientras que|whereas|yet)\s+|"
                       r",\s+(while|así que|asi que|por lo que|so)\s+", re.IGNORECASE)
_COORD = re.compile(r",?\s+(y|e|ni|and)\s+", re.IGNORECASE)
_RANGE_OPEN = re.compile(r"\b(?:entre|between)\s+(?:\S+\s+){0,3}\S*\d\S*\s*$", re.IGNORECASE)
_AMOUNT_HALF = re.compile(r"^(?:media|medio|a half)\b", re.IGNORECASE)


def _blocked(text: str, pos: int) -> bool:
    """True when a condition, exception or cause opens before ``pos`` in the same clause (no comma
    between them): what follows belongs to that subordinate clause."""
    start = text.rfind(",", 0, pos) + 1
    return bool(_BLOCKERS.search(text, start, pos)) if pos > start else False


def _finish(s: str, end: str) -> str:
    s = _cap(s)
    return s + end if s and s[-1] not in ".!?…" else s


def split_coordinated(sentence: str, context: str | None = None) -> list[str]:
    """Claims of one sentence (rules in the module docstring), in text order.

    Input: one sentence (a claim of :func:`~rag_eval_pipeline.core.judges.claims.split_claims`);
    ``context``, the text it comes from (default: the sentence), where the gender of a Spanish noun
    is looked for ("la torre" in another sentence gives "su torre" the article "la").
    Output: a non-empty list of strings; each starts with a capital letter and keeps the
    sentence's final punctuation; ``[sentence]`` when no rule applies. Never raises.
    """
    m = _END.search(sentence)
    end = sentence[m.start():].strip() if m else ""
    body = sentence[: m.start()] if m else sentence
    if not body.strip() or "?" in end:
        return [sentence]  # a question states no fact: it stays one claim (judged as a question)
    _LANG.append(is_spanish(_words(body)))
    _SENTENCE.append(body if context is None else context)
    try:
        if _OPENING_SUBORDINATOR.match(body):
            parts = [body]
        else:
            parts = _split(body, depth=0)
    finally:
        _LANG.pop()
        _SENTENCE.pop()
    if len(parts) <= 1:
        return [sentence]
    return [_finish(p, end or "") for p in parts if p.strip()]


def _split(text: str, depth: int) -> list[str]:
    if depth > 8:
        return [text]
    for finder in (_split_contrast, _split_relative, _split_coordination, _split_list, _split_origin):
        got = finder(text)
        if got is not None and len(got) > 1:
            out: list[str] = []
            for g in got:
                out.extend(_split(g, depth + 1))
            return out
    return [text]


# --- rule 1: contrast and consequence -----------------------------------------------------------


def _split_contrast(text: str) -> list[str] | None:
    for m in _CONTRAST.finditer(text):
        if not _top_level(text, m.start()) or _blocked(text, m.start()):
            continue
        left, right = text[: m.start()], text[m.end():]
        if not left.strip() or not right.strip():
            continue
        consequence = fold(m.group(m.lastindex or 1)) in _CONSEQUENCE
        got = _two_parts(left, right, consequence=consequence)
        if got is not None:
            return got
    return None


def _two_parts(left: str, right: str, negate: bool = False, consequence: bool = False,
               participles: bool = False, comma: bool = False) -> list[str] | None:
    """[left, right made self-contained] when ``left`` has a verb and ``right`` is a clause or verb
    phrase; else None. ``consequence``: ``right`` follows "así que", "por lo que", "so", where a
    verb governing an infinitive is impersonal ("conviene salir"). ``participles``: ``right`` follows
    "and" / "y", where a bare form after a passive ("is sliced by hand and sold in bags") is an
    irregular participle (after "but" it is a predicate adjective: "is closed on Mondays but open
    on holidays"). ``comma``: ``right`` follows ", y" / ", and", a clause boundary, where a time
    adverb that opens ``right`` is the clause's fronted adverbial and the subject is carried after
    it ("…, y después se hornea" → "Después la masa se hornea")."""
    pre = _subject_prefix(left)
    if pre is None:
        return None
    kind, strength, vi = _conjunct_kind(right)
    if kind == "NP":
        return None
    prefix, lvi, lwords = pre
    if kind == "CLAUSE":
        return [left, _own_subject(right, prefix)]
    rwords = _words(right)
    if _impersonal(right, strength == "fronted") or consequence and (
            _verb_then_infinitive(right) or _imperative(rwords)):
        return [left, right]
    if strength != "fronted" and _passive_se_own_subject(rwords, vi, _subject_only(prefix)):
        return [left, right]
    if strength == "fronted":
        spans = _spans(right)
        words = [s.group() for s in spans]
        gs = _verb_group_start(words, vi, _spanish(words))
        subject = _subject_only(prefix)
        if not subject or _inverted_subject(words, vi, subject):
            return [left, right]
        return [left, right[: spans[gs].start()] + _lower_first(subject) + " " + right[spans[gs].start():]]
    if participles and not _spanish(lwords):
        k = _chain_index(lwords, lvi, "bare")
        participles = k is not None and en_form(lwords[k]) == "ed"  # a passive: "is sliced", not "are smaller"
    if not _vp_ok(lwords, lvi, right, strength, participles):
        plural = _plural_subject_reading(left, lwords, lvi, strength)
        if plural is None or not _vp_ok(lwords, plural[1], right, strength):
            return None
        prefix, lvi = plural
    elif (plural := _plural_subject_reading(left, lwords, lvi, _agreement(right))) is not None:
        prefix, lvi = plural
    shared = _shared_prefix(left, prefix, lwords, lvi, right, strength)
    rspans = _spans(right)
    n = 0
    while comma and shared and n < len(rspans) - 1 and fold(rspans[n].group()) in FRONTED_ADVERBS:
        n += 1
    if n:  # "…, y después se hornea": the time adverb before the carried subject
        rest = right[rspans[n].start():]
        return [left, right[: rspans[n].start()].strip() + " " + _lower_first(_join_vp(shared, rest, negate))]
    return [left, _join_vp(shared, right, negate)]


# --- rule 3: coordination ------------------------------------------------------------------------


def _split_coordination(text: str) -> list[str] | None:
    # ", y" / ", and" first: the comma marks the higher boundary ("vende pan y bollos, y reparte ...")
    matches = sorted(_COORD.finditer(text), key=lambda m: (not m.group().startswith(","), m.start()))
    for m in matches:
        if not _top_level(text, m.start()) or _blocked(text, m.start()):
            continue
        left, right = text[: m.start()], text[m.end():]
        if not left.strip() or not right.strip():
            continue
        if right[:1].isdigit() or _RANGE_OPEN.search(left) or _AMOUNT_HALF.match(right):
            continue
        negate = m.group(1).casefold() == "ni"
        if len(_words(left)) < 2:
            continue  # "Ana y Luis trabajan": a subject pair
        if _noun_pair_before_vp(right):
            continue  # "incluye el gimnasio y la piscina y se renueva": the later "y" closes the series
        segs = _top_commas(left)
        if len(segs) == 1 and _object_pair(left, right):
            continue  # "vende pan y leche", "sells bread and cakes": two objects of one verb
        if len(segs) >= 2 and _conjunct_kind(right)[0] != "CLAUSE" and (
                _conjunct_kind(segs[-1])[0] == "NP" or _list_like(segs[0], segs[1:] + [right])):
            continue  # "contiene el altavoz, el cable y la funda": a list (rule 4)
        series = _series(left, right, negate)
        if series is not None:
            return series
        gapped = _gapped(left, right) if not negate and len(segs) == 1 else None
        if gapped is not None:
            return gapped
        if not negate and _list_like(left, [right], max_words=2):
            continue
        # a bare form after "and" in a passive ("is sliced ... and sold ...") is an irregular participle
        got = _two_parts(left, right, negate, participles=True, comma=m.group().startswith(","))
        if got is not None:
            return got
    return None


def _noun_pair_before_vp(right: str) -> bool:
    """True when the conjunct after a coordinator is a noun phrase followed by another coordinator
    and a verb phrase with no subject of its own ("el autobús y se recarga ...", "the bus and can be
    topped up ..."): "X y Y y <verb phrase>" joins two nouns with its first "y" and closes a series
    of verb phrases with its second, so the first is not a clause boundary. Also when the conjunct
    reads as a clause whose subject would end in the coordinator ("la piscina y se renueva": a noun
    phrase never ends in "y")."""
    kind, _, vi = _conjunct_kind(right)
    if kind == "CLAUSE":
        words = _words(right)
        gs = _verb_group_start(words, vi, _spanish(words))
        if 0 < gs < len(words) and fold(words[gs - 1]) in ("y", "e", "and"):
            return True
    for m in _COORD.finditer(right):
        if not _top_level(right, m.start()):
            continue
        middle, after = right[: m.start()], right[m.end():]
        return _conjunct_kind(middle)[0] == "NP" and _conjunct_kind(after)[0] == "VP"
    return False


def _gapped(left: str, right: str) -> list[str] | None:
    """Gapping: a verbless conjunct "NP + prepositional phrase" whose preposition heads a phrase of
    the first conjunct's predicate repeats that predicate with its own NP and phrase ("Los alumnos
    de primero tienen clase por la mañana y los de segundo por la tarde" → "Los de segundo tienen
    clase por la tarde"; Quirk et al. 1985, §13.92). The NP replaces the subject when it shares the
    subject's determiner or head word, the object when it shares the object's; a name replaces the
    object when the object is a name ("Ana visitó Roma en mayo y París en junio" → "Ana visitó París
    en junio"), else the subject when that is a name ("Acme was founded in 1985 and Globex in 1990"
    → "Globex was founded in 1990"); otherwise None."""
    pre = _subject_prefix(left)
    if pre is None or not pre[0]:
        return None
    prefix, lvi, lwords = pre
    rspans = _spans(right)
    rwords = [m.group() for m in rspans]
    spanish = _spanish(lwords)
    preps = (PREP_ES if spanish else PREP_EN) - {"de", "of"}
    cut = next((i for i, w in enumerate(rwords) if i > 0 and w.casefold() in preps), None)
    if cut is None or len(rwords) - cut > 6 or looks_verbal(right[rspans[cut].start():]):
        return None
    # the NP before the phrase holds no verb; an English plural noun ("students") reads as a weak
    # "-s" verb in isolation: as the NP's last word, right before the preposition (no object
    # between), it is the head noun when it parallels a plural subject ("First-year students ...
    # and second-year students in ..."; not "The store opens ..., and the warehouse opens at 7")
    subj_head = _words(_subject_only(prefix))[-1:]
    plural_subject = bool(subj_head) and en_form(subj_head[0]) == "s"
    if any(finite_at(rwords, i, spanish) == "strong" for i in range(cut)) or spanish and looks_verbal(
            right[: rspans[cut].start()]) or not spanish and any(
            finite_at(rwords, i, False) is not None and (en_form(rwords[i]) != "s" or i < cut - 1 or not plural_subject)
            for i in range(cut)):
        return None
    prep = rwords[cut].casefold()
    lspans = _spans(left)
    gs = _verb_group_start(lwords, lvi, spanish)
    at = [i for i in range(lvi + 1, len(lwords)) if lwords[i].casefold() == prep]
    if not at:
        return None
    pp = at[-1]
    np_, phrase = right[: rspans[cut].start()].strip(), right[rspans[cut].start():].strip()
    npw = _words(np_)
    subj = _words(_subject_only(prefix))
    oi = _object_index(lwords, lvi)

    def parallel(words: list[str]) -> bool:
        return bool(words) and (fold(words[0]) == fold(npw[0]) and fold(words[0]) in DETERMINERS
                                or fold(words[-1]) == fold(npw[-1]))

    def names(words: list[str]) -> bool:  # "Roma", "París", "Real Madrid": a name stands for a name
        return bool(words) and all(w[:1].isupper() or fold(w) in ("de", "of", "del") for w in words)

    obj = lwords[oi:pp] if oi < pp else []
    if parallel(subj) or names(npw) and names(subj) and not names(obj):
        verb_phrase = left[lspans[gs].start(): lspans[pp].start()].strip()
        return [left, f"{np_} {verb_phrase} {phrase}"]
    if obj and (parallel(obj) or names(npw) and names(obj)):
        head = left[: lspans[oi].start()].strip()
        return [left, f"{head} {np_} {phrase}"]
    return None


def _object_pair(left: str, right: str) -> bool:
    """A one-word conjunct that only a weak verb reading would make a verb phrase ("leche",
    "cakes"), after a first conjunct whose verb already has its object: the two are objects of
    that verb. A strong form ("cerró", "closed") stays a verb phrase."""
    rw = _words(right)
    if len(rw) != 1:
        return False
    kind, strength, _ = _conjunct_kind(right)
    if kind != "VP" or strength not in ("weak", "bare", "bare-weak"):
        return False
    pre = _subject_prefix(left)
    if pre is None:
        return False
    _, lvi, lwords = pre
    return _object_index(lwords, lvi) < len(lwords)


def _list_like(first: str, rights: list[str], max_words: int = 4) -> bool:
    """Rule 3's list test: every conjunct starts with a weak verb candidate of the same form as the
    word after the first conjunct's verb (an object), and all are short."""
    pre = _subject_prefix(first)
    if pre is None:
        return False
    _, lvi, lwords = pre
    oi = _object_index(lwords, lvi)
    if oi >= len(lwords):
        return False
    spanish = _spanish(lwords)
    o1 = lwords[oi]
    if o1[:1].isdigit() or fold(o1) in NUMBER_WORDS or is_name(lwords, oi):
        return False
    o1_form = es_form(o1) if spanish else en_form(o1)
    if o1_form not in (("weak", "mid") if spanish else ("bare", "s")):
        return False
    for r in rights:
        kind, strength, vi = _conjunct_kind(r)
        rw = _words(r)
        if kind != "VP" or strength not in ("weak", "bare-weak", "bare") or len(rw) > max_words:
            return False
        if (es_form(rw[vi]) if spanish else en_form(rw[vi])) != o1_form or _verb_and_object(rw, vi, spanish):
            return False
    return True


def _series(left: str, right: str, negate: bool) -> list[str] | None:
    """A series "S0, A, B y C" whose conjuncts after S0 are all verb phrases or clauses."""
    segs = _top_commas(left)
    if len(segs) < 2:
        return None
    for k in range(1, len(segs)):
        first = ", ".join(segs[:k])
        rights = segs[k:] + [right]
        pre = _subject_prefix(first)
        if pre is None:
            continue
        prefix, lvi, lwords = pre
        kinds = _parallel_kinds(rights, [_conjunct_kind(r) for r in rights], _spanish(lwords))
        if any(kd == "NP" for kd, _, _ in kinds):
            continue
        if _list_like(first, rights):
            return None
        participles = not _spanish(lwords) and any(
            kd == "VP" and st == "strong" and en_form(_words(r)[0]) == "ed" for r, (kd, st, _) in zip(rights, kinds))
        if any(kd == "VP" and not _vp_ok(lwords, lvi, r, st, participles) for r, (kd, st, _) in zip(rights, kinds)):
            bare = next((st for kd, st, _ in kinds if kd == "VP" and st in ("bare", "bare-weak")), None)
            plural = _plural_subject_reading(first, lwords, lvi, bare)
            if plural is None or any(kd == "VP" and not _vp_ok(lwords, plural[1], r, st, participles)
                                     for r, (kd, st, _) in zip(rights, kinds)):
                continue
            prefix, lvi = plural
        out = [first]
        for i, (r, (kd, st, _)) in enumerate(zip(rights, kinds)):
            if kd == "CLAUSE":
                out.append(_own_subject(r, prefix))
            elif st == "fronted":
                out.append(parts[1] if (parts := _two_parts(first, r)) else r)
            else:
                out.append(_join_vp(_shared_prefix(first, prefix, lwords, lvi, r, st), r,
                                    negate and i == len(rights) - 1))
        return out
    return None


