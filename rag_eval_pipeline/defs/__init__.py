"""The Dagster shell: a plain package, not a folder ``dg`` loads by itself.

``factory.py`` builds each suite's definitions from the stage modules it lists (``STAGES``); ``location.py``
merges them into the one code location (``rag_eval_pipeline/definitions.py``).
"""
