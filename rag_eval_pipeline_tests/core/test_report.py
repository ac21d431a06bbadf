"""core/report.py: seed-003 bands at their edges, restricted text never shown, escaping, not-evaluable nulls,
trend page."""

from __future__ import annotations

import datetime as dt
import re

import polars as pl
import pytest

from rag_eval_pipeline.core.errors import SchemaError
from rag_eval_pipeline.core.report import (
    BANDS,
    Cell,
    build_report,
    find_leaks,
    interpretation_band,
    markdown_table,
    readable_by,
    trend_plot,
    trend_svg,
)
from rag_eval_pipeline.core.tables import SCHEMAS

MARKER = "MARKER-SECRET-0042"
SHORT_SECRET = "QX-99-Z"
PUBLIC = "The Lumo A1 can be returned within 30 calendar days from delivery, for any reason."
SECRET = f"Agents write the escalation code {MARKER} in the case file and approve the late return."


def _frame(rows: list[dict], table: str) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SCHEMAS[table])


def _snapshot() -> pl.DataFrame:
    base = {"doc_id": "d", "chunk_index": 0, "source": "s", "doc_type": "policy", "language": "en",
            "status": "active", "replaced_by": None, "valid_from": None, "valid_to": None, "sha256": "x"}
    return _frame([
        {**base, "chunk_id": "pub#0", "text": PUBLIC, "title": "Returns", "acl": []},
        {**base, "chunk_id": "sec#0", "text": SECRET, "title": "Internal escalation", "acl": ["staff"]},
        {**base, "chunk_id": "sec#1", "text": SHORT_SECRET, "title": "Internal code", "acl": ["staff"]},
        {**base, "chunk_id": "mixed#0", "text": "Open to customers and staff alike.", "title": "Mixed",
         "acl": ["staff", "customers"]},
    ], "corpus_snapshot")


def _golden() -> pl.DataFrame:
    base = {"golden_version": "gv", "split": "test", "user_groups": ["customers"], "claims": []}
    return _frame([
        {**base, "question_id": "q1", "question": "How long is the return period?", "answerability": "answerable",
         "relevant": [{"chunk_id": "pub#0", "grade": 3}], "reference_answer": "30 days.",
         "segments": ["lang=en"]},
        {**base, "question_id": "q2", "question": "Which code do agents write?", "answerability": "answerable",
         "relevant": [{"chunk_id": "sec#0", "grade": 3}], "reference_answer": f"The code is {MARKER}.",
         "segments": ["lang=en", "acl=restricted"], "user_groups": ["staff"]},
        {**base, "question_id": "q3", "question": "Can I return it after 40 days?", "answerability": "absent",
         "relevant": [], "reference_answer": "No.", "segments": ["lang=en"]},
        {**base, "question_id": "q4", "question": "Is there a short code?", "answerability": "absent",
         "relevant": [], "reference_answer": "No.", "segments": ["lang=en"]},
    ], "golden_set")


def _run(qid, answer, retrieved, citations=(), decision="answer"):
    return {"system": "sys", "question_id": qid, "decision": decision, "answer": answer,
            "retrieved": [{"chunk_id": c, "score": 1.0, "rank": i + 1} for i, c in enumerate(retrieved)],
            "citations": list(citations), "error": None, "corpus_version": "cv", "golden_version": "gv",
            "retriever": "{}", "generator": "gen", "model": "m", "prompt_version": "p"}


SCRIPT = "<script>alert('x')</script>"


def _runs() -> pl.DataFrame:
    return _frame([
        _run("q1", f"{SCRIPT} You have 30 calendar days from delivery.", ["pub#0"], ["pub#0"]),
        # used a restricted chunk: the whole answer is withheld
        _run("q2", f"Write {MARKER} in the case.", ["sec#0", "pub#0"], ["sec#0"]),
        # restricted text without retrieving the chunk: caught by the 20-character rule
        _run("q3", "Sure: agents WRITE the escalation   code and approve it.", ["pub#0"]),
        # a restricted chunk shorter than 20 characters, quoted whole
        _run("q4", f"Use {SHORT_SECRET.lower()} at checkout.", ["pub#0"]),
    ], "rag_runs")


