"""``python -m rag_eval_pipeline.trec_eval``: trec_eval's measure syntax, the printed names the README uses,
several measures after one ``-m``, full-depth ``ndcg`` against pytrec_eval, and the help text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from rag_eval_pipeline.trec_eval import main

pytrec_eval = pytest.importorskip("pytrec_eval")


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path, dict, dict]:
    rng = random.Random(11)
    qrels: dict[str, dict[str, int]] = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(8):
        qid = f"q{q}"
        qrels[qid] = {f"d{d}": rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(range(60), 12)}
        run[qid] = {f"d{d}": round(rng.uniform(0, 10), 2) for d in rng.sample(range(60), 40)}
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text("".join(f"{q} 0 {d} {g}\n" for q, dd in qrels.items() for d, g in dd.items()))
    lines = []
    for q, dd in run.items():
        for rank, (d, s) in enumerate(sorted(dd.items(), key=lambda x: -x[1]), 1):
            lines.append(f"{q} Q0 {d} {rank} {s} mine\n")
    rpath.write_text("".join(lines))
    return qpath, rpath, qrels, run


def lines_of(capsys, args: list[str]) -> list[str]:
    assert main(args) == 0, capsys.readouterr().err
    return capsys.readouterr().out.splitlines()


def table(lines: list[str]) -> dict[tuple[str, str], str]:
    return {(n.strip(), q): v for n, q, v in (line.split("\t") for line in lines)}


def test_printed_names_and_trec_eval_syntax_agree(files, capsys) -> None:
    qrels, run, _, _ = files
    dotted = lines_of(capsys, ["-q", "-m", "ndcg_cut.10", str(qrels), str(run)])
    printed = lines_of(capsys, ["-q", "-m", "ndcg_cut_10", str(qrels), str(run)])
    alias = lines_of(capsys, ["-q", "-m", "ndcg@10", str(qrels), str(run)])
    assert dotted == printed == alias and len(dotted) == 9 and dotted[0].startswith("ndcg_cut_10 ")
    two = lines_of(capsys, ["-m", "P.5,10", str(qrels), str(run)])
    assert two == lines_of(capsys, ["-m", "P_5", "P_10", str(qrels), str(run)])
    assert [line.split("\t")[0].strip() for line in two] == ["P_5", "P_10"]


def test_several_measures_after_one_m_and_full_depth_ndcg_match_pytrec_eval(files, capsys) -> None:
    qrels, run, qd, rd = files
    got = table(lines_of(capsys, ["-q", "-m", "ndcg_cut_10", "recall_100", "-m", "ndcg", str(qrels), str(run)]))
    ref = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "recall.100", "ndcg"}).evaluate(rd)
    assert {name for name, _ in got} == {"ndcg_cut_10", "recall_100", "ndcg"}
    for q, values in ref.items():
        for name in ("ndcg_cut_10", "recall_100", "ndcg"):
            assert got[(name, q)] == f"{values[name]:6.4f}", (name, q)
    for name in ("ndcg_cut_10", "recall_100", "ndcg"):
        mean = sum(v[name] for v in ref.values()) / len(ref)
        assert got[(name, "all")] == f"{mean:6.4f}", name


def test_full_depth_ndcg_matches_trec_evals_own_output(datasets_dir: Path, capsys) -> None:
    d = datasets_dir / "trec_eval_fixtures" / "test"
    if not d.is_dir():
        pytest.skip(f"{d} not present")
    got = lines_of(capsys, ["-q", "-m", "ndcg", str(d / "qrels.test"), str(d / "results.test")])
    want = [line for line in (d / "out.test.aq").read_text().splitlines() if line.split("\t")[0].strip() == "ndcg"]
    assert got == want and len(want) == 4


def test_gain_parameters_and_unknown_names_are_errors(files, capsys) -> None:
    qrels, run, _, _ = files
    assert main(["-m", "ndcg.1=3.5", str(qrels), str(run)]) == 2  # a usage error, as every other bad input
    assert "gain parameters are not implemented" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:  # not a measure, so a third file name: a usage error
        main(["-m", "ndcg_cut_10", "bogus_measure", str(qrels), str(run)])
    assert exit_.value.code == 2 and "unrecognized arguments" in capsys.readouterr().err


def test_help_states_the_default_ranking_mode(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "ranking mode (default: trec_eval)" in text
    assert "-m ndcg_cut_10 recall_100" in text
