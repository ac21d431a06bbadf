"""The embedded judge split by job (rule_claims, rule_context, rule_params, rule_verdict): every moved
name is still importable from rule_based as the same object, so callers written before the split keep
working; the parameter check still names the file and key."""

from __future__ import annotations

import json

import pytest

from rag_eval_pipeline.core.judges import rule_based, rule_claims, rule_context, rule_params, rule_verdict


def test_moved_names_are_the_same_objects():
    for mod, names in ((rule_claims, ("checkable_claims", "first_person", "fixed_reason", "is_question",
                                      "matching_text")),
                       (rule_context, ("context_sentences", "passage_recall", "acronyms", "chunk_name_stems",
                                       "ContextSentence")),
                       (rule_params, ("PARAMS_FILE", "check_params")),
                       (rule_verdict, ("answer_support",))):
        for name in names:
            assert getattr(rule_based, name) is getattr(mod, name), name


def test_read_params_names_the_file_and_key(tmp_path):
    good = json.loads(rule_params.PARAMS_FILE.read_text(encoding="utf-8"))
    path = tmp_path / "p.json"
    path.write_text(json.dumps({**good, "support_lexical": 1.5}), encoding="utf-8")
    with pytest.raises(ValueError, match=r"p\.json: parameter 'support_lexical' must be a number in \[0, 1\]"):
        rule_params.read_params(path)
    path.write_text(json.dumps(good), encoding="utf-8")
    params, raw = rule_params.read_params(path)
    assert params == good and raw == path.read_bytes()
