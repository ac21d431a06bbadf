"""``rag-eval compare A B`` in real subprocesses, on the sample's tables (offline: no server, no network)."""

import datetime as dt
import json
import re
import shutil
import subprocess
import sys

import polars as pl
import pytest

from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home


def _cli(args, env, timeout=300):
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def sample_outputs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("compare")
    out = tmp / "out"
    env = cli_env(dagster_home(tmp), RAG_EVAL_OUTPUT_DIR=str(out))
    proc = _cli(["run"], env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return env, out / "sample", tmp


def _metric_line(stdout: str, label: str) -> list[str]:
    line = next(x for x in stdout.splitlines() if x.startswith(label + " "))
    return line.split()


def test_baseline_against_a_system_of_the_latest_run(sample_outputs):
    env, folder, _tmp = sample_outputs
    proc = _cli(["compare", "baseline", "system:team_rag", "--permutations", "2000"], env)
    assert proc.returncode == 0, proc.stderr
    manifest = json.loads((folder / "baseline" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["system"] == "bm25_k10"  # promoted by the run (gates.promote of the sample)
    summary = pl.read_parquet(folder / "metric_summary.parquet").filter(
        (pl.col("split") == "all") & (pl.col("segment") == "all") & (pl.col("metric") == "recall")
        & (pl.col("k") == 5))
    a = summary.filter(pl.col("system") == "bm25_k10")["value"][0]
    b = summary.filter(pl.col("system") == "team_rag")["value"][0]
    # A, B and diff are over the questions both sides have a value for (the paired test's), worked out here with
    # plain Python from question_metrics; each side's own mean (the summary's) is printed apart, labelled "own"
    per_q = pl.read_parquet(folder / "question_metrics.parquet").filter(
        (pl.col("metric") == "recall") & (pl.col("k") == 5) & pl.col("value").is_not_null())
    qa, qb = ({r["question_id"]: r["value"] for r in per_q.filter(pl.col("system") == s).iter_rows(named=True)}
              for s in ("bm25_k10", "team_rag"))
    shared = set(qa) & set(qb)
    line = next(x for x in proc.stdout.splitlines() if x.startswith("recall_5 "))
    _label, va, vb, diff, *_rest = line.split()
    assert float(va) == pytest.approx(sum(qa[q] for q in shared) / len(shared), abs=5e-5)
    assert float(vb) == pytest.approx(sum(qb[q] for q in shared) / len(shared), abs=5e-5)
    assert float(diff) == pytest.approx(sum(qb[q] - qa[q] for q in shared) / len(shared), abs=1e-4)
    if (len(qa), len(qb)) != (len(shared), len(shared)):
        assert f" {len(shared)} (A {len(qa)}, B {len(qb)}) " in line
        assert f"(own: A {a:.4f} n {len(qa)}, B {b:.4f} n {len(qb)})" in line
    else:
        assert float(va) == pytest.approx(a, abs=5e-5) and float(vb) == pytest.approx(b, abs=5e-5)
    page = folder / "compare" / "compare-baseline--system-team_rag.html"
    assert f"comparison: {page}" in proc.stdout and page.is_file()
    html = page.read_text(encoding="utf-8")
    assert "ZX-INTERNAL-7731" not in html  # the support-staff chunk of the sample corpus
    # question by question: the first card is a regression, and the per-question values are the tables'
    qm = pl.read_parquet(folder / "question_metrics.parquet")
    first = re.search(r'<section id="cq-([^"]+)" class="card"><h4>\1 — (regressed|improved): (\S+) ([-+]\d\.\d{4})',
                      html)
    assert first and first.group(2) == "regressed"
    q, label, change = first.group(1), first.group(3), float(first.group(4))
    metric, k = (label.rsplit("_", 1)[0], int(label.rsplit("_", 1)[1])) if label[-1].isdigit() else (label, None)
    sel = (pl.col("question_id") == q) & (pl.col("metric") == metric) & (
        pl.col("k").is_null() if k is None else pl.col("k") == k)
    va = qm.filter(sel & (pl.col("system") == "bm25_k10"))["value"][0]
    vb = qm.filter(sel & (pl.col("system") == "team_rag"))["value"][0]
    lower_better = metric in ("false_abstention_rate", "answer_without_evidence_rate", "contradicted_claim_rate",
                              "judge_error_rate", "run_error_rate", "quote_downgrade_rate", "abstention_with_evidence")
    assert change == pytest.approx((va - vb) if lower_better else (vb - va), abs=1e-4) and change < 0
    # the terminal's largest regressions: B - A (the diff column's sign), read back from question_metrics; a
    # lower-is-better rate that rises shows +, a higher-is-better one that falls shows -; each is labelled worse
    listed = re.search(r"^largest regressions \(B - A\): (.*)$", proc.stdout, flags=re.M)
    assert listed, proc.stdout[-2000:]
    items = re.findall(r"(\S+) \((\S+) (\d\.\d{4}) -> (\d\.\d{4}): ([-+]\d\.\d{4}), worse\)", listed.group(1))
    assert items and len(items) == listed.group(1).count("worse)")
    for q, label, sa, sb, sd in items:
        metric, k = (label.rsplit("_", 1)[0], int(label.rsplit("_", 1)[1])) if label[-1].isdigit() else (label, None)
        sel = (pl.col("question_id") == q) & (pl.col("metric") == metric) & (
            pl.col("k").is_null() if k is None else pl.col("k") == k)
        va = qm.filter(sel & (pl.col("system") == "bm25_k10"))["value"][0]
        vb = qm.filter(sel & (pl.col("system") == "team_rag"))["value"][0]
        assert (float(sa), float(sb)) == (pytest.approx(va, abs=5e-5), pytest.approx(vb, abs=5e-5))
        assert float(sd) == pytest.approx(vb - va, abs=1e-4)
        lower = metric in ("false_abstention_rate", "answer_without_evidence_rate", "contradicted_claim_rate",
                           "judge_error_rate", "run_error_rate", "quote_downgrade_rate", "abstention_with_evidence")
        assert (float(sd) > 0) if lower else (float(sd) < 0)


def test_a_night_of_the_history_and_another_folder(sample_outputs):
    env, folder, tmp = sample_outputs
    today = dt.datetime.now(dt.UTC).date().isoformat()
    proc = _cli(["compare", f"night:{today}", "system:team_rag", "--permutations", "200"], env)
    assert proc.returncode == 0, proc.stderr
    assert "0 question(s) changed, 0 with a regression" in proc.stdout  # the same run's team_rag on both sides
    copy = tmp / "copy"
    shutil.copytree(folder, copy)
    proc = _cli(["compare", f"dir:{copy}:bm25_k5", "system:bm25_k10", "--permutations", "200", "--out",
                 str(tmp / "pages")], env)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp / "pages").glob("compare-dir-*--system-bm25_k10.html"))


@pytest.mark.parametrize("sides, code, needle", [
    (["system:nosuch", "system:team_rag"], 2, "no system 'nosuch'"),
    (["night:1999-01-01", "system:team_rag"], 2, "no full run on the night of 1999-01-01"),
    (["week:1", "baseline"], 2, "cannot read side 'week:1'"),
    # a typo of --metric used to give an empty question table, silently
    (["baseline", "system:team_rag", "--metric", "recal_5"], 2,
     "--metric 'recal_5' is not a per-question metric of these runs; expected one of ["),
])
def test_sides_that_do_not_resolve_are_one_line_and_exit_2(sample_outputs, sides, code, needle):
    env, _folder, _tmp = sample_outputs
    proc = _cli(["compare", *sides], env)
    assert proc.returncode == code, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in proc.stderr


def test_a_folder_without_tables_is_a_data_error(sample_outputs):
    env, _folder, tmp = sample_outputs
    empty = tmp / "empty"
    empty.mkdir(exist_ok=True)
    proc = _cli(["compare", f"dir:{empty}:bm25_k5", "system:bm25_k10"], env)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"rag-eval compare: {empty / 'metric_summary.parquet'}: not found: the metric summary (run rag-eval run "
        "first, or check the folder)"]


def test_a_split_typo_is_refused_by_the_parser(sample_outputs):
    # --split tset used to compare nothing and print empty tables, exit 0
    env, _folder, tmp = sample_outputs
    pages = tmp / "split-pages"
    proc = _cli(["compare", "baseline", "system:team_rag", "--split", "tset", "--out", str(pages)], env)
    assert proc.returncode == 2 and "invalid choice: 'tset'" in proc.stderr and "Traceback" not in proc.stderr
    assert not pages.exists()


def test_a_configuration_that_does_not_load_is_a_usage_error_never_a_default_reader(sample_outputs):
    # the pages used to be written for the default viewer group "customers", whatever the suite's readers are
    env, folder, tmp = sample_outputs
    bad = tmp / "bad.yaml"
    bad.write_text("corpus: {source: documents_dir, path: nowhere}\nsystems: []\n", encoding="utf-8")
    pages = tmp / "bad-pages"
    proc = _cli(["compare", "baseline", "system:team_rag", "--config", str(bad), "--output", str(folder),
                 "--out", str(pages)], env)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rag-eval: {bad}") and "corpus.path" in lines[0]
    assert "Traceback" not in proc.stderr and not pages.exists()
