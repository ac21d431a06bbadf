"""Deterministic sentence and claim splitting for Spanish, English and CJK text (no ML).

Ragas' faithfulness (Es et al., EACL 2024 demo) and FActScore (Min et al., EMNLP 2023) decompose an
answer into atomic claims before verifying each one. A model does that decomposition semantically; this module
is the rule-based stand-in used by the embedded judge: one claim per sentence, list item or
semicolon-separated clause.

Rules, in order:

1. **Blocks.** The text is cut into blocks at blank lines and at lines that start with a list
   marker (``-``, ``*``, ``+``, ``•``, ``·``, ``–``, ``—``, ``1.``, ``1)``, ``a)``, ``(a)``,
   ``#`` headings, ``>`` quotes; the marker itself is dropped). For claims (:func:`split_claims`)
   every line break also ends a block; for evidence (:func:`sentence_spans` with
   ``hard_newlines=False``) a single line break inside a paragraph is plain whitespace, since
   documents are often hard-wrapped.
2. **Sentence ends inside a block.**

   - ``。！？`` (and full-width ``．``) always end a sentence, with or without a following space.
   - ``?``, ``!``, ``…`` and ``.`` (runs such as ``?!`` or ``...`` included) end a sentence when
     followed by whitespace or the end of the block; closing quotes and brackets (``» ” ’ " ' )
     ]``) right after them stay with the sentence they close.
   - After ``.`` (or ``...``) the next non-space character must not be a lowercase letter, so
     "e.g. this" or "aprox. tres" never split, except in a block with no capital letter at all
     (lower-cased model output), where case cannot mark a sentence start, and before a word that
     starts lowercase but holds a capital or digit further on ("cDNA", "mRNA", "p53": technical
     terms written so even as a sentence's first word). Opening marks ``¿ ¡ « “ (``
     and digits start a new sentence.
   - A single ``.`` after an abbreviation does not end a sentence: a token in
     :data:`ABBREVIATIONS` (Sr., Sra., Dr., Dra., Mr., Prof., p. ej., e.g., i.e., cf., vs., aprox.,
     pág., núm., fig., vol., ...), any one-letter token (initials "J. K. Rowling", the "p." of
     "p. ej."), any dotted acronym ("U.S.", "a.m.", "EE.UU."), and "No."/"Nº." before a digit.
     "etc." is *not* an abbreviation here: it ends a sentence when the next word is capitalised.
   - Decimals (``3.5``, ``3,5``) and thousands (``1.000``, ``1,000``) never split: a sentence end
     needs whitespace after the period.
   - ``;`` followed by whitespace ends a claim (``split_semicolons=True``, the default for claims).
   - With ``split_glued=True`` (used for evidence text), "word.Word" where a lowercase letter
     precedes the period and an uppercase letter followed by a lowercase one follows it also ends
     a sentence (HaluEval's knowledge strings glue sentences this way).
3. Spans are trimmed of surrounding whitespace and of a trailing ``;``; a span without any
   letter or digit is dropped.

Coordinated facts inside a sentence ("A, y B", relative clauses, lists) are split by
:mod:`~rag_eval_pipeline.core.judges.coordination` (``split_claims(coordinated=True)``).
Limitations: a sentence
starting with a lowercase word (other than such a term) after a period is glued to the previous one; "Vitamin C. It ..."
does not split because "C." looks like an initial.
"""

from __future__ import annotations

import re

#: Lower-cased tokens (without their final period) after which a period never ends a sentence.
ABBREVIATIONS: frozenset[str] = frozenset(
    {
        # titles and forms of address (es, en)
        "sr", "sra", "srta", "sres", "sras", "dr", "dra", "drs", "mr", "mrs", "ms", "prof", "profa",
        "lic", "ing", "arq", "mtro", "mtra", "ud", "uds", "vd", "vds", "dña", "dn", "st", "sto",
        "sta", "mt", "sgto", "jr",
        # scholarly and editorial
        "e.g", "i.e", "p.ej", "ej", "cf", "vs", "viz", "approx", "aprox", "fig", "figs", "vol",
        "vols", "pág", "págs", "pag", "pags", "pp", "núm", "nro", "eds", "ibid", "et", "al",
        "apdo", "avda", "tfno", "dept", "depto", "dpto",
        # dotted forms whose pieces are longer than one letter ("EE. UU.", "EE.UU.")
        "ee", "ee.uu",
    }
)
#: Abbreviations that only hold before a digit ("No. 5", "Nº. 3"); elsewhere "no." ends a sentence.
DIGIT_ABBREVIATIONS: frozenset[str] = frozenset({"no", "nos", "nº", "n°"})

