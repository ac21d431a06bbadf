"""rag-eval: run a suite's evaluation, compare two runs, estimate what judging costs, serve the reports.

One module per command under ``rag_eval_pipeline.cli`` (``init``, ``check``, ``run``, ``compare``,
``estimate``, ``serve``, ``label``, ``serve-reference``), each with ``NAME`` and ``add(subparsers)``; exit
statuses are declared once in ``cli/exit_codes.py``. ``rag-eval run`` materialises every asset of one suite
against the project's Dagster instance (``.dagster_home``, shared with ``dagster dev``) and prints what it
found.
"""

from __future__ import annotations

import argparse
import sys

from rag_eval_pipeline.cli import check, compare, estimate, init, label, run, serve, serve_reference
from rag_eval_pipeline.cli.common import UsageError
from rag_eval_pipeline.cli.exit_codes import EXIT_USAGE, overview

#: One module per subcommand, in ``--help`` order: add yours here.
COMMANDS = [init, check, run, compare, estimate, serve, label, serve_reference]


def build_parser() -> argparse.ArgumentParser:
    """The ``rag-eval`` parser: one subparser per module of COMMANDS; its epilog lists every usage and exit code."""
    parser = argparse.ArgumentParser(prog="rag-eval", description=(__doc__ or "").splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add(sub)
    usage = "\n".join("  " + " ".join(p.format_usage().split()[1:]) for p in sub.choices.values())
    parser.epilog = f"commands and their options (rag-eval COMMAND --help for each):\n{usage}\n\n{overview()}"
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``rag-eval``. Returns the process exit status (``cli/exit_codes.py``)."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the subcommand's usage, not the top level's: the option was given to it
        subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        subparsers.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        return EXIT_USAGE
