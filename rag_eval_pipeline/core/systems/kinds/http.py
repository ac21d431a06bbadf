"""``kind: http``: a team's RAG endpoint, called once per golden question with timeouts, retries,
a rate limit and bounded concurrency. Implementation: ``core/systems/http.py``."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module
from rag_eval_pipeline.core.sections import Key, key
from rag_eval_pipeline.core.systems.base import Deployment, SystemKind, SystemRun, register
from rag_eval_pipeline.core.systems.kinds._shared import AnswerTextSpec, nonblank
from rag_eval_pipeline.core.systems.records import DEFAULT_MAX_REPLY_BYTES, MAX_REPLY_BYTES_LIMIT, RunContext

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

#: Keys of ``response_fields``: dotted paths into a reply of another shape than the run-log schema.
RESPONSE_FIELD_KEYS = ("retrieved", "chunk_id", "score", "text", "answer", "decision", "citations", "error", "model",
                       "prompt_version")
# a header that carries a credential may only come from the environment
_SECRET_HEADER = re.compile(r"auth|token|key|secret|cookie|password|credential", re.IGNORECASE)
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _url(value: str) -> str | None:
    return None if re.match(r"^https?://", value) else f"must be an http:// or https:// URL, got {value!r}"


def _headers(value: Mapping[str, str]) -> str | None:
    for name in value:
        if _SECRET_HEADER.search(name):
            return (f"header {name!r} looks like a credential; put it in headers_from_env ({{{name}: ENV_VARIABLE}}) "
                    "so the secret stays out of the configuration")
    return None


def _env_name(value: str) -> str | None:
    return None if _ENV_NAME.match(value) else f"must be an environment variable name, got {value!r}"


def _template(value: object) -> str | None:
    if isinstance(value, (dict, list)):
        return None
    return ("must be a JSON object (a mapping) with {question}, {question_id}, {user_groups} placeholders, got "
            f"{type(value).__name__}")


def _fields(value: Mapping[str, str]) -> str | None:
    bad = sorted(set(value) - set(RESPONSE_FIELD_KEYS))
    if bad:
        return f"has unknown key(s) {bad}; expected only {list(RESPONSE_FIELD_KEYS)}"
    if "retrieved" not in value:
        return "needs 'retrieved' (the path of the ranked list of hits)"
    return None


@dataclass(frozen=True, kw_only=True)
class HttpSystemConfig(AnswerTextSpec):
    """A ``kind: http`` system."""

    url: str = key(check=_url, doc="POST endpoint, http:// or https://")
    headers: Mapping[str, str] = key(default_factory=dict, check=_headers,
                                     doc="extra headers (no credentials: use headers_from_env)")
    headers_from_env: Mapping[str, str] = key(default_factory=dict, items=Key(check=_env_name),
                                              doc="header -> environment variable holding its value (secrets)")
    request_template: object | None = key(None, check=_template,
                                          doc="JSON body with {question}, {question_id}, {user_groups} placeholders")
    response_fields: Mapping[str, str] | None = key(None, check=_fields, items=Key(check=nonblank),
                                                    doc="field -> dotted path in the reply (needs retrieved)")
    version_header: str | None = key(None, check=nonblank, doc="reply header stored as system_version")
    timeout_s: float = key(30.0, low=0, low_open=True, noun="number", doc="deadline of each attempt, seconds")
    max_retries: int = key(2, low=0, doc="retries of 429, 5xx, timeouts and dropped connections")
    backoff_s: float = key(0.5, low=0, noun="number", doc="first wait between attempts, doubling")
    max_backoff_s: float = key(30.0, low=0, noun="number", doc="longest wait; a longer Retry-After ends the retries")
    concurrency: int = key(4, low=1, doc="requests in flight (capped by the deployment's max_concurrency)")
    rate_per_s: float | None = key(None, low=0, low_open=True, noun="number",
                                   doc="request starts per second across threads; null: no limit")
    max_reply_bytes: int = key(DEFAULT_MAX_REPLY_BYTES, low=1, cap=MAX_REPLY_BYTES_LIMIT,
                               cap_why="the cap keeps one reply's memory bounded",
                               doc="largest reply body, bytes received and decoded (a gzip bomb stops there); "
                                   "a bigger one is an error row")

    def validate(self, at):
        """The section with its abstain phrases stripped and ``response_fields`` completed with the default
        hit paths (``chunk_id``, ``score``) it does not set."""
        out = super().validate(at)
        if self.response_fields is not None:
            out = dataclasses.replace(out, response_fields={"chunk_id": "chunk_id", "score": "score",
                                                            **self.response_fields})
        return out


def run(spec: HttpSystemConfig, golden: pl.DataFrame, ctx: RunContext, deployment: Deployment) -> SystemRun:
    """One request per question; a failed call is an ``error`` row. ConfigError when a
    ``headers_from_env`` variable is unset (before the first call)."""
    return HttpRunner(spec, deployment.environ, user_agent=deployment.user_agent,
                      max_concurrency=deployment.max_concurrency).run(golden, ctx)


class HttpRunner:
    """An ``http`` system ready to run: ``environ`` (where ``headers_from_env`` are read), ``user_agent``,
    ``max_concurrency`` (the deployment's cap) and ``transport`` (an ``httpx2`` transport, for tests of
    error paths) are passed to :class:`~rag_eval_pipeline.core.systems.http.HttpSystem`."""

    def __init__(self, spec: HttpSystemConfig, environ: Mapping[str, str] | None = None, *,
                 max_concurrency: int | None = None, **kwargs):
        from rag_eval_pipeline.core.systems.http import HttpSystem

        if max_concurrency is not None:
            spec = dataclasses.replace(spec, concurrency=Deployment(max_concurrency).concurrency(spec.concurrency))
        self.system = HttpSystem(spec, environ, **kwargs)

    def run(self, golden: pl.DataFrame, ctx: RunContext) -> SystemRun:
        """One request per golden question: the ``rag_runs`` rows (a failed call is an ``error`` row) and what
        the run counted (calls, retries, errors by kind, versions seen). Raises ConfigError for an unset
        ``headers_from_env`` variable, before the first call."""
        from rag_eval_pipeline.core.systems.base import questions_of, row_counts, rows_frame

        rows = self.system.run(questions_of(golden), ctx)
        mapping = {"id_mapping": ctx.ids.stats()} if ctx.ids is not None else {}
        return SystemRun(rows_frame(rows), {"kind": "http", **row_counts(rows), **self.system.stats.as_dict(),
                                            **mapping})


def preflight(spec: HttpSystemConfig, base_dir: Path | None, environ, reach: bool) -> list[str]:
    """``rag-eval check``: every ``headers_from_env`` variable is set; with ``reach``, the URL answers one
    HEAD request (OPTIONS when HEAD is refused). Raises ConfigError naming the variable or the URL."""
    from rag_eval_pipeline.core.checks import reach_url
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.systems.http import HttpSystem

    HttpSystem(spec, environ)  # an unset headers_from_env variable is a ConfigError here
    if not reach:
        return []
    problem = reach_url(spec.url)
    if problem:
        raise ConfigError(problem)
    return [f"{spec.url} answers"]


KIND = register(SystemKind(
    example={"name": "team_rag_live", "kind": "http", "url": "https://rag.internal.example/answer",
             "headers_from_env": {"Authorization": "MY_RAG_TOKEN"}, "version_header": "X-Model-Version"},
    name="http", section=HttpSystemConfig, run=run, order=30, makes_calls=True, preflight=preflight,
    attempts=lambda s: 1 + s.max_retries,
    doc="Calls your RAG endpoint once per golden question: POST JSON {question_id, question, user_groups}, and "
        "the reply is a run-log object (or any JSON read through response_fields). Timeouts, bounded retries "
        "with backoff, a rate limit and bounded concurrency; a call that still fails is an error row with the "
        "reason and the run goes on. Secrets come only from headers_from_env.",
))
