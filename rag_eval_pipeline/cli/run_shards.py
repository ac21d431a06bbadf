"""``rag-eval run`` on a sharded suite (``shards: N``): the snapshot and golden set, every shard, then the rest.

Dagster runs one partition per run, so a sharded full evaluation is N + 2 in-process runs, one after the
other, in one command: the full evaluation's ``corpus_snapshot`` and ``golden_set``; the
``<suite>__question_shards`` job once per shard (partition ``"0"`` .. ``"N-1"``); then the rest of the full
evaluation (the merge of the shards, ``defs/shards.py``, and everything after it). A phase that fails stops
the command. Every run carries the tag ``rag_eval/evaluation`` (the first run's id), so the runs hold the
output folder together (``defs/io.py``). :class:`Evaluation` presents the runs as one result to the
command's printing (checks, failed steps, materialisations of every run; success when all succeeded).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field


@dataclass
class Evaluation:
    """The runs of one sharded evaluation, read as one ``ExecuteInProcessResult`` by ``rag-eval run``'s printing:
    ``run_id`` is the last run's (the one that writes the history and the promotion)."""

    results: list = field(default_factory=list)

    @property
    def success(self) -> bool:
        return bool(self.results) and all(r.success for r in self.results)

    @property
    def run_id(self) -> str:
        return self.results[-1].run_id

    @property
    def all_events(self) -> list:
        return [e for r in self.results for e in r.all_events]

    def get_asset_check_evaluations(self) -> list:
        return [e for r in self.results for e in r.get_asset_check_evaluations()]

    def get_asset_materialization_events(self) -> list:
        return [e for r in self.results for e in r.get_asset_materialization_events()]


def execute_sharded(defs, suite: str, job, *, instance, run_id: str, tags: dict, run_config: dict) -> Evaluation:
    """Run a sharded suite's full evaluation in process: ``job`` (``<suite>__full_evaluation``) for the snapshot
    and golden set, the suite's ``question_shards`` job once per shard, then ``job`` for everything else.
    Prints one line per phase on stderr. Output: the runs as one :class:`Evaluation`; stops at the first
    phase that fails."""
    import uuid

    import dagster as dg

    from rag_eval_pipeline.defs.io import EVALUATION_TAG
    from rag_eval_pipeline.defs.schedules import CLI_LOGGER_DEFS, SHARDS_JOB, job_name

    shard_job = defs.resolve_job_def(job_name(suite, SHARDS_JOB)).with_logger_defs(CLI_LOGGER_DEFS)
    inputs = [dg.AssetKey([suite, "corpus_snapshot"]), dg.AssetKey([suite, "golden_set"])]
    rest = sorted((k for k in job.asset_layer.executable_asset_keys if k not in inputs), key=lambda k: k.path)
    tags = {**tags, EVALUATION_TAG: run_id}
    keys = shard_job.partitions_def.get_partition_keys()
    out = Evaluation()

    def phase(label: str, target, **kwargs) -> bool:
        started = time.perf_counter()
        result = target.execute_in_process(instance=instance, raise_on_error=False, tags=tags, run_config=run_config,
                                           **kwargs)
        out.results.append(result)
        print(f"rag-eval: {label}: {'succeeded' if result.success else 'FAILED'} "
              f"({time.perf_counter() - started:.1f} s, run {result.run_id})", file=sys.stderr, flush=True)
        return result.success

    if not phase("corpus_snapshot and golden_set", job, asset_selection=inputs, run_id=run_id):
        return out
    for key in keys:
        if not phase(f"question shard {key} of {len(keys)}", shard_job, partition_key=key, run_id=str(uuid.uuid4())):
            return out
    phase(f"the merge of {len(keys)} shards and the rest", job, asset_selection=rest, run_id=str(uuid.uuid4()))
    return out
