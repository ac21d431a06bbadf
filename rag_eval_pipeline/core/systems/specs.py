"""Validation of the live system kinds in ``systems:``: ``http``, ``python`` and ``traces``.

:func:`validate_system_spec` checks one entry of the configuration's ``systems`` list and returns it
with every default filled in, so the runners never guess. The keys, their defaults and meaning are in
docs/systems.md ("Systems under test"); an unknown key is an error (a typo is never ignored).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.errors import ConfigError

LIVE_KINDS = ("http", "python", "traces")

#: Phrases that make an answer an abstention when the system gives no decision of its own
#: (traces, or a mapped reply without a decision path). Matched case-insensitively as substrings.
DEFAULT_ABSTAIN_PHRASES = ("i don't know", "i do not know", "cannot answer", "can't answer",
                           "no tengo información", "no lo sé", "no puedo responder")

RESPONSE_FIELD_KEYS = ("retrieved", "chunk_id", "score", "answer", "decision", "citations", "error", "model",
                       "prompt_version")
_COMMON = {"name", "kind", "abstain_phrases"}
_CALL_KEYS = {"concurrency", "timeout_s", "max_retries", "backoff_s", "max_backoff_s", "rate_per_s"}
HTTP_KEYS = _COMMON | _CALL_KEYS | {"url", "headers", "headers_from_env", "request_template", "response_fields",
                                    "version_header"}
PYTHON_KEYS = _COMMON | {"callable", "concurrency", "timeout_s"}
TRACES_KEYS = _COMMON | {"path", "format", "question_id_attribute", "decision_attribute", "chunk_map"}
TRACE_FORMATS = ("auto", "otlp_json", "phoenix")
# a header that carries a credential may only come from the environment
_SECRET_HEADER = re.compile(r"auth|token|key|secret|cookie|password|credential", re.IGNORECASE)
_CALLABLE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def validate_system_spec(spec: dict, path: str | Path, index: int) -> dict[str, Any]:
    """Check one ``systems[index]`` entry of kind ``http``, ``python`` or ``traces``.

    Input: the entry as read from YAML (a dict with ``name`` and ``kind``), the configuration file's
    path and the entry's index (both only for messages). Output: a new dict with every default filled
    in (see docs/systems.md for the keys). Raises ConfigError naming the file, ``systems[i]``, the
    system and the key for an unknown key, a missing ``url`` / ``callable`` / ``path``, a number out
    of range (``timeout_s`` > 0, ``max_retries`` >= 0, ``concurrency`` >= 1, ``rate_per_s`` > 0), a
    credential-looking header in ``headers`` (secrets belong in ``headers_from_env``), an
    environment variable name that is not one, or a ``response_fields`` key outside
    :data:`RESPONSE_FIELD_KEYS`. Entries of other kinds are returned unchanged.
    """
    kind = spec.get("kind")
    if kind not in LIVE_KINDS:
        return spec
    where = f"{path}: systems[{index}] ({spec.get('name')}, kind {kind})"

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{where}: {message}")

    allowed = {"http": HTTP_KEYS, "python": PYTHON_KEYS, "traces": TRACES_KEYS}[kind]
    unknown = sorted(str(k) for k in spec if k not in allowed)
    if unknown:
        raise fail(f"unknown key(s) {unknown}; expected only {sorted(allowed)}")

    def number(key: str, default, *, low: float, inclusive: bool, integer: bool = False, optional: bool = False):
        value = spec.get(key, default)
        if value is None and optional:
            return None
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
            value >= low if inclusive else value > low)
        if integer:
            ok = ok and isinstance(value, int)
        if not ok:
            bound = f">= {low:g}" if inclusive else f"> {low:g}"
            raise fail(f"{key} must be {'an integer' if integer else 'a number'} {bound}, got {value!r}")
        return value

    out = dict(spec)
    phrases = spec.get("abstain_phrases", list(DEFAULT_ABSTAIN_PHRASES))
    if not isinstance(phrases, list) or not all(isinstance(p, str) and p.strip() for p in phrases):
        raise fail(f"abstain_phrases must be a list of non-empty strings, got {phrases!r}")
    out["abstain_phrases"] = [p.strip() for p in phrases]

    if kind == "http":
        url = spec.get("url")
        if not isinstance(url, str) or not re.match(r"^https?://", url):
            raise fail(f"url must be an http:// or https:// URL, got {url!r}")
        out["timeout_s"] = float(number("timeout_s", 30.0, low=0, inclusive=False))
        out["max_retries"] = number("max_retries", 2, low=0, inclusive=True, integer=True)
        out["backoff_s"] = float(number("backoff_s", 0.5, low=0, inclusive=True))
        out["max_backoff_s"] = float(number("max_backoff_s", 30.0, low=0, inclusive=True))
        out["concurrency"] = number("concurrency", 4, low=1, inclusive=True, integer=True)
        rate = number("rate_per_s", None, low=0, inclusive=False, optional=True)
        out["rate_per_s"] = None if rate is None else float(rate)
        headers = spec.get("headers") or {}
        if not isinstance(headers, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in headers.items()):
            raise fail("headers must map header names to strings")
        for name in headers:
            if _SECRET_HEADER.search(name):
                raise fail(f"header {name!r} looks like a credential; put it in headers_from_env "
                           f"({{{name}: ENV_VARIABLE}}) so the secret stays out of the configuration")
        from_env = spec.get("headers_from_env") or {}
        if not isinstance(from_env, dict):
            raise fail("headers_from_env must map header names to environment variable names")
        for name, env in from_env.items():
            if not isinstance(name, str) or not isinstance(env, str) or not _ENV_NAME.match(env):
                raise fail(f"headers_from_env[{name!r}] must be an environment variable name, got {env!r}")
        out["headers"], out["headers_from_env"] = dict(headers), dict(from_env)
        template = spec.get("request_template")
        if template is not None and not isinstance(template, (dict, list)):
            raise fail("request_template must be a JSON object (a mapping) with {question}, {question_id}, "
                       "{user_groups} placeholders")
        fields = spec.get("response_fields")
        if fields is not None:
            if not isinstance(fields, dict) or not all(isinstance(v, str) and v for v in fields.values()):
                raise fail("response_fields must map field names to dotted paths (strings)")
            bad = sorted(set(fields) - set(RESPONSE_FIELD_KEYS))
            if bad:
                raise fail(f"response_fields has unknown key(s) {bad}; expected only {list(RESPONSE_FIELD_KEYS)}")
            if "retrieved" not in fields:
                raise fail("response_fields needs 'retrieved' (the path of the ranked list of hits)")
            out["response_fields"] = {"chunk_id": "chunk_id", "score": "score", **fields}
        version = spec.get("version_header")
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise fail(f"version_header must be a header name, got {version!r}")
    elif kind == "python":
        target = spec.get("callable")
        if not isinstance(target, str) or not _CALLABLE.match(target):
            raise fail(f"callable must be 'package.module:function', got {target!r}")
        out["concurrency"] = number("concurrency", 1, low=1, inclusive=True, integer=True)
        timeout = number("timeout_s", None, low=0, inclusive=False, optional=True)
        out["timeout_s"] = None if timeout is None else float(timeout)
    else:
        if not isinstance(spec.get("path"), str) or not spec["path"]:
            raise fail("path (an OTLP JSON file, a Phoenix spans export, or a folder of them) is missing")
        fmt = spec.get("format", "auto")
        if fmt not in TRACE_FORMATS:
            raise fail(f"format must be one of {list(TRACE_FORMATS)}, got {fmt!r}")
        out["format"] = fmt
        for key in ("question_id_attribute", "decision_attribute", "chunk_map"):
            value = spec.get(key)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise fail(f"{key} must be a non-empty string, got {value!r}")
            out[key] = value
    return out
