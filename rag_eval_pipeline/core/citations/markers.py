"""Inline citation markers: the ``citation_format`` options of a system and the parser that reads them.

Most RAG systems cite inside the answer text. The parser reads, per the system's
:class:`CitationFormat`:

=============  ===========================  ==================================================
syntax         written                      points at
=============  ===========================  ==================================================
``brackets``   ``[1]``, ``[1, 3]``,         positions: the n-th retrieved chunk in rank order
               ``[1][2]``, ``[1-3]``        (``numbers_refer_to: retrieved``, the default) or
                                            the n-th entry of the run's ``citations`` list
                                            (``numbers_refer_to: citations``); numbers start at
                                            ``first_number`` (1 unless the system says 0)
``fullwidth``  ``【1】``, ``【1, 2】``          as ``brackets``
``footnote``   ``[^1]``                     as ``brackets``
``ids``        ``[doc_id#n]``, ``[doc_id]``  a chunk id, or a document id (= the retrieved chunks
               (several: ``[a#1, b#0]``)    of that document, in rank order; the document itself
                                            when none of its chunks was retrieved)
=============  ===========================  ==================================================

A bracket group is a marker when at least one of its comma- (or ``;``-) separated tokens is a
number (``brackets`` / ``fullwidth``), ``^n`` (``footnote``) or an id (``ids``: a token holding
``#`` followed by a digit, a known chunk or document id, or a token *shaped like the snapshot's chunk
ids*: the same text before a final number, :func:`id_stem`, so ``kb-99`` when chunk ids are ``kb-01``,
``kb-02``). Any other group is text and stays ("[sic]", "[page 3]", "[optional]", empty "[ ]" check
boxes, a Markdown link ``[text](url)``); a number is a number, never an id. Inside a marker, a token that
is none of these is *unparseable*, a number outside the list it points into is *out of range*: both are
counted and listed (:attr:`Reference.problem`), never dropped silently. An id that is not in the
snapshot is kept as written (a chunk-level reference): the validity check reports it ``not_in_snapshot``.
Documents are the snapshot's ``doc_id``s when the caller passes ``known_chunks`` as a mapping chunk id ->
document id (else the part of each chunk id before ``#``), so ``[returns]`` names document ``returns``
whatever its chunk ids look like; for a system whose ids are document ids the retrieved list holds the
document (as its first chunk), so ``[returns]`` resolves to it.

**Binding.** Markers are removed from the text (with the spaces just before them) before anything
is judged, and each one binds to the citation unit it ends: units are the answer's sentences, list
items and ``;``-clauses (:func:`~rag_eval_pipeline.core.judges.claims.sentence_spans` with hard
line breaks and ``;`` splits, as claims are split), and a marker binds to the last unit that
starts before it ("30 días [1]." and "30 días.[1]" both bind to that sentence; a marker before
the first unit binds to the first). ALCE (Gao et al., EMNLP 2023) and the TREC 2024 RAG track
likewise attach citations to the sentence they end.

:class:`CitationFormat` is one self-contained, frozen options section (``citation_format:`` of a
system entry): ``auto`` (every syntax, the default), ``none`` (inline markers are not read: the
run's answer-level ``citations`` only) or a mapping ``{markers: [...], numbers_refer_to: ...,
first_number: ...}``. Nothing here imports Dagster.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.section_errors import did_you_mean

#: Marker syntaxes a system may use (``citation_format.markers``).
SYNTAXES = ("brackets", "fullwidth", "footnote", "ids")
#: What a number points into (``citation_format.numbers_refer_to``).
NUMBERINGS = ("retrieved", "citations")
#: ``Reference.problem`` values: counted and listed, never resolved.
PROBLEMS = ("unparseable", "out_of_range")
#: Longest range a marker may span (``[1-50]``); a longer one is unparseable.
MAX_RANGE = 50
_KEYS = ("markers", "numbers_refer_to", "first_number")

_GROUP = re.compile(r"\[(?P<b>[^\[\]\n]{0,300})\](?!\()|【(?P<f>[^【】\n]{0,300})】")
_SEP = re.compile(r"[,;，、；]")
_NUMBER = re.compile(r"^\d{1,9}$")
_RANGE = re.compile(r"^(\d{1,9})\s*[-–]\s*(\d{1,9})$")
_FOOTNOTE = re.compile(r"^\^\s*(\d{1,9})$")
_CHUNK_ID = re.compile(r"#\d+$")
_STEM = re.compile(r"^(.*?)\d+$")


@dataclass(frozen=True)
class CitationFormat:
    """How one system cites inline (module docstring).

    Fields: ``markers`` (tuple of :data:`SYNTAXES`; empty = inline markers are not read),
    ``numbers_refer_to`` (one of :data:`NUMBERINGS`), ``first_number`` (0 or 1).
    Raises ValueError for a value outside these.
    """

    markers: tuple[str, ...] = SYNTAXES
    numbers_refer_to: str = "retrieved"
    first_number: int = 1

    def __post_init__(self) -> None:
        bad = [m for m in self.markers if m not in SYNTAXES]
        if bad:
            raise ValueError(f"unknown marker syntax(es) {bad}; expected some of {list(SYNTAXES)}")
        if self.numbers_refer_to not in NUMBERINGS:
            raise ValueError(f"numbers_refer_to must be one of {list(NUMBERINGS)}, got {self.numbers_refer_to!r}")
        if isinstance(self.first_number, bool) or self.first_number not in (0, 1):
            raise ValueError(f"first_number must be 0 or 1, got {self.first_number!r}")

    @classmethod
    def problem(cls, value: Any) -> str | None:
        """What is wrong with a ``citation_format`` value, as the end of "citation_format <problem>", or
        None when :meth:`from_config` reads it."""
        try:
            cls.from_config(value, "citation_format")
        except ConfigError as exc:
            return str(exc).removeprefix("citation_format").lstrip(":. ")
        return None

    @classmethod
    def from_config(cls, value: Any, where: str = "citation_format") -> CitationFormat:
        """Read a ``citation_format`` value: None / ``"auto"`` (every syntax), ``"none"`` (no inline
        markers) or a mapping with ``markers`` (``"auto"``, ``"none"`` or a list of
        :data:`SYNTAXES`), ``numbers_refer_to``, ``first_number``. Output: a CitationFormat.
        Raises ConfigError naming ``where`` and the key for anything else (an unknown key too)."""
        if value is None or value == "auto":
            return cls()
        if value == "none":
            return cls(markers=())
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where} must be 'auto', 'none' or a mapping with keys {list(_KEYS)}, got {value!r}")
        unknown = sorted(str(k) for k in value if k not in _KEYS)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {unknown}{did_you_mean(unknown, list(_KEYS))}; expected only "
                              f"{list(_KEYS)}")
        markers = value.get("markers", "auto")
        if markers == "auto":
            markers = SYNTAXES
        elif markers == "none":
            markers = ()
        elif not isinstance(markers, (list, tuple)) or not all(isinstance(m, str) for m in markers):
            raise ConfigError(f"{where}.markers must be 'auto', 'none' or a list of {list(SYNTAXES)}, got {markers!r}")
        try:
            return cls(markers=tuple(dict.fromkeys(markers)),
                       numbers_refer_to=value.get("numbers_refer_to", "retrieved"),
                       first_number=value.get("first_number", 1))
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None

    def as_dict(self) -> dict[str, Any]:
        """The options as plain values (for run metadata)."""
        return {"markers": list(self.markers), "numbers_refer_to": self.numbers_refer_to,
                "first_number": self.first_number}


DEFAULT_FORMAT = CitationFormat()


@dataclass(frozen=True)
class Reference:
    """One reference inside a marker.

    ``written``: the token as written ("1", "doc#2", "doc"); ``target``: the cited chunk id, or a
    document id when ``level`` is "document" (a document none of whose chunks was retrieved), None
    when ``problem`` is set; ``level``: "chunk" or "document"; ``problem``: None, "unparseable" or
    "out_of_range"."""

    written: str
    target: str | None
    level: str = "chunk"
    problem: str | None = None


@dataclass(frozen=True)
class Marker:
    """One inline marker: its ``text`` as written, ``start``/``end`` offsets in the raw answer,
    ``syntax`` (one of :data:`SYNTAXES`), its ``references`` in order, and ``unit``: the index of
    the citation unit it binds to in :attr:`ParsedAnswer.units` (-1 when the answer has no unit)."""

    text: str
    start: int
    end: int
    syntax: str
    references: tuple[Reference, ...]
    unit: int = -1


@dataclass(frozen=True)
class ParsedAnswer:
    """An answer with its markers read: ``text`` (markers removed), ``units`` (spans of the
    citation units in ``text``), ``markers`` (in text order)."""

    text: str
    units: tuple[tuple[int, int], ...] = ()
    markers: tuple[Marker, ...] = field(default_factory=tuple)

    def unit_text(self, i: int) -> str:
        """The text of unit ``i``."""
        s, e = self.units[i]
        return self.text[s:e]

    def unit_references(self, i: int) -> list[Reference]:
        """The resolved references bound to unit ``i``, each target once, in marker order."""
        seen: dict[tuple[str, str | None], Reference] = {}
        for m in self.markers:
            if m.unit == i:
                for r in m.references:
                    if r.problem is None and (r.level, r.target) not in seen:
                        seen[(r.level, r.target)] = r
        return list(seen.values())

    @property
    def problems(self) -> list[tuple[Marker, Reference]]:
        """Every unparseable or out-of-range reference with its marker, in text order."""
        return [(m, r) for m in self.markers for r in m.references if r.problem is not None]


def citation_units(text: str) -> list[tuple[int, int]]:
    """Spans of the citation units of ``text``: sentences, list items and ``;``-clauses, as claims
    are split (:func:`~rag_eval_pipeline.core.judges.claims.sentence_spans` with hard line breaks,
    ``;`` splits and no glued-sentence split). Never raises."""
    from rag_eval_pipeline.core.judges.claims import sentence_spans

    return sentence_spans(text or "", hard_newlines=True, split_semicolons=True, split_glued=False)


def parse_answer(
    answer: str | None,
    fmt: CitationFormat = DEFAULT_FORMAT,
    *,
    retrieved: Sequence[str] = (),
    citations: Sequence[str] = (),
    known_chunks: Collection[str] | None = None,
    known_docs: Collection[str] | None = None,
) -> ParsedAnswer:
    """Read the inline markers of ``answer`` and bind each to its citation unit (module docstring).

    Inputs: the answer text (None → ""); the system's :class:`CitationFormat`; ``retrieved`` (chunk
    ids in rank order: what ``[n]`` points at by default); ``citations`` (the run's answer-level
    list: what ``[n]`` points at with ``numbers_refer_to: citations``); ``known_chunks`` /
    ``known_docs`` (the snapshot's ids, to recognise ``[doc_id#n]`` and ``[doc_id]`` written
    without ``#``, and ids shaped like the chunk ids; ``known_chunks`` may be a mapping chunk id ->
    document id, the snapshot's ``doc_id``; None = only ids with ``#n`` are recognised).
    Output: a :class:`ParsedAnswer`. Never raises for string input. Source: ALCE's and TREC RAG's
    bracketed citation markers bound to the sentence they end.
    """
    raw = answer or ""
    if not fmt.markers:
        return ParsedAnswer(raw, tuple(citation_units(raw)), ())
    if "[" not in raw and "\u3010" not in raw:  # no bracket group, so no marker
        return ParsedAnswer(raw, tuple(citation_units(raw)), ())
    retrieved = list(retrieved)
    ids = _snapshot_ids(known_chunks, known_docs)
    found: list[tuple[int, int, str, tuple[Reference, ...]]] = []
    for m in _GROUP.finditer(raw):
        fullwidth = m.group("f") is not None
        content = m.group("f") if fullwidth else m.group("b")
        read = _read_group(content, fullwidth, fmt, retrieved, list(citations), ids)
        if read is not None:
            found.append((m.start(), m.end(), *read))
    if not found:
        return ParsedAnswer(raw, tuple(citation_units(raw)), ())
    out: list[str] = []
    positions: list[int] = []
    last = 0
    for start, end, _, _ in found:
        out.append(raw[last:start])
        text = "".join(out).rstrip(" \t\u00a0\u3000")
        out = [text]
        positions.append(len(text))
        last = end
    out.append(raw[last:])
    stripped = "".join(out)
    units = tuple(citation_units(stripped))
    markers = []
    for (start, end, syntax, refs), p in zip(found, positions):
        unit = max((i for i, (s, _) in enumerate(units) if s < p), default=0 if units else -1)
        markers.append(Marker(raw[start:end], start, end, syntax, refs, unit))
    return ParsedAnswer(stripped, units, tuple(markers))


def _as_set(ids: Collection[str] | None) -> AbstractSet[str]:
    if ids is None:
        return set()
    return ids if isinstance(ids, (set, frozenset)) else set(ids)


def id_stem(token: str) -> str | None:
    """The shape of an id that ends in a number: the text before its last run of digits ("kb-" for
    "kb-07", "returns#" for "returns#2"), or None when the token does not end in digits, is only digits,
    or its stem holds a space or no letter (so "[1]", "[sic]" and "[page 3]" have no id shape). Never
    raises."""
    m = _STEM.match(token)
    if m is None:
        return None
    stem = m.group(1)
    if any(ch.isspace() for ch in stem) or not any(ch.isalpha() for ch in stem):
        return None
    return stem


@dataclass(frozen=True)
class SnapshotIds:
    """The snapshot's ids as the marker parser reads them: ``chunks`` (chunk ids), ``docs`` (document
    ids), ``doc_of`` (chunk id -> document id; a chunk absent from it belongs to the document before its
    ``#``) and ``stems`` (the :func:`id_stem` of every chunk id: a bracketed token of one of these shapes
    is an id even when the snapshot lacks it, so that an invented id is reported, never read as text)."""

    chunks: AbstractSet[str]
    docs: AbstractSet[str]
    doc_of: Mapping[str, str]
    stems: AbstractSet[str]

    def document(self, chunk_id: str) -> str:
        """The document id of ``chunk_id`` (``doc_of``, else the part before its last ``#``)."""
        return self.doc_of.get(chunk_id) or chunk_id.rsplit("#", 1)[0]


#: the id sets of the last few callers (newest last), so that callers taking turns do not rebuild them
_LAST_IDS: list[tuple[object, object, SnapshotIds]] = []
_KEEP_IDS = 4


def _snapshot_ids(known_chunks: Collection[str] | None, known_docs: Collection[str] | None) -> SnapshotIds:
    """:class:`SnapshotIds` of the given id sets. ``known_chunks`` may be a mapping chunk id -> document id
    (the snapshot's own ``doc_id``s: ``[doc_id]`` is then recognised for any chunk ids) or a collection of
    chunk ids (documents = the part before ``#``). Built once per pair of objects and reused while a caller
    passes the same objects answer after answer (rebuilding 200,000 ids per answer made citation judging
    quadratic in suite size)."""
    for chunks_obj, docs_obj, cached in list(_LAST_IDS):
        if chunks_obj is known_chunks and docs_obj is known_docs:
            return cached
    chunks = _as_set(known_chunks)
    doc_of: Mapping[str, str] = known_chunks if isinstance(known_chunks, Mapping) else {}
    if known_docs is not None:
        docs = _as_set(known_docs)
    elif doc_of:
        docs = set(doc_of.values())
    else:
        docs = {c.rsplit("#", 1)[0] for c in chunks}
    stems = {st for st in map(id_stem, chunks) if st is not None}
    ids = SnapshotIds(chunks, docs, doc_of, stems)
    _LAST_IDS[:] = [*_LAST_IDS[-(_KEEP_IDS - 1):], (known_chunks, known_docs, ids)]
    return ids


def strip_markers(answer: str | None, fmt: CitationFormat = DEFAULT_FORMAT, *,
                  known_chunks: Collection[str] | None = None, known_docs: Collection[str] | None = None) -> str:
    """``answer`` with its inline markers (and the spaces just before them) removed: the text claims
    are judged on. ``fmt.markers`` empty leaves the text unchanged. None → "". Never raises."""
    if not answer:
        return answer or ""
    return parse_answer(answer, fmt, known_chunks=known_chunks, known_docs=known_docs).text


def _nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s.strip())