_LIST_MARKER = re.compile(
    r"[ \t]*(?:[-*+•·◦▪‣–—]|\d{1,3}[.)]|[A-Za-z][)]|\([A-Za-z0-9]{1,3}\)|#{1,6}|>)[ \t]+"
)
_CJK_END = "。！？．"
_END_CHARS = ".!?…" + _CJK_END
_CLOSERS = "»”’\"')]」』）》〉"
_ACRONYM = re.compile(r"^(?:[^\W\d_]\.)+[^\W\d_]$")
_OPENERS_STRIP = "¿¡«“‘\"'([{"


def split_claims(text: str | None, *, coordinated: bool = True) -> list[str]:
    """Split an answer into claims: one per sentence, list item or ';'-clause, in text order, then
    (``coordinated=True``) each sentence into its coordinated facts, relative clauses and list
    items, made self-contained (:func:`~rag_eval_pipeline.core.judges.coordination.split_coordinated`).

    Input: any string (None or blank gives []). Output: list of trimmed, non-empty strings, each
    holding at least one letter or digit, list markers removed; with ``coordinated=False`` each is
    an exact substring of ``text``. Never raises. Rules: module docstring (every line break ends a
    claim; semicolons split). Source: Ragas' faithfulness and FActScore (decompose the answer into
    claims before verifying them).
    """
    if not text:
        return []
    sentences = [
        text[s:e]
        for s, e in sentence_spans(text, hard_newlines=True, split_semicolons=True, split_glued=False)
    ]
    if not coordinated:
        return sentences
    from rag_eval_pipeline.core.judges.coordination import split_coordinated

    context = text if len(sentences) > 1 else None
    return [claim for sentence in sentences for claim in split_coordinated(sentence, context)]


def split_sentences(text: str | None) -> list[str]:
    """Split evidence text into sentences (soft line breaks, no ';' split, glued "end.Start").

    Input: any string (None gives []). Output: trimmed sentences in order; each is an exact
    substring of ``text``. Never raises. Rules: module docstring.
    """
    if not text:
        return []
    return [text[s:e] for s, e in sentence_spans(text)]


def sentence_spans(
    text: str,
    *,
    hard_newlines: bool = False,
    split_semicolons: bool = False,
    split_glued: bool = True,
) -> list[tuple[int, int]]:
    """Character spans ``(start, end)`` of the sentences of ``text`` (``text[start:end]``).

    Input: a string; flags as in the module docstring (defaults suit evidence text: soft line
    breaks, no semicolon split, glued sentence ends split). Output: ordered, non-overlapping
    spans, trimmed of whitespace, each containing a letter or digit. Never raises.
    """
    spans: list[tuple[int, int]] = []
    for b_start, b_end in _blocks(text, hard_newlines):
        start = b_start
        for cut in _cuts(text, b_start, b_end, split_semicolons, split_glued):
            _add_span(text, start, cut, spans)
            start = cut
        _add_span(text, start, b_end, spans)
    return spans


def _add_span(text: str, s: int, e: int, out: list[tuple[int, int]]) -> None:
    while s < e and text[s].isspace():
        s += 1
    while e > s and (text[e - 1].isspace() or text[e - 1] == ";"):
        e -= 1
    if e > s and any(ch.isalnum() for ch in text[s:e]):
        out.append((s, e))


