"""Rules 2, 4 and 5 of the claim splitter (:mod:`~rag_eval_pipeline.core.judges.coordination`):
relative clauses after a comma, lists of three or more items, and a period's length and start.
"""

from __future__ import annotations

import re

from rag_eval_pipeline.core.judges.clauses import (
    _INDEFINITE,
    DETERMINERS,
    _cap,
    _conjunct_kind,
    _object_index,
    _own_subject,
    _spanish,
    _spanish_article,
    _spans,
    _subject_prefix,
    _top_commas,
    _top_level,
    _words,
    looks_verbal,
)
from rag_eval_pipeline.core.judges.morphology import (
    PREP_EN,
    PREP_ES,
    finite_at,
    first_verb,
    fold,
)

_RELATIVE = re.compile(r",\s+(which|who|que|quien|quienes|lo cual|where|donde)\s+", re.IGNORECASE)
#: A Spanish relative introduced by a preposition: ", en la que", ", a los cuales", ", al que". (English
#: ", in which" is left whole: its antecedent is often not the last noun phrase.)
_PREP_RELATIVE = re.compile(
    r",\s+(?P<prep>en|a|de|con|por|para|sobre|desde|hacia|bajo|tras)"
    r"\s+(?:(?:el|la|los|las)\s+(?:que|cual|cuales)|quien|quienes)\s+"
    r"|,\s+(?P<contracted>al|del)\s+(?:que|cual)\s+", re.IGNORECASE)
_TRAILING_DATE_PP = re.compile(r"\s+(?:en|in|on|de)\s+\d[\d.,]*\s*$", re.IGNORECASE)
_PERIOD_UNITS = r"(?:días|dias|semanas|meses|años|anos|horas|minutos|days|weeks|months|years|hours|minutes)"
_ORIGIN = re.compile(
    rf"^(?P<subj>.+?)\s+(?P<cop>es de|son de|será de|is|are|was|will be)\s+(?P<amount>\S+)\s+(?:[^\W\d_]+\s+)?"
    rf"{_PERIOD_UNITS}"
    rf"(?P<qual>(?:\s+[^\W\d_]+){{0,2}}?)\s+(?P<from>desde|a partir de|from|after|starting from)\s+(?P<origin>\S.*)$",
    re.IGNORECASE)



# --- rule 2: relative clauses ----------------------------------------------------------------------


def _antecedent(left: str, last_phrase: bool = False) -> str | None:
    """The noun phrase that ends ``left``: the longest suffix of at most 8 words that starts with
    a determiner and holds no verb and no comma (with ``last_phrase``, none that crosses a
    preposition: "el jueves en la sala 3" → "la sala 3"); a trailing "en 1937" removed; a
    number-initial phrase gets a definite article; else a trailing capitalised name or the phrase
    after the last preposition."""
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
        if last_phrase and best is not None and w in (PREP_ES | PREP_EN) - {"de", "of"}:
            break  # a preposition's relative: its antecedent is the last phrase ("en la sala 3")
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


def _split_prep_relative(text: str) -> list[str] | None:
    """", en la que hay columpios" → "En la zona de juegos hay columpios": the preposition and the
    antecedent take the relative's place at the front of its clause."""
    for m in _PREP_RELATIVE.finditer(text):
        if not _top_level(text, m.start()):
            continue
        left, right = text[: m.start()], text[m.end():]
        if not right.strip() or not looks_verbal(left) or _conjunct_kind(right)[0] == "NP":
            continue
        ante = _antecedent(left, last_phrase=True)
        if ante is None:
            continue
        prep = (m.group("prep") or m.group("contracted")[:-1]).casefold()  # "al que" → "a", "del que" → "de"
        aw = _words(ante)
        if prep in ("a", "de") and aw and aw[0].casefold() == "el":
            return [left, f"{'al' if prep == 'a' else 'del'} {ante[len(aw[0]):].strip()} {right}"]
        return [left, f"{prep} {ante} {right}"]
    return None


def _split_relative(text: str) -> list[str] | None:
    got = _split_prep_relative(text)
    if got is not None:
        return got
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
            ante: str | None = left.strip()
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
        if det and det_i is not None and w0[:1].islower() and fold(w0) not in DETERMINERS:
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
