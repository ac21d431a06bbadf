"""A deadline on a whole HTTP request of the ``openai`` client, not only on each socket read.

httpx (``httpx2``, the ``openai`` client's HTTP library) applies its timeout to every connect, read
and write separately: an endpoint that trickles one byte every few seconds never trips it. Here
every socket operation of a request made inside :func:`request_deadline` is given at most the time
left before the deadline, and fails with httpcore's timeout error once it has passed, which the
``openai`` client reports as ``APITimeoutError``. The deadline is per thread (each judge thread
has its own request). Nothing here imports Dagster.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

_DEADLINE = threading.local()  # .at: time.monotonic() by which the current thread's request must end


@contextlib.contextmanager
def request_deadline(seconds: float) -> Iterator[None]:
    """Bound every socket operation made in this thread inside the block by ``seconds`` from now, in total.

    Input: seconds > 0. Only clients made by :func:`deadline_http_client` honour it. Raises nothing itself.
    """
    previous = getattr(_DEADLINE, "at", None)
    _DEADLINE.at = time.monotonic() + seconds
    try:
        yield
    finally:
        _DEADLINE.at = previous


def _time_left(timeout: float | None, exc_type: type[Exception]) -> float | None:
    at = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise exc_type("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


def deadline_http_client(timeout_s: float, max_connections: int, *, follow_redirects: bool = True,
                         trust_env: bool = True) -> Any:
    """An ``httpx2.Client`` for ``openai.OpenAI(http_client=...)`` whose every socket operation is bounded
    by the calling thread's :func:`request_deadline` (and by ``timeout_s`` per operation, as usual).

    Inputs: ``timeout_s`` (> 0, httpx's per-operation timeout), ``max_connections`` (pool size, >= 1).
    ``follow_redirects`` (default True, as the ``openai`` client's default does) and ``trust_env`` (proxies
    from the environment) are passed to the client. Output: the client. httpx2's
    transport takes no network backend, so its connection pool is rebuilt with one (httpcore2's
    extension point for custom networking); everything else is httpx2's. Raises nothing.
    """
    import httpcore2
    import httpx2

    class DeadlineStream(httpcore2.NetworkStream):
        def __init__(self, inner: Any):
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _time_left(timeout, httpcore2.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _time_left(timeout, httpcore2.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Any:
            return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                        _time_left(timeout, httpcore2.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class DeadlineBackend(httpcore2.NetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore2.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Any:
            return DeadlineStream(self._inner.connect_tcp(host, port, _time_left(timeout, httpcore2.ConnectTimeout),
                                                          local_address, socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return DeadlineStream(self._inner.connect_unix_socket(
                path, _time_left(timeout, httpcore2.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    limits = httpx2.Limits(max_connections=max(max_connections, 1), max_keepalive_connections=max(max_connections, 1))
    transport = httpx2.HTTPTransport(limits=limits)
    transport._pool = httpcore2.ConnectionPool(  # noqa: SLF001 - the pool is where a network backend goes
        ssl_context=httpx2.create_ssl_context(), max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections, keepalive_expiry=limits.keepalive_expiry,
        network_backend=DeadlineBackend())
    return httpx2.Client(transport=transport, timeout=timeout_s, follow_redirects=follow_redirects,
                         trust_env=trust_env)