def _labels() -> pl.DataFrame:
    base = {"system": "sys", "quote_found": True, "judge": "rule", "judge_model": "rule-v1",
            "prompt_sha256": "abc123", "repeat": 0, "error": None, "justification": "lexical"}
    return _frame([
        {**base, "question_id": "q1", "claim_id": "q1:c1", "claim": "30 calendar days.", "verdict": "SUPPORTED",
         "quote": "30 calendar days from delivery"},
        {**base, "question_id": "q1", "claim_id": "q1:c2", "claim": SCRIPT, "verdict": "NOT_MENTIONED",
         "quote": None, "quote_found": False},
        {**base, "question_id": "q2", "claim_id": "q2:c1", "claim": f"Write {MARKER}.", "verdict": "SUPPORTED",
         "quote": f"escalation code {MARKER}"},
        {**base, "question_id": "q3", "claim_id": "q3:c1", "claim": "agents write the escalation code",
         "verdict": "NOT_MENTIONED", "quote": None, "quote_found": False},
    ], "judge_labels")


def _judgements() -> pl.DataFrame:
    base = {"system": "sys", "judge": "rule", "judge_model": "rule-v1", "prompt_sha256": "abc123", "repeat": 0}
    return _frame([{**base, "question_id": q, "status": "judged", "n_claims": 1} for q in ("q1", "q2", "q3", "q4")],
                  "answer_judgements")


def _qm() -> pl.DataFrame:
    base = {"system": "sys", "split": "test", "k": None, "numerator": None, "denominator": None, "ranking_mode": None}
    rows = [
        {**base, "question_id": "q1", "metric": "faithfulness", "value": 0.5, "status": "ok"},
        {**base, "question_id": "q2", "metric": "faithfulness", "value": 0.9, "status": "ok"},
        {**base, "question_id": "q3", "metric": "faithfulness", "value": 0.0, "status": "ok"},
        {**base, "question_id": "q4", "metric": "faithfulness", "value": None, "status": "no_claims"},
        {**base, "question_id": "q3", "metric": "answer_without_evidence_rate", "value": 1.0, "status": "ok"},
        {**base, "question_id": "q4", "metric": "answer_without_evidence_rate", "value": 1.0, "status": "ok"},
    ]
    return _frame(rows, "question_metrics")


def _summary(faithfulness: float = 0.8499) -> pl.DataFrame:
    base = {"system": "sys", "split": "all", "segment": "all", "k": None, "n": 4, "ci_method": "wilson",
            "judge_errors": 0, "ranking_mode": "system", "small_segment": True}
    return _frame([
        {**base, "metric": "faithfulness", "value": faithfulness, "numerator": faithfulness * 3, "denominator": 3.0,
         "n_not_evaluable": 1, "ci_low": 0.40, "ci_high": 0.95, "ci_method": "bootstrap"},
        # not evaluable: no answerable question abstained on -> null, never 0
        {**base, "metric": "abstention_without_evidence", "value": None, "numerator": 0.0, "denominator": 0.0,
         "n_not_evaluable": 4, "ci_low": None, "ci_high": None, "ci_method": "none"},
        {**base, "metric": "recall", "k": 5, "value": 1.0, "numerator": 2.0, "denominator": 2.0, "n_not_evaluable": 2,
         "ci_low": 0.3, "ci_high": 1.0},
        {**base, "segment": "lang=en", "metric": "recall", "k": 5, "value": 1.0, "numerator": 2.0,
         "denominator": 2.0, "n_not_evaluable": 2, "ci_low": 0.3, "ci_high": 1.0},
    ], "metric_summary")


def _history() -> pl.DataFrame:
    t0 = dt.datetime(2026, 11, 1, 2, 0, tzinfo=dt.UTC)
    rows = []
    for i, (a, b) in enumerate([(0.70, 0.50), (0.72, None), (0.80, 0.55)]):
        for system, v in (("sys", a), ("<b>other</b>", b)):
            rows.append({"run_id": f"r{i}", "evaluated_at": t0 + dt.timedelta(days=i), "system": system,
                         "metric": "faithfulness", "k": None, "value": v, "numerator": None, "denominator": None,
                         "n": 4})
    return pl.DataFrame(rows, schema={"run_id": pl.Utf8, "evaluated_at": pl.Datetime("us", "UTC"), "system": pl.Utf8,
                                      "metric": pl.Utf8, "k": pl.Int32, "value": pl.Float64, "numerator": pl.Float64,
                                      "denominator": pl.Float64, "n": pl.Int64})


