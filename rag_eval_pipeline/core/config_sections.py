"""The typed evaluation configuration: one frozen dataclass per section of the YAML file.

Each field is one key, declared with :func:`rag_eval_pipeline.core.sections.key` (default, range,
choices, documentation); :func:`rag_eval_pipeline.core.config.load_config` reads the file into these
with the generic parser of ``core/sections.py`` and adds the checks that span sections (a threshold's
``k`` among ``metrics.ks``, a candidate that is a configured system). Systems are typed by their kind
(``core/systems/kinds/``), the judge by its type (``core/judges/types/``), the corpus source is one of
``core/sources/corpus/``. Nothing here reads files.
"""

from __future__ import annotations

import dataclasses
import zoneinfo
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.judges.base import CALIBRATION_LEVELS
from rag_eval_pipeline.core.metrics.names import RANKING_MODES
from rag_eval_pipeline.core.plain_names import CHUNKING_STRATEGIES, GATE_SPLITS  # plain names: no polars
from rag_eval_pipeline.core.section_checks import check_nonblank, check_short_text
from rag_eval_pipeline.core.sections import Key, key

if TYPE_CHECKING:
    from rag_eval_pipeline.core.systems.base import SystemSpec

# CALIBRATION_LEVELS: declared in core.judges.base, which the calibration mapping reads too (the configuration
# imports no metric module, and the mapping does not import the configuration: no import circle)
ON_DUPLICATE = ("error", "keep_first")
DEFAULT_VIEWER_GROUPS = ("customers",)
DEFAULT_KAPPA_FLOOR = 0.4
#: Fewest items compared (hand label and judge label on the same item) for a κ to count: see docs/judges.md.
DEFAULT_MIN_LABELS = 30
#: Full runs whose per-question archive is kept (about a month of nightly runs).
DEFAULT_KEEP_RUNS = 30
#: Largest cut-off: the ``k`` column of every metric table is a 32-bit integer (as the ``rank`` of a hit).
MAX_K = 2**31 - 1
#: Most bootstrap resamples: 2,000 already put the interval's ends within about 0.01 of their limit;
#: more than 100,000 only costs memory (resamples x questions) and time.
MAX_BOOTSTRAP_RESAMPLES = 100_000


def _corpus_sources() -> tuple[str, ...]:
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    return CORPUS_SOURCES.names()


def _some_systems(value: tuple) -> str | None:
    # an empty list written in the file would otherwise read as "every system": the opposite of what it says
    return None if value else "must list at least one system; leave the key out for every system but the baseline"


def _nonempty(value: tuple) -> str | None:
    return None if value else "must list at least one value"


@dataclass(frozen=True)
class Threshold:
    """A regression gate for one metric: fail when the candidate drops more than allowed.

    ``max_abs_drop`` is in the metric's own units (0.05 = five points of a rate), finite and >= 0;
    ``max_rel_drop`` is a share of the baseline value in [0, 1] (0.10 = ten per cent); ``min_value``
    is an absolute floor, finite and >= 0 (a ceiling when ``higher_is_better`` is False, as for
    error rates). At least one of the three is set. ``metric`` may be a label or an alias (``recall_5``,
    ``ndcg@10``): it is resolved once, when the threshold is built, to the metric and ``k``
    (:func:`~rag_eval_pipeline.core.metrics.names.gate_metric`); ``higher_is_better`` then defaults to
    that metric's own direction (``core/metrics/names.py``: False for error and abstention rates).
    ``blocking``: a failure stops promotion. ``level``: for a retrieval metric scored at both levels
    (chunk and document), which one is gated; None: chunk when the metric has chunk-level rows, else doc.
    """

    metric: str = key(check=check_nonblank, expected="a metric name",
                      doc="a metric name: trec_eval's (recall_5, ndcg_cut_10) or a readable alias (ndcg@10, mrr)")
    k: int | None = key(None, low=1, doc="cut-off, one of metrics.ks (or in the name: recall_5)")
    max_abs_drop: float | None = key(None, low=0.0, doc="largest allowed drop, in the metric's units")
    max_rel_drop: float | None = key(None, low=0.0, high=1.0, doc="largest allowed drop, as a share of the baseline")
    min_value: float | None = key(None, low=0.0, doc="absolute floor (a ceiling when lower is better)")
    higher_is_better: bool | None = key(None, doc="default: the metric's own direction")
    blocking: bool = key(True, doc="a failure stops promotion")
    level: str | None = key(None, choices=("chunk", "doc"),
                            doc="chunk or doc: which level a retrieval gate reads when both are scored (default: "
                                "chunk when the metric has chunk-level rows, else doc)")

    def __post_init__(self) -> None:
        # the one place a gate's name and direction are resolved: the name first (recall_5 -> recall, k 5;
        # ndcg@10 -> ndcg_cut, k 10), then the direction from the resolved metric unless written
        from rag_eval_pipeline.core.metrics.names import gate_metric, higher_is_better

        metric, k = gate_metric(self.metric, self.k)
        object.__setattr__(self, "metric", metric)
        object.__setattr__(self, "k", k)
        if self.higher_is_better is None:
            object.__setattr__(self, "higher_is_better", higher_is_better(metric))

    def validate(self, at):
        """Refuse a threshold that sets no limit (max_abs_drop, max_rel_drop or min_value); SectionError at ``at``."""
        from rag_eval_pipeline.core.metrics.names import metric_label

        if all(getattr(self, k) is None for k in ("max_abs_drop", "max_rel_drop", "min_value")):
            raise at.error(f"({metric_label(self.metric, self.k)}) sets no limit; expected max_abs_drop, max_rel_drop "
                           "or min_value")
        return None


