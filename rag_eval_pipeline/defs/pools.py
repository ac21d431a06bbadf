"""Dagster concurrency pools: shared limits on the outside services a step calls, across runs and workers.

A step assigned to a pool (``pool=`` on its asset) holds one slot of that pool while it runs, whichever
executor and whichever worker runs it; the instance holds the slots (in Postgres in ``deploy/dagster.yaml``),
so N Celery workers or Kubernetes Jobs never run more such steps at once than the pool's limit. Inside one
step, the service's own setting caps the calls in flight (``judge.concurrency`` for a judge endpoint,
``concurrency`` of each live system, capped by the ``systems`` resource's ``max_concurrency``); so at most
``pool limit x that setting`` calls reach the service at any time.

=====================  ===================================================================================
``JUDGE_POOL``         every step that calls the judge: ``judge_answers`` (claim labels), ``answer_quality``
                       (answer/context relevance, correctness), ``judge_citations`` (citation support) and
                       ``nugget_labels`` (nugget coverage), in every suite and in its quick evaluation
``LIVE_SYSTEMS_POOL``  every step that calls the systems under test: ``rag_runs``
=====================  ===================================================================================

A pool without a limit of its own gets the instance's ``concurrency: pools: default_limit`` (unlimited when
that is unset, as in a plain ``DAGSTER_HOME``); set one with ``dagster instance concurrency set judge 1``.
Source: Dagster docs, "Concurrency pools" (``pool=`` on assets and ops; ``concurrency: pools:`` in
``dagster.yaml``, ``granularity: op``).
"""

JUDGE_POOL = "judge"
LIVE_SYSTEMS_POOL = "live_systems"
POOLS = (JUDGE_POOL, LIVE_SYSTEMS_POOL)
