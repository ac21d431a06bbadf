"""The chain with a model judge: a real OpenAI-compatible HTTP server of our own on 127.0.0.1."""

import dagster as dg
import polars as pl
import pytest

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.servers.fault_server import FaultServer


@pytest.fixture()
def server():
    with FaultServer(mode="ok") as srv:
        yield srv


def _run(tmp_path, srv, cache=None, **settings):
    judge = JudgeResource.of("openai_compatible", base_url=srv.base_url, model="fake-judge",
                             api_key="sk-test-not-a-secret", concurrency=4, cache=str(cache) if cache else None,
                             **settings)
    return dg.materialize(
        [*ASSETS, *CHECKS],
        resources=build_resources(str(SAMPLE_DIR / "config.yaml"), str(tmp_path / "out"), judge=judge),
        selection=["corpus_snapshot", "golden_set", "rag_runs", "judge_labels", "answer_judgements", "answer_quality",
                   "citation_claims", "citations", "nugget_labels", "question_metrics", "metric_summary"],
        raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


def test_model_judge_labels_quality_metrics_and_cache(tmp_path, server):
    cache = tmp_path / "judge_cache.sqlite"
    result = _run(tmp_path, server, cache)
    assert result.success
    labels = pl.read_parquet(tmp_path / "out" / "judge_labels.parquet")
    assert set(labels["judge_model"]) == {server.model}  # the version the server reported, not the requested name
    assert set(labels["verdict"]) <= {"SUPPORTED", "NOT_MENTIONED", "CONTRADICTED"}
    assert labels.filter(pl.col("verdict") == "SUPPORTED")["quote_found"].all()
    qm = pl.read_parquet(tmp_path / "out" / "question_metrics.parquet")
    rel = qm.filter(pl.col("metric") == "answer_relevance")
    # The server's ok mode scores every answer 4 on the 1-5 scale.
    assert rel.height > 0 and set(rel["value"]) == {4.0}
    runs = pl.read_parquet(tmp_path / "out" / "rag_runs.parquet")
    answered = runs.filter(pl.col("decision") == "answer")
    assert rel.height == answered.filter(pl.col("retrieved").list.len() > 0).height
    calls_first = len(server.chat_requests())
    assert calls_first > 0
    server.reset()
    again = _run(tmp_path, server, cache)
    assert again.success
    # Unchanged inputs: every judge call is served by the cache.
    assert len(server.chat_requests()) == 0


def test_judge_transport_settings_from_resource_and_environment_are_in_the_run_metadata(tmp_path, server, monkeypatch):
    """timeout_s from the resource (the configuration), max_retries and backoff_s from the environment,
    which overrides the resource: all three in answer_judgements' judge_stats."""
    monkeypatch.setenv("RAG_EVAL_JUDGE_MAX_RETRIES", "1")
    monkeypatch.setenv("RAG_EVAL_JUDGE_BACKOFF_S", "0.05")
    result = _run(tmp_path, server, timeout_s=12.5, max_retries=4)
    assert result.success
    mat = next(m for m in result.get_asset_materialization_events()
               if m.asset_key == dg.AssetKey("answer_judgements")).materialization
    stats = mat.metadata["judge_stats"].value
    assert (stats["timeout_s"], stats["max_retries"], stats["backoff_s"]) == (12.5, 1, 0.05)