@dataclass(frozen=True)
class ChunkingConfig:
    """``corpus.chunking``: ``strategy`` one of :data:`CHUNKING_STRATEGIES` (None: the source's
    default, paragraphs for a documents folder, one chunk per document otherwise), ``max_chars`` >= 1."""

    strategy: str | None = key(None, choices=CHUNKING_STRATEGIES, doc="default: the corpus source's")
    max_chars: int = key(1200, low=1, doc="longest chunk, characters")


@dataclass(frozen=True)
class CorpusConfig:
    """``corpus``: ``source`` (a registered corpus source), ``path`` (absolute; it exists, a file or a
    folder as the source says), ``split`` (the BEIR qrels split, default "test"), ``chunking``."""

    source: str = key(choices=_corpus_sources, doc="documents_dir, beir, squad_v2, chunks (see the corpus sources)")
    path: Path = key(doc="the source's file or folder")
    split: str = key("test", check=check_nonblank, expected="a split name",
                     doc="the qrels split a BEIR source reads (refused for a source that reads no split)")
    chunking: ChunkingConfig = key(default_factory=ChunkingConfig, doc="strategy, max_chars")


@dataclass(frozen=True)
class GoldenConfig:
    """``golden``: ``path`` (absolute) of the golden JSONL/Parquet file; None when the corpus source
    carries its own questions (beir, squad_v2)."""

    path: Path | None = key(None, doc="the golden set, JSONL or Parquet; required unless the source has questions")


@dataclass(frozen=True)
class MetricsConfig:
    """``metrics``: cut-offs ``ks`` (integers in [1, 2^31 - 1]), ``ranking_mode`` (:data:`RANKING_MODES`),
    ``rel_level`` (>= 0, as trec_eval -l), ``on_duplicate`` ("error" | "keep_first"), ``complete``
    (as trec_eval -c), ``bootstrap_resamples`` (1 to 100,000), ``small_segment_n`` (>= 0)."""

    ks: tuple[int, ...] = key((1, 3, 5, 10), check=_nonempty,
                              items=Key(low=1, cap=MAX_K, cap_why="the k column is a 32-bit integer"),
                              doc="fixed cut-offs, decided before results are seen")
    ranking_mode: str = key("system", choices=RANKING_MODES,
                            doc="system: the order the generator saw; trec_eval: score desc, doc id desc")
    rel_level: int = key(1, low=0, doc="as trec_eval -l: grades >= this count as relevant (not for nDCG)")
    on_duplicate: str = key("error", choices=ON_DUPLICATE, doc="a chunk twice in one ranking")
    complete: bool = key(False, doc="as trec_eval -c: golden questions without a run row score 0")
    bootstrap_resamples: int = key(2000, low=1, cap=MAX_BOOTSTRAP_RESAMPLES,
                                   cap_why="more only costs memory and time", doc="resamples of each interval")
    small_segment_n: int = key(10, low=0, doc="segments with fewer questions are flagged")


