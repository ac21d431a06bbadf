"""``rag-eval serve-reference``: the built-in reference system over HTTP, with the default contract.

``POST /answer`` with JSON ``{"question_id": str, "question": str, "user_groups": [str]}`` answers
with one run-log object (``retrieved``, ``decision``, ``answer``, ``citations``, ``corpus_version``,
manifest fields) and the header ``X-Model-Version``; ``GET /health`` says which system and corpus
version it serves. It binds to 127.0.0.1 only. With ``data/configs/live_http.yaml`` pointing at it, a
new user can evaluate a ``kind: http`` system in two commands.
"""

from __future__ import annotations

import argparse
import json
import sys

MODEL_VERSION_HEADER = "X-Model-Version"


def build_app(config_path: str, system_name: str):
    """The Starlette app serving one ``kind: reference`` system of a configuration.

    Builds the corpus snapshot of the configuration and indexes it once. Raises ConfigError when the
    system is unknown or not of kind ``reference``, InputError for a bad corpus."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.pipeline import build_snapshot
    from rag_eval_pipeline.core.systems.reference_service import ReferenceService

    cfg = load_config(config_path)
    spec = cfg.system(system_name)
    if spec["kind"] != "reference":
        raise ConfigError(f"{cfg.path}: system {system_name!r} is of kind {spec['kind']!r}; serve-reference serves a "
                          "kind: reference system")
    snapshot, version = build_snapshot(cfg)
    service = ReferenceService(snapshot, spec, version)
    model_version = f"{system_name}@{version[:12]}"

    def bad(message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=400)

    async def answer(request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return bad("the body is not JSON; expected {question_id, question, user_groups}")
        if not isinstance(body, dict):
            return bad("expected a JSON object {question_id, question, user_groups}")
        qid, question, groups = body.get("question_id"), body.get("question"), body.get("user_groups", [])
        if not isinstance(qid, str) or not isinstance(question, str) or not question.strip():
            return bad("question_id and question must be non-empty strings")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            return bad("user_groups must be a list of strings")
        from starlette.concurrency import run_in_threadpool

        reply = await run_in_threadpool(service.answer, qid, question, groups)
        return JSONResponse(reply, headers={MODEL_VERSION_HEADER: model_version})

    async def health(_: Request) -> JSONResponse:
        return JSONResponse({"system": system_name, "corpus_version": version, "chunks": snapshot.height})

    return Starlette(routes=[Route("/answer", answer, methods=["POST"]), Route("/health", health, methods=["GET"])])


def serve_reference(args: argparse.Namespace) -> int:
    """Run the server until interrupted (SIGINT / SIGTERM). Returns 0 after a clean shutdown; with one line
    on stderr, 2 for a usage or configuration mistake (a configuration that does not load, a system that is
    unknown or not of kind reference, a port in use) and 1 for bad corpus data."""
    from pathlib import Path

    from rag_eval_pipeline.core.errors import ConfigError, EvalError
    from rag_eval_pipeline.serve import port_free, port_in_use_message

    def fail(message: str, status: int) -> int:
        print(f"rag-eval serve-reference: {message}", file=sys.stderr)
        return status

    config = args.config or str(Path(__file__).resolve().parents[1] / "data" / "sample" / "config.yaml")
    if not port_free(args.port):  # before indexing the corpus: a taken port is known at once
        return fail(port_in_use_message(args.port), 2)
    try:
        app = build_app(config, args.system)
    except ConfigError as exc:
        return fail(str(exc), 2)
    except EvalError as exc:
        return fail(str(exc), 1)
    from rag_eval_pipeline.serve import run_until_stopped

    print(f"serving system {args.system} at http://127.0.0.1:{args.port}/answer", file=sys.stderr, flush=True)
    run_until_stopped(app, args.port, log_level="warning", access_log=False)
    return 0


def add_parser(sub, epilog: str | None = None) -> None:
    """Register ``serve-reference`` on the ``rag-eval`` subparsers; ``epilog``: its exit codes."""
    from rag_eval_pipeline.serve import port_number

    p = sub.add_parser("serve-reference", help="serve a built-in reference system over HTTP on 127.0.0.1",
                       description="Serve one kind: reference system of a configuration over HTTP on 127.0.0.1 "
                                   "(POST /answer with {question_id, question, user_groups}; GET /health), so a "
                                   "kind: http system can be evaluated against it.",
                       epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", default=None, help="evaluation YAML (default: data/sample/config.yaml)")
    p.add_argument("--system", required=True, help="name of a kind: reference system in that configuration")
    p.add_argument("--port", type=port_number, default=8765, help="port on 127.0.0.1 (default 8765)")
