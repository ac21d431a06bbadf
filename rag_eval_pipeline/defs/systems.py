"""The systems under test in the Dagster shell: one resource holding the deployment's settings, and the
sensor that starts a suite's ``quick_evaluation`` when a file a system reads changes content.

The systems themselves are entries of the evaluation configuration, each run by its kind
(``core/systems/kinds/``); the resource holds what belongs to the deployment, not to a system.
Secrets never pass through a resource's config: an ``http`` system reads its ``headers_from_env``
variables when the run starts.
"""

import hashlib
import json

import dagster as dg

from rag_eval_pipeline.core.errors import EvalError
from rag_eval_pipeline.core.systems.base import Deployment
from rag_eval_pipeline.core.systems.fingerprints import changed_systems, source_fingerprints, watched_paths
from rag_eval_pipeline.defs.schedules import QUICK_JOB, job_name
from rag_eval_pipeline.defs.scope import SuiteScope


class SystemsResource(dg.ConfigurableResource):
    """Deployment settings for every system under test: ``max_concurrency`` caps each system's own
    ``concurrency`` (requests or threads in flight), ``user_agent`` is sent by every system called over
    HTTP."""

    max_concurrency: int = 32
    user_agent: str = "rag-eval"

    def deployment(self) -> Deployment:
        """These settings as the core's :class:`~rag_eval_pipeline.core.systems.base.Deployment`."""
        return Deployment(max_concurrency=self.max_concurrency, user_agent=self.user_agent)


def system_resources() -> dict:
    """The default systems resource, under the key ``rag_runs`` asks for."""
    return {"systems": SystemsResource()}


def has_watched_sources(cfg) -> bool:
    """Whether a configuration has a system whose kind watches files (the sensor's sources)."""
    return bool(watched_paths(cfg))


def live_sources_sensor(scope: SuiteScope, tags: dict[str, str]) -> dg.SensorDefinition:
    """The sensor ``<suite>__live_sources_changed`` (stopped by default): starts the suite's
    ``quick_evaluation`` when the content (sha256) of a file a system's kind watches (a ``logged``
    system's log, a ``traces`` source) changes; the first tick only records the fingerprints. Reads the
    suite's configuration through its settings resource (``scope``)."""
    suite = scope.suite
    if suite is None:
        raise ValueError("the live sources sensor belongs to a suite: the unprefixed chain has none")

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
