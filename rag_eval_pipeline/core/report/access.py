"""Who may read what in a report: the access-control policy, apart from any rendering.

A chunk is *restricted* for the viewer when its ``acl`` is null (unknown: fail closed) or non-empty
and shares no group with ``viewer_groups`` (an empty ``acl`` means everyone). Then:

1. a restricted chunk's text and title are never shown: its preview reads
   ``[restricted: N chars hidden]``;
2. the answer of a (system, question), its claims, quotes, justifications and judge errors are
   withheld as a whole when any chunk among that run's retrieved ids or cited ids is restricted;
3. a question's reference answer is withheld when any of its golden evidence chunks (``relevant``
   or a claim's ``supporting`` ids) is restricted;
4. as a second line of defence, every other text shown (question, answer, claim, quote, reference
   answer, error) is withheld when it contains the whole text of a restricted chunk or any
   20-character substring of one, compared on their *skeletons* (:func:`skeleton`): accents removed
   (``é`` is ``e``), Unicode NFKC, case folded, each confusable character replaced by its ASCII
   look-alike (Unicode TR39's confusables data, as shipped by ``confusable_homoglyphs``: Cyrillic
   ``р`` is ``p``), and everything that is not a letter or digit dropped: spaces, punctuation and
   invisible characters (a zero-width space between every character hides nothing);
5. withheld means nothing derived from the text is shown either: when an answer is withheld, so
   are its claims, their quotes and the judge's notes and errors beside them; when one claim (or its
   quote, or its note) is withheld, the whole claim row is (a rule-based note lists the claim's
   missing words and numbers).

A chunk id missing from the snapshot cannot be judged and does not by itself withhold anything.
Rules 1 and 4 are enforced here (:class:`ReportAccess`); rules 2 and 3 are decided by the sections
that know a run's chunks, which pass the reason to :meth:`ReportAccess.show`. Nothing here imports Dagster.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import lru_cache
from itertools import chain
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.report.blocks import Cell

PREVIEW_CHARS = 200
LEAK_WINDOW = 20


def readable_by(acl: Sequence[str] | None, viewer_groups: Iterable[str]) -> bool:
    """True when a chunk with ``acl`` may be shown to a reader in ``viewer_groups``.

    Input: the chunk's acl (list of group names; empty = everyone; None = unknown) and the viewer's
    groups. Output: True for an empty acl or one sharing a group with the viewer; False for None
    (fail closed) or a disjoint acl. Raises nothing.
    """
    if acl is None:
        return False
    acl = list(acl)
    return not acl or bool(set(acl) & set(viewer_groups))


_NOT_ALNUM = re.compile(r"[\W_]+")


@lru_cache(maxsize=1)
def _confusable_table() -> dict[int, str]:
    """Code point -> its ASCII letter or digit look-alike (the smallest of its confusable class), from the
    Unicode confusables data that ``confusable_homoglyphs`` ships (``confusables.json``)."""
    import confusable_homoglyphs

    data = json.loads((Path(confusable_homoglyphs.__file__).parent / "confusables.json").read_text(encoding="utf-8"))
    table: dict[int, str] = {}
    for char, glyphs in data.items():
        if len(char) != 1:
            continue
        ascii_like = [c.casefold() for c in [char] + [g["c"] for g in glyphs]
                      if len(c) == 1 and c.isascii() and c.isalnum()]
        if ascii_like:
            table[ord(char)] = min(ascii_like)
    return table


def skeleton(text: str | None) -> str:
    """The form restricted text is matched in: accents removed (NFD, combining marks dropped), NFKC, case
    folded, confusables mapped to their ASCII look-alike, then only letters and digits kept (module
    docstring, rule 4): ``Projéct Fälcon`` and ``Project Falcon`` have one skeleton.

    Input: a text (None -> ""). Output: str. Definition: Unicode TR39 "skeleton" (confusable detection),
    simplified to one ASCII representative per confusable class, plus UAX #15 NFD/NFKC; combining marks
    are Unicode general category Mn. Never raises."""
    decomposed = unicodedata.normalize("NFD", text or "")
    bare = "".join(c for c in decomposed if unicodedata.category(c) != "Mn")
    folded = unicodedata.normalize("NFKC", bare).casefold()
    return _NOT_ALNUM.sub("", folded.translate(_confusable_table()))


def _norm(text: str) -> str:
    return skeleton(text)


def find_leaks(texts: Iterable[str | None], restricted_texts: Iterable[str | None],
               window: int = LEAK_WINDOW) -> set[str]:
    """The texts that contain restricted text.

    Inputs: ``texts`` to be shown, ``restricted_texts`` (texts of chunks the viewer may not read),
    ``window`` (int >= 1). Output: the subset of ``texts`` that contain a whole restricted text
    shorter than ``window``, or any ``window``-character substring of a longer one, compared after
    case folding and collapsing whitespace. Cost: one pass over the restricted texts against an index
    of the shown texts' windows (not built when no restricted text is given). Texts are compared on
    their :func:`skeleton` (so ``window`` counts letters and digits). Raises ValueError for ``window`` < 1.
    """
    if window < 1:
        raise ValueError(f"window must be >= 1, got {window}")
    restricted = (rn for rn in (_norm(r or "") for r in restricted_texts) if rn)
    first = next(restricted, None)
    if first is None:  # nothing restricted: nothing can leak (no index of the shown texts is built)
        return set()
    shown = {t: _norm(t) for t in texts if t}
    index: dict[str, set[str]] = {}
    for original, norm in shown.items():
        for i in range(len(norm) - window + 1):
            index.setdefault(norm[i:i + window], set()).add(original)
    leaks: set[str] = set()
    for rn in chain([first], restricted):
        if len(rn) < window:
            leaks.update(o for o, n in shown.items() if rn in n)
            continue
        for i in range(len(rn) - window + 1):
            hit = index.get(rn[i:i + window])
            if hit:
                leaks.update(hit)
    return leaks


class ChunkRows(Mapping):
    """chunk_id -> that chunk's row (chunk_id, text, title, status, acl as a dict), read from the snapshot frame
    when asked: a report shows a few dozen chunks of a corpus of any size, so the rows are not all turned into
    Python objects. The first row of a repeated chunk_id wins."""

    def __init__(self, snapshot: pl.DataFrame):
        self._frame = snapshot.select("chunk_id", "text", "title", "status", "acl")
        self._index: dict[str, int] = {}
        for i, cid in enumerate(self._frame["chunk_id"].to_list()):
            self._index.setdefault(cid, i)

    def __getitem__(self, chunk_id: str) -> dict:
        return self._frame.row(self._index[chunk_id], named=True)

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def __contains__(self, chunk_id: object) -> bool:
        return chunk_id in self._index


class ReportAccess:
    """The viewer's view of the snapshot (rules 1 and 4 of the module docstring).

    Input: a corpus_snapshot frame (chunk_id, text, title, status, acl) and the viewer's groups.
    Use: register every text that may be shown with :meth:`want`, call :meth:`finalize` once (one
    leak scan over all of them), then render with :meth:`show` and :meth:`preview`. ``withheld``
    counts texts withheld, ``hidden_previews`` restricted chunk previews hidden.
    """

    def __init__(self, snapshot: pl.DataFrame, viewer_groups: Sequence[str]):
        self.viewer = tuple(viewer_groups)
        self.chunks = ChunkRows(snapshot)
        first = snapshot.select("chunk_id", "acl").unique("chunk_id", keep="first", maintain_order=True)
        self.restricted = {cid for cid, acl in first.iter_rows() if not readable_by(acl, self.viewer)}
        self.withheld = 0
        self.hidden_previews = 0
        self._leaks: set[str] | None = None
        self._pending: set[str] = set()

    def is_restricted(self, chunk_id: str) -> bool:
        """True when the chunk is in the snapshot and the viewer may not read it."""
        return chunk_id in self.restricted

    def want(self, *texts: str | None) -> None:
        """Register texts that may be shown (None and "" are ignored); call before :meth:`finalize`."""
        self._pending.update(t for t in texts if t)

    def finalize(self) -> None:
        """Scan every registered text for restricted text (rule 4), once."""
        self._leaks = find_leaks(self._pending, (self.chunks[c]["text"] for c in self.restricted))

    def leak_reason(self, *texts: str | None) -> str | None:
        """Why any of ``texts`` must be withheld by rule 4 (it contains restricted text), or None; counts nothing.
        Raises RuntimeError before :meth:`finalize`."""
        if self._leaks is None:
            raise RuntimeError("ReportAccess.finalize() must run before leak_reason()")
        for text in texts:
            if not text:
                continue
            if text in self._leaks or (text not in self._pending and find_leaks(
                    [text], (self.chunks[c]["text"] for c in self.restricted))):
                return "contains text of a restricted chunk"
        return None

    def show(self, text: str | None, withhold_reason: str | None = None) -> Cell:
        """The text as a cell, or a restricted marker when a rule withholds it.

        ``withhold_reason`` (rules 2 and 3, decided by the caller) withholds it outright; otherwise it
        is withheld when the leak scan found restricted text in it, or when it was never registered
        with :meth:`want` and contains restricted text. Raises RuntimeError before :meth:`finalize`.
        """
        if text is None:
            return Cell("(none)", css="na")
        if self._leaks is None:
            raise RuntimeError("ReportAccess.finalize() must run before show()")
        if withhold_reason is None and text not in self._pending and find_leaks(
                [text], (self.chunks[c]["text"] for c in self.restricted)):
            withhold_reason = "contains text of a restricted chunk"
        if withhold_reason is None and text in self._leaks:
            withhold_reason = "contains text of a restricted chunk"
        if withhold_reason:
            self.withheld += 1
            return Cell(f"[restricted: withheld, {withhold_reason}]", css="restricted")
        return Cell(text)

    def preview(self, chunk_id: str) -> tuple[Cell, Cell]:
        """(title, preview) cells of one chunk."""
        chunk = self.chunks.get(chunk_id)
        if chunk is None:
            return Cell("(not in snapshot)", css="na"), Cell("(not in snapshot)", css="na")
        text = chunk["text"] or ""
        if chunk_id in self.restricted:
            self.hidden_previews += 1
            return (Cell("[restricted]", css="restricted"),
                    Cell(f"[restricted: {len(text)} chars hidden]", css="restricted"))
        prev = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS].rstrip() + " …"
        return Cell(chunk["title"] or ""), Cell(prev)

