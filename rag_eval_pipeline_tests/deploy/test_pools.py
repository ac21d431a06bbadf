"""Dagster concurrency pools on the steps that call outside services (``defs/pools.py``).

Which steps: exactly those that use a suite's judge resource (``<suite>__judge``: judge pool) or the
``systems`` resource (live systems pool), in every suite and its quick evaluation. Enforced: with the
judge pool's one slot held by another run, the sample's judge step does not start (the steps before it
do); it starts once the slot is freed, and the run succeeds.
"""

import threading
import time

import dagster as dg
import pytest

from rag_eval_pipeline.defs.pools import JUDGE_POOL, LIVE_SYSTEMS_POOL
from rag_eval_pipeline.defs.schedules import FULL, job_name
from rag_eval_pipeline_tests.deploy.test_executors import _sample_defs
from rag_eval_pipeline_tests.e2e.polling import wait_until


def _executable_assets(defs: dg.Definitions) -> dict[dg.AssetKey, dg.AssetsDefinition]:
    graph = defs.resolve_asset_graph()
    return {k: graph.assets_def_for_key(k) for k in graph.get_all_asset_keys()
            if graph.assets_def_for_key(k).is_executable}


def test_every_step_that_calls_the_judge_or_a_live_system_is_in_its_pool(tmp_path):
    assets = _executable_assets(_sample_defs(tmp_path))
    pools = {k.to_user_string(): a.node_def.pool for k, a in assets.items()}
    for key, a in assets.items():
        resources = a.required_resource_keys
        judge = any(r == "judge" or r.endswith("__judge") for r in resources)  # the suite's own judge resource
        expected = JUDGE_POOL if judge else LIVE_SYSTEMS_POOL if "systems" in resources else None
        assert a.node_def.pool == expected, (key.to_user_string(), sorted(resources))
    # the steps by name, in the suite and in its quick evaluation (independent of the resource rule above)
    for prefix in ("sample/", "sample/quick/"):
        assert [pools[prefix + n] for n in ("judge_labels", "answer_judgements", "answer_quality", "citation_claims",
                                            "citations", "nugget_labels", "rag_runs")] \
            == [JUDGE_POOL] * 6 + [LIVE_SYSTEMS_POOL]
    # 2 x (the judging step's 3 outputs, the citations step's 3 outputs, rag_runs)
    assert sum(p is not None for p in pools.values()) == 14


@pytest.mark.slow  # ~12 s idle, ~30 s on the shared 2-core machine
def test_the_judge_step_waits_for_a_slot_of_the_judge_pool(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\nconcurrency:\n  pools:\n    granularity: op\n",
                                       encoding="utf-8")
    defs = _sample_defs(tmp_path / "out")
    job = defs.resolve_job_def(job_name("sample", FULL))
    selection = [dg.AssetKey(["sample", n]) for n in ("corpus_snapshot", "golden_set", "rag_runs", "judge_labels",
                                                      "answer_judgements")]
    freed_at: list[float] = []
    seen: dict = {}

    with dg.DagsterInstance.from_config(str(home)) as instance:
        storage = instance.event_log_storage
        assert storage.supports_global_concurrency_limits
        storage.set_concurrency_slots(JUDGE_POOL, 1)
        assert storage.claim_concurrency_slot(JUDGE_POOL, "another-run", "its-judge-step").is_claimed

        def steps(event_type) -> set[str]:
            (run,) = instance.get_runs()
            return {e.step_key for e in instance.all_logs(run.run_id, of_type=event_type)}

        def holder():  # in the background: watch the run wait, then free the other run's slot
            try:
                wait_until("rag_runs to succeed", lambda: "sample__rag_runs" in steps(dg.DagsterEventType.STEP_SUCCESS),
                           timeout=300, interval=0.2)
                time.sleep(2.0)  # the judge step has had time to start, were it not waiting for the pool
                seen["started_while_held"] = steps(dg.DagsterEventType.STEP_START)
                seen["pending"] = storage.get_concurrency_info(JUDGE_POOL).pending_step_count
            finally:
                freed_at.append(time.time())
                storage.free_concurrency_slot_for_step("another-run", "its-judge-step")

        watcher = threading.Thread(target=holder, daemon=True)
        watcher.start()
        result = job.execute_in_process(instance=instance, asset_selection=selection)
        watcher.join(timeout=60)
        assert result.success
        (judge_start,) = [e for e in instance.all_logs(result.run_id, of_type=dg.DagsterEventType.STEP_START)
                          if e.step_key == "sample__judging"]
        info = storage.get_concurrency_info(JUDGE_POOL)

    # step keys carry the suite's prefix (defs/scope.py); the judging stage is one step
    assert {"sample__corpus_snapshot", "sample__golden_set", "sample__rag_runs"} <= seen["started_while_held"]
    assert "sample__judging" not in seen["started_while_held"] and seen["pending"] == 1
    assert judge_start.timestamp >= freed_at[0]  # started only after the slot was freed
    assert info.active_slot_count == 0 and info.slot_count == 1  # the run gave its slot back
