"""Human claim labels: load them as a ``judge_labels`` table and serve them through the Judge protocol.

A model judge is validated against human annotation before its numbers are trusted (Zheng et al.,
"Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena", NeurIPS 2023; ARES, Saad-Falcon et al.,
NAACL 2024): label a few dozen cases by hand, run the judge over them, measure agreement; again
whenever the judge model or prompt changes. This module is the human side of that comparison.

File formats (chosen by suffix): ``.csv`` (UTF-8, header row, a BOM is accepted), ``.jsonl`` /
``.ndjson`` (one JSON object per line; blank lines skipped) and ``.parquet``.
Columns: required ``system``, ``question_id``, ``claim_id``, ``claim``, ``verdict``; optional
``quote``, ``justification``, ``annotator`` (who labelled; stored as ``judge_model``; "human" when
absent or blank), ``question`` and ``answer`` (the texts the annotator saw; used to find the labels
of an answer in :meth:`HumanLabelJudge.judge`), and the fields the labelling page writes:
``labelled_at`` (ISO 8601 UTC), ``content_sha256`` (hash of what the labeller saw, see
``core/labelling.py``; a label whose item has changed since is *stale*) and ``note``; and
``family`` with ``passages`` for the verdict families beside faithfulness. Any other
column is an error (it is usually a typo). Verdicts: SUPPORTED, CONTRADICTED, NOT_MENTIONED (case
and spaces/hyphens ignored: "not mentioned" → NOT_MENTIONED); a SUPPORTED label needs a non-blank
quote (no literal quote, no support: see :mod:`rag_eval_pipeline.core.judges.quotes`). ``(system, question_id,
claim_id, annotator)`` must be unique: one label per item and person (several people may label the same item).

``family`` (optional, default ``faithfulness``): ``citation_support`` (``claim_id`` is the stored
citation claim id ``<question_id>:c<n>``; ``passages``: the cited chunk ids the person read, joined
by ``|``) or ``nugget_coverage`` (``claim_id`` is the golden claim id, ``claim`` the nugget;
``passages`` ``answer`` or blank). Their verdicts are SUPPORTED / PARTIAL / NOT_SUPPORTED (TREC RAG's
full_support / partial_support / no_support and AutoNuggetizer's support / partial_support /
not_support are read as these); SUPPORTED and PARTIAL need a quote. These rows are served by
:meth:`HumanLabelJudge.judge_support` only; ``(family, system, question_id, claim_id, passages,
annotator)`` must be unique.

Response-level label files (:func:`read_response_label_rows`): required ``system``,
``question_id``, ``verdict`` (any label the calibration mapping knows); the optional columns above;
other columns are kept out of the result but allowed (datasets such as BEGIN carry their own).
``(system, question_id, annotator)`` must be unique.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.jsonio import JsonError
from rag_eval_pipeline.core.jsonio import loads as strict_json
from rag_eval_pipeline.core.judges.base import (
    AnswerJudgement,
    ClaimVerdict,
    SupportRequest,
    SupportVerdict,
    holistic_label,
)
from rag_eval_pipeline.core.judges.quotes import normalise_text, quote_in_context
from rag_eval_pipeline.core.tables import SCHEMAS, conform

__all__ = [
    "HUMAN_VERDICTS",
    "OPTIONAL_COLUMNS",
    "PAGE_COLUMNS",
    "REQUIRED_COLUMNS",
    "RESPONSE_REQUIRED_COLUMNS",
    "HumanLabelJudge",
    "load_human_labels",
    "read_human_label_rows",
    "read_response_label_rows",
]

REQUIRED_COLUMNS = ("system", "question_id", "claim_id", "claim", "verdict")
#: Written by the labelling page beside the label: when, a hash of what was shown, a free note.
PAGE_COLUMNS = ("labelled_at", "content_sha256", "note")
OPTIONAL_COLUMNS = ("quote", "justification", "annotator", "question", "answer") + PAGE_COLUMNS + ("family", "passages")
#: Verdicts of the families beside faithfulness, and the public spellings read as them.
SUPPORT_LABELS = ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED")
_SUPPORT_ALIASES = {"FULL_SUPPORT": "SUPPORTED", "SUPPORT": "SUPPORTED", "PARTIAL_SUPPORT": "PARTIAL",
                    "NO_SUPPORT": "NOT_SUPPORTED", "NOT_SUPPORT": "NOT_SUPPORTED", "NONE": "NOT_SUPPORTED"}
FAMILIES = ("faithfulness", "citation_support", "nugget_coverage")
RESPONSE_REQUIRED_COLUMNS = ("system", "question_id", "verdict")
HUMAN_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")
_ID_FIELDS = ("system", "question_id", "claim_id")


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _records(path: Path) -> tuple[list[str], list[tuple[str, int, dict[str, Any]]]]:
    """(columns, [(where-kind, line-or-row, record)]) from a CSV, JSONL or Parquet file."""
    suffix = path.suffix.lower()
    p = str(path)
    if suffix in (".csv", ".tsv"):
        try:
            text = path.read_bytes().decode("utf-8-sig", errors="strict")
        except UnicodeDecodeError as e:
            raise InputError(f"not UTF-8 text (byte {e.start})", path=p) from None
        reader = (csv.reader(io.StringIO(text, newline="")) if suffix == ".csv"
                  else csv.reader(io.StringIO(text, newline=""), delimiter="\t", quoting=csv.QUOTE_NONE))
        try:
            header = next(reader)
        except StopIteration:
            raise InputError("empty CSV file (no header row)", path=p, line=1) from None
        header = [h.strip() for h in header]
        out = []
        prev_end = reader.line_num
        for row in reader:
            start = prev_end + 1
            prev_end = reader.line_num
            if not any(c.strip() for c in row):
                continue
            if len(row) != len(header):
                raise InputError(f"{len(row)} fields, the header has {len(header)}", path=p, line=start)
            out.append(("line", start, dict(zip(header, row))))
        return header, out
    if suffix in (".jsonl", ".ndjson"):
        out, cols = [], []
        with path.open(encoding="utf-8-sig", newline="\n") as f:
            for n, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    obj = strict_json(line)  # the one strict reader: repeated keys, 100,000 brackets refused
                except JsonError as e:
                    raise InputError(f"not valid JSON ({e}); expected one JSON object per line", path=p, line=n,
                                     field="json") from None
                if not isinstance(obj, dict):
                    raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=p, line=n)
                cols += [k for k in obj if k not in cols]
                out.append(("line", n, obj))
        return cols, out
    if suffix == ".parquet":
        try:
            df = pl.read_parquet(path)
        except Exception as e:  # noqa: BLE001 - report any reader failure as bad input
            raise InputError(f"cannot read Parquet: {e}", path=p) from None
        return list(df.columns), [("row", i, r) for i, r in enumerate(df.iter_rows(named=True), start=1)]
    raise InputError(f"unknown suffix {path.suffix!r}: expected .csv, .tsv, .jsonl, .ndjson or .parquet", path=p)


def _fail(msg: str, path: str, kind: str, n: int, field: str | None) -> InputError:
    if kind == "row":
        return InputError(f"row {n}: {msg}", path=path, field=field)
    return InputError(msg, path=path, line=n, field=field)


def _str_field(rec: dict, name: str, path: str, kind: str, n: int, required: bool) -> str | None:
    v = rec.get(name)
    if isinstance(v, bool):
        raise _fail(f"expected text, got a boolean {v!r}", path, kind, n, name)
    if isinstance(v, int) and name in _ID_FIELDS:
        v = str(v)
    if v is None or (isinstance(v, str) and not v.strip()):
        if required:
            raise _fail("required value is missing or blank", path, kind, n, name)
        return None
    if not isinstance(v, str):
        raise _fail(f"expected text, got {type(v).__name__}", path, kind, n, name)
    return v.strip() if name in _ID_FIELDS or name in ("verdict", "annotator") else v


def read_human_label_rows(path: str | Path) -> tuple[list[dict[str, Any]], str]:
    """Read and validate a human label file (format in the module docstring).

    Input: path to a .csv, .jsonl/.ndjson or .parquet file. Output: ``(rows, sha256)``: one dict
    per label with every required and optional column (None when absent), verdict normalised, in
    file order; ``sha256`` of the file's bytes. Raises InputError naming the file, the line (CSV,
    JSONL) or row (Parquet) and the field: unreadable file, unknown suffix, missing or unknown
    column, blank required value, bad verdict, SUPPORTED without quote, duplicate
    (system, question_id, claim_id, annotator), an answer/question text that differs between rows
    of the same system and question, a ``content_sha256`` that is not 64 hexadecimal digits.
    """
    path = Path(path)
    p = str(path)
    if not path.is_file():
        raise InputError("file not found", path=p)
    columns, records = _records(path)
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    unknown = [c for c in columns if c not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
    if missing and path.suffix.lower() in (".jsonl", ".ndjson"):
        missing = []  # JSON Lines have no header: the first line lacking the field is reported below
    if missing and not records and path.suffix.lower() != ".csv":
        missing = []  # an empty Parquet file has no columns to check
    if missing:
        raise InputError(f"missing column(s) {missing}; required: {list(REQUIRED_COLUMNS)}",
                         path=p, line=1 if path.suffix.lower() == ".csv" else None, field=missing[0])
    if unknown:
        raise InputError(f"unknown column(s) {unknown}; allowed: "
                         f"{list(REQUIRED_COLUMNS + OPTIONAL_COLUMNS)}", path=p, field=unknown[0])
    rows: list[dict[str, Any]] = []
    seen: dict[tuple, int] = {}
    texts: dict[tuple, dict[str, tuple[str, int]]] = {}
    for kind, n, rec in records:
        extra = [k for k in rec if k not in REQUIRED_COLUMNS + OPTIONAL_COLUMNS]
        if extra:
            raise _fail(f"unknown field(s) {extra}", p, kind, n, extra[0])
        row: dict[str, Any] = {c: _str_field(rec, c, p, kind, n, required=True) for c in REQUIRED_COLUMNS}
        row.update({c: _str_field(rec, c, p, kind, n, required=False) for c in OPTIONAL_COLUMNS})
        family = (row["family"] or "faithfulness").strip()
        if family not in FAMILIES:
            raise _fail(f"family {family!r} is not one of {list(FAMILIES)}", p, kind, n, "family")
        row["family"] = family
        verdict = re.sub(r"[\s\-]+", "_", row["verdict"].upper())
        allowed = HUMAN_VERDICTS if family == "faithfulness" else SUPPORT_LABELS
        verdict = verdict if family == "faithfulness" else _SUPPORT_ALIASES.get(verdict, verdict)
        if verdict not in allowed:
            raise _fail(f"verdict {row['verdict']!r} is not one of {list(allowed)} (family {family})",
                        p, kind, n, "verdict")
        row["verdict"] = verdict
        if verdict in ("SUPPORTED", "PARTIAL") and not row["quote"]:
            raise _fail(f"a {verdict} label needs the literal quote of the context it relies on",
                        p, kind, n, "quote")
        row["passages"] = "|".join(sorted(x.strip() for x in row["passages"].split("|") if x.strip())) \
            if row["passages"] else None
        _check_page_fields(row, p, kind, n)
        key: tuple[str, ...] = (row["system"], row["question_id"], row["claim_id"], row["annotator"] or "")
        if family != "faithfulness":
            key = (family, *key[:3], row["passages"] or "", key[3])
        if key in seen:
            by = f" by annotator {key[-1]!r}" if key[-1] else ""
            raise _fail(f"duplicate label for system {row['system']!r}, question {row['question_id']!r}, claim "
                        f"{row['claim_id']!r}{by} (first at {kind} {seen[key]})", p, kind, n, "claim_id")
        seen[key] = n
        row["line"] = n
        per_answer = texts.setdefault(key[:2], {})
        for field in ("question", "answer"):
            if row[field] is None:
                continue
            if field in per_answer and per_answer[field][0] != row[field]:
                raise _fail(f"{field} text differs from {kind} {per_answer[field][1]} for the same "
                            "system and question", p, kind, n, field)
            per_answer.setdefault(field, (row[field], n))
        rows.append(row)
    return rows, _file_sha256(path)


_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _check_page_fields(row: dict[str, Any], p: str, kind: str, n: int) -> None:
    sha = row.get("content_sha256")
    if sha is not None and not _SHA256.match(sha.strip().lower()):
        raise _fail(f"expected 64 hexadecimal digits (a sha256), got {sha[:80]!r}", p, kind, n, "content_sha256")
    if sha is not None:
        row["content_sha256"] = sha.strip().lower()


def read_response_label_rows(path: str | Path, verdicts: Sequence[str] | None = None
                             ) -> tuple[list[dict[str, Any]], str]:
    """Read and validate a response-level label file (one label per answer and person).

    Input: path to a .csv, .tsv, .jsonl/.ndjson or .parquet file with ``system``, ``question_id``,
    ``verdict`` and optionally ``annotator``, ``claim_id``, ``labelled_at``, ``content_sha256``,
    ``note`` (other columns are allowed and ignored); ``verdicts``: the raw labels the calibration
    mapping knows (None = any). Output: ``(rows, sha256)``: one dict per label with those columns
    (None when absent) and ``line``, in file order; ``sha256`` of the file's bytes. Raises
    InputError naming the file, the line (row for Parquet) and the field: unreadable file, unknown
    suffix, a required column missing, a blank required value, a verdict not in ``verdicts``, a
    duplicate (system, question_id, annotator), a malformed ``content_sha256``.
    """
    path = Path(path)
    p = str(path)
    if not path.is_file():
        raise InputError("file not found", path=p)
    columns, records = _records(path)
    missing = [c for c in RESPONSE_REQUIRED_COLUMNS if c not in columns]
    if missing and (path.suffix.lower() in (".csv", ".tsv") or (records and path.suffix.lower() == ".parquet")):
        raise InputError(f"missing column(s) {missing}; required: {list(RESPONSE_REQUIRED_COLUMNS)}", path=p,
                         line=1 if path.suffix.lower() in (".csv", ".tsv") else None, field=missing[0])
    allowed = None if verdicts is None else list(verdicts)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple, int] = {}
    for kind, n, rec in records:
        row: dict[str, Any] = {c: _str_field(rec, c, p, kind, n, required=True) for c in RESPONSE_REQUIRED_COLUMNS}
        for c in ("annotator", "claim_id") + PAGE_COLUMNS:
            row[c] = _str_field(rec, c, p, kind, n, required=False) if c in rec else None
        if allowed is not None and row["verdict"] not in allowed:
            raise _fail(f"verdict {row['verdict']!r} is not one of {allowed} (the calibration mapping's "
                        "human labels)", p, kind, n, "verdict")
        _check_page_fields(row, p, kind, n)
        key = (row["system"], row["question_id"], row["claim_id"] or "", row["annotator"] or "")
        if key in seen:
            by = f" by annotator {key[3]!r}" if key[3] else ""
            raise _fail(f"duplicate label for system {key[0]!r}, question {key[1]!r}{by} "
                        f"(first at {kind} {seen[key]})", p, kind, n, "question_id")
        seen[key] = n
        row["line"] = n
        rows.append(row)
    return rows, _file_sha256(path)


def load_human_labels(path: str | Path) -> pl.DataFrame:
    """Load human claim labels as a ``judge_labels`` table (schema: ``tables.SCHEMAS``).

    Input: a .csv, .jsonl/.ndjson or .parquet file (columns in the module docstring).
    Output: one row per label, file order: judge = "human", judge_model = the row's annotator or
    "human", prompt_sha256 = sha256 of the file's bytes, repeat = 0, error = null,
    quote_found = null (the retrieved text is not known here; ``judge_runs`` or
    :class:`HumanLabelJudge` checks it), quote/justification null when absent.
    Raises InputError (file, line or row, field) as :func:`read_human_label_rows`.
    """
    rows, sha = read_human_label_rows(path)
    rows = [r for r in rows if r.get("family", "faithfulness") == "faithfulness"]
    out = [{
        "system": r["system"], "question_id": r["question_id"], "claim_id": r["claim_id"],
        "claim": r["claim"], "verdict": r["verdict"], "quote": r["quote"], "quote_found": None,
        "justification": r["justification"], "judge": "human", "judge_model": r["annotator"] or "human",
        "prompt_sha256": sha, "repeat": 0, "error": None,
    } for r in rows]
    return conform(pl.DataFrame(out, schema=SCHEMAS["judge_labels"]), "judge_labels")


def _norm(s: str | None) -> str:
    """Answer text for matching: inline citation markers stripped (``judge_runs`` strips them before
    judging), then :func:`normalise_text`."""
    if s and ("[" in s or "【" in s):
        from rag_eval_pipeline.core.citations.markers import strip_markers

        s = strip_markers(s)
    return normalise_text(s)


class HumanLabelJudge:
    """Serve human labels through the Judge protocol (``judge(question, answer, contexts)``).

    Build with :meth:`from_file` (or from rows of :func:`read_human_label_rows`). Attributes:
    ``name`` = "human", ``model`` = the single annotator id, or "human" when none or several,
    ``prompt_sha256`` = sha256 of the label file.

    Finding an answer's labels: by the normalised answer text (from the file's ``answer`` column
    or from :meth:`bind_runs`), narrowed by the question (its text from the file's ``question``
    column, or the question_id itself when the caller passes that as the question). When several
    (system, question) pairs match and their labels differ, the result is "judge_error" (ambiguous).
    :meth:`judge_for` looks up by (system, question_id) directly. When several people labelled
    the same claim, the first label in file order is served.
    """

    name = "human"

    def __init__(self, rows: list[dict[str, Any]], sha256: str, *, source: str = "human labels"):
        self.prompt_sha256 = sha256
        self.source = source
        #: (family, system, question_id, claim_id) -> labels of the support families, file order
        self._support: dict[tuple[str, str, str, str], list[dict[str, Any]]] = {}
        for r in rows:
            if r.get("family", "faithfulness") != "faithfulness":
                self._support.setdefault((r["family"], r["system"], r["question_id"], r["claim_id"]), []).append(r)
        rows = [r for r in rows if r.get("family", "faithfulness") == "faithfulness"]
        annotators = sorted({r["annotator"] for r in rows if r.get("annotator")})
        self.model = annotators[0] if len(annotators) == 1 else "human"
        self._labels: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._by_answer: dict[str, set[tuple[str, str]]] = {}
        self._questions: dict[tuple[str, str], str] = {}
        served: set[tuple[str, str, str]] = set()
        for r in rows:
            key = (r["system"], r["question_id"])
            if (*key, r["claim_id"]) in served:  # several people labelled this claim: serve the first label
                continue
            served.add((*key, r["claim_id"]))
            self._labels.setdefault(key, []).append(r)
            if r.get("answer"):
                self._by_answer.setdefault(_norm(r["answer"]), set()).add(key)
            if r.get("question"):
                self._questions[key] = _norm(r["question"])

    @classmethod
    def from_file(cls, path: str | Path) -> HumanLabelJudge:
        """Read ``path`` with :func:`read_human_label_rows`. Raises InputError as that function."""
        rows, sha = read_human_label_rows(path)
        return cls(rows, sha, source=str(path))

    def bind_runs(self, rag_runs: pl.DataFrame, questions: Mapping[str, str] | None = None) -> HumanLabelJudge:
        """Learn answer texts (and optionally question texts) from a ``rag_runs`` frame (columns
        system, question_id, answer) so that :meth:`judge` can find labels by answer. Returns self.
        Raises KeyError when a column is missing."""
        for system, qid, answer in rag_runs.select("system", "question_id", "answer").iter_rows():
            if answer and (system, qid) in self._labels:
                self._by_answer.setdefault(_norm(answer), set()).add((system, qid))
        for (system, qid) in self._labels:
            if questions and qid in questions and (system, qid) not in self._questions:
                self._questions[(system, qid)] = _norm(questions[qid])
        return self

    @property
    def keys(self) -> list[tuple[str, str]]:
        """Every (system, question_id) with labels, sorted."""
        return sorted(self._labels)

    def judge_for(self, system: str, question_id: str, contexts: list[str] | None = None) -> AnswerJudgement:
        """The labels of one (system, question_id) as an AnswerJudgement ("judged"; claim ids as in
        the file; ``quote_found`` checked against ``contexts`` when given, else False).
        Returns status "judge_error" with a JUDGE_ERROR verdict when there are no labels."""
        rows = self._labels.get((system, question_id))
        if not rows:
            return _error(f"no human labels for system {system!r}, question {question_id!r} in {self.source}")
        return self._judgement(rows, contexts or [])

    def judge(self, question: str, answer: str, contexts: list[str]) -> AnswerJudgement:
        """Judge protocol: the human labels of this answer (see the class docstring).

        Output: "no_retrieval" when no context is non-blank (as every judge); "judged" with the
        labels; "judge_error" (one JUDGE_ERROR verdict with the reason) when no labelled answer
        matches or the match is ambiguous. Never raises.
        """
        if not any(isinstance(c, str) and c.strip() for c in (contexts or [])):
            return AnswerJudgement("no_retrieval")
        cands = sorted(self._by_answer.get(_norm(answer), set()))
        if not cands:
            return _error(f"no human labels for this answer in {self.source}")
        if len(cands) > 1 and question:
            q = _norm(question)
            narrowed = [k for k in cands if self._questions.get(k) == q or _norm(k[1]) == q]
            cands = narrowed or cands
        distinct = {tuple((r["claim"], r["verdict"], r["quote"]) for r in self._labels[k]) for k in cands}
        if len(distinct) > 1:
            return _error(f"ambiguous: {len(cands)} labelled answers match ({cands[:5]}) with different labels")
        return self._judgement(self._labels[cands[0]], contexts)

    def judge_support(self, request: SupportRequest) -> list[SupportVerdict]:
        """:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport`: the people's labels of each item
        of ``request``, looked up by (family, system, question_id, item id); a label with
        ``passages`` serves only a request over exactly those passages (a label of a claim and all its
        cited chunks is not its label against one of them), a label without serves any. The first
        matching label in file order is served; no label → JUDGE_ERROR with the reason. Never raises."""
        ids = list(request.item_ids) or [str(i) for i in range(1, len(request.items) + 1)]
        wanted = "|".join(sorted(request.passage_ids))
        out = []
        for item_id in ids:
            rows = self._support.get((request.family, request.system, request.question_id, item_id), [])
            row = next((r for r in rows if not r["passages"] or r["passages"] == wanted
                        or (request.family == "nugget_coverage" and r["passages"] == "answer")), None)
            if row is None:
                out.append(SupportVerdict(item_id, "JUDGE_ERROR", None, "no human label", error=(
                    f"no {request.family} label for system {request.system!r}, question {request.question_id!r}, "
                    f"item {item_id!r}" + (f" over passages {wanted!r}" if wanted else "") + f" in {self.source}")))
                continue
            out.append(SupportVerdict(item_id, row["verdict"], row["quote"], row["justification"] or ""))
        return out

    def support_prompt_sha256(self, family: str) -> str:
        """The label file's sha256 (the same for every family)."""
        return self.prompt_sha256

    @staticmethod
    def _judgement(rows: list[dict[str, Any]], contexts: list[str]) -> AnswerJudgement:
        claims = [ClaimVerdict(r["claim_id"], r["claim"], r["verdict"], r["quote"],
                               quote_in_context(r["quote"], contexts), r["justification"] or "")
                  for r in rows]
        return AnswerJudgement("judged", claims, holistic_label([c.verdict for c in claims]))


def _error(reason: str) -> AnswerJudgement:
    return AnswerJudgement("judge_error", [ClaimVerdict("c0", "", "JUDGE_ERROR", None, False,
                                                        "no human label", error=reason)])
