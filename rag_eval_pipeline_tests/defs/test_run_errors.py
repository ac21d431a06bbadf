"""A live system whose calls fail, said plainly: errors counted by reason, reported apart from retrieval and
decision rates (never scored as empty retrievals), and blocking promotion above ``gates.max_run_error_share``."""

import json

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.cli.run_output import run_error_lines
from rag_eval_pipeline.core.systems.error_reasons import error_counts, error_reason
from rag_eval_pipeline.definitions import ASSETS, CHECKS, build_resources
from rag_eval_pipeline_tests.conftest import SAMPLE_DIR
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict
from rag_eval_pipeline_tests.servers.local import JsonPostServer, send_json

TEAM_LOG = SAMPLE_DIR / "runs" / "team_rag.jsonl"


class PostRefused(JsonPostServer):
    """An endpoint that refuses POST with 405 for every question but the ``allowed`` ones, which get the sample
    team's logged answer (a server configured for GET only, the mistake of the issue)."""

    def __init__(self, allowed: set[str]):
        self.allowed = allowed
        self.records = {json.loads(x)["question_id"]: json.loads(x) for x in
                        TEAM_LOG.read_text(encoding="utf-8").splitlines() if x.strip()}
        super().__init__()

    def handle(self, h, body: dict) -> None:
        qid = body.get("question_id")
        if qid in self.allowed:
            send_json(h, 200, json.dumps(self.records[qid]).encode())
        else:
            send_json(h, 405, b'{"detail": "Method Not Allowed"}')


@pytest.mark.parametrize("text, reason", [
    ("system 'web', question 'q01': HTTP 405: '{\"detail\": \"Method Not Allowed\"}' (after 1 attempt(s))", "HTTP 405"),
    ("system 'web', question 'q02': timeout: no complete reply within timeout_s=10 s (after 3 attempt(s))", "timeout"),
    ("system 'py', question 'q03': the callable raised ValueError: index shard offline", "raised ValueError"),
    ("system 't', question 'q04': no trace for this question in /x/traces.jsonl", "no trace"),
    # past a size bound: the kind the manual names (docs/systems.md, "Bounds"), not a schema mismatch
    ("system 'web', question 'q1': reply of 12583021 bytes (Content-Length) is larger than max_reply_bytes=10485760",
     "too_large"),
    ("system 'web', question 'q2': reply larger than max_reply_bytes=10485760 (decompressed bytes; the body was "
     "abandoned there)", "too_large"),
    ("system 'web', question 'q3': reply field 'answer' has 120000 characters; expected at most 100000", "too_large"),
    ("system 'py', question 'q4': return value is larger than max_reply_bytes=1024 (about 2048 bytes as JSON, "
     "counted up to the cap)", "too_large"),
    ("system 'web', question 'q5': path 'data.hits' lists 10001 hits; expected at most 10000", "too_large"),
    ("system 'web', question 'q6': reply field 'retrieved' is a string; expected a list",
     "reply outside the run-log schema"),  # a schema mismatch keeps its label
    ("generator timeout after 30 s", "generator timeout after 30 s"),  # a log's own words
    (None, "(no reason given)"),
])
def test_each_error_text_has_a_short_reason(text, reason):
    assert error_reason(text) == reason


