"""Every YAML the product reads refuses repeated keys and alias bombs, with file, line and key."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from rag_eval_pipeline.core.errors import InputError
from rag_eval_pipeline.core.sources.documents import load_documents_dir
from rag_eval_pipeline.core.yamlio import YAMLInputError, load_yaml, load_yaml_text, shown
from rag_eval_pipeline_tests.conftest import REPO_ROOT


def bomb(key: str, levels: int = 9, fan_out: int = 9) -> str:
    """``key`` holding the "billion laughs": ``fan_out ** levels`` strings once expanded, 3 KB on disk.

    Under a key the loader checks (``seed``, ``title``), an error message that quotes the value's repr
    would have to build billions of characters."""
    lines = [f"{key}:", "  - &a0 [" + ", ".join(['"lol"'] * fan_out) + "]"]
    for i in range(1, levels):
        lines.append(f"  - &a{i} [" + ", ".join([f"*a{i - 1}"] * fan_out) + "]")
    return "\n".join(lines) + "\n"


def test_a_repeated_key_names_source_line_and_key():
    text = "corpus: {source: beir}\ngates:\n  alpha: 0.05\nseed: 1\ngates:\n  thresholds: []\n"
    with pytest.raises(YAMLInputError) as info:
        load_yaml_text(text, source="c.yaml")
    err = info.value
    assert (err.path, err.line, err.field) == ("c.yaml", 5, "gates")
    assert str(err) == ("file c.yaml, line 5, field 'gates': not valid YAML: repeated key 'gates' (first at line 2); "
                        "expected each key once")


def test_a_repeated_nested_key_and_the_line_offset_of_front_matter():
    with pytest.raises(YAMLInputError) as info:
        load_yaml_text("title: A\nstatus: active\nstatus: withdrawn\n", source="doc.md", line_offset=1)
    assert (info.value.line, info.value.field) == (4, "status")
    assert "(first at line 3)" in str(info.value)
    with pytest.raises(YAMLInputError, match=r"line 3, field 'k'.*repeated key 'k' \(first at line 2\)"):
        load_yaml_text("outer:\n  k: 1\n  k: 2\n", source="x.yaml")


def test_a_merge_key_override_is_not_a_repetition():
    got = load_yaml_text("base: &b {k: 1, j: 2}\nd:\n  <<: *b\n  k: 3\n", source="x.yaml")
    assert got["d"] == {"k": 3, "j": 2}


def test_a_repeated_front_matter_status_is_an_error_naming_file_line_and_key(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    doc = corpus / "guide.md"
    doc.write_text("---\ntitle: Guide\nstatus: active\nstatus: withdrawn\n---\nBody text.\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        load_documents_dir(corpus)
    err = info.value
    assert err.path == str(doc) and err.line == 4
    assert "repeated key 'status' (first at line 3)" in str(err)


def test_the_alias_bomb_in_a_configuration_is_refused_fast_and_small(tmp_path):
    path = tmp_path / "config.yaml"
    path.write_text("corpus:\n  source: beir\n  path: .\n" + bomb("seed"), encoding="utf-8")
    assert path.stat().st_size < 4096
    # In a child process with its address space capped: the refusal must need far less than the cap.
    code = textwrap.dedent(f"""
        import resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, (1 << 32, 1 << 32))  # a runaway expansion stops at 4 GiB
        from rag_eval_pipeline.core.config import load_config
        from rag_eval_pipeline.core.errors import ConfigError
        t = time.perf_counter()
        try:
            load_config({str(path)!r}, environ={{}})
        except ConfigError as exc:
            # peak RSS of this process image (VmHWM; ru_maxrss would include the forking parent's)
            hwm = next(l for l in open("/proc/self/status") if l.startswith("VmHWM:")).split()[1]
            print(time.perf_counter() - t, hwm, len(str(exc)))
            print(exc)
            sys.exit(0)
        sys.exit("loaded")
    """)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    wall = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stderr[-2000:]
    seconds, max_rss_kib, message_len = proc.stdout.splitlines()[0].split()
    assert wall < 5 and float(seconds) < 1.0
    assert int(max_rss_kib) < 300 * 1024  # kB: the interpreter and imports; the bomb adds nothing measurable
    assert int(message_len) < 400 and "alias expansion is bounded" in proc.stdout
    assert str(path) in proc.stdout


def test_the_alias_bomb_in_front_matter_gives_a_short_error(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.md").write_text("---\n" + bomb("title") + "---\nBody.\n", encoding="utf-8")
    t = time.perf_counter()
    with pytest.raises(InputError) as info:
        load_documents_dir(corpus)
    assert time.perf_counter() - t < 5
    assert len(str(info.value)) < 600 and "alias expansion is bounded" in str(info.value)


def test_too_many_aliases_and_recursive_aliases_are_refused():
    many = "v: &v 1\nl: [" + ", ".join(["*v"] * 101) + "]\n"
    with pytest.raises(YAMLInputError, match=r"more than 100 aliases in one document"):
        load_yaml_text(many, source="x.yaml")
    assert len(load_yaml_text(many.replace("101", "1"), source="x.yaml", max_aliases=200)["l"]) == 101
    with pytest.raises(YAMLInputError, match="recursive structure"):
        load_yaml_text("a: &a [1, *a]\n", source="x.yaml")


def test_deep_nesting_is_an_input_error_not_a_recursion_error():
    with pytest.raises(YAMLInputError, match="nested too deeply"):
        load_yaml_text("a: " + "[" * 3000 + "]" * 3000, source="x.yaml")


def test_file_limits(tmp_path):
    big = tmp_path / "big.yaml"
    big.write_text("k: " + "x" * 2000 + "\n", encoding="utf-8")
    with pytest.raises(YAMLInputError, match=rf"file {big}: file is 2004 bytes; expected at most 1000 bytes"):
        load_yaml(big, max_bytes=1000)
    assert load_yaml(big)["k"] == "x" * 2000
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(YAMLInputError) as info:
        load_yaml(latin)
    assert (info.value.line, info.value.field) == (2, "encoding")


def test_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo = tmp_path / "config.yaml"
    os.mkfifo(fifo)
    outcome: list = []

    def load():
        try:
            load_yaml(fifo)
        except YAMLInputError as exc:
            outcome.append(str(exc))

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(5)
    assert outcome == [f"file {fifo}: not a regular file; expected a YAML file"]


def test_shown_never_builds_the_repr_of_a_huge_shared_value():
    layer: list = ["lol"] * 9
    for _ in range(12):  # 9 ** 13 strings if printed
        layer = [layer] * 9
    t = time.perf_counter()
    text = shown(layer)
    assert time.perf_counter() - t < 0.1 and len(text) < 130 and text.startswith("list of 9 item(s)")
    assert shown("y" * 10_000) == repr("y" * 80) + "... (10000 characters)"


def test_a_file_read_twice_is_parsed_once_and_each_caller_gets_its_own_copy(tmp_path):
    from rag_eval_pipeline.core import yamlio

    path = tmp_path / "config.yaml"
    path.write_text("corpus:\n  path: docs\nmetrics:\n  ks: [1, 5]\n", encoding="utf-8")
    yamlio._parse_cached.cache_clear()
    first = yamlio.load_yaml(path)
    first["metrics"]["ks"].append(99)  # a caller changing its copy
    located = yamlio.load_yaml_located(path)
    assert located.value == {"corpus": {"path": "docs"}, "metrics": {"ks": [1, 5]}}
    assert located.line(("metrics", "ks")) == 4  # the fourth line of the file
    assert yamlio._parse_cached.cache_info().hits == 1
    # an edit of the same size is another text: parsed again, never the remembered document
    path.write_text("corpus:\n  path: dics\nmetrics:\n  ks: [1, 5]\n", encoding="utf-8")
    assert yamlio.load_yaml(path) == {"corpus": {"path": "dics"}, "metrics": {"ks": [1, 5]}}
    assert yamlio._parse_cached.cache_info().misses == 2
