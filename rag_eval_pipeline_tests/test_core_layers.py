"""Leaves stay leaves: a metric module does not pull in the report package, a judge type does not pull in the
system kinds (each was a layering inversion; the first closed an import cycle metrics -> report -> metrics)."""

import subprocess
import sys

import pytest

from rag_eval_pipeline_tests.conftest import REPO_ROOT


@pytest.mark.parametrize("module, never", [
    ("rag_eval_pipeline.core.metrics.calibration_results", "rag_eval_pipeline.core.report"),
    ("rag_eval_pipeline.core.metrics.calibration_status", "rag_eval_pipeline.core.report"),
    ("rag_eval_pipeline.core.judges.types.openai_compatible", "rag_eval_pipeline.core.systems"),
    ("rag_eval_pipeline.core.markdown_table", "rag_eval_pipeline.core.report"),
])
def test_a_lower_module_does_not_import_a_higher_one(module, never):
    code = (f"import sys, {module}\n"
            f"bad = sorted(m for m in sys.modules if m == {never!r} or m.startswith({never!r} + '.'))\n"
            "print(bad)\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"
