"""The pieces of a clause the claim splitter works with (Spanish, English): words, the first verb
and its group, the subject before it, a conjunct's kind (verb phrase, clause, noun phrase), the
subject carried into a claim and a pronoun's or possessive's antecedent. Word classes come from
:mod:`~rag_eval_pipeline.core.judges.morphology`; the rules that use these pieces are documented in
:mod:`~rag_eval_pipeline.core.judges.coordination`.
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.judges.morphology import (
    ADVERBS,
    BE_EN,
    CLITICS_ES,
    DET_EN,
    DET_ES,
    FOCUS_ADVERBS,
    FUNCTION_ES,
    MODALS_EN,
    NEGATIONS,
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
    plural_head_before_auxiliary,
)
from rag_eval_pipeline.core.judges.spanish_gender import (  # noqa: F401 - _SENTENCE re-exported
    _FEMININE,
    _SENTENCE,
    _spanish_article,
)

DETERMINERS = DET_ES | DET_EN
_INDEFINITE = {"un": "el", "una": "la", "unos": "los", "unas": "las", "a": "the", "an": "the", "some": "the"}
_NOT_BEFORE_SUBJECT = PREP_ES | PREP_EN | DET_ES | DET_EN | frozenset(("y", "e", "o", "u", "ni", "and", "or", "nor"))
_POSSESSIVES = frozenset({"its", "their", "his", "her", "su", "sus"})
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")
_INTERJECTION = re.compile(r"^\s*(?:yes|yeah|no|well|oh|so|sí|si|bueno|pues|vale|claro)\s*,\s*", re.IGNORECASE)


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


def _lower_first(text: str) -> str:
    """``text`` with its first letter in lower case when it starts with a function word (a conjunct
    copied after a subject: "Ahora dirige" → "ahora dirige"); names keep their capital."""
    w = _words(text)
    if w and w[0][:1].isupper() and fold(w[0]) in DETERMINERS | SUBJECT_PRONOUNS | ADVERBS | PREP_ES | PREP_EN:
        return text[:1].lower() + text[1:]
    return text


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


_ADVERBIAL = frozenset(fold(w) for w in ADVERBS | FOCUS_ADVERBS | NEGATIONS)
_NEGATIVE_DEGREE = frozenset(("longer", "more"))  # "no longer", "not any more": adverbs of two words


def _subject_only(prefix: str) -> str:
    """The subject of a prefix from :func:`_subject_prefix`, its fronted adverbials left out: "En
    verano la oficina" → "la oficina", "Yesterday it" → "it", "That year the harvest" → "the
    harvest", "Outside the EU, claims" → "claims"; "" when the prefix holds no subject ("Ayer", "a
    partir de entonces"). Two noun phrases side by side before the verb are an adverbial and the
    subject: a new one starts at a determiner, subject pronoun or name right after a content word, a
    number or a time adverb (not after a preposition, determiner or conjunction: "el precio de la luz"
    is one phrase; nor after a focus adverb: "solo los socios"), never at the prefix's last word (a
    doubled clitic: "Los gastos de envío los"). Adverbs and negations that end the prefix, before
    the verb group, are not the subject's: "La aplicación ya" → "La aplicación", "The app no
    longer" → "The app"."""
    spans = _spans(prefix)
    words = [m.group() for m in spans]
    end = len(words)
    while end > 1 and (fold(words[end - 1]) in _ADVERBIAL or fold(words[end - 1]) in _NEGATIVE_DEGREE
                       and fold(words[end - 2]) in ("no", "any")) and fold(words[end - 2]) not in PREP_ES | PREP_EN:
        end -= 2 if fold(words[end - 1]) in _NEGATIVE_DEGREE else 1  # "La aplicación ya", "The app no longer"
    if end < len(words):
        prefix, spans, words = prefix[: spans[end - 1].end()], spans[:end], words[:end]
    if not words:
        return ""
    spanish = _spanish(words)
    if not _has_subject(words, len(words), spanish):
        return ""
    start = 0
    comma = prefix.rfind(",")
    if comma > 0 and _top_level(prefix, comma):
        after = [i for i, m in enumerate(spans) if m.start() > comma]
        if after and _has_subject(words[after[0]:], len(words) - after[0], spanish):
            start = after[0]
    for i in range(start + 1, len(words)):
        w, prev = fold(words[i]), fold(words[i - 1])
        pron = (w in SUBJECT_PRONOUNS or w in ("i", "we", "you", "there", "yo", "nosotros")) \
            and prev not in PREP_ES | PREP_EN
        if not pron and (prev in _NOT_BEFORE_SUBJECT or prev in FOCUS_ADVERBS):
            continue
        det = w in DETERMINERS and w not in ("al", "del") and i < len(words) - 1
        name = is_name(words, i) and (words[i - 1][:1].isdigit() or prev in ADVERBS)
        if (det or pron or name) and _has_subject(words[i:], len(words) - i, spanish):
            start = i
    return prefix[spans[start].start():] if start else prefix


