"""Question shards and batches decide what the golden set AS A WHOLE decides: the retrieval levels scored.

A golden set is scored at document level when SOME question has ``relevant_docs`` (``core/metrics/doc_level.py``:
``levels_of``), and then every question gets document-level rows (judged by its relevant chunks' documents when it
has no ``relevant_docs`` of its own). A shard or a batch holding only questions without ``relevant_docs`` must still
be scored at document level: the levels are decided once, from the whole golden set, and given to every part
(``core/pipeline.question_metric_batches``'s ``levels``; ``defs/metrics.py`` passes those of the whole set to a
shard's step). Here the sample's golden set is given ``relevant_docs`` on one question of shard 2 of 3 only (and,
the mirror case, chunk-level ``relevant`` on shard 2's questions only), and the shards' tables put together are
compared with the unsplit ones: ``question_metrics`` row for row, ``metric_summary`` and the gates exactly.
"""

import polars as pl
import pytest

from rag_eval_pipeline.core.config_sections import Threshold
from rag_eval_pipeline.core.gates import evaluate_gates
from rag_eval_pipeline.core.metrics.doc_level import levels_not_scored, levels_of
from rag_eval_pipeline.core.pipeline import (
    build_summary,
    question_metric_batches,
)
from rag_eval_pipeline.core.shards import select_shard, shard_of
from rag_eval_pipeline.core.tables import SCHEMAS
from rag_eval_pipeline_tests.core.sample_inputs import sample_chain

KEYS = ["system", "question_id", "metric", "k", "level"]
SHARDS = 3
DOCS_Q = "q02"  # shard_of("q02", 3) == 2 (worked out with sha256sum in core/test_shards.py)


def _golden_variant(golden: pl.DataFrame, snapshot: pl.DataFrame, variant: str) -> pl.DataFrame:
    """``docs_in_one_shard``: q02 alone gets ``relevant_docs`` (its first relevant chunk's document, grade 2);
    ``chunks_in_one_shard``: every question gets ``relevant_docs`` (its relevant chunks' documents, grade 1),
    and only shard 2's questions keep their ``relevant`` chunks."""
    doc_of = dict(snapshot.select("chunk_id", "doc_id").iter_rows())
    dtype = golden.schema["relevant_docs"]
    rows = []
    for qid, relevant in golden.select("question_id", "relevant").iter_rows():
        docs = sorted({doc_of[r["chunk_id"]] for r in relevant or [] if r["chunk_id"] in doc_of})
        if variant == "docs_in_one_shard":
            rows.append([{"doc_id": docs[0], "grade": 2}] if qid == DOCS_Q else [])
        else:
            rows.append([{"doc_id": d, "grade": 1} for d in docs])
    out = golden.with_columns(pl.Series("relevant_docs", rows, dtype=dtype))
    if variant == "chunks_in_one_shard":
        keep = pl.Series([shard_of(q, SHARDS) == 2 for q in golden["question_id"]])
        out = out.with_columns(pl.when(keep).then(pl.col("relevant"))
                               .otherwise(pl.lit([], golden.schema["relevant"])).alias("relevant"))
    return out


@pytest.fixture(scope="module")
def sample():
    return sample_chain()


def _question_metrics(s, golden: pl.DataFrame, levels, keep=None, batch_questions: int = 5000) -> pl.DataFrame:
    """question_metrics of ``golden``'s questions, every per-question input cut to ``keep`` (a shard) when given."""
    def cut(frame):
        return frame if keep is None else select_shard(frame, keep, SHARDS)

    return pl.concat(list(question_metric_batches(
        s["cfg"], s["snapshot"], cut(golden), cut(s["runs"]), cut(s["labels"]), cut(s["answers"]),
        citations=(cut(s["claims"]), cut(s["cites"])), nugget_labels=cut(s["nuggets"]), levels=levels,
        batch_questions=batch_questions)))


def _gates(summary: pl.DataFrame, qm: pl.DataFrame) -> list:
    """Every system gated against every other on recall_5 at each level, and a floor: the gate outcomes."""
    thresholds = [Threshold(metric="recall_5", level=level, max_abs_drop=0.05, min_value=0.5)
                  for level in ("chunk", "doc")]
    systems = sorted(summary["system"].unique().to_list())
    return [(r.system, r.metric, r.level, r.candidate, r.baseline, r.status, r.p_value)
            for cand in systems for base in systems
            for r in evaluate_gates(cand, summary, qm, base, summary, qm, thresholds, split="all",
                                    n_permutations=200)]


