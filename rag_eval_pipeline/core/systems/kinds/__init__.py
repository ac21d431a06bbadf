"""One module per system kind. Each registers a :class:`~rag_eval_pipeline.core.systems.base.SystemKind`
in :data:`~rag_eval_pipeline.core.systems.base.SYSTEM_KINDS` when imported; the registry imports every
module of this package the first time it is read, so a new kind is one new module here (see
CONTRIBUTING.md, "Add a system kind")."""
