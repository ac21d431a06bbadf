"""Content fingerprints of the files a configuration reads its offline systems from.

The sensor that starts ``quick_evaluation`` compares these between ticks: a ``logged`` system's log
or a ``traces`` source whose bytes changed (not merely its modification time) starts a run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rag_eval_pipeline.core.config import EvalConfig

WATCHED_KINDS = ("logged", "traces")
_SUFFIXES = (".jsonl", ".json", ".ndjson", ".parquet")


def fingerprint(path: Path) -> str:
    """sha256 hex of a file's bytes, or of a folder's (name, bytes) pairs for its trace/log files in
    name order; ``"missing"`` when the path does not exist."""
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix.lower() in _SUFFIXES)
    else:
        return "missing"
    h = hashlib.sha256()
    for p in files:
        h.update(p.name.encode() + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")
    return h.hexdigest()


def source_fingerprints(cfg: EvalConfig) -> dict[str, str]:
    """``{system name: fingerprint}`` for every ``logged`` and ``traces`` system of ``cfg`` (paths
    resolved against the configuration's folder)."""
    return {s["name"]: fingerprint(cfg.resolve(s["path"])) for s in cfg.systems if s["kind"] in WATCHED_KINDS}


def changed_systems(previous: dict[str, str], current: dict[str, str]) -> list[str]:
    """Names whose fingerprint differs between two ticks (added and removed systems included), sorted."""
    return sorted(n for n in set(previous) | set(current) if previous.get(n) != current.get(n))