def _clitic_antecedent(clitic: str) -> bool:
    """Whether the object clitic "la" can have an antecedent in the sentence being split: a
    feminine singular determiner other than the clitic's own word and the one
    that opens the sentence (the subject, which an object clitic never repeats: that is "se"). "El
    bono incluye el gimnasio y la piscina": no feminine noun phrase before, so "la piscina" is an
    article and a noun, not "la" + a verb ("compra la fruta y la lava"). True when no sentence is
    being split, and for "lo", "los", "las" ("lo" is also neuter; a plural clitic's antecedent is
    often a bare plural: "presta libros … y los renueva")."""
    if not _SENTENCE or clitic.casefold() != "la":
        return True
    words = [fold(w) for w in _words(_SENTENCE[-1])]
    agreeing = {w for w in _FEMININE if not w.endswith("s")}
    seen = sum(w in agreeing for w in words) - (1 if words and words[0] in agreeing else 0)
    return seen > 1


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
                    or nxt in ("si", "cuando", "salvo", "excepto", "porque")) \
                    and _clitic_antecedent(words[k]):
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
                    not spanish and f is not None and en_form(words[k]) == "s" and en_form(words[i]) == "bare") \
                    or not spanish and plural_head_before_auxiliary(words, k, i):
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
        prev = words[i - 1].casefold() if i > 0 else ""
        if w in SUBJECT_PRONOUNS or w in ("i", "we", "you", "yo", "nosotros", "ustedes", "usted", "there"):
            if not (after_prep and prev in preps):
                return True  # "after that she"; not "en ella", "with it": a preposition's object
            seen_content = True
            continue
        if w in ADVERBS or w in NEGATIONS:
            continue
        if w in DETERMINERS:
            if not after_prep or (i > 0 and prev not in preps and seen_content):
                return True
            continue
        if not after_prep:
            return True
        if seen_content and is_name(words, i) and (prev[:1].isdigit() or not words[i - 1][:1].isupper()) \
                and prev not in preps and prev not in DETERMINERS:
            return True  # "en 1925 Frida Kahlo": a name after the fronted phrase
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


def _expletive_it(words: list[str], i: int) -> bool:
    """True when "it" at ``i`` is the expletive subject of an extraposed clause (Quirk et al. 1985,
    §18.33): "it" + a form of "be" + (adjective or noun phrase) + "to" + a verb with its own object,
    or + "that" ("it is better to take a detour", "it is clear that ..."); not "it is easy to carry",
    where the infinitive's object is "it" itself."""
    if i + 1 >= len(words) or words[i + 1].casefold() not in BE_EN:
        return False
    for k in range(i + 2, min(len(words), i + 6)):
        w = words[k].casefold()
        if w == "that":
            return True
        if w == "to" and k + 2 < len(words):
            nxt = words[k + 2].casefold()
            return nxt not in PREP_EN
    return False


def _impersonal(text: str, fronted: bool) -> bool:
    """True when the clause ``text`` has no subject to take from a conjunct: existential "haber"
    ("hay columpios", "había niebla"; RAE *Nueva gramática* §41.4), or, after a fronted phrase
    (``fronted``), a passive or impersonal "se" whose subject follows the verb ("en algunas zonas
    nunca se ha registrado lluvia", "en ella se incluyen las llamadas"; §41.6)."""
    words = _words(text)
    spanish = _spanish(words)
    if not spanish:
        return False
    vi = first_verb(words, True)
    if vi is None:
        return False
    v = words[vi].casefold()
    nxt = words[vi + 1] if vi + 1 < len(words) else ""
    if v == "hay" or v in ("había", "habrá", "hubo", "habría", "haya") and es_form(nxt) != "participle":
        return True
    if not fronted or _verb_group_start(words, vi, True) == vi or "se" not in \
            [w.casefold() for w in words[_verb_group_start(words, vi, True):vi]]:
        return False
    k = vi + 1
    while k < len(words) and (es_form(words[k]) == "participle" or words[k].casefold() in ADVERBS):
        k += 1
    if k >= len(words):
        return False
    w = fold(words[k])
    return (w in DET_ES and w not in ("al", "del")) or (w not in FUNCTION_ES and es_form(words[k]) not in (
        "infinitive", "gerund") and not words[k][:1].isdigit())


def _verb_then_infinitive(text: str) -> bool:
    """True when the clause's first verb, a full verb (not an auxiliary or modal), governs an
    infinitive right after it: "conviene salir", "no se recomienda conducir" (the infinitive is the
    subject; after a consequence, the clause is impersonal)."""
    words = _words(text)
    spanish = _spanish(words)
    vi = first_verb(words, spanish)
    if vi is None or vi + 1 >= len(words) or not spanish:
        return False
    impersonal_se = vi > 0 and words[vi - 1].casefold() == "se"  # "no se debe conducir", "se puede pasar"
    return (es_form(words[vi]) != "aux" or impersonal_se) and es_form(words[vi + 1]) == "infinitive"


def _own_subject(right: str, left_subject: str) -> str:
    """A clause's pronoun or possessive subject replaced by the first conjunct's subject (module
    docstring, "Self-contained claims")."""
    left_subject = _subject_only(left_subject)
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
        if w in SUBJECT_PRONOUNS and not (i > 0 and words[i - 1].casefold() in preps):
            if w == "it" and _expletive_it(words, i):
                return right
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
            last = gs - 1
            while last > i + 1 and (fold(words[last]) in ADVERBS or fold(words[last]) in NEGATIONS):
                last -= 1  # "su maletero solo admite": the adverb before the verb is not the noun's
            noun_end = spans[last].end()
            comma = right.find(",", spans[i + 1].end(), noun_end)
            if comma > 0:
                noun_end = comma  # "su torre, restaurada en 1990, es ...": the phrase ends at the comma
            noun = right[spans[i + 1].start():noun_end]
            if spanish:
                art = _spanish_article(words[i + 1], w == "sus", words[i + 2:])
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


def _cap(s: str) -> str:
    s = s.strip(" ,")
    return s[:1].upper() + s[1:] if s else s
