"""Agreement between the conjuncts the claim splitter joins (Spanish, English): whether a verb
phrase can share the first conjunct's subject and verb chain, which reading of an English "-s"
word agrees with the second verb, whether a Spanish verb after a fronted phrase has a subject of
its own, and whether a word after "and" / "y" is a verb with its object. Word classes come from
:mod:`~rag_eval_pipeline.core.judges.morphology`; the rules that use these checks are documented in
:mod:`~rag_eval_pipeline.core.judges.coordination` (rule 3).
"""

from __future__ import annotations

from rag_eval_pipeline.core.judges.clauses import (
    _INTERJECTION,
    DETERMINERS,
    _spanish,
    _spans,
    _words,
)
from rag_eval_pipeline.core.judges.morphology import (
    ADVERBS,
    BE_EN,
    BE_ES,
    CLITICS_ES,
    FUNCTION_ES,
    MODALS_EN,
    NEGATIONS,
    NUMBER_WORDS,
    PREP_EN,
    PREP_ES,
    en_form,
    es_form,
    fold,
    is_name,
    is_number,
)

_PLURAL_DET_ES = frozenset(w for w in DETERMINERS if w.endswith("s") and w not in ("mas", "más"))


def _inverted_subject(words: list[str], vi: int, subject: str) -> bool:
    """Spanish verb-subject order after a fronted phrase ("y en él viven truchas", "y en verano
    crecen tomates"; RAE *Nueva gramática* §40.3): the verb disagrees in number with the subject
    that would be carried (a plural form ends in "-n") and a noun phrase follows it, its own
    subject; nothing is carried."""
    if not _spanish(words) or vi + 1 >= len(words):
        return False
    nxt = words[vi + 1]
    if fold(nxt) in PREP_ES or fold(nxt) in FUNCTION_ES and fold(nxt) not in DETERMINERS or is_number(nxt):
        return False
    sw = _words(subject)
    if not sw:
        return False
    return fold(words[vi]).endswith("n") != _plural_np(sw)


def _agreement(right: str) -> str | None:
    """What an English verb-phrase conjunct's first verb says of its subject's number: "plural"
    ("are", "were", "have", "do"), "neutral" (a modal or a past form: "must carry", "moved"), or
    None (a singular form, or no verb first)."""
    words = [w for w in _words(right) if w.casefold() not in NEGATIONS and w.casefold() not in ADVERBS]
    if not words or _spanish(words):
        return None
    w = words[0].casefold().replace("’", "'")
    if w in ("are", "were", "have", "do", "aren't", "weren't", "haven't", "don't"):
        return "plural"
    return "neutral" if en_form(w) in ("modal", "ed") else None


def _plural_subject_reading(left: str, lwords: list[str], lvi: int, strength: str | None) -> tuple[str, int] | None:
    """English agreement: a bare verb conjunct cannot share a third-person "-s" verb, so when the
    first conjunct's "-s" word is followed by a bare word that opens a complement ("Summer hours
    start in June"), the "-s" word is the plural subject's head and the bare word the verb (Quirk et
    al. 1985, §10.34, subject-verb concord); so too, whatever follows the bare word, before a plural
    auxiliary ("Senior citizens travel free and were given ...": strength "plural"). A conjunct that
    shows no number (strength "neutral": a modal, a past form) leaves the choice to the first
    conjunct: the plural reading is taken when the "-s" word has only a
    determinerless prefix before it (a bare noun phrase: "Young drivers") and the bare word is
    followed by a determiner, number or object pronoun (its object: "pay more", "charge a fee"; a
    preposition after it is read as a noun's: "lowers fever in children"). Returns (prefix, verb
    index) of that reading, or None."""
    if _spanish(lwords) or strength not in ("bare", "bare-weak", "plural", "neutral") \
            or en_form(lwords[lvi]) != "s" or lvi + 2 >= len(lwords):
        return None
    verb, nxt = lwords[lvi + 1], lwords[lvi + 2].casefold()
    if strength == "neutral":
        if any(fold(w) in DETERMINERS or is_name(lwords, k) for k, w in enumerate(lwords[:lvi])) or not (
                nxt in DETERMINERS or is_number(nxt) or nxt in ("it", "them", "him", "her", "us", "me", "you")):
            return None
    if en_form(verb) != "bare" or verb[:1].isupper() or strength != "plural" and not (
            nxt in PREP_EN or nxt in DETERMINERS or nxt[:1].isdigit() or nxt in NUMBER_WORDS or nxt in ADVERBS):
        return None
    stripped = _INTERJECTION.sub("", left)
    spans = _spans(stripped)
    if len(spans) != len(lwords):
        return None
    return stripped[: spans[lvi + 1].start()].strip(" ,"), lvi + 1


