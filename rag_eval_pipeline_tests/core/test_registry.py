"""The generic registry: one name once, unknown names listed, kinds found by importing their package."""

from __future__ import annotations

import sys
from dataclasses import dataclass

import pytest

from rag_eval_pipeline.core.errors import ConfigError
from rag_eval_pipeline.core.registry import Registry, RegistryError


@dataclass(frozen=True)
class Thing:
    name: str
    order: int = 100


def test_a_name_is_registered_once_and_an_unknown_one_lists_the_known_names():
    reg: Registry[Thing] = Registry("widget")
    reg.register(Thing("b", order=20))
    reg.register(Thing("a", order=10))
    reg.register(Thing("c"))  # no order given: after the ordered ones
    with pytest.raises(RegistryError, match="widget 'a' is registered twice"):
        reg.register(Thing("a"))
    with pytest.raises(RegistryError, match="non-empty name"):
        reg.register(Thing(""))
    assert reg.names() == ("a", "b", "c") and [t.name for t in reg] == ["a", "b", "c"]
    assert reg.get("b") == Thing("b", order=20) and "c" in reg and "z" not in reg and len(reg) == 3
    with pytest.raises(ConfigError, match=r"^unknown widget 'z'; expected one of a, b, c$"):
        reg.get("z")


def test_the_decorator_form_registers_under_the_given_name():
    reg: Registry = Registry("kernel")

    @reg.add("double")
    def double(x):
        return 2 * x

    assert reg.get("double") is double and reg.names() == ("double",)


def test_a_package_is_imported_on_first_use_and_each_module_registers_itself(tmp_path, monkeypatch):
    pkg = tmp_path / "demo_kinds_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "demo_kinds_base.py").write_text(
        "from dataclasses import dataclass\nfrom rag_eval_pipeline.core.registry import Registry\n"
        "@dataclass(frozen=True)\nclass K:\n    name: str\n    order: int = 100\n"
        "KINDS = Registry('demo kind', package='demo_kinds_pkg')\n", encoding="utf-8")
    for name, order in (("zeta", 1), ("alpha", 2)):
        (pkg / f"{name}.py").write_text(f"from demo_kinds_base import KINDS, K\nKINDS.register(K({name!r}, {order}))\n",
                                        encoding="utf-8")
    (pkg / "_helpers.py").write_text("raise RuntimeError('a module starting with _ is not a kind')\n",
                                     encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import demo_kinds_base

        assert not demo_kinds_base.KINDS._discovered
        # adding a kind is adding a module: nothing lists them by hand
        assert demo_kinds_base.KINDS.names() == ("zeta", "alpha")
        assert "demo_kinds_pkg.zeta" in sys.modules and "demo_kinds_pkg._helpers" not in sys.modules
    finally:
        for mod in [m for m in sys.modules if m.startswith("demo_kinds")]:
            del sys.modules[mod]


def test_a_module_that_fails_to_import_fails_loudly(tmp_path, monkeypatch):
    pkg = tmp_path / "broken_kinds_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (pkg / "bad.py").write_text("raise ImportError('no such dependency')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    reg: Registry = Registry("broken kind", package="broken_kinds_pkg")
    try:
        with pytest.raises(ImportError, match="no such dependency"):
            reg.names()
        with pytest.raises(ImportError):  # not silently empty on the second call either
            reg.names()
    finally:
        for mod in [m for m in sys.modules if m.startswith("broken_kinds")]:
            del sys.modules[mod]


def test_another_thread_waits_for_discovery_instead_of_reading_a_half_filled_registry(tmp_path, monkeypatch):
    # a_slow registers "a" after 0.6 s; b_fast registers "b" and reads the registry while importing (re-entry
    # from the discovering thread must not wait for itself). A second thread asking for "b" while a_slow is
    # still importing must wait for discovery to finish, not see "unknown slow kind 'b'".
    import threading
    import time

    pkg = tmp_path / "slow_kinds_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "slow_kinds_base.py").write_text(
        "import threading\nfrom rag_eval_pipeline.core.registry import Registry\n"
        "KINDS = Registry('slow kind', package='slow_kinds_pkg')\nSTARTED = threading.Event()\n", encoding="utf-8")
    (pkg / "a_slow.py").write_text(
        "import time\nfrom slow_kinds_base import KINDS, STARTED\nfrom types import SimpleNamespace\n"
        "STARTED.set()\ntime.sleep(0.6)\nKINDS.register(SimpleNamespace(name='a'))\n", encoding="utf-8")
    (pkg / "b_fast.py").write_text(
        "from slow_kinds_base import KINDS\nfrom types import SimpleNamespace\n"
        "SEEN = KINDS.names()\nKINDS.register(SimpleNamespace(name='b'))\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import slow_kinds_base

        results: dict[str, object] = {}

        def ask(who: str, name: str) -> None:
            try:
                results[who] = slow_kinds_base.KINDS.get(name).name
            except Exception as exc:  # noqa: BLE001 - the test reports what the thread saw
                results[who] = exc

        first = threading.Thread(target=ask, args=("first", "a"))
        first.start()
        assert slow_kinds_base.STARTED.wait(5)  # discovery is under way, a_slow is sleeping
        second = threading.Thread(target=ask, args=("second", "b"))
        t0 = time.monotonic()
        second.start()
        second.join(10)
        first.join(10)
        assert results == {"first": "a", "second": "b"}
        assert time.monotonic() - t0 > 0.3  # the second thread waited for a_slow to finish
        assert sys.modules["slow_kinds_pkg.b_fast"].SEEN == ("a",)  # re-entry saw what was registered so far
    finally:
        for mod in [m for m in sys.modules if m.startswith("slow_kinds")]:
            del sys.modules[mod]
