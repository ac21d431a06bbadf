"""judge_runs(progress=...) and JudgingProgress (core/judging.py): counts, cadence, a failing callback is harmless."""

from __future__ import annotations

import polars as pl

from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge
from rag_eval_pipeline.core.judging import JudgingProgress, judge_runs
from rag_eval_pipeline.core.tables import SCHEMAS

TEXT = "La biblioteca abre de lunes a viernes de 9 a 20 horas. Los sábados abre de 10 a 14 horas."


def _runs(n: int) -> pl.DataFrame:
    rows = []
    for i in range(n):
        rows.append({
            "system": "s", "question_id": f"q{i}", "retrieved": [{"chunk_id": "c#0", "score": 1.0, "rank": 1}],
            "decision": "abstain" if i % 4 == 0 else "answer", "answer": None if i % 4 == 0 else "Abre los sábados.",
            "citations": [], "error": None, "corpus_version": "cv", "golden_version": "gv", "retriever": "{}",
            "generator": "g", "model": "m", "prompt_version": "p",
        })
    return pl.DataFrame(rows, schema=SCHEMAS["rag_runs"])


def test_judge_runs_reports_progress_and_a_final_count():
    seen: list[dict] = []
    snapshot = pl.DataFrame({"chunk_id": ["c#0"], "text": [TEXT]})
    labels, judgements = judge_runs(_runs(20), snapshot, RuleBasedJudge(), repeats=2, progress=seen.append)
    assert judgements.height == 40
    assert seen[-1]["final"] is True and sum(p["final"] for p in seen) == 1
    assert seen[-1]["done"] == seen[-1]["total"] == 40
    assert seen[-1]["calls"] == 30  # abstentions need no judge call
    assert seen[-1]["errors"] == 0
    assert len(seen) >= 10  # every tenth of the items
    assert [p["done"] for p in seen] == sorted(p["done"] for p in seen)
    assert set(seen[0]) == {"done", "total", "errors", "calls", "elapsed_s", "calls_per_s", "final"}


def test_progress_reports_on_time_and_survives_a_failing_callback():
    now = [0.0]
    calls: list[dict] = []
    p = JudgingProgress(calls.append, total=1000, every=10_000, interval_s=2.0, clock=lambda: now[0])
    p.step(called=True)
    assert calls == []
    now[0] = 2.5
    p.step(called=True, error=True)
    assert calls[-1]["done"] == 2 and calls[-1]["errors"] == 1 and calls[-1]["calls_per_s"] == 0.8
    p.finish()
    assert calls[-1]["final"] is True
    p.finish()
    assert sum(c["final"] for c in calls) == 1

    def boom(_):
        raise RuntimeError("log sink down")

    q = JudgingProgress(boom, total=3, every=1)
    q.step()
    q.step()
    q.finish()  # no exception escapes


def test_no_callback_is_a_no_op():
    p = JudgingProgress(None, total=0)
    p.step()
    p.finish()
    assert p.done == 1


class _SlowJudge:
    """A concurrent judge that counts the calls it has started; every answer gets no claim."""

    name, model, prompt_sha256, concurrency = "slow", "slow-v1", "0" * 64, 4

    def __init__(self):
        import threading

        self.started = 0
        self._lock = threading.Lock()

    def judge(self, question, answer, contexts):
        import time

        from rag_eval_pipeline.core.judges.base import AnswerJudgement

        with self._lock:
            self.started += 1
        time.sleep(0.02)
        if answer.endswith("3."):
            raise RuntimeError("endpoint down")
        return AnswerJudgement(status="judged", claims=[])


def test_progress_arrives_while_concurrent_calls_are_still_running():
    judge = _SlowJudge()
    runs = _runs(40).with_columns(answer=pl.format("Respuesta {}.", pl.col("question_id").str.slice(1)))
    runs = runs.with_columns(decision=pl.lit("answer"))
    seen_started: list[int] = []
    reports: list[dict] = []

    def progress(p):
        reports.append(p)
        seen_started.append(judge.started)

    snapshot = pl.DataFrame({"chunk_id": ["c#0"], "text": [TEXT]})
    _, judgements = judge_runs(runs, snapshot, judge, progress=progress)
    assert judge.started == 40
    assert min(seen_started) < 40  # reported during the calls, not only after all of them
    assert reports[-1]["final"] and reports[-1]["calls"] == 40
    assert reports[-1]["errors"] == judgements.filter(pl.col("status") == "judge_error").height == 4
