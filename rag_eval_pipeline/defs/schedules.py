"""Jobs and schedules: the nightly full evaluation and the quick on-change subset."""


import os

import dagster as dg

ALL_ASSETS = dg.AssetSelection.all()
QUICK_ASSETS = dg.AssetSelection.all() - dg.AssetSelection.assets("promotion", "metric_history")

full_evaluation = dg.define_asset_job(
    "full_evaluation",
    selection=ALL_ASSETS,
    description="Every asset and check on the whole golden set; promotes the candidate if every blocking check passes.",
    executor_def=dg.in_process_executor,
)

quick_evaluation = dg.define_asset_job(
    "quick_evaluation",
    selection=QUICK_ASSETS,
    description="A fixed stratified subset of the golden set (all classes), for every change; never promotes.",
    config={"ops": {"golden_set": {"config": {"subset": "quick"}}}},
    executor_def=dg.in_process_executor,
)

nightly_full_evaluation = dg.ScheduleDefinition(
    name="nightly_full_evaluation",
    job=full_evaluation,
    cron_schedule=os.environ.get("RAG_EVAL_NIGHTLY_CRON", "0 2 * * *"),
    execution_timezone=os.environ.get("RAG_EVAL_TIMEZONE", "UTC"),
    description="The full evaluation every night (02:00 UTC unless RAG_EVAL_NIGHTLY_CRON / RAG_EVAL_TIMEZONE say otherwise).",
)
