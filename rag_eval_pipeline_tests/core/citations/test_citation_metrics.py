"""ALCE citation recall and precision, the TREC 2024 RAG support view, uncited claims and validity,
each checked against values worked out by hand (in the comments) through the real tables."""

import polars as pl
import pytest

from rag_eval_pipeline.core.citations.judging import DOWNGRADE_PREFIX, judge_citations
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.metrics.citations import CITATION_METRICS, citation_question_metrics
from rag_eval_pipeline_tests.core.citations.helpers import ScriptedJudge, golden, run, runs, snapshot

CHUNKS = {"d#0": {"text": "Alpha holds in every case."}, "d#1": {"text": "Delta holds at times."},
          "d#2": {"text": "Delta holds, and Beta holds partly."}}
ANSWER = "Alpha holds [1][2]. Beta holds [3]. Gamma holds. Delta holds [2][3]."
# Verdicts decided by hand: claim "Alpha holds." is supported by d#0 (alone and with d#1), not by d#1;
# "Beta holds." is partly supported by d#2; "Delta holds." is supported by d#2 alone (and by d#1 + d#2),
# partly by d#1 alone.
SCRIPT = {
    ("Alpha holds.", frozenset({"d#0", "d#1"})): "SUPPORTED",
    ("Alpha holds.", frozenset({"d#0"})): "SUPPORTED",
    ("Alpha holds.", frozenset({"d#1"})): "NOT_SUPPORTED",
    ("Beta holds.", frozenset({"d#2"})): "PARTIAL",
    ("Delta holds.", frozenset({"d#1", "d#2"})): "SUPPORTED",
    ("Delta holds.", frozenset({"d#1"})): "PARTIAL",
    ("Delta holds.", frozenset({"d#2"})): "SUPPORTED",
}


def _metrics(rag_runs, snap, gold, judge, **kw):
    claims, cites = judge_citations(rag_runs, snap, gold, judge, **kw)
    qm = citation_question_metrics(rag_runs, claims, cites)
    return claims, cites, {(r["question_id"], r["metric"]): r for r in qm.iter_rows(named=True)}


def test_alce_and_trec_support_against_a_hand_worked_answer():
    judge = ScriptedJudge(SCRIPT)
    claims, cites, m = _metrics(runs(run("q1", ANSWER, ["d#0", "d#1", "d#2"])), snapshot(CHUNKS),
                                golden({"question_id": "q1"}), judge)
    assert claims["claim"].to_list() == ["Alpha holds.", "Beta holds.", "Gamma holds.", "Delta holds."]
    assert claims["status"].to_list() == ["judged", "judged", "uncited", "judged"]
    assert claims["verdict"].to_list() == ["SUPPORTED", "PARTIAL", None, "SUPPORTED"]

    def value(metric):
        r = m[("q1", metric)]
        return r["value"], r["numerator"], r["denominator"]

    # ALCE recall: claims jointly supported (Alpha, Delta) / claims that need a citation (4) = 0.5
    assert value("citation_recall") == (0.5, 2.0, 4.0)
    # ALCE precision, per citation: Alpha-d#0 precise (supports alone); Alpha-d#1 not (does not support alone and
    # d#0 supports without it); Beta-d#2 not (the claim is not supported); Delta-d#1 not (d#2 supports without it);
    # Delta-d#2 precise: 2 / 5
    assert value("citation_precision") == (0.4, 2.0, 5.0)
    assert cites.filter(pl.col("claim_id").is_not_null())["precise"].to_list() == [True, False, False, False, True]
    assert value("uncited_claim_rate") == (0.25, 1.0, 4.0)
    # TREC support, (sentence, citation) pairs: (S1,d#0) full 1, (S1,d#1) none 0, (S2,d#2) partial 0.5,
    # (S4,d#1) partial 0.5, (S4,d#2) full 1 -> precision 3 / 5 = 0.6; recall: best per sentence 1, 0.5, 0
    # (uncited), 1 -> 2.5 / 4 = 0.625; F1 = 2 * 0.6 * 0.625 / 1.225 = 0.6122448979...
    assert value("weighted_citation_precision") == (pytest.approx(0.6), 3.0, 5.0)
    assert value("weighted_citation_recall") == (0.625, 2.5, 4.0)
    assert m[("q1", "weighted_citation_f1")]["value"] == pytest.approx(2 * 0.6 * 0.625 / (0.6 + 0.625))
    # the judge saw, besides the joint sets, each chunk alone and the leave-one-out sets ALCE precision needs
    seen = {(r.items, r.passage_ids) for r in judge.requests}
    assert (("Alpha holds.",), ("d#0",)) in seen and (("Delta holds.",), ("d#2",)) in seen
    assert all(r.family == "citation_support" for r in judge.requests)
    assert set(claims["prompt_sha256"]) == {"c" * 64} and set(claims["judge"]) == {"scripted"}


