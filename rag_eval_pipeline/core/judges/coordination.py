"""Split one sentence into self-contained claims at coordinated facts (Spanish and English, rules).

A sentence that joins two facts ("El plazo es de 15 días, y los gastos los paga la tienda") is two
claims: a judge that checks each fact against the context sentence that states it must not need
both in one sentence. :func:`split_coordinated` applies, recursively, the first rule that fits:

1. **Clause conjunctions**: ", y" / ", e" / ", and" / ", so" / ", así que" / ", por lo que", and
   "pero", "but", "aunque", "although", "though", "mientras que", "whereas", "while" (with or
   without a comma) split when *both* sides hold a verb (:func:`looks_verbal`); a bare "y" / "e" /
   "and" splits when both sides hold a verb and have at least three words each ("Opened and lightly
   used speakers are accepted" and "cable y cargador" stay whole). When the right side starts with
   its verb (no subject of its own), the subject of the left side is repeated: "El altavoz pesa
   500 g y mide 20 cm" → "El altavoz pesa 500 g" + "El altavoz mide 20 cm". The subject is the left
   side's words before its first verb, when they start with a determiner, possessive, demonstrative,
   pronoun or capitalised name (1-8 words); otherwise (Spanish drops subjects: "Tarda 3 días") none
   is added.
2. **Non-restrictive relative clauses** (after a comma): ", which" / ", who" / ", que" / ", quien" /
   ", lo cual" / ", where" / ", donde". The antecedent is the noun phrase that ends the left side,
   from its last determiner (an indefinite article becomes definite: "una garantía" → "la
   garantía", "a warranty" → "the warranty"); "lo cual" / "which" after a whole clause keeps the
   phrase. "where" / "donde" become "in" / "en" + antecedent at the end of the new claim: "Lo envían
   a Valencia, donde se revisa" → "Lo envían a Valencia" + "Se revisa en Valencia".
3. **Lists** of three or more short items (at most four words, no verb) ending the sentence, joined
   by commas and a final "y" / "e" / "o" / "u" / "and" / "or": each item becomes a claim with the
   words before the list, which must hold a verb: "Incluye el cable, la correa y la guía" →
   "Incluye el cable" + "Incluye la correa" + "Incluye la guía". An item that starts in lower case
   without a determiner gets the first item's determiner ("the cable, strap and guide").

Ranges ("entre los días 31 y 45", "between 0 °C and 40 °C") stay whole. Kept whole on purpose:
exceptions and conditions ("salvo en pedidos internacionales", "except", "unless", "si", "if"), which
restrict the fact they follow: split off, the first part would be an overgeneralisation the context
contradicts. Restrictive relatives (no comma) stay too, and so does anything inside brackets or quotes.

Verbs are recognised without a tagger: English auxiliaries and modals, "-ed" words and "-s" words
after a subject; Spanish forms of :data:`SPANISH_VERBS` (present, preterite, imperfect, future and
conditional, third person, written with their accents: "envío" is a noun, "envió" a verb) and a
clitic ("se", "le", "les", "me", "te", "nos" before a word) or "no" before a word. So a verb missing
from the list is not seen (then the sentence is not split): the splitter errs towards keeping claims whole.
"""

from __future__ import annotations

import re
import unicodedata

_DETERMINERS_ES = ("el", "la", "los", "las", "un", "una", "unos", "unas", "este", "esta", "estos",
                   "estas", "ese", "esa", "esos", "esas", "su", "sus", "mi", "mis", "tu", "tus",
                   "nuestro", "nuestra", "nuestros", "nuestras", "cada", "todo", "toda", "todos",
                   "todas", "al", "del")
_DETERMINERS_EN = ("the", "a", "an", "this", "that", "these", "those", "its", "their", "his", "her",
                   "our", "my", "your", "each", "every", "all", "some")
DETERMINERS = frozenset(_DETERMINERS_ES + _DETERMINERS_EN)
_SUBJECT_PRONOUNS = frozenset("it they he she we you i this that there ella el ellos ellas usted "
                              "ustedes nosotros esto eso".split())
_INDEFINITE = {"un": "el", "una": "la", "unos": "los", "unas": "las", "a": "the", "an": "the",
               "some": "the"}

