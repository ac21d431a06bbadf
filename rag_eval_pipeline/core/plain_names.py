"""Names the command line shows in ``--help`` and the pipeline uses, in a module that imports nothing, so
that ``rag-eval --help`` builds its parsers without loading Dagster, polars or the encoders.

Each name is re-exported where it belongs (``defs.schedules``, ``core.config_sections``,
``core.report.compare_sides``); import it from there in pipeline code.
"""

#: The two jobs of every suite (Dagster job names ``<suite>__full_evaluation`` / ``<suite>__quick_evaluation``).
FULL, QUICK_JOB = "full_evaluation", "quick_evaluation"
#: The golden splits a gate (and ``rag-eval compare``) can compare on: tune on dev, gate on test.
GATE_SPLITS = ("dev", "test", "all")
#: How ``rag-eval compare`` names a side.
COMPARE_SIDE_SYNTAX = "system:NAME | baseline | night:YYYY-MM-DD[:NAME] | run:RUN_ID[:NAME] | dir:PATH[:NAME]"

__all__ = ["COMPARE_SIDE_SYNTAX", "FULL", "GATE_SPLITS", "QUICK_JOB"]
