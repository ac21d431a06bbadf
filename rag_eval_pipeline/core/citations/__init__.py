"""Citations a person can check: where they come from (inline markers and the run log), whether each
one is valid (exists, was retrieved, is current, may be read by the asker) and whether it supports
the claim it is attached to (ALCE, Gao et al., EMNLP 2023; TREC 2024 RAG support evaluation).

Modules: :mod:`.markers` (the ``citation_format`` options and the marker parser),
:mod:`.validity` (checks that need no judge), :mod:`.answers` (each answer's claims and the citations
bound to them), :mod:`.judging` (support through the judge's
:class:`~rag_eval_pipeline.core.judges.base.JudgesSupport` capability). The metrics are in
:mod:`rag_eval_pipeline.core.metrics.citations`. Nothing here imports Dagster.
"""