_EN_AUX = frozenset("""
is are was were be been being am has have had do does did can could will would shall should may
might must cannot isn't aren't wasn't weren't hasn't haven't hadn't doesn't don't didn't can't
couldn't won't wouldn't shouldn't mustn't 's 're 'll 'd
""".split())
_EN_NOT_VERB = frozenset("""
this his its is was has as us thus plus less unless across always sometimes perhaps news series
species yes bus gas lens analysis basis crisis chaos famous various previous serious obvious
status virus bonus campus focus process success access business glass class pass boss
""".split())

#: Common Spanish verbs (infinitives); their third-person forms count as verbs for the splitter.
SPANISH_VERBS = """
aceptar activar admitir anotar aparecer aplicar bajar buscar cambiar cargar cerrar cobrar comprar
conectar conservar contactar contar costar cubrir cumplir deber decir dejar depender descontar
desconectar devolver durar emitir empezar encender enviar entregar escalar esperar estar existir
explicar fabricar figurar funcionar ganar gestionar guardar haber hablar hacer incluir indicar
iniciar llamar llegar llevar medir necesitar ofrecer organizar pagar parecer parpadear pasar pedir
pesar poder poner preferir presentar producir prohibir pulsar quedar quitar realizar recibir
recoger reembolsar reemplazar reparar requerir responder revisar saber salir seguir ser servir
solicitar sustituir tardar tener terminar tramitar usar utilizar vender venir ver volver abrir
admitir vivir escribir comer beber nacer morir crecer jugar ganar perder construir fundar formar
ocurrir ocupar publicar lanzar considerar conocer llamar unir crear mostrar mantener obtener
permitir proteger tocar viajar trabajar estudiar ayudar dar ir flotar simplificar añadir disponer
apagar mejorar reducir aumentar controlar cambiar comprobar confirmar enseñar entrar ocultar
olvidar acabar girar marcar notar pagar parar pensar probar regalar repetir romper sonar subir
tomar tratar valer evitar facilitar garantizar gastar elegir copiar calentar limpiar borrar
descargar instalar actualizar responder escribir leer abrir registrar reservar ajustar colocar
""".split()
_IRREGULAR_ES = frozenset("""
es son era eran fue fueron será serán sería serían está están estaba estaban estuvo estará
hay ha han había habían hubo habrá tiene tienen tenía tenían tuvo tuvieron tendrá tendrán
puede pueden podía podían pudo podrá podrán debe deben debía dio dieron da dan va van iba iban
hace hacen hizo hicieron hará harán dice dicen dijo viene vienen vino incluye incluyen incluyó
cuesta cuestan mide miden pide piden sirve sirven cubre cubren devuelve devuelven vuelve vuelven
sigue siguen requiere requieren prefiere quiere quieren empieza empiezan cierra cierran muestra
muestran cuenta cuentan descuenta descuentan sustituye sustituyen construyó fundó nació murió
juega juegan pierde pierden sabe saben conoce conocen aparece aparecen ofrece ofrecen parece
parecen produce producen mantiene mantienen obtiene obtienen crece crecen dura duran
contiene contienen contenía contuvo envía envían enviaba varía varían continúa continúan
dispone disponen dispones tienes puedes debes sabes quieres vienes vas eres estás hay necesitas
recibes
""".split())
#: Common English verbs (base forms): with "-s" / "-ed" they are verbs after a noun or pronoun.
ENGLISH_VERBS = frozenset("""
accept add allow answer apply arrive ask begin bring buy call carry change charge check close come
contain control cost cover deliver depend die do end escalate find float get give go handle help
hold include inspect keep last leave let like live look lose make mean move need offer open own pay
play provide receive refund release remain repair replace require return run say see sell send serve
ship show start stay stop take tell turn update use want work write
""".split())
_EN_IRREGULAR = frozenset("""
took made paid sent got gave went came kept began brought bought held lost meant ran said saw sold
told wrote left died born
""".split())


def _english_verb(w: str) -> bool:
    if w in ENGLISH_VERBS or w in _EN_IRREGULAR:
        return True
    for suffix, cut in (("ies", "y"), ("es", ""), ("s", ""), ("ied", "y"), ("ed", ""), ("d", "")):
        if w.endswith(suffix) and (w[: len(w) - len(suffix)] + cut) in ENGLISH_VERBS:
            return True
    return False


