"""Inline citation markers: every syntax, binding to the unit a marker ends, stripping, problems counted."""

import pytest

from rag_eval_pipeline.core.citations.markers import CitationFormat, parse_answer, strip_markers
from rag_eval_pipeline.core.errors import ConfigError

RETRIEVED = ["a#0", "a#1", "b#0"]
CHUNKS = {"a#0", "a#1", "b#0", "c#0"}


def refs(parsed, unit):
    return [r.target for r in parsed.unit_references(unit)]


def test_each_syntax_resolves_to_the_retrieved_chunk_it_names():
    p = parse_answer("Uno [1]. Dos [1, 3]. Tres [2][3]. Cuatro【2】. Cinco [^3]. Seis [a#1]. Siete [b].",
                     retrieved=RETRIEVED, known_chunks=CHUNKS)
    assert p.text == "Uno. Dos. Tres. Cuatro. Cinco. Seis. Siete."
    # [n] is the n-th retrieved chunk (1-based); [b] is document b: its retrieved chunk b#0
    assert [refs(p, u) for u in range(7)] == [["a#0"], ["a#0", "b#0"], ["a#1", "b#0"], ["a#1"], ["b#0"], ["a#1"],
                                              ["b#0"]]
    assert [m.syntax for m in p.markers] == ["brackets", "brackets", "brackets", "brackets", "fullwidth", "footnote",
                                             "ids", "ids"]
    assert p.problems == []


def test_a_marker_binds_to_the_unit_it_ends_before_or_after_the_period():
    p = parse_answer("First fact [1]. Second fact.[2] Third; fourth [3].", retrieved=RETRIEVED)
    # units: "First fact.", "Second fact.", "Third", "fourth." (';' ends a clause as claims are split)
    assert [p.unit_text(u) for u in range(len(p.units))] == ["First fact.", "Second fact.", "Third", "fourth."]
    assert [refs(p, u) for u in range(4)] == [["a#0"], ["a#1"], [], ["b#0"]]


def test_stripping_removes_the_marker_and_the_spaces_before_it_only():
    assert strip_markers("Tienes 30 días [1], desde la entrega [2][3].") == "Tienes 30 días, desde la entrega."
    assert strip_markers("No markers here.") == "No markers here."
    assert strip_markers(None) == ""


def test_brackets_that_are_not_markers_stay_text():
    text = "Use the [optional] strap [sic]; see [the guide](https://x.example) and - [ ] tick."
    p = parse_answer(text, retrieved=RETRIEVED, known_chunks=CHUNKS)
    assert p.text == text and p.markers == ()


def test_out_of_range_and_unparseable_references_are_counted_and_listed():
    p = parse_answer("Fact [4]. Other [2, see]. Range [2-3]. Wide [1-99].", retrieved=RETRIEVED)
    probs = [(m.text, r.written, r.problem) for m, r in p.problems]
    # 3 retrieved chunks: [4] is out of range; "see" is not a reference; a range of more than 50 is refused
    assert probs == [("[4]", "4", "out_of_range"), ("[2, see]", "see", "unparseable"),
                     ("[1-99]", "1-99", "unparseable")]
    assert refs(p, 1) == ["a#1"] and refs(p, 2) == ["a#1", "b#0"]
    assert p.text == "Fact. Other. Range. Wide."


def test_an_id_not_in_the_snapshot_is_kept_for_the_validity_check():
    p = parse_answer("Fact [zz#7].", retrieved=RETRIEVED, known_chunks=CHUNKS)
    assert refs(p, 0) == ["zz#7"] and p.problems == []


def test_a_document_none_of_whose_chunks_was_retrieved_is_a_document_reference():
    p = parse_answer("Fact [c].", retrieved=RETRIEVED, known_chunks=CHUNKS)
    (r,) = p.unit_references(0)
    assert (r.target, r.level) == ("c", "document")


def test_numbers_may_point_into_the_logged_citations_and_start_at_zero():
    fmt = CitationFormat(numbers_refer_to="citations", first_number=0)
    p = parse_answer("Fact [0]. Other [1]. Bad [2].", fmt, retrieved=RETRIEVED, citations=["c#0", "a#0"])
    assert [refs(p, u) for u in range(3)] == [["c#0"], ["a#0"], []]
    assert [r.problem for _, r in p.problems] == ["out_of_range"]


def test_a_format_without_a_syntax_leaves_it_as_text():
    p = parse_answer("Fact [1]【1】[^1] [a#0].", CitationFormat(markers=("footnote",)), retrieved=RETRIEVED,
                     known_chunks=CHUNKS)
    assert p.text == "Fact [1]【1】 [a#0]." and [m.syntax for m in p.markers] == ["footnote"]
    assert parse_answer("Fact [1].", CitationFormat(markers=()), retrieved=RETRIEVED).text == "Fact [1]."


def test_citation_format_from_config():
    assert CitationFormat.from_config(None) == CitationFormat()
    assert CitationFormat.from_config("none").markers == ()
    got = CitationFormat.from_config({"markers": ["brackets", "ids"], "numbers_refer_to": "citations",
                                      "first_number": 0})
    assert got == CitationFormat(("brackets", "ids"), "citations", 0)
    for bad, word in (({"markers": ["emoji"]}, "emoji"), ({"first_number": 2}, "first_number"),
                      ({"numbers": "x"}, "unknown key"), ("sometimes", "must be"),
                      ({"numbers_refer_to": "docs"}, "numbers_refer_to")):
        with pytest.raises(ConfigError, match=word) as info:
            CitationFormat.from_config(bad, "config.yaml: systems[2].citation_format")
        assert "systems[2].citation_format" in str(info.value)


def test_a_bad_citation_format_is_one_line_naming_file_line_and_system(tmp_path):
    import yaml

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config_dict

    cfg = sample_config_dict()
    cfg["systems"][2]["citation_format"] = {"markers": ["brackets", "emoji"]}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False), encoding="utf-8")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    msg = str(exc.value)
    assert str(path) in msg and "line" in msg and "systems[2]" in msg and "citation_format" in msg and "emoji" in msg
    cfg["systems"][2]["citation_format"] = "none"
    path.write_text(yaml.safe_dump(cfg, allow_unicode=True, sort_keys=False), encoding="utf-8")
    from rag_eval_pipeline.core.pipeline import citation_formats

    assert citation_formats(load_config(path))[cfg["systems"][2]["name"]].markers == ()
