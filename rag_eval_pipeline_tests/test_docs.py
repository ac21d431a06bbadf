"""The documentation outside the mkdocs site: every relative link and anchor of README.md and
CONTRIBUTING.md resolves (the pages under docs/ are checked by ``mkdocs build --strict``), and no file
of the repository cites the internal guides the product was first written from; code and docs cite
public sources (trec_eval, Ragas, ALCE, TREC RAG, papers) instead.

Anchors are GitHub's heading slugs (lower case, punctuation other than ``-`` and ``_`` dropped, each
space a ``-``), which Python-Markdown's ``toc`` extension gives too for the headings linked here.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL_DOCS = ("README.md", "CONTRIBUTING.md")

_FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
_CODE_SPAN = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_HTML_ID = re.compile(r"<a id=\"([^\"]+)\"></a>")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading text: ``"Latency (`p50`)"`` -> ``"latency-p50"``."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: str) -> set[str]:
    """Every anchor of a Markdown text: heading slugs and ``<a id="...">`` (fenced code left out)."""
    text = _FENCE.sub("", markdown)
    return {slug(h) for h in _HEADING.findall(text)} | set(_HTML_ID.findall(text))


def broken_links(path: Path) -> list[str]:
    """``"FILE: TARGET (why)"`` for every relative link of ``path`` whose file or anchor is missing."""
    text = _CODE_SPAN.sub("", _FENCE.sub("", path.read_text(encoding="utf-8")))
    out = []
    for target in _LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            out.append(f"{path.name}: {target} (no such file)")
            continue
        if anchor:
            if dest.suffix != ".md":
                out.append(f"{path.name}: {target} (an anchor into a file that is not Markdown)")
            elif anchor not in anchors(dest.read_text(encoding="utf-8")):
                out.append(f"{path.name}: {target} (no heading with that anchor in {dest.name})")
    return out


@pytest.mark.parametrize("name", TOP_LEVEL_DOCS)
def test_every_relative_link_and_anchor_resolves(name: str) -> None:
    path = ROOT / name
    assert path.is_file(), name
    assert broken_links(path) == []


def test_the_link_check_finds_a_missing_file_and_a_missing_anchor(tmp_path: Path) -> None:
    (tmp_path / "page.md").write_text("# Page\n\n## Latency (`latency_ms_p50`)\n", encoding="utf-8")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Doc\n\n## Own heading\n\n"
        "[ok](page.md#latency-latency_ms_p50) [ok](#own-heading) [ok](https://example.org/x#y)\n"
        "[bad](missing.md) [bad](page.md#no-such-heading) [bad](#nowhere)\n"
        "`[in code](missing-too.md)`\n\n```\n[in a fence](missing-as-well.md)\n```\n",
        encoding="utf-8",
    )
    assert broken_links(doc) == [
        "doc.md: missing.md (no such file)",
        "doc.md: page.md#no-such-heading (no heading with that anchor in page.md)",
        "doc.md: #nowhere (no heading with that anchor in doc.md)",
    ]


def test_every_metric_the_report_links_has_its_anchor_in_the_metrics_page() -> None:
    from rag_eval_pipeline.core.metrics import names
    from rag_eval_pipeline.core.report.bands import DEFINITIONS_DOC, definition_ref

    page = anchors((ROOT / DEFINITIONS_DOC).read_text(encoding="utf-8"))
    metrics = set(names.MEASURES) | set(names.PIPELINE_METRICS) | {"latency_ms_p50", "latency_ms_p95"}
    assert "recall" in metrics and "coverage" in metrics and "faithfulness" in metrics
    missing = sorted(m for m in metrics if definition_ref(m).partition("#")[2] not in page)
    assert missing == []


def test_the_readme_stays_short_and_keeps_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    assert ("python3 -m venv .venv && .venv/bin/pip install -r requirements.lock -e . && .venv/bin/rag-eval run"
            in readme)
    test_command = ".venv/bin/python -m pytest -n 2 --dist loadfile\n"
    assert "\n" + test_command in readme
    assert test_command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


# ----------------------------------------------------------------------------- no internal guides

#: The hashes in the internal guides' file names (written split, so that a plain ``git grep`` for a
#: citation finds nothing in this file either).
GUIDE_HASHES = ("1000bb13" "b7b4c340", "6404d948" "5c4e62d0", "467b844f" "eab73551", "9cfbf16f" "e7b371c5",
                "292fd69c" "3d96947d")
#: How the internal guides were cited: a file name's hash, their folder, "seed" and a number, "seed guide".
GUIDE_REFERENCE = re.compile(
    "|".join(GUIDE_HASHES) + r"|seeds[/]|(?<![a-z])seeds? ?0\d\d|\bseed ?guides?\b|\bseeds? ``|\bthe seed's\b",
    re.I,
)
_TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".txt", ".json", ".jsonl", ".cfg", ".ini", ".html"}
_SKIP_DIRS = {".git", ".venv", "build", "outputs", "__pycache__", ".dagster_home", ".pytest_cache",
              ".hypothesis", ".cache", "site"}


def repository_text_files() -> list[Path]:
    """Every text file of the working tree that the repository ships (virtual env and outputs left out)."""
    out = [ROOT / ".ci" / "run"]
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS and not d.endswith(".egg-info")]
        for name in files:
            path = Path(folder) / name
            if path.suffix in _TEXT_SUFFIXES and path.stat().st_size < 5_000_000:
                out.append(path)
    return out


def guide_references(paths: list[Path], root: Path = ROOT) -> list[str]:
    """``"path:line: text"`` (path relative to ``root``) for every line that cites an internal guide."""
    hits = []
    for path in paths:
        if path == Path(__file__).resolve():
            continue  # the patterns above
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if GUIDE_REFERENCE.search(line):
                hits.append(f"{path.relative_to(root)}:{n}: {line.strip()[:120]}")
    return hits


def test_no_file_cites_the_internal_guides() -> None:
    files = repository_text_files()
    assert any(p.name == "retrieval.py" for p in files)  # the walk reaches the code
    assert guide_references(files) == []


def test_the_guide_check_finds_each_form_of_citation(tmp_path: Path) -> None:
    lines = ["Definition: seed " "004 (claims).", "see 000_" + GUIDE_HASHES[0] + ".txt", "../shared/seeds" "/x",
             "the seed guides' worked examples", "Seed ``003_x.txt``", "def test_seed002_case():", "the seed's rule",
             "seed: 0 seeds the bootstrap", "split_seed for the dev/test split", "a guide document"]
    f = tmp_path / "x.py"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    found = {int(h.split(":")[1]) for h in guide_references([f], root=tmp_path)}
    assert found == {1, 2, 3, 4, 5, 6, 7}


def test_the_judges_page_names_the_current_rule_version_and_parameters_file() -> None:
    """The embedded judge has two versions: the rule code's (``RULE_VERSION``, in its identity hash) and its
    parameters file's name (``rule_based_v3.json``). The page called the file's name the rule version while
    comparing kappa "under rule version 3" and "before rule version 4"."""
    from rag_eval_pipeline.core.judges.rule_based import PARAMS_FILE, RULE_VERSION

    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    assert not re.search(r"rule version `?rule_based_v", text)  # a parameters file is not a rule version
    assert f"rule version {RULE_VERSION}" in text and f"now {RULE_VERSION})" in text
    assert f"`{PARAMS_FILE.name}`" in text
    # every rule version the page names is the current one or an earlier one
    assert all(int(v) <= RULE_VERSION for v in re.findall(r"rule version (\d+)", text))
