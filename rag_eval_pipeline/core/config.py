"""The evaluation configuration: one YAML file, validated when it is loaded.

A configuration names the corpus source, the golden set, the systems under evaluation, the metric
settings, the judge, the calibration, the report's reader and the regression thresholds. Relative
paths inside it are resolved against the folder of the YAML file, so a configuration travels with
its data.

Every section becomes a frozen dataclass of ``core/config_sections.py`` (its names are re-exported
here), checked field by field in :func:`load_config`: a wrong type, a value out of range, an unknown
key or a name that points nowhere is a :class:`ConfigError` naming the file and the key before any
asset runs (why dataclasses and not pydantic: see that module). System entries stay mappings: their
``retriever`` and ``generator`` blocks belong to the reference system, which validates them
(``core/reference_system.py``); the keys this module relies on (name, kind, path, prompt_version,
model) are checked here.

The judge section has environment overrides (see :data:`JUDGE_ENV`): a deployment picks its judge
with ``RAG_EVAL_JUDGE`` and the endpoint with ``RAG_EVAL_JUDGE_BASE_URL`` / ``RAG_EVAL_JUDGE_MODEL``
without editing the file; the API key is read from ``RAG_EVAL_JUDGE_API_KEY`` only, never from the
file. An inconsistent judge (a model endpoint without URL or model, an unknown judge name) is a
:class:`JudgeConfigError` at load.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.config_sections import (
    CALIBRATION_LEVELS,
    CHUNKING_STRATEGIES,
    CORPUS_SOURCES,
    DEFAULT_KAPPA_FLOOR,
    DEFAULT_VIEWER_GROUPS,
    FILE_SOURCES,
    GATE_SPLITS,
    JUDGE_TYPES,
    QUESTION_SOURCES,
    RANKING_MODES,
    SYSTEM_KINDS,
    UNCHUNKED_SOURCES,
    CalibrationConfig,
    ChunkingConfig,
    CorpusConfig,
    EvalConfig,
    GatesConfig,
    GoldenConfig,
    JudgeConfig,
    MetricsConfig,
    ReportConfig,
    ScheduleConfig,
    Threshold,
)
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.metrics.names import PIPELINE_METRICS, parse_measure
from rag_eval_pipeline.core.systems.specs import validate_system_spec

# Keys read from each section; any other key is a typo that would otherwise be ignored silently
# (a misspelt ``gates:`` would turn every gate off).
TOP_LEVEL_KEYS = ("corpus", "golden", "systems", "metrics", "judge", "gates", "seed", "quick_subset_size",
                  "report", "calibration", "schedule")
CORPUS_KEYS = ("source", "path", "split", "chunking")
CHUNKING_KEYS = ("strategy", "max_chars")
GOLDEN_KEYS = ("path",)
METRICS_KEYS = ("ks", "ranking_mode", "rel_level", "on_duplicate", "complete", "bootstrap_resamples",
                "small_segment_n")
GATES_KEYS = ("split", "baseline_system", "candidate_systems", "promote", "alpha", "block_inconclusive",
              "thresholds", "max_run_error_share")
JUDGE_KEYS = ("type", "max_error_share", "repeats", "reverse_questions", "timeout_s", "max_retries", "backoff_s",
              "concurrency", "rate_limit_per_s", "base_url", "model", "cache", "human_labels", "abstention_phrases")
CALIBRATION_KEYS = ("human_labels", "kappa_floor", "mapping", "level")
REPORT_KEYS = ("viewer_groups",)
SCHEDULE_KEYS = ("cron", "timezone")

#: Judge settings an environment variable overrides (variable wins over the file; empty = unset).
JUDGE_ENV = {
    "type": "RAG_EVAL_JUDGE",
    "base_url": "RAG_EVAL_JUDGE_BASE_URL",
    "model": "RAG_EVAL_JUDGE_MODEL",
    "cache": "RAG_EVAL_JUDGE_CACHE",
    "human_labels": "RAG_EVAL_HUMAN_LABELS",
    "timeout_s": "RAG_EVAL_JUDGE_TIMEOUT_S",
    "max_retries": "RAG_EVAL_JUDGE_MAX_RETRIES",
    "backoff_s": "RAG_EVAL_JUDGE_BACKOFF_S",
    "concurrency": "RAG_EVAL_JUDGE_CONCURRENCY",
    "rate_limit_per_s": "RAG_EVAL_JUDGE_RATE_LIMIT_PER_S",
}

#: Longest name or version string stored on every row (system names, prompt_version, model).
MAX_NAME_CHARS = 200
#: Longest retriever / generator block of a system, as JSON (the manifest stores it on every row).
MAX_BLOCK_CHARS = 20_000
__all__ = [
    "CALIBRATION_LEVELS", "CHUNKING_STRATEGIES", "CORPUS_SOURCES", "DEFAULT_KAPPA_FLOOR", "DEFAULT_VIEWER_GROUPS",
    "GATE_SPLITS", "JUDGE_ENV", "JUDGE_TYPES", "MAX_NAME_CHARS", "RANKING_MODES", "SYSTEM_KINDS",
    "CalibrationConfig", "ChunkingConfig", "CorpusConfig", "EvalConfig", "GatesConfig", "GoldenConfig",
    "JudgeConfig", "JudgeConfigError", "MetricsConfig", "ReportConfig", "ScheduleConfig", "Threshold",
    "known_metrics", "load_config", "resolve_judge",
]

_SHOWN = 80
_BAD_NAME = re.compile(r"[/\\\x00-\x1f\x7f]")


def _show(value: object) -> str:
    """A value for an error message: its repr, cut (a value may be megabytes long)."""
    from rag_eval_pipeline.core.yamlio import shown

    return shown(value, _SHOWN)


class JudgeConfigError(ConfigError, ValueError):
    """The judge cannot be built from the configuration and environment (unknown name, missing URL,
    model or label file). A ConfigError (one line, exit status of a configuration error) and, for
    callers written before it existed, a ValueError."""


def known_metrics() -> frozenset[str]:
    """Every metric name the pipeline writes to question_metrics (base names; the cut-off is ``k``)."""
    return PIPELINE_METRICS


_CUT_SUFFIX = re.compile(r"^(.*[A-Za-z])[_@](\d+)$")


# ------------------------------------------------------------------------------------------------
# checks


class _Checks:
    """Typed reads of one file's values; every error names the file and the key."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, message: str) -> ConfigError:
        return ConfigError(f"{self.path}: {message}")

    def mapping(self, value, key: str, allowed: tuple[str, ...] | None = None) -> dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"{key} must be a mapping, got {_show(value)}")
        if allowed is not None:
            unknown = sorted(str(k) for k in value if k not in allowed)
            if unknown:
                raise self.fail(f"unknown key(s) {unknown} in {key}; expected only {list(allowed)}")
        return value

    def need(self, mapping: dict, key: str, where: str):
        if key not in mapping or mapping[key] is None:
            raise self.fail(f"missing key {where}{key}")
        return mapping[key]

    def integer(self, value, key: str, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum or (
                maximum is not None and value > maximum):
            span = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
            raise self.fail(f"{key} must be an integer {span}, got {_show(value)}")
        return value

    def number(self, value, key: str, low: float, high: float, open_interval: bool = False) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
            low < value < high if open_interval else low <= value <= high)
        if not ok:
            span = f"({low}, {high})" if open_interval else f"[{low}, {high}]"
            raise self.fail(f"{key} must be a number in {span}, got {_show(value)}")
        return float(value)

    def finite(self, value, key: str, minimum: float, *, above: bool = False) -> float:
        """A finite number >= minimum (> minimum when ``above``); NaN, infinities, strings refused."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and (
            value > minimum if above else value >= minimum)
        if not ok:
            raise self.fail(f"{key} must be a finite number {'>' if above else '>='} {minimum}, got {_show(value)}")
        return float(value)

    def boolean(self, value, key: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"{key} must be true or false, got {_show(value)}")
        return value

    def choice(self, value, key: str, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(f"{key} must be one of {allowed}, got {_show(value)}")
        return value

    def name(self, value, key: str) -> str:
        """A name stored on every row or used in file names: a short string without / \\ or control characters."""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{key} must be a non-empty string, got {_show(value)}")
        if len(value) > MAX_NAME_CHARS:
            raise self.fail(f"{key} is {len(value)} characters long; expected at most {MAX_NAME_CHARS}")
        if _BAD_NAME.search(value) or value.startswith("."):
            raise self.fail(f"{key} {_show(value)} contains '/', '\\', a control character or starts with '.'; "
                            "expected a plain name")
        return value

    def short_text(self, value, key: str) -> str:
        """A version label stored on every row (prompt_version, model): a scalar of at most MAX_NAME_CHARS."""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.fail(f"{key} must be a string, got {_show(value)}")
        text = str(value)
        if len(text) > MAX_NAME_CHARS:
            raise self.fail(f"{key} is {len(text)} characters long; expected at most {MAX_NAME_CHARS}")
        return text

    def file_path(self, value, key: str) -> Path:
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{key} must be a path, got {_show(value)}")
        p = Path(value)
        return p if p.is_absolute() else (self.path.parent / p).resolve()


def _corpus(c: _Checks, raw: dict) -> CorpusConfig:
    corpus = c.mapping(c.need(raw, "corpus", ""), "corpus", CORPUS_KEYS)
    source = corpus.get("source")
    if source not in CORPUS_SOURCES:
        raise c.fail(f"corpus.source must be one of {CORPUS_SOURCES}, got {_show(source)}")
    path = c.file_path(c.need(corpus, "path", "corpus."), "corpus.path")
    want_file = source in FILE_SOURCES
    if not (path.is_file() if want_file else path.is_dir()):
        what = "file" if want_file else "folder"
        found = "not a " + what if path.exists() else "not found"
        raise c.fail(f"corpus.path {path}: {what} {found}; expected the {source} {what} (a relative path is "
                     f"resolved against {c.path.parent})")
    split = corpus.get("split", "test")
    if not isinstance(split, str) or not split:
        raise c.fail(f"corpus.split must be a split name, got {_show(split)}")
    chunking = c.mapping(corpus.get("chunking"), "corpus.chunking", CHUNKING_KEYS)
    if chunking and source in UNCHUNKED_SOURCES:
        raise c.fail(f"corpus.chunking does not apply to corpus.source {source}: your chunks are used as they are "
                     "(remove corpus.chunking)")
    strategy = chunking.get("strategy")
    if strategy is not None:
        c.choice(strategy, "corpus.chunking.strategy", CHUNKING_STRATEGIES)
    max_chars = c.integer(chunking.get("max_chars", 1200), "corpus.chunking.max_chars", 1)
    return CorpusConfig(source=source, path=path, split=split,
                        chunking=ChunkingConfig(strategy=strategy, max_chars=max_chars))


def _systems(c: _Checks, raw: dict) -> tuple[dict, ...]:
    systems = c.need(raw, "systems", "")
    if not isinstance(systems, list) or not systems:
        raise c.fail("systems must list at least one system")
    out = []
    for i, s in enumerate(systems):
        if not isinstance(s, dict):
            raise c.fail(f"systems[{i}] must be a mapping, got {_show(s)}")
        s = dict(s)
        if not s.get("name"):
            raise c.fail(f"systems[{i}].name is missing")
        c.name(s["name"], f"systems[{i}].name")
        if s.get("kind") not in SYSTEM_KINDS:
            raise c.fail(f"systems[{i}].kind must be one of {SYSTEM_KINDS}, got {_show(s.get('kind'))}")
        s = validate_system_spec(s, c.path, i)  # http / python / traces: their own keys
        if s["kind"] == "logged" and not s.get("path"):
            raise c.fail(f"systems[{i}] ({s['name']}) is logged but has no path")
        if s.get("chunk_map") is not None:  # provisional: the typed system sections will own this key
            if s["kind"] == "reference":
                raise c.fail(f"systems[{i}] ({s['name']}): chunk_map does not apply to kind reference (it retrieves "
                             "snapshot chunks itself)")
            from rag_eval_pipeline.core.systems.id_mapping import parse_chunk_map

            s["chunk_map"] = parse_chunk_map(s["chunk_map"], where=f"{c.path}: systems[{i}] ({s['name']})",
                                             base_dir=c.path.parent)
        for key in ("prompt_version", "model"):
            if s.get(key) is not None:
                c.short_text(s[key], f"systems[{i}].{key}")
        retriever = c.mapping(s.get("retriever"), f"systems[{i}].retriever")
        rk = retriever.get("k")
        if rk is not None and (isinstance(rk, bool) or not isinstance(rk, int) or rk < 1):
            raise c.fail(f"systems[{i}].retriever.k must be an integer >= 1, got {_show(rk)}")
        generator = c.mapping(s.get("generator"), f"systems[{i}].generator")
        for key, block in (("retriever", retriever), ("generator", generator)):  # stored as JSON on every row
            size = len(json.dumps(block, default=str))
            if size > MAX_BLOCK_CHARS:
                raise c.fail(f"systems[{i}].{key} is {size} characters as JSON; expected at most {MAX_BLOCK_CHARS}")
        threshold = generator.get("abstain_threshold")
        if threshold is not None:
            c.number(threshold, f"systems[{i}].generator.abstain_threshold", 0.0, 1.0)
        out.append(s)
    names = [s["name"] for s in out]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise c.fail(f"duplicate system names {dupes}")
    return tuple(out)


def _metrics(c: _Checks, raw: dict) -> MetricsConfig:
    metrics = c.mapping(raw.get("metrics"), "metrics", METRICS_KEYS)
    ks = metrics.get("ks", [1, 3, 5, 10])
    if not isinstance(ks, list) or not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise c.fail(f"metrics.ks must be integers >= 1, got {_show(ks)}")
    mode = metrics.get("ranking_mode", "system")
    if mode not in RANKING_MODES:
        raise c.fail(f"metrics.ranking_mode must be one of {RANKING_MODES}, got {_show(mode)}")
    on_dup = metrics.get("on_duplicate", "error")
    if on_dup not in ("error", "keep_first"):
        raise c.fail(f"metrics.on_duplicate must be 'error' or 'keep_first', got {_show(on_dup)}")
    return MetricsConfig(
        ks=tuple(ks), ranking_mode=mode, on_duplicate=on_dup,
        rel_level=c.integer(metrics.get("rel_level", 1), "metrics.rel_level", 0),
        complete=c.boolean(metrics.get("complete", False), "metrics.complete"),
        bootstrap_resamples=c.integer(metrics.get("bootstrap_resamples", 2000), "metrics.bootstrap_resamples", 1),
        small_segment_n=c.integer(metrics.get("small_segment_n", 10), "metrics.small_segment_n", 0),
    )


def resolve_judge(section: Mapping[str, Any] | None, *, path: Path, environ: Mapping[str, str] | None = None
                  ) -> JudgeConfig:
    """The judge settings: the ``judge`` section of the file at ``path``, then the environment.

    Inputs: the section (a mapping or None), the configuration file (for messages and relative
    paths), ``environ`` (default ``os.environ``; see :data:`JUDGE_ENV`: a set variable replaces the
    file's value). Output: a :class:`JudgeConfig`. Raises ConfigError for a bad key or value in the
    section, JudgeConfigError for an unknown judge name, a bad number in a variable, a model
    endpoint without base URL or model, or a human judge without an existing label file.
    """
    environ = os.environ if environ is None else environ
    c = _Checks(Path(path))
    judge = dict(c.mapping(section, "judge"))
    if "api_key" in judge:
        raise c.fail("judge.api_key is not read from a file; set RAG_EVAL_JUDGE_API_KEY in the environment")
    c.mapping(judge, "judge", JUDGE_KEYS)
    from_env = []
    type_source = "config" if "type" in judge else "default"
    for key, var in JUDGE_ENV.items():
        value = environ.get(var)
        if value is None or value == "":
            continue
        from_env.append(var)
        if key in ("timeout_s", "backoff_s", "rate_limit_per_s"):
            try:
                value = float(value)
            except ValueError:
                raise JudgeConfigError(f"{var}={_show(value)}: expected a number") from None
        elif key in ("max_retries", "concurrency"):
            try:
                value = int(value)
            except ValueError:
                raise JudgeConfigError(f"{var}={_show(value)}: expected an integer") from None
        elif key in ("cache", "human_labels"):
            value = str(Path(value).resolve())
        judge[key] = value
        if key == "type":
            type_source = var

    def where(key: str) -> str:
        var = JUDGE_ENV.get(key)
        return var if var in from_env else f"judge.{key}"

    kind = judge.get("type", "rule_based")
    if kind not in JUDGE_TYPES:
        origin = f"{JUDGE_ENV['type']}={_show(kind)}" if type_source != "config" else (
            f"{path}: judge.type {_show(kind)}")
        raise JudgeConfigError(f"{origin}: expected one of {', '.join(JUDGE_TYPES)}")

    def checked(fn, key, *args, **kwargs):
        try:
            return fn(judge[key], where(key), *args, **kwargs)
        except ConfigError as exc:
            if where(key) != f"judge.{key}":  # the bad value came from a variable: say so, without the file
                raise JudgeConfigError(str(exc).replace(f"{path}: ", "", 1)) from None
            raise

    out: dict[str, Any] = {"type": kind, "type_source": type_source, "from_env": tuple(from_env)}
    if "max_error_share" in judge:
        out["max_error_share"] = checked(c.number, "max_error_share", 0.0, 1.0)
    if "repeats" in judge:
        out["repeats"] = checked(c.integer, "repeats", 1, 100)
    if "reverse_questions" in judge:
        out["reverse_questions"] = checked(c.boolean, "reverse_questions")
    if "timeout_s" in judge:
        out["timeout_s"] = checked(c.finite, "timeout_s", 0.0, above=True)
    if "max_retries" in judge:
        out["max_retries"] = checked(c.integer, "max_retries", 0, 20)
    if "backoff_s" in judge:
        out["backoff_s"] = checked(c.number, "backoff_s", 0.0, 300.0)
    if "concurrency" in judge:
        out["concurrency"] = checked(c.integer, "concurrency", 1, 256)
    if judge.get("rate_limit_per_s") is not None:
        out["rate_limit_per_s"] = checked(c.finite, "rate_limit_per_s", 0.0, above=True)
    for key in ("base_url", "model"):
        if judge.get(key) is not None:
            out[key] = checked(c.short_text, key)
    if judge.get("abstention_phrases") is not None:
        from rag_eval_pipeline.core.judges.abstention import phrases_from_config

        try:  # checked here, not first when judging: a bad list is an error at load
            phrases_from_config(judge["abstention_phrases"])
        except ConfigError as exc:
            raise c.fail(str(exc)) from None
        out["abstention_phrases"] = judge["abstention_phrases"]
    for key in ("cache", "human_labels"):
        if judge.get(key) is not None:
            out[key] = checked(c.file_path, key)

    if kind == "openai_compatible":
        need = [k for k in ("base_url", "model") if not out.get(k)]
        if need:
            names = ", ".join(JUDGE_ENV[k] for k in need)
            origin = f"{type_source}=openai_compatible" if type_source.startswith("RAG_") else (
                f"{path}: judge.type openai_compatible")
            raise JudgeConfigError(f"{origin} needs {names} to be set (or judge.{' and judge.'.join(need)} in the "
                                   "configuration)")
    if kind == "human":
        labels = out.get("human_labels")
        if labels is None:
            raise JudgeConfigError(f"judge type human needs {JUDGE_ENV['human_labels']} (path of the label file) "
                                   f"or judge.human_labels in {path}")
        if not Path(labels).is_file():
            raise JudgeConfigError(f"judge type human: label file {labels} ({where('human_labels')}) not found")
    return JudgeConfig(**out)


def _threshold(c: _Checks, i: int, t, ks: tuple[int, ...]) -> Threshold:
    where = f"gates.thresholds[{i}]"
    if not isinstance(t, dict):
        raise c.fail(f"{where} must be a mapping, got {_show(t)}")
    allowed = set(Threshold.__dataclass_fields__)
    unknown = set(t) - allowed
    if unknown or "metric" not in t:
        raise c.fail(f"{where} has unknown keys {sorted(map(str, unknown))} or no metric")
    t = dict(t)
    if not isinstance(t["metric"], str) or not t["metric"]:
        raise c.fail(f"{where}.metric must be a metric name, got {_show(t['metric'])}")
    if t.get("k") is not None:
        c.integer(t["k"], f"{where}.k", 1)
    thr_name = t["metric"]
    cut = _CUT_SUFFIX.match(t["metric"])
    if cut and t.get("k") is None:  # "recall_5" / "recall@5" -> metric "recall", k 5 (trec_eval names)
        t["metric"], t["k"] = cut.group(1), int(cut.group(2))
    if t["metric"] not in known_metrics():  # a readable alias: ndcg@10, mrr, hit@5, precision@5 ...
        try:
            base, cut_k = parse_measure(thr_name)
            t["metric"], t["k"] = base, t.get("k") if t.get("k") is not None else cut_k
        except Exception:  # noqa: BLE001 - not a retrieval alias either: reported just below
            pass
    if t["metric"] not in known_metrics():
        raise c.fail(f"{where}.metric {t['metric']!r} is not a metric this pipeline "
                     f"computes; expected one of {sorted(known_metrics())}")
    if t.get("k") is not None and t["k"] not in ks:  # cut-off metrics are computed at metrics.ks only
        raise c.fail(f"{where} ({t['metric']}, k={t['k']}) uses a cut-off that "
                     f"is not in metrics.ks {list(ks)}; expected one of them")
    # a limit that is NaN, infinite, negative or a string would switch the gate off (or trip it always)
    if t.get("max_abs_drop") is not None:
        t["max_abs_drop"] = c.finite(t["max_abs_drop"], f"{where}.max_abs_drop", 0.0)
    if t.get("max_rel_drop") is not None:
        t["max_rel_drop"] = c.number(t["max_rel_drop"], f"{where}.max_rel_drop", 0.0, 1.0)
    if t.get("min_value") is not None:
        t["min_value"] = c.finite(t["min_value"], f"{where}.min_value", 0.0)
    if all(t.get(k) is None for k in ("max_abs_drop", "max_rel_drop", "min_value")):
        raise c.fail(f"{where} ({thr_name}) sets no limit; expected max_abs_drop, max_rel_drop or min_value")
    for key in ("higher_is_better", "blocking"):
        if key in t:
            t[key] = c.boolean(t[key], f"{where}.{key}")
    if t.get("level") is not None:
        from rag_eval_pipeline.core.tables import LEVELS

        t["level"] = c.choice(t["level"], f"{where}.level", LEVELS)
    return Threshold(**t)


def _gates(c: _Checks, raw: dict, names: list[str], ks: tuple[int, ...]) -> GatesConfig:
    gates = c.mapping(raw.get("gates"), "gates", GATES_KEYS)
    thresholds_raw = gates.get("thresholds") or []
    if not isinstance(thresholds_raw, list):
        raise c.fail(f"gates.thresholds must be a list, got {_show(thresholds_raw)}")
    thresholds = tuple(_threshold(c, i, t, ks) for i, t in enumerate(thresholds_raw))
    baseline = gates.get("baseline_system")
    if baseline is not None and baseline not in names:
        raise c.fail(f"gates.baseline_system {_show(baseline)} is not a configured system {names}")
    raw_candidates = gates.get("candidate_systems")
    if raw_candidates is not None and not isinstance(raw_candidates, list):
        raise c.fail(f"gates.candidate_systems must be a list of system names, got {_show(raw_candidates)}")
    candidates = list(raw_candidates or [n for n in names if n != baseline])
    for cand in candidates:
        if cand not in names:
            raise c.fail(f"gates.candidate_systems lists unknown system {_show(cand)}")
    promote = gates.get("promote")
    if promote is not None and promote not in candidates:
        raise c.fail(f"gates.promote {_show(promote)} is not one of gates.candidate_systems {candidates}: only a "
                     "candidate the gates judged can become the baseline")
    if promote is None and candidates:
        promote = candidates[0]
    return GatesConfig(
        split=c.choice(gates.get("split", "test"), "gates.split", GATE_SPLITS),
        baseline_system=baseline, candidate_systems=tuple(candidates), promote=promote,
        alpha=c.number(gates.get("alpha", 0.05), "gates.alpha", 0.0, 1.0, open_interval=True),
        block_inconclusive=c.boolean(gates.get("block_inconclusive", True), "gates.block_inconclusive"),
        thresholds=thresholds,
        max_run_error_share=c.number(gates.get("max_run_error_share", 0.10), "gates.max_run_error_share", 0.0, 1.0),
    )


def _calibration(c: _Checks, raw: dict) -> CalibrationConfig:
    section = raw.get("calibration")
    if section in (None, {}):
        return CalibrationConfig()
    section = c.mapping(section, "calibration", CALIBRATION_KEYS)
    labels = section.get("human_labels")
    if not labels:
        raise c.fail("calibration.human_labels is required in the calibration section")
    labels_path = c.file_path(labels, "calibration.human_labels")
    if labels_path.exists() and not labels_path.is_file():  # absent is allowed: `rag-eval label` creates it
        raise c.fail(f"calibration.human_labels {labels_path}: not a regular file; expected a label file")
    mapping = section.get("mapping")
    if mapping is not None:
        c.mapping(mapping, "calibration.mapping")
    return CalibrationConfig(
        configured=True, human_labels=labels_path,
        kappa_floor=c.number(section.get("kappa_floor", DEFAULT_KAPPA_FLOOR), "calibration.kappa_floor", -1.0, 1.0),
        level=c.choice(section.get("level", "claim"), "calibration.level", CALIBRATION_LEVELS),
        mapping=mapping,
    )


def _report(c: _Checks, raw: dict) -> ReportConfig:
    section = c.mapping(raw.get("report"), "report", REPORT_KEYS)
    groups = section.get("viewer_groups", list(DEFAULT_VIEWER_GROUPS))
    if not isinstance(groups, list) or not groups or not all(isinstance(g, str) and g.strip() for g in groups):
        raise c.fail(f"report.viewer_groups must be a list of group names, got {_show(groups)}")
    for i, g in enumerate(groups):
        c.short_text(g, f"report.viewer_groups[{i}]")
    return ReportConfig(viewer_groups=tuple(groups))


def _schedule(c: _Checks, raw: dict) -> ScheduleConfig:
    section = c.mapping(raw.get("schedule"), "schedule", SCHEDULE_KEYS)
    cron, tz = section.get("cron"), section.get("timezone")
    if cron is not None and (not isinstance(cron, str) or len(cron.split()) != 5):
        raise c.fail(f"schedule.cron must be a cron expression of five fields, got {_show(cron)}")
    if tz is not None:
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(str(tz))
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise c.fail(f"schedule.timezone must be an IANA time zone name, got {_show(tz)}") from None
    return ScheduleConfig(cron=cron, timezone=tz)


def load_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> EvalConfig:
    """Load and validate an evaluation configuration.

    Input: path to a YAML file (read with :func:`rag_eval_pipeline.core.yamlio.load_yaml`: a repeated
    key, an alias bomb or a file over 1 MiB is refused); ``environ`` (default ``os.environ``) for
    the judge's overrides (:data:`JUDGE_ENV`). Output: an :class:`EvalConfig`.
    Raises ConfigError naming the file and the key for a missing file, bad YAML, an unknown
    source/system kind/ranking mode/judge type/calibration level, a ``corpus.path`` that does not
    exist, a k below 1, duplicate or unusable system names, a threshold on an unknown metric, on a
    cut-off not in ``metrics.ks`` or with a limit that is not a finite number in range, a baseline
    or candidate that is not a configured system, a ``promote`` that is not a candidate, an unknown
    key in any section, or a number or boolean of the wrong type or out of range (``alpha`` in
    (0, 1), ``max_error_share`` and ``abstain_threshold`` in [0, 1], ``kappa_floor`` in [-1, 1]...);
    JudgeConfigError (a ConfigError) for a judge the environment and file cannot build.
    """
    from rag_eval_pipeline.core.yamlio import load_yaml

    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        raw = load_yaml(path)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    c = _Checks(path)
    c.mapping(raw, "the top level", TOP_LEVEL_KEYS)

    corpus = _corpus(c, raw)
    golden = c.mapping(raw.get("golden"), "golden", GOLDEN_KEYS)
    if corpus.source not in QUESTION_SOURCES:
        c.need(golden, "path", "golden.")
    golden_cfg = GoldenConfig(path=c.file_path(golden["path"], "golden.path") if golden.get("path") else None)
    systems = _systems(c, raw)
    metrics = _metrics(c, raw)
    judge = resolve_judge(raw.get("judge"), path=path, environ=environ)
    for section, allowed in (("calibration", CALIBRATION_KEYS), ("report", REPORT_KEYS)):
        c.mapping(raw.get(section), section, allowed)
    gates = _gates(c, raw, [s["name"] for s in systems], metrics.ks)
    return EvalConfig(
        path=path, corpus=corpus, golden=golden_cfg, systems=systems, metrics=metrics, judge=judge, gates=gates,
        calibration=_calibration(c, raw), report=_report(c, raw), schedule=_schedule(c, raw),
        seed=c.integer(raw.get("seed", 0), "seed", 0),
        quick_subset_size=c.integer(raw.get("quick_subset_size", 24), "quick_subset_size", 1),
    )
