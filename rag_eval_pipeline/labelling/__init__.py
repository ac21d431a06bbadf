"""``rag-eval label``: a local page (Starlette + uvicorn on 127.0.0.1) for the hand labels judge calibration needs.

``session.py`` holds what one labeller's session knows (tables, sample, progress, the label file);
``app.py`` the page and its routes; ``cli.py`` the command. The sampling, hashing and label-file
rules are in ``rag_eval_pipeline.core.labelling``.
"""
