"""Judge calibration per verdict family: kappa of citation support and of nugget coverage, apart."""

import pytest

from rag_eval_pipeline.core.citations.judging import judge_citations
from rag_eval_pipeline.core.completeness import judge_nuggets
from rag_eval_pipeline.core.metrics.calibration_families import calibrate_families
from rag_eval_pipeline_tests.core.citations.helpers import ScriptedJudge, golden, run, runs, snapshot
from rag_eval_pipeline_tests.core.citations.test_citation_metrics import ANSWER, CHUNKS, SCRIPT
from rag_eval_pipeline_tests.core.citations.test_nuggets import NUGGETS


def label(claim_id, verdict, family, passages=None, line=1):
    return {"system": "s", "question_id": "q1", "claim_id": claim_id, "verdict": verdict, "family": family,
            "passages": passages, "annotator": "ana", "content_sha256": None, "line": line}


def test_kappa_per_family_against_hand_counts():
    rag = runs(run("q1", ANSWER, ["d#0", "d#1", "d#2"]))
    gold = golden({"question_id": "q1", "claims": NUGGETS})
    judge = ScriptedJudge({**SCRIPT, (NUGGETS[0]["text"], frozenset({"answer"})): "SUPPORTED",
                           (NUGGETS[1]["text"], frozenset({"answer"})): "SUPPORTED"})
    claims, _ = judge_citations(rag, snapshot(CHUNKS), gold, judge)
    nuggets = judge_nuggets(rag, gold, judge)
    rows = [
        # citation support, joint verdicts of the judge: c1 SUPPORTED, c2 PARTIAL, c4 SUPPORTED (c3 is uncited)
        label("q1:c1", "SUPPORTED", "citation_support", "d#0|d#1"),
        label("q1:c2", "NOT_SUPPORTED", "citation_support"),
        label("q1:c4", "SUPPORTED", "citation_support", "d#1|d#2"),
        label("q1:c4", "NOT_SUPPORTED", "citation_support", "d#1"),  # another item (d#1 alone): left out
        # nugget coverage, the judge: c1 SUPPORTED, c2 SUPPORTED, c3 NOT_SUPPORTED
        label("c1", "SUPPORTED", "nugget_coverage"), label("c2", "PARTIAL", "nugget_coverage"),
        label("c3", "NOT_SUPPORTED", "nugget_coverage"),
        label("q1:c1", "NOT_MENTIONED", "faithfulness"),  # another family: not used
    ]
    cite, nug = calibrate_families(rows, claims, nuggets)
    assert (cite.level, nug.level) == ("citation_support", "nugget_coverage")
    assert cite.prompt_sha256 == "c" * 64 and nug.prompt_sha256 == "n" * 64
    # citation support: 3 items, 2 agree; people S 2/3, N 1/3; judge S 2/3, P 1/3 -> p_e = 4/9,
    # kappa = (2/3 - 4/9) / (1 - 4/9) = 0.4
    assert (cite.n, cite.agreement, cite.n_excluded_human) == (3, pytest.approx(2 / 3), 1)
    assert cite.kappa == pytest.approx(0.4)
    assert cite.confusion == [[2, 0, 0], [0, 0, 0], [0, 1, 0]]  # rows people S/P/N, columns the judge
    # nugget coverage: 3 items, 2 agree; people S, P, N 1/3 each; judge S 2/3, N 1/3 -> p_e = 1/3, kappa 0.5
    assert (nug.n, nug.kappa) == (3, pytest.approx(0.5))


def test_each_gated_metric_needs_the_calibration_of_its_family():
    from rag_eval_pipeline.core.metrics.calibration_families import gated_families

    got = gated_families(["citation_recall", "weighted_citation_f1", "citation_validity_rate", "nugget_recall_weighted",
                          "faithfulness", "recall_5", "answer_relevance"])
    # validity needs no judge; retrieval neither
    assert got == {"citation_support": ["citation_recall", "weighted_citation_f1"],
                   "nugget_coverage": ["nugget_recall_weighted"],
                   "faithfulness": ["answer_relevance", "faithfulness"]}


def _calibration_rows(*rows: dict):
    import polars as pl

    from rag_eval_pipeline.core.tables import SCHEMAS

    base = {"judge": "j", "judge_model": "m", "prompt_sha256": "p", "stale": False, "missing": False}
    return pl.DataFrame([{**base, **r} for r in rows], schema=SCHEMAS["judge_calibration"])


def test_calibration_status_counts_a_family_only_when_gated_or_labelled():
    from rag_eval_pipeline.core.metrics.calibration_status import calibration_status

    faith = {"level": "claim", "kappa": 0.8, "n": 40}  # n >= the default min_labels 30
    unlabelled = {"level": "citation_support", "kappa": None, "n": None, "missing": True}
    table = _calibration_rows(faith, unlabelled)
    # no gate on a citation metric and nobody labelled citations: the family row is shown, never a failure
    ungated = calibration_status(table, configured=True, kappa_floor=0.4, gated_metrics=["faithfulness"])
    assert ungated.passed and ungated.kappa == 0.8
    # a gate on citation_recall needs the citation-support calibration: missing blocks
    gated = calibration_status(table, configured=True, kappa_floor=0.4, gated_metrics=["citation_recall"])
    assert (gated.passed, gated.blocks, gated.state) == (False, True, "missing")
    assert gated.failures[0].startswith("citation_support ")
    # a gated family with no row at all is missing too
    alone = calibration_status(_calibration_rows(faith), configured=True, kappa_floor=0.4,
                               gated_metrics=["nugget_recall_weighted"])
    assert alone.state == "missing" and "nugget_coverage: missing" in alone.failures[0]
    # a labelled family below the floor fails even ungated (a warning: no judge-based gate)
    low = _calibration_rows(faith, {"level": "nugget_coverage", "kappa": 0.1, "n": 40})
    warned = calibration_status(low, configured=True, kappa_floor=0.4, gated_metrics=[])
    assert (warned.passed, warned.blocks, warned.state, warned.kappa) == (False, False, "below_floor", 0.1)
    # validity rates need no judge: a gate on them needs no citation calibration
    validity = calibration_status(table, configured=True, kappa_floor=0.4, gated_metrics=["citation_validity_rate"])
    assert validity.passed and not validity.blocks
