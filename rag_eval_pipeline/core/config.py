"""The evaluation configuration: one YAML file, validated when it is loaded.

A configuration names the corpus source, the golden set, the systems under evaluation, the metric
settings, the judge and the regression thresholds. Relative paths inside it are resolved against
the folder of the YAML file, so a configuration travels with its data.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from rag_eval_pipeline.core.errors import ConfigError

CORPUS_SOURCES = ("documents_dir", "beir", "squad_v2")
SYSTEM_KINDS = ("reference", "logged")
RANKING_MODES = ("system", "trec_eval")
JUDGE_TYPES = ("rule_based", "openai_compatible", "human")
JUDGE_KEYS = ("type", "max_error_share", "repeats", "reverse_questions", "abstention_phrases")
CALIBRATION_KEYS = ("human_labels", "kappa_floor", "mapping", "level")
REPORT_KEYS = ("viewer_groups",)


def known_metrics() -> frozenset[str]:
    """Every metric name the pipeline writes to question_metrics (base names; the cut-off is ``k``)."""
    from rag_eval_pipeline.core.answer_quality import QUALITY_METRICS
    from rag_eval_pipeline.core.metrics.correctness import CORRECTNESS_METRICS
    from rag_eval_pipeline.core.metrics.decisions import DECISION_METRICS
    from rag_eval_pipeline.core.metrics.faithfulness import FAITHFULNESS_METRICS
    from rag_eval_pipeline.core.metrics.retrieval import CLAIM_METRIC, MEASURES

    return frozenset((*MEASURES, CLAIM_METRIC, *DECISION_METRICS, *FAITHFULNESS_METRICS, *CORRECTNESS_METRICS,
                      *QUALITY_METRICS))


_CUT_SUFFIX = re.compile(r"^(.*[A-Za-z])[_@](\d+)$")
# Keys read from each section; any other key is a typo that would otherwise be ignored silently
# (a misspelt ``gates:`` would turn every gate off).
TOP_LEVEL_KEYS = ("corpus", "golden", "systems", "metrics", "judge", "gates", "seed", "quick_subset_size",
                  "report", "calibration", "schedule")
METRICS_KEYS = ("ks", "ranking_mode", "rel_level", "on_duplicate", "complete", "bootstrap_resamples",
                "small_segment_n")
GATES_KEYS = ("split", "baseline_system", "candidate_systems", "promote", "alpha", "block_inconclusive",
              "thresholds")


@dataclass(frozen=True)
class Threshold:
    """A regression gate for one metric: fail when the candidate drops more than allowed.

    ``max_abs_drop`` is in the metric's own units (0.05 = five points of a rate);
    ``max_rel_drop`` is a share of the baseline value (0.10 = ten per cent); ``min_value`` is an
    absolute floor. ``higher_is_better`` is False for error rates.
    """

    metric: str
    k: int | None = None
    max_abs_drop: float | None = None
    max_rel_drop: float | None = None
    min_value: float | None = None
    higher_is_better: bool = True
    blocking: bool = True


@dataclass(frozen=True)
class EvalConfig:
    """A validated configuration (see ``data/sample/config.yaml`` for a commented example)."""

    path: Path
    corpus: dict[str, Any]
    golden: dict[str, Any]
    systems: list[dict[str, Any]]
    ks: tuple[int, ...]
    ranking_mode: str
    rel_level: int
    on_duplicate: str
    complete: bool
    judge: dict[str, Any]
    thresholds: list[Threshold]
    baseline_system: str | None
    candidate_systems: list[str]
    gate_split: str
    quick_subset_size: int
    bootstrap_resamples: int
    seed: int
    small_segment_n: int
    max_judge_error_share: float
    alpha: float = 0.05
    block_inconclusive: bool = True
    schedule: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    def resolve(self, p: str | Path) -> Path:
        """Resolve a path from the configuration against the configuration file's folder."""
        p = Path(p)
        return p if p.is_absolute() else (self.path.parent / p).resolve()

    def system(self, name: str) -> dict[str, Any]:
        """Return the configuration of the system named ``name``; ConfigError if none."""
        for s in self.systems:
            if s["name"] == name:
                return s
        raise ConfigError(f"{self.path}: no system named {name!r} (systems: {[s['name'] for s in self.systems]})")