_ES_CLITICS = frozenset("se le les me te nos".split())
_NEGATIONS = frozenset({"no", "not", "never", "nunca", "jamas", "tampoco"})


def _fold(w: str) -> str:
    w = unicodedata.normalize("NFKD", w.casefold())
    return "".join(c for c in w if not unicodedata.combining(c))


def _spanish_forms(verbs: list[str]) -> frozenset[str]:
    """Third-person forms (with their accents) of regular Spanish verbs, plus the irregular list."""
    out = set(_IRREGULAR_ES)
    endings = {
        "ar": ("a", "an", "ó", "aron", "aba", "aban", "ará", "arán", "aría", "arían", "amos", "aste"),
        "er": ("e", "en", "ió", "ieron", "ía", "ían", "erá", "erán", "ería", "erían", "emos", "iste"),
        "ir": ("e", "en", "ió", "ieron", "ía", "ían", "irá", "irán", "iría", "irían", "imos", "iste"),
    }
    for v in verbs:
        stem, kind = v[:-2], v[-2:]
        for e in endings[kind]:
            out.add(stem + e)
    return frozenset(out)


_ES_FORMS = _spanish_forms(SPANISH_VERBS)
_WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*", re.UNICODE)


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


_LANG: list[bool] = []  # the language of the sentence being split (set by split_coordinated)


def _verb_index(words: list[str]) -> int | None:
    """Index of the first word that looks like a verb (module docstring), or None."""
    english = _LANG[-1] if _LANG else not is_spanish(words)
    for i, raw in enumerate(words):
        w = _fold(raw).replace("’", "'")
        if w in _EN_AUX:
            return i
        if raw.casefold() in _ES_FORMS and raw.casefold() not in _IRREGULAR_ES and i > 0:
            # "la funda", "una marca": after an article it is a noun; "los paga la tienda": a clitic
            # pronoun before a verb (an article or name follows it)
            p_ = _fold(words[i - 1])
            n_ = _fold(words[i + 1]) if i + 1 < len(words) else ""
            next_is_name = words[i + 1:i + 2] and words[i + 1][:1].isupper()
            if p_ in DETERMINERS and not (p_ in ("la", "las", "los", "lo") and (n_ in DETERMINERS or next_is_name)):
                continue
        if raw.casefold() in _ES_FORMS:
            return i
        if i + 1 < len(words) and (w in _ES_CLITICS or w in _NEGATIONS) and not words[i + 1][:1].isdigit():
            nxt = _fold(words[i + 1])
            if w in _NEGATIONS or nxt not in DETERMINERS:
                return i
        prev = _fold(words[i - 1]) if i > 0 else ""
        nxt = _fold(words[i + 1]) if i + 1 < len(words) else ""
        if english and _english_verb(w) and prev not in DETERMINERS and prev not in _QUANTIFIERS \
                and prev not in _PREPOSITIONS and (i > 0 or nxt in DETERMINERS or nxt[:1].isdigit()
                                                    or nxt in _PREPOSITIONS):
            return i  # "customers pay", "we ship", "lasts 20 hours"; not "the cost", "Returns are"
        if english and raw.islower() and len(w) > 3 and w not in _EN_NOT_VERB:
            after_noun = i > 0 and prev not in DETERMINERS and not prev[:1].isdigit() \
                and prev not in _PREPOSITIONS and prev not in _QUANTIFIERS and not prev.endswith(("ed", "ly"))
            if w.endswith("ed") and (i == 0 or after_noun):
                return i
            if w.endswith("s") and not w.endswith("ss") and after_noun:
                return i
            if i == 0 and w.endswith("s") and (nxt in DETERMINERS or nxt[:1].isdigit()):
                return i  # "lasts 20 hours", "covers the battery": a verb opening a conjunct
    return None


_QUANTIFIERS = frozenset("other many more most some few several both all no any two three four five "
                         "different various such own new old".split())
_ES_MARKERS = frozenset("el la los las de del que y en es un una por con para se al son esta".split())
_EN_MARKERS = frozenset("the a an of and to is in it for on with are that this be by".split())