@pytest.mark.slow
def test_an_endpoint_refusing_post_is_said_plainly_reported_apart_and_blocks_promotion(tmp_path):
    allowed = {"q01", "q02", "q03", "q04"}
    with PostRefused(allowed) as server:
        cfg = sample_config_dict()
        cfg["systems"].append({"name": "team_http", "kind": "http", "url": server.url, "max_retries": 0})
        cfg["gates"]["candidate_systems"] = ["team_http"]
        cfg["gates"]["promote"] = "team_http"
        path = tmp_path / "config.yaml"
        path.write_text(yaml.safe_dump(cfg, allow_unicode=True), encoding="utf-8")
        out = tmp_path / "out"
        result = dg.materialize([*ASSETS, *CHECKS], resources=build_resources(str(path), str(out)),
                                raise_on_error=False, instance=dg.DagsterInstance.ephemeral())
    runs = pl.read_parquet(out / "rag_runs.parquet")
    counts = error_counts(runs)["team_http"]
    assert (counts["questions"], counts["errors"]) == (52, 48)
    assert counts["by_reason"] == {"HTTP 405": 48}
    assert counts["first_example"]["question_id"] == "q05"
    lines = run_error_lines(out / "rag_runs.parquet")
    assert "  system team_http: 48 of 52 questions failed (92%): HTTP 405 \u00d7 48" in lines
    assert "  system team_rag: 1 of 52 questions failed (2%): generator timeout after 30 s \u00d7 1" in lines

    # reported apart: the 48 errored questions are null (run_error) in retrieval and decisions, never 0
    qm = pl.read_parquet(out / "question_metrics.parquet").filter(pl.col("system") == "team_http")
    recall = qm.filter((pl.col("metric") == "recall") & (pl.col("k") == 5))
    errored = recall.filter(~pl.col("question_id").is_in(list(allowed)))
    assert set(errored["status"]) == {"run_error"} and errored["value"].null_count() == 48
    team = pl.read_parquet(out / "question_metrics.parquet").filter(
        (pl.col("system") == "team_rag") & (pl.col("metric") == "recall") & (pl.col("k") == 5)
        & pl.col("question_id").is_in(list(allowed)))
    summary = pl.read_parquet(out / "metric_summary.parquet").filter(
        (pl.col("system") == "team_http") & (pl.col("split") == "all") & (pl.col("segment") == "all"))
    row = summary.filter((pl.col("metric") == "recall") & (pl.col("k") == 5))
    # the mean is over the four answered questions only: the team log's values for them (same answers)
    want = team["value"].drop_nulls()
    assert row["denominator"][0] == want.len() and row["value"][0] == pytest.approx(want.mean())
    err = summary.filter(pl.col("metric") == "run_error_rate")
    assert (err["numerator"][0], err["denominator"][0]) == (48.0, 52.0)

    check = next(e for e in result.get_asset_check_evaluations() if e.check_name == "run_errors_within_share")
    assert not check.passed and check.metadata["over_limit"].value == ["team_http"]
    assert check.metadata["limit"].value == pytest.approx(0.10)
    assert result.is_node_untouched("promotion")
    # the report asset (what a Dagster user opens beside the failed check) and decision.json say the same: FAIL,
    # not promoted, the check named with its reason (48/52 = 0.923 > 0.1); team_rag's 1/52 = 0.019 is within it
    reason = ("check run_errors_within_share: system team_http: 48 of 52 runs errored (share 0.923 > "
              "gates.max_run_error_share 0.1): HTTP 405 \u00d7 48")
    assert check.metadata["reason"].value == reason.removeprefix("check run_errors_within_share: ")
    decision = json.loads((out / "decision.json").read_text(encoding="utf-8"))
    assert decision["verdict"] == "fail" and decision["promotion_action"] == "blocked"
    assert reason in decision["blocking_failures"]
    [report] = [e.materialization.metadata for e in result.get_asset_materialization_events()
                if e.asset_key is not None and e.asset_key.path[-1] == "evaluation_report"]
    assert report["verdict"].value == "FAIL" and reason in report["blocking_failures"].value
    assert report["promotion"].value.startswith("not promoted: ")


def test_judge_error_reasons_are_counted_and_capped():
    import polars as pl

    from rag_eval_pipeline.defs.judging import judge_error_reasons

    trunc = "truncated: JSON ends early after 39 characters (after 2 attempt(s))"
    # 3 truncated + 2 timeouts + 1 null + one each of 5 other reasons = 11 rows, 8 distinct reasons;
    # the first 5 by count then text: trunc ×3, timeout ×2, then the 1-count ones sorted: "(no reason given)",
    # "r0", "r1"; the 3 left ("r2", "r3", "r4") are 3 rows
    texts = [trunc] * 3 + ["timeout: 30 s"] * 2 + [None] + [f"r{i}" for i in range(5)]
    rows = pl.DataFrame({"error": texts}, schema={"error": pl.Utf8})
    assert judge_error_reasons(rows) == [f"{trunc} × 3", "timeout: 30 s × 2", "(no reason given) × 1", "r0 × 1",
                                         "r1 × 1", "... and 3 more reason(s) (3 rows)"]
    assert judge_error_reasons(rows.head(0)) == []
