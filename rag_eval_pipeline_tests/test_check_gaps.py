"""``rag-eval check`` on a new user's folder (``fixtures/own_system``): what a run would certainly fail or
refuse is said before it, every bad line of a file is named (not only the first), unknown fields get a
"did you mean", and contradictory log rows are warned about with file, line and field."""

import json
import shutil

import yaml

from rag_eval_pipeline.core.checks import check_config
from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline_tests.conftest import REPO_ROOT

OWN = REPO_ROOT / "rag_eval_pipeline_tests" / "fixtures" / "own_system"


def _folder(tmp_path, **extra):
    """The own-system folder in tmp_path with a config like init's (chunks, per-document golden set, one log)."""
    folder = tmp_path / "own"
    shutil.copytree(OWN, folder)
    cfg = {"corpus": {"source": "chunks", "path": "chunks.jsonl"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "team_log", "kind": "logged", "path": "team_log.jsonl",
                        "chunk_map": {"strip_prefix": "kb/"}}],
           "judge": {"type": "rule_based"}, "gates": {"split": "test"}}
    for k, v in extra.items():
        cfg[k] = v
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return folder


def _check(folder):
    return check_config(load_config(folder / "config.yaml"))


def test_a_gate_on_a_judged_metric_without_calibration_is_said_to_block(tmp_path):
    folder = _folder(tmp_path, gates={"split": "test", "thresholds": [{"metric": "faithfulness", "min_value": 0.5}]})
    report = _check(folder)
    assert not report.problems
    [warning] = [w for w in report.warnings if "calibration" in w]
    assert "['faithfulness']" in warning and "no calibration section" in warning
    assert "judge_calibrated_above_floor will fail" in warning and "add a calibration section" in warning
    # a gate on a retrieval metric needs no calibration: nothing said
    folder2 = _folder(tmp_path / "b", gates={"split": "test", "thresholds": [{"metric": "recall_5",
                                                                                "max_abs_drop": 0.05}]})
    assert not [w for w in _check(folder2).warnings if "calibration" in w]


def _rewrite(path, edit):
    """Rewrite a JSONL file line by line: ``edit(index, record)`` returns the record to write."""
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    path.write_text("".join(json.dumps(edit(i, r)) + "\n" for i, r in enumerate(rows)), encoding="utf-8")


def test_an_unknown_field_in_a_log_or_golden_line_gets_a_did_you_mean(tmp_path):
    folder = _folder(tmp_path)
    _rewrite(folder / "team_log.jsonl",
             lambda i, r: ({**{k: v for k, v in r.items() if k != "retrieved"}, "retrived": r["retrieved"]}
                           if i == 0 else r))
    messages = [p.message for p in _check(folder).problems]
    assert any("team_log.jsonl" in m and "line 1" in m and "retrived: did you mean 'retrieved'?" in m
               for m in messages), messages
    folder = _folder(tmp_path / "g")
    _rewrite(folder / "golden.jsonl",
             lambda i, r: ({**{k: v for k, v in r.items() if k != "answerability"}, "answerabilty": r["answerability"]}
                           if i == 0 else r))
    messages = [p.message for p in _check(folder).problems]
    assert any("golden.jsonl" in m and "answerabilty: did you mean 'answerability'?" in m for m in messages), messages


def test_a_hit_without_a_chunk_id_is_told_the_corpus_own_id_shape_and_the_text_alternative(tmp_path):
    folder = _folder(tmp_path)
    _rewrite(folder / "team_log.jsonl",
             lambda i, r: {**r, "retrieved": [{"score": 0.5}]} if i == 1 else r)
    [message] = [p.message for p in _check(folder).problems]
    assert "line 2" in message and "retrieved[0].chunk_id" in message
    # the corpus's ids are the team's (pedalo-kb-0001 is the first in chunks.jsonl), not doc_id#n
    assert "'pedalo-kb-0001'" in message and "doc_id#n" not in message
    assert '"text"' in message


def test_every_bad_line_of_a_log_and_of_a_golden_set_is_named(tmp_path):
    folder = _folder(tmp_path)
    # lines 1 and 3 bad (an unknown decision, a retrieved that is not a list); line 2 good
    _rewrite(folder / "team_log.jsonl", lambda i, r: {**r, "decision": "maybe"} if i == 0 else
             {**r, "retrieved": "kb/pedalo-kb-0001"} if i == 2 else r)
    messages = [p.message for p in _check(folder).problems]
    assert len(messages) == 2, messages
    assert "line 1, field 'decision'" in messages[0] and "line 3, field 'retrieved'" in messages[1]
    assert all("team_log.jsonl" in m for m in messages)
    # 25 bad golden lines: 20 named, one line counts the 5 left out
    folder = _folder(tmp_path / "g")
    lines = (folder / "golden.jsonl").read_text(encoding="utf-8")
    extra = "".join(json.dumps({"question_id": f"x{i}", "question": "?", "answerability": "unsure",
                                "split": "test"}) + "\n" for i in range(25))
    (folder / "golden.jsonl").write_text(lines + extra, encoding="utf-8")
    n = len([x for x in lines.splitlines() if x.strip()])
    messages = [p.message for p in _check(folder).problems]
    assert len(messages) == 21, messages
    assert f"line {n + 1}, field 'answerability'" in messages[0] and f"line {n + 20}," in messages[19]
    assert "and 5 more bad record(s)" in messages[20]


