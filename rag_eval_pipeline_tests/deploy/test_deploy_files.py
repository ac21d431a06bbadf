"""The files under ``deploy/``: each read by the tool that reads it, and all saying the same thing.

``dagster.yaml`` and ``celery.yaml`` are validated by Dagster's own config schemas (the deployment test
also runs them for real); ``docker-compose.yaml`` by the Compose Specification's JSON schema (vendored in
``check-jsonschema``) and by ``docker compose config`` where a Docker CLI with the compose plugin exists;
``helm/values.yaml`` key by key against the names of the official Dagster chart's values schema (chart
1.13, ``helm/dagster/values.schema.json``: the properties listed in ``CHART_KEYS`` below), since neither
``helm`` nor a cluster is available here.
"""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.deploy.services import service_commands

DEPLOY = REPO_ROOT / "deploy"
BIN = Path(sys.executable).parent


def _yaml(name: str) -> dict:
    return yaml.safe_load((DEPLOY / name).read_text(encoding="utf-8"))


def test_the_instance_file_passes_dagsters_instance_schema(tmp_path):
    from dagster._core.instance.config import dagster_instance_config

    shutil.copy(DEPLOY / "dagster.yaml", tmp_path / "dagster.yaml")
    config, _ = dagster_instance_config(str(tmp_path))  # raises DagsterInvalidConfigError on a wrong key or type
    assert config["storage"]["postgres"]["postgres_url"] == {"env": "DAGSTER_PG_URL"}
    limits = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert {"key": "rag_eval/output_dir", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits


def test_the_celery_file_passes_the_executors_schema(monkeypatch):
    pytest.importorskip("dagster_celery")
    from dagster_celery.cli import get_validated_config

    monkeypatch.setenv("DAGSTER_CELERY_BROKER_URL", "redis://broker.example:6379/0")
    monkeypatch.setenv("DAGSTER_CELERY_BACKEND_URL", "redis://broker.example:6379/1")
    config = get_validated_config(str(DEPLOY / "celery.yaml"))  # what `dagster-celery worker start -y` reads
    assert config["broker"] == "redis://broker.example:6379/0"
    assert config["config_source"]["task_acks_late"] is True


def test_the_compose_file_follows_the_compose_specification():
    proc = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec",
                           str(DEPLOY / "docker-compose.yaml")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        proc = subprocess.run([docker, "compose", "-f", str(DEPLOY / "docker-compose.yaml"), "config", "--quiet"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


def test_the_compose_services_run_the_commands_the_test_runs():
    compose = _yaml("docker-compose.yaml")
    services = compose["services"]
    assert set(services) == {"postgres", "redis", "webserver", "daemon", "worker"}
    assert services["postgres"]["image"] == "postgres:15" and services["redis"]["image"].startswith("redis:")
    expected = service_commands("0.0.0.0", 3000, "deploy/celery.yaml")
    for name in ("webserver", "daemon", "worker"):
        assert services[name]["command"] == expected[name], name
        env = services[name]["environment"]
        assert env["RAG_EVAL_EXECUTOR"] == "celery" and env["DAGSTER_HOME"] == "/opt/dagster/home"
        assert f"outputs:{env['RAG_EVAL_OUTPUT_DIR']}" in services[name]["volumes"]  # one shared output volume
        assert env["DAGSTER_PG_URL"].startswith("postgresql+psycopg2://")
    assert services["worker"]["deploy"]["replicas"] >= 2
    # the image puts deploy/dagster.yaml into DAGSTER_HOME
    dockerfile = (DEPLOY / "Dockerfile").read_text(encoding="utf-8")
    assert 'cp deploy/dagster.yaml "$DAGSTER_HOME/dagster.yaml"' in dockerfile


# Property names of the official chart's values schema (chart 1.13) at the paths values.yaml uses.
CHART_KEYS = {
    (): {"dagsterWebserver", "dagster-user-deployments", "postgresql", "generatePostgresqlPasswordSecret",
         "generateCeleryConfigSecret", "rabbitmq", "redis", "flower", "ingress", "imagePullSecrets",
         "computeLogManager", "scheduler", "runLauncher", "pythonLogs", "dagsterDaemon", "busybox", "migrate",
         "telemetry", "serviceAccount", "global", "retention", "additionalInstanceConfig"},
    ("dagster-user-deployments",): {"enabled", "enableSubchart", "imagePullSecrets", "deployments"},
    ("dagster-user-deployments", "deployments", "*"): {
        "name", "image", "dagsterApiGrpcArgs", "codeServerArgs", "includeConfigInLaunchedRuns", "deploymentNamespace",
        "port", "env", "envConfigMaps", "envSecrets", "annotations", "nodeSelector", "affinity", "tolerations",
        "podSecurityContext", "securityContext", "resources", "livenessProbe", "readinessProbe", "startupProbe",
        "labels", "volumeMounts", "volumes", "schedulerName", "initContainers", "sidecarContainers"},
    ("runLauncher",): {"type", "config"},
    ("runLauncher", "config"): {"celeryK8sRunLauncher", "k8sRunLauncher", "customRunLauncher"},
    ("runLauncher", "config", "k8sRunLauncher"): {
        "image", "imagePullPolicy", "jobNamespace", "loadInclusterConfig", "kubeconfigFile", "envConfigMaps",
        "envSecrets", "envVars", "volumeMounts", "volumes", "labels", "failPodOnRunFailure", "resources",
        "schedulerName", "securityContext", "runK8sConfig"},
    ("dagsterDaemon", "runCoordinator"): {"enabled", "type", "config"},
    ("dagsterDaemon", "runCoordinator", "config", "queuedRunCoordinator"): {
        "maxConcurrentRuns", "tagConcurrencyLimits", "dequeueIntervalSeconds", "dequeueNumWorkers",
        "dequeueUseThreads", "blockOpConcurrencyLimitedRuns"},
    ("postgresql",): {"image", "enabled", "postgresqlHost", "postgresqlUsername", "postgresqlPassword",
                      "postgresqlDatabase", "postgresqlParams", "postgresqlScheme", "service"},
    ("telemetry",): {"enabled"},
}
# the chart requires these inside the objects values.yaml writes in full (the rest merge with its defaults)
CHART_REQUIRED = {
    ("dagster-user-deployments", "deployments", "*"): {"name", "image", "port"},
    ("runLauncher", "config", "k8sRunLauncher"): {"imagePullPolicy", "loadInclusterConfig", "envConfigMaps",
                                                  "envSecrets", "envVars", "volumeMounts", "volumes"},
    ("dagsterDaemon", "runCoordinator"): {"enabled", "type", "config"},
}


def _at(doc, path: tuple) -> list[dict]:
    nodes = [doc]
    for part in path:
        nodes = [item for n in nodes for item in (n if part == "*" else [n.get(part)]) if item is not None]
    return nodes


def test_the_helm_values_use_the_charts_names_and_say_what_dagster_yaml_says():
    values = _yaml("helm/values.yaml")
    for path, allowed in CHART_KEYS.items():
        for node in _at(values, path):
            assert set(node) <= allowed, f"{'.'.join(path) or 'top level'}: unknown {sorted(set(node) - allowed)}"
    for path, required in CHART_REQUIRED.items():
        for node in _at(values, path):
            assert required <= set(node), f"{'.'.join(path)}: missing {sorted(required - set(node))}"
    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    (code,) = values["dagster-user-deployments"]["deployments"]
    assert code["dagsterApiGrpcArgs"] == ["-m", "rag_eval_pipeline.definitions"]
    assert code["env"]["RAG_EVAL_EXECUTOR"] == "k8s"  # dagster_k8s.k8s_job_executor (defs/executors.py)
    launcher = values["runLauncher"]["config"]["k8sRunLauncher"]
    mount = {"name": "outputs", "mountPath": code["env"]["RAG_EVAL_OUTPUT_DIR"]}
    assert mount in code["volumeMounts"] and mount in launcher["volumeMounts"]
    assert code["volumes"] == launcher["volumes"]  # the one ReadWriteMany claim (outputs-pvc.yaml)
    claim = yaml.safe_load((DEPLOY / "helm" / "outputs-pvc.yaml").read_text(encoding="utf-8"))
    assert claim["metadata"]["name"] == launcher["volumes"][0]["persistentVolumeClaim"]["claimName"]
    assert claim["spec"]["accessModes"] == ["ReadWriteMany"]

    instance = _yaml("dagster.yaml")
    queued = values["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"]
    assert queued["tagConcurrencyLimits"] == instance["concurrency"]["runs"]["tag_concurrency_limits"]
    assert values["additionalInstanceConfig"]["concurrency"]["pools"] == instance["concurrency"]["pools"]
    retries = values["dagsterDaemon"]["runRetries"]
    assert (retries["maxRetries"], retries["retryOnAssetOrOpFailure"]) == (
        instance["run_retries"]["max_retries"], instance["run_retries"]["retry_on_asset_or_op_failure"])
