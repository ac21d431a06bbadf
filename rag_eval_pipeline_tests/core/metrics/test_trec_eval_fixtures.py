"""Retrieval metrics against trec_eval 10.0's own expected outputs (``test/out.*`` of
``usnistgov/trec_eval``, in ../shared/datasets/trec_eval_fixtures; see its PROVENANCE.md for the
command line behind each file). Every per-topic and ``all`` value of every measure we implement
must print the same 4 decimals, and the command line must print the same lines byte for byte."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from rag_eval_pipeline.core.metrics.retrieval import (
    CUT_MEASURES,
    DEFAULT_MEASURES,
    retrieval_question_metrics,
    trec_eval_aggregate,
    trec_name,
)
from rag_eval_pipeline.core.sources.trec import read_trec_qrels, read_trec_run
from rag_eval_pipeline.trec_eval import main

# (expected output, qrels, run, complete (-c), rel_level (-l))
CASES = {
    "aq": ("out.test.aq", "qrels.test", "results.test", False, 1),
    "aqc": ("out.test.aqc", "qrels.test", "results.trunc", True, 1),
    "aql": ("out.test.aql", "qrels.rel_level", "results.test", False, 2),
}
OURS = ("num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank", "P", "recall",
        "ndcg_cut", "success", "num_q", "runid")


@pytest.fixture(scope="module")
def fixtures(datasets_dir: Path) -> Path:
    d = datasets_dir / "trec_eval_fixtures" / "test"
    if not d.is_dir():
        pytest.skip(f"{d} not present")
    return d


def parse_out(path: Path) -> dict[tuple[str, str], str]:
    """(printed measure name, topic) -> printed value, for trec_eval's output format."""
    out = {}
    for line in path.read_text().splitlines():
        name, topic, value = line.split("\t")
        out[(name.strip(), topic)] = value
    return out


def base_of(name: str) -> tuple[str, int | None]:
    for m in CUT_MEASURES:
        if name.startswith(m + "_") and name[len(m) + 1:].isdigit():
            return m, int(name[len(m) + 1:])
    return name, None


def ours_lines(ref: dict[tuple[str, str], str]) -> dict[tuple[str, str], str]:
    return {key: v for key, v in ref.items() if base_of(key[0])[0] in OURS}


@pytest.mark.parametrize("case", sorted(CASES))
def test_per_topic_and_average_match_trec_eval(fixtures: Path, case: str) -> None:
    out_file, qrels_file, run_file, complete, rel_level = CASES[case]
    ref = ours_lines(parse_out(fixtures / out_file))
    ks = sorted({base_of(n)[1] for n, _ in ref if base_of(n)[1] is not None})
    qrels = read_trec_qrels(fixtures / qrels_file)
    run = read_trec_run(fixtures / run_file, system="STANDARD")
    ev = retrieval_question_metrics(run, qrels, ks=ks, measures=[*DEFAULT_MEASURES, "bpref"], mode="trec_eval",
                                    rel_level=rel_level, complete=complete)
    pq = ev.per_question
    ours: dict[tuple[str, str], float] = {}
    for qid, metric, k, value in pq.select("question_id", "metric", "k", "value").iter_rows():
        ours[(trec_name(metric, k), qid)] = 0.0 if value is None else value  # trec_eval prints 0
    for row in trec_eval_aggregate(pq).iter_rows(named=True):
        ours[(trec_name(row["metric"], row["k"]), "all")] = row["value"]

    checked = 0
    for (name, topic), want in ref.items():
        if name == "runid":
            assert want == "STANDARD"
            continue
        assert (name, topic) in ours, f"{case}: we print no {name} for {topic}"
        got = ours[(name, topic)]
        text = str(int(round(got))) if name in ("num_q", "num_ret", "num_rel", "num_rel_ret") else f"{got:6.4f}"
        assert text == want, f"{case}: {name} {topic}: ours {got!r} -> {text}, trec_eval {want}"
        checked += 1
    assert checked >= 140  # 3 topics x 48 measures + all; guards against an empty comparison
    if complete:  # -c: topic 302 has no results and is scored as an empty ranking
        assert ev.missing_questions.to_dicts() == [{"system": "STANDARD", "question_id": "302"}]