def _vp_ok(lwords: list[str], lvi: int, right: str, strength: str | None, participles: bool = False) -> bool:
    """Agreement checks of rule 3: a bare word after a copula is an adjective, unless it stands in a
    series of participles (``participles``: "is washed, peeled and cut into cubes", where "cut" is an
    irregular participle); an English bare form after a third-person verb needs a shared modal
    chain."""
    spanish = _spanish(lwords)
    rwords = _words(right)
    v1 = lwords[lvi].casefold()
    if spanish:
        if strength == "weak" and v1 in BE_ES and len(rwords) <= 1:
            return False
        if strength in ("infinitive", "participle") and _chain_index(lwords, lvi, strength) is None:
            return False
        return True
    if strength in ("bare", "bare-weak"):
        rw = _words(right)
        nxt = rw[1].casefold() if len(rw) > 1 else ""
        if v1 in BE_EN and (not nxt or nxt in PREP_EN) and not (
                participles and _chain_index(lwords, lvi, "bare") is not None):
            return False  # "is closed on Mondays but open on holidays": a predicate adjective
        if _chain_index(lwords, lvi, "bare") is not None:
            return True
        past = v1 in ("was", "were", "had", "did") or en_form(v1) == "ed" or en_form(v1) == "bare"
        if v1 in BE_EN and not past:
            return False
        return past and strength == "bare"
    return True


def _chain_index(lwords: list[str], lvi: int, strength: str | None) -> int | None:
    """Index in the first conjunct of the non-finite verb a conjunct's verb parallels (the shared
    auxiliary or modal comes before it), or None."""
    spanish = _spanish(lwords)
    v1 = lwords[lvi].casefold()
    for k in range(lvi + 1, min(len(lwords), lvi + 5)):
        w = lwords[k].casefold()
        if spanish:
            form = es_form(lwords[k])
            if strength == "infinitive" and form == "infinitive":
                return k
            if strength == "participle" and form == "participle" and v1 in BE_ES:
                return k
            if w in ("que", "a", "de", "no") or w in CLITICS_ES:
                continue
            return None
        form = en_form(lwords[k])
        if w in ("not", "to", "be", "been", "have", "you", "us", "them", "him", "her", "me") or w in ADVERBS:
            continue
        if w == "born":
            return None
        chain = v1 in MODALS_EN or v1 in BE_EN or v1 in ("lets", "let", "helps", "allows") or "to" in \
            [x.casefold() for x in lwords[lvi + 1:k]]
        if chain and form in ("bare", "ed", "s") and not lwords[k][:1].isupper():
            if v1 in BE_EN and form == "s":
                return None
            return k
        return None
    return None


def _shared_prefix(left: str, prefix: str, lwords: list[str], lvi: int, right: str, strength: str | None) -> str:
    """The subject prefix, extended with the auxiliary or modal chain when the conjunct's verb is
    non-finite (rule 3)."""
    want_of: dict[str | None, str | None] = {
        "infinitive": "infinitive", "participle": "participle", "bare": "bare", "bare-weak": "bare",
        "strong": "ed" if not _spanish(lwords) and en_form(_words(right)[0]) == "ed" else None}
    want = want_of.get(strength)
    if want is None:
        return prefix
    if want == "ed":
        if lwords[lvi].casefold() not in BE_EN:
            return prefix
        want = "bare"
    k = _chain_index(lwords, lvi, want)
    if k is None:
        return prefix
    stripped = _INTERJECTION.sub("", left)
    spans = _spans(stripped)
    return stripped[: spans[k].start()].strip(" ,")



