"""The example GitHub Actions workflow in docs/examples: valid YAML of the expected shape, and every rag-eval
command it runs parses with the CLI's own parser (the options exist, the suite and job are real), writing the
files the later steps read."""

import re
import shlex
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline.cli import build_parser
from rag_eval_pipeline.core.suites import load_suites
from rag_eval_pipeline_tests.conftest import REPO_ROOT

WORKFLOW = REPO_ROOT / "docs" / "examples" / "github-actions-quick-evaluation.yml"


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def _commands(script: str, program: str) -> list[list[str]]:
    """Every command line of a step's shell script that starts with ``program`` (continuations joined,
    ``${{ ... }}`` expressions replaced by a placeholder word)."""
    script = re.sub(r"\$\{\{[^}]*\}\}", "EXPR", script).replace("\\\n", " ")
    out = []
    for line in script.splitlines():
        for part in re.split(r"\|\||&&|;", line):
            words = shlex.split(part)
            if words and words[0].endswith(program):
                out.append(words)
    return out


def test_the_workflow_runs_on_pull_requests_with_the_permissions_it_uses(workflow):
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads the key `on` as True
    assert "pull_request" in triggers
    assert workflow["permissions"]["pull-requests"] == "write"  # the comment
    [job] = workflow["jobs"].values()
    assert job["runs-on"] == "ubuntu-latest"
    names = [s.get("name") or s.get("uses") for s in job["steps"]]
    assert names[0] == "actions/checkout@v4" and names[-1] == "Fail when the evaluation failed"


def test_every_rag_eval_command_parses_with_the_cli(workflow):
    [job] = workflow["jobs"].values()
    scripts = [s["run"] for s in job["steps"] if "run" in s]
    commands = [c for script in scripts for c in _commands(script, "rag-eval")]
    assert commands, "the workflow runs rag-eval"
    parser = build_parser()
    suites = {s.name for s in load_suites(REPO_ROOT / "data" / "suites.yaml")}
    for words in commands:
        args = parser.parse_args(words[1:])  # SystemExit (a failing test) for an unknown option or value
        assert args.command == "run" and args.job == "quick_evaluation" and args.suite in suites
        assert args.junit_xml and args.summary_md
        # the report is an artifact, not a page at the run's address: a --report-url there made every question
        # link of the summary dead (it used to point at .../actions/runs/<run id>)
        assert args.report_url is None or "/actions/runs/" not in args.report_url
        # the later steps read what this command writes
        later = "\n".join(yaml.safe_dump(s) for s in job["steps"])
        assert later.count(args.summary_md) >= 3  # written, added to the run page, posted as the comment
        assert args.junit_xml in later.replace(args.junit_xml, "", 1)  # written, then published
        assert Path(args.summary_md).parent.as_posix() in later  # the folder is uploaded with the report
        report = f"outputs/{args.suite}/quick/report.html"
        assert report in later  # where --job quick_evaluation writes the report (RAG_EVAL_OUTPUT_DIR=outputs)


def test_the_install_and_comment_steps_use_what_exists(workflow):
    [job] = workflow["jobs"].values()
    install = next(s for s in job["steps"] if s.get("name") == "Install")["run"]
    for words in _commands(install, "pip"):
        for i, w in enumerate(words):
            if w == "-r":
                assert (REPO_ROOT / words[i + 1]).is_file(), words[i + 1]
    evaluation = next(s for s in job["steps"] if s.get("id") == "evaluation")
    assert evaluation["continue-on-error"] is True  # exit 1 on a failed gate must not skip the comment
    final = job["steps"][-1]
    assert final["if"] == f"steps.{evaluation['id']}.outcome == 'failure'"
    comment = next(s for s in job["steps"] if s.get("name") == "Comment on the pull request")
    gh = _commands(comment["run"], "gh")
    assert gh and all(w[:3] == ["gh", "pr", "comment"] and "--body-file" in w for w in gh)
    assert job["env"]["RAG_EVAL_OUTPUT_DIR"].endswith("/outputs")
