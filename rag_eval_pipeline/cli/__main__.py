"""``python -m rag_eval_pipeline.cli`` is ``rag-eval``."""

import sys

from rag_eval_pipeline.cli import main

sys.exit(main())
