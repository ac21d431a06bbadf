"""``rag-eval serve``: the report pages of the output folder on 127.0.0.1, read-only."""

from __future__ import annotations

import argparse
from pathlib import Path

from rag_eval_pipeline.cli.common import UsageError, output_root, resolve_suite
from rag_eval_pipeline.cli.exit_codes import EXIT_OK, epilog

NAME = "serve"


def serve(args: argparse.Namespace) -> int:
    """``rag-eval serve``: the report pages of the output folder on 127.0.0.1, read-only, until stopped."""
    from rag_eval_pipeline import serve as server

    if args.dir and args.suite:
        raise UsageError("give --suite or --dir, not both")
    root = output_root()
    folder = Path(args.dir) if args.dir else (root / resolve_suite(args.suite, None).name if args.suite else root)
    if not folder.is_dir():
        raise UsageError(f"folder {folder.resolve()} not found (run rag-eval run first, or give --dir)")
    if not server.port_free(args.port):
        raise UsageError(server.port_in_use_message(args.port))
    server.serve(folder, port=args.port)
    return EXIT_OK


def add(sub) -> None:
    """Register ``rag-eval serve`` and its options on the subparsers ``sub``."""
    from rag_eval_pipeline.ports import DEFAULT_PORT, port_number

    p = sub.add_parser(NAME, help="serve the report pages on http://127.0.0.1 (read-only) for the UI's links",
                       description="Serve report.html, report.md and trend.html of the output folder (every suite, or "
                                   "one) on 127.0.0.1, read-only; never the tables. Set RAG_EVAL_REPORT_URL to its "
                                   "address where the code location runs, and the report asset links to it.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"TCP port on 127.0.0.1 (default {DEFAULT_PORT})")
    p.add_argument("--suite", help="serve only this suite's folder (default: every suite, outputs/ or "
                                   "$RAG_EVAL_OUTPUT_DIR)")
    p.add_argument("--dir", help="serve this folder instead")
    p.set_defaults(func=serve)
