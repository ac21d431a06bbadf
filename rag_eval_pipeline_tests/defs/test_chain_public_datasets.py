"""The whole chain through Dagster on BEIR SciFact (test split) and SQuAD 2.0 dev (first two articles)."""

import dagster as dg
import polars as pl
import pytest
import pytrec_eval
import yaml

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources

pytestmark = pytest.mark.slow


def _run(tmp_path, cfg: dict):
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(path), str(tmp_path / "out")),
                            raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    return result, tmp_path / "out"


def _overall(out, system, metric, k=None):
    s = pl.read_parquet(out / "metric_summary.parquet").filter(
        (pl.col("system") == system) & (pl.col("split") == "all") & (pl.col("segment") == "all")
        & (pl.col("metric") == metric) & (pl.col("k").is_null() if k is None else pl.col("k") == k))
    return s.to_dicts()[0]


def test_scifact_bm25_reproduces_bm25s_ndcg_and_agrees_with_pytrec_eval(tmp_path, datasets_dir):
    cfg = yaml.safe_load(open("data/configs/scifact.yaml"))
    cfg["corpus"]["path"] = str(datasets_dir / "scifact_beir")
    result, out = _run(tmp_path, cfg)
    assert result.success
    ndcg = _overall(out, "bm25", "ndcg_cut", 10)
    assert ndcg["n"] == 300 and ndcg["denominator"] == 300
    # The figure bm25s gives with English stemming and stopwords (measured with pytrec_eval): 0.6863.
    assert abs(ndcg["value"] - 0.6863) < 0.005
    # Independent oracle: pytrec_eval over the run and qrels the pipeline stored.
    runs = pl.read_parquet(out / "rag_runs.parquet").explode("retrieved").unnest("retrieved").drop_nulls("chunk_id")
    run = {}
    for r in runs.iter_rows(named=True):
        run.setdefault(r["question_id"], {})[r["chunk_id"]] = float(r["score"])
    golden = pl.read_parquet(out / "golden_set.parquet")
    qrels = {r["question_id"]: {x["chunk_id"]: int(x["grade"]) for x in r["relevant"]}
             for r in golden.iter_rows(named=True)}
    per_q = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"}).evaluate(run)
    oracle = sum(v["ndcg_cut_10"] for v in per_q.values()) / len(qrels)
    assert ndcg["value"] == pytest.approx(oracle, abs=1e-9)
    recall100 = _overall(out, "bm25", "recall", 100)
    assert recall100["value"] == pytest.approx(sum(v["recall_100"] for v in per_q.values()) / len(qrels), abs=1e-9)


def test_squad_v2_absent_questions_and_decision_rates(tmp_path, datasets_dir):
    cfg = yaml.safe_load(open("data/configs/squad_v2.yaml"))
    cfg["corpus"]["path"] = str(datasets_dir / "squad_v2_dev" / "official_ids_subset" / "dev-v2.0.json")
    result, out = _run(tmp_path, cfg)
    assert result.success
    golden = pl.read_parquet(out / "golden_set.parquet")
    assert golden.height == 626 and (golden["answerability"] == "absent").sum() == 333
    runs = pl.read_parquet(out / "rag_runs.parquet").join(golden.select("question_id", "answerability"),
                                                          on="question_id")
    decided = dict(zip(runs["question_id"], runs["decision"]))
    cls = dict(zip(runs["question_id"], runs["answerability"]))
    absent = [q for q in decided if cls[q] == "absent"]
    answerable = [q for q in decided if cls[q] == "answerable"]
    awe = _overall(out, "bm25_extractive", "answer_without_evidence_rate")
    assert (awe["numerator"], awe["denominator"]) == (sum(decided[q] == "answer" for q in absent), 333)
    fa = _overall(out, "bm25_extractive", "false_abstention_rate")
    assert (fa["numerator"], fa["denominator"]) == (sum(decided[q] == "abstain" for q in answerable), 293)
    # Absent questions have no relevant chunk: recall is not evaluable there, never 0.
    recall = _overall(out, "bm25_extractive", "recall", 5)
    assert recall["denominator"] == 293 and recall["n_not_evaluable"] == 333