#: Bounds of the judge transport (one place: the configuration and ``core/judges/transport.py`` read them).
MAX_JUDGE_TIMEOUT_S = 3600.0
MAX_JUDGE_RETRIES = 20
MAX_JUDGE_BACKOFF_S = 300.0
MAX_JUDGE_CONCURRENCY = 256


@dataclass(frozen=True)
class JudgeConfig:
    """``judge`` after environment overrides (``core/judges/registry.py``, :func:`judge_env`).

    Shared by every judge type: ``type`` (a registered judge type), ``max_error_share`` in [0, 1],
    ``repeats`` in [1, 100], ``reverse_questions``, ``abstention_phrases`` (language -> phrases marking
    an answer as an abstention; None for the built-in es/en lists); the model transport's
    ``timeout_s`` (total seconds per call, in (0, 3600]), ``max_retries`` (extra attempts, 0..20),
    ``backoff_s`` (first retry wait in seconds, 0..300), ``concurrency`` (calls in flight, 1..256),
    ``rate_limit_per_s`` (None or > 0). Set by the loader: ``options`` (the chosen type's own section,
    e.g. a model endpoint's ``base_url``, ``model``, ``cache``; a human judge's ``human_labels``),
    ``type_source`` ("default", "config" or the variable that set it) and ``from_env`` (the variables
    that overrode the file). ``base_url``, ``model``, ``cache`` and ``human_labels`` read ``options``.
    """

    type: str = key("rule_based", doc="the judge type (see the judge types); variable RAG_EVAL_JUDGE overrides it")
    max_error_share: float = key(0.05, low=0.0, high=1.0,
                                 doc="the judge_error_share check fails above this share of JUDGE_ERROR labels")
    repeats: int = key(1, low=1, high=100, doc="times each answer is judged (repeat 0 may come from the cache)")
    reverse_questions: bool = key(False, doc="answer_relevancy from questions a model judge writes back")
    abstention_phrases: Mapping[str, tuple[str, ...]] | None = key(
        None, items=Key(items=Key(check=check_nonblank)),
        doc="language -> phrases that make an answer an abstention; null: the built-in es/en lists")
    timeout_s: float = key(30.0, low=0.0, low_open=True, cap=MAX_JUDGE_TIMEOUT_S, cap_why="an hour per call",
                           env="RAG_EVAL_JUDGE_TIMEOUT_S", doc="total seconds one call may take")
    max_retries: int = key(3, low=0, high=MAX_JUDGE_RETRIES, env="RAG_EVAL_JUDGE_MAX_RETRIES",
                           doc="further attempts after a failed one")
    backoff_s: float = key(1.0, low=0.0, high=MAX_JUDGE_BACKOFF_S, env="RAG_EVAL_JUDGE_BACKOFF_S",
                           doc="wait before the first retry, doubling after each")
    concurrency: int = key(4, low=1, high=MAX_JUDGE_CONCURRENCY, env="RAG_EVAL_JUDGE_CONCURRENCY",
                           doc="calls in flight")
    rate_limit_per_s: float | None = key(None, low=0.0, low_open=True, env="RAG_EVAL_JUDGE_RATE_LIMIT_PER_S",
                                         doc="call starts per second; null: no limit")
    options: Any = key(None, internal=True)
    type_source: str = key("default", internal=True)
    from_env: tuple[str, ...] = key((), internal=True)

    base_url = property(lambda self: getattr(self.options, "base_url", None))
    model = property(lambda self: getattr(self.options, "model", None))
    cache = property(lambda self: getattr(self.options, "cache", None))
    human_labels = property(lambda self: getattr(self.options, "human_labels", None))

    # A configuration built in code (tests, benchmarks): core.judges.registry.judge_config(type, **settings)


