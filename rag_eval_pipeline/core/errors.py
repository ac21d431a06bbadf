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


class InputErrors(InputError):
    """Several bad records of one file, each an :class:`InputError` naming its line and field: ``errors`` (the
    first :data:`SHOWN_ERRORS`, in file order) and ``total`` (how many records were bad). Its message (what
    ``rag-eval run`` prints) is the first error and the count of the others; ``rag-eval check`` prints each."""

    SHOWN_ERRORS = 20

    def __init__(self, errors: list[InputError], total: int):
        first = errors[0]
        more = f" (and {total - 1} more bad record(s) in this file: rag-eval check lists them)" if total > 1 else ""
        EvalError.__init__(self, f"{first}{more}")
        self.path, self.line, self.field = first.path, first.line, first.field
        self.errors, self.total = errors, total


class RecordErrors:
    """Collects the bad records of one file while it is read: :meth:`add` one :class:`InputError` (kept up to
    :data:`InputErrors.SHOWN_ERRORS`, all counted); :meth:`raise_any` raises the first alone (one bad record) or
    an :class:`InputErrors`, and nothing when every record was good."""

    def __init__(self) -> None:
        self.errors: list[InputError] = []
        self.total = 0

    def add(self, exc: InputError) -> None:
        self.total += 1
        if len(self.errors) < InputErrors.SHOWN_ERRORS:
            self.errors.append(exc)

    def raise_any(self) -> None:
        if self.total == 1:
            raise self.errors[0]
        if self.total:
            raise InputErrors(self.errors, self.total)


class ConfigError(EvalError):
    """An invalid configuration value, reported when the configuration is loaded."""


class SchemaError(EvalError):
    """A table does not match its declared schema (see ``rag_eval_pipeline.core.tables``)."""
