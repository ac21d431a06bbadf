"""Public methods a reader calls or a section runs carry a docstring: every section's validate hook (system
kinds, judge types, the configuration's sections and their nested sections), the kinds' runners and the
comparison rows' properties."""

import dataclasses
import inspect
import typing

from rag_eval_pipeline.core import config_sections
from rag_eval_pipeline.core.judges.registry import JUDGE_TYPES
from rag_eval_pipeline.core.report.compare import MetricRow, QuestionChange
from rag_eval_pipeline.core.systems.base import SYSTEM_KINDS
from rag_eval_pipeline.core.systems.kinds.http import HttpRunner
from rag_eval_pipeline.core.systems.kinds.python import PythonRunner
from rag_eval_pipeline.core.systems.kinds.reference import GeneratorConfig, RetrieverConfig
from rag_eval_pipeline.core.systems.kinds.traces import TracesRunner


def _sections() -> set[type]:
    roots = [k.section for k in SYSTEM_KINDS] + [j.section for j in JUDGE_TYPES]
    roots += [c for _n, c in inspect.getmembers(config_sections, inspect.isclass)
              if dataclasses.is_dataclass(c) and c.__module__ == config_sections.__name__]
    seen, todo = set(), list(roots)
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        try:
            hints = typing.get_type_hints(cls)
        except NameError:  # EvalConfig: the loaded whole, annotated with names imported for type checking only
            continue
        for tp in hints.values():
            todo += [a for a in (tp, *typing.get_args(tp)) if isinstance(a, type) and dataclasses.is_dataclass(a)]
    return seen


def test_every_validate_hook_and_runner_says_what_it_does():
    sections = _sections()
    assert RetrieverConfig in sections and config_sections.CalibrationConfig in sections
    missing = [f"{c.__qualname__}.validate" for c in sorted(sections, key=lambda c: c.__qualname__)
               if "validate" in vars(c) and not inspect.getdoc(vars(c)["validate"])]
    for fn in (HttpRunner.run, PythonRunner.run, TracesRunner.run, RetrieverConfig.as_json, GeneratorConfig.as_json,
               MetricRow.label.fget, QuestionChange.regressed.fget):
        if not inspect.getdoc(fn):
            missing.append(fn.__qualname__)
    assert missing == []
