"""The documentation tables of the registries, written from the kinds' own declarations.

Each registered system kind, judge type and corpus source declares its keys (a typed section), its
documentation and, for systems, an example entry. :func:`describe` lists the keys of one section (type,
default, doc, range, choices, variable) and :func:`markdown_table` makes them a table; :func:`render` turns
one registry into Markdown;
:func:`update` rewrites the block between ``<!-- BEGIN generated: NAME -->`` and ``<!-- END generated:
NAME -->`` of a docs page with it. A test asserts every block is current, so a page can never list a
key the code does not read, nor miss one it does.

Run ``python -m rag_eval_pipeline.core.kind_docs`` after adding or changing a kind (``--check`` only
reports stale blocks, exit 1). Nothing here imports Dagster.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import typing
from collections.abc import Callable
from dataclasses import MISSING
from pathlib import Path
from typing import Any

import yaml

from rag_eval_pipeline.core.sections import fields_of, number_text, plain_value, range_text, type_text

ROOT = Path(__file__).resolve().parents[2]

__all__ = ["BLOCKS", "describe", "markdown_table", "render", "stale_blocks", "update"]


def _default_text(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, (bool, int, float, str)):
        return f"`{json.dumps(value) if isinstance(value, bool) else value}`"
    return f"`{json.dumps(plain_value(value), ensure_ascii=False)}`"


def describe(cls: type) -> list[dict[str, str]]:
    """One row per key of section ``cls``: ``key``, ``type``, ``default`` (``required`` when none),
    ``doc`` (with the range, choices and variable appended). For documentation tables and the test
    that keeps the docs pages in step with the sections."""
    rows = []
    for f, tp, k in fields_of(cls):
        if f.default is not MISSING:
            default = _default_text(f.default)
        elif f.default_factory is not MISSING:
            d = f.default_factory()
            default = "its keys' defaults" if dataclasses.is_dataclass(d) else _default_text(d)
        else:
            default = "required"
        notes = [k.doc] if k.doc else []
        rng = range_text(k)
        if rng and (k.low is not None or k.high is not None):
            notes.append(rng)
        if k.cap is not None:
            notes.append(f"at most {number_text(k.cap)}")
        if k.choices is not None:
            notes.append("one of " + ", ".join(f"`{c}`" for c in k.allowed() or ()))
        if k.when is not None:
            notes.append(f"only with {k.when[0]} " + " / ".join(f"`{v}`" for v in k.when[1]))
        if k.env:
            notes.append(f"variable `{k.env}` overrides it")
        rows.append({"key": f.name, "type": type_text(tp), "default": default, "doc": "; ".join(notes)})
    return rows


def markdown_table(cls: type) -> str:
    """:func:`describe` as a Markdown table (``| key | type | default | meaning |``)."""
    head = "| key | type | default | meaning |\n|---|---|---|---|\n"
    return head + "\n".join(f"| `{r['key']}` | {r['type']} | {r['default']} | {r['doc']} |" for r in describe(cls))


def _table(cls: type) -> str:
    return markdown_table(cls) + "\n" if describe(cls) else "No key of its own.\n"


def _nested(cls: type) -> list[tuple[str, type]]:
    out = []
    for f, tp, _ in fields_of(cls):
        args = [a for a in typing.get_args(tp) if a is not type(None)] or [tp]
        for a in args:
            if isinstance(a, type) and dataclasses.is_dataclass(a):
                out.append((f.name, a))
    return out


def system_kinds() -> str:
    """Every system kind: its paragraph, an example entry and a table of its keys (and of its nested blocks)."""
    from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS

    parts = [f"Every system has `name` (stored on every row: at most 200 characters, no `/`, `\\`, control "
             f"characters) and `kind`, one of {', '.join(f'`{n}`' for n in SYSTEM_KINDS.names())}; every other key "
             "belongs to its kind, and an unknown key is refused when the file loads, naming the file, the line, "
             "the system and the key.\n"]
    for kind in SYSTEM_KINDS:
        calls = "calls it once per golden question" if kind.makes_calls else "makes no call"
        spec = _example_spec(kind)
        watched = "; the on-change sensor watches its files" if spec is not None and kind.watches(spec) else ""
        parts.append(f"### Keys of `kind: {kind.name}`\n\n{kind.doc} (`rag-eval estimate`: {calls}{watched}.)\n")
        if kind.example:
            example = yaml.safe_dump([dict(kind.example)], sort_keys=False, allow_unicode=True, width=100)
            parts.append(f"```yaml\nsystems:\n{_indent(example)}```\n")
        parts.append(_table(kind.section))
        for name, cls in _nested(kind.section):
            parts.append(f"`{name}` of `kind: {kind.name}`:\n\n{_table(cls)}")
    return "\n".join(parts)


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def _example_spec(kind):
    from rag_eval_pipeline.core.systems.base import system_from_mapping

    return system_from_mapping(dict(kind.example)) if kind.example else None


def judge_types() -> str:
    """Every judge type: its paragraph and the keys only it reads (the shared keys are in the table above it)."""
    from rag_eval_pipeline.core.config_sections import JudgeConfig
    from rag_eval_pipeline.core.judges.registry import JUDGE_TYPES

    parts = [f"`judge.type` is one of {', '.join(f'`{n}`' for n in JUDGE_TYPES.names())} (`RAG_EVAL_JUDGE` "
             "overrides it). Keys every judge reads:\n", _table(JudgeConfig)]
    for jt in JUDGE_TYPES:
        calls = "calls a model (`rag-eval estimate` asks it for the cost)" if jt.makes_calls else "makes no model call"
        parts.append(f"### Keys of `judge.type: {jt.name}`\n\n{jt.doc} It {calls}.\n")
        parts.append(_table(jt.section))
    return "\n".join(parts)


def corpus_sources() -> str:
    """Every corpus source: its paragraph, whether its path is a file or a folder, its chunking, its questions."""
    from rag_eval_pipeline.core.sources.corpus_base import CORPUS_SOURCES

    head = "| `corpus.source` | `corpus.path` is a | default chunking | its own questions | what it reads |\n"
    head += "|---|---|---|---|---|\n"
    rows = "".join(f"| `{s.name}` | {s.path_is} | `{s.default_chunking}` | {'yes' if s.own_questions else 'no'} "
                   f"| {s.doc} |\n" for s in CORPUS_SOURCES)
    return head + rows


#: Generated block name -> (docs page, renderer).
def table_reference() -> str:
    """Every declared table: its version, what a row is, and its columns (type, nullability, description)."""
    import rag_eval_pipeline.core.tables  # noqa: F401 - the declarations fill TABLES
    from rag_eval_pipeline.core.table_schema import reference_markdown

    return reference_markdown()


BLOCKS: dict[str, tuple[str, Callable[[], str]]] = {
    "system kinds": ("docs/systems.md", system_kinds),
    "judge types": ("docs/judges.md", judge_types),
    "corpus sources": ("docs/configuration.md", corpus_sources),
    "tables": ("docs/tables.md", table_reference),
}


def _markers(name: str) -> tuple[str, str]:
    return (f"<!-- BEGIN generated: {name} (python -m rag_eval_pipeline.core.kind_docs) -->",
            f"<!-- END generated: {name} -->")


def render(name: str) -> str:
    """The block ``name`` of :data:`BLOCKS` with its markers. Raises KeyError for an unknown block."""
    begin, end = _markers(name)
    return f"{begin}\n\n{BLOCKS[name][1]().rstrip()}\n\n{end}"


def _current(text: str, name: str) -> tuple[int, int] | None:
    begin, end = _markers(name)
    i = text.find(begin)
    j = text.find(end, i)
    return None if i < 0 or j < 0 else (i, j + len(end))


def stale_blocks(root: Path = ROOT) -> list[str]:
    """``"page: block (missing | stale)"`` for every generated block that is absent or out of date."""
    out = []
    for name, (page, _) in BLOCKS.items():
        text = (root / page).read_text(encoding="utf-8")
        span = _current(text, name)
        if span is None:
            out.append(f"{page}: {name} (missing)")
        elif text[span[0]:span[1]] != render(name):
            out.append(f"{page}: {name} (stale)")
    return out


def update(root: Path = ROOT) -> list[str]:
    """Rewrite every stale generated block in place (a missing one is appended to its page). Returns
    the pages written."""
    written = []
    for name, (page, _) in BLOCKS.items():
        path = root / page
        text = path.read_text(encoding="utf-8")
        span = _current(text, name)
        new = (text.rstrip() + "\n\n" + render(name) + "\n") if span is None else (
            text[:span[0]] + render(name) + text[span[1]:])
        if new != text:
            path.write_text(new, encoding="utf-8")
            written.append(page)
    return written


def main(argv: list[str] | None = None) -> int:
    """``--check``: list stale blocks, exit 1 if any; otherwise rewrite them."""
    args = sys.argv[1:] if argv is None else argv
    if "--check" in args:
        stale = stale_blocks()
        print("\n".join(stale) or "every generated block is current")
        return 1 if stale else 0
    for page in update():
        print(f"wrote {page}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
