"""Versioned prompt files of the model judge: ``prompts/<task>.v<N>.txt`` and its reply schema
``prompts/<task>.v<N>.schema.json``, how inputs are rendered into them, and the per-call schema.

A template's ``{name}`` placeholders are filled in one pass (text inside an answer is never
re-substituted; braces that name no placeholder, as in a JSON example, stay). A prompt's sha256 is
that of the prompt file's bytes followed by the schema file's bytes. Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

PROMPT_VERSION = "v1"
#: The prompt files the faithfulness judgement uses, in ``prompt_sha256`` order.
JUDGE_TASKS = ("claim_decomposition", "claim_verification")
#: One prompt per verdict family beside faithfulness (core/citations, core/completeness).
SUPPORT_TASKS = ("citation_support", "nugget_coverage")
ALL_TASKS = JUDGE_TASKS + (
    "holistic_faithfulness", "answer_relevance", "reverse_questions", "context_relevance", "correctness",
) + SUPPORT_TASKS
#: Bumped when the way inputs are rendered into the prompt changes (it is part of every cache key).
RENDER_VERSION = 1
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Prompt:
    """One versioned prompt: ``task``, ``version``, template ``text``, JSON ``schema`` (dict),
    ``sha256`` (hex, of the prompt file's bytes followed by the schema file's bytes) and ``raw``
    (those concatenated bytes)."""

    task: str
    version: str
    text: str
    schema: dict
    sha256: str
    raw: bytes

    @property
    def placeholders(self) -> set[str]:
        """Names of the ``{placeholders}`` in the template."""
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, **values: str) -> str:
        """Fill the ``{name}`` placeholders in one pass (substituted text is never re-scanned;
        braces not naming a placeholder, as in the JSON example, stay). Raises KeyError naming a
        placeholder with no value."""
        missing = self.placeholders - set(values)
        if missing:
            raise KeyError(f"prompt {self.task}.{self.version}: no value for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0),
                                self.text)


def load_prompt(task: str, version: str = PROMPT_VERSION) -> Prompt:
    """Load ``prompts/<task>.<version>.txt`` and its ``.schema.json`` from the package.

    Input: a task name (one of ``ALL_TASKS`` for the shipped prompts) and a version ("v1").
    Output: a :class:`Prompt`. Raises FileNotFoundError when a file is missing, ValueError when the
    schema is not a JSON object.
    """
    base = resources.files("rag_eval_pipeline.core.judges") / "prompts"
    text_bytes = (base / f"{task}.{version}.txt").read_bytes()
    schema_bytes = (base / f"{task}.{version}.schema.json").read_bytes()
    schema = json.loads(schema_bytes)
    if not isinstance(schema, dict):
        raise ValueError(f"prompts/{task}.{version}.schema.json is not a JSON object")
    raw = text_bytes + schema_bytes
    return Prompt(task, version, text_bytes.decode("utf-8"), schema, hashlib.sha256(raw).hexdigest(), raw)


def render_chunks(contexts: Sequence[str]) -> str:
    """Retrieved texts as ``<chunk id="1">…</chunk>`` blocks, numbered from 1 in rank order."""
    return "\n".join(f'<chunk id="{i}">\n{c}\n</chunk>' for i, c in enumerate(contexts, start=1))


def render_claims(claims: Sequence[str]) -> str:
    """Claims as ``<claim id="1">…</claim>`` lines, numbered from 1."""
    return "\n".join(f'<claim id="{i}">{c}</claim>' for i, c in enumerate(claims, start=1))


def render_inputs(prompt: Prompt, values: dict) -> str:
    """The prompt text for one call: ``contexts`` (list of texts) become numbered ``<chunk>`` blocks,
    ``claims`` (list) numbered ``<claim>`` lines, other values as given. Raises KeyError for a missing value."""
    v = dict(values)
    if "contexts" in v:
        v["contexts"] = render_chunks(v["contexts"])
    if "claims" in v:
        v["claims"] = render_claims(v["claims"])
    return prompt.render(**v)


#: task → (array property of the reply, input whose length fixes the array's length)
SIZED_ARRAYS = {"claim_verification": ("verdicts", "claims"), "context_relevance": ("chunks", "contexts"),
                 "reverse_questions": ("questions", "n"), "citation_support": ("verdicts", "claims"),
                 "nugget_coverage": ("verdicts", "claims")}


def sized_schema(task: str, schema: dict, values: dict) -> dict:
    """The task's schema with ``minItems = maxItems`` = the number of entries the reply must hold
    (claims to verify, chunks to rate, questions asked for), so a schema-constrained server cannot
    return too few or too many. The static file is unchanged; the count comes from the inputs, which
    are part of the cache key."""
    spec = SIZED_ARRAYS.get(task)
    if spec is None:
        return schema
    prop, source = spec
    v = values[source]
    n = int(v) if isinstance(v, str) else len(v)
    out = json.loads(json.dumps(schema))
    out["properties"][prop]["minItems"] = n
    out["properties"][prop]["maxItems"] = n
    return out

