"""The evaluation configuration: one YAML file, validated when it is loaded.

A configuration names the corpus source, the golden set, the systems under evaluation, the metric
settings, the judge, the calibration, the report's reader and the regression thresholds. Relative
paths inside it are resolved against the folder of the YAML file, so a configuration travels with
its data.

Every section becomes a frozen dataclass of ``core/config_sections.py`` (its names are re-exported
here), each system the typed section of its kind (``core/systems/kinds/``), read by the generic
parser of ``core/sections.py``: a wrong type, a value out of range, an unknown key (anywhere, inside a
system too) or a name that points nowhere is a :class:`ConfigError` naming the file, the line and the
key before any asset runs.

The judge section has environment overrides (see :data:`JUDGE_ENV`): a deployment picks its judge
with ``RAG_EVAL_JUDGE`` and the endpoint with ``RAG_EVAL_JUDGE_BASE_URL`` / ``RAG_EVAL_JUDGE_MODEL``
without editing the file; the API key is read from ``RAG_EVAL_JUDGE_API_KEY`` only, never from the
file. An inconsistent judge (a model endpoint without URL or model, an unknown judge name) is a
:class:`JudgeConfigError` at load.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rag_eval_pipeline.core.config_sections import (
    CALIBRATION_LEVELS,
    CHUNKING_STRATEGIES,
    DEFAULT_KAPPA_FLOOR,
    DEFAULT_VIEWER_GROUPS,
    GATE_SPLITS,
    MAX_BOOTSTRAP_RESAMPLES,
    MAX_K,
    RANKING_MODES,
    CalibrationConfig,
    CalibrationMapping,
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
from rag_eval_pipeline.core.judges.registry import JudgeConfigError, judge_env, resolve_judge
from rag_eval_pipeline.core.metrics.names import METRICS, PIPELINE_METRICS
from rag_eval_pipeline.core.section_errors import At, shown, unknown_keys
from rag_eval_pipeline.core.sections import parse_section, read_value
from rag_eval_pipeline.core.shards import MAX_SHARDS

#: Top-level keys; any other key is a typo that would otherwise be ignored silently (a misspelt
#: ``gates:`` would turn every gate off).
TOP_LEVEL_KEYS = ("corpus", "golden", "systems", "metrics", "judge", "gates", "seed", "quick_subset_size",
                  "shards", "report", "calibration", "schedule")

__all__ = [
    "CALIBRATION_LEVELS", "CHUNKING_STRATEGIES", "DEFAULT_KAPPA_FLOOR", "DEFAULT_VIEWER_GROUPS", "GATE_SPLITS",
    "MAX_BOOTSTRAP_RESAMPLES", "MAX_K", "RANKING_MODES", "CalibrationConfig",
    "CalibrationMapping", "ChunkingConfig", "CorpusConfig", "EvalConfig", "GatesConfig", "GoldenConfig",
    "JudgeConfig", "JudgeConfigError", "MetricsConfig", "ReportConfig", "ScheduleConfig", "Threshold",
    "known_metrics", "load_config", "resolve_judge",
]


def __getattr__(name: str):
    if name == "JUDGE_ENV":  # {key: variable}, from the judge section and every judge type's own keys
        return judge_env()
    raise AttributeError(name)


def known_metrics() -> frozenset[str]:
    """Every metric name the pipeline writes to question_metrics (base names; the cut-off is ``k``)."""
    return PIPELINE_METRICS


def _corpus(at: At, raw: dict) -> CorpusConfig:
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    if "corpus" not in raw or raw["corpus"] is None:
        raise at.error("missing key corpus", label="")
    section = at.child("corpus")
    corpus = parse_section(CorpusConfig, raw["corpus"], section)
    source = CORPUS_SOURCES.get(corpus.source)
    if source.snapshot is not None and (raw["corpus"] or {}).get("chunking") is not None:
        raise section.fail("chunking", f"does not apply to corpus.source {corpus.source}: your chunks are used as they "
                                       "are (remove corpus.chunking)")
    if "split" in raw["corpus"] and not source.reads_split:  # it would be read by nothing
        readers = [s.name for s in CORPUS_SOURCES if s.reads_split]
        raise section.fail("split", f"applies only to a corpus source that reads splits ({', '.join(readers)}); "
                                    f"corpus.source is {corpus.source} here")
    path = corpus.path
    want_file = source.path_is == "file"
    if not (path.is_file() if want_file else path.is_dir()):
        what = "file" if want_file else "folder"
        found = "not a " + what if path.exists() else "not found"
        raise section.fail("path", f"{path}: {what} {found}; expected the {corpus.source} {what} (a relative path "
                                   f"is resolved against {at.source.parent})")
    return corpus


def _gates(at: At, raw: dict, names: list[str], ks: tuple[int, ...]) -> GatesConfig:
    import dataclasses

    section = at.child("gates")
    gates = parse_section(GatesConfig, raw.get("gates"), section)
    written = (raw.get("gates") or {}).get("thresholds") if isinstance(raw.get("gates"), dict) else None
    names_written = [t.get("metric") if isinstance(t, dict) else None for t in written or []]
    thresholds = [_check_threshold(section.child("thresholds").child(i), t, ks,
                                   names_written[i] if i < len(names_written) else None)
                  for i, t in enumerate(gates.thresholds)]
    baseline = gates.baseline_system
    if baseline is not None and baseline not in names:
        raise section.fail("baseline_system", f"{shown(baseline)} is not a configured system {names}")
    candidates = list(gates.candidate_systems or [n for n in names if n != baseline])
    for cand in candidates:
        if cand not in names:
            raise section.fail("candidate_systems", f"lists unknown system {shown(cand)}")
    promote = gates.promote
    if promote is not None and promote not in candidates:
        raise section.fail("promote", f"{shown(promote)} is not one of gates.candidate_systems {candidates}: only a "
                                      "candidate the gates judged can become the baseline")
    if promote is None and candidates:
        promote = candidates[0]
    return dataclasses.replace(gates, candidate_systems=tuple(candidates), promote=promote,
                               thresholds=tuple(thresholds))


def gate_metric_names(ks: tuple[int, ...]) -> list[str]:
    """Every name a gate's ``metric`` can be written as: each known metric, and ``<metric>_<k>`` for each
    cut-off metric at each of ``ks`` (trec_eval's labels: ``recall_5``, ``ndcg_cut_10``)."""
    names = set(known_metrics())
    names |= {f"{m}_{k}" for m in known_metrics() if METRICS.get(m) is not None and METRICS.get(m).cut for k in ks}
    return sorted(names)


def _check_threshold(at: At, t: Threshold, ks: tuple[int, ...], written: object = None) -> Threshold:
    """Refuse a threshold that could never be evaluated (its name and direction are resolved by Threshold).
    ``written``: the metric name as the file wrote it (quoted in the error, with the closest known names)."""
    import difflib

    metric, k = t.metric, t.k
    if metric not in known_metrics():
        said = written if isinstance(written, str) and written else metric
        close = difflib.get_close_matches(said, gate_metric_names(ks), n=3, cutoff=0.6)
        hint = (f"did you mean {' or '.join(repr(c) for c in close)}? " if close else "")
        raise at.child("metric").error(f"{said!r} is not a metric this pipeline computes; {hint}expected one of "
                                       f"{sorted(known_metrics())}")
    cut = METRICS.get(metric).cut
    if k is not None and not cut:  # its rows have no k: the gate would never be evaluated
        raise at.error(f"({metric}, k={k}): {metric} takes no cut-off; expected no k")
    if k is None and cut:  # its rows all have a k: the gate would be not_evaluable on every run
        example = 5 if 5 in ks else ks[0]
        raise at.error(f"({metric}) is computed at a cut-off: expected k, one of metrics.ks {list(ks)} "
                       f"(k: {example}, or in the name: {metric}_{example})")
    if k is not None and k not in ks:  # cut-off metrics are computed at metrics.ks only
        raise at.error(f"({metric}, k={k}) uses a cut-off that is not in metrics.ks {list(ks)}; expected one of them")
    return t


def _calibration(at: At, raw: dict) -> CalibrationConfig:
    section = raw.get("calibration")
    if section in (None, {}):
        return CalibrationConfig()
    return parse_section(CalibrationConfig, section, at.child("calibration"))


def _top_level_int(at: At, raw: dict, name: str, default: int, low: int, high: int | None = None) -> int:
    from rag_eval_pipeline.core.sections import Key

    if name not in raw:
        return default
    return read_value(raw[name], int, Key(low=low, high=high), at.child(name))


def load_config(path: str | Path, *, environ: Mapping[str, str] | None = None) -> EvalConfig:
    """Load and validate an evaluation configuration.

    Input: path to a YAML file (read with :func:`rag_eval_pipeline.core.yamlio.load_yaml_located`: a
    repeated key, an alias bomb or a file over 1 MiB is refused); ``environ`` (default ``os.environ``)
    for the judge's overrides (:data:`JUDGE_ENV`). Output: an :class:`EvalConfig`.
    Raises ConfigError naming the file, the line and the key for a missing file, bad YAML, an unknown
    corpus source, system kind, ranking mode, judge type or calibration level, a ``corpus.path`` that
    does not exist or is a file where a folder is expected (or the reverse), a cut-off below 1 or
    above 2^31 - 1, ``bootstrap_resamples`` that is not an integer from 1 to 100,000, duplicate or
    unusable system names, an unknown key anywhere (inside a system too, naming the system), a
    threshold on an unknown metric, on a cut-off not in ``metrics.ks`` or with a limit that is not a
    finite number in range, a baseline or candidate that is not a configured system, a ``promote``
    that is not a candidate, ``shards`` that is not an integer from 1 to 1024, or a number or boolean of the
    wrong type or out of range (``alpha`` in
    (0, 1), ``max_error_share`` and ``abstain_threshold`` in [0, 1], ``kappa_floor`` in [-1, 1],
    ``judge.timeout_s`` in (0, 3600] ...); JudgeConfigError (a ConfigError) for a judge the
    environment and file cannot build.
    """
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES
    from rag_eval_pipeline.core.systems.base import parse_systems
    from rag_eval_pipeline.core.yamlio import load_yaml_located

    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        doc = load_yaml_located(path)
    except InputError as exc:
        raise ConfigError(str(exc)) from None
    raw = {} if doc.value is None else doc.value
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    at = At(path, doc.lines, base_dir=path.parent)
    unknown = [str(k) for k in raw if k not in TOP_LEVEL_KEYS]
    if unknown:
        raise at.error(unknown_keys(unknown, list(TOP_LEVEL_KEYS)), path=(unknown[0],), label="")
    corpus = _corpus(at, raw)
    golden = parse_section(GoldenConfig, raw.get("golden"), at.child("golden"))
    if golden.path is None and not CORPUS_SOURCES.get(corpus.source).own_questions:
        raise at.child("golden").error("missing key golden.path", label="")
    if "systems" not in raw or raw["systems"] is None:
        raise at.error("missing key systems", label="")
    systems = parse_systems(raw["systems"], at.child("systems"))
    metrics = parse_section(MetricsConfig, raw.get("metrics"), at.child("metrics"))
    judge = resolve_judge(raw.get("judge"), path=path, environ=environ, lines=doc.lines)
    for name in ("calibration", "report"):
        if raw.get(name) is not None and not isinstance(raw[name], dict):
            raise at.child(name).error(f"must be a mapping, got {shown(raw[name])}")
    gates = _gates(at, raw, [s.name for s in systems], metrics.ks)
    return EvalConfig(
        path=path, corpus=corpus, golden=golden, systems=systems, metrics=metrics, judge=judge, gates=gates,
        calibration=_calibration(at, raw), report=parse_section(ReportConfig, raw.get("report"), at.child("report")),
        schedule=parse_section(ScheduleConfig, raw.get("schedule"), at.child("schedule")),
        seed=_top_level_int(at, raw, "seed", 0, 0),
        quick_subset_size=_top_level_int(at, raw, "quick_subset_size", 24, 1),
        shards=_top_level_int(at, raw, "shards", 1, 1, MAX_SHARDS),
    )
