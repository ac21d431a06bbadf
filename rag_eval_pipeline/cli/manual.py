"""The manual's generated block: every command's usage line and the exit-code table.

Rendered from the argument parser (``cli/__init__.py``) and :data:`~rag_eval_pipeline.cli.exit_codes.EXIT_CODES`,
so docs/operations.md stays current (``rag_eval_pipeline_tests/test_exit_codes.py``). Its own module: the
parser imports the exit codes, and this reads both.
"""

from __future__ import annotations

import argparse

from rag_eval_pipeline.cli import build_parser
from rag_eval_pipeline.cli.exit_codes import markdown_table

BEGIN, END = "<!-- generated: rag-eval commands and exit codes -->", "<!-- end of generated block -->"


def manual_block() -> str:
    """The manual's generated block: every command's usage line and :func:`markdown_table`, between markers."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    usage = "\n".join(" ".join(p.format_usage().replace("[-h] ", "").split()[1:]) for p in sub.choices.values())
    return f"{BEGIN}\n```\n{usage}\n```\n\n{markdown_table()}\n{END}"


def write_manual(page: str) -> None:
    """Rewrite the generated block (:func:`manual_block`) of the manual page at ``page`` in place.

    Raises ValueError when the page has no pair of markers."""
    from pathlib import Path

    path = Path(page)
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition(BEGIN)
    _, sep2, tail = rest.partition(END)
    if not (sep and sep2):
        raise ValueError(f"{path}: no generated block ({BEGIN} ... {END})")
    path.write_text(head + manual_block() + tail, encoding="utf-8")
