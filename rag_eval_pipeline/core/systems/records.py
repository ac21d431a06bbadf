"""From one system reply to one ``rag_runs`` row: the default contract, ``response_fields`` mapping,
decision rules, and ``error`` rows.

The default contract: the reply is one object in the run-log schema (docs/systems.md, "Logs of your
own RAG system"), checked by the same rules as a log line (:func:`parse_run_record`). ``question_id`` may be
left out (it is the question asked); when present it must be that question. With ``response_fields``
the reply is any JSON document and each field is read at a dotted path (``data.hits``,
``choices.0.text``); a hit's ``chunk_id`` and ``score`` paths are relative to the hit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import InputError

if TYPE_CHECKING:
    import polars as pl

    from rag_eval_pipeline.core.systems.id_mapping import IdMapper

_MISSING = object()

#: Bounds on one reply of a live system (``http``, ``python``, ``traces``). A reply past one of them is an
#: ``error`` row whose ``error`` names the bound; nothing of it is stored, judged or shown.
MAX_ANSWER_CHARS = 100_000
MAX_RETRIEVED = 10_000
MAX_CITATIONS = 10_000
MAX_TEXT_FIELD_CHARS = 100_000  # ``error`` and the other free-text fields
#: Default of the per-system ``max_reply_bytes`` (the body's bytes, compressed and decompressed).
DEFAULT_MAX_REPLY_BYTES = 10 * 2**20
#: Largest ``max_reply_bytes`` accepted (1 GiB): the cap exists to keep one reply's memory bounded.
MAX_REPLY_BYTES_LIMIT = 2**30


@dataclass(frozen=True)
class RunContext:
    """What every runner needs to stamp and check rows: the names and versions being evaluated.

    ``known_chunks``: the snapshot's chunk ids (every retrieved or cited id must be one);
    ``require_scores``: every hit needs a score (``ranking_mode: trec_eval``); ``snapshot``: the
    ``corpus_snapshot`` frame (for kinds that retrieve themselves, e.g. ``reference``); ``base_dir``: the
    configuration's folder, against which a system's relative paths are resolved; ``ids``: the
    system's id mapper (``core/systems/id_mapping.py``: its ``chunk_map`` and the alignment of
    passage texts; ``core/systems/runs.py`` sets it for every kind), None to read ids as snapshot
    chunk ids.
    """

    system: str
    corpus_version: str
    golden_version: str
    known_chunks: frozenset[str] | None = None
    require_scores: bool = False
    snapshot: pl.DataFrame | None = None
    base_dir: Path | None = None
    ids: IdMapper | None = None


class ReplyError(Exception):
    """A reply that cannot become a row; the message names the system, the question and the field."""


class ReplyTooLarge(ReplyError):
    """A reply past one of the bounds (module constants, ``max_reply_bytes``); counted as ``too_large``."""


def json_size(value: Any, limit: int) -> int:
    """About how many bytes ``value`` takes as JSON (strings counted in characters, 8 per number), stopping
    once past ``limit``. Iterative, so a deeply nested value cannot exhaust the stack.

    Input: a value returned by a callable (dicts, lists, strings, numbers, anything else by its
    ``repr`` length up to ``limit``). Output: an int, at most a little over ``limit``. Never raises."""
    total, stack = 0, [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            total += len(node) + 2
        elif isinstance(node, dict):
            total += 2
            for k, v in node.items():
                total += (len(k) if isinstance(k, str) else 8) + 3
                stack.append(v)
        elif isinstance(node, (list, tuple)):
            total += 2 + len(node)
            stack.extend(node)
        elif node is None or isinstance(node, (bool, int, float)):
            total += 8
        else:
            total += 64
        if total > limit:
            return total
    return total


def check_bounds(record: Any, ctx: RunContext, question_id: str, where: str = "reply") -> None:
    """Raise ReplyTooLarge when ``record`` (a run-log object) holds an answer longer than
    :data:`MAX_ANSWER_CHARS` characters, more than :data:`MAX_RETRIEVED` hits or :data:`MAX_CITATIONS`
    citations, or a free-text field longer than :data:`MAX_TEXT_FIELD_CHARS`. Checked before anything
    else reads the record (a 20 MB answer is never judged). Other shapes are left to the schema checks."""
    if not isinstance(record, dict):
        return
    head = f"system {ctx.system!r}, question {question_id!r}: {where}"
    bounds = (("answer", MAX_ANSWER_CHARS), ("error", MAX_TEXT_FIELD_CHARS), ("model", MAX_TEXT_FIELD_CHARS),
              ("prompt_version", MAX_TEXT_FIELD_CHARS), ("system_version", MAX_TEXT_FIELD_CHARS))
    for key, bound in bounds:
        value = record.get(key)
        if isinstance(value, str) and len(value) > bound:
            raise ReplyTooLarge(f"{head} field {key!r} has {len(value)} characters; expected at most {bound}")
    for key, bound in (("retrieved", MAX_RETRIEVED), ("citations", MAX_CITATIONS)):
        value = record.get(key)
        if isinstance(value, list) and len(value) > bound:
            raise ReplyTooLarge(f"{head} field {key!r} lists {len(value)} items; expected at most {bound}")


def get_path(document: Any, dotted: str) -> Any:
    """The value at a dotted path (``a.b.0.c``: keys of objects, indexes of lists), or ``_MISSING``."""
    node = document
    for part in dotted.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def fill_template(template: Any, question_id: str, question: str, user_groups: list[str]) -> Any:
    """The request body for one question from ``request_template``.

    A string that is exactly ``{user_groups}`` becomes the list; exactly ``{question}`` or
    ``{question_id}`` the string; inside a longer string each placeholder is replaced by its text
    (user groups joined by commas). Objects and lists are filled recursively; other values kept.
    """
    if isinstance(template, dict):
        return {k: fill_template(v, question_id, question, user_groups) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, question_id, question, user_groups) for v in template]
    if isinstance(template, str):
        if template == "{user_groups}":
            return list(user_groups)
        if template == "{question}":
            return question
        if template == "{question_id}":
            return question_id
        return (template.replace("{question_id}", question_id).replace("{question}", question)
                .replace("{user_groups}", ",".join(user_groups)))
    return template


def abstains(text: str | None, phrases: list[str]) -> bool:
    """True when ``text`` contains one of ``phrases`` (case-insensitive substring)."""
    low = (text or "").casefold()
    return any(p.casefold() in low for p in phrases)


def decide(answer: str | None, phrases: list[str]) -> tuple[str, str, str | None]:
    """The documented rule for a system that reports no decision: (decision, rule, error).

    An empty or missing answer is ``error`` (rule ``empty_output``), an answer containing an
    abstention phrase is ``abstain`` (``abstain_phrase``), anything else ``answer`` (``default_answer``).
    """
    if answer is None or not str(answer).strip():
        return "error", "empty_output", "the system returned no answer text"
    if abstains(answer, phrases):
        return "abstain", "abstain_phrase", None
    return "answer", "default_answer", None


def error_row(ctx: RunContext, question_id: str, reason: str, latency_ms: float | None = None,
              system_version: str | None = None, trace_id: str | None = None,
              decision_rule: str | None = None) -> dict:
    """A ``rag_runs`` row with decision ``error`` and ``reason`` in ``error``; nothing retrieved."""
    return {
        "system": ctx.system, "question_id": question_id, "retrieved": [], "decision": "error", "answer": None,
        "citations": [], "error": reason, "corpus_version": ctx.corpus_version,
        "golden_version": ctx.golden_version, "retriever": None, "generator": None, "model": None,
        "prompt_version": None, "latency_ms": latency_ms, "system_version": system_version,
        "trace_id": trace_id, "decision_rule": decision_rule,
    }


def _located(exc: InputError) -> str:
    return f"reply field {exc.field!r}: {str(exc).split(': ', 1)[-1]}" if exc.field else str(exc)


def record_to_row(record: dict, ctx: RunContext, question_id: str, *, where: str = "reply") -> dict:
    """Check a run-log object against the log schema and return its ``rag_runs`` row.

    Input: the object (``question_id`` optional), the context, the question asked. Output: the row
    with the optional columns null. Raises ReplyError naming system, question and field for anything
    a log line would be refused for, or a ``question_id`` other than the one asked.
    """
    from rag_eval_pipeline.core.sources.run_logs import parse_run_record
    if not isinstance(record, dict):
        raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: {where} is a JSON "
                         f"{type(record).__name__}, expected an object in the run-log schema")
    check_bounds(record, ctx, question_id, where)
    asked = record.get("question_id", question_id)
    if asked != question_id:
        raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: {where} field 'question_id' is "
                         f"{asked!r}; expected the question asked")
    try:
        row = parse_run_record({**record, "question_id": question_id}, None, None, ctx.system, ctx.corpus_version,
                               ctx.golden_version, known_chunks=ctx.known_chunks,
                               require_scores=ctx.require_scores, ids=ctx.ids)
    except InputError as exc:
        raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: {where} {_located(exc)}") from None
    # measured by the caller, not taken from the reply
    return {**row, "latency_ms": None, "system_version": None, "decision_rule": None}


def mapped_to_row(reply: Any, fields: Mapping[str, str], phrases: list[str], ctx: RunContext,
                  question_id: str) -> dict:
    """Read a reply of another shape through ``response_fields`` (dotted paths) into a row.

    ``retrieved`` is required (a list; each hit's ``chunk_id``, ``score`` and ``text`` paths are
    relative to the hit, rank = list order; a hit without an id but with passage text at the
    ``text`` path is aligned to the snapshot by its text); ``answer``, ``decision``, ``citations``,
    ``error``, ``model``, ``prompt_version`` are read when mapped. Without a ``decision`` path the decision follows
    :func:`decide` and ``decision_rule`` records the rule. Raises ReplyError naming the system, the
    question and the missing path, or as :func:`record_to_row` for the values found.
    """
    def at(key: str, required: bool):
        value = get_path(reply, fields[key])
        if value is _MISSING:
            if required:
                shape = sorted(reply)[:10] if isinstance(reply, dict) else type(reply).__name__
                raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: the reply has no value at "
                                 f"path {fields[key]!r} (response_fields.{key}); top-level keys: {shape}")
            return None
        return value

    hits = at("retrieved", True)
    if isinstance(hits, list) and len(hits) > MAX_RETRIEVED:
        raise ReplyTooLarge(f"system {ctx.system!r}, question {question_id!r}: path {fields['retrieved']!r} lists "
                            f"{len(hits)} hits; expected at most {MAX_RETRIEVED}")
    if not isinstance(hits, list):
        raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: path {fields['retrieved']!r} holds a "
                         f"{type(hits).__name__}, expected a list of hits")
    retrieved = []
    for i, hit in enumerate(hits):
        chunk = get_path(hit, fields["chunk_id"]) if isinstance(hit, (dict, list)) else _MISSING
        text = get_path(hit, fields["text"]) if "text" in fields and isinstance(hit, (dict, list)) else _MISSING
        if chunk is _MISSING and text is _MISSING:
            raise ReplyError(f"system {ctx.system!r}, question {question_id!r}: hit {i} of {fields['retrieved']!r} "
                             f"has no value at path {fields['chunk_id']!r} (response_fields.chunk_id)"
                             + (f" nor {fields['text']!r} (response_fields.text)" if "text" in fields else ""))
        score = get_path(hit, fields["score"])
        retrieved.append({**({"chunk_id": chunk} if chunk is not _MISSING else {"text": text}),
                          **({} if score is _MISSING else {"score": score})})
    record: dict[str, Any] = {"retrieved": retrieved}
    for key in ("answer", "citations", "error", "model", "prompt_version"):
        if key in fields:
            value = at(key, key == "answer")
            if value is not None:
                record[key] = value
    rule = None
    if "decision" in fields:
        record["decision"] = at("decision", True)
    else:
        record["decision"], rule, reason = decide(record.get("answer"), phrases)
        if reason and "error" not in record:
            record["error"] = reason
    row = record_to_row(record, ctx, question_id)
    row["decision_rule"] = rule
    return row
