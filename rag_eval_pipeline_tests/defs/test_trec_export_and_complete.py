"""The TREC export agrees with the pipeline's own tables (pytrec_eval, trec_eval's code, is the oracle), and
``metrics.complete: true`` lets a run miss golden questions, scored as ``trec_eval -c`` scores them."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR

pytrec_eval = pytest.importorskip("pytrec_eval")

KS = (1, 3, 5, 10)
MEASURES = {f"{m}.{','.join(map(str, KS))}" for m in ("P", "recall", "ndcg_cut", "success")} | {
    "recip_rank", "map", "Rprec", "num_ret", "num_rel", "num_rel_ret"}
# the summary's null rule leaves out questions without relevant chunks, as trec_eval does when the qrels
# have no line for them: these are the measures whose means agree
NULL_WHEN_NO_RELEVANT = ("recall", "ndcg_cut", "success", "recip_rank", "map", "Rprec")


def _doc_golden(tmp: Path) -> Path:
    """The sample golden set with document-level relevance on every third answerable question: the documents of
    its relevant chunks (grade 2) and ``envios`` (grade 1), so that document level is not the chunk level."""
    rows = [json.loads(line) for line in (SAMPLE_DIR / "golden.jsonl").read_text().splitlines() if line.strip()]
    answerable = [r for r in rows if r["answerability"] == "answerable"]
    for r in answerable[::3]:
        docs = dict.fromkeys((x if isinstance(x, str) else x["chunk_id"]).rsplit("#", 1)[0] for x in r["relevant"])
        r["relevant_docs"] = [{"doc_id": d, "grade": 2} for d in docs] + (
            [] if "envios" in docs else [{"doc_id": "envios", "grade": 1}])
    path = tmp / "golden.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _config(tmp: Path, golden: Path | None = None, **metrics) -> Path:
    raw = yaml.safe_load((SAMPLE_DIR / "config.yaml").read_text())
    raw["corpus"]["path"] = str(SAMPLE_DIR / raw["corpus"]["path"])
    raw["golden"]["path"] = str(golden or SAMPLE_DIR / raw["golden"]["path"])
    raw["calibration"]["human_labels"] = str(SAMPLE_DIR / raw["calibration"]["human_labels"])
    for s in raw["systems"]:
        if s["kind"] == "logged":
            s["path"] = str(SAMPLE_DIR / s["path"])
    raw["metrics"].update(metrics)
    path = tmp / "config.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _materialize(config: Path, out: Path):
    return dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out)),
                          raise_on_error=False, instance=dg.DagsterInstance.ephemeral())


def _trec_name(metric: str, k) -> str:
    return metric if k is None else f"{metric}_{k}"


def _read_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        run.setdefault(q, {})[d] = float(s)
    return run


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    for line in path.read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    return qrels


@pytest.fixture(scope="module")
def trec_mode_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("trec_export")
    out = tmp / "out"
    result = _materialize(_config(tmp, _doc_golden(tmp), ranking_mode="trec_eval"), out)
    assert result.success
    return result, out


@pytest.mark.parametrize("level", ["chunk", "doc"])
def test_trec_export_agrees_with_question_metrics(trec_mode_run, level) -> None:
    """Both pairs of files (chunk level: qrels.txt and <system>.run; document level: qrels_doc.txt and
    <system>.doc.run) give pytrec_eval the pipeline's own per-question values and means."""
    result, out = trec_mode_run
    qm = pl.read_parquet(out / "question_metrics.parquet").filter(pl.col("level").fill_null(level) == level)
    summary = pl.read_parquet(out / "metric_summary.parquet").filter(
        (pl.col("split") == "all") & (pl.col("segment") == "all") & (pl.col("level").fill_null(level) == level))
    suffix = ".doc" if level == "doc" else ""
    qrels = _read_qrels(out / "trec" / ("qrels_doc.txt" if level == "doc" else "qrels.txt"))
    md = result.asset_materializations_for_node("trec_files")[0].metadata
    assert md["docno"].value == "chunk_id"  # the sample's documents have several chunks
    assert md["empty_retrievals"].value["team_rag"] == 1  # q39 retrieved nothing
    assert md["errored_questions"].value["team_rag"] == 1  # q24's run errored: left out of the run file
    for system in ("bm25_k5", "bm25_k10", "team_rag"):
        ref = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(
            _read_run(out / "trec" / f"{system}{suffix}.run"))
        ours = qm.filter((pl.col("system") == system) & pl.col("metric").is_in(
            ["P", "recall", "ndcg_cut", "success", "recip_rank", "map", "Rprec", "num_ret", "num_rel", "num_rel_ret"]))
        assert set(ours["ranking_mode"]) == {"trec_eval"} and set(ours["level"]) == {level}
        evaluable = set(ours.filter((pl.col("metric") == "num_rel") & (pl.col("value") > 0))["question_id"])
        assert set(ref) == evaluable, system  # every question with relevant ids whose run did not error
        empty = set(ours.filter((pl.col("metric") == "num_ret") & (pl.col("value") == 0))["question_id"])
        for q, metric, k, v in ours.select("question_id", "metric", "k", "value").iter_rows():
            if q not in ref:
                continue
            want = ref[q][_trec_name(metric, k)]
            if metric == "num_ret" and q in empty:
                assert (v, want) == (0.0, 1.0)  # the one placeholder line trec_eval needs to see the question
                continue
            assert v == pytest.approx(want, abs=1e-9), (system, q, metric, k)
        for metric in NULL_WHEN_NO_RELEVANT:
            for k in (None,) if metric in ("recip_rank", "map", "Rprec") else KS:
                name = _trec_name(metric, k)
                mean = sum(r[name] for r in ref.values()) / len(ref)
                row = summary.filter((pl.col("system") == system) & (pl.col("metric") == metric)
                                     & (pl.col("k").is_null() if k is None else pl.col("k") == k))
                assert row["value"][0] == pytest.approx(mean, abs=1e-12), (system, name)
    # team_rag's errored q24 is in neither: the tables report it apart, the run file leaves it out
    assert "q24" not in ref and "q24" in qrels
    q24 = qm.filter((pl.col("system") == "team_rag") & (pl.col("question_id") == "q24") & (pl.col("level") == level))
    assert q24.height and set(q24["status"]) == {"run_error"} and q24["value"].null_count() == q24.height
    # trec_eval -c (missing = 0) is the other view: q24 then counts as 0 in every mean
    with_c = sum(r["recall_5"] for r in ref.values()) / (len(ref) + 1)
    row = summary.filter((pl.col("system") == "team_rag") & (pl.col("metric") == "recall") & (pl.col("k") == 5))
    assert row["value"][0] > with_c and row["n_not_evaluable"][0] >= 1


