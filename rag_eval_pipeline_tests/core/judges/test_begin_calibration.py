"""bench/begin_calibration.py --file: any BEGIN-format TSV, Generic rows dropped and counted, kappa last.

The file below is written by hand so that the judge's verdicts are obvious: a response that copies
its knowledge word for word is attributable, one that shares no word with it is not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "bench" / "begin_calibration.py"

HEADER = "model_name\tdata_source\tknowledge\tmessage\tresponse\tbegin_label\n"
K1 = "The library opens from Monday to Friday from 9 to 20 hours."
K2 = "Each member can borrow up to 6 books for 21 days."
ROWS = [
    ("t5", K1, K1, "Fully attributable"),                       # copy: judge attributable, people agree
    ("t5", K2, K2, "Fully attributable"),                       # copy: agree
    ("gpt2", K1, "Penguins cannot fly over glaciers.", "Not fully attributable"),  # unrelated: agree
    ("gpt2", K2, K2, "Not fully attributable"),                 # copy, but people say no: disagree
    ("ctrl", K1, "Nice to meet you!", "Generic"),                # dropped and counted
]


def _write(tmp_path: Path, rows=ROWS) -> Path:
    p = tmp_path / "mini_begin.tsv"
    p.write_text(HEADER + "".join(f"{m}\twow\t{k}\thi\t{r}\t{lab}\n" for m, k, r, lab in rows), encoding="utf-8")
    return p


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=300,
                          cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})


def test_scores_any_begin_file_with_kappa_on_the_last_line(tmp_path):
    out = _run("--file", str(_write(tmp_path)), "--no-semantic")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    # people A,A,N,N; judge A,A,N,A: po = 3/4; pe = (2/4)(3/4) + (2/4)(1/4) = 1/2; kappa = 0.5
    assert lines[-1] == "0.500"
    text = out.stdout
    assert "n = 4 (Generic rows dropped: 1)" in text
    assert "raw agreement = 0.750" in text
    assert "    attributable                       2                 0" in text
    assert "    not_attributable                   1                 1" in text
    assert "answers/s" in text and "load average" in text


@pytest.mark.parametrize(("content", "message"), [
    (None, "file not found"),
    ("model_name\tknowledge\tresponse\n", "missing column(s) ['begin_label']"),
    (HEADER + "t5\twow\tk\thi\tr\tMaybe\n", "line 2: field begin_label: 'Maybe'"),
])
def test_bad_files_are_one_line_on_stderr(tmp_path, content, message):
    p = tmp_path / "bad.tsv"
    if content is not None:
        p.write_text(content, encoding="utf-8")
    out = _run("--file", str(p), "--no-semantic")
    assert out.returncode == 2
    assert message in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert "Traceback" not in out.stderr
