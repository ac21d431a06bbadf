"""The typed evaluation configuration: one frozen dataclass per section of the YAML file.

:func:`rag_eval_pipeline.core.config.load_config` reads a file into these and checks every field;
nothing here reads files. Frozen dataclasses rather than pydantic models: the core stays free of a
library that reaches it only through Dagster, and the checks (with messages of the form
``FILE: section.key must be ..., got VALUE``, and the ones spanning sections, such as a threshold's
``k`` among ``metrics.ks``) live in one place, ``core/config.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.errors import ConfigError

CORPUS_SOURCES = ("documents_dir", "beir", "squad_v2", "chunks")
#: Sources whose ``corpus.path`` is a file (the others are folders).
FILE_SOURCES = ("squad_v2", "chunks")
#: Sources that read the team's own chunks as they are: ``corpus.chunking`` does not apply.
UNCHUNKED_SOURCES = ("chunks",)
#: Sources that carry their own golden questions (the others need ``golden.path``).
QUESTION_SOURCES = ("beir", "squad_v2")
SYSTEM_KINDS = ("reference", "logged", "http", "python", "traces")
RANKING_MODES = ("system", "trec_eval")
JUDGE_TYPES = ("rule_based", "openai_compatible", "human")
CALIBRATION_LEVELS = ("claim", "response")  # as core.metrics.calibration.LEVELS (a test keeps them equal)
CHUNKING_STRATEGIES = ("paragraphs", "document")  # as core.corpus.STRATEGIES (a test keeps them equal)
GATE_SPLITS = ("dev", "test", "all")
DEFAULT_VIEWER_GROUPS = ("customers",)
DEFAULT_KAPPA_FLOOR = 0.4



@dataclass(frozen=True)
class Threshold:
    """A regression gate for one metric: fail when the candidate drops more than allowed.

    ``max_abs_drop`` is in the metric's own units (0.05 = five points of a rate), finite and >= 0;
    ``max_rel_drop`` is a share of the baseline value in [0, 1] (0.10 = ten per cent); ``min_value``
    is an absolute floor, finite and >= 0 (a ceiling when ``higher_is_better`` is False, as for
    error rates). At least one of the three is set. ``blocking``: a failure stops promotion.
    ``level``: for a retrieval metric scored at both levels, which one is gated (``chunk`` or
    ``doc``); None: chunk when the metric has chunk-level rows, else doc.
    """

    metric: str
    k: int | None = None
    max_abs_drop: float | None = None
    max_rel_drop: float | None = None
    min_value: float | None = None
    higher_is_better: bool = True
    blocking: bool = True
    level: str | None = None


@dataclass(frozen=True)
class ChunkingConfig:
    """``corpus.chunking``: ``strategy`` one of :data:`CHUNKING_STRATEGIES` (None: the source's
    default, paragraphs for a documents folder, one chunk per document otherwise), ``max_chars`` >= 1."""

    strategy: str | None = None
    max_chars: int = 1200


@dataclass(frozen=True)
class CorpusConfig:
    """``corpus``: ``source`` (:data:`CORPUS_SOURCES`), ``path`` (absolute; it exists), ``split``
    (the BEIR qrels split, default "test"), ``chunking``."""

    source: str
    path: Path
    split: str = "test"
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)


@dataclass(frozen=True)
class GoldenConfig:
    """``golden``: ``path`` (absolute) of the golden JSONL/Parquet file; None when the corpus source
    carries its own questions (beir, squad_v2)."""

    path: Path | None = None


@dataclass(frozen=True)
class MetricsConfig:
    """``metrics``: cut-offs ``ks`` (integers >= 1), ``ranking_mode`` (:data:`RANKING_MODES`),
    ``rel_level`` (>= 0, as trec_eval -l), ``on_duplicate`` ("error" | "keep_first"), ``complete``
    (as trec_eval -c), ``bootstrap_resamples`` (>= 1), ``small_segment_n`` (>= 0)."""

    ks: tuple[int, ...] = (1, 3, 5, 10)
    ranking_mode: str = "system"
    rel_level: int = 1
    on_duplicate: str = "error"
    complete: bool = False
    bootstrap_resamples: int = 2000
    small_segment_n: int = 10


@dataclass(frozen=True)
class JudgeConfig:
    """``judge`` after environment overrides (:data:`JUDGE_ENV`).

    ``type`` (:data:`JUDGE_TYPES`), ``type_source`` ("default", "config" or the variable that set
    it), ``max_error_share`` in [0, 1], ``repeats`` >= 1, ``reverse_questions``; the model endpoint's
    ``base_url`` and ``model`` (both required for openai_compatible), ``cache`` (SQLite path or
    None), ``human_labels`` (label file, required for human); the transport's ``timeout_s`` (total
    seconds per call, > 0), ``max_retries`` (extra attempts, 0..20), ``backoff_s`` (first retry
    wait in seconds, >= 0), ``concurrency`` (calls in flight, 1..256), ``rate_limit_per_s`` (None
    or > 0); ``abstention_phrases`` (language -> phrases marking an answer as an abstention, None
    for the built-in es/en lists); ``from_env`` lists the variables that overrode the file.
    """

    type: str = "rule_based"
    type_source: str = "default"
    max_error_share: float = 0.05
    repeats: int = 1
    reverse_questions: bool = False
    base_url: str | None = None
    model: str | None = None
    cache: Path | None = None
    human_labels: Path | None = None
    timeout_s: float = 30.0
    max_retries: int = 3
    backoff_s: float = 1.0
    concurrency: int = 4
    rate_limit_per_s: float | None = None
    abstention_phrases: Mapping[str, Any] | None = None  # language -> phrases; None: the built-in lists
    from_env: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatesConfig:
    """``gates``: ``split`` (:data:`GATE_SPLITS`), ``baseline_system`` (a configured system or None),
    ``candidate_systems`` (configured systems; default every system but the baseline), ``promote``
    (one of the candidates, default the first; None when there is no candidate), ``alpha`` in
    (0, 1), ``block_inconclusive``, ``thresholds``, ``max_run_error_share`` in [0, 1] (a system
    whose share of ``error`` runs is above it blocks promotion: the ``run_errors_within_share``
    check; 1 switches it off)."""

    split: str = "test"
    baseline_system: str | None = None
    candidate_systems: tuple[str, ...] = ()
    promote: str | None = None
    alpha: float = 0.05
    block_inconclusive: bool = True
    thresholds: tuple[Threshold, ...] = ()
    max_run_error_share: float = 0.10


@dataclass(frozen=True)
class CalibrationConfig:
    """``calibration``: ``configured`` (the section is present), ``human_labels`` (absolute path of
    an existing file; required when configured), ``kappa_floor`` in [-1, 1] (default 0.4), ``level``
    (:data:`CALIBRATION_LEVELS`, default "claim"), ``mapping`` (response-level label mapping, read
    by ``core/metrics/calibration.py``, or None)."""

    configured: bool = False
    human_labels: Path | None = None
    kappa_floor: float = DEFAULT_KAPPA_FLOOR
    level: str = "claim"
    mapping: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class ReportConfig:
    """``report``: ``viewer_groups`` (non-empty group names: the test user the report is written for)."""

    viewer_groups: tuple[str, ...] = DEFAULT_VIEWER_GROUPS


@dataclass(frozen=True)
class ScheduleConfig:
    """``schedule``: ``cron`` (five fields) and ``timezone`` (an IANA name), or None each."""

    cron: str | None = None
    timezone: str | None = None


@dataclass(frozen=True)
class EvalConfig:
    """A validated configuration (see ``data/sample/config.yaml`` for a commented example).

    Sections: ``corpus``, ``golden``, ``systems`` (one mapping per system, in file order), ``metrics``,
    ``judge``, ``gates``, ``calibration``, ``report``, ``schedule``; top-level ``seed`` (>= 0) and
    ``quick_subset_size`` (>= 1). The flat properties (``ks``, ``thresholds``, ``alpha``, ...) read
    the sections.
    """

    path: Path
    corpus: CorpusConfig
    golden: GoldenConfig
    systems: tuple[dict[str, Any], ...]
    metrics: MetricsConfig
    judge: JudgeConfig
    gates: GatesConfig
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    seed: int = 0
    quick_subset_size: int = 24

    # -- flat views of the sections (the names older code reads)
    ks = property(lambda self: self.metrics.ks)
    ranking_mode = property(lambda self: self.metrics.ranking_mode)
    rel_level = property(lambda self: self.metrics.rel_level)
    on_duplicate = property(lambda self: self.metrics.on_duplicate)
    complete = property(lambda self: self.metrics.complete)
    bootstrap_resamples = property(lambda self: self.metrics.bootstrap_resamples)
    small_segment_n = property(lambda self: self.metrics.small_segment_n)
    thresholds = property(lambda self: list(self.gates.thresholds))
    baseline_system = property(lambda self: self.gates.baseline_system)
    candidate_systems = property(lambda self: list(self.gates.candidate_systems))
    gate_split = property(lambda self: self.gates.split)
    alpha = property(lambda self: self.gates.alpha)
    block_inconclusive = property(lambda self: self.gates.block_inconclusive)
    max_judge_error_share = property(lambda self: self.judge.max_error_share)

    @property
    def system_names(self) -> list[str]:
        """Names of the configured systems, in file order."""
        return [s["name"] for s in self.systems]

    def resolve(self, p: str | Path) -> Path:
        """Resolve a path from the configuration against the configuration file's folder."""
        p = Path(p)
        return p if p.is_absolute() else (self.path.parent / p).resolve()

    def system(self, name: str) -> dict[str, Any]:
        """Return the configuration of the system named ``name``; ConfigError if none."""
        for s in self.systems:
            if s["name"] == name:
                return s
        raise ConfigError(f"{self.path}: no system named {name!r} (systems: {self.system_names})")