@pytest.mark.slow  # the sample chain with the embedded judge (~15 s of CPU), then 3 shards twice
@pytest.mark.parametrize("variant", ["docs_in_one_shard", "chunks_in_one_shard"])
def test_shards_and_batches_score_the_levels_of_the_whole_golden_set(sample, variant):
    golden = _golden_variant(sample["golden"], sample["snapshot"], variant)
    whole_levels = levels_of(golden)
    assert whole_levels == ("chunk", "doc")
    # the case the test is about: shards 0 and 1 on their own judge a single level (their slices drop the other)
    for k in (0, 1):
        assert levels_of(select_shard(golden, k, SHARDS)) == (("chunk",) if variant == "docs_in_one_shard"
                                                              else ("doc",))
    cfg, snapshot = sample["cfg"], sample["snapshot"]
    whole = _question_metrics(sample, golden, None)  # one pass: levels_of(golden) of the whole set
    sharded = pl.concat([_question_metrics(sample, golden, whole_levels, keep=k) for k in range(SHARDS)])
    batched = _question_metrics(sample, golden, None, batch_questions=7)  # batches of 7: the levels decided once
    # every question x system has retrieval rows at both levels (8 trec measures x 4 k's and more per level)
    systems = sample["runs"]["system"].n_unique()
    for level in whole_levels:
        rows = whole.filter(pl.col("level") == level).select("system", "question_id").unique()
        assert rows.height == systems * golden.height
    for parts in (sharded, batched):
        assert parts.height == whole.height
        assert parts.sort(KEYS, nulls_last=True).equals(whole.sort(KEYS, nulls_last=True))
    summary = build_summary(cfg, whole, golden, snapshot)
    assert summary.filter(pl.col("level") == "doc").height > 0
    for parts in (sharded, batched):
        merged = parts.sort(KEYS, nulls_last=True)
        assert build_summary(cfg, merged, golden, snapshot).equals(summary)
        assert _gates(summary, merged) == _gates(summary, whole.sort(KEYS, nulls_last=True))
    # a doc-level gate reads every golden question: n = the 52 questions of the sample, not shard 1 and 2's
    doc = summary.filter((pl.col("level") == "doc") & (pl.col("metric") == "recall") & (pl.col("k") == 5)
                         & (pl.col("split") == "all") & (pl.col("segment") == "all"))
    assert doc.height == systems and set(doc["n"].to_list()) == {golden.height}
    # the old way (each shard deciding from its own slice) loses shard 0's rows of one level: the test can fail
    sliced = pl.concat([_question_metrics(sample, golden, levels_of(select_shard(golden, k, SHARDS)), keep=k)
                        for k in range(SHARDS)])
    assert sliced.height < whole.height
    # ... and the metric_summary check (denominators_consistent) sees it: one level holds fewer questions
    assert levels_not_scored(summary, whole_levels) == [] and levels_not_scored(summary) == []
    breaches = levels_not_scored(build_summary(cfg, sliced, golden, snapshot))
    assert breaches and {b["problem"] for b in breaches} == {"questions_differ"}
    # shards 0 and 1 judge one level only, so the other is scored over shard 2's questions alone
    n2 = select_shard(golden, 2, SHARDS).height
    lost = "doc" if variant == "docs_in_one_shard" else "chunk"
    assert {b["n_by_level"][lost] for b in breaches} == {n2} and 0 < n2 < golden.height
    assert {b["n_by_level"]["doc" if lost == "chunk" else "chunk"] for b in breaches} == {golden.height}
    assert set(SCHEMAS["question_metrics"]) == set(whole.columns)


def _summary_rows(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "split": pl.Utf8, "segment": pl.Utf8, "metric": pl.Utf8,
                                      "k": pl.Int32, "level": pl.Utf8, "n": pl.Int64}, orient="row")


