"""Keys several kinds share (not a kind: modules starting with ``_`` are not registered)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_eval_pipeline.core.sections import Key, key
from rag_eval_pipeline.core.systems.base import SystemSpec

#: Phrases that make an answer an abstention when the system gives no decision of its own
#: (traces, or a mapped reply without a decision path). Matched case-insensitively as substrings.
DEFAULT_ABSTAIN_PHRASES = ("i don't know", "i do not know", "cannot answer", "can't answer",
                           "no tengo información", "no lo sé", "no puedo responder")


def _nonblank(value: str) -> str | None:
    return None if value.strip() else f"must be a non-empty string, got {value!r}"


@dataclass(frozen=True, kw_only=True)
class AnswerTextSpec(SystemSpec):
    """A system whose replies may carry an answer without a decision: ``abstain_phrases`` decide it."""

    abstain_phrases: tuple[str, ...] = key(
        DEFAULT_ABSTAIN_PHRASES, items=Key(check=_nonblank),
        doc="an answer containing one (case-insensitive) is an abstention when the system gives no decision")

    def validate(self, at):  # noqa: D102 - strip the phrases once, here
        import dataclasses

        return dataclasses.replace(self, abstain_phrases=tuple(p.strip() for p in self.abstain_phrases))


def nonblank(value: str) -> str | None:
    """The problem with a blank string (a header or attribute name), or None."""
    return _nonblank(value)
