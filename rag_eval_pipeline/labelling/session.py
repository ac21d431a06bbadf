"""One labeller's session: the evaluation's tables, the sample, progress, and the label file.

Everything the page shows is derived from the tables and the label file on every request, so a
restarted server resumes where the file says the labeller stopped (nothing else is kept).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.errors import ConfigError, InputError
from rag_eval_pipeline.core.label_file import LabelFile, label_options
from rag_eval_pipeline.core.labelling import (
    FAMILY_LEVELS,
    LabelItem,
    build_family_items,
    build_items,
    stratified_order,
    withhold_restricted,
)
from rag_eval_pipeline.core.storage import read_table

TABLES = ("rag_runs", "golden_set", "corpus_snapshot", "judge_labels")
#: The table each verdict family's items come from.
FAMILY_TABLES = {"citation_support": "citation_claims", "nugget_coverage": "nugget_labels"}
DEFAULT_VIEWER_GROUPS = ("customers",)  # the report's default test user


def _warn(message: str) -> None:
    """A table migrated on read (an older schema version): one line on stderr."""
    print(f"rag-eval: {message}", file=sys.stderr)


@dataclass
class Progress:
    """``done`` items of the sample this labeller has a current label for, out of ``total``."""

    done: int
    total: int
    labels: dict[tuple[str, ...], dict[str, Any]]  # item key -> this labeller's current label row
    stale: set[tuple[str, ...]]  # items whose label by this labeller no longer matches what is shown


def calibration_section(cfg: EvalConfig):
    """The configuration's typed ``calibration`` section; ConfigError when it or its ``human_labels`` is missing."""
    section = cfg.calibration
    if not section.configured or section.human_labels is None:
        raise ConfigError(f"{cfg.path}: calibration.human_labels is not set: the labelling page appends to that "
                          "file (add a calibration section with human_labels: labels.jsonl)")
    return section


def viewer_groups_of(cfg: EvalConfig) -> tuple[str, ...]:
    """``report.viewer_groups`` of the configuration (default ``[customers]``, as the report)."""
    return tuple(cfg.report.viewer_groups)


class LabellingSession:
    """The state of ``rag-eval label`` for one labeller.

    Inputs: the loaded configuration, the output folder holding the evaluation's tables, the
    labeller's name, the sample size ``n``, the labeller's groups (None = ``report.viewer_groups``),
    ``show_judge`` (adjudication: show the judge's verdicts), ``family`` (None: the calibration level's
    items; ``citation_support`` / ``nugget_coverage``: that verdict family's items, labelled into
    ``calibration.family_labels``). Raises ConfigError for a missing calibration section or a bad
    mapping, InputError when a table is missing or the label file is invalid (file, line, field).
    """

    def __init__(self, cfg: EvalConfig, output_dir: str | Path, labeller: str, n: int = 50,
                 groups: tuple[str, ...] | None = None, show_judge: bool = False, family: str | None = None):
        self.cfg, self.output_dir = cfg, Path(output_dir)
        self.labeller, self.n, self.show_judge = labeller, n, show_judge
        section = calibration_section(cfg)
        if family is not None and family not in FAMILY_LEVELS:
            raise ConfigError(f"unknown verdict family {family!r}; expected one of {list(FAMILY_LEVELS)}")
        self.level = family or section.level
        if self.level not in ("claim", "response", *FAMILY_LEVELS):
            raise ConfigError(f"{cfg.path}: calibration.level must be 'claim' or 'response', got {self.level!r}")
        self.mapping = section.mapping
        try:
            self.options = label_options(self.level, self.mapping)
        except ValueError as exc:
            raise ConfigError(f"{cfg.path}: {exc}") from None
        self.labels_path = section.family_labels_path if family else section.human_labels
        self.file = LabelFile(self.labels_path, self.level, self.mapping)
        self.groups = tuple(groups) if groups is not None else viewer_groups_of(cfg)
        tables = {}
        for name in TABLES + ((FAMILY_TABLES[family],) if family else ()):
            p = self.output_dir / f"{name}.parquet"
            if not p.is_file():
                raise InputError(f"table {name} not found: run the evaluation for this configuration first "
                                 f"(rag-eval run --config {cfg.path} --output {self.output_dir})", path=str(p))
            tables[name] = read_table(p, name, on_migrate=_warn)
        try:
            from rag_eval_pipeline.core.pipeline import citation_formats, doc_id_systems

            whole_docs = doc_id_systems(cfg)  # a document id shows every chunk of its document, as judged
            if family:
                items = build_family_items(family, tables["rag_runs"], tables["golden_set"], tables["corpus_snapshot"],
                                           tables[FAMILY_TABLES[family]], citation_formats(cfg),
                                           doc_id_systems=whole_docs)
            else:
                items = build_items(tables["rag_runs"], tables["golden_set"], tables["corpus_snapshot"],
                                    tables["judge_labels"], self.level, self.mapping, doc_id_systems=whole_docs)
        except ValueError as exc:
            raise ConfigError(f"{cfg.path}: {exc}") from None
        shown, withheld = withhold_restricted(items, tables["corpus_snapshot"], self.groups)
        self.n_items, self.n_withheld = len(items), len(withheld)
        self.sample: list[LabelItem] = stratified_order(shown, cfg.seed)[:n]
        self.position = {it.key: i for i, it in enumerate(self.sample)}
        self.file.rows()  # a bad label file stops the page before it starts

    def progress(self) -> Progress:
        """This labeller's current labels on the sample, read from the label file now."""
        mine: dict[tuple[str, ...], dict[str, Any]] = {}
        stale: set[tuple[str, ...]] = set()
        for r in self.file.rows():
            if (r["annotator"] or "") != self.labeller:
                continue
            key = (r["system"], r["question_id"]) + ((r["claim_id"],) if self.level != "response" else ())
            pos = self.position.get(key)
            if pos is None:
                continue
            sha = r["content_sha256"]
            if sha is not None and sha != self.sample[pos].content_sha256:
                stale.add(key)
                continue
            mine[key] = r
        return Progress(len(mine), len(self.sample), mine, stale)

    def next_open(self, after: int = -1, progress: Progress | None = None) -> int | None:
        """The first sample position after ``after`` (wrapping round) without a current label, or None."""
        prog = progress or self.progress()
        total = len(self.sample)
        for step in range(1, total + 1):
            pos = (after + step) % total
            if self.sample[pos].key not in prog.labels:
                return pos
        return None

    def raw_labels(self) -> list[str]:
        return [raw for raw, _ in self.options]

    def recompute_command(self) -> str:
        return f"rag-eval run --config {self.cfg.path} --output {self.output_dir}"

    @property
    def family(self) -> str | None:
        """The verdict family labelled (citation_support / nugget_coverage), or None for the calibration level."""
        return self.level if self.level in FAMILY_LEVELS else None
