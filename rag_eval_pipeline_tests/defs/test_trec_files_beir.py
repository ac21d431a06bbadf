"""The TREC export of a BEIR corpus (one chunk per document) is written in the dataset's document ids."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import yaml

from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources


def test_beir_export_uses_document_ids(tmp_path: Path) -> None:
    root = tmp_path / "mini"
    (root / "qrels").mkdir(parents=True)
    docs = [{"_id": "d1", "title": "Red apples", "text": "Apples are red fruit."},
            {"_id": "d2", "title": "Green pears", "text": "Pears are green fruit."},
            {"_id": "d3", "title": "Blue sky", "text": "The sky is blue."}]
    (root / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (root / "queries.jsonl").write_text(json.dumps({"_id": "1", "text": "red apples"}) + "\n"
                                        + json.dumps({"_id": "2", "text": "blue sky"}) + "\n")
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n2\td3\t2\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({
        "corpus": {"source": "beir", "path": str(root), "split": "test"},
        "systems": [{"name": "bm25", "kind": "reference",
                     "retriever": {"type": "bm25", "language": "english", "stopwords": "en", "k": 3},
                     "generator": {"type": "extractive", "abstain_threshold": 0.5, "context_k": 3}}],
        "metrics": {"ks": [1, 3]}, "gates": {"split": "test", "thresholds": []},
    }))
    out = tmp_path / "out"
    selection = dg.AssetSelection.assets("corpus_snapshot", "golden_set", "rag_runs", "trec_files")
    result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(config), str(out)), selection=selection,
                            raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    md = result.asset_materializations_for_node("trec_files")[0].metadata
    assert md["docno"].value == "doc_id (one chunk per document)"
    assert (out / "trec" / "qrels.txt").read_text() == "1 0 d1 1\n2 0 d3 2\n"  # BEIR's own ids and grades
    lines = [line.split() for line in (out / "trec" / "bm25.run").read_text().splitlines()]
    assert lines and {docno for _, _, docno, *_ in lines} <= {"d1", "d2", "d3"}
    assert [docno for q, _, docno, rank, *_ in lines if rank == "1"] == ["d1", "d3"]
