"""Shared fixtures. Public datasets are read from ../shared/datasets, never copied in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SAMPLE_DIR = REPO_ROOT / "data" / "sample"


def _datasets_root() -> Path:
    return Path(os.environ.get("RAG_EVAL_DATASETS", REPO_ROOT.parent / "shared" / "datasets"))


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """The shared public datasets folder: skipped when absent, a failure when CI is set."""
    root = _datasets_root()
    if not root.is_dir():
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but the shared datasets folder {root} is missing")
        pytest.skip(f"shared datasets folder {root} not present")
    return root


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    return SAMPLE_DIR