def is_spanish(words: list[str]) -> bool:
    """True when more of ``words`` are Spanish than English function words (ties: English)."""
    es = sum(_fold(w) in _ES_MARKERS for w in words)
    en = sum(_fold(w) in _EN_MARKERS for w in words)
    return es > en


_PREPOSITIONS = frozenset("of in on at for with from to by about into over under de en con para por "
                          "sin sobre entre desde hasta a".split())


def looks_verbal(text: str) -> bool:
    """True when ``text`` holds a word the rules of the module docstring read as a verb
    (a negation word alone is not one: "but not other speakers")."""
    return _verb_index([w for w in _words(text) if _fold(w) not in _NEGATIONS]) is not None


_INTERJECTION = re.compile(r"^\s*(?:yes|yeah|no|well|oh|so|sí|si|no|bueno|pues|vale|claro)\s*,\s*", re.IGNORECASE)


def _subject(left: str) -> str | None:
    """The subject words that start ``left`` (before its first verb), or None; a leading
    interjection ("Yes, he was born ...") is skipped."""
    left = _INTERJECTION.sub("", left)
    words = _words(left)
    vi = _verb_index(words)
    if not vi or vi > 8:
        return None
    first = words[0]
    f = _fold(first)
    if not (f in DETERMINERS or f in _SUBJECT_PRONOUNS or first[:1].isupper()):
        return None
    if vi == 1 and f in DETERMINERS:
        return None
    m = re.match(r"\s*", left)
    # the subject as written: from the start of ``left`` up to the verb word
    pos = 0
    for _ in range(vi):
        mm = _WORD.search(left, pos)
        pos = mm.end()
    return left[m.end():pos].strip(" ,")


def _starts_verbal(text: str) -> bool:
    words = _words(text)
    return bool(words) and _verb_index(words) == 0


_CLAUSE_COMMA = re.compile(r",\s+(y|e|and|so|así que|asi que|por lo que|while|whereas|mientras que)\s+",
                           re.IGNORECASE)
_CLAUSE_ANY = re.compile(r",?\s+(pero|but|aunque|although|though)\s+", re.IGNORECASE)
_RANGE_OPEN = re.compile(r"\b(?:entre|between|from|de|desde)\s+(?:\S+\s+){0,3}\S*\d\S*\s*$", re.IGNORECASE)
_CLAUSE_BARE = re.compile(r"\s+(y|e|and)\s+", re.IGNORECASE)
_RELATIVE = re.compile(r",\s+(which|who|que|quien|quienes|lo cual|where|donde)\s+", re.IGNORECASE)
_END = re.compile(r"[\s.!?…]+$")


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


def _cap(s: str) -> str:
    s = s.strip(" ,")
    return s[:1].upper() + s[1:] if s else s


def _finish(s: str, end: str) -> str:
    s = _cap(s)
    return s + end if s and s[-1] not in ".!?…" else s


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
    _LANG.append(not is_spanish(_words(body)))
    try:
        parts = _split(body, depth=0)
    finally:
        _LANG.pop()
    if len(parts) <= 1:
        return [sentence]
    return [_finish(p, end or "") for p in parts if p.strip()]


def _split(text: str, depth: int) -> list[str]:
    if depth > 8:
        return [text]
    for finder in (_split_clause, _split_relative, _split_list):
        got = finder(text)
        if got is not None:
            out: list[str] = []
            for g in got:
                out.extend(_split(g, depth + 1))
            return out
    return [text]


def _split_clause(text: str) -> list[str] | None:
    for pattern, bare in ((_CLAUSE_COMMA, False), (_CLAUSE_ANY, False), (_CLAUSE_BARE, True)):
        for m in pattern.finditer(text):
            if not _top_level(text, m.start()):
                continue
            left, right = text[: m.start()], text[m.end():]
            if not left.strip() or not right.strip():
                continue
            if bare and (len(_words(left)) < 3 or len(_words(right)) < 3):
                continue
            if bare and (right[:1].isdigit() or _RANGE_OPEN.search(left)):
                continue  # "entre los días 31 y 45", "between 0 °C and 40 °C": a range, one fact
            vi = _verb_index([w for w in _words(right) if _fold(w) not in _NEGATIONS])
            if vi is None or vi > (5 if bare else 8):
                continue  # the right side is not a clause of its own ("home and school use, ...")
            if not looks_verbal(left):
                continue
            if _starts_verbal(right):
                subj = _subject(left)
                if subj:
                    right = f"{subj} {right[:1].lower() + right[1:] if not _proper(right) else right}"
            return [left, right]
    return None