def test_no_relevant_topic_is_null_per_question_but_zero_in_trec_average(fixtures: Path) -> None:
    # with -l5 no document of qrels.rel_level is relevant: every binary measure is null per topic,
    # trec_eval's average treats them as 0, nDCG still has gains (rel_level is not applied to it)
    qrels = read_trec_qrels(fixtures / "qrels.rel_level")
    run = read_trec_run(fixtures / "results.test")
    pq = retrieval_question_metrics(run, qrels, ks=(5,), mode="trec_eval", rel_level=5).per_question
    rec = pq.filter(pl.col("metric") == "recall")
    assert rec["value"].null_count() == 3 and set(rec["status"]) == {"no_relevant"}
    ndcg = pq.filter(pl.col("metric") == "ndcg_cut")
    assert ndcg["value"].null_count() == 0
    agg = trec_eval_aggregate(pq)
    assert agg.filter(pl.col("metric") == "recall")["value"].to_list() == [0.0]


def run_cli(capsys, args: list[str]) -> list[str]:
    assert main(args) == 0
    return capsys.readouterr().out.splitlines()


def expected_lines(path: Path, names: set[str]) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.split("\t")[0].strip() in names]


@pytest.mark.parametrize("flags, qrels, run, out", [
    (["-q", "-m", "all_trec"], "qrels.test", "results.test", "out.test.aq"),
    (["-m", "all_trec"], "qrels.test", "results.test", "out.test.a"),
    (["-q", "-c", "-m", "all_trec"], "qrels.test", "results.trunc", "out.test.aqc"),
    (["-q", "-l2", "-m", "all_trec"], "qrels.rel_level", "results.test", "out.test.aql"),
    ([], "qrels.test", "results.test", "out.test"),
    ([], "qrels.test.with-comments", "results.test", "out.test"),
    ([], "qrels.comment.test", "results.comment.test", "out.comment.test"),
    (["-q", "-m", "P.5,7,3", "-m", "recall.20,2000", "-mndcg_cut.10,20,23.4", "-msuccess.2,5,20"],
     "qrels.test", "results.test", "out.test.meas_params"),
])
def test_cli_prints_trec_eval_lines(fixtures: Path, capsys, flags, qrels, run, out) -> None:
    got = run_cli(capsys, flags + [str(fixtures / qrels), str(fixtures / run)])
    names = {line.split("\t")[0].strip() for line in got}
    want = expected_lines(fixtures / out, names)
    assert got == want
    assert len(got) >= 15


def test_cli_default_prints_every_official_measure_we_implement(fixtures: Path, capsys) -> None:
    got = run_cli(capsys, [str(fixtures / "qrels.test"), str(fixtures / "results.test")])
    assert [line.split("\t")[0].strip() for line in got][:6] == ["runid", "num_q", "num_ret", "num_rel",
                                                                  "num_rel_ret", "map"]
    assert got[0] == "runid                 \tall\tSTANDARD"
    assert got[1] == "num_q                 \tall\t3"


def test_cli_errors(fixtures: Path, tmp_path: Path, capsys) -> None:
    assert main(["-m", "infAP", str(fixtures / "qrels.test"), str(fixtures / "results.test")]) == 2
    assert "illegal measure 'infAP'" in capsys.readouterr().err
    # an unknown measure is a usage error (exit 2, as every other bad input) with the closest name offered:
    # difflib's ratio of "mapp" to "map" is 2*3/7 = 0.857 >= 0.6
    assert main(["-m", "mapp", str(fixtures / "qrels.test"), str(fixtures / "results.test")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trec_eval: illegal measure 'mapp' (mapp: did you mean 'map'?) (implemented: ")
    bad = tmp_path / "bad.run"
    bad.write_text("301 Q0 doc1 1 2.5 run\n301 Q0 doc2 2\n")
    assert main([str(fixtures / "qrels.test"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.run" in err and "line 2" in err and "'score'" in err
    other = tmp_path / "other.run"
    other.write_text("999 Q0 doc1 1 2.5 run\n")
    assert main([str(fixtures / "qrels.test"), str(other)]) == 7
