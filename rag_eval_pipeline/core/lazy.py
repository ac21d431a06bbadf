"""Modules imported on first use, so that loading the code location imports no dataframe or numeric library.

The code location (``rag_eval_pipeline.definitions``) is imported by ``dagster dev``, the daemon, every run and
(with the ``spawn`` start method) every step process; polars, pyarrow and numpy were 0.3-0.4 s of that import
although no definition needs them, only the steps' bodies. A module that needs one of them only inside its
functions binds a :func:`lazy_module` in its place::

    if TYPE_CHECKING:
        import polars as pl
    else:
        pl = lazy_module("polars")

``pl.col(...)`` then imports polars the first time it runs (``importlib.import_module``, under the import
system's own lock, so threads that race on it import it once), and is a plain attribute look-up afterwards.
Until then the module is not in ``sys.modules`` (``rag_eval_pipeline_tests/test_import_time.py`` checks it).

``STAND_INS`` names the module's classes that Dagster resolves from annotations when a definition is
built (``def step(rag_runs: pl.DataFrame) -> dg.Output[pl.DataFrame]``: ``typing.get_type_hints``, then
one ``PythonObjectDagsterType`` per class, checking ``isinstance``). Before the import they are stand-in
classes of the same name whose ``isinstance``/``issubclass`` checks, calls and attributes are the real
class's, imported then; after it, the stand-in is still what the annotation resolved to, and
``issubclass(t, pl.LazyFrame)`` holds for the stand-in and for polars's class alike (``defs/io.py`` reads a table
annotated either way as a scan).

Mechanism: PEP 562-style attribute look-up on a module object (``types.ModuleType.__getattr__``) and
``importlib.import_module`` (https://docs.python.org/3/library/importlib.html#importlib.import_module); the
stand-ins are classes with ``__instancecheck__``/``__subclasscheck__`` on their metaclass (PEP 3119).
Nothing here imports Dagster.
"""

from __future__ import annotations

import importlib
import types
from typing import Any, cast

__all__ = ["lazy_module"]


class _StandIn(type):
    """Metaclass of a class that stands for ``<module>.<name>`` until that module is imported."""

    _lazy_module: str
    _real: type | None = None

    def real(cls) -> type:
        """The class it stands for (imports its module the first time; remembered after)."""
        if cls._real is None:
            type.__setattr__(cls, "_real", getattr(importlib.import_module(cls._lazy_module), cls.__name__))
        return cast(type, cls._real)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls.real())

    def __subclasscheck__(cls, sub: type) -> bool:
        return sub is cls or issubclass(sub, cls.real())

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls.real()(*args, **kwargs)

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):  # typing's and Dagster's probes (__origin__, __args__...) import nothing
            raise AttributeError(name)
        return getattr(cls.real(), name)


class _LazyModule(types.ModuleType):
    """A module object whose attributes are looked up in the real module, imported on the first look-up."""

    def __init__(self, name: str, classes: tuple[str, ...]) -> None:
        super().__init__(name)
        self.__dict__.update({c: _StandIn(c, (), {"_lazy_module": name, "__module__": name}) for c in classes})

    def __getattr__(self, attr: str) -> Any:  # only for what is not in __dict__ yet
        if attr.startswith("__") and attr not in ("__version__", "__file__", "__path__"):
            raise AttributeError(attr)
        module = importlib.import_module(self.__name__)
        # later look-ups are plain dict look-ups; the stand-in classes stay (annotations resolved to them)
        self.__dict__.update({k: v for k, v in module.__dict__.items() if k not in self.__dict__})
        return getattr(module, attr)


#: Per module, the classes served as stand-ins before it is imported: those this project's step signatures use.
STAND_INS: dict[str, tuple[str, ...]] = {"polars": ("DataFrame", "LazyFrame", "Series")}
_MODULES: dict[str, types.ModuleType] = {}


def lazy_module(name: str) -> types.ModuleType:
    """Module ``name`` (a dotted name), imported when one of its attributes is first read; one object per name,
    shared by every caller (so ``pl.LazyFrame`` is the same class in every module).

    Output: a module object whose :data:`STAND_INS` classes are there before the import (see the module
    docstring). An unknown ``name`` raises ModuleNotFoundError at the first attribute read, not here.
    Source: PEP 562 (module ``__getattr__``), PEP 3119 (``__instancecheck__``)."""
    if name not in _MODULES:
        _MODULES[name] = _LazyModule(name, STAND_INS.get(name, ()))
    return _MODULES[name]