def _calibration(kappa: float | None = 0.8, stale: bool = False, missing: bool = False) -> pl.DataFrame:
    return pl.DataFrame({"level": ["claim"], "judge": ["rule"], "judge_model": ["rule-v1"], "prompt_sha256": ["abc123"],
                         "n": [34], "kappa": [kappa], "kappa_reason": [None if kappa is not None else "one label only"],
                         "stale": [stale], "missing": [missing]},
                        schema_overrides={"kappa": pl.Float64, "kappa_reason": pl.Utf8})


CALIBRATED = _calibration(0.8)


def _report(**kw):
    args = dict(summary=_summary(), question_metrics=_qm(), rag_runs=_runs(), golden=_golden(),
                snapshot=_snapshot(), judge_labels=_labels(), answer_judgements=_judgements(), calibration=CALIBRATED)
    args.update(kw)
    return build_report(**args)


# ---------------------------------------------------------------- bands

@pytest.mark.parametrize("value, label", [
    (1.0, "≥ 0.85"), (0.85, "≥ 0.85"), (17 / 20, "≥ 0.85"), (0.8499, "0.65–0.84"), (0.65, "0.65–0.84"),
    (0.6499, "0.50–0.64"), (0.50, "0.50–0.64"), (0.4999, "below 0.50"), (0.0, "below 0.50"),
])
def test_bands_at_their_edges(value, label):
    assert interpretation_band(value).label == label


def test_band_of_null_is_none_and_out_of_range_raises():
    assert interpretation_band(None) is None
    assert interpretation_band(float("nan")) is None
    with pytest.raises(ValueError):
        interpretation_band(1.2)
    assert [b.low for b in BANDS] == [0.85, 0.65, 0.50, 0.0]


def test_band_is_shown_beside_faithfulness_and_ci_spanning_bands_is_said():
    rep = _report(summary=_summary(0.8499))
    line = next(md_line for md_line in rep.markdown.splitlines() if md_line.startswith("| faithfulness |"))
    assert "0.8499" in line and "0.65–0.84" in line and "room to improve" in line
    assert "spans bands" in line  # CI [0.40, 0.95] crosses from the lowest band to the top one
    top = _report(summary=_summary(0.85)).headline
    assert next(r for r in top if r["metric"] == "faithfulness")["band"] == "≥ 0.85"


# ---------------------------------------------------------------- access control

def test_readable_by():
    assert readable_by([], ["customers"])
    assert readable_by(["staff", "customers"], ["customers"])
    assert not readable_by(["staff"], ["customers"])
    assert not readable_by(None, ["customers"])  # unknown acl: fail closed
    assert not readable_by(["staff"], [])


def test_find_leaks_folds_case_and_whitespace_and_catches_short_secrets():
    secret = "Agents write the escalation code in the file."
    leaks = find_leaks(["harmless text", "they WRITE  the\nescalation code", "say qx-99 now"], [secret, "QX-99"])
    assert leaks == {"they WRITE  the\nescalation code", "say qx-99 now"}
    with pytest.raises(ValueError):
        find_leaks([], [], window=0)


def test_restricted_text_never_appears_in_markdown_or_html():
    rep = _report()
    for page in (rep.markdown, rep.html):
        assert MARKER not in page
        assert SHORT_SECRET.lower() not in page.lower()
        assert "escalation code" not in page.lower()  # q3's answer copies restricted text without retrieving it
        assert "Internal escalation" not in page  # a restricted chunk's title is hidden too
        assert f"[restricted: {len(SECRET)} chars hidden]" in page
        assert PUBLIC[:40] in page  # readable chunks keep their preview
    assert rep.restricted_chunks >= 1 and rep.withheld >= 4


def test_viewer_in_the_group_sees_the_restricted_text():
    rep = _report(viewer_groups=["staff"])
    assert MARKER in rep.markdown and MARKER in rep.html
    assert "[restricted:" not in rep.markdown


def test_a_single_string_viewer_group_is_one_group():
    assert MARKER in _report(viewer_groups="staff").markdown


# ---------------------------------------------------------------- escaping and nulls

def test_script_in_an_answer_is_escaped():
    rep = _report()
    assert "<script>" not in rep.html and "<script>" not in rep.markdown
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in rep.html
    assert "&lt;script>" in rep.markdown  # the Markdown escapes what could open a tag
    assert "<script" not in rep.html.lower().replace("&lt;script", "")


