"""Every docs page the code cites (in a docstring, a message, an asset description) exists: a reader sent to a
page that is not there is lost (decision.py cited docs/report.md, which never existed)."""

import re

import dagster as dg

from rag_eval_pipeline_tests.conftest import REPO_ROOT


def test_every_cited_docs_page_exists():
    cited = set()
    for path in (REPO_ROOT / "rag_eval_pipeline").rglob("*.py"):
        for page in re.findall(r"docs/[A-Za-z0-9_./-]+\.md", path.read_text(encoding="utf-8")):
            cited.add((page, str(path.relative_to(REPO_ROOT))))
    assert cited, "the code cites docs pages"
    missing = sorted((page, where) for page, where in cited if not (REPO_ROOT / page).is_file())
    assert missing == []


def test_dagster_descriptions_name_no_internal_module_paths():
    # what the UI shows for the runs asset and the two resources: no path into the code base
    from rag_eval_pipeline.definitions import ASSETS
    from rag_eval_pipeline.defs.judging import JudgeResource
    from rag_eval_pipeline.defs.systems import SystemsResource

    (rag_runs,) = [a for a in ASSETS if isinstance(a, dg.AssetsDefinition) and dg.AssetKey("rag_runs") in a.keys]
    for text in (rag_runs.op.description, JudgeResource.__doc__, SystemsResource.__doc__):
        assert not re.search(r"core[/.]\w|\.py\b", text), text
