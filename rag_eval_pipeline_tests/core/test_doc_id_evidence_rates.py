"""A document-id system (``chunk_map: {doc_ids: true}``) retrieved whole documents: its evidence rates
(evidence_retrieved, abstention with/without evidence, claim_evidence_availability) read each retrieved
document as every chunk of it, through the mapping judging reads (``JudgingEvidence``); ``[doc_id]``
markers resolve through the snapshot's ``doc_id`` whatever the chunk ids look like; a bracketed id shaped
like the snapshot's chunk ids but outside it is a citation reported ``not_in_snapshot`` and stripped from
the judged claim. Every expected value is worked out by hand in the comments."""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.citations.answers import read_answers
from rag_eval_pipeline.core.citations.judging import judge_citations
from rag_eval_pipeline.core.citations.markers import id_stem, parse_answer, strip_markers
from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.citations import citation_question_metrics
from rag_eval_pipeline.core.metrics.claim_evidence import claim_evidence_availability
from rag_eval_pipeline.core.metrics.decisions import decision_question_metrics
from rag_eval_pipeline.core.systems.doc_evidence import JudgingEvidence
from rag_eval_pipeline_tests.core.citations.helpers import golden, run, runs, snapshot

# Three documents, chunk ids of the suite's own shape (kb-NN, no "#"):
#   returns  = kb-01 (30 days), kb-02 (opened software)
#   shipping = kb-03 (standard), kb-04 (express)
#   store    = kb-05
_TEXTS = {"returns#0": "You may return any product within 30 calendar days of delivery.",
          "returns#1": "Opened software cannot be returned.",
          "shipping#0": "Standard shipping takes 3 to 5 business days.",
          "shipping#1": "Express shipping costs 12 euros and arrives the next day.",
          "store#0": "The store opens at ten."}
_KB = {"returns#0": "kb-01", "returns#1": "kb-02", "shipping#0": "kb-03", "shipping#1": "kb-04", "store#0": "kb-05"}
# what rag_runs stores for a document id: its first chunk
RETURNS, SHIPPING, STORE = "kb-01", "kb-03", "kb-05"


def _snapshot() -> pl.DataFrame:
    snap = snapshot({cid: {"text": t} for cid, t in _TEXTS.items()})
    return snap.with_columns(pl.col("chunk_id").replace_strict(_KB))


def _claims(*supporting: list[str]) -> list[dict]:
    return [{"claim_id": f"c{i}", "text": "x", "supporting": s, "importance": "vital"}
            for i, s in enumerate(supporting, start=1)]


def _golden() -> pl.DataFrame:
    return golden({"question_id": "q1", "claims": _claims(["kb-01"])},
                  {"question_id": "q3", "claims": _claims(["kb-04"], ["kb-04"])},
                  {"question_id": "q5", "claims": _claims(["kb-05"])},
                  {"question_id": "q8", "claims": _claims(["kb-02"])})


def _runs(system: str) -> list[dict]:
    return [run("q1", "You may return any product within 30 calendar days of delivery.", [SHIPPING, RETURNS],
                system=system),
            run("q3", None, [RETURNS, STORE, SHIPPING], decision="abstain", system=system),
            run("q5", "The store opens at ten.", [SHIPPING], system=system),
            run("q8", None, [RETURNS], decision="abstain", system=system)]


def _by(frame: pl.DataFrame, metric: str, k: int | None = None) -> dict:
    f = frame.filter(pl.col("metric") == metric)
    if k is not None:
        f = f.filter(pl.col("k") == k)
    return {(r["system"], r["question_id"]): r["value"] for r in f.iter_rows(named=True)}


def _sum(values: dict, system: str) -> tuple[float, int]:
    vals = [v for (s, _), v in values.items() if s == system and v is not None]
    return sum(vals), len(vals)


