"""judge_calibration, its blocking check and judge_variance, materialised on tiny hand-made inputs.

The tables are computed in the aggregate stage (defs/aggregate.py) from the functions of defs/calibration.py;
here each function is wrapped in a one-table asset so that it can run on judge labels alone."""

import json

import dagster as dg
import polars as pl
import pytest
import yaml

from rag_eval_pipeline.core.metrics.calibration import calibrate, results_to_frame
from rag_eval_pipeline.core.tables import conform, empty
from rag_eval_pipeline.defs.calibration import (
    HISTORY_FILE,
    judge_calibrated_above_floor,
    judge_calibration,
    judge_variance,
)
from rag_eval_pipeline.defs.io import ParquetIOManager
from rag_eval_pipeline.defs.resources import EvalSettings, TableStore

S, N = "SUPPORTED", "NOT_MENTIONED"
# 20 claims: people and judge agree on 18 (kappa 0.8 with 10 / 10 marginals)
HUMAN = [S] * 10 + [N] * 10
JUDGE = [S] * 9 + [N] + [S] + [N] * 9


def labels(verdicts, prompt="h", repeats=1, flip_last=False) -> pl.DataFrame:
    rows = []
    for rep in range(repeats):
        for i, v in enumerate(verdicts):
            if flip_last and rep == 1 and i == len(verdicts) - 1:
                v = S if v == N else N
            rows.append({"system": "sys", "question_id": f"q{i}", "claim_id": f"q{i}:c1", "claim": "x",
                         "verdict": v, "quote": None, "quote_found": v == S, "justification": "",
                         "judge": "rule_based_lexical", "judge_model": "v1", "prompt_sha256": prompt,
                         "repeat": rep, "error": None, "support_score": None})
    return conform(pl.DataFrame(rows, schema_overrides={"repeat": pl.Int32, "quote": pl.Utf8, "error": pl.Utf8,
                                                        "support_score": pl.Float64}),
                   "judge_labels")


def write_config(tmp_path, calibration=None, gates=None) -> str:
    cfg = {"corpus": {"source": "documents_dir", "path": "docs"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "sys", "kind": "reference"}]}
    if calibration is not None:
        # these tiny hand-made inputs hold a few labels: min_labels 1 unless the test sets it (its own tests below)
        cfg["calibration"] = {"min_labels": 1, **calibration}
    if gates is not None:
        cfg["gates"] = {"thresholds": gates}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    (tmp_path / "docs").mkdir(exist_ok=True)  # the corpus folder must exist when the configuration loads
    n = len(HUMAN)
    pl.DataFrame({"system": ["sys"] * n, "question_id": [f"q{i}" for i in range(n)],
                  "claim_id": [f"q{i}:c1" for i in range(n)], "claim": ["x"] * n, "verdict": HUMAN,
                  "quote": ["the quote" if v == S else "" for v in HUMAN]}).write_csv(tmp_path / "human.csv")
    return str(path)


def trust_assets(settings: EvalSettings, store: TableStore, judge_frame: pl.DataFrame, tables: tuple = (),
                 citation_claims: pl.DataFrame | None = None, nugget_labels: pl.DataFrame | None = None):
    """judge_labels (a stub), judge_calibration with its check, and judge_variance, as one-table assets calling
    the functions the aggregate stage calls. ``tables``: (rag_runs, golden_set, corpus_snapshot) or ();
    ``citation_claims`` / ``nugget_labels``: the verdict-family tables judge_calibration reads (empty unless given)."""
    tables = tables or (None, None, None)
    families = {"citation_claims": empty("citation_claims") if citation_claims is None else citation_claims,
                "nugget_labels": empty("nugget_labels") if nugget_labels is None else nugget_labels}

    @dg.asset(name="judge_labels")
    def judge_labels_stub() -> pl.DataFrame:
        return judge_frame

    @dg.asset(name="judge_calibration")
    def calibration_asset(context: dg.AssetExecutionContext, judge_labels: pl.DataFrame):
        return judge_calibration(context, settings, store.folder_for(), judge_labels, *tables, **families)

    @dg.asset_check(asset=calibration_asset, name="judge_calibrated_above_floor", blocking=True)
    def calibrated(table: pl.DataFrame) -> dg.AssetCheckResult:
        return judge_calibrated_above_floor(settings, table)

    @dg.asset(name="judge_variance")
    def variance_asset(context: dg.AssetExecutionContext, judge_labels: pl.DataFrame):
        return judge_variance(context, judge_labels)

    return [judge_labels_stub, calibration_asset, calibrated, variance_asset]


