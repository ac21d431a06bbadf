"""What the labelling page writes: the label choices of a level and the human-label file.

- :func:`label_options`: the keys a labeller presses, each with the raw label written to the file and the
  calibrated label it stands for (the calibration mapping's ``human`` dict, ``core/metrics/calibration.py``).
- The label file (:class:`LabelFile`): JSON Lines in the format ``judge_calibration`` reads, one
  label per line, appended with one ``write`` and an ``fsync`` under an advisory lock; undo and
  relabel rewrite the file aside and rename it over (atomic). A page reports a label saved only
  after the fsync returned.

The items labelled, their content hash and the sample are :mod:`rag_eval_pipeline.core.labelling`.
Nothing here imports Dagster.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.labelling import FAMILY_LEVELS, LabelItem
from rag_eval_pipeline.core.metrics.calibration import resolve_mapping
from rag_eval_pipeline.core.storage import write_atomic

__all__ = ["LabelFile", "label_options"]


def label_options(level: str, mapping: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The choices of the page, in key order 1, 2, 3, ...: (raw label written to the file, calibrated label).

    Claim level: SUPPORTED / CONTRADICTED / NOT_MENTIONED (as the mapping's ``labels``); response
    level: the mapping's ``labels``; a verdict family (:data:`FAMILY_LEVELS`): SUPPORTED / PARTIAL /
    NOT_SUPPORTED. The raw label is the calibrated label itself when the
    mapping's ``human`` dict maps it to itself, else the first raw label mapped to it. Raises
    ValueError when a label has no raw label, or (response level) when ``human_rule`` is not
    "label" (people would have to label claims).
    """
    if level in FAMILY_LEVELS:
        return [(v, v) for v in ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED")]
    m = resolve_mapping(mapping, level)
    if level == "response" and m["human_rule"] != "label":
        raise ValueError(f"the labelling page writes one label per answer at response level; calibration.mapping."
                         f"human_rule is {m['human_rule']!r} (set it to 'label', or calibrate at claim level)")
    out = []
    for lab in m["labels"]:
        raw = lab if m["human"].get(lab) == lab else next((k for k, v in m["human"].items() if v == lab), None)
        if raw is None:
            raise ValueError(f"calibration.mapping.human maps no raw label to {lab!r}: the page cannot write it")
        out.append((raw, lab))
    return out


class LabelFile:
    """The human-label file the page appends to: JSON Lines, one label per line.

    Every public method takes an exclusive ``flock`` on ``<file>.lock`` beside it, so two pages
    (two labellers) on one file never interleave a rewrite with an append. Raises InputError
    naming the file for a suffix other than .jsonl/.ndjson, and (from :meth:`rows`) whatever the
    validating reader raises for a bad line.
    """

    def __init__(self, path: str | Path, level: str, mapping: Mapping[str, Any] | None = None):
        self.path = Path(path)
        if self.path.suffix.lower() not in (".jsonl", ".ndjson"):
            raise InputError("the labelling page appends to a JSON Lines label file (.jsonl); point "
                             "calibration.human_labels at one (a CSV or Parquet file can be converted once)",
                             path=str(self.path))
        self.level, self.mapping = level, mapping
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")

    def _locked(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        fcntl.flock(fd, fcntl.LOCK_EX)
        return fd

    @staticmethod
    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def _read_unlocked(self) -> list[dict[str, Any]]:
        from rag_eval_pipeline.core.metrics.calibration import LABEL_FILE_SCHEMA, read_label_file

        if not self.path.exists() or self.path.stat().st_size == 0:
            return []
        if self.level in FAMILY_LEVELS:  # a family file holds rows of several families: this one's
            from rag_eval_pipeline.core.judges.human import read_human_label_rows

            rows, _ = read_human_label_rows(self.path)
            return [{**{c: r.get(c) for c in LABEL_FILE_SCHEMA}, "passages": r.get("passages")}
                    for r in rows if r.get("family") == self.level]
        return read_label_file(self.path, self.level, self.mapping).to_dicts()

    def rows(self) -> list[dict[str, Any]]:
        """Every label in the file (validated; :data:`LABEL_FILE_SCHEMA` columns), file order."""
        fd = self._locked()
        try:
            return self._read_unlocked()
        finally:
            self._unlock(fd)

    def record(self, item: LabelItem, verdict: str, annotator: str, note: str | None = None,
               quote: str | None = None, now: dt.datetime | None = None) -> dict[str, Any]:
        """Save one label of ``item`` by ``annotator``: appended and fsynced, or, when this person already
        labelled the item, the file is rewritten with the new line in place of the old one (atomic rename).

        A quote is kept for SUPPORTED and CONTRADICTED claim labels only.
        Output: the JSON object written. Raises InputError for a claim-level SUPPORTED without a quote
        (the file format's rule) or with a quote that is in no chunk of the item (a nugget's: not in the answer;
        the judge's literal-quote rule, ``core.judges.quotes.quote_in_context``), for a file whose last line
        is cut off (not valid JSON), and as
        :meth:`rows`. A complete last line that lacks only its newline gets one before the new line.
        """
        family = self.level in FAMILY_LEVELS
        needs_quote = ("SUPPORTED", "PARTIAL") if family else ("SUPPORTED",) if self.level == "claim" else ()
        if verdict in needs_quote and not (quote or "").strip():
            where = "the answer" if self.level == "nugget_coverage" else "a chunk"
            raise InputError(f"a {verdict} label needs the quote it rests on: select the words in {where} first",
                             path=str(self.path), field="quote")
        if verdict in needs_quote and item.claim_id is not None:
            # the judge path's own rule (core.judges.quotes.quote_in_context): the quote must be literally in what
            # the person was shown (the chunks; a nugget's: the answer), after typography-only normalisation
            from rag_eval_pipeline.core.judges.quotes import quote_in_context

            where = "the answer" if self.level == "nugget_coverage" else "a chunk"
            shown = [item.answer] if self.level == "nugget_coverage" else [c.get("text") for c in item.chunks]
            if not quote_in_context(quote, shown):
                raise InputError(f"a {verdict} label's quote must be words of {where} shown, copied literally; "
                                 f"{(quote or '').strip()[:80]!r} is in none: select the supporting words in {where}",
                                 path=str(self.path), field="quote")
        line: dict[str, Any] = {"system": item.system, "question_id": item.question_id}
        if item.claim_id is not None:
            line.update(claim_id=item.claim_id, claim=item.claim)
        line["verdict"] = verdict
        if family:
            line.update(family=self.level, passages=item.passages)
        no_quote = ("NOT_SUPPORTED",) if family else ("NOT_MENTIONED",)
        if item.claim_id is not None and verdict not in no_quote and quote and quote.strip():  # nothing to quote
            line["quote"] = quote.strip()
        line.update(annotator=annotator,
                    labelled_at=(now or dt.datetime.now(dt.UTC)).isoformat(timespec="seconds"),
                    content_sha256=item.content_sha256)
        if note and note.strip():
            line["note"] = note.strip()
        text = json.dumps(line, ensure_ascii=False) + "\n"
        fd = self._locked()
        try:
            existing = self._read_unlocked()
            mine = [r for r in existing if _item_of(r, self.level) == item.key and (r["annotator"] or "") == annotator]
            if mine:
                self._rewrite(replace={mine[0]["line"]: text})
            else:
                self._append(text)
        finally:
            self._unlock(fd)
        return line

    def remove_last(self, annotator: str, keys: Iterable[tuple[str, ...]] | None = None) -> dict[str, Any] | None:
        """Undo: remove ``annotator``'s last label in file order (among ``keys`` when given) by an atomic
        rewrite. Output: the removed row, or None when there is none. Raises as :meth:`rows`."""
        allowed = None if keys is None else set(keys)
        fd = self._locked()
        try:
            mine = [r for r in self._read_unlocked() if (r["annotator"] or "") == annotator
                    and (allowed is None or _item_of(r, self.level) in allowed)]
            if not mine:
                return None
            self._rewrite(replace={mine[-1]["line"]: ""})
            return mine[-1]
        finally:
            self._unlock(fd)

    def _append(self, text: str) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            size = os.fstat(fd).st_size
            if size:
                with open(self.path, "rb") as fh:
                    fh.seek(size - 1)
                    if fh.read(1) != b"\n":
                        # every line was read and validated just before (record): the last one is complete
                        # and lacks only its newline (an editor that saves without one), so add it
                        text = "\n" + text
            data = text.encode("utf-8")
            written = os.write(fd, data)
            if written != len(data):  # pragma: no cover - regular files write whole small buffers
                raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)
        if size == 0:  # a new file: make its name durable too
            dfd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dfd)
            finally:
                os.close(dfd)

    def _rewrite(self, replace: Mapping[int, str]) -> None:
        lines = self.path.read_bytes().decode("utf-8-sig").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        out = []
        for n, raw in enumerate(lines, start=1):
            if n in replace:
                if replace[n]:
                    out.append(replace[n])
            else:
                out.append(raw + "\n")

        def write(tmp: str) -> None:
            with open(tmp, "w", encoding="utf-8", newline="") as fh:
                fh.write("".join(out))
        write_atomic(self.path, write)


def _item_of(row: Mapping[str, Any], level: str) -> tuple[str, ...]:
    return (row["system"], row["question_id"]) + ((row["claim_id"],) if level != "response" else ())
