"""Callables for ``kind: python`` tests: the sample's bm25_k5 reference system, one question at a time,
and two broken ones."""

import functools

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.pipeline import build_snapshot
from rag_eval_pipeline.core.systems.reference_service import ReferenceService
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR


@functools.cache
def _service() -> ReferenceService:
    cfg = load_config(SAMPLE_DIR / "config.yaml")
    snapshot, version = build_snapshot(cfg)
    return ReferenceService(snapshot, cfg.system("bm25_k5"), version)


def answer(question_id: str, question: str, user_groups: list[str]) -> dict:
    return _service().answer(question_id, question, user_groups)


def fails_on_absent(question_id: str, question: str, user_groups: list[str]) -> dict:
    if question_id.endswith("3"):
        raise ValueError(f"index shard offline for {question_id}")
    if question_id.endswith("7"):
        return ["not", "an", "object"]
    return answer(question_id, question, user_groups)