def run(tmp_path, config_path, judge_frame, citation_claims=None, nugget_labels=None):
    out = tmp_path / "out"
    return dg.materialize(
        trust_assets(EvalSettings(config_path=config_path), TableStore(base_dir=str(out)), judge_frame,
                     citation_claims=citation_claims, nugget_labels=nugget_labels),
        resources={"io_manager": ParquetIOManager(base_dir=str(out))}, raise_on_error=False,
    ), out


def check_of(result):
    evals = result.get_asset_check_evaluations()
    assert len(evals) == 1
    return evals[0]


def mat_metadata(result, key):
    [m] = [e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(key)]
    return m.materialization.metadata


def test_calibrated_judge_passes_and_history_grows(tmp_path):
    cfg = write_config(tmp_path, {"human_labels": "human.csv", "kappa_floor": 0.6},
                       gates=[{"metric": "faithfulness", "min_value": 0.5}])
    result, out = run(tmp_path, cfg, labels(JUDGE))
    assert result.success
    ev = check_of(result)
    assert ev.passed, ev.metadata
    md = mat_metadata(result, "judge_calibration")
    assert md["kappa"].value == pytest.approx(0.8)
    assert md["n"].value == 20
    assert md["agreement"].value == pytest.approx(0.9)
    assert "| SUPPORTED | 9 | 0 | 1 |" in md["confusion"].value
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table["stale"].to_list() == [False] and table["missing"].to_list() == [False]
    assert pl.read_parquet(out / HISTORY_FILE).height == 1
    run(tmp_path, cfg, labels(JUDGE))
    assert pl.read_parquet(out / HISTORY_FILE).height == 2
    assert mat_metadata(result, "judge_variance")["minimum_resolution"].value == "single repeat: resolution unknown"


def test_kappa_below_floor_fails(tmp_path):
    cfg = write_config(tmp_path, {"human_labels": "human.csv", "kappa_floor": 0.9})
    result, _ = run(tmp_path, cfg, labels(JUDGE))
    ev = check_of(result)
    assert not ev.passed
    assert "0.800 < floor 0.9" in ev.metadata["failures"].value[0]


def test_constant_judge_fails_with_null_kappa(tmp_path):
    cfg = write_config(tmp_path, {"human_labels": "human.csv"})
    result, _ = run(tmp_path, cfg, labels([S] * 20))
    ev = check_of(result)
    assert not ev.passed and "kappa null" in ev.metadata["failures"].value[0]
    assert mat_metadata(result, "judge_calibration")["kappa"].value is None


def test_stale_calibration_fails(tmp_path):
    # the history holds a calibration of an older prompt; today's hand labels cover none of today's claims
    cfg = write_config(tmp_path, {"human_labels": "human.csv"})
    old = labels(JUDGE, prompt="old")
    hist = results_to_frame([calibrate(pl.read_csv(tmp_path / "human.csv"), old, calibrated_at="2024-01-01")])
    out = tmp_path / "out"
    out.mkdir()
    hist.write_parquet(out / HISTORY_FILE)
    today = labels(JUDGE, prompt="new").with_columns(pl.format("z{}", pl.col("question_id")).alias("question_id"))
    result, _ = run(tmp_path, cfg, today)
    ev = check_of(result)
    assert not ev.passed and "stale" in ev.metadata["failures"].value[0]
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table["stale"].to_list() == [True] and table["calibrated_prompt_sha256"].to_list() == ["old"]
    # the old prompt's κ is not today's judge's: no current κ, and the stale one is labelled with its prompt
    assert table["kappa"][0] is not None and ev.metadata["kappa"].value is None
    assert "made for " in ev.metadata["summary"].value and "/old" in ev.metadata["summary"].value
    [row] = ev.metadata["kappas"].value
    assert row["stale"] and row["calibrated_prompt_sha256"] == "old"


def test_no_section_warns_without_judge_gates(tmp_path):
    """No calibration section: the judge was never compared with people, so the check never says "passed";
    with no judge-based gate it is a warning (the run still succeeds), and it says why."""
    cfg = write_config(tmp_path, None, gates=[{"metric": "recall", "k": 5, "max_abs_drop": 0.05}])
    result, out = run(tmp_path, cfg, labels(JUDGE))
    assert result.success  # a warning blocks nothing
    ev = check_of(result)
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.WARN
    assert ev.metadata["state"].value == "not_configured"
    assert "no calibration section" in ev.metadata["reason"].value
    assert "A warning only" in ev.metadata["reason"].value and ev.metadata["blocks_promotion"].value is False
    assert ev.metadata["summary"].value.startswith("not configured: ")  # the line the CLI prints
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table["missing"].to_list() == [True]