@dataclass(frozen=True)
class GatesConfig:
    """``gates``: ``split`` (:data:`GATE_SPLITS`), ``baseline_system`` (a configured system or None),
    ``candidate_systems`` (configured systems, at least one; left out: every system but the baseline), ``promote``
    (one of the candidates, default the first; None when there is no candidate), ``alpha`` in
    (0, 1), ``block_inconclusive``, ``thresholds``, ``max_run_error_share`` in [0, 1] (a system
    whose share of ``error`` runs is above it blocks promotion: the ``run_errors_within_share``
    check; 1 switches it off)."""

    split: str = key("test", choices=GATE_SPLITS, doc="gates use the held-out split; dev is for tuning")
    baseline_system: str | None = key(None, doc="compared against until a candidate is promoted")
    candidate_systems: tuple[str, ...] = key((), expected="a list of system names", check=_some_systems,
                                             doc="default (key left out): every system but the baseline")
    promote: str | None = key(None, doc="the candidate promotion stores as the baseline; default the first")
    alpha: float = key(0.05, low=0.0, high=1.0, low_open=True, high_open=True,
                       doc="level of the paired randomisation test (two-sided)")
    block_inconclusive: bool = key(True, doc="a drop beyond its threshold the test cannot call real still blocks")
    thresholds: tuple[Threshold, ...] = key((), doc="one per gated metric")
    max_run_error_share: float = key(0.10, low=0.0, high=1.0,
                                     doc="a system whose share of errored runs is above this blocks promotion "
                                         "(the run_errors_within_share check); 1 switches it off")


@dataclass(frozen=True)
class CalibrationMapping(Mapping):
    """``calibration.mapping``: how each side's labels become one calibrated label per item
    (``core/metrics/calibration_mapping.py``): ``judge_rule`` / ``human_rule`` (label, all_supported,
    holistic), ``judge`` / ``human`` (raw label -> calibrated label; null drops the item), ``labels``
    (the calibrated label set). Unset keys keep the level's defaults; the section reads as the mapping
    of its set keys, which is what the calibration code takes."""

    judge_rule: str | None = key(None, doc="how the judge's claim verdicts become one label per item")
    judge: Mapping[str, str | None] | None = key(None, doc="judge raw label -> calibrated label")
    human_rule: str | None = key(None, doc="how people's rows become one label per item")
    human: Mapping[str, str | None] | None = key(None, doc="human raw label -> calibrated label")
    labels: tuple[str, ...] | None = key(None, doc="the calibrated labels, in display order")

    def _set(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) is not None}

    def __getitem__(self, name: str) -> Any:
        values = self._set()
        if name not in values:
            raise KeyError(name)
        value = values[name]
        return list(value) if isinstance(value, tuple) else dict(value) if isinstance(value, Mapping) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._set())


@dataclass(frozen=True)
class CalibrationConfig:
    """``calibration``: ``configured`` (the section is present), ``human_labels`` (absolute path of
    a label file; required when configured; ``rag-eval run`` refuses an absent one (create it empty to
    start: ``rag-eval label`` appends to it)),
    ``kappa_floor`` in [-1, 1] (default 0.4), ``min_labels`` (>= 1, default 30: fewer items compared
    and the calibration counts as not done), ``level`` (:data:`CALIBRATION_LEVELS`, default
    "claim"), ``mapping`` (:class:`CalibrationMapping`, or None for the level's defaults),
    ``family_labels`` (hand labels of the verdict families citation_support and nugget_coverage, rows with
    a ``family`` column; ``family_labels_path`` gives the default)."""

    configured: bool = key(False, internal=True)
    human_labels: Path | None = key(None, doc="hand labels (JSONL / CSV / Parquet); required in the section")
    kappa_floor: float = key(DEFAULT_KAPPA_FLOOR, low=-1.0, high=1.0, doc="Cohen's kappa below this blocks or warns")
    min_labels: int = key(DEFAULT_MIN_LABELS, low=1, doc="fewest items compared (hand and judge label on the same "
                                                         "item) for κ to count; fewer: not enough labels, uncalibrated")
    level: str = key("claim", choices=CALIBRATION_LEVELS, doc="claim: one label per claim; response: per answer")
    mapping: CalibrationMapping | None = key(None, doc="judge_rule, judge, human_rule, human, labels")
    family_labels: Path | None = key(None, doc="hand labels of citation support and nugget coverage (JSONL, "
                                               "rows with family); default family_labels.jsonl beside human_labels")

    @property
    def family_labels_path(self) -> Path | None:
        """The family label file: ``family_labels``, else ``family_labels.jsonl`` beside ``human_labels``."""
        if self.family_labels is not None:
            return self.family_labels
        return None if self.human_labels is None else self.human_labels.with_name("family_labels.jsonl")

    def validate(self, at):
        """The section as given in a file (``configured``), once its rules hold: ``human_labels`` set and not a
        folder, ``mapping`` one the level can use, ``family_labels`` not a folder. Raises SectionError at ``at``
        otherwise."""
        if self.family_labels is not None and self.family_labels.exists() and not self.family_labels.is_file():
            raise at.fail("family_labels", f"{self.family_labels}: not a regular file; expected a label file")
        if self.human_labels is None:
            raise at.error("is required in the calibration section", label="calibration.human_labels")
        if self.human_labels.exists() and not self.human_labels.is_file():
            raise at.fail("human_labels", f"{self.human_labels}: not a regular file; expected a label file")
        if self.mapping is not None:
            from rag_eval_pipeline.core.metrics.calibration_mapping import resolve_mapping

            try:
                resolve_mapping(self.mapping, self.level)
            except ValueError as exc:
                raise at.fail("mapping", f"is refused: {exc}") from None
        return dataclasses.replace(self, configured=True)


