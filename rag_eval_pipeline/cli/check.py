"""``rag-eval check``: everything about a suite that can be checked without running a system or a judge.

``rag-eval run`` runs the same checks first (:func:`preflight`) and starts no Dagster run when they
find a problem.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rag_eval_pipeline.cli.common import (
    UsageError,
    add_suite_options,
    resolve_suite,
    suite_folder,
    usable_output_folder,
)
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE, epilog

NAME = "check"


def preflight(cfg, *, reach: bool = False, out=None, quick: bool = False, output: Path | None = None,
              warnings: list[str] | None = None) -> int:
    """Check a loaded configuration (``core/checks.py``); print each problem as one ``rag-eval: ...`` line
    on stderr. Output: the exit status the problems call for: 2 when any is a configuration problem,
    1 when any is a data problem, 0 when there is none (``out``: where the notes and then the warnings,
    each ``warning: ...``, go; None: nowhere; ``quick``: the quick evaluation's subset, so a log need not answer
    every golden question; ``output``: the suite's output folder, whose promoted baseline is checked;
    ``warnings``: a list the warnings are appended to, for the caller's last line)."""
    from rag_eval_pipeline.core.checks import check_config

    report = check_config(cfg, reach=reach, every_question=not quick, output=output)
    if out is not None:
        for note in report.notes:
            print(note, file=out)
        for warning in report.warnings:
            print(f"warning: {warning}", file=out)
    if warnings is not None:
        warnings.extend(report.warnings)
    for problem in report.problems:
        print(f"rag-eval: {problem.message}", file=sys.stderr)
    if report.config_problems:
        return EXIT_USAGE
    return EXIT_FAILED if report.data_problems else EXIT_OK


def check(args: argparse.Namespace) -> int:
    """``rag-eval check``: the configuration, corpus, golden set, logs, trace files, id mapping, the systems'
    setup and the output folder (usable by this suite, its promoted baseline intact), one line per problem.
    Exit codes: see ``cli/exit_codes.py``."""
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.defs.location import check_suite

    suite = resolve_suite(args.suite, args.config)
    try:
        cfg = check_suite(suite).config
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    print(f"suite {suite.name}: configuration {suite.config_path}")
    folder = suite_folder(suite, args.output)
    warned: list[str] = []
    status = preflight(cfg, reach=args.reach, out=sys.stdout, output=folder, warnings=warned)
    try:  # what run refuses before it starts (a file, a folder it cannot write, another suite's): nothing written
        usable_output_folder(folder, suite, create=False)
    except UsageError as exc:
        print(f"rag-eval: {exc}", file=sys.stderr)
        status = EXIT_USAGE
    if status == EXIT_OK:  # "no problem" only when nothing was said above: a warning is not "no problem"
        found = (f"{len(warned)} warning(s) above, nothing that stops the run" if warned else "no problem found")
        print(f"check: {found}; next: rag-eval estimate, then rag-eval run"
              + ("" if args.reach else " (--reach also asks each http system's URL once)"))
    else:
        print(f"check: problems found (one line each on stderr); exit {status}")
    return status


def add(sub) -> None:
    """Register ``rag-eval check`` and its options on the subparsers ``sub``."""
    p = sub.add_parser(NAME, help="check configuration, corpus, golden set, logs, traces and systems; runs nothing",
                       description="Check everything about a suite that can be checked without running a system "
                                   "or a judge: the configuration, the corpus, the golden set, every log and trace "
                                   "file (through the systems' id mapping), that each python callable imports and "
                                   "that each http system's secrets are set, and the output folder with its promoted "
                                   "baseline. One line per problem, naming the file, line and field.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_suite_options(p, output_help="the output folder run would write (default: as run: outputs/<suite>/, or "
                                     "$RAG_EVAL_OUTPUT_DIR/<suite>/): checked usable by this suite, and its promoted "
                                     "baseline intact; nothing is written there")
    p.add_argument("--reach", action="store_true",
                   help="also send one HEAD request (OPTIONS if HEAD is refused) to each http system's URL")
    p.set_defaults(func=check)