def load_config(path: str | Path) -> EvalConfig:
    """Load and validate an evaluation configuration.

    Input: path to a YAML file. Output: an :class:`EvalConfig`.
    Raises ConfigError naming the file and the key for a missing file, bad YAML, an unknown
    source/system kind/ranking mode/judge type, a k below 1, duplicate system names, a threshold on
    an unknown field or on a cut-off not in ``metrics.ks``, a baseline that is not a configured system,
    an unknown key at the top level or in ``metrics`` / ``gates``, or a number of the wrong type or
    out of range (``alpha`` in (0, 1), ``max_error_share`` and ``abstain_threshold`` in [0, 1], ...).
    """
    path = Path(path).resolve()
    if not path.is_file():
        raise ConfigError(f"configuration file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")

    def need(mapping: dict, key: str, where: str):
        if key not in mapping:
            raise ConfigError(f"{path}: missing key {where}{key}")
        return mapping[key]

    def known_keys(mapping: dict, allowed: tuple[str, ...], where: str) -> None:
        unknown = sorted(str(k) for k in mapping if k not in allowed)
        if unknown:
            raise ConfigError(f"{path}: unknown key(s) {unknown} in {where}; expected only {list(allowed)}")

    def integer(value, key: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ConfigError(f"{path}: {key} must be an integer >= {minimum}, got {value!r}")
        return value

    def number(value, key: str, low: float, high: float, open_interval: bool = False) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
            low < value < high if open_interval else low <= value <= high)
        if not ok:
            span = f"({low}, {high})" if open_interval else f"[{low}, {high}]"
            raise ConfigError(f"{path}: {key} must be a number in {span}, got {value!r}")
        return float(value)

    known_keys(raw, TOP_LEVEL_KEYS, "the top level")

    corpus = dict(need(raw, "corpus", ""))
    if corpus.get("source") not in CORPUS_SOURCES:
        raise ConfigError(f"{path}: corpus.source must be one of {CORPUS_SOURCES}, got {corpus.get('source')!r}")
    need(corpus, "path", "corpus.")
    golden = dict(raw.get("golden") or {})
    if corpus["source"] == "documents_dir":
        need(golden, "path", "golden.")

    systems = [dict(s) for s in need(raw, "systems", "")]
    if not systems:
        raise ConfigError(f"{path}: systems must list at least one system")
    names = [s.get("name") for s in systems]
    for i, s in enumerate(systems):
        if not s.get("name"):
            raise ConfigError(f"{path}: systems[{i}].name is missing")
        if s.get("kind") not in SYSTEM_KINDS:
            raise ConfigError(f"{path}: systems[{i}].kind must be one of {SYSTEM_KINDS}, got {s.get('kind')!r}")
        if s["kind"] == "logged" and not s.get("path"):
            raise ConfigError(f"{path}: systems[{i}] ({s['name']}) is logged but has no path")
        rk = (s.get("retriever") or {}).get("k")
        if rk is not None and (not isinstance(rk, int) or rk < 1):
            raise ConfigError(f"{path}: systems[{i}].retriever.k must be an integer >= 1, got {rk!r}")
        threshold = (s.get("generator") or {}).get("abstain_threshold")
        if threshold is not None:
            number(threshold, f"systems[{i}].generator.abstain_threshold", 0.0, 1.0)
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ConfigError(f"{path}: duplicate system names {dupes}")

    metrics = dict(raw.get("metrics") or {})
    known_keys(metrics, METRICS_KEYS, "metrics")
    ks = metrics.get("ks", [1, 3, 5, 10])
    if not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise ConfigError(f"{path}: metrics.ks must be integers >= 1, got {ks!r}")
    mode = metrics.get("ranking_mode", "system")
    if mode not in RANKING_MODES:
        raise ConfigError(f"{path}: metrics.ranking_mode must be one of {RANKING_MODES}, got {mode!r}")
    on_dup = metrics.get("on_duplicate", "error")
    if on_dup not in ("error", "keep_first"):
        raise ConfigError(f"{path}: metrics.on_duplicate must be 'error' or 'keep_first', got {on_dup!r}")

    judge = dict(raw.get("judge") or {"type": "rule_based"})
    known_keys(judge, JUDGE_KEYS, "judge")
    for section, allowed in (("calibration", CALIBRATION_KEYS), ("report", REPORT_KEYS)):
        if isinstance(raw.get(section), dict):
            known_keys(raw[section], allowed, section)
    if judge.get("type") not in JUDGE_TYPES:
        raise ConfigError(f"{path}: judge.type must be one of {JUDGE_TYPES}, got {judge.get('type')!r}")

    gates = dict(raw.get("gates") or {})
    known_keys(gates, GATES_KEYS, "gates")
    thresholds = []
    for i, t in enumerate(gates.get("thresholds") or []):
        allowed = set(Threshold.__dataclass_fields__)
        unknown = set(t) - allowed
        if unknown or "metric" not in t:
            raise ConfigError(f"{path}: gates.thresholds[{i}] has unknown keys {sorted(unknown)} or no metric")
        if t.get("k") is not None and t["k"] < 1:
            raise ConfigError(f"{path}: gates.thresholds[{i}].k must be >= 1")
        t = dict(t)
        thr_name = t["metric"]
        cut = _CUT_SUFFIX.match(str(t["metric"]))
        if cut and t.get("k") is None:  # "recall_5" / "recall@5" -> metric "recall", k 5 (trec_eval names)
            t["metric"], t["k"] = cut.group(1), int(cut.group(2))
        if t["metric"] not in known_metrics():  # a readable alias: ndcg@10, mrr, hit@5, precision@5 ...
            from rag_eval_pipeline.core.metrics.retrieval import parse_measure

            try:
                base, cut_k = parse_measure(str(thr_name))
                t["metric"], t["k"] = base, t.get("k") if t.get("k") is not None else cut_k
            except Exception:  # noqa: BLE001 - not a retrieval alias either: reported just below
                pass
        if t["metric"] not in known_metrics():
            raise ConfigError(f"{path}: gates.thresholds[{i}].metric {t['metric']!r} is not a metric this pipeline "
                              f"computes; expected one of {sorted(known_metrics())}")
        if t.get("k") is not None and t["k"] not in ks:  # cut-off metrics are computed at metrics.ks only
            raise ConfigError(f"{path}: gates.thresholds[{i}] ({t['metric']}, k={t['k']}) uses a cut-off that "
                              f"is not in metrics.ks {list(ks)}; expected one of them")
        thresholds.append(Threshold(**t))
    baseline = gates.get("baseline_system")
    if baseline is not None and baseline not in names:
        raise ConfigError(f"{path}: gates.baseline_system {baseline!r} is not a configured system {names}")
    candidates = list(gates.get("candidate_systems") or [n for n in names if n != baseline])
    for c in candidates:
        if c not in names:
            raise ConfigError(f"{path}: gates.candidate_systems lists unknown system {c!r}")
    gate_split = gates.get("split", "test")

    return EvalConfig(
        path=path,
        corpus=corpus,
        golden=golden,
        systems=systems,
        ks=tuple(ks),
        ranking_mode=mode,
        rel_level=integer(metrics.get("rel_level", 1), "metrics.rel_level", 0),
        on_duplicate=on_dup,
        complete=bool(metrics.get("complete", False)),
        judge=judge,
        thresholds=thresholds,
        baseline_system=baseline,
        candidate_systems=candidates,
        gate_split=gate_split,
        quick_subset_size=integer(raw.get("quick_subset_size", 24), "quick_subset_size", 1),
        bootstrap_resamples=integer(metrics.get("bootstrap_resamples", 2000), "metrics.bootstrap_resamples", 1),
        seed=integer(raw.get("seed", 0), "seed", 0),
        small_segment_n=integer(metrics.get("small_segment_n", 10), "metrics.small_segment_n", 0),
        max_judge_error_share=number((raw.get("judge") or {}).get("max_error_share", 0.05), "judge.max_error_share",
                                     0.0, 1.0),
        alpha=number(gates.get("alpha", 0.05), "gates.alpha", 0.0, 1.0, open_interval=True),
        block_inconclusive=bool(gates.get("block_inconclusive", True)),
        schedule=dict(raw.get("schedule") or {}),
        raw=copy.deepcopy(raw),
    )
