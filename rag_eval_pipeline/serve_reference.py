"""``rag-eval serve-reference``: the built-in reference system over HTTP, with the default contract.

``POST /answer`` with JSON ``{"question_id": str, "question": str, "user_groups": [str]}`` answers
with one run-log object (``retrieved``, ``decision``, ``answer``, ``citations``, ``corpus_version``,
manifest fields) and the header ``X-Model-Version``; ``GET /health`` says which system and corpus
version it serves. It binds to 127.0.0.1 only and refuses a foreign ``Host``, a foreign ``Origin`` and
a body that is not ``application/json`` (``local_guard.py``). With ``data/configs/live_http.yaml`` pointing at it, a
new user can evaluate a ``kind: http`` system in two commands.
"""

from __future__ import annotations

MODEL_VERSION_HEADER = "X-Model-Version"


def build_app(config_path: str, system_name: str):
    """The Starlette app serving one ``kind: reference`` system of a configuration.

    Builds the corpus snapshot of the configuration and indexes it once. Raises ConfigError when the
    system is unknown or not of kind ``reference``, InputError for a bad corpus."""
    from starlette.applications import Starlette
    from starlette.middleware import Middleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from rag_eval_pipeline.core.config import load_config
    from rag_eval_pipeline.core.errors import ConfigError
    from rag_eval_pipeline.core.jsonio import JsonError
    from rag_eval_pipeline.core.jsonio import loads as strict_json
    from rag_eval_pipeline.core.pipeline import build_snapshot
    from rag_eval_pipeline.core.systems.reference_service import ReferenceService
    from rag_eval_pipeline.local_guard import LocalOnly

    cfg = load_config(config_path)
    spec = cfg.system(system_name)
    if spec.kind != "reference":
        raise ConfigError(f"{cfg.path}: system {system_name!r} is of kind {spec.kind!r}; serve-reference serves a "
                          "kind: reference system")
    snapshot, version = build_snapshot(cfg)
    service = ReferenceService(snapshot, spec, version)
    model_version = f"{system_name}@{version[:12]}"

    def bad(message: str) -> JSONResponse:
        return JSONResponse({"error": message}, status_code=400)

    async def answer(request: Request) -> JSONResponse:
        try:
            body = strict_json(await request.body())
        except JsonError as exc:
            return bad(f"the body is not JSON ({str(exc)[:200]}); expected {{question_id, question, user_groups}}")
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

    # a foreign Host (DNS rebinding), a foreign Origin and non-JSON posts are refused (local_guard.py):
    # a web page must not be able to ask for restricted chunk text by naming a group
    return Starlette(middleware=[Middleware(LocalOnly)],
                     routes=[Route("/answer", answer, methods=["POST"]), Route("/health", health, methods=["GET"])])
