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
   "where" put "en" / "in" + antecedent at the end; "lo cual" becomes "Esto". A relative between
   two commas before the main verb ("Sevilla, que fue sede ..., tiene ...") is taken out of the main
   clause the same way.
3. **Coordination** ("y", "e", "ni", "and", "nor", with or without a comma, and a series "A, B y C"):
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
   "ni" carries the negation ("no imprime ... ni escanea" → "no escanea").
4. **Lists** of three or more short items (at most four words, no strong verb) ending the sentence,
   joined by commas and a final "y" / "e" / "o" / "u" / "and" / "or": each item becomes a claim with
   the words before the list, which must hold a verb ("Incluye el cable, la correa y la guía").
5. **A period and its start** in a copular sentence whose subject names the period ("El plazo es de
   30 días naturales desde la entrega"): the length and the start are two facts, "El plazo es de 30
   días naturales" and "El plazo se cuenta desde la entrega" ("The period is 30 days" / "The period
   counts from delivery").

**Self-contained claims.** A clause whose subject is a pronoun ("it", "she", "él") gets the first
conjunct's subject in its place; a possessive at the start of its subject ("its", "their", "su",
"sus") becomes the subject's genitive ("its battery" → "the speaker's battery"; "su batería" → "la
batería del altavoz", the article chosen from the noun's ending).

