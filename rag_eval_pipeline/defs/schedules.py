"""Jobs and schedules: per suite, the full evaluation and the quick on-change subset; one nightly schedule.

Jobs are named ``<suite>__full_evaluation`` and ``<suite>__quick_evaluation`` (Dagster's own ``__``
separator for prefixed names) and carry the suite's run tags. The schedule ``nightly_full_evaluation``
launches one run per nightly suite (each run selects that suite's assets and checks), so a suite that
fails blocks only itself. ``cli_console_logger`` is the console logger ``rag-eval run`` gives its jobs.

No job names an executor: every run takes the code location's (``defs/executors.py``: Dagster's default
unless the deployment sets ``RAG_EVAL_EXECUTOR``), and run config ``execution:`` can choose per run.
"""

from __future__ import annotations

import logging
import os
import re

import dagster as dg

from rag_eval_pipeline.core.plain_names import FULL, QUICK_JOB  # plain strings: the CLI's --help reads them

SHARDS_JOB = "question_shards"  # a sharded suite's third job, ``<suite>__question_shards`` (defs/shards.py)
NIGHTLY = "nightly_full_evaluation"


def job_name(suite: str, kind: str) -> str:
    """``("sample", "full_evaluation")`` -> ``"sample__full_evaluation"``."""
    return f"{suite}__{kind}"


def suite_jobs(suite: str, full_group: str, quick_group: str, tags: dict[str, str], quick_size: int,
               description: str = "", shards_group: str | None = None) -> list:
    """The two jobs of one suite, selecting its full and its quick asset groups (with their checks), and, for a
    sharded suite (``shards_group``: the group of its shard layer), ``<suite>__question_shards``, partitioned
    by shard: one run per shard (``defs/shards.py``)."""
    about = f" Suite {suite}" + (f": {description}." if description else ".")
    sharded = [dg.define_asset_job(
        job_name(suite, SHARDS_JOB), selection=dg.AssetSelection.groups(shards_group), tags=tags,
        description="The per-question tables of one question shard (rag_runs, judging, citations, question_metrics); "
                    "run once per shard (partition), after the full evaluation's corpus_snapshot and golden_set and "
                    "before the rest of it, which merges the shards." + about,
    )] if shards_group else []
    return sharded + [
        dg.define_asset_job(
            job_name(suite, FULL), selection=dg.AssetSelection.groups(full_group), tags=tags,
            description="Every asset and check on the whole golden set; promotes the candidate if every blocking "
                        "check passes." + about,
        ),
        dg.define_asset_job(
            job_name(suite, QUICK_JOB), selection=dg.AssetSelection.groups(quick_group), tags=tags,
            description=f"A fixed stratified subset of {quick_size} golden questions (all classes), for every change; "
                        "its own assets (<suite>/quick/...): never promotes and never writes the full evaluation's "
                        "history, tables or metadata plots." + about,
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


# --- the command line's console logger --------------------------------------------------------------

TRACEBACKS_ENV = "RAG_EVAL_TRACEBACKS"
_STACK_TRACE = re.compile(r"\n?Stack Trace:\n(?:[ \t]+.*(?:\n|$))*")
# Not a bug in our code: the user's data or configuration (EvalError), or a stop signal.
_NOT_A_BUG = {"dagster._core.errors.DagsterExecutionInterruptedError"}


def _user_error_names() -> set[str]:
    """Qualified names of every EvalError subclass (InputError, ConfigError, ...) imported so far."""
    from rag_eval_pipeline.core.errors import EvalError

    names, todo = set(), [EvalError]
    while todo:
        cls = todo.pop()
        names.add(f"{cls.__module__}.{cls.__qualname__}")
        todo.extend(cls.__subclasses__())
    return names


def caused_by_user_mistake(error) -> bool:
    """Whether a Dagster ``SerializableErrorInfo`` chain (``cause`` / ``context``) holds an EvalError (bad input
    or configuration: the user's to fix) or an interrupt, i.e. not a bug in the pipeline's own code.

    The chain's messages read ``module.Class: text``; an error whose class is any other exception is a bug."""
    known = _user_error_names() | _NOT_A_BUG
    while error is not None:
        if error.message.split(":", 1)[0].strip() in known:
            return True
        error = error.cause or error.context
    return False


#: The class Dagster raises in a blocking check's step when the check fails (ERROR severity): the check said
#: no, an expected outcome of a run, not a bug.
_BLOCKED_CLASS = "DagsterAssetCheckFailedError"


def blocked_checks(error) -> list[str] | None:
    """The checks a ``SerializableErrorInfo`` chain says failed blocking (Dagster's DagsterAssetCheckFailedError,
    whose message lists ``<asset>: <check>,<check>`` one asset a line), as ``asset:check``; None when the chain
    holds no such error ([] when its message names none)."""
    while error is not None:
        if error.cls_name == _BLOCKED_CLASS:
            names = []
            for line in error.message.splitlines()[1:]:
                asset, sep, checks = line.partition(": ")
                names += [f"{asset.strip()}:{c.strip()}" for c in checks.split(",") if sep and c.strip()]
            return names
        error = error.cause or error.context
    return None


class _CutStackTraces(logging.Formatter):
    """Wraps a handler's formatter: a failure event caused by a user's mistake loses its "Stack Trace:" blocks
    (the error messages of the chain stay); a blocking check that failed is one line naming the check (its step's
    failure) or the run's first line only (the run's failure): an expected outcome, no stack trace, said once;
    every other record is formatted unchanged."""

    def __init__(self, inner: logging.Formatter):
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event") if isinstance(meta, dict) else None
        error = getattr(getattr(event, "event_specific_data", None), "error", None)
        if error is not None and isinstance(record.msg, str):
            blocked = blocked_checks(error)
            if blocked is not None or caused_by_user_mistake(error):
                record = logging.makeLogRecord(record.__dict__)  # a copy: other handlers see the record unchanged
                record.msg = _STACK_TRACE.sub("", record.msg)
                if blocked is not None:
                    head = record.msg.split("\n", 1)[0].strip()
                    record.msg = head if not getattr(event, "is_step_failure", False) else (
                        f"{head} Blocking check {', '.join(blocked) or '(unnamed)'} failed: promotion stops "
                        "(the check's reason is printed after the run)")
        return self.inner.format(record)


@dg.logger(
    config_schema={"log_level": dg.Field(str, is_required=False, default_value="INFO"),
                   "name": dg.Field(str, is_required=False, default_value="dagster")},
    description="Dagster's colored console logger (stderr), without the stack trace of a step that failed on the "
                "user's input or configuration (an InputError, ConfigError ... : the message names file, line and "
                "field) or of an interrupted step; RAG_EVAL_TRACEBACKS=1 keeps it. Any other failure keeps its "
                "stack trace.",
)
def cli_console_logger(init_context) -> logging.Logger:
    """The console logger of ``rag-eval run``'s jobs. Output: a ``logging.Logger`` writing to stderr."""
    logger = dg.colored_console_logger.logger_fn(init_context)
    if os.environ.get(TRACEBACKS_ENV, "") not in ("1", "true", "yes"):
        for handler in logger.handlers:
            handler.setFormatter(_CutStackTraces(handler.formatter or logging.Formatter()))
    return logger


CLI_LOGGER_DEFS = {"console": cli_console_logger}
