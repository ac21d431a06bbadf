"""A suite's lineage, measured through the Definitions' asset graph: few edges, and nothing read is hidden.

Before the suite factory (commit af9b3eb), the sample's full evaluation had 17 assets and 56 edges (the corpus
snapshot drawn into 10 of them, the golden set into 11), measured with :func:`lineage` on that code; three
tables judge_calibration read from disk were not drawn at all. Now every table a step reads is a declared input,
the promoted baseline and the hand-label file are declared external assets, and the judging and aggregate stages
are one step each whose tables are drawn from the nearest tables they are computed from.
"""

import dagster as dg
import pytest

from rag_eval_pipeline.core.suites import Suite
from rag_eval_pipeline.defs.judging import JudgeResource
from rag_eval_pipeline.defs.location import LoadedSuite, build_definitions
from rag_eval_pipeline_tests.defs.subprocess_runs import SAMPLE_DIR

# What each table of the two stages reads (from the code of defs/judging.py and defs/aggregate.py); a step
# reads all its inputs, but a table is computed from these only.
STAGE_READS = {
    "judge_labels": {"rag_runs", "golden_set", "corpus_snapshot"},
    "answer_judgements": {"rag_runs", "golden_set", "corpus_snapshot"},
    "answer_quality": {"rag_runs", "golden_set", "corpus_snapshot"},
    "citation_claims": {"rag_runs", "golden_set", "corpus_snapshot"},
    "citations": {"rag_runs", "golden_set", "corpus_snapshot"},
    "nugget_labels": {"rag_runs", "golden_set", "corpus_snapshot"},
    "metric_summary": {"question_metrics", "golden_set", "corpus_snapshot"},
    "judge_variance": {"judge_labels"},
    "judge_calibration": {"judge_labels", "rag_runs", "golden_set", "corpus_snapshot", "citation_claims",
                          "nugget_labels", "calibration_labels"},
    "gate_results": {"metric_summary", "question_metrics", "rag_runs", "golden_set", "corpus_snapshot",
                     "judge_variance", "promoted_baseline"},
    "gate_verdict": {"gate_results", "rag_runs", "golden_set"},
}


@pytest.fixture(scope="module")
def sample_defs():
    from rag_eval_pipeline.core.config import load_config

    suite = Suite(name="sample", config_path=SAMPLE_DIR / "config.yaml", nightly=True)
    return build_definitions([LoadedSuite(suite, load_config(suite.config_path))], judge=JudgeResource())


def lineage(defs: dg.Definitions, prefix: tuple[str, ...]) -> tuple[int, int, dict[str, set[str]]]:
    """(assets, edges, asset -> its parents' names) of the assets whose key is ``prefix`` + one name."""
    graph = defs.resolve_asset_graph()
    keys = [k for k in graph.get_all_asset_keys() if tuple(k.path[:-1]) == prefix]
    parents = {k.path[-1]: {p.path[-1] for p in graph.get(k).parent_keys} for k in keys}
    return len(keys), sum(len(p) for p in parents.values()), parents


def ancestors(parents: dict[str, set[str]], name: str) -> set[str]:
    seen, todo = set(), list(parents.get(name, ()))
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo.extend(parents.get(p, ()))
    return seen


def test_the_sample_lineage_has_few_edges(sample_defs):
    assets, edges, parents = lineage(sample_defs, ("sample",))
    print(f"sample full evaluation: {assets} assets, {edges} edges")
    # 20 computed tables + the promoted baseline + the hand-label file
    assert assets == 22
    # was 51 for 19 assets; the citation tables add 5 (citation_claims from the three tables the step reads, the
    # others from rag_runs), 3 into question_metrics, 3 into the report (15 inputs, the largest fan-in) and 2 into
    # judge_calibration; +1: promotion after the report (report -> promotion)
    assert edges <= 65
    children = {name: sorted(a for a, ps in parents.items() if name in ps) for name in parents}
    # (7 each before the citation step, which reads both like the judging step)
    assert len(children["corpus_snapshot"]) <= 8 and len(children["golden_set"]) <= 8, children
    # the chain a person expects
    for table, parent in (("golden_set", "corpus_snapshot"), ("rag_runs", "golden_set"), ("judge_labels", "rag_runs"),
                          ("question_metrics", "judge_labels"), ("metric_summary", "question_metrics"),
                          ("gate_results", "metric_summary"), ("gate_verdict", "gate_results"),
                          ("promotion", "gate_verdict"),
                          # the report reads the stored baseline before promotion replaces it (a declared dependency)
                          ("promotion", "evaluation_report")):
        assert parent in parents[table], (table, parent)
    quick_assets, quick_edges, _ = lineage(sample_defs, ("sample", "quick"))
    print(f"sample quick evaluation: {quick_assets} assets, {quick_edges} edges")
    assert quick_assets == 18 and quick_edges <= 55  # was 15 and 42 before the citation tables (+3 and +13)


def test_every_table_a_step_reads_is_a_declared_input_and_an_ancestor(sample_defs):
    _, _, parents = lineage(sample_defs, ("sample",))
    for assets_def in sample_defs.assets:
        if not isinstance(assets_def, dg.AssetsDefinition) or not assets_def.is_materializable:
            continue
        inputs = {k.path[-1] for k in assets_def.keys_by_input_name.values()}
        for key in assets_def.keys:
            if key.path[:-1] != ["sample"]:
                continue
            name = key.path[-1]
            reads = STAGE_READS.get(name, inputs)
            assert reads - {"promoted_baseline", "calibration_labels"} <= inputs, name  # declared inputs
            assert reads <= ancestors(parents, name), (name, reads - ancestors(parents, name))


def test_judge_calibration_draws_what_it_reads(sample_defs):
    graph = sample_defs.resolve_asset_graph()
    calibration = graph.get(dg.AssetKey(["sample", "judge_calibration"]))
    # the hand-label file, the run rows and the verdict-family tables are drawn; the golden set and the snapshot
    # through judge_labels
    assert {k.path[-1] for k in calibration.parent_keys} == {"judge_labels", "rag_runs", "citation_claims",
                                                             "nugget_labels", "calibration_labels"}
    [aggregate] = [a for a in sample_defs.assets if isinstance(a, dg.AssetsDefinition)
                   and dg.AssetKey(["sample", "judge_calibration"]) in a.keys]
    assert {k.path[-1] for k in aggregate.keys_by_input_name.values()} >= {"rag_runs", "golden_set",
                                                                         "corpus_snapshot", "judge_labels",
                                                                         "citation_claims", "nugget_labels"}
