"""The model judge's citation-support and nugget-coverage prompts against a real local HTTP server
(servers/fault_server.py): one versioned prompt per family, its sha256 on every row, JSON-schema replies,
quotes checked in code, cached, and counted by the dry run."""

from __future__ import annotations

import hashlib
from importlib import resources

import polars as pl
import pytest

from rag_eval_pipeline.core.citations.judging import DOWNGRADE_PREFIX, judge_citations, support_requests
from rag_eval_pipeline.core.completeness import judge_nuggets, nugget_requests
from rag_eval_pipeline.core.judges.base import EstimatesSupportCost, JudgesSupport
from rag_eval_pipeline.core.judges.cache import JudgeCache
from rag_eval_pipeline.core.judges.openai_compatible import OpenAICompatibleJudge
from rag_eval_pipeline.core.metrics.citations import citation_question_metrics
from rag_eval_pipeline_tests.core.citations.helpers import golden, run, runs, snapshot
from rag_eval_pipeline_tests.servers.fault_server import DEFAULT_MODEL, FaultServer

pytestmark = pytest.mark.timeout(120)

CHUNKS = {"lib#0": {"text": "La biblioteca abre de lunes a viernes de 9 a 20 horas. Los sábados abre de 10 a 14."},
          "lib#1": {"text": "Cada socio puede llevarse hasta 6 libros durante 21 días."}}
ANSWER = "La biblioteca abre de lunes a viernes de 9 a 20 horas [1]. Cada socio puede llevarse 6 libros [2]."
NUGGETS = [{"claim_id": "c1", "text": "La biblioteca abre de lunes a viernes.", "supporting": ["lib#0"]},
           {"claim_id": "c2", "text": "El carné de socio es gratuito para empadronados.", "supporting": ["lib#1"],
            "importance": "okay"}]


def file_sha(task: str) -> str:
    base = resources.files("rag_eval_pipeline.core.judges") / "prompts"
    return hashlib.sha256((base / f"{task}.v1.txt").read_bytes() + (base / f"{task}.v1.schema.json").read_bytes()
                          ).hexdigest()


def make_judge(srv, **kw) -> OpenAICompatibleJudge:
    return OpenAICompatibleJudge(srv.base_url, "judge-model", "sk-test-cite", timeout_s=2.0, max_retries=1,
                                 backoff_s=0.01, concurrency=1, **kw)


def tables():
    return (runs(run("q1", ANSWER, ["lib#0", "lib#1"])), snapshot(CHUNKS),
            golden({"question_id": "q1", "claims": NUGGETS}))


def test_citation_support_one_prompt_per_family_sha_on_every_row_and_cached(tmp_path):
    rag, snap, gold = tables()
    with FaultServer() as srv:
        judge = make_judge(srv, cache=JudgeCache(tmp_path / "cache.sqlite"))
        assert isinstance(judge, JudgesSupport) and isinstance(judge, EstimatesSupportCost)
        claims, cites = judge_citations(rag, snap, gold, judge)
        reqs = srv.chat_requests()
        # one request per claim's distinct cited set: [1] -> lib#0 for sentence 1, [2] -> lib#1 for sentence 2
        assert [r["body"]["response_format"]["json_schema"]["name"] for r in reqs] == ["citation_support"] * 2
        items = reqs[0]["body"]["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]
        assert items["minItems"] == items["maxItems"] == 1
        assert "<cited_passages>" in reqs[0]["body"]["messages"][0]["content"]
        assert claims["verdict"].to_list() == ["SUPPORTED", "SUPPORTED"]
        assert claims["quote_chunk_id"].to_list() == ["lib#0", "lib#1"] and all(claims["quote_found"])
        assert set(claims["prompt_sha256"]) == set(cites["prompt_sha256"]) == {file_sha("citation_support")}
        assert set(claims["judge_model"]) == {DEFAULT_MODEL}
        again = make_judge(srv, cache=JudgeCache(tmp_path / "cache.sqlite"))
        claims2, _ = judge_citations(rag, snap, gold, again)
        assert len(srv.chat_requests()) == 2 and again.stats["cache_hits"] == 2  # no new call
        assert claims2["verdict"].to_list() == claims["verdict"].to_list()
        est = again.dry_run_estimate_support(support_requests(rag, snap, gold)[0])
        assert (est["calls"], est["cached_calls"], est["by_family"]) == (2, 2, {"citation_support": 2})


def test_nugget_coverage_prompt_and_quote_in_the_answer():
    rag, snap, gold = tables()
    with FaultServer() as srv:
        judge = make_judge(srv)
        labels = judge_nuggets(rag, gold, judge, known_chunks=set(CHUNKS))
        (req,) = srv.chat_requests()
        assert req["body"]["response_format"]["json_schema"]["name"] == "nugget_coverage"
        content = req["body"]["messages"][0]["content"]
        assert "<nuggets>" in content and "[1]" not in content  # the answer is judged without its markers
        # the server supports a nugget when half its words are in one answer sentence
        assert labels["verdict"].to_list() == ["SUPPORTED", "NOT_SUPPORTED"]
        assert labels["quote_found"].to_list() == [True, False]
        assert set(labels["prompt_sha256"]) == {file_sha("nugget_coverage")}
        est = judge.dry_run_estimate_support(nugget_requests(rag, gold))
        assert est["calls"] == 1 and est["by_family"] == {"nugget_coverage": 1}


def test_a_quote_in_no_cited_chunk_is_downgraded_and_bad_labels_are_judge_errors():
    rag, snap, gold = tables()
    with FaultServer(mode="bad_quote") as srv:
        claims, _ = judge_citations(rag, snap, gold, make_judge(srv))
        assert claims["verdict"].to_list() == ["NOT_SUPPORTED"] * 2
        assert all(j.startswith(DOWNGRADE_PREFIX) for j in claims["justification"])
    with FaultServer(mode="out_of_range") as srv:
        claims, cites = judge_citations(rag, snap, gold, make_judge(srv))
        assert claims["verdict"].to_list() == ["JUDGE_ERROR"] * 2
        assert all("out_of_range" in e for e in claims["error"])
        qm = citation_question_metrics(rag, claims, cites)
        recall = qm.filter(pl.col("metric") == "citation_recall").row(0, named=True)
        assert (recall["value"], recall["status"]) == (None, "judge_error")
