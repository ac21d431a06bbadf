"""One registry per extensible kind of thing: name -> descriptor, filled by the kinds' own modules.

A kind (a system kind, a judge type, a corpus source, a metric) lives in one module that declares a
descriptor (its name, its typed configuration section, its behaviour, its documentation) and
registers it. A :class:`Registry` created with ``package=`` imports every module of that package
the first time anyone asks it for a name (:func:`discover`, with :mod:`pkgutil`), so adding a kind
is adding one module: no hand-kept list, no if/elif ladder to extend. The retrieval kernels'
``@kernel("name")`` registry (``core/metrics/retrieval_kernels.py``) is the first of this shape.

Rules: a name is registered once (a second registration is a :class:`RegistryError`, a mistake of
the code, reported when the module is imported); asking for an unknown name is a
:class:`~rag_eval_pipeline.core.errors.ConfigError` listing the known names (a mistake of the
configuration). Names are listed in a stable order: by the descriptor's ``order`` attribute when it
has one (the built-in kinds declare their place in messages and docs), then in registration order.
Nothing here imports Dagster.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from rag_eval_pipeline.core.errors import ConfigError

D = TypeVar("D")

__all__ = ["Registry", "RegistryError", "discover"]


class RegistryError(ValueError):
    """A kind registered twice, or a descriptor without a name: a mistake in the code, not the input."""


def discover(package: str) -> list[str]:
    """Import every module of ``package`` (not its sub-packages' modules), in name order.

    Input: a dotted package name. Output: the dotted names imported. Raises whatever importing a
    module raises (a broken kind module fails loudly, never silently disappears from the registry).
    """
    pkg = importlib.import_module(package)
    names = sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_"))
    for name in names:
        importlib.import_module(f"{package}.{name}")
    return [f"{package}.{n}" for n in names]


class Registry(Generic[D]):
    """Name -> descriptor for one kind of thing (``what``: "system kind", "judge type", ...).

    ``package``: the package whose modules register the kinds; it is imported (every module) on the
    first :meth:`get` / :meth:`names` / iteration, so a caller never sees a half-filled registry: another
    thread asking during discovery waits for it to finish (thread-safe).
    Descriptors are any objects with a ``name`` (or registered under an explicit name).
    """

    def __init__(self, what: str, package: str | None = None):
        self.what = what
        self.package = package
        self._items: dict[str, D] = {}
        self._discovered = package is None
        self._lock = threading.RLock()
        self._discovering: int | None = None  # the thread importing the package's modules, while it does

    # -- filling

    def register(self, descriptor: D, name: str | None = None) -> D:
        """Add ``descriptor`` under ``name`` (default ``descriptor.name``) and return it.

        Raises RegistryError for a name already registered or an empty name."""
        key = name if name is not None else getattr(descriptor, "name", None)
        if not isinstance(key, str) or not key:
            raise RegistryError(f"a {self.what} needs a non-empty name, got {key!r}")
        with self._lock:
            if key in self._items:
                raise RegistryError(f"{self.what} {key!r} is registered twice; each name is declared by one module")
            self._items[key] = descriptor
        return descriptor

    def add(self, name: str) -> Callable[[D], D]:
        """Decorator form of :meth:`register`: ``@registry.add("name")`` above a function or class."""

        def decorate(obj: D) -> D:
            self.register(obj, name)
            return obj

        return decorate

    # -- reading

    def _ensure(self) -> None:
        """Import the package's modules once. ``_discovered`` is set only when every module is imported; a
        kind module that reads the registry while importing (the discovering thread itself) sees what is
        registered so far; any other thread waits on the lock until discovery has finished."""
        if self._discovered or self._discovering == threading.get_ident():
            return
        with self._lock:
            if self._discovered:
                return
            self._discovering = threading.get_ident()
            try:
                if self.package is not None:  # without one, _discovered is True from the start
                    discover(self.package)
                self._discovered = True
            finally:
                self._discovering = None

    def names(self) -> tuple[str, ...]:
        """Every registered name: by ``order`` (when descriptors have it), then registration order."""
        self._ensure()
        items = list(self._items.items())
        ranked = sorted(range(len(items)), key=lambda i: (getattr(items[i][1], "order", 0), i))
        return tuple(items[i][0] for i in ranked)

    def get(self, name: str) -> D:
        """The descriptor of ``name``. Raises ConfigError ``unknown <what> 'x'; expected one of a, b``."""
        self._ensure()
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ConfigError(f"unknown {self.what} {name!r}; expected one of {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        self._ensure()
        return isinstance(name, str) and name in self._items

    def __iter__(self) -> Iterator[D]:
        """The descriptors, in :meth:`names` order."""
        return iter([self._items[n] for n in self.names()])

    def __len__(self) -> int:
        self._ensure()
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, {list(self._items)})"
