"""Live systems under test: an HTTP endpoint, a Python callable, OpenTelemetry/OpenInference traces.

Pure core (no Dagster): ``specs`` validates the configuration entries, ``http`` / ``python_callable``
call the system once per golden question, ``traces`` imports what the system already traced,
``records`` turns replies into ``rag_runs`` rows, ``runner`` puts one interface over the three.
"""
