"""Retrieval metrics (core/metrics/retrieval.py): worked examples (recall, precision, F1,
reciprocal rank, nDCG) recomputed by hand, property tests against
pytrec_eval (trec_eval's own code) in trec_eval mode, and the error and null rules."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.core.errors import ConfigError, InputError, SchemaError
from rag_eval_pipeline.core.metrics.retrieval import (
    ALIASES,
    DEFAULT_MEASURES,
    PER_QUESTION_SCHEMA,
    claim_evidence_availability,
    explode_runs,
    parse_measure,
    qrels_from_golden,
    retrieval_question_metrics,
    trec_eval_aggregate,
    trec_name,
)
from rag_eval_pipeline.core.tables import SCHEMAS

pytrec_eval = pytest.importorskip("pytrec_eval")

L2 = math.log2


# ----------------------------------------------------------------------------- helpers


def run_frame(rankings: dict[str, list[str]], system: str = "sys") -> pl.DataFrame:
    """run_long from question -> ranked ids (rank 1 first, score descending)."""
    rows = [
        {"system": system, "question_id": q, "chunk_id": c, "score": float(len(ids) - i), "rank": i + 1}
        for q, ids in rankings.items() for i, c in enumerate(ids)
    ]
    return pl.DataFrame(rows, schema=dict(SCHEMAS_RUN))


SCHEMAS_RUN = {"system": pl.Utf8, "question_id": pl.Utf8, "chunk_id": pl.Utf8, "score": pl.Float64,
               "rank": pl.Int32}


def qrels_frame(judged: dict[str, dict[str, int]]) -> pl.DataFrame:
    rows = [{"question_id": q, "chunk_id": c, "grade": g} for q, d in judged.items() for c, g in d.items()]
    for q, d in judged.items():
        if not d:
            rows.append({"question_id": q, "chunk_id": None, "grade": None})
    return pl.DataFrame(rows, schema={"question_id": pl.Utf8, "chunk_id": pl.Utf8, "grade": pl.Int32})


def value(pq: pl.DataFrame, metric: str, k: int | None = None, question: str | None = None,
          system: str | None = None):
    f = pq.filter((pl.col("metric") == metric)
                  & (pl.col("k").is_null() if k is None else pl.col("k") == k))
    if question is not None:
        f = f.filter(pl.col("question_id") == question)
    if system is not None:
        f = f.filter(pl.col("system") == system)
    assert f.height == 1, f
    return f.row(0, named=True)


def rag_runs_frame(rows: list[dict]) -> pl.DataFrame:
    out = []
    for r in rows:
        out.append({"system": r.get("system", "sys"), "question_id": r["question_id"],
                    "retrieved": [{"chunk_id": c, "score": float(10 - i), "rank": i + 1}
                                  for i, c in enumerate(r["retrieved"])]})
    return pl.DataFrame(out, schema={"system": pl.Utf8, "question_id": pl.Utf8,
                                     "retrieved": SCHEMAS["rag_runs"]["retrieved"]})


def golden_frame(rows: list[dict]) -> pl.DataFrame:
    out = []
    for r in rows:
        out.append({
            "question_id": r["question_id"],
            "relevant": [{"chunk_id": c, "grade": 1} for c in r.get("relevant", [])],
            "claims": [{"claim_id": cid, "text": cid, "supporting": list(sup)} for cid, sup in r.get("claims", [])],
        })
    return pl.DataFrame(out, schema={"question_id": pl.Utf8, "relevant": SCHEMAS["golden_set"]["relevant"],
                                     "claims": SCHEMAS["golden_set"]["claims"]})


# ----------------------------------------------------------------------------- worked examples


def worked_case() -> tuple[pl.DataFrame, pl.DataFrame]:
    # retrieved [1, 3, 5, 7, 9, 11, 13], relevant {3, 7, 12}
    run = run_frame({"python": ["d1", "d3", "d5", "d7", "d9", "d11", "d13"]})
    qrels = qrels_frame({"python": {"d3": 1, "d7": 1, "d12": 1}})
    return run, qrels


def test_worked_example_recall_precision_f1_at_5() -> None:
    run, qrels = worked_case()
    pq = retrieval_question_metrics(run, qrels, ks=(5,)).per_question
    r = value(pq, "recall", 5)
    assert (r["numerator"], r["denominator"]) == (2.0, 3.0) and r["value"] == pytest.approx(2 / 3)
    p = value(pq, "P", 5)
    assert (p["numerator"], p["denominator"], p["value"]) == (2.0, 5.0, 0.4)
    # F1 = 2PR/(P+R) = 2*0.4*(2/3)/(0.4+2/3) = 0.5 = 2*hits/(k+R) = 4/8
    f = value(pq, "F1", 5)
    assert f["value"] == pytest.approx(0.5) and (f["numerator"], f["denominator"]) == (4.0, 8.0)
    assert value(pq, "recip_rank")["value"] == 0.5  # first relevant (d3) at rank 2


def test_worked_example_ndcg_printed_0756_is_wrong() -> None:
    # 0.756, a figure printed for this case elsewhere, is wrong: under the definition
    # (binary gain, 1/log2(i+1), ideal = min(|relevant|, k) ones) the value is
    # (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4) = 1.06161 / 2.13093 = 0.4982.
    run, qrels = worked_case()
    got = value(retrieval_question_metrics(run, qrels, ks=(5,)).per_question, "ndcg_cut", 5)
    hand = (1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3) + 1 / L2(4))
    assert got["value"] == pytest.approx(hand, abs=1e-12)
    assert round(got["value"], 4) == 0.4982
    assert abs(got["value"] - 0.756) > 0.2


def test_worked_example_exercise_2_ndcg_0_6509() -> None:
    run = run_frame({"q": ["d1", "d3", "d5", "d7", "d9"]})
    qrels = qrels_frame({"q": {"d3": 1, "d7": 1}})
    got = value(retrieval_question_metrics(run, qrels, ks=(5,)).per_question, "ndcg_cut", 5)["value"]
    assert got == pytest.approx((1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3)), abs=1e-12)
    assert round(got, 4) == 0.6509


def test_worked_example_exercise_1_recall_one_third() -> None:
    run = run_frame({"q": ["d1", "d2", "d3", "d4", "d5"]})
    qrels = qrels_frame({"q": {"d3": 1, "d6": 1, "d9": 1}})
    assert value(retrieval_question_metrics(run, qrels, ks=(5,)).per_question, "recall", 5)["value"] == \
        pytest.approx(1 / 3)


def test_worked_example_reciprocal_rank_examples_and_mrr() -> None:
    run = run_frame({"q1": ["d1", "d3", "d5", "d7", "d9"], "q2": ["d2", "d4", "d6", "d8", "d10"],
                     "q3": ["d1", "d3", "d5", "d7", "d9"]})
    qrels = qrels_frame({"q1": {"d3": 1, "d7": 1}, "q2": {"d6": 1}, "q3": {"d1": 1}})
    pq = retrieval_question_metrics(run, qrels, ks=(5,), measures=["mrr"]).per_question
    assert [value(pq, "recip_rank", None, q)["value"] for q in ("q1", "q2", "q3")] == [0.5, 1 / 3, 1.0]
    mrr = trec_eval_aggregate(pq).filter(pl.col("metric") == "recip_rank")["value"][0]
    assert mrr == pytest.approx((0.5 + 1 / 3 + 1.0) / 3)  # 0.6111


def test_worked_example_batch_means_recomputed() -> None:
    # a three-query batch; its means recomputed by hand:
    run = run_frame({"a": ["d1", "d3", "d5", "d7", "d9"], "b": ["d2", "d4", "d6", "d8", "d10"],
                     "c": ["d1", "d2", "d3", "d4", "d5"]})
    qrels = qrels_frame({"a": {"d3": 1, "d7": 1, "d12": 1}, "b": {"d4": 1, "d6": 1}, "c": {"d1": 1, "d3": 1}})
    agg = trec_eval_aggregate(retrieval_question_metrics(run, qrels, ks=(5,)).per_question)
    got = {(r["metric"], r["k"]): r["value"] for r in agg.iter_rows(named=True)}
    assert got[("recall", 5)] == pytest.approx((2 / 3 + 1 + 1) / 3)  # 0.8889
    assert got[("P", 5)] == pytest.approx(0.4)
    assert got[("F1", 5)] == pytest.approx((0.5 + 4 / 7 + 4 / 7) / 3)  # 0.5476
    assert got[("recip_rank", None)] == pytest.approx((0.5 + 0.5 + 1.0) / 3)  # 0.6667
    ndcg = [(1 / L2(3) + 1 / L2(5)) / (1 + 1 / L2(3) + 0.5),
            (1 / L2(3) + 0.5) / (1 + 1 / L2(3)),
            (1 + 0.5) / (1 + 1 / L2(3))]
    assert got[("ndcg_cut", 5)] == pytest.approx(sum(ndcg) / 3)  # 0.7038


# ----------------------------------------------------------------------------- claims and their evidence


def claims_case() -> tuple[pl.DataFrame, pl.DataFrame]:
    golden = golden_frame([{
        "question_id": "vacaciones",
        "relevant": ["politica-ausencias-2026-1", "politica-ausencias-2026-4"],
        "claims": [("c1", ["politica-ausencias-2026-4"]), ("c2", ["politica-ausencias-2026-1"])],
    }])
    runs = rag_runs_frame([{"question_id": "vacaciones",
                            "retrieved": ["politica-ausencias-2026-4", "beneficios-2"]}])
    return golden, runs


def test_claims_case_recall_hit_and_claim_evidence_availability() -> None:
    golden, runs = claims_case()
    pq = retrieval_question_metrics(explode_runs(runs), qrels_from_golden(golden), ks=(2,)).per_question
    assert value(pq, "recall", 2)["value"] == 0.5
    assert value(pq, "success", 2)["value"] == 1.0
    cea = claim_evidence_availability(runs, golden, ks=(1, 2))
    assert cea.schema == PER_QUESTION_SCHEMA
    assert value(cea, "claim_evidence_availability", 2)["value"] == 0.5
    row = value(cea, "claim_evidence_availability", 1)
    assert (row["numerator"], row["denominator"], row["value"]) == (1.0, 2.0, 0.5)


def test_claim_evidence_availability_rules() -> None:
    golden = golden_frame([
        {"question_id": "q1", "claims": [("a", ["x"]), ("b", ["y", "z"]), ("c", [])]},
        {"question_id": "q2", "claims": []},
    ])
    runs = rag_runs_frame([
        {"question_id": "q1", "retrieved": ["w", "z", "x"]},
        {"question_id": "q2", "retrieved": ["x"]},
        {"question_id": "q9", "retrieved": ["x"]},  # not in the golden set: no row
    ])
    cea = claim_evidence_availability(runs, golden, ks=(1, 2, 3))
    assert set(cea["question_id"]) == {"q1", "q2"}
    # a claim without supporting ids stays in the denominator and is never available
    assert [value(cea, "claim_evidence_availability", k, "q1")["value"] for k in (1, 2, 3)] == [0.0, 1 / 3, 2 / 3]
    q2 = value(cea, "claim_evidence_availability", 2, "q2")
    assert q2["value"] is None and q2["status"] == "no_claims"  # a question without claims is null, never 1.0
    with pytest.raises(ConfigError):
        claim_evidence_availability(runs, golden, ks=(0,))


# ----------------------------------------------------------------------------- null and error rules


def test_question_without_relevant_is_null_not_zero() -> None:
    golden = golden_frame([{"question_id": "absent", "relevant": []}, {"question_id": "ok", "relevant": ["a"]}])
    qrels = qrels_from_golden(golden)
    assert qrels.filter(pl.col("question_id") == "absent")["chunk_id"].to_list() == [None]
    run = run_frame({"absent": ["a", "b"], "ok": ["b", "a"]})
    pq = retrieval_question_metrics(run, qrels, ks=(1, 5), measures=list(DEFAULT_MEASURES) + ["mrr@5"]).per_question
    absent = pq.filter(pl.col("question_id") == "absent")
    for metric in ("recall", "success", "recip_rank", "recip_rank_cut", "ndcg_cut", "map", "Rprec", "F1"):
        rows = absent.filter(pl.col("metric") == metric)
        assert rows.height >= 1
        assert rows["value"].null_count() == rows.height, metric
        assert set(rows["status"]) == {"no_relevant"}, metric
    p = value(pq, "P", 5, "absent")
    assert (p["value"], p["status"]) == (0.0, "ok")  # precision is defined: k is its denominator
    assert value(pq, "num_rel", None, "absent")["value"] == 0.0
    assert value(pq, "recall", 5, "ok")["value"] == 1.0
    # trec_eval averages such a question as 0
    agg = trec_eval_aggregate(pq)
    assert agg.filter((pl.col("metric") == "recall") & (pl.col("k") == 5))["value"][0] == 0.5


def test_ndcg_uses_grades_and_ignores_rel_level() -> None:
    run = run_frame({"q": ["a", "b", "c"]})
    qrels = qrels_frame({"q": {"a": 1, "b": 3, "c": 0, "d": 2}})
    pq = retrieval_question_metrics(run, qrels, ks=(3,), rel_level=2).per_question
    dcg = 1 + 3 / L2(3)
    idcg = 3 + 2 / L2(3) + 1 / L2(4)
    assert value(pq, "ndcg_cut", 3)["value"] == pytest.approx(dcg / idcg)
    assert value(pq, "num_rel")["value"] == 2.0  # b and d reach grade 2
    assert value(pq, "recall", 3)["value"] == 0.5
    assert value(pq, "recip_rank")["value"] == 0.5
    # only grade-1 chunks and rel_level 2: binary measures null, nDCG evaluable
    pq = retrieval_question_metrics(run, qrels_frame({"q": {"a": 1}}), ks=(3,), rel_level=2).per_question
    assert value(pq, "recall", 3)["status"] == "no_relevant"
    assert value(pq, "ndcg_cut", 3)["value"] == 1.0


@pytest.mark.parametrize("k", [0, -1])
def test_k_below_one_is_config_error(k: int) -> None:
    run, qrels = worked_case()
    with pytest.raises(ConfigError, match="k"):
        retrieval_question_metrics(run, qrels, ks=(1, k))


def test_bad_options_are_config_errors() -> None:
    run, qrels = worked_case()
    for kwargs in ({"mode": "random"}, {"on_duplicate": "last"}, {"rel_level": -1}, {"measures": ["infAP"]},
                   {"measures": ["recall@0"]}, {"measures": ["map@5"]}, {"ks": (True,)}):
        with pytest.raises(ConfigError):
            retrieval_question_metrics(run, qrels, **kwargs)


def test_duplicate_hit_error_names_question_and_chunk() -> None:
    run = run_frame({"q7": ["a", "b", "a", "c"]})
    qrels = qrels_frame({"q7": {"a": 1}})
    with pytest.raises(InputError) as err:
        retrieval_question_metrics(run, qrels)
    msg = str(err.value)
    assert "'q7'" in msg and "'a'" in msg and "'sys'" in msg and err.value.field == "chunk_id"


def test_keep_first_drops_later_copies_and_renumbers() -> None:
    run = run_frame({"q": ["x", "x", "a", "x", "b"]})
    qrels = qrels_frame({"q": {"a": 1, "b": 1}})
    ev = retrieval_question_metrics(run, qrels, ks=(2, 3), on_duplicate="keep_first")
    assert ev.dropped_duplicates == 2
    pq = ev.per_question
    assert value(pq, "num_ret")["value"] == 3.0
    assert value(pq, "recip_rank")["value"] == 0.5  # ranking x, a, b
    assert value(pq, "recall", 2)["value"] == 0.5 and value(pq, "recall", 3)["value"] == 1.0


def test_duplicate_qrels_and_null_ranking_columns_are_input_errors() -> None:
    run, qrels = worked_case()
    with pytest.raises(InputError, match="d3"):
        retrieval_question_metrics(run, pl.concat([qrels, qrels.head(1)]))
    with pytest.raises(InputError, match="rank is null"):
        retrieval_question_metrics(run.with_columns(pl.when(pl.col("chunk_id") == "d5").then(None)
                                                    .otherwise(pl.col("rank")).alias("rank")), qrels)
    with pytest.raises(InputError, match="score is null or NaN"):
        retrieval_question_metrics(run.with_columns(pl.when(pl.col("chunk_id") == "d5").then(float("nan"))
                                                    .otherwise(pl.col("score")).alias("score")),
                                   qrels, mode="trec_eval")
    with pytest.raises(SchemaError):
        retrieval_question_metrics(run.drop("score"), qrels)


def test_missing_unknown_and_complete() -> None:
    qrels = qrels_frame({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 2}})
    run = run_frame({"q1": ["a"], "q9": ["z", "y"]})
    ev = retrieval_question_metrics(run, qrels, ks=(1,))
    assert set(ev.per_question["question_id"]) == {"q1"}
    assert ev.missing_questions.sort("question_id").to_dicts() == [
        {"system": "sys", "question_id": "q2"}, {"system": "sys", "question_id": "q3"}]
    assert ev.unknown_questions.to_dicts() == [{"system": "sys", "question_id": "q9", "n_rows": 2}]
    ev = retrieval_question_metrics(run, qrels, ks=(1,), complete=True)
    pq = ev.per_question
    assert set(pq["question_id"]) == {"q1", "q2", "q3"}
    assert value(pq, "recall", 1, "q2")["value"] == 0.0 and value(pq, "num_ret", None, "q3")["value"] == 0.0
    agg = trec_eval_aggregate(pq)
    assert agg.filter(pl.col("metric") == "num_q")["value"][0] == 3.0
    assert agg.filter(pl.col("metric") == "recall")["value"][0] == pytest.approx(1 / 3)


def test_empty_retrieval_is_scored_not_missing() -> None:
    golden = golden_frame([{"question_id": "q1", "relevant": ["a"]}, {"question_id": "q2", "relevant": ["b"]}])
    runs = rag_runs_frame([{"question_id": "q1", "retrieved": []}, {"question_id": "q2", "retrieved": ["b"]}])
    run_long = explode_runs(runs)
    assert run_long.filter(pl.col("question_id") == "q1")["chunk_id"].to_list() == [None]
    ev = retrieval_question_metrics(run_long, qrels_from_golden(golden), ks=(1,))
    assert ev.missing_questions.height == 0
    assert value(ev.per_question, "recall", 1, "q1")["value"] == 0.0
    assert value(ev.per_question, "num_ret", None, "q1")["value"] == 0.0
    with pytest.raises(InputError, match="twice"):
        explode_runs(pl.concat([runs, runs]))


def test_system_mode_orders_by_rank_and_trec_mode_by_score() -> None:
    # rows out of order; rank says b first, score says a first; c and d tie on score
    run = pl.DataFrame({
        "system": ["s"] * 4, "question_id": ["q"] * 4,
        "chunk_id": ["a", "c", "b", "d"], "score": [3.0, 1.0, 2.0, 1.0], "rank": [2, 3, 1, 4],
    }, schema=SCHEMAS_RUN)
    qrels = qrels_frame({"q": {"a": 1, "c": 1}})
    sys_pq = retrieval_question_metrics(run, qrels, ks=(1, 3), mode="system").per_question
    assert value(sys_pq, "recip_rank")["value"] == 0.5  # b, a, c, d
    assert value(sys_pq, "P", 3)["value"] == pytest.approx(2 / 3)
    assert set(sys_pq["ranking_mode"]) == {"system"}
    te = retrieval_question_metrics(run, qrels, ks=(1, 3), mode="trec_eval").per_question
    assert value(te, "recip_rank")["value"] == 1.0  # a, b, then the 1.0 tie: d before c (docno desc)
    assert value(te, "P", 3)["value"] == pytest.approx(1 / 3)
    assert value(te, "map")["value"] == pytest.approx((1 / 1 + 2 / 4) / 2)


def test_several_systems_and_interleaved_rows() -> None:
    a = run_frame({"q1": ["x", "y"], "q2": ["y"]}, system="A")
    b = run_frame({"q1": ["y", "x"]}, system="B")
    run = pl.concat([a, b]).sample(fraction=1.0, shuffle=True, seed=3)
    qrels = qrels_frame({"q1": {"y": 1}, "q2": {"y": 1}})
    ev = retrieval_question_metrics(run, qrels, ks=(1,))
    pq = ev.per_question
    assert value(pq, "recall", 1, "q1", "A")["value"] == 0.0
    assert value(pq, "recall", 1, "q1", "B")["value"] == 1.0
    assert value(pq, "recall", 1, "q2", "A")["value"] == 1.0
    assert ev.missing_questions.to_dicts() == [{"system": "B", "question_id": "q2"}]


def test_names_and_aliases() -> None:
    assert parse_measure("recall@5") == ("recall", 5)
    assert parse_measure("precision@5") == ("P", 5)
    assert parse_measure("hit@5") == ("success", 5)
    assert parse_measure("mrr") == ("recip_rank", None)
    assert parse_measure("mrr@10") == ("recip_rank_cut", 10)
    assert parse_measure("ndcg@10") == ("ndcg_cut", 10)
    assert parse_measure("ndcg_cut_10") == ("ndcg_cut", 10)
    assert parse_measure("P_5") == ("P", 5)
    assert parse_measure("f1@3") == ("F1", 3)
    assert ALIASES["hit"] == "success" and ALIASES["mrr"] == "recip_rank"
    assert trec_name("ndcg_cut", 10) == "ndcg_cut_10" and trec_name("map", None) == "map"
    with pytest.raises(ConfigError):
        parse_measure("nope@3")
    run, qrels = worked_case()
    pq = retrieval_question_metrics(run, qrels, ks=(3,), measures=["hit@1", "recall", "mrr@2"]).per_question
    assert sorted(zip(pq["metric"], pq["k"])) == [("recall", 3), ("recip_rank_cut", 2), ("success", 1)]
    assert value(pq, "recip_rank_cut", 2)["value"] == 0.5


def test_per_question_conforms_to_question_metrics() -> None:
    run, qrels = worked_case()
    pq = retrieval_question_metrics(run, qrels).per_question
    assert pq.schema == PER_QUESTION_SCHEMA
    from rag_eval_pipeline.core.tables import conform
    conform(pq.with_columns(pl.lit("test").alias("split"), pl.lit("chunk").alias("level")), "question_metrics")


# ----------------------------------------------------------------------------- against pytrec_eval

DOCS = [f"d{i}" for i in range(12)]
QIDS = [f"q{i}" for i in range(5)]
SCORES = [0.0, 0.5, 1.0, 1.5, 2.0, 3.25]


@st.composite
def run_and_qrels(draw):
    qrels: dict[str, dict[str, int]] = {}
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=5, unique=True)):
        judged = draw(st.dictionaries(st.sampled_from(DOCS), st.integers(-1, 3), min_size=1, max_size=8))
        if max(judged.values()) < 0:  # trec_eval reads uninitialised levels for all-negative topics
            judged[DOCS[0]] = 0
        qrels[q] = judged
    run: dict[str, dict[str, float]] = {}
    for q in draw(st.lists(st.sampled_from(QIDS), min_size=1, max_size=5, unique=True)):
        docs = draw(st.lists(st.sampled_from(DOCS), min_size=1, max_size=10, unique=True))
        run[q] = {d: draw(st.sampled_from(SCORES) | st.floats(-5, 5, allow_nan=False)) for d in docs}
    ks = tuple(sorted(draw(st.sets(st.sampled_from([1, 2, 3, 5, 10]), min_size=1, max_size=3))))
    rel_level = draw(st.sampled_from([1, 2]))
    shuffle_seed = draw(st.integers(0, 2**16))
    return run, qrels, ks, rel_level, shuffle_seed


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(run_and_qrels())
def test_matches_pytrec_eval_in_trec_eval_mode(data) -> None:
    run, qrels, ks, rel_level, seed = data
    cut = ",".join(map(str, ks))
    measures = {f"P.{cut}", f"recall.{cut}", f"success.{cut}", f"ndcg_cut.{cut}", "recip_rank", "map",
                "Rprec", "num_ret", "num_rel", "num_rel_ret"}
    ref = pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=rel_level).evaluate(run)

    run_long = pl.DataFrame(
        [{"system": "s", "question_id": q, "chunk_id": d, "score": s, "rank": 0} for q, dd in run.items()
         for d, s in dd.items()], schema=SCHEMAS_RUN,
    ).sample(fraction=1.0, shuffle=True, seed=seed)  # row order must not matter in trec_eval mode
    ev = retrieval_question_metrics(run_long, qrels_frame(qrels), ks=ks, mode="trec_eval", rel_level=rel_level)
    ours: dict[str, dict[str, float]] = {}
    for q, metric, k, v in ev.per_question.select("question_id", "metric", "k", "value").iter_rows():
        if metric != "F1":
            ours.setdefault(q, {})[trec_name(metric, k)] = 0.0 if v is None else v
    assert set(ours) == set(ref)
    for q in ref:
        assert set(ours[q]) == set(ref[q]), q
        for name, want in ref[q].items():
            assert ours[q][name] == pytest.approx(want, abs=1e-9), (q, name)
    assert ev.missing_questions.height == len(set(qrels) - set(run))
    assert ev.unknown_questions.height == len(set(run) - set(qrels))