def test_decision_evidence_rates_read_whole_documents_of_a_doc_id_system():
    snap, gold = _snapshot(), _golden()
    rag_runs = runs(*_runs("docs"), *_runs("chunks"))  # "chunks": the same ids read as chunk ids
    evidence = JudgingEvidence(snap, {"docs"})
    qm = decision_question_metrics(rag_runs, gold, snap, doc_evidence=evidence)
    # Evidence = each question's supporting chunks: q1 kb-01, q3 kb-04, q5 kb-05, q8 kb-02.
    # "docs" (documents): q1 returns retrieved (holds kb-01) 1; q3 shipping retrieved (holds kb-04) 1;
    # q5 only shipping (kb-05 is in store) 0; q8 returns retrieved (holds kb-02) 1 -> 3/4.
    # "chunks" (ids as chunks): q1 kb-01 retrieved 1; q3 {kb-01, kb-05, kb-03} lacks kb-04 0; q5 0; q8 0 -> 1/4.
    ev = _by(qm, "evidence_retrieved")
    assert _sum(ev, "docs") == (3.0, 4)
    assert _sum(ev, "chunks") == (1.0, 4)
    # Abstained on q3 and q8 (both answerable). "docs": evidence in the context both times -> with 2/2,
    # without 0/2 (a generator error). "chunks": neither evidence chunk retrieved -> with 0/2, without 2/2.
    assert _sum(_by(qm, "abstention_with_evidence"), "docs") == (2.0, 2)
    assert _sum(_by(qm, "abstention_without_evidence"), "docs") == (0.0, 2)
    assert _sum(_by(qm, "abstention_with_evidence"), "chunks") == (0.0, 2)
    assert _sum(_by(qm, "abstention_without_evidence"), "chunks") == (2.0, 2)
    # Without the documents (the defect) the doc-id system read only first chunks: 1/4, like "chunks".
    assert _sum(_by(decision_question_metrics(rag_runs, gold, snap), "evidence_retrieved"), "docs") == (1.0, 4)


def test_claim_evidence_availability_counts_a_claim_when_its_document_is_in_the_top_k():
    snap, gold = _snapshot(), _golden()
    rag_runs = runs(*_runs("docs"), *_runs("chunks"))
    qm = claim_evidence_availability(rag_runs, gold, [1, 2, 3], doc_evidence=JudgingEvidence(snap, {"docs"}))
    # "docs", document ranks: q1 [shipping, returns]: claim kb-01 (returns, rank 2): k1 0, k2 1, k3 1.
    # q3 [returns, store, shipping]: both claims kb-04 (shipping, rank 3): k1 0, k2 0, k3 1 (2/2).
    # q5 [shipping]: claim kb-05 (store) never: 0. q8 [returns]: claim kb-02 (returns, rank 1): 1 from k1.
    docs = {k: _by(qm, "claim_evidence_availability", k) for k in (1, 2, 3)}
    assert {q: docs[1][("docs", q)] for q in ("q1", "q3", "q5", "q8")} == {"q1": 0.0, "q3": 0.0, "q5": 0.0, "q8": 1.0}
    assert {q: docs[2][("docs", q)] for q in ("q1", "q3", "q5", "q8")} == {"q1": 1.0, "q3": 0.0, "q5": 0.0, "q8": 1.0}
    assert {q: docs[3][("docs", q)] for q in ("q1", "q3", "q5", "q8")} == {"q1": 1.0, "q3": 1.0, "q5": 0.0, "q8": 1.0}
    # "chunks": only kb-01 is a supporting chunk it retrieved (q1, rank 2): q3 and q8 stay 0 at k=3.
    assert {q: docs[3][("chunks", q)] for q in ("q1", "q3", "q5", "q8")} == {"q1": 1.0, "q3": 0.0, "q5": 0.0,
                                                                             "q8": 0.0}
    # The k=3 summary of "docs": claims available 1 + 2 + 0 + 1 = 4 of 1 + 2 + 1 + 1 = 5.
    k3 = qm.filter((pl.col("system") == "docs") & (pl.col("k") == 3))
    assert (k3["numerator"].sum(), k3["denominator"].sum()) == (4.0, 5.0)


