"""Names the command line shows in ``--help`` and the pipeline uses, in a module that imports nothing, so
that ``rag-eval --help`` builds its parsers without loading Dagster, polars or the encoders, and the code
location builds its definitions without loading polars or pyarrow (the configuration's choices, the judges'
verdicts: ``bench/bench_startup.py``).

Each name is re-exported where it belongs (``defs.schedules``, ``core.config_sections``,
``core.report.compare_sides``, ``core.corpus``, ``core.tables``); import it from there in pipeline code, from
here in a module the code location imports.
"""

#: The two jobs of every suite (Dagster job names ``<suite>__full_evaluation`` / ``<suite>__quick_evaluation``).
FULL, QUICK_JOB = "full_evaluation", "quick_evaluation"
#: The golden splits a gate (and ``rag-eval compare``) can compare on: tune on dev, gate on test.
GATE_SPLITS = ("dev", "test", "all")
#: How ``rag-eval compare`` names a side.
COMPARE_SIDE_SYNTAX = "system:NAME | baseline | night:YYYY-MM-DD[:NAME] | run:RUN_ID[:NAME] | dir:PATH[:NAME]"
#: The blocking checks (Dagster check names) the run's decision states (``core.report.decision``).
GATE_CHECK = "no_regression_against_baseline"
CALIBRATION_CHECK = "judge_calibrated_above_floor"
RUN_ERRORS_CHECK = "run_errors_within_share"
#: The run's decision file beside the suite's tables, and the folder where a run that stops before its report keeps
#: the last report and decision (``core.report.decision``, ``defs.stopped``).
DECISION_FILE, PREVIOUS_DIR = "decision.json", "previous"
#: How a corpus is cut into chunks (``core.corpus``).
CHUNKING_STRATEGIES = ("paragraphs", "document")

# The values of the tables' categorical columns (``core.tables``).
ANSWERABILITY = ("answerable", "absent", "clarify")
DECISIONS = ("answer", "abstain", "clarify", "error")
VERDICTS = ("SUPPORTED", "CONTRADICTED", "NOT_MENTIONED", "JUDGE_ERROR")
#: Support levels of the citation-support and nugget-coverage verdict families (full / partial / none).
SUPPORT_VERDICTS = ("SUPPORTED", "PARTIAL", "NOT_SUPPORTED", "JUDGE_ERROR")
#: Verdict families beside faithfulness: each is judged, calibrated and reported on its own.
VERDICT_FAMILIES = ("citation_support", "nugget_coverage")
NUGGET_IMPORTANCE = ("vital", "okay")
CHUNK_STATUS = ("active", "withdrawn", "replaced")
SPLITS = ("dev", "test")
LEVELS = ("chunk", "doc")  # what a retrieval metric row was scored against (core/metrics/doc_level.py)

__all__ = ["ANSWERABILITY", "CALIBRATION_CHECK", "CHUNKING_STRATEGIES", "CHUNK_STATUS", "COMPARE_SIDE_SYNTAX",
           "DECISIONS", "FULL", "GATE_CHECK", "GATE_SPLITS", "LEVELS", "NUGGET_IMPORTANCE", "QUICK_JOB",
           "RUN_ERRORS_CHECK", "SPLITS", "SUPPORT_VERDICTS", "VERDICTS", "VERDICT_FAMILIES"]
