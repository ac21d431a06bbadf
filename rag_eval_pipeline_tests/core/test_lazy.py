"""Modules imported on first use (``core/lazy.py``): nothing imported before an attribute is read, the real
module's attributes after, and stand-in classes that behave as the real class for ``isinstance``, calls and
Dagster's annotation types.

The expected behaviour is Python's own (``isinstance``/``issubclass`` of the real class, PEP 3119) and Dagster's
for a plain class annotation (a type named after the class that checks ``isinstance``,
https://docs.dagster.io/api/dagster/types): each assertion compares the stand-in with the real class.
"""

import sys

import dagster as dg
import polars
import pytest

from rag_eval_pipeline.core import lazy
from rag_eval_pipeline.core.lazy import lazy_module

PROBE = '''
IMPORTS = []
IMPORTS.append(1)
VALUE = 41


class Frame:
    """A class the lazy module serves as a stand-in."""

    KIND = "frame"

    def __init__(self, n=0):
        self.n = n

    @classmethod
    def empty(cls):
        return cls(0)


class Other:
    pass
'''


@pytest.fixture()
def probe(tmp_path, monkeypatch):
    """A module on a temporary path, not imported yet, with ``Frame`` as its stand-in class."""
    name = f"lazy_probe_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(lazy.STAND_INS, name, ("Frame",))
    yield name
    sys.modules.pop(name, None)
    lazy._MODULES.pop(name, None)


def test_nothing_is_imported_before_an_attribute_is_read_and_once_after(probe):
    mod = lazy_module(probe)
    assert mod is lazy_module(probe)  # one object per name: the same stand-in class everywhere
    assert probe not in sys.modules
    frame_class = mod.Frame  # a stand-in: still nothing imported
    assert frame_class.__name__ == "Frame" and probe not in sys.modules
    assert getattr(frame_class, "__origin__", None) is None and probe not in sys.modules  # typing's probes
    assert mod.VALUE == 41 and probe in sys.modules
    assert mod.IMPORTS == [1]  # imported once
    assert mod.VALUE == 41 and sys.modules[probe].IMPORTS == [1]


def test_a_stand_in_class_is_the_real_class_for_isinstance_calls_and_attributes(probe):
    mod = lazy_module(probe)
    frame_class = mod.Frame
    made = frame_class(3)  # the real class's constructor
    real = sys.modules[probe].Frame
    assert type(made) is real and made.n == 3
    assert isinstance(made, frame_class) and isinstance(real(), frame_class)
    assert not isinstance(sys.modules[probe].Other(), frame_class) and not isinstance(3, frame_class)
    assert issubclass(real, frame_class) and not issubclass(sys.modules[probe].Other, frame_class)
    assert issubclass(frame_class, frame_class)  # a Dagster type's typing_type, compared as defs/io.py does
    assert frame_class.KIND == "frame" and type(frame_class.empty()) is real
    assert mod.Frame is frame_class  # what annotations resolved to stays the same object


def test_an_unknown_module_fails_at_the_first_read_not_when_bound():
    mod = lazy_module("rag_eval_no_such_module_xyz")
    with pytest.raises(ModuleNotFoundError):
        _ = mod.anything


def test_dagster_types_from_stand_in_annotations_check_as_the_real_class():
    from dagster._core.types.dagster_type import resolve_dagster_type

    pl = lazy_module("polars")
    stand_in, real = resolve_dagster_type(pl.DataFrame), resolve_dagster_type(polars.DataFrame)
    assert stand_in.display_name == real.display_name == "DataFrame"

    @dg.asset
    def frame() -> pl.DataFrame:
        return polars.DataFrame({"a": [1, 2]})

    @dg.asset
    def rows(frame: pl.DataFrame) -> dg.Output[pl.DataFrame]:
        return dg.Output(frame.with_columns(b=polars.col("a") * 2))

    @dg.asset
    def not_a_frame() -> pl.DataFrame:
        return {"a": [1, 2]}  # type: ignore[return-value]

    result = dg.materialize([frame, rows])
    assert result.success and result.output_for_node("rows")["b"].to_list() == [2, 4]
    failed = dg.materialize([not_a_frame], raise_on_error=False)
    assert not failed.success  # Dagster's type check refused a dict, as it does for polars.DataFrame
    (failure,) = [e for e in failed.all_events if e.is_step_failure]
    assert failure.step_failure_data.error.cls_name == "DagsterTypeCheckDidNotPass"
