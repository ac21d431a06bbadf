"""The embedded sample, built once: snapshot, golden set, the in-process reference run of bm25_k5."""

from dataclasses import dataclass

import polars as pl
import pytest

from rag_eval_pipeline.core.config import EvalConfig, load_config
from rag_eval_pipeline.core.pipeline import build_golden, build_runs, build_snapshot
from rag_eval_pipeline.core.systems.records import RunContext
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR


@dataclass
class Sample:
    cfg: EvalConfig
    snapshot: pl.DataFrame
    corpus_version: str
    golden: pl.DataFrame
    reference_runs: pl.DataFrame  # bm25_k5 run in process

    def ctx(self, system: str, require_scores: bool = False) -> RunContext:
        return RunContext(system, self.corpus_version, self.golden["golden_version"][0],
                          frozenset(self.snapshot["chunk_id"].to_list()), require_scores)


@pytest.fixture(scope="session")
def sample() -> Sample:
    cfg = load_config(SAMPLE_DIR / "config.yaml")
    snapshot, version = build_snapshot(cfg)
    golden = build_golden(cfg, snapshot)
    return Sample(cfg, snapshot, version, golden, build_runs(cfg, snapshot, golden, version, ["bm25_k5"]))