def _groups(value: tuple[str, ...]) -> str | None:
    if not value or not all(g.strip() for g in value):
        return f"must be a list of group names, got {list(value)!r}"
    return None


def _group(value: str) -> str | None:
    return check_short_text(value)


@dataclass(frozen=True)
class ReportConfig:
    """``report``: ``viewer_groups`` (non-empty group names: the test user the report is written for),
    ``keep_runs`` (>= 1: how many full runs keep their per-question tables under ``history/<run_id>/``;
    older ones are deleted after each full run)."""

    viewer_groups: tuple[str, ...] = key(DEFAULT_VIEWER_GROUPS, check=_groups, items=Key(check=_group),
                                         expected="a list of group names",
                                         doc="text from documents outside these ACL groups is never shown")
    keep_runs: int = key(DEFAULT_KEEP_RUNS, low=1,
                         doc="full runs whose per-question tables stay under history/<run_id>/ (for rag-eval "
                             "compare night:DATE); older ones are deleted")


def _cron(value: str) -> str | None:
    return None if len(value.split()) == 5 else f"must be a cron expression of five fields, got {value!r}"


def _timezone(value: str) -> str | None:
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return f"must be an IANA time zone name, got {value!r}"
    return None


@dataclass(frozen=True)
class ScheduleConfig:
    """``schedule``: ``cron`` (five fields) and ``timezone`` (an IANA name), or None each."""

    cron: str | None = key(None, check=_cron, expected="a cron expression of five fields",
                           doc="checked, not used: the nightly time comes from RAG_EVAL_NIGHTLY_CRON")
    timezone: str | None = key(None, check=_timezone, expected="an IANA time zone name",
                               doc="checked, not used: RAG_EVAL_TIMEZONE")


@dataclass(frozen=True)
class EvalConfig:
    """A validated configuration (see ``data/sample/config.yaml`` for a commented example).

    Sections: ``corpus``, ``golden``, ``systems`` (one typed section per system, in file order: the
    kind's section of ``core/systems/kinds/``), ``metrics``, ``judge``, ``gates``, ``calibration``,
    ``report``, ``schedule``; top-level ``seed`` (>= 0), ``quick_subset_size`` (>= 1) and ``shards`` (1 to
    1024: question shards of the full evaluation, ``core/shards.py``; 1 = not split). The flat
    properties (``ks``, ``thresholds``, ``alpha``, ...) read the sections.
    """

    path: Path
    corpus: CorpusConfig
    golden: GoldenConfig
    systems: tuple[SystemSpec, ...]
    metrics: MetricsConfig
    judge: JudgeConfig
    gates: GatesConfig
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)
    report: ReportConfig = field(default_factory=ReportConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    seed: int = 0
    quick_subset_size: int = 24
    shards: int = 1

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
        return [s.name for s in self.systems]

    def resolve(self, p: str | Path) -> Path:
        """Resolve a path from the configuration against the configuration file's folder."""
        p = Path(p)
        return p if p.is_absolute() else (self.path.parent / p).resolve()

    def system(self, name: str) -> SystemSpec:
        """The typed section of the system named ``name`` (its kind's class); ConfigError if none."""
        for s in self.systems:
            if s.name == name:
                return s
        raise ConfigError(f"{self.path}: no system named {name!r} (systems: {self.system_names})")
