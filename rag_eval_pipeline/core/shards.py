"""Question shards: which shard a golden question belongs to, and the shards' tables put back together.

A suite with ``shards: N`` (N >= 2) in its configuration splits its per-question work (``rag_runs``,
judging, the citation tables, ``question_metrics``) into N independent steps, one per shard (Dagster's
static partitions ``"0"`` .. ``"N-1"``, ``defs/shards.py``). A question's shard is a stable hash of its
id, the same on every machine, every Python process and every run (Python's own ``hash()`` is salted per
process, so it cannot be used): the first 8 bytes of SHA-256 of the UTF-8 id, read as a big-endian
unsigned integer, modulo N (the digest-based partitioning of Karger et al., "Consistent hashing and
random trees", STOC 1997, without the ring: the shard count is fixed per suite).

Every per-question computation reads only its own question's rows, so the shards' tables concatenated
hold exactly the unsharded table's rows; :func:`merge_shards` concatenates them in shard order and checks
that no question appears in two shards. The aggregates (``metric_summary``, gates, the report) sort
their questions themselves, so they equal the unsharded run's (tested:
``rag_eval_pipeline_tests/defs/test_shards.py``).

Nothing here imports Dagster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from rag_eval_pipeline.core.lazy import lazy_module

if TYPE_CHECKING:
    import polars as pl
else:
    pl = lazy_module("polars")

#: The most shards a suite may have (a sanity bound: each shard is a step, and reads the corpus once).
MAX_SHARDS = 1024


def shard_of(question_id: str, shards: int) -> int:
    """The shard (0 .. ``shards`` - 1) of one question id.

    Input: ``question_id`` (any string), ``shards`` (>= 1). Output: int in [0, shards).
    ``int.from_bytes(sha256(question_id.encode("utf-8")).digest()[:8], "big") % shards``: independent of
    the process, the machine and Python's hash seed. Raises ValueError for ``shards`` < 1.
    """
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards!r}")
    digest = hashlib.sha256(str(question_id).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % shards


def shard_keys(shards: int) -> list[str]:
    """The partition keys of ``shards`` shards: ``["0", "1", ..., str(shards - 1)]`` (Dagster partition keys
    are strings). Raises ValueError for ``shards`` < 1."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards!r}")
    return [str(i) for i in range(shards)]


def shard_index(key: str, shards: int) -> int:
    """The shard number of a partition key (``"2"`` -> 2). Raises ValueError for a key that is not one of
    :func:`shard_keys` of ``shards``."""
    if key not in shard_keys(shards):
        raise ValueError(f"shard {key!r} is not one of the suite's {shards} shards (0 to {shards - 1})")
    return int(key)


def shard_column(question_ids: pl.Series, shards: int) -> pl.Series:
    """The shard of every id of ``question_ids`` (a string Series; nulls stay null), as an Int32 Series
    named ``shard`` (:func:`shard_of` of each)."""
    return pl.Series("shard", [None if q is None else shard_of(q, shards) for q in question_ids.to_list()],
                     dtype=pl.Int32)


def select_shard(frame: pl.DataFrame, shard: int, shards: int, column: str = "question_id") -> pl.DataFrame:
    """The rows of ``frame`` whose ``column`` (a question id) falls in ``shard`` of ``shards``, in their order.

    Input: any frame with a string ``column``; ``shard`` in [0, shards). Output: a subset of ``frame``'s rows,
    same schema. ``shards`` == 1 returns ``frame`` itself. Raises ValueError for a shard out of range."""
    if not 0 <= shard < shards:
        raise ValueError(f"shard {shard} is out of range for {shards} shards")
    if shards == 1:
        return frame
    return frame.filter(shard_column(frame[column], shards) == shard)


def merge_shards(parts: Sequence[pl.DataFrame | pl.LazyFrame], table: str) -> pl.DataFrame:
    """One table from its shards' parts, in shard order (part 0's rows first).

    Input: ``parts``, the same table (named ``table``, for messages) of each shard, in shard order, as frames
    or scans (a scan is read once, when the parts are concatenated); each must hold a ``question_id``
    column. Output: their concatenation (``how="vertical"``: the schemas must be equal). Raises ValueError
    when a question id appears in two parts (the parts are not shards of one split, e.g. files of two shard
    counts mixed) or when there is no part.
    """
    return pl.concat(list(shard_parts(parts, table)), how="vertical")


def shard_parts(parts: Sequence[pl.DataFrame | pl.LazyFrame], table: str) -> Iterator[pl.DataFrame]:
    """:func:`merge_shards` one part at a time: the parts as frames, in shard order, each read when it is asked
    for (a writer that writes each as it comes holds one shard's rows, not the merged table). The question ids
    of every part are checked first (ValueError, before any part is given, as :func:`merge_shards`)."""
    if not parts:
        raise ValueError(f"{table}: no shard to merge")
    seen: dict[str, int] = {}
    for i, part in enumerate(parts):
        ids = part.lazy().select(pl.col("question_id").unique().drop_nulls()).collect()["question_id"]
        for q in ids.to_list():
            if q in seen:
                raise ValueError(f"{table}: question {q!r} is in shard {seen[q]} and shard {i}: the shard files do "
                                 "not come from one split (was the shard count changed without re-running every "
                                 "shard?)")
            seen[q] = i
    schema = parts[0].lazy().collect_schema()
    for i, part in enumerate(parts):
        if i and part.lazy().collect_schema() != schema:
            raise ValueError(f"{table}: shard {i}'s columns differ from shard 0's: the shard files do not come "
                             "from one version of the pipeline")

    def each() -> Iterator[pl.DataFrame]:
        for part in parts:
            yield part.lazy().collect()

    return each()


def shard_sizes_line(question_ids: pl.Series, shards: int) -> str:
    """One line saying how a golden set splits: ``"question shards: 3 (questions per shard: 17, 19, 16)"``, or
    ``"question shards: none (shards: 1)"``. Input: the golden set's question ids, ``shards`` >= 1."""
    if shards <= 1:
        return "question shards: none (shards: 1): one step each for rag_runs, judging and question_metrics"
    counts = shard_column(question_ids, shards).value_counts().sort("shard")
    per = dict(zip(counts["shard"].to_list(), counts["count"].to_list()))
    sizes = ", ".join(str(per.get(i, 0)) for i in range(shards))
    return f"question shards: {shards} (questions per shard: {sizes}); a quick evaluation is not split"
