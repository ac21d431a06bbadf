"""``judge.type: openai_compatible``: a model judge behind any OpenAI-compatible chat endpoint
(``core/judges/openai_compatible.py``; its transport: ``core/judges/transport.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rag_eval_pipeline.core.config_sections import JudgeConfig
from rag_eval_pipeline.core.judges.base import Judge
from rag_eval_pipeline.core.judges.registry import JudgeConfigError, JudgeType, judge_env, register
from rag_eval_pipeline.core.section_checks import check_short_text
from rag_eval_pipeline.core.sections import key


@dataclass(frozen=True)
class ModelEndpoint:
    """The keys of a model judge: its endpoint, its model and its cache."""

    base_url: str | None = key(None, coerce_text=True, check=check_short_text, env="RAG_EVAL_JUDGE_BASE_URL",
                               doc="the endpoint, e.g. http://127.0.0.1:8080/v1")
    model: str | None = key(None, coerce_text=True, check=check_short_text, env="RAG_EVAL_JUDGE_MODEL",
                            doc="the model name sent with every call")
    cache: Path | None = key(None, env="RAG_EVAL_JUDGE_CACHE", doc="SQLite judge cache; null: none")


def check(config: JudgeConfig, origin: str, source: str = "") -> None:
    """A model judge needs both a base URL and a model."""
    need = [k for k in ("base_url", "model") if not getattr(config.options, k)]
    if need:
        env = judge_env()
        names = ", ".join(env[k] for k in need)
        raise JudgeConfigError(f"{origin} needs {names} to be set (or judge.{' and judge.'.join(need)} in the "
                               "configuration)")


def build(config: JudgeConfig, api_key: str | None) -> Judge:
    """The model judge with the configured transport (the environment's RAG_EVAL_JUDGE_TIMEOUT_S ... still
    win when the judge is built)."""
    from rag_eval_pipeline.core.judges.cache import JudgeCache
    from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge

    check(config, f"judge type {config.type}")
    opts = config.options
    return OpenAICompatibleJudge(
        base_url=opts.base_url, model=opts.model, api_key=api_key or "", timeout_s=config.timeout_s,
        max_retries=config.max_retries, backoff_s=config.backoff_s, concurrency=config.concurrency,
        rate_limit_per_s=config.rate_limit_per_s, cache=JudgeCache(str(opts.cache)) if opts.cache else None)


JUDGE = register(JudgeType(
    name="openai_compatible", section=ModelEndpoint, build=build, check=check, makes_calls=True, order=20,
    doc="A model judge behind any OpenAI-compatible chat endpoint (a hosted API, llama.cpp, vLLM): versioned "
        "prompt files, JSON-schema output, bounded calls (timeout_s, max_retries, backoff_s, concurrency, "
        "rate_limit_per_s) and an optional SQLite cache. The API key comes from RAG_EVAL_JUDGE_API_KEY only. "
        "Its quotes are verified by code like every judge's.",
))
