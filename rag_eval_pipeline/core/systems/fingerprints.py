"""Content fingerprints of the files a configuration reads its systems from.

The sensor that starts ``quick_evaluation`` compares these between ticks: a file that a system kind
``watches`` (a ``logged`` system's log, a ``traces`` source) whose bytes changed (not merely its
modification time) starts a run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rag_eval_pipeline.core.config import EvalConfig
from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS, fingerprint

__all__ = ["changed_systems", "fingerprint", "source_fingerprints", "watched_paths"]


def watched_paths(cfg: EvalConfig) -> dict[str, list[Path]]:
    """``{system name: [absolute paths]}`` for every system whose kind watches files (empty lists left out)."""
    out = {}
    for s in cfg.systems:
        paths = [cfg.resolve(p) for p in SYSTEM_KINDS.get(s.kind).watches(s)]
        if paths:
            out[s.name] = paths
    return out


def source_fingerprints(cfg: EvalConfig) -> dict[str, str]:
    """``{system name: fingerprint}`` for every system whose kind watches files: the sha256 of its one
    file or folder (:func:`fingerprint`), or of its files' fingerprints when it watches several."""
    out = {}
    for name, paths in watched_paths(cfg).items():
        prints = [fingerprint(p) for p in paths]
        out[name] = prints[0] if len(prints) == 1 else hashlib.sha256("\0".join(prints).encode()).hexdigest()
    return out


def changed_systems(previous: dict[str, str], current: dict[str, str]) -> list[str]:
    """Names whose fingerprint differs between two ticks (added and removed systems included), sorted."""
    return sorted(n for n in set(previous) | set(current) if previous.get(n) != current.get(n))
