"""Question shards' pure logic (``core/shards.py``): the stable hash, the split, the merge, the configuration key."""

import os
import subprocess
import sys

import polars as pl
import pytest

from rag_eval_pipeline.core.config import load_config
from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.shards import (
    merge_shards,
    select_shard,
    shard_column,
    shard_index,
    shard_keys,
    shard_of,
    shard_sizes_line,
)
from rag_eval_pipeline_tests.conftest import REPO_ROOT
from rag_eval_pipeline_tests.defs.subprocess_runs import sample_config


def test_a_question_s_shard_is_the_first_8_bytes_of_its_sha256_modulo_n():
    # Worked out with coreutils, not with this code:
    #   printf q01 | sha256sum -> a2711eea93046438...; 0xa2711eea93046438 = 11705170899350348856
    #     11705170899350348856 = 3 x 3901723633116782952 -> mod 3 = 0;  = 7 x 1672167271335764122 + 2 -> mod 7 = 2
    #   printf q02 | sha256sum -> b76bf18b2da3950d...; 0xb76bf18b2da3950d = 13216923111517295885
    #     = 3 x 4405641037172431961 + 2 -> mod 3 = 2;  = 7 x 1888131873073899412 + 1 -> mod 7 = 1
    #   printf q17 | sha256sum -> 282941f82f19a870...; 0x282941f82f19a870 = 2893916769760159856
    #     = 3 x 964638923253386618 + 2 -> mod 3 = 2;  = 7 x 413416681394308550 + 6 -> mod 7 = 6
    assert [shard_of(q, 3) for q in ("q01", "q02", "q17")] == [0, 2, 2]
    assert [shard_of(q, 7) for q in ("q01", "q02", "q17")] == [2, 1, 6]
    assert shard_of("anything", 1) == 0
    with pytest.raises(ValueError, match="shards must be >= 1"):
        shard_of("q01", 0)


def test_the_shard_does_not_depend_on_python_s_hash_seed():
    ids = [f"q{i:03d}" for i in range(200)] + ["ü-ñ", "", "a b"]
    code = ("import sys; from rag_eval_pipeline.core.shards import shard_of; "
            f"print([shard_of(q, 5) for q in {ids!r}])")
    outs = set()
    for seed in ("1", "2", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO_ROOT)}
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                check=True).stdout)
    assert len(outs) == 1
    assert outs.pop().strip() == str([shard_of(q, 5) for q in ids])


def test_the_shards_split_a_golden_set_into_disjoint_parts_that_cover_it():
    golden = pl.DataFrame({"question_id": [f"q{i:02d}" for i in range(1, 53)], "n": list(range(52))})
    parts = [select_shard(golden, s, 3) for s in range(3)]
    assert sum(p.height for p in parts) == 52
    assert set().union(*(set(p["question_id"]) for p in parts)) == set(golden["question_id"])
    for s, p in enumerate(parts):
        assert all(shard_of(q, 3) == s for q in p["question_id"])
        assert p["n"].to_list() == sorted(p["n"].to_list())  # each part keeps the golden order
    assert select_shard(golden, 0, 1) is golden
    assert shard_column(pl.Series(["q01", None]), 3).to_list() == [0, None]
    with pytest.raises(ValueError, match="out of range"):
        select_shard(golden, 3, 3)


def test_partition_keys_and_the_sizes_line():
    assert shard_keys(3) == ["0", "1", "2"] and shard_index("2", 3) == 2
    with pytest.raises(ValueError, match="not one of the suite's 3 shards"):
        shard_index("3", 3)
    # q01 -> 0, q02 -> 2, q17 -> 2 (worked out above)
    assert shard_sizes_line(pl.Series(["q01", "q02", "q17"]), 3).startswith(
        "question shards: 3 (questions per shard: 1, 0, 2)")


def test_merge_concatenates_in_shard_order_and_refuses_a_question_in_two_shards():
    a = pl.DataFrame({"question_id": ["q01", "q04"], "v": [1, 2]})
    b = pl.DataFrame({"question_id": ["q02"], "v": [3]})
    merged = merge_shards([a.lazy(), b], "rag_runs")
    assert merged.to_dict(as_series=False) == {"question_id": ["q01", "q04", "q02"], "v": [1, 2, 3]}
    with pytest.raises(ValueError, match=r"rag_runs: question 'q04' is in shard 0 and shard 1"):
        merge_shards([a, pl.DataFrame({"question_id": ["q04"], "v": [9]})], "rag_runs")
    with pytest.raises(ValueError, match="no shard to merge"):
        merge_shards([], "rag_runs")


def test_shards_is_a_top_level_integer_of_the_configuration(tmp_path):
    assert load_config(sample_config(tmp_path)).shards == 1  # default: not split
    assert load_config(sample_config(tmp_path, shards=4)).shards == 4


@pytest.mark.parametrize("value, shown", [(0, "0"), (1025, "1025"), ("three", "'three'"), (2.5, "2.5"),
                                          (True, "True")])
def test_a_bad_shards_value_is_one_line_naming_file_and_line(tmp_path, value, shown):
    path = sample_config(tmp_path, shards=value)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert "\n" not in message and str(path) in message and ", line " in message
    assert f"shards must be an integer in [1, 1024], got {shown}" in message
