"""Jobs and schedules: per suite, the full evaluation and the quick on-change subset; one nightly schedule.

Jobs are named ``<suite>__full_evaluation`` and ``<suite>__quick_evaluation`` (Dagster's own ``__``
separator for prefixed names) and carry the suite's run tags. The schedule ``nightly_full_evaluation``
launches one run per nightly suite (each run selects that suite's assets and checks), so a suite that
fails blocks only itself.
"""

from __future__ import annotations

import os

import dagster as dg

FULL, QUICK_JOB = "full_evaluation", "quick_evaluation"
NIGHTLY = "nightly_full_evaluation"


def job_name(suite: str, kind: str) -> str:
    """``("sample", "full_evaluation")`` -> ``"sample__full_evaluation"``."""
    return f"{suite}__{kind}"


def suite_jobs(suite: str, full_group: str, quick_group: str, tags: dict[str, str], quick_size: int,
               description: str = "") -> list:
    """The two jobs of one suite, selecting its full and its quick asset groups (with their checks)."""
    about = f" Suite {suite}" + (f": {description}." if description else ".")
    return [
        dg.define_asset_job(
            job_name(suite, FULL), selection=dg.AssetSelection.groups(full_group), tags=tags,
            description="Every asset and check on the whole golden set; promotes the candidate if every blocking "
                        "check passes." + about,
            executor_def=dg.in_process_executor,
        ),
        dg.define_asset_job(
            job_name(suite, QUICK_JOB), selection=dg.AssetSelection.groups(quick_group), tags=tags,
            description=f"A fixed stratified subset of {quick_size} golden questions (all classes), for every change; "
                        "its own assets (<suite>/quick/...): never promotes and never writes the full evaluation's "
                        "history, tables or metadata plots." + about,
            executor_def=dg.in_process_executor,
        ),
    ]


def nightly_schedule(nightly: dict[str, tuple[list, list]], tags_for) -> dg.ScheduleDefinition:
    """The nightly schedule: one run request per nightly suite.

    ``nightly``: suite name -> (its full evaluation's asset keys, its check keys); ``tags_for(suite)``:
    the run tags (computed at each tick, so the configuration's sha256 is the file's at that time).
    The cron and timezone come from RAG_EVAL_NIGHTLY_CRON (default ``0 2 * * *``) and RAG_EVAL_TIMEZONE
    (an IANA name, default UTC).
    """
    selection = (dg.AssetSelection.assets(*[k for keys, _ in nightly.values() for k in keys])
                 if nightly else dg.AssetSelection.assets())

    @dg.schedule(
        name=NIGHTLY, target=selection,
        cron_schedule=os.environ.get("RAG_EVAL_NIGHTLY_CRON", "0 2 * * *"),
        execution_timezone=os.environ.get("RAG_EVAL_TIMEZONE", "UTC"),
        description="The full evaluation of every nightly suite, one run per suite (02:00 UTC unless "
                    "RAG_EVAL_NIGHTLY_CRON / RAG_EVAL_TIMEZONE say otherwise): "
                    + (", ".join(sorted(nightly)) or "no nightly suite") + ".",
    )
    def nightly_full_evaluation(context: dg.ScheduleEvaluationContext):
        stamp = context.scheduled_execution_time.isoformat() if context.scheduled_execution_time else "manual"
        for suite, (keys, checks) in sorted(nightly.items()):
            yield dg.RunRequest(run_key=f"{suite}:{stamp}", asset_selection=list(keys), asset_check_keys=list(checks),
                                tags={**tags_for(suite), "rag_eval/trigger": NIGHTLY})

    return nightly_full_evaluation