def test_missing_calibration_warns_without_judge_gates(tmp_path):
    """A calibration section whose hand labels cover none of the judged items: missing, never passed."""
    cfg = write_config(tmp_path, {"human_labels": "not_yet.jsonl", "kappa_floor": 0.4})
    result, _ = run(tmp_path, cfg, labels(JUDGE))
    ev = check_of(result)
    assert not ev.passed and ev.severity == dg.AssetCheckSeverity.WARN
    assert ev.metadata["kappa"].value is None
    assert ev.metadata["state"].value in ("missing", "kappa_null")


def test_calibrated_check_summary_carries_kappa(tmp_path):
    """The summary line the CLI prints beside the check: κ 0.800 (18 of 20 agree, marginals 10/10: p_o 0.9,
    p_e 0.5, κ = 0.4/0.5 = 0.8), the floor and n."""
    cfg = write_config(tmp_path, {"human_labels": "human.csv", "kappa_floor": 0.6})
    result, _ = run(tmp_path, cfg, labels(JUDGE))
    ev = check_of(result)
    # 95% CI (Cohen 1960): σ = sqrt(p_o (1 - p_o) / (n (1 - p_e)²)) = sqrt(0.9·0.1 / (20·0.25)) = 0.13416;
    # 1.96 σ = 0.26295 → [0.537, 1.063 clipped to 1]
    assert ev.passed and ev.metadata["summary"].value == "κ 0.800 [95% CI 0.537, 1.000] ≥ floor 0.6 (n 20, claim level)"


def test_a_label_file_not_yet_written_is_a_missing_calibration_not_an_error(tmp_path):
    # `rag-eval label` creates the file: before the first label the configuration loads and nothing is calibrated
    cfg = write_config(tmp_path, {"human_labels": "not_yet.jsonl", "kappa_floor": 0.4},
                       gates=[{"metric": "faithfulness", "max_abs_drop": 0.05}])
    result, out = run(tmp_path, cfg, labels(JUDGE))
    assert not check_of(result).passed  # a judge-based gate without any hand label blocks
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table["kappa"].to_list() == [None] and (table["missing"][0] or table["n"][0] in (None, 0))


def test_no_section_fails_with_a_judge_gate(tmp_path):
    cfg = write_config(tmp_path, None, gates=[{"metric": "faithfulness", "max_abs_drop": 0.05}])
    result, _ = run(tmp_path, cfg, labels(JUDGE))
    ev = check_of(result)
    assert not ev.passed and "calibration is required" in ev.metadata["reason"].value


def test_judge_variance_with_repeats(tmp_path):
    cfg = write_config(tmp_path, {"human_labels": "human.csv"})
    result, out = run(tmp_path, cfg, labels(JUDGE, repeats=2, flip_last=True))
    md = mat_metadata(result, "judge_variance")
    # repeat 0: 10/20 supported; repeat 1: the last claim flips N -> S: 11/20 -> resolution 0.05
    assert md["minimum_resolution"].value == {"faithfulness": pytest.approx(0.05)}
    table = pl.read_parquet(out / "judge_variance.parquet")
    assert table["n_flipped"].to_list() == [1] and table["flip_rate"].to_list() == [pytest.approx(0.05)]


def test_response_level_with_a_configured_mapping(tmp_path):
    resp = ["Fully attributable"] * 10 + ["Not fully attributable"] * 9 + ["Generic"]
    pl.DataFrame({"system": ["sys"] * 20, "question_id": [f"q{i}" for i in range(20)], "verdict": resp}).write_csv(
        tmp_path / "begin_style.csv")
    mapping = {"human": {"Fully attributable": "attributable", "Not fully attributable": "not_attributable",
                         "Generic": None}}
    cfg = write_config(tmp_path, {"human_labels": "begin_style.csv", "level": "response", "mapping": mapping,
                                  "kappa_floor": 0.5})
    result, out = run(tmp_path, cfg, labels(JUDGE))
    ev = check_of(result)
    assert ev.passed, ev.metadata
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table["level"].to_list() == ["response"] and table["n"].to_list() == [19]
    # people: 10 att / 9 not; judge (one claim per answer): q0-q8 S, q9 N, q10 S, q11-q18 N
    assert json.loads(table["confusion"][0]) == [[9, 1], [1, 8]]


