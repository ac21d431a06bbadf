"""The type checker is configured, pinned and run by CI, and no module of the package is exempt from it.

Running mypy itself is CI's step (``.ci/run``); these checks keep that step from quietly going away or
growing an exemption list."""

import re
import tomllib

from rag_eval_pipeline_tests.conftest import REPO_ROOT

#: Modules of the package mypy is told to skip (``ignore_errors``). A list that only shrinks: adding one
#: here is a visible decision, with its error count beside it in pyproject.toml.
BASELINE: set[str] = set()


def _pyproject() -> dict:
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_mypy_checks_the_whole_package_with_the_agreed_strictness():
    cfg = _pyproject()["tool"]["mypy"]
    assert cfg["packages"] == ["rag_eval_pipeline"]
    assert cfg["python_version"] == "3.11"
    for flag in ("check_untyped_defs", "no_implicit_optional", "warn_unused_ignores", "warn_redundant_casts"):
        assert cfg[flag] is True, flag


def test_no_module_of_the_package_is_exempt_beyond_the_baseline():
    overrides = _pyproject()["tool"]["mypy"].get("overrides", [])
    exempt = {m for o in overrides if o.get("ignore_errors") for m in o["module"]}
    assert exempt == BASELINE
    # missing-import leniency is for third-party modules only, never for this package
    lenient = {m for o in overrides if o.get("ignore_missing_imports") for m in o["module"]}
    assert lenient and not any(m.startswith("rag_eval_pipeline") for m in lenient)


def test_ci_runs_mypy_after_ruff_and_before_the_tests():
    steps = [line.strip() for line in (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    ruff = steps.index(".venv/bin/ruff check .")
    mypy = steps.index(".venv/bin/mypy")
    tests = steps.index(".venv/bin/python -m pytest -n 2 --dist loadfile")
    assert ruff < mypy < tests


def test_mypy_is_pinned_alike_in_the_test_extra_and_the_lock():
    extra = _pyproject()["project"]["optional-dependencies"]["test"]
    lock = (REPO_ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines()
    for name in ("mypy", "types-PyYAML"):
        [pin] = [p for p in extra if re.match(rf"{re.escape(name)}==", p)]
        assert pin in lock, pin
