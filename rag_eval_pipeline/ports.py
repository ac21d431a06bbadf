"""The local servers' default ports and the ``--port`` option's type, in a module that imports only argparse
(``rag-eval --help`` reads them without loading Starlette)."""

from __future__ import annotations

import argparse

#: ``rag-eval serve`` (the reports).
DEFAULT_PORT = 8765
#: ``rag-eval serve-reference``: not the reports' port, so the two run side by side.
REFERENCE_PORT = 8766
#: ``rag-eval label``.
LABEL_PORT = 8790


def port_number(text: str) -> int:
    """An argparse ``type``: a TCP port 1..65535 from its text. Raises ArgumentTypeError (argparse: exit 2)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is outside 1..65535")
    return port


__all__ = ["DEFAULT_PORT", "LABEL_PORT", "REFERENCE_PORT", "port_number"]
