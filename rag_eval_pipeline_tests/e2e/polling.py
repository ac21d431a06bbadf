"""Polling until a condition holds, for the tests that start real servers (ports: servers/local.py)."""

import time


def wait_until(what: str, fn, timeout: float, interval: float = 0.5):
    """Call ``fn`` every ``interval`` seconds until it returns a truthy value (returned); AssertionError
    naming ``what`` (and the last exception ``fn`` raised) after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = fn()
            if value:
                return value
        except Exception as exc:  # noqa: BLE001 - keep polling until the deadline
            last = exc
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}"
                         + (f" (last error: {last!r})" if last else ""))
