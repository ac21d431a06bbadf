"""What the tests' local servers share: ports on 127.0.0.1 and a threaded JSON-over-POST HTTP server.

- :func:`free_port`: a port nothing listens on right now (for a server a test starts next);
  :func:`closed_port`: the same, named for a client test that wants its connection refused;
  :func:`busy_port`: a port held by a listening socket for a ``with`` block (a server asked to use it
  must refuse).
- :class:`JsonPostServer`: ``http.server.ThreadingHTTPServer`` (HTTP/1.1 keep-alive, daemon threads,
  no request log) on a free port, served from a daemon thread while used as a context manager; every
  POST's JSON body goes to the subclass's :meth:`JsonPostServer.handle`, counted in ``in_flight`` while
  it runs (``max_in_flight``: the most at once). :func:`send_json` writes one reply.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HANGUPS = (BrokenPipeError, ConnectionResetError)


def _hung_up(conn: socket.socket) -> bool:
    """True when the client has closed its end of ``conn`` (EOF or reset), without waiting or reading."""
    try:
        ready, _, _ = select.select([conn], [], [], 0)
        return bool(ready) and conn.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (bound to port 0, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def closed_port() -> int:
    """A port nothing listens on (bound, then released): connections to it are refused."""
    return free_port()


@contextmanager
def busy_port() -> Iterator[int]:
    """A port on 127.0.0.1 that a socket of this process listens on (and never accepts from) while the
    ``with`` block runs: a server asked to bind it finds it in use."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def send_json(h: BaseHTTPRequestHandler, status: int, body: bytes, headers: dict | None = None) -> None:
    """Reply ``status`` with ``body`` (already encoded) as ``application/json`` with its Content-Length and
    the extra ``headers``; a client that has hung up (broken pipe, reset) is ignored."""
    try:
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
    except _HANGUPS:
        pass


class JsonPostServer:
    """A local HTTP server whose POST requests carry JSON: subclass and define :meth:`handle`.

    ``url`` is ``http://127.0.0.1:PORT`` + :attr:`path`; ``server_class`` may be a subclass of
    ThreadingHTTPServer (one that keeps quiet about clients hanging up, say). A client that hangs up
    while its request is handled ends that request quietly."""

    path = "/answer"
    server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer

    def __init__(self) -> None:
        self.in_flight = self.max_in_flight = 0
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep test output quiet
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with owner._lock:
                    # A client that hung up no longer has the request open, even if its handler thread has
                    # not been scheduled to notice yet (under load a retry can arrive first).
                    owner._open = {c for c in owner._open if not _hung_up(c)}
                    owner._open.add(self.connection)
                    owner.in_flight = len(owner._open)
                    owner.max_in_flight = max(owner.max_in_flight, owner.in_flight)
                try:
                    owner.handle(self, body)
                except _HANGUPS:
                    pass
                finally:
                    with owner._lock:
                        owner._open.discard(self.connection)
                        owner.in_flight = len(owner._open)

        self._httpd = self.server_class(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}{self.path}"

    def handle(self, h: BaseHTTPRequestHandler, body: dict) -> None:
        """Answer one POST whose parsed JSON body is ``body`` through the request handler ``h``."""
        raise NotImplementedError

    def __enter__(self):
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
