"""One module per judge type; each registers a :class:`~rag_eval_pipeline.core.judges.registry.JudgeType`
when imported (the registry imports every module here on first use). A new judge type is one module
here (see CONTRIBUTING.md, "Add a judge")."""
