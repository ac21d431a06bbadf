"""Which Dagster executor runs the steps: chosen by the deployment, never pinned by the jobs.

The jobs and the nightly schedule name no executor, so every run takes the code location's executor,
which a deployment picks with the environment variable ``RAG_EVAL_EXECUTOR``:

=================  ========================================================================================
``default``        Dagster's default, ``multi_or_in_process_executor``: one process per step
(unset)            (``multiprocess``), or every step in the run's own process when the run config says
                   ``execution: {config: {in_process: {}}}``; ``max_concurrent`` and the rest by run config.
``in_process``     ``dagster.in_process_executor`` (every step in the run worker; the fastest on small suites)
``multiprocess``   ``dagster.multiprocess_executor``
``celery``         ``dagster_celery.celery_executor``: steps go to ``dagster-celery`` workers through a broker.
                   Broker, result backend and Celery settings come from the YAML file named by
                   ``RAG_EVAL_CELERY_CONFIG`` (``execution: config: {broker, backend, config_source}``), the
                   same file the workers start with (``dagster-celery worker start -y FILE``); run config
                   ``execution: config:`` overrides it for one run.
``docker``         ``dagster_docker.docker_executor`` (a container per step; needs ``dagster-docker``)
``k8s``            ``dagster_k8s.k8s_job_executor`` (a Kubernetes Job per step; needs ``dagster-k8s``)
=================  ========================================================================================

``rag-eval run`` always executes in process (``execute_in_process``), whatever this says. An integration
is imported only when it is chosen, so a deployment that does not use Celery need not install it.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg

from rag_eval_pipeline.core.errors import ConfigError

EXECUTOR_ENV = "RAG_EVAL_EXECUTOR"
CELERY_CONFIG_ENV = "RAG_EVAL_CELERY_CONFIG"
EXECUTORS = ("default", "in_process", "multiprocess", "celery", "docker", "k8s")


def celery_settings(path: str | Path) -> dict:
    """The ``execution: config:`` block of a Celery executor YAML file (the file ``dagster-celery worker
    start -y`` reads). Input: the file path. Output: a dict (broker, backend, config_source, ...).
    Raises ConfigError (one line naming the file) when it is missing, not YAML, or has no such block."""
    from rag_eval_pipeline.core.errors import InputError
    from rag_eval_pipeline.core.yamlio import load_yaml

    try:
        doc = load_yaml(path)
    except InputError as exc:  # names the file (and line): missing, not a regular file, not YAML
        raise ConfigError(f"{CELERY_CONFIG_ENV}: {exc}") from None
    block = ((doc or {}).get("execution") or {}).get("config") if isinstance(doc, dict) else None
    if not isinstance(block, dict):
        raise ConfigError(f"{path}: expected an 'execution: config:' mapping (broker, backend, config_source)")
    return block


def executor_from_env(environ: dict | None = None) -> dg.ExecutorDefinition | None:
    """The executor ``RAG_EVAL_EXECUTOR`` names (see the module docstring); None means Dagster's default.

    Input: the environment (default ``os.environ``). Output: an ExecutorDefinition or None. Raises
    ConfigError for an unknown name, or when the chosen integration is not installed.
    Source: Dagster docs, "Executors" (executor selection per code location)."""
    env = os.environ if environ is None else environ
    name = (env.get(EXECUTOR_ENV) or "default").strip()
    if name == "default":
        return None
    if name == "in_process":
        return dg.in_process_executor
    if name == "multiprocess":
        return dg.multiprocess_executor
    try:
        if name == "celery":
            from dagster_celery import celery_executor

            path = env.get(CELERY_CONFIG_ENV)
            return celery_executor.configured(celery_settings(path)) if path else celery_executor
        if name == "docker":
            from dagster_docker import docker_executor

            return docker_executor
        if name == "k8s":
            from dagster_k8s import k8s_job_executor

            return k8s_job_executor
    except ImportError as exc:
        raise ConfigError(f"{EXECUTOR_ENV}={name} needs the package {exc.name!r}: pip install "
                          f"dagster-{'celery' if name == 'celery' else name}==0.29.27") from None
    raise ConfigError(f"{EXECUTOR_ENV}={name!r}: expected one of {', '.join(EXECUTORS)}")
