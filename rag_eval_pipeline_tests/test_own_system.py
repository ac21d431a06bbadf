"""A new user's own system, not the sample: ``rag-eval init`` on a folder of chunks (chunked by the team's own
rule, with its own ids), a golden set judged per document and a run log in other ids, then ``check`` and
``run`` succeed, through the real command line (``fixtures/own_system/README.md``)."""

import json
import shutil
import subprocess
import sys

import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.pipeline import doc_id_systems
from rag_eval_pipeline_tests.conftest import REPO_ROOT, SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import cli_env, dagster_home

OWN = REPO_ROOT / "rag_eval_pipeline_tests" / "fixtures" / "own_system"


def _cli(args, env, timeout=600):
    return subprocess.run([sys.executable, "-m", "rag_eval_pipeline.cli", *args], env=env, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_init_check_run_on_a_folder_that_is_not_the_sample(tmp_path):
    folder = tmp_path / "pedalo"
    shutil.copytree(OWN, folder)
    out = tmp_path / "outputs"
    env = cli_env(dagster_home(tmp_path), RAG_EVAL_OUTPUT_DIR=str(out))

    proc = _cli(["init", str(folder)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = folder / "config.yaml"
    assert f"  rag-eval check --config {folder}/config.yaml" in proc.stdout
    assert f"  rag-eval estimate --config {folder}/config.yaml" in proc.stdout
    assert f"  rag-eval run --config {folder}/config.yaml" in proc.stdout
    raw = yaml.safe_load(config.read_text(encoding="utf-8"))
    assert raw["corpus"] == {"source": "chunks", "path": "chunks.jsonl"}
    assert raw["golden"] == {"path": "golden.jsonl"}
    assert raw["systems"] == [{"name": "team_log", "kind": "logged", "path": "team_log.jsonl",
                               "chunk_map": {"strip_prefix": "kb/"}}]  # found from the ids, asked nothing
    examples = [json.loads(x) for x in (folder / "golden.example.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [e["answerability"] for e in examples] == ["answerable", "absent", "clarify"]
    assert examples[0]["relevant"][0]["chunk_id"].startswith("pedalo-kb-")  # the corpus's own ids
    assert _cli(["init", str(folder)], env).returncode == 2  # never overwrites a config.yaml without --force

    proc = _cli(["check", "--config", str(config)], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "golden set: 12 questions, relevance judged per document" in proc.stdout
    assert "system team_log (logged): id mapping: by prefix 30" in proc.stdout

    proc = _cli(["run", "--config", str(config)], env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "(full_evaluation): succeeded" in proc.stdout
    assert "recip_rank (doc)" in proc.stdout
    assert "  system team_log: 1 of 12 questions failed (8%): generator returned HTTP 504 after 30 s \u00d7 1" \
        in proc.stdout
    (suite_dir,) = [p for p in out.iterdir() if p.name.startswith("adhoc_config_")]
    qm = pl.read_parquet(suite_dir / "question_metrics.parquet").filter(pl.col("metric") == "recip_rank")
    by_q = {q: (v, s) for q, v, s in qm.select("question_id", "value", "status").iter_rows()}
    # by hand: p03 retrieved pricing-2024 (judged 0) then pricing-2025 (2): 1/2; p05 pricing-2025, insurance: 1/2
    assert by_q["p03"] == (0.5, "ok") and by_q["p05"] == (0.5, "ok") and by_q["p01"] == (1.0, "ok")
    assert by_q["p10"] == (None, "run_error")  # its run errored: reported apart, not an empty retrieval
    assert set(qm["level"]) == {"doc"}  # relevance is judged per document only
    assert (suite_dir / "trec" / "team_log.doc.run").is_file() and (suite_dir / "trec" / "qrels_doc.txt").is_file()


def test_init_on_a_documents_folder_and_logs_in_other_ids(tmp_path, capsys):
    """Documents chunked here (ids doc_id#n): a log in those ids needs no map, a log of document ids gets
    ``doc_ids: true``, a log of opaque ids with a map file beside gets the file, passages as text are aligned."""
    folder = tmp_path / "team"
    shutil.copytree(SAMPLE_DIR / "corpus", folder / "docs")
    shutil.copyfile(SAMPLE_DIR / "golden.jsonl", folder / "questions.jsonl")
    log = [json.loads(x) for x in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()]

    def write(name, rows):
        (folder / name).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")

    write("a_same_ids.jsonl", log)
    write("b_doc_ids.jsonl", [{**r, "citations": [], "retrieved": [
        {"chunk_id": d} for d in dict.fromkeys(h["chunk_id"].rsplit("#", 1)[0] for h in r["retrieved"])]}
        for r in log])
    chunk_ids = sorted({h["chunk_id"] for r in log for h in r["retrieved"]})
    write("c_opaque.jsonl", [{**r, "citations": [], "retrieved": [{"chunk_id": f"x{chunk_ids.index(h['chunk_id'])}"}
                                                                  for h in r["retrieved"]]} for r in log])
    write("ids.jsonl", [{"document_id": f"x{i}", "chunk_id": c} for i, c in enumerate(chunk_ids)])
    write("d_texts.jsonl", [{**r, "retrieved": [{"text": "some passage"} for _ in r["retrieved"]]} for r in log])
    assert main(["init", str(folder)]) == 0
    printed = capsys.readouterr().out
    raw = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))
    assert raw["corpus"]["source"] == "documents_dir" and raw["corpus"]["path"] == "docs"
    assert raw["golden"]["path"] == "questions.jsonl"
    maps = {s["name"]: s.get("chunk_map") for s in raw["systems"]}
    assert maps == {"a_same_ids": None, "b_doc_ids": {"doc_ids": True}, "c_opaque": "ids.jsonl", "d_texts": None}
    assert "aligned to the corpus by text" in printed
    cfg = load_config(folder / "config.yaml")  # what init wrote loads
    assert [s.kind for s in cfg.systems] == ["logged"] * 4
    # only the document-id log is judged on whole documents (faithfulness, citations): core.pipeline.doc_id_systems
    assert doc_id_systems(cfg) == frozenset({"b_doc_ids"})


def test_init_refuses_a_folder_without_a_corpus(tmp_path, capsys):
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n', encoding="utf-8")
    assert main(["init", str(tmp_path)]) == 2
    assert "no corpus found" in capsys.readouterr().err
    assert not (tmp_path / "config.yaml").exists()
    assert main(["init", str(tmp_path / "missing")]) == 2


def test_init_writes_starter_gates_for_one_system(tmp_path, capsys):
    """One system and no baseline: init still writes gates (recall_5 and false_abstention_rate drops, no judge
    needed), commented, so a second run is compared with the first one's promoted baseline instead of passing
    "no gate configured" forever; a folder whose only log gives document ids against a chunk-judged golden set
    gets the recall gate commented out (it could never be computed) and keeps the abstention gate."""
    folder = tmp_path / "one"
    shutil.copytree(SAMPLE_DIR / "corpus", folder / "docs")
    shutil.copyfile(SAMPLE_DIR / "golden.jsonl", folder / "questions.jsonl")
    shutil.copyfile(SAMPLE_DIR / "runs" / "team_rag.jsonl", folder / "team_rag.jsonl")
    assert main(["init", str(folder)]) == 0
    capsys.readouterr()
    text = (folder / "config.yaml").read_text(encoding="utf-8")
    assert "# Starter gates on retrieval and abstention: neither needs a judge" in text
    cfg = load_config(folder / "config.yaml")
    got = [(t.metric, t.k, t.max_abs_drop, t.higher_is_better) for t in cfg.thresholds]
    assert got == [("recall", 5, 0.05, True), ("false_abstention_rate", None, 0.10, False)]
    assert cfg.baseline_system is None  # the first run's promotion becomes the baseline

    log = [json.loads(x) for x in (SAMPLE_DIR / "runs" / "team_rag.jsonl").read_text(encoding="utf-8").splitlines()]
    (folder / "team_rag.jsonl").write_text("".join(json.dumps({**r, "citations": [], "retrieved": [
        {"chunk_id": d} for d in dict.fromkeys(h["chunk_id"].rsplit("#", 1)[0] for h in r["retrieved"])]},
        ensure_ascii=False) + "\n" for r in log), encoding="utf-8")
    assert main(["init", "--force", str(folder)]) == 0
    text = (folder / "config.yaml").read_text(encoding="utf-8")
    assert "    # - {metric: recall_5, max_abs_drop: 0.05}   # needs relevant_docs in the golden set" in text
    assert [t.metric for t in load_config(folder / "config.yaml").thresholds] == ["false_abstention_rate"]
