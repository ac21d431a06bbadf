"""``rag-eval serve``: the report pages of an output folder over HTTP on 127.0.0.1, read-only.

Browsers refuse ``file://`` links from a web page and such links are useless through an SSH tunnel,
so the Dagster UI links to this server instead (set ``RAG_EVAL_REPORT_URL`` to its address in the
code location's environment). Only the report pages are served (``report.html``, ``report.md``,
``trend.html`` of every suite folder below the served one, and the comparison pages ``rag-eval compare``
writes to ``compare/``, which follow the same access policy): never the Parquet tables, which hold
text the report withholds from its viewers. GET and HEAD only; no directory listing beyond an index
of the report pages; paths that leave the folder (``..``, symbolic links) are refused by Starlette's
``StaticFiles``, and the index lists only pages reached without following a symbolic link (a page
behind a linked folder is listed nowhere and served by no URL). A foreign ``Host`` (DNS rebinding)
is refused, as on every local server (``local_guard.py``).
"""

from __future__ import annotations

import html
import os
import socket
from pathlib import Path, PurePosixPath
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from rag_eval_pipeline.local_guard import LocalOnly
from rag_eval_pipeline.ports import DEFAULT_PORT

HOST = "127.0.0.1"
REPORT_FILES = ("report.html", "report.md", "trend.html")
COMPARE_DIR, COMPARE_PREFIX, COMPARE_SUFFIXES = "compare", "compare-", (".html", ".md")
INDEX_DEPTH = 3  # <root>/<suite>/quick/report.html


def port_free(port: int, host: str = HOST) -> bool:
    """Whether a server could listen on ``host:port`` now: a bind test with SO_REUSEADDR, as uvicorn binds.

    Input: a port 1..65535. Output: False when another socket listens there (or binding is refused)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def port_in_use_message(port: int, host: str = HOST) -> str:
    """The one line a command prints when its port is taken."""
    return f"port {port} on {host} is in use (another server listens there); pick another with --port"


def is_report_page(path: str) -> bool:
    """Whether a relative POSIX path names a page this server shows: a report page (``REPORT_FILES``) or a
    comparison page of ``rag-eval compare`` (``compare/compare-*.html`` or ``.md``); never a table."""
    p = PurePosixPath(path)
    if p.name in REPORT_FILES:
        return True
    return (p.parent.name == COMPARE_DIR and p.name.startswith(COMPARE_PREFIX)
            and p.suffix in COMPARE_SUFFIXES)


class ReportFiles(StaticFiles):
    """StaticFiles restricted to the report and comparison pages (any other name is 404, whatever exists on disk)."""

    async def get_response(self, path: str, scope):
        if scope["method"] not in ("GET", "HEAD"):
            raise HTTPException(status_code=405, headers={"Allow": "GET, HEAD"})
        if not is_report_page(path):
            raise HTTPException(status_code=404)
        return await super().get_response(path, scope)


def report_pages(folder: Path) -> list[str]:
    """Report pages under ``folder`` (at most INDEX_DEPTH levels down), as sorted POSIX relative paths.

    Walks without following symbolic links: a page inside a linked folder, or a linked page, is not
    listed (``StaticFiles(follow_symlink=False)`` would not serve it either)."""
    found = []
    root = str(folder)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel = Path(dirpath).relative_to(folder)
        if len(rel.parts) >= INDEX_DEPTH:
            dirnames[:] = []
        dirnames[:] = [d for d in dirnames if not os.path.islink(os.path.join(dirpath, d))]
        for name in filenames:
            path = os.path.join(dirpath, name)
            page = (rel / name).as_posix()
            if is_report_page(page) and not os.path.islink(path) and os.path.isfile(path):
                found.append(page)
    return sorted(found)


def build_app(folder: str | Path) -> Starlette:
    """The ASGI app serving ``folder``'s report pages. Raises FileNotFoundError when it is not a folder."""
    root = Path(folder).resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"folder {root} not found")

    async def index(request: Request) -> HTMLResponse:
        items = "".join(f'<li><a href="{quote(p)}">{html.escape(p)}</a></li>' for p in report_pages(root))
        return HTMLResponse(f"<!doctype html><meta charset=utf-8><title>rag-eval reports</title>"
                            f"<h1>Reports in {html.escape(str(root))}</h1><ul>{items or '<li>none yet</li>'}</ul>")

    return Starlette(middleware=[Middleware(LocalOnly)],
                     routes=[Route("/", index, methods=["GET", "HEAD"]),
                             Mount("/", app=ReportFiles(directory=root, follow_symlink=False))])


def run_until_stopped(app, port: int, **uvicorn_options) -> None:
    """Run ``app`` with uvicorn on 127.0.0.1:``port`` until SIGINT or SIGTERM; either ends it with status 0.

    uvicorn handles both signals while it serves, then re-raises the one it caught; with the default
    SIGTERM handler that re-raise would end the process with status 143 after a clean shutdown.
    """
    import signal

    import uvicorn

    signal.signal(signal.SIGTERM, lambda *_: None)  # what uvicorn restores and re-raises into: a no-op
    uvicorn.run(app, host=HOST, port=port, **uvicorn_options)


def serve(folder: str | Path, port: int = DEFAULT_PORT) -> None:
    """Serve ``folder`` on http://127.0.0.1:PORT until interrupted (SIGINT / SIGTERM)."""
    app = build_app(folder)
    print(f"serving the reports in {Path(folder).resolve()} at http://{HOST}:{port}/ (read-only; Ctrl-C stops). "
          f"For links in the Dagster UI: RAG_EVAL_REPORT_URL=http://{HOST}:{port}", flush=True)
    run_until_stopped(app, port, log_level="warning")