def test_document_level_rows_follow_relevant_docs(trec_mode_run) -> None:
    """Hand check on one question: q01's document-level qrels are its relevant_docs; its document run keeps
    each document once, at the place of its first chunk."""
    _, out = trec_mode_run
    golden = {json.loads(line)["question_id"]: json.loads(line) for line in
              (out.parent / "golden.jsonl").read_text().splitlines() if line.strip()}
    q = golden["q01"]
    assert _read_qrels(out / "trec" / "qrels_doc.txt")["q01"] == {d["doc_id"]: d["grade"] for d in q["relevant_docs"]}
    team = [json.loads(line) for line in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text().splitlines()]
    hits = next(r for r in team if r["question_id"] == "q01")["retrieved"]
    by_score = sorted(hits, key=lambda h: (-h["score"], [-b for b in h["chunk_id"].encode()]))
    docs = list(dict.fromkeys(h["chunk_id"].rsplit("#", 1)[0] for h in by_score))
    run = _read_run(out / "trec" / "team_rag.doc.run")["q01"]
    assert list(run) == docs  # written in rank order, one line per document
    relevant = {d["doc_id"] for d in q["relevant_docs"]}
    first = next(i for i, d in enumerate(docs, start=1) if d in relevant)
    row = pl.read_parquet(out / "question_metrics.parquet").filter(
        (pl.col("system") == "team_rag") & (pl.col("question_id") == "q01") & (pl.col("metric") == "recip_rank")
        & (pl.col("level") == "doc"))
    assert row["value"][0] == pytest.approx(1 / first)


def test_claim_evidence_availability_follows_the_ranking_mode(trec_mode_run) -> None:
    _, out = trec_mode_run
    qm = pl.read_parquet(out / "question_metrics.parquet")
    rows = qm.filter(pl.col("metric") == "claim_evidence_availability")
    assert rows.height and set(rows["ranking_mode"]) == {"trec_eval"}
    summary = pl.read_parquet(out / "metric_summary.parquet").filter(pl.col("metric") == "claim_evidence_availability")
    assert set(summary["ranking_mode"]) == {"trec_eval"}


def _without(log: Path, dest: Path, drop: set[str]) -> Path:
    kept = [line for line in log.read_text().splitlines()
            if line.strip() and json.loads(line)["question_id"] not in drop]
    dest.write_text("\n".join(kept) + "\n")
    return dest


