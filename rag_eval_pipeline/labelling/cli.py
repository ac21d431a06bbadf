"""``rag-eval label``: start the labelling page for one configuration (or suite) and one labeller.

Finds the configuration (``--suite NAME`` through ``data/suites.yaml``, else ``--config`` /
``RAG_EVAL_CONFIG`` / the sample) and the output folder holding its tables (``--output`` /
``RAG_EVAL_OUTPUT_DIR`` / ``outputs/``; for a suite ``<that>/<suite>/``), builds the session and
serves it with uvicorn on 127.0.0.1 until interrupted. A mistake (no tables yet, a bad label file, no
calibration section, a port in use) is one line on stderr and exit status 1.
"""

from __future__ import annotations

import argparse
import getpass
import os
import socket
import sys
from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
SUITES_FILE = PROJECT_ROOT / "data" / "suites.yaml"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``rag-eval label``."""
    which = p.add_mutually_exclusive_group()
    which.add_argument("--suite", help="a suite named in data/suites.yaml (its configuration and outputs/<suite>/)")
    which.add_argument("--config", help="evaluation YAML (default: data/sample/config.yaml or $RAG_EVAL_CONFIG)")
    p.add_argument("--output", help="folder with the evaluation's tables (default: outputs/ or $RAG_EVAL_OUTPUT_DIR)")
    p.add_argument("--n", type=int, default=50, help="sample size: items to label (default 50)")
    p.add_argument("--labeller", default=None, help="your name, stored on every label (default: your login name)")
    p.add_argument("--port", type=int, default=8790, help="port on 127.0.0.1 (default 8790)")
    p.add_argument("--groups", default=None,
                   help="comma-separated groups whose chunks you may read (default: report.viewer_groups)")
    p.add_argument("--show-judge", action="store_true",
                   help="show the judge's verdicts and quotes (adjudication; labelling is blind by default)")


def suite_paths(name: str, suites_file: Path = SUITES_FILE, output_root: Path | None = None) -> tuple[Path, Path]:
    """(configuration path, output folder) of suite ``name``.

    Input: the suite name; ``suites_file`` (YAML ``suites: {name: {config: path relative to the
    file}}``; a bare ``{name: path}`` is accepted too); ``output_root`` (default
    ``$RAG_EVAL_OUTPUT_DIR`` or ``outputs/``). Output: the resolved configuration path and
    ``output_root/<name>``. Raises ValueError (one line for the user) when the file is missing,
    unreadable, or does not name the suite.
    """
    if not suites_file.is_file():
        raise ValueError(f"--suite needs {suites_file}, which does not exist; use --config FILE")
    try:
        raw = yaml.safe_load(suites_file.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ValueError(f"{suites_file}: cannot read it ({exc})") from None
    suites = raw.get("suites", raw) if isinstance(raw, dict) else {}
    entry = suites.get(name) if isinstance(suites, dict) else None
    config = entry.get("config") if isinstance(entry, dict) else entry
    if not isinstance(config, str):
        known = sorted(suites) if isinstance(suites, dict) else []
        raise ValueError(f"{suites_file}: no suite named {name!r} (suites: {known})")
    config_path = Path(config)
    config_path = config_path if config_path.is_absolute() else (suites_file.parent / config_path).resolve()
    root = output_root or Path(os.environ.get("RAG_EVAL_OUTPUT_DIR") or PROJECT_ROOT / "outputs")
    return config_path, Path(root).resolve() / name


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def main(args: argparse.Namespace) -> int:
    """Run ``rag-eval label``. Returns the exit status (0 after a clean stop, 1 for a user mistake)."""
    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import EvalError
    from rag_eval_pipeline.labelling.app import build_app
    from rag_eval_pipeline.labelling.session import LabellingSession

    def fail(msg: str) -> int:
        print(f"rag-eval label: {msg}", file=sys.stderr)
        return 1

    if args.n < 1:
        return fail(f"--n must be at least 1, got {args.n}")
    try:
        if args.suite:
            config_path, output = suite_paths(args.suite, output_root=Path(args.output) if args.output else None)
        else:
            config_path = Path(args.config or os.environ.get("RAG_EVAL_CONFIG")
                               or PROJECT_ROOT / "data" / "sample" / "config.yaml")
            output = Path(args.output or os.environ.get("RAG_EVAL_OUTPUT_DIR") or PROJECT_ROOT / "outputs")
    except ValueError as exc:
        return fail(str(exc))
    labeller = (args.labeller or getpass.getuser() or "").strip()
    if not labeller:
        return fail("--labeller NAME is required (no login name found)")
    groups = None if args.groups is None else tuple(g.strip() for g in args.groups.split(",") if g.strip())
    try:
        cfg = load_config(config_path)
        session = LabellingSession(cfg, output.resolve(), labeller, n=args.n, groups=groups,
                                   show_judge=args.show_judge)
    except EvalError as exc:
        return fail(str(exc))
    if not session.sample:
        return fail(f"nothing to label: the judge labelled no item readable for groups {list(session.groups)} "
                    f"in {session.output_dir}")
    if not _port_free(args.port):
        return fail(f"port {args.port} on 127.0.0.1 is in use; pick another with --port")
    import uvicorn

    print(f"labelling {len(session.sample)} items ({session.level} level) as {labeller}: "
          f"http://127.0.0.1:{args.port}/  (labels go to {session.labels_path}; Ctrl-C stops)", flush=True)
    uvicorn.run(build_app(session), host="127.0.0.1", port=args.port, log_level="warning")
    return 0