def _proper(text: str) -> bool:
    w = _words(text)
    return bool(w) and w[0][:1].isupper() and _fold(w[0]) not in _SUBJECT_PRONOUNS and _fold(w[0]) not in DETERMINERS


def _antecedent(left: str) -> str | None:
    """The noun phrase that ends ``left``: the longest suffix of at most 8 words that starts with
    a determiner and holds no verb and no comma; else a trailing capitalised name."""
    words = list(_WORD.finditer(left))
    best = None
    for i in range(len(words) - 1, max(-1, len(words) - 9), -1):
        tail = left[words[i].start():]
        if "," in tail or _verb_index(_words(tail)) is not None:
            break
        if _fold(words[i].group()) in DETERMINERS:
            best = i
    if best is not None:
        np_ = left[words[best].start():].strip(" ,")
        det = _fold(words[best].group())
        if det in ("al", "del"):
            return "el" + np_[len(words[best].group()):]
        if det in _INDEFINITE:
            return _INDEFINITE[det] + np_[len(words[best].group()):]
        return np_
    if words and words[-1].group()[:1].isupper():  # a name: "Valencia", "Lumo Audio"
        j = len(words) - 1
        while j > 0 and words[j - 1].group()[:1].isupper():
            j -= 1
        return left[words[j].start():].strip(" ,")
    return None


def _split_relative(text: str) -> list[str] | None:
    for m in _RELATIVE.finditer(text):
        if not _top_level(text, m.start()):
            continue
        left, rel, right = text[: m.start()], _fold(m.group(1)), text[m.end():]
        if not looks_verbal(left) or not looks_verbal(right):
            continue
        if rel == "lo cual":
            return [left, "Esto " + right]
        ante = _antecedent(left)
        if ante is None:
            continue
        if rel in ("where", "donde"):
            prep = "in" if rel == "where" else "en"
            return [left, f"{right} {prep} {ante}"]
        return [left, f"{ante} {right}"]
    return None


def _top_commas(text: str) -> list[str]:
    out, start = [], 0
    for m in re.finditer(r",\s+", text):
        if _top_level(text, m.start()):
            out.append(text[start:m.start()])
            start = m.end()
    out.append(text[start:])
    return out


_LAST_CONJ = re.compile(r"^(?:(?P<a>.*\S)\s+|)(?:y|e|o|u|and|or)\s+(?P<b>\S.*)$", re.IGNORECASE | re.DOTALL)


def _short_item(item: str) -> bool:
    return 0 < len(_words(item)) <= 4 and not looks_verbal(item)


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
    words = list(_WORD.finditer(head))
    det_i = None
    for i in range(len(words) - 1, max(-1, len(words) - 5), -1):
        if _fold(words[i].group()) in DETERMINERS:
            det_i = i
            break
    if det_i is not None:
        cut = words[det_i].start()
    else:
        n = max(1, len(_words(items[0])))
        if len(words) <= n:
            return None
        cut = words[len(words) - n].start()
    prefix, first = head[:cut].strip(), head[cut:].strip()
    items = [first, *items]
    if any(_fold(i).rstrip(".") in ("etc", "etcetera") for i in items):
        return None  # an open list ("lápices, gomas, etc.") is one claim
    if len(items) < 3 or not prefix or not looks_verbal(prefix) or not all(_short_item(i) for i in items):
        return None
    det = _fold(words[det_i].group()) if det_i is not None else None
    if det in _INDEFINITE or det in ("al", "del"):
        det = None  # "un cable, cargador y funda": no article to copy
    out = []
    for it in items:
        w0 = _words(it)[0]
        if det and w0[:1].islower() and _fold(w0) not in DETERMINERS:
            it = f"{words[det_i].group().lower()} {it}"
        out.append(f"{prefix} {it}")
    return out
