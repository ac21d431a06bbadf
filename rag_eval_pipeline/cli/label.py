"""``rag-eval label``: start the labelling page for one suite and one labeller.

The suite and its output folder are found exactly as ``rag-eval run`` finds them: ``--config FILE``
(its listed suite, or the ad-hoc suite named from the file), else ``--suite NAME`` (listed in
``data/suites.yaml`` or ``$RAG_EVAL_SUITES``), else ``$RAG_EVAL_CONFIG``, else the sample; the tables
are in ``--output`` (the suite's own folder) or ``$RAG_EVAL_OUTPUT_DIR/<suite>`` or ``outputs/<suite>``.
It builds the session and serves it with uvicorn on 127.0.0.1 until interrupted. A mistake is one
line on stderr: exit 2 for usage or configuration (a bad option, an unknown suite, no calibration
section, a port in use), 1 for data (no tables yet, a bad label file, nothing to label).
"""

from __future__ import annotations

import argparse
import getpass
import sys

from rag_eval_pipeline.cli.common import UsageError, resolve_suite, suite_folder
from rag_eval_pipeline.cli.exit_codes import EXIT_FAILED as EXIT_DATA
from rag_eval_pipeline.cli.exit_codes import EXIT_OK, EXIT_USAGE, epilog

NAME = "label"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``rag-eval label``."""
    from rag_eval_pipeline.ports import LABEL_PORT, port_number

    which = p.add_mutually_exclusive_group()
    which.add_argument("--suite", help="a suite listed in data/suites.yaml or $RAG_EVAL_SUITES (default: sample)")
    which.add_argument("--config", help="an evaluation YAML instead of a listed suite (default: $RAG_EVAL_CONFIG); "
                                        "the suite rag-eval run --config gives it")
    p.add_argument("--output", help="the suite's output folder, as given to rag-eval run (default: outputs/<suite>/, "
                                    "or $RAG_EVAL_OUTPUT_DIR/<suite>/)")
    p.add_argument("--n", type=int, default=50, help="sample size: items to label (default 50)")
    p.add_argument("--labeller", default=None, help="your name, stored on every label (default: your login name)")
    p.add_argument("--port", type=port_number, default=LABEL_PORT, help=f"port on 127.0.0.1 (default {LABEL_PORT})")
    p.add_argument("--groups", default=None,
                   help="comma-separated groups whose chunks you may read (default: report.viewer_groups)")
    p.add_argument("--show-judge", action="store_true",
                   help="show the judge's verdicts and quotes (adjudication; labelling is blind by default)")
    p.add_argument("--family", choices=("citation_support", "nugget_coverage"), default=None,
                   help="label a verdict family instead of the calibration level: citation_support (a claim against "
                        "the chunks it cites) or nugget_coverage (a reference nugget against the answer); labels go to "
                        "calibration.family_labels")


def main(args: argparse.Namespace) -> int:
    """Run ``rag-eval label``. Returns the exit status: 0 after a clean stop, 1 for a data mistake, 2 for a
    usage or configuration mistake (one line on stderr for both)."""
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError, EvalError
    from rag_eval_pipeline.labelling.app import build_app
    from rag_eval_pipeline.labelling.session import LabellingSession
    from rag_eval_pipeline.serve import port_free, port_in_use_message

    def fail(msg: str, status: int) -> int:
        print(f"rag-eval label: {msg}", file=sys.stderr)
        return status

    if args.n < 1:
        return fail(f"--n must be at least 1, got {args.n}", EXIT_USAGE)
    try:
        suite = resolve_suite(args.suite, args.config)
    except UsageError as exc:
        return fail(str(exc), EXIT_USAGE)
    output = suite_folder(suite, args.output)
    labeller = (args.labeller or getpass.getuser() or "").strip()
    if not labeller:
        return fail("--labeller NAME is required (no login name found)", EXIT_USAGE)
    groups = None if args.groups is None else tuple(g.strip() for g in args.groups.split(",") if g.strip())
    try:
        cfg = load_config(suite.config_path)
        session = LabellingSession(cfg, output, labeller, n=args.n, groups=groups, show_judge=args.show_judge,
                                   family=args.family)
    except ConfigError as exc:
        return fail(str(exc), EXIT_USAGE)
    except EvalError as exc:
        return fail(str(exc), EXIT_DATA)
    if not session.sample:
        return fail(f"nothing to label: the judge labelled no item readable for groups {list(session.groups)} "
                    f"in {session.output_dir}", EXIT_DATA)
    if not port_free(args.port):
        return fail(port_in_use_message(args.port), EXIT_USAGE)
    from rag_eval_pipeline.serve import run_until_stopped

    print(f"labelling {len(session.sample)} items ({session.level} level) of suite {suite.name} as {labeller}: "
          f"http://127.0.0.1:{args.port}/  (labels go to {session.labels_path}; Ctrl-C stops)", flush=True)
    run_until_stopped(build_app(session), args.port, log_level="warning")
    return EXIT_OK


def add(sub) -> None:
    """Register ``rag-eval label`` (the labelling page) on the subparsers ``sub``."""
    p = sub.add_parser(NAME, help="a local page for the hand labels judge calibration needs",
                       description="Serve a local page (127.0.0.1) for hand-labelling a sample of the judge's labels "
                                   "of one suite; the labels go to its calibration.human_labels file.",
                       epilog=epilog(NAME), formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(func=main)