def test_doc_id_marker_resolves_to_the_retrieved_document_and_is_stripped():
    snap, gold = _snapshot(), golden({"question_id": "q1"})
    answer = "You may return any product within 30 calendar days of delivery [returns]."
    rag_runs = runs(run("q1", answer, [SHIPPING, RETURNS], system="docs"))
    (ans,) = read_answers(rag_runs, snap, gold)
    # "[returns]" names the document returns, retrieved as kb-01 at rank 2: one valid chunk citation.
    (row,) = ans.rows
    assert (row["marker"], row["target"], row["level"], row["retrieved"], row["rank"], row["valid"],
            row["failures"]) == ("[returns]", "kb-01", "chunk", True, 2, True, [])
    assert [c.text for c in ans.claims] == ["You may return any product within 30 calendar days of delivery."]
    # Support is judged against the whole document (kb-01, kb-02); kb-01 states the claim word for word:
    # SUPPORTED, so citation_recall for q1 = 1 supported claim / 1 claim.
    claims, cites = judge_citations(rag_runs, snap, gold, RuleBasedJudge(), doc_id_systems={"docs"})
    assert claims.select("claim", "verdict").rows() == [
        ("You may return any product within 30 calendar days of delivery.", "SUPPORTED")]
    qm = citation_question_metrics(rag_runs, claims, cites)
    assert _by(qm, "citation_recall")[("docs", "q1")] == 1.0
    # The faithfulness judge reads the claim without the marker.
    labels, _ = judge_runs(rag_runs, snap, RuleBasedJudge(), questions=gold.select("question_id", "question"),
                           doc_id_systems={"docs"})
    assert labels["claim"].to_list() == ["You may return any product within 30 calendar days of delivery."]
    # A document none of whose chunks was retrieved stays a document-level citation, not retrieved.
    (ans2,) = read_answers(runs(run("q1", answer, [SHIPPING], system="docs")), snap, gold)
    assert [(r["target"], r["level"], r["failures"]) for r in ans2.rows] == [("returns", "document",
                                                                              ["not_retrieved"])]


def test_an_id_shaped_marker_outside_the_snapshot_is_a_not_in_snapshot_citation():
    snap, gold = _snapshot(), golden({"question_id": "q3"})
    answer = "Express shipping costs 12 euros [kb-99]. It arrives the next day [kb-04]."
    rag_runs = runs(run("q3", answer, ["kb-04"], system="s"))
    (ans,) = read_answers(rag_runs, snap, gold)
    # Two markers, two rows: kb-99 (shaped like kb-NN, in no document) not_in_snapshot; kb-04 retrieved, valid.
    assert [(r["marker"], r["target"], r["in_snapshot"], r["valid"], r["failures"]) for r in ans.rows] == [
        ("[kb-99]", "kb-99", False, False, ["not_in_snapshot"]), ("[kb-04]", "kb-04", True, True, [])]
    assert [c.text for c in ans.claims] == ["Express shipping costs 12 euros.", "It arrives the next day."]
    # cited_not_in_snapshot_rate for q3: 1 of its 2 citations.
    claims, cites = judge_citations(rag_runs, snap, gold, RuleBasedJudge())
    qm = citation_question_metrics(rag_runs, claims, cites)
    assert _by(qm, "cited_not_in_snapshot_rate")[("s", "q3")] == 0.5
    # The faithfulness judge reads both claims without markers; both are in kb-04's sentence: 2 SUPPORTED.
    labels, _ = judge_runs(rag_runs, snap, RuleBasedJudge(), questions=gold.select("question_id", "question"))
    assert labels.select("claim", "verdict").rows() == [("Express shipping costs 12 euros.", "SUPPORTED"),
                                                        ("It arrives the next day.", "SUPPORTED")]


def test_ordinary_bracketed_text_and_numbers_keep_their_meaning():
    doc_of = {"kb-01": "returns", "kb-02": "returns", "kb-04": "shipping"}
    # "[sic]" has no digits, "[page 3]" a space in its stem, "[1]" is a number: none is an id.
    assert (id_stem("kb-07"), id_stem("returns#2"), id_stem("1"), id_stem("sic"), id_stem("page 3"),
            id_stem("v2")) == ("kb-", "returns#", None, None, None, "v")
    parsed = parse_answer("Refunds take 5 days [sic] [page 3] [1].", retrieved=["kb-02"], known_chunks=doc_of)
    assert parsed.text == "Refunds take 5 days [sic] [page 3]."
    assert [(m.text, m.syntax, [r.target for r in m.references]) for m in parsed.markers] == [
        ("[1]", "brackets", ["kb-02"])]
    # The same rule strips for faithfulness and nuggets: [returns] and [kb-99] go, [sic] stays.
    assert strip_markers("Within 30 days [returns]. Costs 12 euros [kb-99] [sic].", known_chunks=doc_of) == \
        "Within 30 days. Costs 12 euros [sic]."


