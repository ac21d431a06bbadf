"""Tables computed, written and read in parts (memory at scale) hold exactly what one pass gives.

Parts: ``question_metrics`` by golden-question batches (``core/pipeline.question_metric_batches``), the citation
and nugget tables by run-row batches (``build_citations`` / ``build_nuggets``), a Parquet file written batch by
batch (``core/storage.write_parquet_batches_atomic``), the summary read from a scan in slices
(``core/metrics/summary.summarise``). Each is compared with the one-pass result on the embedded sample, and the
sliced summary with a small example worked out by hand.
"""

import polars as pl
import pyarrow.parquet as pq
import pytest

import rag_eval_pipeline.core.metrics.summary as summary_module
from rag_eval_pipeline.core.pipeline import (
    build_citations,
    build_nuggets,
    build_question_metrics,
    build_summary,
    question_metric_batches,
)
from rag_eval_pipeline.core.report.access import find_leaks
from rag_eval_pipeline.core.storage import scan_slices, write_parquet_atomic, write_parquet_batches_atomic
from rag_eval_pipeline.core.table_files import read_file_metadata
from rag_eval_pipeline.core.tables import SCHEMAS
from rag_eval_pipeline_tests.core.sample_inputs import sample_chain

KEYS = ["system", "question_id", "metric", "k", "level"]


@pytest.fixture(scope="module")
def sample():
    return sample_chain()


def _one_pass(s):
    return build_question_metrics(s["cfg"], s["snapshot"], s["golden"], s["runs"], s["labels"], s["answers"],
                                  citations=(s["claims"], s["cites"]), nugget_labels=s["nuggets"])


def _batches(s, n, runs=None):
    info: dict = {}
    parts = list(question_metric_batches(s["cfg"], s["snapshot"], s["golden"], s["runs"] if runs is None else runs,
                                         s["labels"], s["answers"], citations=(s["claims"], s["cites"]),
                                         nugget_labels=s["nuggets"], info=info, batch_questions=n))
    return parts, info


