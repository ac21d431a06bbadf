"""The promoted baseline's checks (``core/baseline.py``): hashes that cannot be switched off, checked tables."""

import json

import pyarrow.parquet as pq
import pytest

from rag_eval_pipeline.core import tables
from rag_eval_pipeline.core.baseline import (
    BASELINE_DIR,
    MANIFEST_VERSION,
    BaselineDamaged,
    file_sha256,
    read_baseline,
    with_file_hashes,
)
from rag_eval_pipeline.core.storage import write_parquet_atomic

NAMES = ("metric_summary", "question_metrics", "rag_runs")


def promote(folder, record=True):
    """A baseline as the promotion asset leaves it: three tables, the manifest with hashes, its copy in
    promotion.json."""
    base = folder / BASELINE_DIR
    for name in NAMES:
        write_parquet_atomic(tables.empty(name), base / f"{name}.parquet", name)
    manifest = with_file_hashes({"system": "bm25_k10", "run_id": "r1", "promoted_at": "2026-12-01T00:00:00"}, folder)
    (base / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    if record:
        (folder / "promotion.json").write_text(json.dumps(manifest), encoding="utf-8")
    return manifest


def rewrite(folder, manifest):
    (folder / BASELINE_DIR / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")


def test_a_promoted_baseline_reads_and_records_its_manifest_version(tmp_path):
    manifest = promote(tmp_path)
    assert manifest["manifest_version"] == MANIFEST_VERSION == 1
    assert sorted(manifest["files"]) == ["metric_summary.parquet", "question_metrics.parquet", "rag_runs.parquet"]
    got = read_baseline(tmp_path)
    assert got.manifest["system"] == "bm25_k10" and got.metric_summary.columns == list(tables.SCHEMAS["metric_summary"])


@pytest.mark.parametrize("record", [True, False])
def test_deleting_files_from_the_manifest_does_not_turn_the_hash_check_off(tmp_path, record):
    manifest = promote(tmp_path, record=record)
    (tmp_path / BASELINE_DIR / "rag_runs.parquet").write_bytes(b"garbage")  # edited by hand
    rewrite(tmp_path, {k: v for k, v in manifest.items() if k != "files"})
    with pytest.raises(BaselineDamaged, match="'files' .* is missing, not an object or lacks a table"):
        read_baseline(tmp_path)
    rewrite(tmp_path, {**manifest, "files": ["not", "an", "object"]})
    with pytest.raises(BaselineDamaged, match="'files'"):
        read_baseline(tmp_path)


def test_removing_files_and_manifest_version_is_caught_by_promotion_json(tmp_path):
    manifest = promote(tmp_path)
    rewrite(tmp_path, {k: v for k, v in manifest.items() if k not in ("files", "manifest_version")})
    with pytest.raises(BaselineDamaged, match="'files'"):
        read_baseline(tmp_path)


def test_hashes_rewritten_to_match_an_edited_table_differ_from_promotion_json(tmp_path):
    manifest = promote(tmp_path)
    path = tmp_path / BASELINE_DIR / "metric_summary.parquet"
    pq.write_table(pq.read_table(path), path)  # other bytes (no zstd), same rows
    files = {**manifest["files"], "metric_summary.parquet": file_sha256(path)}
    rewrite(tmp_path, {**manifest, "files": files})
    with pytest.raises(BaselineDamaged, match="differ from those .*promotion.json recorded for the same promotion"):
        read_baseline(tmp_path)


def test_a_manifest_from_before_hashes_is_still_read(tmp_path):
    manifest = promote(tmp_path, record=False)
    rewrite(tmp_path, {k: v for k, v in manifest.items() if k not in ("files", "manifest_version")})
    (tmp_path / BASELINE_DIR / "rag_runs.parquet").unlink()  # not read by the gate: not required then
    assert read_baseline(tmp_path).manifest["system"] == "bm25_k10"


def test_a_newer_manifest_or_table_version_is_refused(tmp_path):
    manifest = promote(tmp_path)
    rewrite(tmp_path, {**manifest, "manifest_version": 2})
    with pytest.raises(BaselineDamaged, match="manifest_version 2, this pipeline reads version 1 .*newer release"):
        read_baseline(tmp_path)
    # a table whose footer says schema version 99, hashes recorded for those very bytes
    manifest = promote(tmp_path)
    path = tmp_path / BASELINE_DIR / "metric_summary.parquet"
    table = pq.read_table(path)
    meta = {**table.schema.metadata, b"rag_eval.schema_version": b"99"}
    pq.write_table(table.replace_schema_metadata(meta), path)
    manifest = with_file_hashes({k: v for k, v in manifest.items() if k != "files"}, tmp_path)
    rewrite(tmp_path, manifest)
    (tmp_path / "promotion.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(BaselineDamaged, match=f"schema version 99, this pipeline reads version "
                       f"{tables.spec_of('metric_summary').version}"):
        read_baseline(tmp_path)
