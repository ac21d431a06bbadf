"""Reply validation of the model judge: parse a reply's JSON and check it against its task's rules,
in code, whatever the server promised (one function per task).

Every failure raises :class:`~rag_eval_pipeline.core.judges.transport.AttemptError` with a reason:
``schema_mismatch`` (a field missing or of the wrong type, ids not covering 1..n),
``out_of_range`` (a label outside the allowed set, a score outside 1..5, a claim sharing no word
with the answer); the transport retries them (it parses the JSON itself: ``parse_json`` there).
Nothing here imports Dagster.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from rag_eval_pipeline.core.judges.base import HOLISTIC_SCORES
from rag_eval_pipeline.core.judges.quotes import normalise_text
from rag_eval_pipeline.core.judges.transport import AttemptError

#: Verdicts a model may give (JUDGE_ERROR is the pipeline's, never the model's).
CLAIM_VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED")
CORRECTNESS_STATUSES = ("COVERED", "MISSING", "CONTRADICTED")


def _bad(reason: str, detail: str) -> AttemptError:
    return AttemptError(reason, detail, retryable=True)


def _get(obj: Any, key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _bad("schema_mismatch", f"{where}: missing field {key!r}")
    v = obj[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and bool not in _as_tuple(typ)):
        raise _bad("schema_mismatch", f"{where}: field {key!r} has type {type(v).__name__}")
    return v


def _as_tuple(t):
    return t if isinstance(t, tuple) else (t,)


def _as_int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        return int(v.strip())
    return None


def _label(v: Any, allowed: Sequence[str], where: str) -> str:
    if not isinstance(v, str):
        raise _bad("schema_mismatch", f"{where}: label is {type(v).__name__}, not a string")
    lab = re.sub(r"[\s-]+", "_", v.strip().upper())
    if lab not in allowed:
        raise _bad("out_of_range", f"{where}: {v[:40]!r} is not one of {list(allowed)}")
    return lab


def _by_id(items: list, n: int, where: str) -> list[dict]:
    """Entries ordered by their 1-based ``id`` (exactly ids 1..n); positional when no entry has one."""
    if not all(isinstance(it, dict) for it in items):
        raise _bad("schema_mismatch", f"{where}: entries must be objects")
    if all("id" not in it for it in items):
        if len(items) != n:
            raise _bad("schema_mismatch", f"{where}: {len(items)} entries for {n} items")
        return list(items)
    given = [_as_int(it.get("id")) for it in items]
    ids = [i for i in given if i is not None]
    if len(ids) != len(given):
        raise _bad("schema_mismatch", f"{where}: an entry has no integer id")
    if any(not 1 <= i <= n for i in ids):
        raise _bad("out_of_range", f"{where}: ids {sorted(set(ids))} outside 1..{n}")
    if sorted(set(ids)) != list(range(1, n + 1)):
        raise _bad("schema_mismatch", f"{where}: ids {sorted(ids)} do not cover 1..{n} exactly once")
    out: list[dict] = [{}] * n
    for i, it in zip(ids, items):
        out[i - 1] = it
    return out


def _text(v: Any) -> str:
    return "" if v is None else str(v)


_WORDS = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> set[str]:
    return set(_WORDS.findall(normalise_text(text)))


def validate_decomposition(obj: Any, max_claims: int, source: str = "") -> dict:
    """Claims: strings, trimmed, duplicates dropped; each must share at least one word with the
    answer or question (``source``) — a claim with none was not taken from the answer (small models
    copy the prompt's example) and makes the reply out_of_range."""
    claims = _get(obj, "claims", list, "claims")
    source_words = _words(source) if source else None
    out, seen = [], set()
    for i, c in enumerate(claims, start=1):
        if not isinstance(c, str):
            raise _bad("schema_mismatch", f"claims[{i}] is {type(c).__name__}, not a string")
        c = c.strip()
        if c and source_words is not None and not (_words(c) & source_words):
            raise _bad("out_of_range", f"claims[{i}] {c[:60]!r} shares no word with the answer")
        if c and c not in seen:
            seen.add(c)
            out.append(c)
    if len(out) > max_claims:
        raise _bad("out_of_range", f"{len(out)} claims, more than max_claims={max_claims}")
    return {"claims": out}


def validate_verification(obj: Any, n: int) -> dict:
    """``{"verdicts": [...]}`` with exactly ids 1..n (or n entries without ids) → ``{"verdicts": [{verdict, quote
    (str or None), justification}]}`` in id order. Raises AttemptError (schema_mismatch / out_of_range)."""
    entries = _by_id(_get(obj, "verdicts", list, "verdicts"), n, "verdicts")
    out = []
    for i, e in enumerate(entries, start=1):
        verdict = _label(e.get("verdict"), CLAIM_VERDICTS, f"verdicts[id={i}].verdict")
        quote = e.get("quote")
        if quote is not None and not isinstance(quote, str):
            raise _bad("schema_mismatch", f"verdicts[id={i}].quote is {type(quote).__name__}")
        out.append({"verdict": verdict, "quote": (quote or "").strip() or None,
                    "justification": _text(e.get("justification")).strip()})
    return {"verdicts": out}


#: Support levels a model may give for citation support and nugget coverage.
SUPPORT_LEVELS = ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED")
_SUPPORT_ALIASES = {"FULL_SUPPORT": "SUPPORTED", "SUPPORT": "SUPPORTED", "PARTIAL_SUPPORT": "PARTIAL",
                    "NO_SUPPORT": "NOT_SUPPORTED", "NOT_SUPPORT": "NOT_SUPPORTED", "NONE": "NOT_SUPPORTED"}


def validate_support(obj: Any, n: int) -> dict:
    """``{"verdicts": [...]}`` of the citation_support / nugget_coverage prompts, with exactly ids 1..n
    (or n entries without ids) → ``{"verdicts": [{verdict (SUPPORTED / PARTIAL / NOT_SUPPORTED; the
    TREC RAG spellings full_support, partial_support, no_support / not_support are read as these),
    quote (str or None), justification}]}`` in id order. Raises AttemptError (schema_mismatch /
    out_of_range)."""
    entries = _by_id(_get(obj, "verdicts", list, "verdicts"), n, "verdicts")
    out = []
    for i, e in enumerate(entries, start=1):
        raw = e.get("verdict")
        if isinstance(raw, str):
            raw = _SUPPORT_ALIASES.get(re.sub(r"[\s-]+", "_", raw.strip().upper()), raw)
        verdict = _label(raw, SUPPORT_LEVELS, f"verdicts[id={i}].verdict")
        quote = e.get("quote")
        if quote is not None and not isinstance(quote, str):
            raise _bad("schema_mismatch", f"verdicts[id={i}].quote is {type(quote).__name__}")
        out.append({"verdict": verdict, "quote": (quote or "").strip() or None,
                    "justification": _text(e.get("justification")).strip()})
    return {"verdicts": out}


def validate_holistic(obj: Any) -> dict:
    """``{"label": YES|PARTIAL|NO, "justification"}`` → the same, label normalised. Raises AttemptError."""
    label = _label(_get(obj, "label", str, "holistic"), tuple(HOLISTIC_SCORES), "holistic.label")
    return {"label": label, "justification": _text(obj.get("justification")).strip()}


def validate_relevance(obj: Any) -> dict:
    """``{"score": 1..5 (int, or an integral float/str), "justification"}`` → ``{score (int), justification}``.
    Raises AttemptError (schema_mismatch; out_of_range outside 1..5)."""
    if not isinstance(obj, dict) or "score" not in obj:
        raise _bad("schema_mismatch", "answer_relevance: missing field 'score'")
    score = _as_int(obj["score"])
    if score is None:
        raise _bad("schema_mismatch", f"answer_relevance.score {str(obj['score'])[:20]!r} is not an integer")
    if not 1 <= score <= 5:
        raise _bad("out_of_range", f"answer_relevance.score {score} outside 1..5")
    return {"score": score, "justification": _text(obj.get("justification")).strip()}


def validate_questions(obj: Any, n: int) -> dict:
    """``{"questions": [...]}`` with at least n non-blank strings → the first n, trimmed. Raises AttemptError."""
    qs = [q.strip() for q in _get(obj, "questions", list, "questions") if isinstance(q, str) and q.strip()]
    if len(qs) < n:
        raise _bad("schema_mismatch", f"{len(qs)} usable questions, {n} asked for")
    return {"questions": qs[:n]}


def validate_context_relevance(obj: Any, n: int) -> dict:
    """``{"chunks": [{id, needed: bool}]}`` for ids 1..n → ``{"needed": [bool] * n}`` in id order.
    Raises AttemptError."""
    entries = _by_id(_get(obj, "chunks", list, "chunks"), n, "chunks")
    needed = []
    for i, e in enumerate(entries, start=1):
        v = e.get("needed")
        if isinstance(v, str) and v.strip().lower() in ("true", "false", "yes", "no"):
            v = v.strip().lower() in ("true", "yes")
        if not isinstance(v, bool):
            raise _bad("out_of_range", f"chunks[id={i}].needed is {str(v)[:20]!r}, not true/false")
        needed.append(v)
    return {"needed": needed}


def validate_correctness(obj: Any) -> dict:
    """``{"facts": [{fact, status COVERED|MISSING|CONTRADICTED, justification}]}`` → the same, trimmed.
    Raises AttemptError."""
    facts = []
    for i, f in enumerate(_get(obj, "facts", list, "facts"), start=1):
        fact = _get(f, "fact", str, f"facts[{i}]").strip()
        status = _label(f.get("status"), CORRECTNESS_STATUSES, f"facts[{i}].status")
        facts.append({"fact": fact, "status": status, "justification": _text(f.get("justification")).strip()})
    return {"facts": facts}
