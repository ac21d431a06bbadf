"""``rag-eval serve-reference``: a built-in reference system over HTTP on 127.0.0.1 (the server itself:
``rag_eval_pipeline.serve_reference``)."""

from __future__ import annotations

import argparse
import sys

from rag_eval_pipeline.cli.common import PROJECT_ROOT
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE, epilog

NAME = "serve-reference"


def serve_reference(args: argparse.Namespace) -> int:
    """Run the server until interrupted (SIGINT / SIGTERM). Returns 0 after a clean shutdown; with one line
    on stderr, 2 for a usage or configuration mistake (a configuration that does not load, a system that is
    unknown or not of kind reference, a port in use) and 1 for bad corpus data."""
    from rag_eval_pipeline.core.errors import ConfigError, EvalError
    from rag_eval_pipeline.serve import port_free, port_in_use_message
    from rag_eval_pipeline.serve_reference import build_app

    def fail(message: str, status: int) -> int:
        print(f"rag-eval serve-reference: {message}", file=sys.stderr)
        return status

    config = args.config or str(PROJECT_ROOT / "data" / "sample" / "config.yaml")
    if not port_free(args.port):  # before indexing the corpus: a taken port is known at once
        return fail(port_in_use_message(args.port), EXIT_USAGE)
    try:
        app = build_app(config, args.system)
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    except EvalError as exc:
        return fail(str(exc), EXIT_FAILED)
    from rag_eval_pipeline.serve import run_until_stopped

    print(f"serving system {args.system} at http://127.0.0.1:{args.port}/answer", file=sys.stderr, flush=True)
    run_until_stopped(app, args.port, log_level="warning", access_log=False)
    return EXIT_OK


def add(sub) -> None:
    """Register ``rag-eval serve-reference`` on the subparsers ``sub``."""
    from rag_eval_pipeline.ports import REFERENCE_PORT as DEFAULT_PORT
    from rag_eval_pipeline.ports import port_number

    p = sub.add_parser(NAME, help="serve a built-in reference system over HTTP on 127.0.0.1",
                       description="Serve one kind: reference system of a configuration over HTTP on 127.0.0.1 "
                                   "(POST /answer with {question_id, question, user_groups}; GET /health), so a "
                                   "kind: http system can be evaluated against it.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=None, help="evaluation YAML (default: data/sample/config.yaml)")
    p.add_argument("--system", required=True, help="name of a kind: reference system in that configuration")
    p.add_argument("--port", type=port_number, default=DEFAULT_PORT,
                   help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; rag-eval serve's is 8765)")
    p.set_defaults(func=serve_reference)