def test_not_evaluable_is_shown_with_counts_never_as_zero():
    rep = _report()
    line = next(md_line for md_line in rep.markdown.splitlines()
                if md_line.startswith("| abstention_without_evidence |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    assert cells[1] == "not evaluable"
    assert cells[3] == "4" and cells[4] == "4"  # n and the not-evaluable count
    assert "0.0000" not in line and "0.000" not in cells[1]
    row = next(r for r in rep.headline if r["metric"] == "abstention_without_evidence")
    assert row["value"] is None
    assert "not evaluable" in rep.html


def test_sections_and_worst_questions_are_present():
    gates = [{"system": "sys", "metric": "recall", "k": 5, "candidate": 0.7, "baseline": 0.8, "difference": -0.1,
              "p_value": 0.01, "wins": 1, "ties": 2, "losses": 5, "status": "regression", "reason": "drop",
              "n": 8, "n_baseline": 9, "n_candidate_errors": 1, "candidate_all": 0.72, "baseline_all": 0.75}]
    calibration = pl.DataFrame({"level": ["claim"], "judge": ["rule"], "judge_model": ["rule-v1"],
                                "prompt_sha256": ["abc123"], "n": [None], "kappa": [None],
                                "kappa_reason": ["no human labels"], "stale": [False], "missing": [True]})
    rep = _report(gates=gates, calibration=calibration, history=_history())
    md = rep.markdown
    for heading in ("## Run", "## Summary", "## Retrieval failures and abstentions", "## Comparison with the baseline",
                    "## Judge calibration and noise", "## By segment", "## History", "## Questions to read"):
        assert heading in md
    # the gate's figures over the 8 shared questions, then (labelled apart) each side's mean over its own questions
    assert ("| sys | recall_5 | 0.7000 | 0.8000 | -0.1000 | n 8 of 9; 1 candidate error |  | 0.0100 | 1/2/5 | "
            "regression | drop | 0.7200 / 0.7500 |") in md
    assert "own means, all questions (candidate / baseline)" in md
    assert "missing" in md and "no human labels" in md
    assert "q3 — faithfulness 0.00; answered an absent question" in md
    assert "prompt sha256 abc123" in md
    assert "<svg" in rep.html and "<script" not in rep.html


def test_missing_column_raises_schema_error():
    with pytest.raises(SchemaError, match="rag_runs"):
        _report(rag_runs=_runs().drop("citations"))
    with pytest.raises(ValueError):
        _report(worst_n=-1)


# ---------------------------------------------------------------- trend

def test_trend_plot_writes_a_self_contained_svg_page(tmp_path):
    path = trend_plot(_history(), ["faithfulness", ("recall", 5)], tmp_path / "trend.html")
    page = path.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<svg") == 1  # recall_5 has no history: said in words
    assert "No history for this metric." in page
    assert "<script" not in page and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "&lt;b&gt;other&lt;/b&gt;" in page and "<b>other" not in page
    svg = trend_svg(_history(), "faithfulness")
    # "sys" has one unbroken line of 3 points; the other system's null in run r1 breaks its line into single points
    assert len(re.findall(r"<polyline", svg)) == 1
    assert len(re.findall(r"\(run r\d\)</title>", svg)) == 5  # one marker per non-null point


def test_trend_plot_on_empty_history(tmp_path):
    empty = _history().clear()
    page = trend_plot(empty, ["faithfulness"], tmp_path / "t.html").read_text(encoding="utf-8")
    assert "No history yet." in page
    with pytest.raises(SchemaError):
        trend_plot(empty.drop("value"), ["faithfulness"], tmp_path / "t2.html")


# ---------------------------------------------------------------- the Markdown-table helper

def _cells(line: str) -> list[str]:
    """Split one Markdown table line on unescaped pipes (as GitHub's table extension does)."""
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def test_markdown_table_escapes_pipes_newlines_and_markup():
    table = markdown_table(["system", "note"], [["a|b", "line one\nline two"], ["<script>x</script>", None],
                                                [Cell("cell text", css="num"), 0.5]])
    lines = table.splitlines()
    assert lines[0] == "| system | note |" and lines[1] == "|---|---|"
    assert len(lines) == 5  # a newline inside a value never starts a new row
    assert [len(_cells(line)) for line in lines[2:]] == [2, 2, 2]
    assert _cells(lines[2]) == ["a\\|b", "line one line two"]
    assert _cells(lines[3]) == ["&lt;script>x&lt;/script>", ""]
    assert _cells(lines[4]) == ["cell text", "0.5"]
    with pytest.raises(ValueError, match="row 1 has 1 cells for 2 columns"):
        markdown_table(["a", "b"], [["only one"]])


# ---------------------------------------------------------------- judge trust and judge errors beside the values

def _faithfulness_line(markdown: str) -> str:
    return next(line for line in markdown.splitlines() if line.startswith("| faithfulness |"))


@pytest.mark.parametrize("calibration, floor, why", [
    (None, 0.4, "the configuration has no calibration section"),
    (_calibration(0.169), 0.4, "κ 0.169 below the floor 0.4"),  # a judge below the floor (the sample's reaches 0.518)
    (_calibration(0.8, stale=True), 0.4, "another judge"),
    (_calibration(None, missing=True), 0.4, "no calibration against human labels for this judge"),
    (_calibration(0.5), 0.6, "κ 0.500 below the floor 0.6"),
])
def test_an_uncalibrated_judge_never_reads_healthy_in_green(calibration, floor, why):
    rep = _report(summary=_summary(0.95), calibration=calibration, kappa_floor=floor)
    line = _faithfulness_line(rep.markdown)
    assert "0.9500" in line and "judge not calibrated" in line and why in line
    for page in (rep.markdown, rep.html):
        assert "healthy" not in page
    assert "band-good" not in rep.html.split("</style>", 1)[1]  # the CSS defines the class; no cell uses it
    assert next(r for r in rep.headline if r["metric"] == "faithfulness")["band"] == "judge not calibrated"
    assert not rep.judge_calibrated and why in rep.why_not_calibrated


def test_a_calibrated_judge_without_errors_reads_the_band():
    rep = _report(summary=_summary(0.95), calibration=_calibration(0.8), kappa_floor=0.4)
    line = _faithfulness_line(rep.markdown)
    assert "≥ 0.85: healthy" in line
    assert 'class="band-good"' in rep.html and rep.judge_calibrated


def _summary_with_judge_errors(errors: int) -> pl.DataFrame:
    s = _summary(0.95).with_columns(
        pl.when(pl.col("metric") == "faithfulness").then(pl.lit(errors)).otherwise(pl.col("judge_errors"))
        .cast(pl.Int64).alias("judge_errors"))
    seg = s.filter(pl.col("metric") == "faithfulness").with_columns(
        pl.lit("lang=en").alias("segment"), pl.lit(errors - 1).cast(pl.Int64).alias("judge_errors"))
    return pl.concat([s, seg]).cast(SCHEMAS["metric_summary"])


def test_judge_errors_sit_beside_every_judge_based_value_and_block_healthy():
    gates = [{"system": "sys", "metric": "faithfulness", "k": None, "candidate": 0.95, "baseline": 0.9,
              "difference": 0.05, "p_value": 0.5, "wins": 1, "ties": 2, "losses": 1, "status": "pass", "reason": ""}]
    rep = _report(summary=_summary_with_judge_errors(3), calibration=_calibration(0.8), gates=gates)
    cells = _cells(_faithfulness_line(rep.markdown))
    assert cells[6] == "3"  # the judge-errors column
    assert "healthy" not in cells[8] and "3 judge error(s)" in cells[8]
    assert "healthy" not in rep.markdown and 'class="band-good"' not in rep.html
    recall = _cells(next(line for line in rep.markdown.splitlines() if line.startswith("| recall_5 |")))
    assert recall[6] == "—"  # not judge-based
    row = next(r for r in rep.headline if r["metric"] == "faithfulness")
    assert row["judge_errors"] == 3 and "judge errors" in row["band"]
    assert next(r for r in rep.headline if r["metric"] == "recall_5")["judge_errors"] is None
    segment_line = next(line for line in rep.markdown.splitlines() if line.startswith("| lang=en |"))
    assert "· judge errors 2" in segment_line  # the segment's own count
    gate_line = next(line for line in rep.markdown.splitlines() if line.startswith("| sys | faithfulness |"))
    assert "0.9500 · judge errors 3" in gate_line  # split test absent: the candidate's count over all questions


# ---------------------------------------------------------------- context-window misses

def test_evidence_below_the_context_window_is_a_context_window_miss_not_evidence_retrieved():
    from rag_eval_pipeline.core.report.context import context_k_of

    assert context_k_of('extractive-v1 {"abstain_threshold": 0.5, "context_k": 3, "language": "es"}') == 3
    assert context_k_of("my own generator") is None and context_k_of(None) is None
    assert context_k_of('{"context_k": 0}') is None
    generator = 'extractive-v1 {"abstain_threshold": 0.5, "context_k": 1}'
    runs = _frame([
        {**_run("q1", None, ["mixed#0", "pub#0"], decision="abstain"), "generator": generator},  # evidence at rank 2
        {**_run("q2", None, [], decision="abstain"), "generator": generator},
    ], "rag_runs")
    base = {"system": "sys", "split": "test", "k": None, "numerator": None, "denominator": None, "ranking_mode": None,
            "status": "ok"}
    qm = _frame([{**base, "question_id": "q1", "metric": "false_abstention_rate", "value": 1.0},
                 {**base, "question_id": "q1", "metric": "abstention_with_evidence", "value": 1.0},
                 {**base, "question_id": "q2", "metric": "false_abstention_rate", "value": 1.0},
                 {**base, "question_id": "q2", "metric": "abstention_with_evidence", "value": 0.0}], "question_metrics")
    rep = _report(rag_runs=runs, question_metrics=qm, judge_labels=_labels().clear(),
                  answer_judgements=_judgements().clear())
    md = rep.markdown
    assert "q1 — false abstention, context-window miss (evidence retrieved at rank 2, below the generator's " \
           "context_k 1)" in md
    assert "with the evidence retrieved" not in md
    assert "q2 — false abstention (evidence not retrieved)" in md
    decisions = next(line for line in md.splitlines() if line.startswith("| sys |") and "context_k 1" in line)
    assert decisions.rstrip(" |").endswith("1/2 (context_k 1)")  # q1 is a miss; q2 retrieved nothing
    assert "evidence (grade 3), below the context window" in md


def test_without_a_recorded_context_k_no_miss_is_claimed():
    rep = _report()  # the runs' generator is "gen": no context_k
    assert "context_k unknown" in rep.markdown and "context-window miss (" not in rep.markdown


# ---------------------------------------------------------------- definitions, not internal file names

def test_report_text_cites_the_definitions_page_not_internal_files(tmp_path):
    rep = _report(history=_history(), calibration=_calibration(0.169))
    trend = trend_plot(_history(), ["faithfulness"], tmp_path / "trend.html").read_text(encoding="utf-8")
    for page in (rep.markdown, rep.html, trend):
        assert "seed" not in page.lower()
        assert not re.search(r"\b[\w/]+\.(py|txt)\b", page), re.search(r"\b[\w/]+\.(py|txt)\b", page)
    assert "docs/METRICS.md" in rep.markdown and "docs/METRICS.md#evidence_retrieved" in rep.markdown
    assert "docs/METRICS.md#faithfulness" in rep.html  # the metric's tooltip


# ---------------------------------------------------------------- trend labels

def _tick_labels(svg: str) -> list[tuple[float, str]]:
    return [(float(x), text) for x, text in re.findall(r'<text class="tick" x="([\d.]+)"[^>]*>([^<]+)</text>', svg)]


def test_trend_time_labels_never_overlap():
    t0 = dt.datetime(2026, 11, 1, 2, 0, tzinfo=dt.UTC)
    # six runs within ten minutes (a busy afternoon), then one a week later
    stamps = [t0 + dt.timedelta(minutes=2 * i) for i in range(6)] + [t0 + dt.timedelta(days=7)]
    hist = pl.DataFrame([{"run_id": f"r{i}", "evaluated_at": t, "system": "sys", "metric": "faithfulness", "k": None,
                          "value": 0.5 + i / 20} for i, t in enumerate(stamps)],
                        schema={"run_id": pl.Utf8, "evaluated_at": pl.Datetime("us", "UTC"), "system": pl.Utf8,
                                "metric": pl.Utf8, "k": pl.Int32, "value": pl.Float64})
    svg = trend_svg(hist, "faithfulness")
    old_style = re.findall(r'<text x="([\d.]+)" y="\d+" text-anchor="middle">20', svg)
    labels = _tick_labels(svg) or [(float(x), "2026-11-01 02:00") for x in old_style]
    assert len(labels) >= 2
    # an 11 px label of 16 characters is at most 16 x 0.62 x 11 ≈ 109 px wide: centred labels need that much apart
    for (xa, ta), (xb, tb) in zip(labels, labels[1:]):
        assert xb - xa >= (len(ta) + len(tb)) / 2 * 0.62 * 11, (labels, svg[:200])
    assert labels[0][1] == "2026-11-01 02:00" and labels[-1][1] == "2026-11-08 02:00"  # first and last kept


def _legend_rows(svg: str) -> list[float]:
    return [float(y) for y in re.findall(r'<text (?:class="legend" )?x="[\d.]+" y="([\d.]+)">(?!\d)', svg)]


def test_trend_legend_fits_and_systems_with_equal_values_stay_apart():
    t0 = dt.datetime(2026, 11, 1, 2, 0, tzinfo=dt.UTC)
    systems = [f"system_{i:02d}_with_a_rather_long_name" for i in range(20)]
    hist = pl.DataFrame([{"run_id": f"r{d}", "evaluated_at": t0 + dt.timedelta(days=d), "system": s,
                          "metric": "faithfulness", "k": None, "value": 0.7}  # every system the same value
                         for d in range(3) for s in systems],
                        schema={"run_id": pl.Utf8, "evaluated_at": pl.Datetime("us", "UTC"), "system": pl.Utf8,
                                "metric": pl.Utf8, "k": pl.Int32, "value": pl.Float64})
    svg = trend_svg(hist, "faithfulness")
    height = float(re.search(r'<svg [^>]*height="(\d+)"', svg).group(1))
    width = float(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    rows = sorted(y for y in _legend_rows(svg) if y < height - 10)
    legend = re.findall(r'<text (?:class="legend" )?x="([\d.]+)" y="[\d.]+">([^<]+)', svg)
    legend = [(float(x), t) for x, t in legend if not t[0].isdigit() and "(UTC)" not in t]
    assert len(legend) == 20
    assert all(y + 4 <= height for y in _legend_rows(svg))  # inside the picture
    assert all(b - a >= 11 for a, b in zip(rows, rows[1:]))  # rows of 11 px text do not overlap
    assert all(x + len(t) * 0.62 * 11 <= width for x, t in legend)  # nor run off the right edge
    lines = re.findall(r"<polyline [^>]*>", svg)
    styles = {(re.search(r'stroke="([^"]+)"', tag).group(1),
               (re.search(r'stroke-dasharray="([^"]+)"', tag) or re.match("", "")).group(0)) for tag in lines}
    assert len(lines) == 20 and len(styles) == 20  # equal lines differ in colour and dash, not drawn as one
    assert "(equal values)" in svg  # a shared point's tooltip names every system on it


def test_a_stale_kappa_is_labelled_with_the_judge_it_was_made_for():
    stale = _calibration(0.8, stale=True).with_columns(
        pl.lit("rule").alias("calibrated_judge"), pl.lit("rule-v0").alias("calibrated_judge_model"),
        pl.lit("f" * 64).alias("calibrated_prompt_sha256"))
    rep = _report(calibration=stale)
    row = next(line for line in rep.markdown.splitlines() if line.startswith("| claim | rule / rule-v1 |"))
    assert "| stale |" in row and "0.800 (made for rule / rule-v0 / ffffffffffff, not this judge)" in row


def test_the_bands_follow_the_one_calibration_status_of_the_decision():
    # No calibration section, yet a calibration table with a current κ 0.8 ≥ 0.4 (rows of an older history):
    # the decision says not_configured, so the bands must not be read either (they used to read "healthy").
    from rag_eval_pipeline.core.metrics.calibration_status import calibration_status
    from rag_eval_pipeline.core.report.decision import decide

    status = calibration_status(CALIBRATED, configured=False, kappa_floor=0.4, gated_metrics=[])
    assert status.state == "not_configured"
    d = decide([], status, split="test", split_questions=None, baseline="b", promote=None)
    rep = _report(summary=_summary(0.95), calibration=CALIBRATED, kappa_floor=0.4, decision=d)
    assert not rep.judge_calibrated and rep.why_not_calibrated == "the configuration has no calibration section"
    assert next(r for r in rep.headline if r["metric"] == "faithfulness")["band"] == "judge not calibrated"
    assert "healthy" not in rep.markdown
    # the same table with a configured, passing status reads the band
    ok = calibration_status(CALIBRATED, configured=True, kappa_floor=0.4, gated_metrics=[])
    rep = _report(summary=_summary(0.95), calibration=CALIBRATED,
                  decision=decide([], ok, split="test", split_questions=None, baseline="b", promote=None))
    assert rep.judge_calibrated and next(r for r in rep.headline if r["metric"] == "faithfulness")["band"] == "≥ 0.85"


# ---------------------------------------------------------------- document-level relevance

def _with_levels(summary: pl.DataFrame, doc_rows: list[dict], chunk_level: bool) -> pl.DataFrame:
    """``summary`` with a ``level`` column: recall rows chunk-level (or dropped when ``chunk_level`` is False),
    other rows level-less, plus ``doc_rows`` at document level."""
    s = summary.with_columns(pl.when(pl.col("metric") == "recall").then(pl.lit("chunk")).otherwise(None)
                             .alias("level"))
    if not chunk_level:
        s = s.filter(pl.col("metric") != "recall")
    doc = pl.DataFrame([{**r, "level": "doc"} for r in doc_rows], schema_overrides=s.schema)
    return pl.concat([s, doc.select(s.columns)], how="vertical_relaxed")


_DOC_RECALL = {"system": "sys", "split": "all", "segment": "all", "metric": "recall", "k": 5, "value": 0.75,
               "numerator": 3.0, "denominator": 4.0, "n": 4, "n_not_evaluable": 0, "ci_low": 0.2, "ci_high": 1.0,
               "ci_method": "bootstrap", "judge_errors": 0, "ranking_mode": "system", "small_segment": True}


def test_document_level_rows_are_printed_beside_the_chunk_level_ones_and_said_so():
    # both levels judged: the summary table shows recall_5 (chunk: 2/2 from _summary) and recall_5 (doc): 3/4
    rep = _report(summary=_with_levels(_summary(), [_DOC_RECALL], chunk_level=True))
    rows = {r["metric"]: (r["numerator"], r["denominator"]) for r in rep.headline}
    assert rows["recall_5"] == (2.0, 2.0) and rows["recall_5 (doc)"] == (3.0, 4.0)
    lines = rep.markdown.splitlines()
    assert [line.split("|")[1].strip() for line in lines if line.startswith("| recall_5")] == ["recall_5",
                                                                                            "recall_5 (doc)"]
    assert "(doc) = scored per document" in rep.markdown and "METRICS.md#document-level-relevance" in rep.markdown
    # the segment table reads one level per metric: chunk when it exists (bare name)
    assert any(line.startswith("| segment | n | recall_5 |") for line in lines)


def test_a_golden_set_judged_per_document_only_reads_doc_everywhere_recall_is_shown():
    seg = {**_DOC_RECALL, "segment": "lang=en", "value": 0.5, "numerator": 1.0, "denominator": 2.0}
    rep = _report(summary=_with_levels(_summary(), [_DOC_RECALL, seg], chunk_level=False))
    assert [r["metric"] for r in rep.headline if r["metric"].startswith("recall")] == ["recall_5 (doc)"]
    assert any(line.startswith("| segment | n | recall_5 (doc) |") for line in rep.markdown.splitlines())
    gates = [{"system": "sys", "metric": "recall", "k": 5, "level": "doc", "candidate": 0.75, "baseline": 0.8,
              "difference": -0.05, "p_value": 0.5, "wins": 0, "ties": 3, "losses": 1, "status": "pass",
              "reason": "", "blocking": True, "passed": True}]
    rep = _report(summary=_with_levels(_summary(), [_DOC_RECALL], chunk_level=False), gates=gates)
    assert any(line.startswith("| sys | recall_5 (doc) |") for line in rep.markdown.splitlines())
    # a summary of before levels existed (no level column) prints bare names and no (doc) note
    rep = _report()
    assert "(doc)" not in rep.markdown


def test_the_history_of_a_metric_scored_per_document_only_says_doc():
    t0 = dt.datetime(2026, 11, 1, 2, 0, tzinfo=dt.UTC)
    hist = pl.DataFrame([{"run_id": f"r{i}", "evaluated_at": t0 + dt.timedelta(days=i), "system": "sys",
                          "metric": "recall", "k": 5, "value": v, "numerator": None, "denominator": None, "n": 4,
                          "level": "doc"} for i, v in enumerate((0.5, 0.75))],
                        schema_overrides={"evaluated_at": pl.Datetime("us", "UTC"), "k": pl.Int32})
    rep = _report(summary=_with_levels(_summary(), [_DOC_RECALL], chunk_level=False), history=hist,
                  trend_metrics=["recall_5"])
    row = next(line for line in rep.markdown.splitlines() if line.startswith("| sys | recall_5"))
    assert row.startswith("| sys | recall_5 (doc) | 0.5000 | 0.7500 | +0.2500 |")  # 0.75 - 0.5, by hand
    assert "recall_5 (doc) over the recorded runs" in rep.markdown