@pytest.mark.slow  # the sample chain with the embedded judge (~15 s of CPU)
def test_question_metrics_in_batches_of_7_questions_hold_the_one_pass_rows_and_counts(sample):
    whole, info = _one_pass(sample)
    parts, batched_info = _batches(sample, 7)
    n_questions = sample["golden"].height
    assert len(parts) == -(-n_questions // 7) > 1  # ceil: every batch of 7 golden questions is one part
    batched = pl.concat(parts)
    assert batched.height == whole.height
    assert batched.sort(KEYS, nulls_last=True).equals(whole.sort(KEYS, nulls_last=True))
    assert batched_info == info
    # the aggregate over the parts is the aggregate over the one-pass table, bit for bit
    cfg, golden, snapshot = sample["cfg"], sample["golden"], sample["snapshot"]
    assert build_summary(cfg, batched, golden, snapshot).equals(build_summary(cfg, whole, golden, snapshot))


@pytest.mark.slow
def test_one_batch_is_the_one_pass_table_in_its_order_and_a_batch_missing_a_system_falls_back_to_it(sample):
    whole, info = _one_pass(sample)
    parts, batched_info = _batches(sample, sample["golden"].height)
    assert len(parts) == 1 and parts[0].equals(whole) and batched_info == info
    # drop one system's runs of the first 7 golden questions: a batch of 7 would not see that system, so the
    # table is made in one part (the system's missing-question rows would otherwise differ)
    first = sample["golden"]["question_id"].head(7).to_list()
    system = sample["runs"]["system"].unique().sort()[0]
    runs = sample["runs"].filter(~((pl.col("system") == system) & pl.col("question_id").is_in(first)))
    parts, _ = _batches(sample, 7, runs=runs)
    assert len(parts) == 1


@pytest.mark.slow
def test_citations_and_nuggets_judged_3_runs_at_a_time_are_the_one_call_tables_row_for_row(sample):
    cfg, snapshot, golden, runs, judge = (sample[k] for k in ("cfg", "snapshot", "golden", "runs", "judge"))
    claims, cites = build_citations(cfg, snapshot, golden, runs, judge, repeats=2, batch_runs=3)
    whole_claims, whole_cites = build_citations(cfg, snapshot, golden, runs, judge, repeats=2,
                                                batch_runs=runs.height)
    assert claims.height > 0 and claims.equals(whole_claims) and cites.equals(whole_cites)
    # rows of repeat 0 first, then repeat 1, each in run order, as one call writes them
    assert claims["repeat"].to_list() == sorted(claims["repeat"].to_list())
    nuggets = build_nuggets(cfg, snapshot, golden, runs, judge, repeats=2, batch_runs=3)
    assert nuggets.height > 0 and nuggets.equals(
        build_nuggets(cfg, snapshot, golden, runs, judge, repeats=2, batch_runs=runs.height))


@pytest.mark.slow
def test_a_file_written_batch_by_batch_equals_the_file_of_the_whole_table(sample, tmp_path):
    whole, _ = _one_pass(sample)
    parts, _ = _batches(sample, 7)
    one = write_parquet_atomic(pl.concat(parts), tmp_path / "one.parquet", table="question_metrics")
    many, rows = write_parquet_batches_atomic(iter(parts), tmp_path / "many.parquet", table="question_metrics")
    assert rows == whole.height
    assert pl.read_parquet(many).equals(pl.read_parquet(one))
    assert pq.read_schema(many).equals(pq.read_schema(one), check_metadata=False)
    meta_one, meta_many = read_file_metadata(one), read_file_metadata(many)
    meta_one.pop("rag_eval.written_at"), meta_many.pop("rag_eval.written_at")
    assert meta_many == meta_one and '"recall"' in meta_many["rag_eval.metrics"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["many.parquet", "one.parquet"]  # no temporary file left
    # slices of the scan, filtered, are the filtered table in order
    scan = pl.scan_parquet(many)
    team = pl.col("system") == "team_rag"
    assert pl.concat(list(scan_slices(scan, team, rows=50))).equals(scan.filter(team).collect())


def test_a_batch_of_another_shape_writes_nothing(tmp_path):
    good = pl.DataFrame(schema=SCHEMAS["question_metrics"])
    bad = pl.DataFrame({"system": ["s"]})
    with pytest.raises(Exception, match="question_metrics"):
        write_parquet_batches_atomic(iter([good, bad]), tmp_path / "qm.parquet", table="question_metrics")
    assert list(tmp_path.iterdir()) == []


def _qm(rows):
    return pl.DataFrame(rows, schema={"system": pl.Utf8, "question_id": pl.Utf8, "split": pl.Utf8,
                                      "metric": pl.Utf8, "k": pl.Int32, "value": pl.Float64, "status": pl.Utf8,
                                      "ranking_mode": pl.Utf8}, orient="row")


def test_the_summary_read_from_a_scan_two_rows_at_a_time_matches_a_hand_worked_example(tmp_path, monkeypatch):
    # 3 questions of split "test", system s, metric success at k 5: values 1, 0 and null (not evaluable).
    # By hand: numerator 1 + 0 = 1, denominator 2 (the null is left out), value 1/2 = 0.5, n 3,
    # n_not_evaluable 1; every non-null value is 0 or 1 and success is a proportion: a Wilson interval.
    # Metric mrr (not a proportion) on q1 only: 0.25 -> value 0.25 = 0.25 / 1, n 1, a bootstrap interval.
    qm = _qm([
        ("s", "q1", "test", "success", 5, 1.0, "ok", "system"),
        ("s", "q2", "test", "success", 5, 0.0, "ok", "system"),
        ("s", "q3", "test", "success", 5, None, "no_relevant", "system"),
        ("s", "q1", "test", "mrr", None, 0.25, "ok", None),
    ])
    path = tmp_path / "qm.parquet"
    qm.write_parquet(path)
    segments = pl.DataFrame({"question_id": ["q1", "q2", "q3"], "segment": ["all"] * 3})
    monkeypatch.setattr(summary_module, "SUMMARY_BATCH_ROWS", 2)
    streamed = summary_module.summarise(pl.scan_parquet(path), segments, bootstrap_resamples=50)
    eager = summary_module.summarise(qm, segments, bootstrap_resamples=50)
    assert streamed.equals(eager)
    recall = streamed.filter((pl.col("metric") == "success") & (pl.col("split") == "all")).row(0, named=True)
    assert (recall["numerator"], recall["denominator"], recall["value"]) == (1.0, 2.0, 0.5)
    assert (recall["n"], recall["n_not_evaluable"], recall["ci_method"]) == (3, 1, "wilson")
    mrr = streamed.filter((pl.col("metric") == "mrr") & (pl.col("split") == "test")).row(0, named=True)
    assert (mrr["numerator"], mrr["denominator"], mrr["value"], mrr["n"]) == (0.25, 1.0, 0.25, 1)
    assert mrr["ci_method"] == "bootstrap"
    assert set(streamed["split"].to_list()) == {"all", "test"}


def test_no_restricted_text_means_no_leak_and_a_restricted_one_is_still_found():
    shown = ["The refund takes 14 days from the day we receive the parcel.", "Shipping is free."]
    assert find_leaks(shown, []) == set()
    assert find_leaks(shown, [None, ""]) == set()
    # a 30-letter window of the restricted chunk appears in the first shown text only
    assert find_leaks(shown, ["Internal: the refund takes 14 days from the day we receive it"]) == {shown[0]}
