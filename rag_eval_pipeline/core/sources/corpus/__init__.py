"""One module per corpus source; each registers a
:class:`~rag_eval_pipeline.core.sources.corpus_base.CorpusSource` when imported (the registry imports
every module here on first use)."""
