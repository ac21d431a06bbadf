"""Keys several kinds share (not a kind: modules starting with ``_`` are not registered)."""

from __future__ import annotations

from dataclasses import dataclass

from rag_eval_pipeline.core.sections import Key, check_nonblank, key
from rag_eval_pipeline.core.systems.base import SystemSpec

#: Phrases that make an answer an abstention when the system gives no decision of its own
#: (traces, or a mapped reply without a decision path). Matched case-insensitively as substrings.
DEFAULT_ABSTAIN_PHRASES = ("i don't know", "i do not know", "cannot answer", "can't answer",
                           "no tengo información", "no lo sé", "no puedo responder")


@dataclass(frozen=True, kw_only=True)
class AnswerTextSpec(SystemSpec):
    """A system whose replies may carry an answer without a decision: ``abstain_phrases`` decide it."""

    abstain_phrases: tuple[str, ...] = key(
        DEFAULT_ABSTAIN_PHRASES, items=Key(check=check_nonblank),
        doc="an answer containing one (case-insensitive) is an abstention when the system gives no decision")

    def validate(self, at):
        """The section with its abstain phrases stripped of surrounding spaces (once, here)."""
        import dataclasses

        return dataclasses.replace(self, abstain_phrases=tuple(p.strip() for p in self.abstain_phrases))


nonblank = check_nonblank  # the problem with a blank string (a header or attribute name), or None
