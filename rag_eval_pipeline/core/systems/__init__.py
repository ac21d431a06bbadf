"""Systems under test: the kinds (``kinds/``, registered in ``base.SYSTEM_KINDS``) and what they share.

Pure core (no Dagster): ``base`` declares what a kind is and runs one (``run_system``), ``runs`` is the
``rag_runs`` step, ``http`` / ``python_callable`` call a live system once per golden question,
``traces`` imports what the system already traced, ``records`` turns replies into ``rag_runs`` rows,
``estimate`` and ``fingerprints`` read the registry for ``rag-eval estimate`` and the on-change sensor.
"""
