"""``kind: langsmith``: the runs a team already exports from LangSmith, one run (span) per JSON line.

Fields read, as LangSmith documents its run data format ("Run (span) data format",
https://docs.langchain.com/langsmith/run-data-format; the ``Run`` schema of the ``langsmith`` SDK):
``id``, ``trace_id`` (the id of the trace's root run), ``parent_run_id`` (absent or null on the root
run), ``run_type`` (``chain``, ``retriever``, ``llm`` ...), ``start_time`` / ``end_time`` (ISO 8601),
``inputs``, ``outputs``, ``error`` and ``extra.metadata``. Every other field is ignored.

Rules. One trace is one question: its root run is matched by ``question_id_key`` (a dotted path in
the root run, default ``extra.metadata.question_id``) or, when that is absent, by the root run's
``inputs.question`` / ``inputs.query`` / ``inputs.input`` equal to a golden question after Unicode NFKC,
case folding and whitespace collapsing. The trace's retriever run (``run_type: retriever``; the last
to start when there are several) lists ``outputs.documents`` in rank order, each a LangChain
``Document`` (``page_content``, ``metadata``) whose chunk id is at ``document_id_key`` (default
``metadata.chunk_id``) and score at ``score_key``. The answer is the root run's ``answer_key``
(default ``outputs.output``); the decision is the value at ``decision_key`` when configured, else
``error`` when the root run has an ``error``, else the rule of the ``http`` kind (empty: error, an
abstention phrase: abstain, otherwise answer). Rows are then checked by the run log's rules (a chunk
outside the snapshot, a non-finite score, a chunk twice: an error naming the file, the line and the
field). A golden question without a trace is an ``error`` row (rule ``no_trace``); a later trace of
the same question replaces an earlier one and is counted.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sections import key
from rag_eval_pipeline.core.systems.base import (
    Deployment,
    SystemKind,
    SystemRun,
    register,
    resolve,
    row_counts,
    rows_frame,
)
from rag_eval_pipeline.core.systems.kinds._shared import AnswerTextSpec, mapped_files, nonblank
from rag_eval_pipeline.core.systems.records import _MISSING, RunContext, decide, error_row, get_path

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

_LISTED = 50
_QUESTION_INPUTS = ("question", "query", "input")


@dataclass(frozen=True, kw_only=True)
class LangSmithSystemConfig(AnswerTextSpec):
    """A ``kind: langsmith`` system."""

    path: Path = key(doc="a JSONL export of LangSmith runs (one run per line), or a folder of them")
    question_id_key: str | None = key("extra.metadata.question_id", check=nonblank,
                                      doc="dotted path in the root run to the question id; null: match by text")
    answer_key: str = key("outputs.output", check=nonblank, doc="dotted path in the root run to the answer")
    decision_key: str | None = key(None, check=nonblank, doc="dotted path in the root run to the decision")
    citations_key: str | None = key(None, check=nonblank, doc="dotted path in the root run to the cited chunk ids")
    document_id_key: str = key("metadata.chunk_id", check=nonblank,
                               doc="dotted path in each retrieved document to its chunk id")
    score_key: str | None = key("metadata.score", doc="dotted path in each retrieved document to its score")


def _normalise(text: Any) -> str:
    return " ".join(unicodedata.normalize("NFKC", str(text or "")).casefold().split())


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in (".jsonl", ".ndjson"))
    if not path.is_file():
        raise InputError("LangSmith export not found; expected a JSONL file of runs or a folder of them",
                         path=str(path))
    return [path]


def _time(run: dict, name: str, where: tuple[str, int]) -> dt.datetime | None:
    value = run.get(name)
    if value in (None, ""):
        return None
    try:
        return dt.datetime.fromisoformat(str(value))
    except ValueError:
        raise InputError(f"{name} {str(value)[:40]!r} is not an ISO 8601 time", path=where[0], line=where[1],
                         field=name) from None


_EARLIEST = dt.datetime.min.replace(tzinfo=dt.UTC)


def _started(entry: tuple[str, int, dict]) -> dt.datetime:
    """When a run started, as a time (a time without offset is UTC, as LangSmith writes them; none: the
    earliest). ISO 8601 texts with different offsets do not sort as text. Raises InputError for a bad time."""
    when = _time(entry[2], "start_time", (entry[0], entry[1]))
    if when is None:
        return _EARLIEST
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def read_runs(path: Path) -> dict[str, list[tuple[str, int, dict]]]:
    """Every run of the export, by ``trace_id``: ``(file, line, run)`` in file order. Raises InputError
    (file, line, field) for a line that is not a JSON object or a run without ``id`` / ``trace_id``."""
    from rag_eval_pipeline.core.sources._records import read_records

    traces: dict[str, list[tuple[str, int, dict]]] = {}
    for file in _files(path):
        for line, run in read_records(file):
            for name in ("id", "trace_id"):
                if not isinstance(run.get(name), str) or not run[name]:
                    raise InputError(f"a LangSmith run needs {name} (a UUID string), got {run.get(name)!r}",
                                     path=str(file), line=line, field=name)
            traces.setdefault(run["trace_id"], []).append((str(file), line, run))
    return traces


def _root(group: list[tuple[str, int, dict]]) -> tuple[str, int, dict]:
    roots = [g for g in group if not g[2].get("parent_run_id")]
    return roots[0] if roots else group[0]


def _record(spec: LangSmithSystemConfig, qid: str, root: tuple[str, int, dict],
            group: list[tuple[str, int, dict]]) -> tuple[dict, tuple[str, int, dict] | None]:
    """The trace as a run-log record (checked afterwards by the run log's rules), and its retriever run."""
    file, line, run = root
    retrievers = [g for g in group if g[2].get("run_type") == "retriever"]
    hits = []
    r = None
    if retrievers:
        r = max(retrievers, key=_started)  # the last retriever run that started
        docs = get_path(r[2], "outputs.documents")
        if not isinstance(docs, list):
            raise InputError("the retriever run has no outputs.documents list", path=r[0], line=r[1],
                             field="outputs.documents")
        for i, doc in enumerate(docs):
            chunk = get_path(doc, spec.document_id_key) if isinstance(doc, dict) else _MISSING
            if chunk is _MISSING:
                raise InputError(f"document {i} has no value at {spec.document_id_key!r} (document_id_key)",
                                 path=r[0], line=r[1], field=f"outputs.documents.{i}.{spec.document_id_key}")
            score = get_path(doc, spec.score_key) if spec.score_key else _MISSING
            hits.append({"chunk_id": chunk, **({} if score is _MISSING else {"score": score})})
    answer = get_path(run, spec.answer_key)
    answer = None if answer is _MISSING or answer is None else str(answer)
    record: dict[str, Any] = {"question_id": qid, "retrieved": hits, "trace_id": run["trace_id"]}
    decision = get_path(run, spec.decision_key) if spec.decision_key else _MISSING
    if decision is not _MISSING and decision is not None:
        record["decision"] = decision
        if decision == "error":
            record["error"] = str(run.get("error") or "the trace reports decision 'error'")
        elif answer is not None:
            record["answer"] = answer
        rule = "attribute"
    elif run.get("error"):
        record.update(decision="error", error=f"root run error: {run['error']}")
        rule = "run_error"
    else:
        record["decision"], rule, reason = decide(answer, list(spec.abstain_phrases))
        if reason:
            record["error"] = reason
        elif answer is not None:
            record["answer"] = answer
    if spec.citations_key:
        cited = get_path(run, spec.citations_key)
        if cited is not _MISSING and cited is not None:
            record["citations"] = cited
    start, end = _time(run, "start_time", (file, line)), _time(run, "end_time", (file, line))
    if start is not None and end is not None and (start.tzinfo is None) == (end.tzinfo is None):
        record["latency_ms"] = (end - start).total_seconds() * 1000.0
    record["decision_rule"] = rule
    return record, r


_HIT_FIELD = re.compile(r"^retrieved\[(\d+)\]\.(chunk_id|score)$")


def _checked(record: dict, root: tuple[str, int, dict], retriever: tuple[str, int, dict] | None,
             spec: LangSmithSystemConfig, ctx: RunContext) -> dict:
    """``record`` checked by the run log's rules; a refused hit is named at its retriever run's line and
    LangSmith field (``outputs.documents.N.<document_id_key>``)."""
    from rag_eval_pipeline.core.sources.run_logs import parse_run_record

    try:
        return parse_run_record(record, root[0], root[1], ctx.system, ctx.corpus_version, ctx.golden_version,
                                known_chunks=ctx.known_chunks, require_scores=ctx.require_scores, ids=ctx.ids)
    except InputError as exc:
        m = _HIT_FIELD.match(exc.field or "")
        if m is None or retriever is None:
            raise
        prefix = f"file {exc.path}, line {exc.line}, field {exc.field!r}: "
        problem = str(exc)[len(prefix):] if str(exc).startswith(prefix) else str(exc)
        key_path = spec.document_id_key if m.group(2) == "chunk_id" else spec.score_key
        raise InputError(problem, path=retriever[0], line=retriever[1],
                         field=f"outputs.documents.{m.group(1)}.{key_path}") from None


def run(spec: LangSmithSystemConfig, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """One row per golden question from the export; counts of traces, matches and misses in ``info``."""
    source = resolve(ctx.base_dir, spec.path)
    traces = read_runs(source)
    qids = golden["question_id"].to_list()
    by_text: dict[str, list[str]] = {}
    for qid, text in zip(qids, golden["question"].to_list()):
        by_text.setdefault(_normalise(text), []).append(qid)
    known = set(qids)
    chosen: dict[str, tuple[tuple[str, int, dict], list[tuple[str, int, dict]]]] = {}
    unmatched: list[dict[str, str]] = []
    duplicates: list[str] = []
    # traces in the order their root runs started: a later trace of a question replaces an earlier one
    order = sorted(traces, key=lambda t: (_started(_root(traces[t])), t))
    for trace_id in order:
        group = traces[trace_id]
        root = _root(group)
        qid = get_path(root[2], spec.question_id_key) if spec.question_id_key else _MISSING
        if qid is _MISSING or qid is None:
            inputs = root[2].get("inputs") or {}
            text = next((inputs[k] for k in _QUESTION_INPUTS if isinstance(inputs, dict) and k in inputs), None)
            matches = by_text.get(_normalise(text), []) if text else []
            qid = matches[0] if len(matches) == 1 else None
        if qid is None or str(qid) not in known:
            unmatched.append({"trace_id": trace_id, "why": "no golden question matches"})
            continue
        qid = str(qid)
        if qid in chosen:
            duplicates.append(chosen[qid][0][2]["trace_id"])
        chosen[qid] = (root, group)
    rows = []
    for qid in qids:
        if qid not in chosen:
            rows.append(error_row(ctx, qid, f"no LangSmith trace for this question in {source}",
                                  decision_rule="no_trace"))
            continue
        root, group = chosen[qid]
        record, retriever = _record(spec, qid, root, group)
        rows.append({**_checked(record, root, retriever, spec, ctx), "question_id": qid})
    missing = [q for q in qids if q not in chosen]
    info = {"kind": "langsmith", **row_counts(rows), "source": str(source), "traces": len(traces),
            "unmatched_traces": len(unmatched), "unmatched_examples": unmatched[:_LISTED],
            "questions_without_trace": len(missing), "questions_without_trace_ids": missing[:_LISTED],
            "duplicate_traces": len(duplicates), "duplicate_trace_ids": duplicates[:_LISTED]}
    if ctx.ids is not None:
        info["id_mapping"] = ctx.ids.stats()
    return SystemRun(rows_frame(rows), info)


KIND = register(SystemKind(
    name="langsmith", section=LangSmithSystemConfig, run=run, order=60,
    watches=lambda s: (str(s.path),) + mapped_files(s),
    estimate_note="reads its LangSmith export",
    example={"name": "team_rag_langsmith", "kind": "langsmith", "path": "langsmith_runs.jsonl",
             "decision_key": "outputs.decision"},
    doc="Reads the runs your application already sends to LangSmith, exported as JSON Lines (one run per line, "
        "LangSmith's run data format): the root run of a trace is one question (matched by "
        "extra.metadata.question_id or by its input text), its retriever run lists the ranked documents, its "
        "outputs hold the answer. Of several traces of one question the one whose root run started last is kept, "
        "and of several retriever runs the last started (start times compared as times; no offset means UTC). "
        "Rows are checked by the run log's rules; a question without a trace is an error row; the on-change "
        "sensor watches the export's content.",
))
