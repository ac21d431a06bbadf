"""Errors raised by the pure core. Every message names the file, the line or row, and the field."""

from __future__ import annotations


class EvalError(Exception):
    """Base class for every error the pipeline raises on purpose."""


class InputError(EvalError):
    """Bad input data: the message names the file, the line or row, the field and what was expected.

    Attributes: ``path`` (str or None), ``line`` (1-based int or None), ``field`` (str or None).
    """

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None,
                 field: str | None = None):
        where = ", ".join(
            part for part in (
                f"file {path}" if path else None,
                f"line {line}" if line is not None else None,
                f"field {field!r}" if field else None,
            ) if part
        )
        super().__init__(f"{where}: {message}" if where else message)
        self.path, self.line, self.field = path, line, field


class ConfigError(EvalError):
    """An invalid configuration value, reported when the configuration is loaded."""


class SchemaError(EvalError):
    """A table does not match its declared schema (see ``rag_eval_pipeline.core.tables``)."""