def test_levels_not_scored_finds_a_level_with_fewer_questions_or_missing_and_ignores_the_rest():
    # the trial's case by hand: 8 golden questions; recall@5 of cite_sys over 8 at chunk level, 7 at doc level
    ok = [("cite_sys", "all", "all", "recall", 5, "chunk", 8), ("cite_sys", "all", "all", "recall", 5, "doc", 8),
          ("cite_sys", "test", "all", "recall", 5, "doc", 3),  # another split: not read
          ("cite_sys", "all", "all", "claim_evidence_availability", 5, "chunk", 6),  # not a trec_eval measure
          ("cite_sys", "all", "all", "faithfulness", None, None, 5)]  # no level
    assert levels_not_scored(_summary_rows(ok)) == []
    assert levels_not_scored(_summary_rows(ok), ("chunk", "doc")) == []
    lost = [*ok[:1], ("cite_sys", "all", "all", "recall", 5, "doc", 7), *ok[2:]]
    assert levels_not_scored(_summary_rows(lost)) == [
        {"system": "cite_sys", "problem": "questions_differ", "metric": "recall", "k": 5,
         "n_by_level": {"chunk": 8, "doc": 7}}]
    # a system without the doc level while another has it; the golden set's levels given
    other = [("bm25", "all", "all", "recall", 5, "chunk", 8)]
    assert levels_not_scored(_summary_rows(ok + other)) == [
        {"system": "bm25", "problem": "levels", "scored": ["chunk"], "expected": ["chunk", "doc"]}]
    assert levels_not_scored(_summary_rows(other), ("chunk", "doc")) == [
        {"system": "bm25", "problem": "levels", "scored": ["chunk"], "expected": ["chunk", "doc"]}]
    assert levels_not_scored(_summary_rows(other).drop("level")) == []
    assert levels_not_scored(_summary_rows([])) == []


@pytest.mark.slow  # the sample chain (module fixture), then 3 shards and batches of 7
def test_a_system_that_measured_latency_in_one_shard_only_has_latency_rows_for_every_question(sample):
    from rag_eval_pipeline.core.metrics.latency import latency_question_metrics
    from rag_eval_pipeline.defs.shards import kept_rows

    # team_rag measured a latency on shard 2's questions only (100 ms + the row number); bm25_k5 on none
    shard2 = pl.Series([shard_of(q, SHARDS) == 2 for q in sample["runs"]["question_id"]])
    runs = sample["runs"].with_row_index("_i").with_columns(
        pl.when((pl.col("system") == "team_rag") & shard2).then(100 + pl.col("_i")).otherwise(None)
        .cast(sample["runs"].schema["latency_ms"]).alias("latency_ms")).drop("_i")
    s = {**sample, "runs": runs}
    golden, cfg, snapshot = sample["golden"], sample["cfg"], sample["snapshot"]
    whole = _question_metrics(s, golden, None)
    lat = whole.filter(pl.col("metric") == "latency_ms")
    # one row per team_rag run (52 questions): 52 - n(shard 2) of them not_measured; no other system's
    n2 = select_shard(golden, 2, SHARDS).height
    assert lat["system"].unique().to_list() == ["team_rag"] and lat.height == golden.height
    assert lat.filter(pl.col("status") == "not_measured").height == golden.height - n2
    # each shard deciding from its own runs (the old way) leaves out shards 0 and 1's rows: the test can fail
    alone = pl.concat([latency_question_metrics(select_shard(runs, k, SHARDS)) for k in range(SHARDS)])
    assert alone.height == n2 < golden.height
    # shards as the shard layer runs them: latency rows of every system of the shard, the merge keeping those
    # of the systems that measured a latency in some shard's runs
    systems = runs["system"].unique().sort().to_list()
    parts = []
    for k in range(SHARDS):  # the call as defs/metrics.py makes it for shard k
        parts.append(pl.concat(list(question_metric_batches(
            cfg, snapshot, select_shard(golden, k, SHARDS), select_shard(runs, k, SHARDS),
            select_shard(sample["labels"], k, SHARDS), select_shard(sample["answers"], k, SHARDS),
            citations=(select_shard(sample["claims"], k, SHARDS), select_shard(sample["cites"], k, SHARDS)),
            nugget_labels=select_shard(sample["nuggets"], k, SHARDS), levels=levels_of(golden),
            latency_systems=systems))))
    keep = kept_rows("question_metrics", {"rag_runs": {str(k): select_shard(runs, k, SHARDS).lazy()
                                                       for k in range(SHARDS)}})
    assert keep is not None
    merged = pl.concat(parts).filter(keep)
    assert merged.sort(KEYS, nulls_last=True).equals(whole.sort(KEYS, nulls_last=True))
    assert build_summary(cfg, merged, golden, snapshot).equals(build_summary(cfg, whole, golden, snapshot))
    # batches of 7: the latency systems decided once over the whole run table (no fallback to one part needed)
    batched = list(question_metric_batches(cfg, snapshot, golden, runs, sample["labels"], sample["answers"],
                                           citations=(sample["claims"], sample["cites"]),
                                           nugget_labels=sample["nuggets"], batch_questions=7))
    assert len(batched) > 1
    assert pl.concat(batched).sort(KEYS, nulls_last=True).equals(whole.sort(KEYS, nulls_last=True))