def _blocks(text: str, hard_newlines: bool) -> list[tuple[int, int]]:
    """Blocks of ``text`` as spans: cut at blank lines, list-marker lines and (optionally) any line."""
    blocks: list[tuple[int, int]] = []
    cur_start: int | None = None
    cur_end = 0
    pos = 0
    for line in text.splitlines(keepends=True):
        l_start, l_end = pos, pos + len(line)
        pos = l_end
        content_end = l_start + len(line.rstrip("\r\n\v\f\x1c\x1d\x1e\x85\u2028\u2029"))
        if not text[l_start:content_end].strip():
            if cur_start is not None:
                blocks.append((cur_start, cur_end))
                cur_start = None
            continue
        m = _LIST_MARKER.match(text, l_start, content_end)
        if m is not None:
            if cur_start is not None:
                blocks.append((cur_start, cur_end))
            cur_start, cur_end = m.end(), content_end
            if hard_newlines:
                blocks.append((cur_start, cur_end))
                cur_start = None
            continue
        if cur_start is None or hard_newlines:
            if cur_start is not None:
                blocks.append((cur_start, cur_end))
            cur_start = l_start
        cur_end = content_end
        if hard_newlines:
            blocks.append((cur_start, cur_end))
            cur_start = None
    if cur_start is not None:
        blocks.append((cur_start, cur_end))
    return blocks


def _cuts(text: str, start: int, end: int, semicolons: bool, glued: bool) -> list[int]:
    """Positions inside ``text[start:end]`` where a sentence ends (exclusive end offsets)."""
    cuts: list[int] = []
    # A text with no capital letter at all (lower-cased model output) cannot mark sentence starts
    # by case: there "word. next" ends a sentence too (abbreviations still do not).
    lowercase_text = not any(ch.isupper() for ch in text[start:end])
    i = start
    while i < end:
        ch = text[i]
        if ch == ";" and semicolons:
            if i + 1 >= end or text[i + 1].isspace():
                cuts.append(i + 1)
            i += 1
            continue
        if ch not in _END_CHARS:
            i += 1
            continue
        j = i
        while j < end and text[j] in _END_CHARS:
            j += 1
        run = text[i:j]
        k = j
        while k < end and text[k] in _CLOSERS:
            k += 1
        if any(c in _CJK_END for c in run):
            cuts.append(k)
            i = k
            continue
        if k >= end:
            i = k
            continue
        if not text[k].isspace():
            if glued and run == "." and k == j and _glued_end(text, i, end):
                cuts.append(k)
            i = k
            continue
        nxt = k
        while nxt < end and text[nxt].isspace():
            nxt += 1
        if nxt >= end:
            i = k
            continue
        if run.endswith(".") or run.endswith("…"):
            if text[nxt].islower() and not lowercase_text and not _mixed_case_word(text, nxt, end):
                i = k
                continue
            if run == "." and _is_abbreviation(text, start, i, text[nxt]):
                i = k
                continue
        cuts.append(k)
        i = k
    return cuts


def _mixed_case_word(text: str, pos: int, end: int) -> bool:
    """True when the word at ``pos`` starts lowercase but holds a capital or a digit further on
    ("cDNA", "mRNA", "p53", "iPSCs"): a technical term written so at any place, also a sentence's
    first word."""
    m = _WORD_AT.match(text, pos, end)
    return m is not None and any(c.isupper() or c.isdigit() for c in m.group()[1:])


_WORD_AT = re.compile(r"[^\W_]+")


def _glued_end(text: str, dot: int, end: int) -> bool:
    """"word.Word": a lowercase letter (in a word of 2+ letters) before, "Xy" after the period."""
    if dot < 2 or dot + 2 >= end:
        return False
    if not (text[dot - 1].islower() and text[dot - 2].isalpha()):
        return False
    return text[dot + 1].isupper() and text[dot + 2].islower()


def _is_abbreviation(text: str, block_start: int, dot: int, next_char: str) -> bool:
    """True when the token that ends at ``dot`` (the period) is an abbreviation."""
    s = dot
    while s > block_start and not text[s - 1].isspace():
        s -= 1
    token = text[s:dot].lstrip(_OPENERS_STRIP).lower()
    if not token:
        return False
    if token in ABBREVIATIONS:
        return True
    if token in DIGIT_ABBREVIATIONS:
        return next_char.isdigit()
    if len(token) == 1 and token.isalpha():
        return True
    return bool(_ACRONYM.match(token))
