"""``rag-eval run``'s failed steps and verdict, on a tiny in-process Dagster job: a check's own step is told
apart by its step key (not by Dagster's wording), and the verdict line follows the rule the CI files follow."""

import json

import dagster as dg

from rag_eval_pipeline.cli.ci_output import check_cases, extra_failures, not_run_checks, step_failures
from rag_eval_pipeline.cli.run_output import stopped_by, verdict_line
from rag_eval_pipeline.core.report.ci import final_verdict, summary_markdown


@dg.asset(key_prefix=["s"])
def good():
    return 1


@dg.asset_check(asset=good, blocking=True)
def raises(good):
    raise RuntimeError("the check itself broke")


@dg.asset_check(asset=good, blocking=True)
def fails(good):
    return dg.AssetCheckResult(passed=False, metadata={"reason": "below the floor"})


@dg.asset(key_prefix=["s"])
def broken():
    raise ValueError("disk full")


@dg.asset(key_prefix=["s"], deps=[broken])
def after_broken():
    return 1


@dg.asset_check(asset=after_broken, blocking=True)
def downstream(after_broken):
    return dg.AssetCheckResult(passed=True)


def _run():
    defs = dg.Definitions(assets=[good, broken, after_broken], asset_checks=[raises, fails, downstream])
    job = defs.resolve_implicit_global_asset_job_def()
    return job.execute_in_process(raise_on_error=False), job


def test_check_steps_are_told_apart_by_their_step_key_and_a_raising_check_says_why():
    result, job = _run()
    other, raised = step_failures(result, job)
    # the asset's step is a step failure; both check steps failed too (one raised, one failed blocking: Dagster
    # fails its step with "blocking asset check failed"), but their cases say it: neither is a step failure
    assert len(other) == 1 and other[0].startswith("step s__broken failed: ") and "disk full" in other[0]
    assert set(raised) == {"s__good_raises", "s__good_fails"}
    cases = {c.name: c for c in check_cases(result, job, raised)}
    assert cases["raises"].outcome == "error" and cases["raises"].message.startswith("the check raised: ")
    assert "the check itself broke" in cases["raises"].message
    assert cases["fails"].outcome == "failed" and cases["fails"].message == "below the floor"


def test_the_cli_verdict_line_follows_the_rule_of_the_ci_files(tmp_path):
    # decision.json says pass; a step after the report failed: the CLI, JUnit and the summary all say FAIL
    decision = {"verdict": "pass", "why": "every gate passed on split test (2 gate(s))", "blocking_failures": [],
                "warnings": [], "split": "test", "split_questions": 8, "baseline": "base",
                "calibration": {"line": "κ 0.500 ≥ floor 0.4"}, "judge_errors_line": "0 of 9 claim labels"}
    path = tmp_path / "decision.json"
    path.write_text(json.dumps(decision), encoding="utf-8")
    extra = ["step s__promotion failed: disk full"]
    assert final_verdict(decision, extra) == ("fail", "1 blocking failure(s)")
    line = verdict_line(path, extra).splitlines()
    assert line[0].startswith("verdict: FAIL — 1 blocking failure(s) (comparison split test;")
    assert line[1] == "  blocking failure: step s__promotion failed: disk full"
    md = summary_markdown(decision, None, title="t", promotion="none", report_link=None, extra_failures=extra)
    assert md.splitlines()[0].endswith(": FAIL") and "**Verdict:** FAIL — 1 blocking failure(s)" in md
    # nothing else failed: the decision's own verdict
    assert verdict_line(path).startswith("verdict: PASS — every gate passed on split test")


def test_a_verdict_not_decided_names_what_stopped_the_run():
    result, job = _run()
    other, raised = step_failures(result, job)
    cases = check_cases(result, job, raised)
    # a failed step: it is printed right under the run line
    assert verdict_line(None, (), stopped_by(other, cases)) == (
        "verdict: not decided (the run stopped before its report; see the failed step above)")
    # no failed step, a blocking check failed (and one raised): the checks are named, not a step never printed
    assert verdict_line(None, (), stopped_by([], cases)) == (
        "verdict: not decided (the run stopped before its report; blocking check s/good:fails, s/good:raises "
        "failed; see the checks above)")
    assert verdict_line(None) == "verdict: not decided (the run stopped before its report)"


def test_a_check_skipped_because_its_step_did_not_run_is_not_run_not_a_failure():
    """``s/after_broken`` is skipped (its upstream ``broken`` failed), so its blocking check ``downstream`` never
    ran: the summary lists it under "Not run" and counts 3 blocking failures (the check that raised, the check
    that failed, the failed step ``broken``), not 4. Before the fix it was an ``error`` case counted as a
    blocking failure ("FAIL — 4 blocking failure(s)")."""
    result, job = _run()
    other, raised = step_failures(result, job)
    cases = {c.name: c for c in check_cases(result, job, raised)}
    assert cases["downstream"].outcome == "skipped"
    assert cases["downstream"].message == "not run: an upstream step failed"
    checks = list(cases.values())
    extra = extra_failures(checks, other, decided=False)
    assert len(extra) == 3 and not any("downstream" in f for f in extra)
    assert not_run_checks(checks) == ["s/after_broken:downstream"]
    assert "downstream" not in (stopped_by([], checks) or "")  # what stopped the run: the checks that ran and failed
    stopped = {"verdict": "fail", "why": "the run stopped before its report and decision were written",
               "blocking_failures": [], "warnings": [], "calibration": {"line": "unknown"}, "judge_errors_line": "?",
               "split": None, "split_questions": None, "baseline": "unknown"}
    md = summary_markdown(stopped, None, title="t", promotion="none", report_link=None, extra_failures=extra,
                          not_run=not_run_checks(checks))
    assert "**Verdict:** FAIL — 3 blocking failure(s)" in md
    blocking = md.split("**Blocking failures:**")[1].split("**Not run**")[0]
    assert "downstream" not in blocking
    assert ("**Not run** (1 blocking check(s): a step upstream of them failed; not counted as failures):\n\n"
            "- s/after_broken:downstream") in md