def _read_group(content: str, fullwidth: bool, fmt: CitationFormat, retrieved: list[str],
                citations: list[str], ids: SnapshotIds) -> tuple[str, tuple[Reference, ...]] | None:
    """(syntax, references) when the bracket group is a marker under ``fmt``, else None."""
    numbers_on = ("fullwidth" if fullwidth else "brackets") in fmt.markers
    ids_on = "ids" in fmt.markers
    body = content.strip()
    if not body:
        return None
    foot = _FOOTNOTE.match(body) if not fullwidth else None
    if foot is not None:
        if "footnote" not in fmt.markers:
            return None
        return "footnote", (_number(foot.group(1), fmt, retrieved, citations),)
    tokens = [t.strip() for t in _SEP.split(body)]
    kinds: list[str | None] = []
    for t in tokens:
        if numbers_on and (_NUMBER.match(t) or _RANGE.match(t)):
            kinds.append("number")
        elif ids_on and t and (_CHUNK_ID.search(t) or _nfc(t) in ids.chunks or _nfc(t) in ids.docs
                               or id_stem(_nfc(t)) in ids.stems):
            kinds.append("id")
        else:
            kinds.append(None)
    if not any(kinds):
        return None
    refs: list[Reference] = []
    for t, kind in zip(tokens, kinds):
        if kind == "number":
            r = _RANGE.match(t)
            if r is None:
                refs.append(_number(t, fmt, retrieved, citations))
                continue
            a, b = int(r.group(1)), int(r.group(2))
            if a > b or b - a >= MAX_RANGE:
                refs.append(Reference(t, None, problem="unparseable"))
                continue
            refs.extend(_number(str(n), fmt, retrieved, citations) for n in range(a, b + 1))
        elif kind == "id":
            refs.extend(_identifier(_nfc(t), retrieved, ids))
        else:
            refs.append(Reference(t, None, problem="unparseable"))
    syntax = "ids" if "number" not in kinds else ("fullwidth" if fullwidth else "brackets")
    return syntax, tuple(refs)


def _number(token: str, fmt: CitationFormat, retrieved: list[str], citations: list[str]) -> Reference:
    pool = retrieved if fmt.numbers_refer_to == "retrieved" else citations
    i = int(token) - fmt.first_number
    if 0 <= i < len(pool):
        return Reference(token, pool[i])
    return Reference(token, None, problem="out_of_range")


def _identifier(token: str, retrieved: list[str], ids: SnapshotIds) -> list[Reference]:
    if _CHUNK_ID.search(token) or token in ids.chunks:
        return [Reference(token, token)]
    if token in ids.docs:
        hits = [c for c in retrieved if ids.document(c) == token]
        if hits:
            return [Reference(token, c) for c in hits]
        return [Reference(token, token, level="document")]
    return [Reference(token, token)]  # id-shaped, in no document of the snapshot: validity says not_in_snapshot
