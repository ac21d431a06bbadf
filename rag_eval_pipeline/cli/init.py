"""``rag-eval init DIR``: scaffold a suite from a team's files, asking nothing (``core/scaffold.py``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_eval_pipeline.cli.common import UsageError
from rag_eval_pipeline.cli.exit_codes import EXIT_OK, epilog

NAME = "init"


def init(args: argparse.Namespace) -> int:
    """Write ``DIR/config.yaml`` (commented; corpus source, golden set and systems guessed from the files,
    with the id mapping that makes each system's ids meet the corpus's) and ``DIR/golden.example.jsonl``
    (one line per answerability class), then print the next three commands. Exit codes: ``cli/exit_codes.py``."""
    from rag_eval_pipeline.core.scaffold import example_golden_lines, render_config, survey
    from rag_eval_pipeline.core.storage import write_text_atomic

    folder = Path(args.dir).resolve()
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder; expected the folder holding your chunks or documents, golden "
                         "set and run logs")
    config = folder / "config.yaml"
    if config.exists() and not args.force:
        raise UsageError(f"{config} already exists; rag-eval init --force {args.dir} replaces it")
    found = survey(folder)
    try:
        text = render_config(found)
    except ValueError as exc:
        raise UsageError(f"{folder}: {exc}") from None
    write_text_atomic(text, config)
    example = folder / "golden.example.jsonl"
    write_text_atomic("".join(line + "\n" for line in example_golden_lines(found)), example)
    print(f"wrote {config}")
    print(f"  corpus: {found.corpus_source} {found.corpus_path}")
    print(f"  golden set: {found.golden_path or 'none found: write golden.jsonl (see golden.example.jsonl)'}")
    for s in found.systems:
        print(f"  system {s.name} ({s.kind}, {s.path}): {s.why}")
    if not found.systems:
        print("  systems: no run log or traces found; the built-in reference RAG stands in (add yours in config.yaml)")
    for note in found.notes:
        print(f"  note: {note}")
    print(f"wrote {example} (one example line per answerability class)")
    shown = args.dir.rstrip("/") + "/config.yaml"
    print("\nnext:")
    print(f"  rag-eval check --config {shown}      # every file, line and field, without running anything")
    print(f"  rag-eval estimate --config {shown}   # the calls a run would make")
    print(f"  rag-eval run --config {shown}        # the evaluation")
    return EXIT_OK


def add(sub) -> None:
    """Register ``rag-eval init`` and its options on the subparsers ``sub``."""
    p = sub.add_parser(NAME, help="write a commented config.yaml for the files of a folder; asks nothing",
                       description="Look at a folder's files (chunks or documents, golden set, run logs, traces, "
                                   "chunk maps), write a commented config.yaml for them and golden.example.jsonl "
                                   "(one example line per answerability class), and print the next commands.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", help="the folder holding your files; config.yaml is written there")
    p.add_argument("--force", action="store_true", help="replace an existing config.yaml")
    p.set_defaults(func=init)