def test_stale_hand_labels_are_counted_and_listed(tmp_path):
    """A label whose answer changed since it was made is left out of kappa, counted and listed."""
    from rag_eval_pipeline.core.labelling import build_items
    from rag_eval_pipeline_tests.core.test_labelling import tables

    runs, golden, snap, judge = tables()
    out = tmp_path / "out"
    out.mkdir()
    a1 = build_items(runs, golden, snap, judge, "response")[0]
    lines = [{"system": "A", "question_id": "q1", "verdict": "not_attributable", "annotator": "alice",
              "content_sha256": a1.content_sha256},
             {"system": "A", "question_id": "q2", "verdict": "attributable", "annotator": "alice",
              "content_sha256": "0" * 64},  # made when the answer read differently
             {"system": "B", "question_id": "q1", "verdict": "not_attributable", "annotator": "alice"}]
    (tmp_path / "labels.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    cfg = {"corpus": {"source": "documents_dir", "path": "docs"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "A", "kind": "reference"}, {"name": "B", "kind": "reference"}],
           "calibration": {"human_labels": "labels.jsonl", "level": "response"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    (tmp_path / "docs").mkdir(exist_ok=True)

    # rag_runs, golden_set and corpus_snapshot are judge_calibration's declared inputs (what each item is now)
    assets = trust_assets(EvalSettings(config_path=str(tmp_path / "config.yaml")), TableStore(base_dir=str(out)),
                          judge, (runs, golden, snap))
    result = dg.materialize(assets, selection=["judge_labels", "judge_calibration"],
                            resources={"io_manager": ParquetIOManager(base_dir=str(out))})
    row = pl.read_parquet(out / "judge_calibration.parquet").row(0, named=True)
    assert row["n_stale_labels"] == 1 and row["n"] == 2  # A/q1 (hash matches) and B/q1 (no hash)
    [stale] = json.loads(row["stale_labels"])
    assert (stale["system"], stale["question_id"], stale["annotator"], stale["line"]) == ("A", "q2", "alice", 2)
    md = mat_metadata(result, "judge_calibration")
    assert md["n_stale_labels"].value == 1 and md["stale_labels"].value[0]["question_id"] == "q2"
    assert "stale labels" in md["calibration"].value


def test_history_from_before_the_stale_columns_is_extended(tmp_path):
    cfg = write_config(tmp_path, {"human_labels": "human.csv"})
    old = results_to_frame([calibrate(pl.read_csv(tmp_path / "human.csv"), labels(JUDGE), calibrated_at="2024-01-01")])
    out = tmp_path / "out"
    out.mkdir()
    old.drop("n_stale_labels", "stale_labels", "labellers", "human_kappa", "human_kappa_reason", "human_kappa_n",
             "human_pairs").write_parquet(out / HISTORY_FILE)
    result, _ = run(tmp_path, cfg, labels(JUDGE))
    assert result.success
    hist = pl.read_parquet(out / HISTORY_FILE)
    assert hist.height == 2 and hist["n_stale_labels"].to_list() == [None, 0]


def _family_tables():
    """citation_claims and nugget_labels of one hand-scripted answer (the core family-calibration test's
    case): the judge's joint citation verdicts q1:c1 SUPPORTED, q1:c2 PARTIAL, q1:c4 SUPPORTED; its nugget
    verdicts c1 SUPPORTED, c2 SUPPORTED, c3 NOT_SUPPORTED."""
    from rag_eval_pipeline.core.citations.judging import judge_citations
    from rag_eval_pipeline.core.completeness import judge_nuggets
    from rag_eval_pipeline_tests.core.citations.helpers import ScriptedJudge, golden, runs, snapshot
    from rag_eval_pipeline_tests.core.citations.helpers import run as run_row
    from rag_eval_pipeline_tests.core.citations.test_citation_metrics import ANSWER, CHUNKS, SCRIPT
    from rag_eval_pipeline_tests.core.citations.test_nuggets import NUGGETS

    rag = runs(run_row("q1", ANSWER, ["d#0", "d#1", "d#2"]))
    gold = golden({"question_id": "q1", "claims": NUGGETS})
    judge = ScriptedJudge({**SCRIPT, (NUGGETS[0]["text"], frozenset({"answer"})): "SUPPORTED",
                           (NUGGETS[1]["text"], frozenset({"answer"})): "SUPPORTED"})
    claims, _ = judge_citations(rag, snapshot(CHUNKS), gold, judge)
    return claims, judge_nuggets(rag, gold, judge)


def _family_label_file(path):
    def row(claim_id, verdict, family, passages=None):
        return {"system": "s", "question_id": "q1", "claim_id": claim_id, "claim": "x", "verdict": verdict,
                "quote": "Alpha holds" if verdict in ("SUPPORTED", "PARTIAL") else None, "family": family,
                "passages": passages, "annotator": "ana"}
    rows = [row("q1:c1", "SUPPORTED", "citation_support", "d#0|d#1"),
            row("q1:c2", "NOT_SUPPORTED", "citation_support", "d#2"),
            row("q1:c4", "SUPPORTED", "citation_support", "d#1|d#2"),
            row("c1", "SUPPORTED", "nugget_coverage", "answer"), row("c2", "PARTIAL", "nugget_coverage", "answer"),
            row("c3", "NOT_SUPPORTED", "nugget_coverage", "answer")]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_judge_calibration_has_one_kappa_row_per_verdict_family(tmp_path):
    claims, nuggets = _family_tables()
    cfg = write_config(tmp_path, {"human_labels": "human.csv", "family_labels": "family.jsonl", "kappa_floor": 0.3})
    _family_label_file(tmp_path / "family.jsonl")
    result, out = run(tmp_path, cfg, labels(JUDGE), claims, nuggets)
    table = pl.read_parquet(out / "judge_calibration.parquet")
    rows = {r["level"]: r for r in table.iter_rows(named=True)}
    assert set(rows) == {"claim", "citation_support", "nugget_coverage"}
    # citation support, 3 items: people S, N, S; judge S, P, S -> 2 agree; p_e = (2/3)(2/3) = 4/9;
    # kappa = (2/3 - 4/9) / (5/9) = 0.4. Nuggets: people S, P, N; judge S, S, N -> p_e = 1/3 * 2/3 + 1/3 * 1/3
    # = 1/3; kappa = (2/3 - 1/3) / (2/3) = 0.5. Faithfulness (claim level): 18 of 20 agree, kappa 0.8.
    assert (rows["citation_support"]["n"], rows["citation_support"]["kappa"]) == (3, pytest.approx(0.4))
    assert (rows["nugget_coverage"]["n"], rows["nugget_coverage"]["kappa"]) == (3, pytest.approx(0.5))
    assert rows["citation_support"]["prompt_sha256"] == "c" * 64
    assert rows["claim"]["kappa"] == pytest.approx(0.8)
    md = mat_metadata(result, "judge_calibration")
    assert md["kappa_citation_support"].value == pytest.approx(0.4)
    assert md["n_nugget_coverage"].value == 3 and md["kappa"].value == pytest.approx(0.8)
    assert check_of(result).passed  # 0.4 and 0.5 >= the floor 0.3
    # the family results join the history, each under its family's level
    history = pl.read_parquet(out / HISTORY_FILE)
    assert sorted(history["level"].to_list()) == ["citation_support", "claim", "nugget_coverage"]


def test_a_citation_gate_without_citation_labels_blocks(tmp_path):
    claims, nuggets = _family_tables()
    cfg = write_config(tmp_path, {"human_labels": "human.csv"},
                       gates=[{"metric": "citation_recall", "max_abs_drop": 0.05}])
    result, _ = run(tmp_path, cfg, labels(JUDGE), claims, nuggets)
    check = check_of(result)
    assert not check.passed and check.severity == dg.AssetCheckSeverity.ERROR
    failures = check.metadata["failures"].value
    # the faithfulness calibration passes (kappa 0.8); the citation-support one is missing; nugget coverage is
    # neither gated nor labelled, so it is not a failure
    assert len(failures) == 1 and failures[0].startswith("citation_support ") and "missing" in failures[0]
    assert check.metadata["judge_based_gates"].value == ["citation_recall"]


def test_an_ungated_unlabelled_family_is_not_a_failure(tmp_path):
    claims, nuggets = _family_tables()
    cfg = write_config(tmp_path, {"human_labels": "human.csv"})
    result, out = run(tmp_path, cfg, labels(JUDGE), claims, nuggets)
    table = pl.read_parquet(out / "judge_calibration.parquet")
    assert table.filter(pl.col("level") == "nugget_coverage")["missing"].to_list() == [True]
    assert check_of(result).passed