def test_log_rows_their_decision_contradicts_are_warned_with_file_line_and_field(tmp_path):
    folder = _folder(tmp_path)
    log = folder / "team_log.jsonl"
    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines() if x.strip()]
    answered = [i for i, r in enumerate(rows) if r["decision"] == "answer"][:3]
    _rewrite(log, lambda i, r: (
        {**r, "decision": "error", "error": "timeout"} if i == answered[0] else  # keeps answer and citations
        {**{k: v for k, v in r.items() if k not in ("answer", "citations")}, "decision": "error"}
        if i == answered[1] else
        {**r, "decision": "abstain"} if i == answered[2] else r))  # keeps its answer and its citations
    report = _check(folder)
    assert not report.problems, report.problems
    said = [w for w in report.warnings if "team_log.jsonl" in w and "decision is" in w]
    first, second, third = (f"line {i + 1}," for i in answered)
    assert any(first in w and "field 'answer'" in w and "'error'" in w for w in said), said
    assert any(first in w and "field 'citations'" in w for w in said), said
    assert any(second in w and "field 'error'" in w and "(no reason given)" in w for w in said), said
    assert any(third in w and "field 'citations'" in w and "'abstain'" in w for w in said), said
    # the fixture's own errored row gives its reason, and its abstentions' messages cite nothing (allowed by the
    # log schema: "an abstention message"): nothing else is warned, the messages are counted in a note
    assert len(said) == 4, said
    assert any("3 abstain row(s) carry an answer text" in n for n in report.notes), report.notes


def _doc_id_folder(tmp_path):
    """The own-system folder with its golden set judged per chunk only (each relevant document's first chunk)
    and a second log, ``a_doc_log`` (first by name, so init meets it first), that gives document ids."""
    folder = tmp_path / "docs"
    shutil.copytree(OWN, folder)
    (folder / "README.md").unlink()
    chunks = [json.loads(x) for x in (folder / "chunks.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    doc_of = {c["chunk_id"]: c["doc_id"] for c in chunks}
    first: dict = {}
    for c in chunks:
        first.setdefault(c["doc_id"], c["chunk_id"])
    _rewrite(folder / "golden.jsonl", lambda i, r: (
        {**{k: v for k, v in r.items() if k != "relevant_docs"},
         "relevant": [{"chunk_id": first[d["doc_id"]], "grade": d["grade"]} for d in r["relevant_docs"]]}
        if "relevant_docs" in r else r))
    rows = [json.loads(x) for x in (folder / "team_log.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    (folder / "a_doc_log.jsonl").write_text("".join(json.dumps({
        **r, "citations": [],
        "retrieved": [{"chunk_id": d} for d in dict.fromkeys(doc_of[h["chunk_id"].removeprefix("kb/")]
                                                             for h in r["retrieved"])]}) + "\n" for r in rows),
        encoding="utf-8")
    return folder


def test_a_gate_that_cannot_be_computed_for_a_document_id_system_is_said(tmp_path):
    folder = _doc_id_folder(tmp_path)
    cfg = {"corpus": {"source": "chunks", "path": "chunks.jsonl"}, "golden": {"path": "golden.jsonl"},
           "systems": [{"name": "a_doc_log", "kind": "logged", "path": "a_doc_log.jsonl",
                        "chunk_map": {"doc_ids": True}},
                       {"name": "team_log", "kind": "logged", "path": "team_log.jsonl",
                        "chunk_map": {"strip_prefix": "kb/"}}],
           "judge": {"type": "rule_based"},
           "gates": {"split": "test", "baseline_system": "a_doc_log", "candidate_systems": ["team_log"],
                     "thresholds": [{"metric": "recall_5", "max_abs_drop": 0.05}]}}
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg), encoding="utf-8")
    report = _check(folder)
    assert not report.problems, report.problems
    [warning] = [w for w in report.warnings if "cannot be computed" in w]
    # the golden set judges chunks only, and a doc_ids system's chunk-level rows are null: recall_5 is null for it
    assert "gate recall_5 (level chunk)" in warning and "baseline_system 'a_doc_log'" in warning
    assert "document ids" in warning and "not_evaluable and fail" in warning and "relevant_docs" in warning


def test_init_does_not_make_a_document_id_system_the_baseline_of_a_chunk_judged_golden_set(tmp_path):
    from rag_eval_pipeline.cli import main

    folder = _doc_id_folder(tmp_path)
    assert main(["init", str(folder)]) == 0
    gates = yaml.safe_load((folder / "config.yaml").read_text(encoding="utf-8"))["gates"]
    assert gates["baseline_system"] == "team_log" and gates["candidate_systems"] == ["a_doc_log"]