@pytest.fixture(scope="module")
def complete_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("complete")
    config = _config(tmp, ranking_mode="trec_eval", complete=True)
    raw = yaml.safe_load(config.read_text())
    log = _without(SAMPLE_DIR / "runs" / "team_rag.jsonl", tmp / "team_rag.jsonl", {"q01", "q02"})
    for s in raw["systems"]:
        if s["kind"] == "logged":
            s["path"] = str(log)
    config.write_text(yaml.safe_dump(raw))
    out = tmp / "out"
    return _materialize(config, out), out, log


def test_golden_ids_used_by_the_complete_test_exist() -> None:
    ids = {json.loads(line)["question_id"] for line in (SAMPLE_DIR / "golden.jsonl").read_text().splitlines() if line}
    assert {"q01", "q02"} <= ids


def test_complete_allows_missing_questions_and_says_so(complete_run) -> None:
    result, _, _ = complete_run
    assert result.success
    check = [e for e in result.get_asset_check_evaluations() if e.check_name == "every_question_has_a_run_row"][0]
    assert check.passed
    assert check.metadata["allowed_missing_questions"].value == 2
    assert check.metadata["allowed_missing_question_ids"].value == {"team_rag": ["q01", "q02"]}


def test_complete_scores_missing_questions_as_trec_eval_c(complete_run) -> None:
    _, out, log = complete_run
    qm = pl.read_parquet(out / "question_metrics.parquet").filter(pl.col("system") == "team_rag")
    golden = [json.loads(line) for line in (SAMPLE_DIR / "golden.jsonl").read_text().splitlines() if line.strip()]
    qrels = {g["question_id"]: {r["chunk_id"] if isinstance(r, dict) else r: (r.get("grade", 1) if isinstance(r, dict)
                                                                             else 1) for r in g["relevant"]}
             for g in golden if g.get("relevant")}
    run = {}
    for line in log.read_text().splitlines():
        r = json.loads(line)
        run[r["question_id"]] = {h["chunk_id"]: float(h["score"]) for h in r["retrieved"]} or {"none": 0.0}
    ref = pytrec_eval.RelevanceEvaluator(qrels, MEASURES).evaluate(run)
    # trec_eval -c: every qrels topic counts; one without results scores 0 on every measure, num_rel kept
    for q in ("q01", "q02"):
        assert q not in ref and q in qrels
        rows = {(m, k): (v, d, s) for m, k, v, d, s in qm.filter(pl.col("question_id") == q).select(
            "metric", "k", "value", "denominator", "status").iter_rows()}
        assert rows[("recall", 5)] == (0.0, float(len(qrels[q])), "ok")
        assert rows[("num_rel", None)][0] == float(len(qrels[q])) and rows[("num_ret", None)][0] == 0.0
        assert rows[("ndcg_cut", 10)][0] == 0.0 and rows[("map", None)][0] == 0.0
        assert rows[("claim_evidence_availability", 5)][1] is not None  # scored too, not left out
    summary = pl.read_parquet(out / "metric_summary.parquet").filter(
        (pl.col("system") == "team_rag") & (pl.col("split") == "all") & (pl.col("segment") == "all"))
    # q24's run errored: reported apart (run_error), in no mean; the missing q01 and q02 add 0 (-c)
    errored = {"q24"}
    for name, metric, k in (("recall_5", "recall", 5), ("ndcg_cut_10", "ndcg_cut", 10), ("map", "map", None)):
        want = sum(ref[q][name] for q in ref if q in qrels and q not in errored) / (len(qrels) - len(errored))
        row = summary.filter((pl.col("metric") == metric) & (pl.col("k").is_null() if k is None else pl.col("k") == k)
                             & (pl.col("level") == "chunk"))
        assert row["n"][0] - row["n_not_evaluable"][0] == len(qrels) - len(errored)
        assert row["value"][0] == pytest.approx(want, abs=1e-12), name


def test_without_complete_a_missing_question_still_fails_the_check(tmp_path) -> None:
    config = _config(tmp_path, complete=False)
    raw = yaml.safe_load(config.read_text())
    log = _without(SAMPLE_DIR / "runs" / "team_rag.jsonl", tmp_path / "team_rag.jsonl", {"q01"})
    for s in raw["systems"]:
        if s["kind"] == "logged":
            s["path"] = str(log)
    config.write_text(yaml.safe_dump(raw))
    result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(tmp_path / "out")),
                            selection=dg.AssetSelection.assets("corpus_snapshot", "golden_set", "rag_runs"),
                            raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    check = [e for e in result.get_asset_check_evaluations() if e.check_name == "every_question_has_a_run_row"][0]
    assert not check.passed and check.metadata["missing_question_ids"].value == {"team_rag": ["q01"]}
    assert check.metadata["allowed_missing_questions"].value == 0