def test_pipeline_scores_an_abstaining_doc_id_system_on_whole_documents(tmp_path):
    """The new-user trial's suite in small: a logged document-id system abstains on q3 and q8 although the
    retrieved documents hold their evidence; build_question_metrics wires the documents in."""
    import json

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.judging import judge_runs as judge
    from rag_eval_pipeline.core.pipeline import build_golden, build_question_metrics, build_runs, build_snapshot

    chunks = [("kb-01", "returns", "You may return any product within 30 calendar days of delivery."),
              ("kb-02", "returns", "Opened software cannot be returned."),
              ("kb-03", "shipping", "Standard shipping takes 3 to 5 business days."),
              ("kb-04", "shipping", "Express shipping costs 12 euros and arrives the next day."),
              ("kb-05", "store", "The store opens at ten.")]
    gold = [{"question_id": "q1", "question": "How long to return?", "answerability": "answerable", "split": "test",
             "relevant": ["kb-01"], "claims": [{"claim_id": "c1", "text": "30 days.", "supporting": ["kb-01"]}]},
            {"question_id": "q3", "question": "Express cost?", "answerability": "answerable", "split": "test",
             "relevant": ["kb-04"],
             "claims": [{"claim_id": "c1", "text": "12 euros.", "supporting": ["kb-04"]},
                        {"claim_id": "c2", "text": "Next day.", "supporting": ["kb-04"]}]},
            {"question_id": "q8", "question": "Opened software?", "answerability": "answerable", "split": "test",
             "relevant": ["kb-02"], "claims": [{"claim_id": "c1", "text": "No.", "supporting": ["kb-02"]}]}]
    log = [{"question_id": "q1", "retrieved": [{"chunk_id": "shipping", "score": 1.0},
                                               {"chunk_id": "returns", "score": 0.9}],
            "decision": "answer", "answer": "You may return any product within 30 calendar days of delivery."},
           {"question_id": "q3", "retrieved": [{"chunk_id": "returns", "score": 1.0},
                                               {"chunk_id": "shipping", "score": 0.8}], "decision": "abstain"},
           {"question_id": "q8", "retrieved": [{"chunk_id": "returns", "score": 1.0}], "decision": "abstain"}]
    for name, rows in (("chunks.jsonl", [{"chunk_id": c, "doc_id": d, "text": t} for c, d, t in chunks]),
                       ("golden.jsonl", gold), ("docs.jsonl", log)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (tmp_path / "config.yaml").write_text(
        "corpus: {source: chunks, path: chunks.jsonl}\ngolden: {path: golden.jsonl}\n"
        "systems:\n  - {name: docs, kind: logged, path: docs.jsonl, chunk_map: {doc_ids: true}}\n"
        "metrics: {ks: [1, 3]}\njudge: {type: rule_based}\nseed: 0\n", encoding="utf-8")
    cfg = load_config(tmp_path / "config.yaml")
    snap, version = build_snapshot(cfg)
    golden_set = build_golden(cfg, snap)
    rag_runs = build_runs(cfg, snap, golden_set, version)
    labels, answers = judge(rag_runs, snap, RuleBasedJudge(), questions=golden_set.select("question_id", "question"),
                            doc_id_systems={"docs"})
    qm, _ = build_question_metrics(cfg, snap, golden_set, rag_runs, labels, answers)

    def total(metric: str, k: int | None = None, level: str | None = None) -> tuple:
        f = qm.filter((pl.col("metric") == metric) & pl.col("value").is_not_null())
        if k is not None:
            f = f.filter(pl.col("k") == k)
        if level is not None:
            f = f.filter(pl.col("level") == level)
        return f["numerator"].sum(), f["denominator"].sum()

    # evidence_retrieved: q1 returns (kb-01) yes, q3 shipping (kb-04) yes, q8 returns (kb-02) yes -> 3/3
    # (first chunks only, the defect: q1 only -> 1/3).
    assert total("evidence_retrieved") == (3.0, 3.0)
    # abstained q3, q8, evidence in the retrieved documents both times: with 2/2, without 0/2.
    assert total("abstention_with_evidence") == (2.0, 2.0)
    assert total("abstention_without_evidence") == (0.0, 2.0)
    # claim_evidence_availability@3: q1 1/1 (returns rank 2), q3 2/2 (shipping rank 2), q8 1/1 -> 4/4;
    # @1: q1 0 (shipping first), q3 0 (returns first), q8 1 -> 1/4.
    assert total("claim_evidence_availability", 3) == (4.0, 4.0)
    assert total("claim_evidence_availability", 1) == (1.0, 4.0)
    # chunk-level retrieval rows stay null (doc_ids_only): 3 questions x k in {1, 3} = 6 recall rows, all null.
    chunk_recall = qm.filter((pl.col("metric") == "recall") & (pl.col("level") == "chunk"))
    assert chunk_recall.height == 6 and chunk_recall["value"].null_count() == 6
    assert set(chunk_recall["status"].to_list()) == {"doc_ids_only"}


def test_a_cited_chunk_of_a_retrieved_document_is_retrieved_for_a_doc_id_system():
    """A document-id system retrieved shipping and returns; its answer cites chunks of them by chunk id.
    A retrieved document stands for all its chunks, so those citations are retrieved and valid (the defect:
    kb-02 and kb-04 were "not_retrieved", as only each document's first chunk was in the list)."""
    from rag_eval_pipeline.core.citations.judging import support_requests

    snap, gold = _snapshot(), golden({"question_id": "q1"})
    answer = ("You may return any product within 30 calendar days of delivery [returns]. "
              "Opened software cannot be returned [kb-02]. "
              "Express shipping costs 12 euros [kb-04].")
    rag_runs = runs(run("q1", answer, [SHIPPING, RETURNS], system="docs"),
                    run("q1", answer, [SHIPPING, RETURNS], system="chunks"))
    claims, cites = judge_citations(rag_runs, snap, gold, RuleBasedJudge(), doc_id_systems={"docs"})
    fields = ("claim_id", "target", "in_snapshot", "retrieved", "rank", "valid", "support", "failures")
    # "docs": shipping (kb-03, kb-04) at rank 1, returns (kb-01, kb-02) at rank 2.
    #   c1 [returns] -> kb-01, rank 2; c2 [kb-02] -> returns, rank 2; c3 [kb-04] -> shipping, rank 1.
    #   Each claim is words of one chunk (c3 the first half of kb-04), and each is judged against its cited
    #   chunk's whole document (below), which holds that chunk: SUPPORTED, no failure.
    assert cites.filter(pl.col("system") == "docs").select(fields).rows() == [
        ("q1:c1", "kb-01", True, True, 2, True, "SUPPORTED", []),
        ("q1:c2", "kb-02", True, True, 2, True, "SUPPORTED", []),
        ("q1:c3", "kb-04", True, True, 1, True, "SUPPORTED", [])]
    # "chunks" retrieved exactly kb-03, kb-01 as chunk ids: kb-02 and kb-04 were never retrieved, so they
    # stay not_retrieved, invalid and unjudged (support null); c1 [returns] -> kb-01 at rank 2 as before.
    assert cites.filter(pl.col("system") == "chunks").select(fields).rows() == [
        ("q1:c1", "kb-01", True, True, 2, True, "SUPPORTED", []),
        ("q1:c2", "kb-02", True, False, None, False, None, ["not_retrieved"]),
        ("q1:c3", "kb-04", True, False, None, False, None, ["not_retrieved"])]
    qm = citation_question_metrics(rag_runs, claims, cites)
    # citation_validity_rate = valid distinct citations / distinct citations: docs 3/3, chunks 1/3.
    # citation_recall = claims jointly SUPPORTED by their judged citations / claims needing one: docs 3/3,
    # chunks 1/3 (c2 and c3 have no judgeable citation: NOT_SUPPORTED).
    assert _by(qm, "citation_validity_rate") == {("docs", "q1"): 1.0, ("chunks", "q1"): 1 / 3}
    assert _by(qm, "citation_recall") == {("docs", "q1"): 1.0, ("chunks", "q1"): 1 / 3}
    # The judge reads a doc-id system's cited chunk as every chunk of its document, in chunk order:
    # c2's passages are returns' kb-01, kb-02 and c3's shipping's kb-03, kb-04.
    requests, _ = support_requests(rag_runs, snap, gold, doc_id_systems={"docs"})
    passages = {(r.system, r.item_ids): r.passage_ids for r in requests}
    assert passages[("docs", ("q1:c2",))] == ("kb-01", "kb-02")
    assert passages[("docs", ("q1:c3",))] == ("kb-03", "kb-04")
    assert passages[("chunks", ("q1:c1",))] == ("kb-01",)
