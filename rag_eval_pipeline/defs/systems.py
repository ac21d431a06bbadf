"""The systems under test as Dagster resources (one ``ConfigurableResource`` per live kind), and the
sensor that starts a suite's ``quick_evaluation`` when a logged system's file or a traces source changes.

The resources hold deployment settings only; the systems themselves are entries of the evaluation
configuration, and the work is done by ``core/systems``. Secrets never pass through a resource's
config: an ``http`` system reads its ``headers_from_env`` variables when the run starts.
"""

import hashlib
import json
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.systems.fingerprints import changed_systems, source_fingerprints
from rag_eval_pipeline.core.systems.runner import HttpRunner, PythonRunner, SystemUnderTest, TracesRunner
from rag_eval_pipeline.defs.schedules import QUICK_JOB, job_name
from rag_eval_pipeline.defs.scope import SuiteScope


class SystemUnderTestResource(dg.ConfigurableResource):
    """The interface: ``system(spec, base_dir)`` builds the runner for one validated configuration entry."""

    def system(self, spec: dict, base_dir: Path) -> SystemUnderTest:
        raise NotImplementedError


class HttpSystemResource(SystemUnderTestResource):
    """``kind: http`` systems. ``max_concurrency`` caps every system's ``concurrency`` in this deployment."""

    user_agent: str = "rag-eval"
    max_concurrency: int = 32

    def system(self, spec: dict, base_dir: Path) -> SystemUnderTest:
        spec = {**spec, "concurrency": min(spec["concurrency"], self.max_concurrency)}
        return HttpRunner(spec, user_agent=self.user_agent)


class PythonSystemResource(SystemUnderTestResource):
    """``kind: python`` systems (imported in the run's process). ``max_concurrency`` caps their threads."""

    max_concurrency: int = 32

    def system(self, spec: dict, base_dir: Path) -> SystemUnderTest:
        return PythonRunner({**spec, "concurrency": min(spec["concurrency"], self.max_concurrency)})


class TracesSystemResource(SystemUnderTestResource):
    """``kind: traces`` systems: OTLP JSON or Phoenix exports read from disk."""

    def system(self, spec: dict, base_dir: Path) -> SystemUnderTest:
        return TracesRunner(spec, base_dir)


def system_resources() -> dict:
    """The default resource per live kind, under the keys ``rag_runs`` asks for."""
    return {"http_system": HttpSystemResource(), "python_system": PythonSystemResource(),
            "traces_system": TracesSystemResource()}


def has_watched_sources(cfg) -> bool:
    """Whether a configuration has a ``logged`` or ``traces`` system, whose content the sensor watches."""
    return any(spec["kind"] in ("logged", "traces") for spec in cfg.systems)


def live_sources_sensor(scope: SuiteScope, tags: dict[str, str]) -> dg.SensorDefinition:
    """The sensor ``<suite>__live_sources_changed`` (stopped by default): starts the suite's
    ``quick_evaluation`` when the content (sha256) of a ``logged`` system's file or a ``traces`` source
    changes; the first tick only records the fingerprints. Reads the suite's configuration through its
    settings resource (``scope``)."""
    suite = scope.suite

    @dg.sensor(name=f"{suite}__live_sources_changed", job_name=job_name(suite, QUICK_JOB), minimum_interval_seconds=60,
               default_status=dg.DefaultSensorStatus.STOPPED,
               description=f"Starts {suite}'s quick_evaluation when a logged system's log or a traces source "
                           "changes content.", required_resource_keys=scope.needs("settings"))
    def live_sources_changed(context: dg.SensorEvaluationContext, **resources):  # the suite's settings, by key
        try:
            current = source_fingerprints(resources[scope.resource_key("settings")].config)
        except EvalError as exc:
            return dg.SkipReason(f"configuration not loaded: {exc}")
        previous = json.loads(context.cursor) if context.cursor else None
        context.update_cursor(json.dumps(current, sort_keys=True))
        if previous is None:
            return dg.SkipReason(f"recorded the content of {len(current)} logged/traces source(s)")
        changed = changed_systems(previous, current)
        if not changed:
            return dg.SkipReason("no logged or traces source changed")
        return dg.RunRequest(run_key=hashlib.sha256(json.dumps(current, sort_keys=True).encode()).hexdigest(),
                             tags={**tags, "rag_eval/changed_systems": ",".join(changed)})

    return live_sources_changed