**Kept whole.** A sentence that starts with a condition or concession ("Si", "Cuando", "If",
"Unless", "Aunque", ...); coordination after a condition, exception or cause in the same clause
("salvo", "excepto", "si", "porque", "a menos que", "siempre que", "unless", "except", "if",
"because", "provided", "as long as", "when", "while" without a comma), which stays with the fact it
restricts; ranges ("entre los días 31 y 45", "between 0 °C and 40 °C"); amounts ("dos horas y
media"); two nouns or names ("cable y cargador"); a verbless conjunct ("but not other speakers");
restrictive relatives; anything inside brackets or quotes.
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.judges.morphology import (
    ADVERBS,
    BE_EN,
    BE_ES,
    CLITICS_ES,
    DET_EN,
    DET_ES,
    MODALS_EN,
    NEGATIONS,
    NUMBER_WORDS,
    PREP_EN,
    PREP_ES,
    SUBJECT_PRONOUNS,
    en_form,
    es_form,
    finite_at,
    first_verb,
    fold,
    is_name,
    is_spanish,
)

DETERMINERS = DET_ES | DET_EN
_INDEFINITE = {"un": "el", "una": "la", "unos": "los", "unas": "las", "a": "the", "an": "the", "some": "the"}
_POSSESSIVES = frozenset({"its", "their", "his", "her", "su", "sus"})
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_END = re.compile(r"[\s.!?…]+$")
_INTERJECTION = re.compile(r"^\s*(?:yes|yeah|no|well|oh|so|sí|si|bueno|pues|vale|claro)\s*,\s*", re.IGNORECASE)
_OPENING_SUBORDINATOR = re.compile(
    r"^\s*(?:si|cuando|aunque|mientras|salvo|excepto|a menos que|siempre que|if|when|whenever|unless|"
    r"although|though|while|because|porque|except|provided|as long as|once)\b", re.IGNORECASE)
_BLOCKERS = re.compile(
    r"\b(?:si|salvo|excepto|porque|cuando|a menos que|siempre que|if|unless|except|because(?! of)|provided|"
    r"as long as|when|whenever)\b|(?<!,)\s(?:while|mientras)\b", re.IGNORECASE)
_CONTRAST = re.compile(r",?\s+(pero|but|aunque|although|though|mientras que|whereas|yet)\s+|"
                       r",\s+(while|así que|asi que|por lo que|so)\s+", re.IGNORECASE)
_COORD = re.compile(r",?\s+(y|e|ni|and|nor)\s+", re.IGNORECASE)
_RANGE_OPEN = re.compile(r"\b(?:entre|between)\s+(?:\S+\s+){0,3}\S*\d\S*\s*$", re.IGNORECASE)
_AMOUNT_HALF = re.compile(r"^(?:media|medio|a half)\b", re.IGNORECASE)
_RELATIVE = re.compile(r",\s+(which|who|que|quien|quienes|lo cual|where|donde)\s+", re.IGNORECASE)
_TRAILING_DATE_PP = re.compile(r"\s+(?:en|in|on|de)\s+\d[\d.,]*\s*$", re.IGNORECASE)
_PERIOD_UNITS = r"(?:días|dias|semanas|meses|años|anos|horas|minutos|days|weeks|months|years|hours|minutes)"
_ORIGIN = re.compile(
    rf"^(?P<subj>.+?)\s+(?P<cop>es de|son de|será de|is|are|was|will be)\s+(?P<amount>\S+)\s+(?:[^\W\d_]+\s+)?"
    rf"{_PERIOD_UNITS}"
    rf"(?P<qual>(?:\s+[^\W\d_]+){{0,2}}?)\s+(?P<from>desde|a partir de|from|after|starting from)\s+(?P<origin>\S.*)$",
    re.IGNORECASE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def _spans(text: str) -> list[re.Match]:
    return list(_WORD.finditer(text))


_LANG: list[bool] = []  # True while splitting a Spanish sentence (set by split_coordinated)


def _spanish(words: list[str]) -> bool:
    return _LANG[-1] if _LANG else is_spanish(words)


def looks_verbal(text: str) -> bool:
    """True when ``text`` holds a word the rules of :mod:`~rag_eval_pipeline.core.judges.morphology`
    read as a finite verb (a negation word alone is not one: "but not other speakers")."""
    words = [w for w in _words(text) if fold(w) not in NEGATIONS]
    return bool(words) and first_verb(words, _spanish(words)) is not None


def _top_level(text: str, start: int) -> bool:
    """True when position ``start`` is outside brackets and quotes."""
    depth = 0
    quote = False
    for ch in text[:start]:
        if ch in "([{«“":
            depth += 1
        elif ch in ")]}»”" and depth:
            depth -= 1
        elif ch == '"':
            quote = not quote
    return depth == 0 and not quote


def _blocked(text: str, pos: int) -> bool:
    """True when a condition, exception or cause opens before ``pos`` in the same clause (no comma
    between them): what follows belongs to that subordinate clause."""
    start = text.rfind(",", 0, pos) + 1
    return bool(_BLOCKERS.search(text, start, pos)) if pos > start else False


def _cap(s: str) -> str:
    s = s.strip(" ,")
    return s[:1].upper() + s[1:] if s else s


def _finish(s: str, end: str) -> str:
    s = _cap(s)
    return s + end if s and s[-1] not in ".!?…" else s


def _lower_first(text: str) -> str:
    """``text`` with its first letter in lower case when it starts with a function word (a conjunct
    copied after a subject: "Ahora dirige" → "ahora dirige"); names keep their capital."""
    w = _words(text)
    if w and w[0][:1].isupper() and fold(w[0]) in DETERMINERS | SUBJECT_PRONOUNS | ADVERBS | PREP_ES | PREP_EN:
        return text[:1].lower() + text[1:]
    return text


def split_coordinated(sentence: str) -> list[str]:
    """Claims of one sentence (rules in the module docstring), in text order.

    Input: one sentence (a claim of :func:`~rag_eval_pipeline.core.judges.claims.split_claims`).
    Output: a non-empty list of strings; each starts with a capital letter and keeps the
    sentence's final punctuation; ``[sentence]`` when no rule applies. Never raises.
    """
    m = _END.search(sentence)
    end = sentence[m.start():].strip() if m else ""
    body = sentence[: m.start()] if m else sentence
    if not body.strip():
        return [sentence]
    _LANG.append(is_spanish(_words(body)))
    try:
        if _OPENING_SUBORDINATOR.match(body):
            parts = [body]
        else:
            parts = _split(body, depth=0)
    finally:
        _LANG.pop()
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


# --- the pieces of a clause -------------------------------------------------------------------


def _verb_group_start(words: list[str], vi: int, spanish: bool) -> int:
    """Index where the verb group of ``words[vi]`` starts (clitics and negation before it)."""
    k = vi
    while k > 0:
        p = words[k - 1].casefold()
        if p in NEGATIONS or (spanish and p in CLITICS_ES and p not in ("la", "las", "los")
                              or spanish and p in ("la", "las", "los") and k - 1 > 0
                              and finite_at(words, k, True) == "strong" and _clitic_reading(words, k - 1)):
            k -= 1
            continue
        break
    return k


def _clitic_reading(words: list[str], i: int) -> bool:
    """"la/los/las" at ``i`` is a clitic when what precedes it cannot take an article next."""
    prev = words[i - 1].casefold() if i > 0 else ""
    return i == 0 or prev in ("y", "e", "ni", "pero", "que") or prev in NEGATIONS


def _subject_prefix(left: str) -> tuple[str, int, list[str]] | None:
    """(prefix text before the verb group, index of the first verb, words) of a clause ``left``:
    the subject and fronted adverbials carried into a verb phrase; "" when the clause starts with its
    verb (Spanish drops subjects); None when ``left`` has no finite verb."""
    stripped = _INTERJECTION.sub("", left)
    offset = len(left) - len(stripped)
    spans = _spans(stripped)
    words = [m.group() for m in spans]
    if not words:
        return None
    spanish = _spanish(words)
    vi = first_verb(words, spanish)
    if vi is None:
        return None
    gs = _verb_group_start(words, vi, spanish)
    if gs == 0:
        return "", vi, words
    prefix = stripped[: spans[gs].start()].strip(" ,")
    if len(_words(prefix)) > 12:
        return None
    return left[offset:offset + len(prefix)] if offset else prefix, vi, words


def _conjunct_kind(text: str) -> tuple[str, str | None, int]:
    """Kind of a conjunct after a conjunction: ("VP", strength, verb index) when it starts with a
    verb (after negation, clitics and function adverbs; strength "strong", "weak", "infinitive",
    "participle" or "bare"), ("CLAUSE", None, verb index) when it has its own subject and verb, or
    ("NP", None, -1)."""
    words = _words(text)
    if not words:
        return "NP", None, -1
    # a capitalised word inside a sentence is a name, never a verb
    name_start = words[0][:1].isupper() and fold(words[0]) not in ADVERBS | SUBJECT_PRONOUNS | DETERMINERS
    spanish = _spanish(words)
    j = 0
    while j < len(words) - 1 and (words[j].casefold() in ADVERBS or words[j].casefold() in NEGATIONS):
        j += 1
    k = j
    if spanish:
        while k < len(words) - 1 and words[k].casefold() in CLITICS_ES - {"la", "las", "los"}:
            k += 1
        if k < len(words) - 1 and words[k].casefold() in ("la", "las", "los", "lo"):
            form = es_form(words[k + 1])
            nxt = words[k + 2].casefold() if k + 2 < len(words) else ""
            if form in ("aux", "strong") or form in ("weak", "mid") and (
                    not nxt or nxt[:1].isdigit() or nxt in DET_ES or (nxt in PREP_ES and nxt != "de")
                    or nxt in ("si", "cuando", "salvo", "excepto", "porque")):
                return "VP", "strong", k + 1
    if name_start:
        k = len(words)
    own = finite_at(words, k, spanish, conjunct_start=True) if k < len(words) else None
    if own != "strong" and k < len(words) and words[k].casefold() not in CLITICS_ES | NEGATIONS:
        for i in range(k + 1, min(len(words), k + 4)):
            w = words[i].casefold()
            if w in (PREP_ES | DET_ES if spanish else PREP_EN | DET_EN):
                break
            f = finite_at(words, i, spanish)
            bare_noun = (es_form(words[k]) is None) if spanish else en_form(words[k]) in ("bare", None)
            if (f is not None and bare_noun and (f == "strong" or i + 1 < len(words))) or (
                    not spanish and f is not None and en_form(words[k]) == "s" and en_form(words[i]) == "bare"):
                k = len(words)  # "version 2.5 added", "registration closes", "customers pay": subject, verb
                break
    if k < len(words):
        if spanish:
            strength = finite_at(words, k, True, conjunct_start=True)
            if strength is None and k > j:  # after a clitic / negation: "se pela", "no deja"
                form = es_form(words[k])
                if form in ("weak", "mid", "strong", "aux"):
                    strength = "strong"
            if strength is not None:
                return "VP", strength, k
            form = es_form(words[k])
            if form in ("infinitive", "participle") and not is_name(words, k):
                return "VP", form, k
        else:
            form = en_form(words[k])
            strength = finite_at(words, k, False, conjunct_start=True)
            if strength is not None:
                return "VP", "bare" if form == "bare" else strength, k
            if form == "bare" and not is_name(words, k) and k + 1 < len(words):
                return "VP", "bare-weak", k
    vi = first_verb(words, spanish)
    if vi is not None and vi > 0 and _has_subject(words, _verb_group_start(words, vi, spanish), spanish):
        return "CLAUSE", None, vi
    if vi is not None and vi > 0:
        return "VP", "fronted", vi
    return "NP", None, -1


def _spanish_clitic(words: list[str], k: int) -> bool:
    return k > 0 and words[k - 1].casefold() in CLITICS_ES


def _has_subject(words: list[str], gs: int, spanish: bool) -> bool:
    """Whether the words before the verb group (index ``gs``) hold a subject, not only a fronted
    prepositional phrase or adverb ("a partir de entonces", "after that" have none; "after that she"
    and "durante una semana las calles" have one)."""
    preps = PREP_ES if spanish else PREP_EN
    after_prep = False
    seen_content = False
    for i in range(gs):
        w = words[i].casefold()
        if w in preps:
            after_prep = True
            continue
        if w in SUBJECT_PRONOUNS or w in ("i", "we", "you", "yo", "nosotros", "ustedes", "usted"):
            return True
        if w in ADVERBS or w in NEGATIONS:
            continue
        if w in DETERMINERS:
            if not after_prep or (i > 0 and words[i - 1].casefold() not in preps and seen_content):
                return True
            continue
        if not after_prep:
            return True
        seen_content = True
    return False


def _genitive(subject: str, spanish: bool) -> str:
    """The subject as a genitive: "the kettle" → "the kettle's"; "la cafetera" → "de la cafetera"."""
    subj = subject.strip(" ,")
    words = _words(subj)
    if words and fold(words[0]) in DETERMINERS:
        subj = subj[:1].lower() + subj[1:]
    if spanish:
        if subj.casefold().startswith("el "):
            return "del " + subj[3:]
        return "de " + subj
    return subj + ("'" if subj.endswith("s") and not subj.endswith("ss") and subj[-2:-1] != "u" else "'s")


def _spanish_article(noun: str, plural: bool) -> str:
    f = fold(noun)
    feminine = f.endswith(("a", "ion", "dad", "tad", "tud", "umbre", "as", "iones", "dades"))
    if plural:
        return "las" if feminine else "los"
    return "la" if feminine else "el"


def _own_subject(right: str, left_subject: str) -> str:
    """A clause's pronoun or possessive subject replaced by the first conjunct's subject (module
    docstring, "Self-contained claims")."""
    if not left_subject:
        return right
    lw = _words(left_subject)
    if not lw or fold(lw[0]) in SUBJECT_PRONOUNS or fold(lw[0]) in ("i", "we", "you", "yo", "mi", "my", "your"):
        return right
    spans = _spans(right)
    words = [m.group() for m in spans]
    spanish = _spanish(words)
    vi = first_verb(words, spanish)
    if vi is None:
        return right
    gs = _verb_group_start(words, vi, spanish)
    preps = PREP_ES if spanish else PREP_EN
    in_pp = pp_noun = False
    for i in range(gs):
        w = words[i].casefold()
        if w in SUBJECT_PRONOUNS:
            subj = left_subject if i == 0 else left_subject[:1].lower() + left_subject[1:] \
                if fold(lw[0]) in DETERMINERS else left_subject
            return right[: spans[i].start()] + subj + right[spans[i].end():]
        if w in preps:
            in_pp, pp_noun = True, False
            continue
        if w in ADVERBS:
            continue
        if in_pp and (not pp_noun or w not in DETERMINERS):
            pp_noun = pp_noun or w not in DETERMINERS
            continue  # the fronted phrase "after that", "durante una semana"
        if w in _POSSESSIVES and i + 1 < gs:
            noun_end = spans[gs - 1].end()
            noun = right[spans[i + 1].start():noun_end]
            if spanish:
                art = _spanish_article(words[i + 1], w == "sus")
                return right[: spans[i].start()] + f"{art} {noun} {_genitive(left_subject, True)}" + right[noun_end:]
            return right[: spans[i].start()] + f"{_genitive(left_subject, False)} " + right[spans[i + 1].start():]
        break
    return right


def _join_vp(prefix: str, right: str, negate: bool = False) -> str:
    if not prefix:
        return right
    right = _lower_first(right)
    if negate:
        neg = "no" if _LANG and _LANG[-1] else "not"
        right = f"{neg} {right}"
    return f"{prefix} {right}"


# --- rule 1: contrast and consequence -----------------------------------------------------------


def _split_contrast(text: str) -> list[str] | None:
    for m in _CONTRAST.finditer(text):
        if not _top_level(text, m.start()) or _blocked(text, m.start()):
            continue
        left, right = text[: m.start()], text[m.end():]
        if not left.strip() or not right.strip():
            continue
        got = _two_parts(left, right)
        if got is not None:
            return got
    return None


def _two_parts(left: str, right: str, negate: bool = False) -> list[str] | None:
    """[left, right made self-contained] when ``left`` has a verb and ``right`` is a clause or verb
    phrase; else None."""
    pre = _subject_prefix(left)
    if pre is None:
        return None
    kind, strength, vi = _conjunct_kind(right)
    if kind == "NP":
        return None
    prefix, lvi, lwords = pre
    if kind == "CLAUSE":
        return [left, _own_subject(right, prefix)]
    if strength == "fronted":
        spans = _spans(right)
        words = [s.group() for s in spans]
        gs = _verb_group_start(words, vi, _spanish(words))
        if not prefix:
            return [left, right]
        return [left, right[: spans[gs].start()] + prefix + " " + right[spans[gs].start():]]
    if not _vp_ok(lwords, lvi, right, strength):
        return None
    return [left, _join_vp(_shared_prefix(left, prefix, lwords, lvi, right, strength), right, negate)]


def _vp_ok(lwords: list[str], lvi: int, right: str, strength: str | None) -> bool:
    """Agreement checks of rule 3: a bare word after a copula is an adjective; an English bare form
    after a third-person verb needs a shared modal chain."""
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
        if v1 in BE_EN and (not nxt or nxt in PREP_EN):
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
    want = {"infinitive": "infinitive", "participle": "participle", "bare": "bare", "bare-weak": "bare",
            "strong": "ed" if not _spanish(lwords) and en_form(_words(right)[0]) == "ed" else None}.get(strength)
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


# --- rule 3: coordination ------------------------------------------------------------------------


def _split_coordination(text: str) -> list[str] | None:
    for m in _COORD.finditer(text):
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
        segs = _top_commas(left)
        if len(segs) >= 2 and _conjunct_kind(right)[0] != "CLAUSE" and (
                _conjunct_kind(segs[-1])[0] == "NP" or _list_like(segs[0], segs[1:] + [right])):
            continue  # "contiene el altavoz, el cable y la funda": a list (rule 4)
        series = _series(left, right, negate)
        if series is not None:
            return series
        if not negate and _list_like(left, [right], max_words=2):
            continue
        got = _two_parts(left, right, negate)
        if got is not None:
            return got
    return None


def _top_commas(text: str) -> list[str]:
    out, start = [], 0
    for m in re.finditer(r",\s+", text):
        if _top_level(text, m.start()):
            out.append(text[start:m.start()])
            start = m.end()
    out.append(text[start:])
    return out


def _object_index(lwords: list[str], lvi: int) -> int:
    """Index of the first word after the verb chain that starts at ``lvi`` (auxiliaries, modals,
    negation, adverbs, "to", clitics and the non-finite verb they govern skipped)."""
    spanish = _spanish(lwords)
    k = lvi + 1
    while k < len(lwords):
        w = lwords[k].casefold()
        form = es_form(lwords[k]) if spanish else en_form(lwords[k])
        if w in NEGATIONS or w in ADVERBS or w == "to" or (spanish and w in CLITICS_ES - {"la", "las", "los"}) \
                or form in ("aux", "modal", "infinitive", "participle", "ed") \
                or (not spanish and form == "bare" and lwords[k - 1].casefold() in MODALS_EN | {"to"}
                    and not lwords[k][:1].isupper()):
            k += 1
            continue
        break
    return k


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
        if (es_form(rw[vi]) if spanish else en_form(rw[vi])) != o1_form:
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
        kinds = [_conjunct_kind(r) for r in rights]
        if any(kd == "NP" for kd, _, _ in kinds):
            continue
        if _list_like(first, rights):
            return None
        if any(kd == "VP" and not _vp_ok(lwords, lvi, r, st) for r, (kd, st, _) in zip(rights, kinds)):
            continue
        out = [first]
        for i, (r, (kd, st, _)) in enumerate(zip(rights, kinds)):
            if kd == "CLAUSE":
                out.append(_own_subject(r, prefix))
            elif st == "fronted":
                out.append(_two_parts(first, r)[1] if _two_parts(first, r) else r)
            else:
                out.append(_join_vp(_shared_prefix(first, prefix, lwords, lvi, r, st), r,
                                    negate and i == len(rights) - 1))
        return out
    return None


# --- rule 2: relative clauses ----------------------------------------------------------------------


def _antecedent(left: str) -> str | None:
    """The noun phrase that ends ``left``: the longest suffix of at most 8 words that starts with
    a determiner and holds no verb and no comma (a trailing "en 1937" removed; a number-initial
    phrase gets a definite article); else a trailing capitalised name or the phrase after the last
    preposition."""
    left = _TRAILING_DATE_PP.sub("", left)
    spans = _spans(left)
    words = [m.group() for m in spans]
    spanish = _spanish(words)
    best = None
    for i in range(len(spans) - 1, max(-1, len(spans) - 9), -1):
        tail = left[spans[i].start():]
        tw = _words(tail)
        fv = first_verb(tw, spanish)
        if "," in tail or fv is not None and (fv > 0 or finite_at(tw, 0, spanish) == "strong"):
            break
        w = fold(words[i])
        if w in DETERMINERS:
            best = i
        if w in (PREP_ES | PREP_EN) - {"de", "of"} and best is None and i + 1 < len(words):
            cand = left[spans[i + 1].start():].strip(" ,")
            if words[i + 1][:1].isdigit():
                continue
            if fold(words[i + 1]) not in DETERMINERS:
                return _cap(cand) if words[i + 1][:1].isupper() or not spanish else cand
            break
    if best is not None:
        np_ = left[spans[best].start():].strip(" ,")
        det = fold(words[best])
        first = words[best]
        if det in ("al", "del"):
            return "el" + np_[len(first):]
        if det in _INDEFINITE:
            return _INDEFINITE[det] + np_[len(first):]
        return np_
    if words and words[-1][:1].isdigit() and len(words) >= 2 and not words[-2][:1].isdigit():
        pass
    # a number-initial noun phrase: "400 camas" → "las 400 camas", "400 beds" → "the 400 beds"
    for i in range(max(0, len(words) - 4), len(words)):
        if words[i][:1].isdigit() and i + 1 < len(words) and all(
                fold(w) not in (PREP_ES | PREP_EN) for w in words[i + 1:]):
            np_ = left[spans[i].start():].strip(" ,")
            art = _spanish_article(words[-1], words[-1].endswith("s")) if spanish else "the"
            return f"{art} {np_}"
    if words and words[-1][:1].isupper():  # a name: "Valencia", "Lumo Audio"
        j = len(words) - 1
        while j > 0 and words[j - 1][:1].isupper():
            j -= 1
        return left[spans[j].start():].strip(" ,")
    return None


def _split_relative(text: str) -> list[str] | None:
    for m in _RELATIVE.finditer(text):
        if not _top_level(text, m.start()):
            continue
        left, rel, right = text[: m.start()], fold(m.group(1)), text[m.end():]
        if not right.strip():
            continue
        # a relative between two commas before the main verb: "Sevilla, que fue ..., tiene ..."
        if not looks_verbal(left):
            close = [c for c in re.finditer(r",\s+", right) if _top_level(right, c.start())]
            if not close or rel in ("lo cual",):
                continue
            body, rest = right[: close[0].start()], right[close[0].end():]
            if _conjunct_kind(body)[0] == "NP" or _conjunct_kind(rest)[0] == "NP":
                continue
            ante = left.strip()
            return [f"{ante} {rest}", f"{ante} {body}"]
        if _conjunct_kind(right)[0] == "NP":
            continue
        if rel == "lo cual":
            return [left, "Esto " + right]
        ante = _antecedent(left)
        if ante is None:
            continue
        pre = _subject_prefix(left)
        lw = _words(left)
        if rel in ("where", "donde") and lw and lw[-1][:1].isupper() and len(lw) > 1:
            j = len(lw) - 1
            while j > 1 and lw[j - 1][:1].isupper():
                j -= 1
            ante = " ".join(lw[j:])
        if rel in ("where", "donde"):
            prep = "in" if rel == "where" else "en"
            body = _own_subject(right, pre[0]) if pre else right
            return [left, f"{body} {prep} {ante}"]
        return [left, f"{ante} {right}"]
    return None


# --- rule 4: lists ------------------------------------------------------------------------------


_LAST_CONJ = re.compile(r"^(?:(?P<a>.*\S)\s+|)(?:y|e|o|u|and|or)\s+(?P<b>\S.*)$", re.IGNORECASE | re.DOTALL)


def _short_item(item: str) -> bool:
    words = _words(item)
    if not 0 < len(words) <= 6:
        return False
    spanish = _spanish(words)
    return not any(finite_at(words, i, spanish) == "strong" for i in range(len(words)))


def _split_list(text: str) -> list[str] | None:
    segs = _top_commas(text)
    if len(segs) < 2:
        return None
    m = _LAST_CONJ.match(segs[-1])
    if not m:
        return None
    tail = [m.group("b")] if m.group("a") is None else [m.group("a"), m.group("b")]
    if not all(_short_item(t) for t in tail):
        return None
    items = list(reversed(tail))
    k = len(segs) - 2
    while k > 0 and _short_item(segs[k]):
        items.append(segs[k])
        k -= 1
    items.reverse()
    head = ", ".join(segs[: k + 1])
    spans = _spans(head)
    words = [s.group() for s in spans]
    vi = first_verb(words, _spanish(words))
    if vi is None:
        return None
    det_i = None
    for i in range(len(words) - 1, vi, -1):
        if fold(words[i]) in DETERMINERS:
            det_i = i
            break
    if det_i is not None:
        cut = spans[det_i].start()
    else:  # the first item is what follows the verb (and its prepositions): "ofrece yoga", "ship to Spain"
        c = _object_index(words, vi)
        while c < len(words) and fold(words[c]) in (PREP_ES | PREP_EN):
            c += 1
        if c >= len(words):
            return None
        cut = spans[c].start()
    prefix, first = head[:cut].strip(), head[cut:].strip()
    items = [first, *items]
    if _words(items[-1])[0][:1].isdigit() and len(_words(items[-1])) == 1:
        return None  # "en dos partes, en 1605 y 1615": dates that elaborate one fact
    if any(fold(i).rstrip(".") in ("etc", "etcetera") for i in items):
        return None  # an open list ("lápices, gomas, etc.") is one claim
    if len(items) < 3 or not prefix or cut <= spans[vi].start() or not all(_short_item(i) for i in items):
        return None
    det = fold(words[det_i]) if det_i is not None else None
    if det in _INDEFINITE or det in ("al", "del"):
        det = None  # "un cable, cargador y funda": no article to copy
    out = []
    for it in items:
        w0 = _words(it)[0]
        if det and w0[:1].islower() and fold(w0) not in DETERMINERS:
            it = f"{words[det_i].lower()} {it}"
        out.append(f"{prefix} {it}")
    return out


# --- rule 5: a period and its start ------------------------------------------------------------


def _split_origin(text: str) -> list[str] | None:
    m = _ORIGIN.match(text.strip())
    if not m:
        return None
    subj = m.group("subj").strip(" ,")
    sw = _words(subj)
    if not sw or fold(sw[0]) not in DETERMINERS or looks_verbal(subj):
        return None
    spanish = _spanish(sw)
    length = text.strip()[: m.start("from")].rstrip(" ,")
    start = f"{subj} {'se cuenta' if spanish else 'counts'} {m.group('from')} {m.group('origin')}"
    return [length, start]