def test_validity_per_failure_kind_needs_no_judge():
    snap = snapshot({"d#0": {"text": "Open text."}, "w#0": {"text": "Old promo.", "status": "withdrawn"},
                     "r#0": {"text": "Old policy.", "status": "replaced", "replaced_by": "n"},
                     "x#0": {"text": "Staff only.", "acl": ["staff"]}, "n#0": {"text": "New policy."}})
    answer = "One [1]. Two [2]. Three [3]. Four [4]. Five [n#0]. Six [zz#1]. Seven [9]."
    claims, cites, m = _metrics(runs(run("q1", answer, ["d#0", "w#0", "r#0", "x#0"])), snap,
                                golden({"question_id": "q1", "user_groups": ["customers"]}), RuleBasedJudge())
    by = {r["written"]: r for r in cites.iter_rows(named=True)}
    assert by["1"]["valid"] and by["1"]["failures"] in ([], ["not_supporting"])
    assert by["2"]["failures"][0] == "withdrawn"
    assert by["3"]["failures"][0] == "replaced" and by["3"]["replaced_by"] == "n"
    assert by["4"]["failures"][0] == "acl_restricted" and by["4"]["readable"] is False
    assert by["n#0"]["failures"] == ["not_retrieved"] and by["n#0"]["retrieved"] is False
    assert by["zz#1"]["failures"] == ["not_in_snapshot"] and by["zz#1"]["in_snapshot"] is False
    assert by["9"]["problem"] == "out_of_range" and by["9"]["target"] is None
    # 6 distinct citations (d#0, w#0, r#0, x#0, n#0, zz#1) and 1 unresolved reference ([9])
    expected = {"citation_validity_rate": (1, 6), "cited_not_in_snapshot_rate": (1, 6),
                "cited_not_retrieved_rate": (1, 6), "cited_inactive_rate": (2, 6), "citation_acl_leak_rate": (1, 6),
                "unresolved_citation_rate": (1, 7)}
    for metric, (num, den) in expected.items():
        r = m[("q1", metric)]
        assert (r["numerator"], r["denominator"], r["value"]) == (num, den, pytest.approx(num / den)), metric
    # claims citing only an unjudgeable chunk are never supported
    assert claims.filter(pl.col("claim").is_in(["Five.", "Six.", "Seven."]))["status"].to_list() == \
        ["no_judgeable_citation"] * 3


