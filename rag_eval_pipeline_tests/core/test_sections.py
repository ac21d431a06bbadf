"""The generic section parser and the YAML key lines it names: every refusal names the file, the line,
the section and the key; values are typed, ranged, capped and defaulted as declared."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.kind_docs import describe
from rag_eval_pipeline.core.section_errors import At, SectionError
from rag_eval_pipeline.core.sections import Key, key, parse_section
from rag_eval_pipeline.core.yamlio import load_yaml_located


@dataclass(frozen=True)
class Inner:
    size: int = key(3, low=1, doc="how many")


@dataclass(frozen=True)
class Demo:
    name: str = key(doc="required")
    mode: str = key("fast", choices=("fast", "slow"))
    ratio: float = key(0.5, low=0.0, high=1.0)
    timeout_s: float = key(30.0, low=0.0, low_open=True, cap=60.0, cap_why="a minute", env="DEMO_TIMEOUT_S")
    count: int | None = key(None, low=0)
    tags: tuple[str, ...] = key((), items=Key(choices=("a", "b")))
    headers: Mapping[str, str] = key(default_factory=dict)
    depth: int = key(2, when=("mode", ("slow",)))
    inner: Inner = key(default_factory=Inner)
    base: Path | None = key(None)

    def validate(self, at):
        if self.count is not None and self.count > 100:
            raise at.fail("count", "is too many for this demo")
        return dataclasses.replace(self, name=self.name.strip())


def located(tmp_path: Path, text: str) -> tuple[At, object]:
    path = tmp_path / "demo.yaml"
    path.write_text(text, encoding="utf-8")
    doc = load_yaml_located(path)
    return At(path, doc.lines, path=("demo",), label="demo", base_dir=tmp_path, environ={}), doc.value["demo"]


def test_defaults_types_and_paths(tmp_path):
    at, raw = located(tmp_path, "demo:\n  name: ' x '\n  tags: [a, b]\n  base: sub/file.txt\n  inner: {size: 7}\n")
    d = parse_section(Demo, raw, at)
    assert d == Demo(name="x", tags=("a", "b"), base=tmp_path / "sub" / "file.txt", inner=Inner(7))
    assert (d.mode, d.ratio, d.timeout_s, d.count, d.headers, d.depth) == ("fast", 0.5, 30.0, None, {}, 2)


@pytest.mark.parametrize("body, line, message", [
    # a misspelt key: the closest allowed key of its section is suggested (difflib: 'nmae' ~ 'name', ratio 0.75)
    ("  name: x\n  nmae: y\n", 3, r"unknown key\(s\) \['nmae'\] in demo \(demo.nmae: did you mean 'name'\?\); "
                                 r"expected only \['name', 'mode'"),
    ("  mode: fast\n", 1, r"missing key demo.name"),
    ("  name: x\n  mode: turbo\n", 3, r"demo.mode must be one of \('fast', 'slow'\), got 'turbo'"),
    ("  name: x\n  ratio: 2\n", 3, r"demo.ratio must be a number in \[0.0, 1.0\], got 2"),
    ("  name: x\n  ratio: .nan\n", 3, r"demo.ratio must be a number in \[0.0, 1.0\], got nan"),
    ("  name: x\n  timeout_s: 0\n", 3, r"demo.timeout_s must be a finite number > 0.0, got 0$"),
    ("  name: x\n  timeout_s: 5000\n", 3, r"demo.timeout_s must be at most 60.0 \(a minute\), got 5000"),
    ("  name: x\n  timeout_s: soon\n", 3, r"demo.timeout_s must be a finite number > 0.0, got 'soon' \(and at most"),
    ("  name: x\n  count: true\n", 3, r"demo.count must be an integer >= 0, got True"),
    ("  name: x\n  count: 101\n", 3, r"demo.count is too many for this demo"),
    ("  name: x\n  tags: [a, c]\n", 3, r"demo.tags\[1\] must be one of \('a', 'b'\), got 'c'"),
    ("  name: x\n  tags: a\n", 3, r"demo.tags must be a list, got 'a'"),
    ("  name: x\n  headers: {X: 1}\n", 3, r"demo.headers.X must be a string, got 1"),
    ("  name: x\n  depth: 5\n", 3, r"key 'depth' applies only when mode is one of \['slow'\], and mode is 'fast'"),
    ("  name: x\n  inner:\n    size: 0\n", 4, r"demo.inner.size must be an integer >= 1, got 0"),
    ("  name: x\n  inner:\n    sise: 2\n", 4, r"unknown key\(s\) \['sise'\] in demo.inner"),
])
def test_every_refusal_names_file_line_and_key(tmp_path, body, line, message):
    at, raw = located(tmp_path, "demo:\n" + body)
    with pytest.raises(SectionError, match=message) as info:
        parse_section(Demo, raw, at)
    assert str(info.value).startswith(f"{tmp_path / 'demo.yaml'}, line {line}: ")
    assert info.value.line == line and "\n" not in str(info.value)


def test_an_environment_variable_overrides_and_a_bad_one_names_the_variable(tmp_path):
    at, raw = located(tmp_path, "demo:\n  name: x\n  timeout_s: 10\n")
    assert parse_section(Demo, raw, dataclasses.replace(at, environ={"DEMO_TIMEOUT_S": "2.5"})).timeout_s == 2.5
    assert parse_section(Demo, raw, dataclasses.replace(at, environ={"DEMO_TIMEOUT_S": ""})).timeout_s == 10.0
    with pytest.raises(ConfigError, match=r"^DEMO_TIMEOUT_S='soon': expected a number$"):
        parse_section(Demo, raw, dataclasses.replace(at, environ={"DEMO_TIMEOUT_S": "soon"}))
    with pytest.raises(ConfigError, match=r"^DEMO_TIMEOUT_S must be a finite number > 0.0, got -1.0$"):
        parse_section(Demo, raw, dataclasses.replace(at, environ={"DEMO_TIMEOUT_S": "-1"}))


def test_key_lines_follow_nesting_flow_mappings_lists_and_merges(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("base: &b\n  x: 1\n  y: 2\nitems:\n  - {a: 1, b: 2}\n  -\n    a: 3\nmerged:\n  <<: *b\n  y: 5\n",
                    encoding="utf-8")
    doc = load_yaml_located(path)
    assert doc.line(("base", "y")) == 3 and doc.line(("items", 0, "b")) == 5 and doc.line(("items", 1, "a")) == 7
    assert doc.line(("merged", "y")) == 10  # the mapping's own key wins over the merged one
    assert doc.line(("merged", "x")) == 2  # a merged key: where the merged mapping writes it
    # an absent key: its nearest enclosing entry, here the list item (its first token is on line 7)
    assert doc.line(("items", 1, "zzz")) == 7
    assert doc.line(("nowhere",)) is None


def test_describe_lists_every_key_with_type_default_and_doc():
    rows = {r["key"]: r for r in describe(Demo)}
    assert list(rows) == ["name", "mode", "ratio", "timeout_s", "count", "tags", "headers", "depth", "inner", "base"]
    assert rows["name"]["default"] == "required" and rows["count"]["type"] == "int or null"
    assert "one of `fast`, `slow`" in rows["mode"]["doc"] and "variable `DEMO_TIMEOUT_S`" in rows["timeout_s"]["doc"]
    assert "at most 60.0" in rows["timeout_s"]["doc"] and "only with mode `slow`" in rows["depth"]["doc"]


def test_an_integer_too_large_for_a_float_is_refused_not_a_traceback(tmp_path):
    # 10**400 has no float: math.isfinite raised OverflowError (a traceback) instead of a located refusal
    at, raw = located(tmp_path, "demo:\n  name: x\n  ratio: " + "1" + "0" * 400 + "\n")
    with pytest.raises(SectionError) as info:
        parse_section(Demo, raw, at)
    msg = str(info.value)
    assert msg.startswith(f"{tmp_path / 'demo.yaml'}, line 3: demo.ratio must be a number in [0.0, 1.0], got 1000")
    assert msg.split("got ", 1)[1] == "1" + "0" * 79 + "..."  # the value is cut to 80 characters
    # the same on a one-sided float key
    at, raw = located(tmp_path, "demo:\n  name: x\n  timeout_s: " + "9" * 400 + "\n")
    with pytest.raises(SectionError, match=r"demo.timeout_s must be a finite number > 0.0, got 999"):
        parse_section(Demo, raw, at)