def _verb_and_object(words: list[str], vi: int, spanish: bool) -> bool:
    """True when the candidate ``words[vi]`` and the word after it cannot be one noun phrase, so the
    candidate is a verb with its object ("runs tests", "hace bollos"): a determiner or number after
    it; in English, an open-class word after an "-s" form (a premodifying noun is singular: "test
    runs", not "runs tests"; Quirk et al. 1985, §17.104); in Spanish, an open-class word that does
    not agree with it in number, as an adjective after its noun would ("fundas nuevas", but "hace
    bollos"; RAE *Nueva gramática* §13)."""
    if vi + 1 >= len(words):
        return False
    nxt = words[vi + 1]
    low = fold(nxt)
    if nxt[:1].isupper() or low in ("al", "del"):
        return False
    if low in DETERMINERS or is_number(nxt):
        return True
    if spanish:
        if low in FUNCTION_ES:
            return False
        return fold(words[vi]).endswith("s") != low.endswith("s")
    return en_form(words[vi]) == "s" and en_form(nxt) in ("s", "bare")


def _passive_se_own_subject(words: list[str], vi: int, subject: str) -> bool:
    """Spanish passive "se" whose subject follows the verb ("pero no se aceptan devoluciones", "y se
    cobran diez euros"; RAE *Nueva gramática* §41.6): "se" right before the verb group's verb and a
    verb that disagrees in number with the subject that would be carried, a noun phrase or a number
    after it (the passive's subject). Nothing is carried; an agreeing verb ("los pedidos ... se
    entregan en tres días") keeps the subject."""
    if not _spanish(words) or vi < 1 or words[vi - 1].casefold() != "se" or vi + 1 >= len(words):
        return False
    if is_number(words[vi + 1]):
        sw = _words(subject)
        return bool(sw) and fold(words[vi]).endswith("n") != _plural_np(sw)
    return _inverted_subject(words, vi, subject)


def _plural_np(sw: list[str]) -> bool:
    """Whether a Spanish noun phrase is plural: its determiner, else its head (the word before "de")."""
    if fold(sw[0]) in DETERMINERS:
        return fold(sw[0]) in _PLURAL_DET_ES
    head = next((w for w in sw if fold(w) in ("de", "del")), None)
    return fold(sw[sw.index(head) - 1] if head and sw.index(head) > 0 else sw[-1]).endswith("s")


def _imperative(words: list[str]) -> bool:
    """An English clause that opens with a bare verb or "do not" / "don't" / "never" + a bare verb
    has no subject to take: an imperative ("so drive slowly", "so do not take them"; Quirk et al.
    1985, §11.24). Used after a consequence ("so"), where a shared subject would need a verb that
    agrees with it."""
    if not words or _spanish(words):
        return False
    first = words[0].casefold().replace("’", "'")
    rest = words[1:]
    if first in ("do", "don't", "never", "please"):
        rest = rest[1:] if first == "do" and rest and rest[0].casefold() == "not" else rest
        return bool(rest) and en_form(rest[0]) == "bare" and not rest[0][:1].isupper()
    return en_form(words[0]) == "bare" and not words[0][:1].isupper()


def _parallel_kinds(rights: list[str], kinds: list[tuple[str, str | None, int]],
                    spanish: bool) -> list[tuple[str, str | None, int]]:
    """Coordination joins like constituents (Quirk et al. 1985, §13.47): in an English series whose
    other conjuncts are all verb phrases, a conjunct read as a clause whose subject would be bare
    lower-case open-class words, the first of the same verb form as those verb phrases' verbs ("-s" after
    "-s", bare after bare), is a verb phrase too ("films in 4K, avoids obstacles and resists wind up
    to 40 km/h"; "can upload photos, manage shared albums and download backups"), unless the clause's
    verb is an auxiliary or modal, a verb whatever its neighbours. Returns the kinds
    with those conjuncts re-read as ("VP", strength, 0)."""
    if spanish:
        return kinds
    out = list(kinds)
    for i, (r, (kd, _, vi)) in enumerate(zip(rights, kinds)):
        rw = _words(r)
        if kd != "CLAUSE" or vi < 1 or any(w[:1].isupper() or en_form(w) is None for w in rw[:vi]) \
                or en_form(rw[vi]) in ("aux", "modal"):
            continue  # the would-be subject: lower-case open-class words only ("shows power use"); an
            # auxiliary is a verb whatever its neighbours ("…, chinese had …": a clause)
        others = [(_words(o), k) for j, (o, k) in enumerate(zip(rights, kinds)) if j != i]
        if not others or any(k[0] != "VP" or k[1] == "fronted" for _, k in others):
            continue
        form = en_form(rw[0])
        if form in ("s", "bare") and all(en_form(ow[k[2]]) == form for ow, k in others):
            out[i] = ("VP", "weak" if form == "s" else "bare", 0)
    return out
