"""The sample as the deployment tests configure it."""

from pathlib import Path

from rag_eval_pipeline_tests.conftest import SAMPLE_DIR


def sample_suites_file(folder: Path) -> Path:
    """A suites file listing only the sample, nightly (the public-dataset suites would take minutes)."""
    path = folder / "suites.yaml"
    path.write_text(f"suites:\n  sample:\n    config: {SAMPLE_DIR / 'config.yaml'}\n    nightly: true\n"
                    "    description: the embedded sample\n", encoding="utf-8")
    return path
