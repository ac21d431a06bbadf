"""The rules every local web server of ``rag-eval`` applies (``serve``, ``serve-reference``, ``label``).

They listen on 127.0.0.1 only, but a web page the user opens elsewhere can still reach them through
the browser: by DNS rebinding (a name of the attacker's that now resolves to 127.0.0.1: the browser
sends that name as ``Host``) or by a cross-site form post (``text/plain`` and form bodies need no
CORS preflight). :class:`LocalOnly` refuses both, before any route runs:

- ``Host`` must name the loopback interface (``127.0.0.1``, ``localhost`` or ``[::1]``), followed by
  nothing but an optional ``:port`` of digits (``127.0.0.1:80@evil.com``, ``localhost:evil`` and
  ``[::1].evil.com`` are foreign): otherwise 400 (the check of Starlette's ``TrustedHostMiddleware``;
  OWASP, "DNS rebinding");
- a request that is not ``GET`` / ``HEAD`` / ``OPTIONS`` must carry ``Content-Type:
  application/json`` (415 otherwise: a browser cannot send it cross-site without a CORS preflight,
  which these servers never grant); an ``Origin`` header, when present, must be a loopback origin,
  and ``Sec-Fetch-Site: cross-site`` is refused (403). (Fetch standard, "CORS-safelisted request
  header"; W3C Fetch Metadata Request Headers.)
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.responses import JSONResponse, PlainTextResponse

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


#: ``Host`` as RFC 9110 §7.2 / RFC 3986 §3.2.2 write it: a bracketed IPv6 literal or a name/IPv4 address
#: without ``: [ ] @ /`` or spaces, then optionally ``:`` and a port of digits, and nothing else.
_HOST = re.compile(r"(?:\[(?P<v6>[0-9a-f:.]+)\]|(?P<name>[^:\[\]@/\\\s]+))(?::(?P<port>[0-9]{1,5}))?")


def _hostname(value: str) -> str | None:
    """The host part of a ``Host`` header value (``[::1]:8765`` -> ``::1``; ``localhost:80`` -> ``localhost``),
    or None when the value is not a host and an optional numeric port (``127.0.0.1:80@evil.com``,
    ``localhost:evil``, ``[::1].evil.com``)."""
    m = _HOST.fullmatch(value.strip().lower())
    if m is None:
        return None
    return m.group("v6") or m.group("name")


def loopback_host(host_header: str | None) -> bool:
    """True when a ``Host`` header names the loopback interface, with at most a numeric port after it.
    A missing header, or anything else after the host, is False."""
    if not host_header:
        return False
    return _hostname(host_header) in LOOPBACK_HOSTS


def loopback_origin(origin: str | None) -> bool:
    """True when an ``Origin`` header is an http(s) origin on the loopback interface (``null`` is not)."""
    if not origin:
        return False
    try:
        parts = urlsplit(origin.strip())
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and (parts.hostname or "") in LOOPBACK_HOSTS


class LocalOnly:
    """ASGI middleware applying the module's rules; ``json_errors`` answers refusals as ``{"ok": false,
    "error": ...}`` (the labelling page's API shape) instead of plain text."""

    def __init__(self, app, json_errors: bool = False):
        self.app, self.json_errors = app, json_errors

    def _refuse(self, status: int, message: str):
        if self.json_errors:
            return JSONResponse({"ok": False, "error": message}, status_code=status)
        return PlainTextResponse(message, status_code=status)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":  # lifespan; no server here has websockets
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        refusal = None
        if not loopback_host(headers.get("host")):
            refusal = (400, "Invalid host header: this server answers only requests addressed to 127.0.0.1 or "
                            "localhost")
        elif scope.get("method", "GET") not in SAFE_METHODS:
            origin = headers.get("origin")
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if origin is not None and not loopback_origin(origin):
                refusal = (403, f"cross-site request refused (Origin {origin[:100]!r})")
            elif headers.get("sec-fetch-site", "").lower() == "cross-site":
                refusal = (403, "cross-site request refused (Sec-Fetch-Site: cross-site)")
            elif ctype != "application/json":
                refusal = (415, "expected Content-Type application/json")
        if refusal is not None:
            return await self._refuse(*refusal)(scope, receive, send)
        return await self.app(scope, receive, send)