def test_not_evaluable_is_null_with_its_reason_never_zero():
    snap = snapshot(CHUNKS)
    rag = runs(run("abs", "No lo sé.", ["d#0"], decision="abstain"), run("cla", "¿Cuál?", decision="clarify"),
               run("nocite", "Alpha holds.", ["d#0"]), run("question", "Which one would you like?", ["d#0"], ["d#0"]),
               run("err", "Alpha holds [1].", ["d#0"]))
    gold = golden(*({"question_id": q} for q in ("abs", "cla", "nocite", "question", "err")))
    _, _, m = _metrics(rag, snap, gold, ScriptedJudge(SCRIPT, raise_for="Alpha"))
    for metric in CITATION_METRICS:
        assert m[("abs", metric)]["value"] is None and m[("abs", metric)]["status"] == "abstained"
        assert m[("cla", metric)]["status"] == "clarify"
    # an answer that cites nothing: recall 0 of 1 (its claim needed a citation), precision and validity null
    assert (m[("nocite", "citation_recall")]["value"], m[("nocite", "uncited_claim_rate")]["value"]) == (0.0, 1.0)
    for metric in ("citation_precision", "weighted_citation_precision", "weighted_citation_f1",
                   "citation_validity_rate", "unresolved_citation_rate"):
        assert (m[("nocite", metric)]["value"], m[("nocite", metric)]["status"]) == (None, "no_citations"), metric
    # a question states nothing to cite: the claim metrics are null
    assert (m[("question", "citation_recall")]["value"], m[("question", "citation_recall")]["status"]) == \
        (None, "no_claims")
    # the judge failed on every claim: null, counted as a judge error, never 0
    for metric in ("citation_recall", "citation_precision", "weighted_citation_precision"):
        assert (m[("err", metric)]["value"], m[("err", metric)]["status"]) == (None, "judge_error"), metric
    assert m[("err", "citation_validity_rate")]["value"] == 1.0  # validity needs no judge


def test_support_needs_a_quote_found_in_a_cited_chunk():
    claims, cites, m = _metrics(runs(run("q1", "Beta holds [3].", ["d#0", "d#1", "d#2"])), snapshot(CHUNKS),
                                golden({"question_id": "q1"}), ScriptedJudge(SCRIPT, bad_quote=True))
    row = claims.row(0, named=True)
    assert row["verdict"] == "NOT_SUPPORTED" and row["justification"].startswith(DOWNGRADE_PREFIX)
    assert row["quote_found"] is False and m[("q1", "citation_recall")]["value"] == 0.0


def test_answer_level_citations_bind_to_every_claim_and_repeats_pool():
    rag = runs(run("q1", "Alpha holds. Delta holds.", ["d#0", "d#1", "d#2"], citations=["d#0"]))
    claims, cites, m = _metrics(rag, snapshot(CHUNKS), golden({"question_id": "q1"}), ScriptedJudge(SCRIPT),
                                repeats=2)
    assert set(cites["origin"]) == {"run_log"} and claims.filter(pl.col("repeat") == 0)["cited"].to_list() == \
        [["d#0"], ["d#0"]]
    # Alpha is supported by d#0, Delta is not (unscripted): 1 of 2 per repeat, pooled 2 of 4
    r = m[("q1", "citation_recall")]
    assert (r["numerator"], r["denominator"], r["value"]) == (2.0, 4.0, 0.5)


def test_per_question_detail_says_which_claim_cites_what_and_why_it_failed():
    from rag_eval_pipeline.core.citations.judging import citation_detail

    rag = runs(run("q1", "Sí [1]. Alpha holds [2][9].", ["d#0", "d#1"], citations=["d#2"]))
    claims, cites = judge_citations(rag, snapshot(CHUNKS), golden({"question_id": "q1"}), ScriptedJudge(SCRIPT))
    d = citation_detail(claims, cites)
    # one claim ("Sí." states nothing), then one row of what is bound to no claim: the marker on "Sí", the logged d#2
    assert d["claim_id"].to_list() == ["q1:c1", None] and d["status"].to_list() == ["judged", "unbound"]
    alpha = d.row(0, named=True)["citations"]
    assert [(c["target"], c["marker"], c["support"], c["failures"]) for c in alpha] == [
        ("d#1", "[2]", "NOT_SUPPORTED", ["not_supporting"]), ("9", "[9]", None, ["out_of_range"])]
    assert [c["target"] for row in d["citations"][1:] for c in row] == ["d#0", "d#2"]
