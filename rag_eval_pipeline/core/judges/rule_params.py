"""The embedded judge's fitted parameters: the file versioned with the package, and their check.

Split out of :mod:`~rag_eval_pipeline.core.judges.rule_based`; the parameters are fitted by
``bench/fit_rule_based.py`` on BEGIN dev (Dziri et al., arXiv 2105.00071) and their meaning is in
:mod:`~rag_eval_pipeline.core.judges.evidence`.
"""

from __future__ import annotations

import json
from pathlib import Path

from rag_eval_pipeline.core.judges.evidence import OPTIONAL_KEYS, PARAM_KEYS

#: The fitted parameters, versioned with the package; their sha256 is the judge's prompt_sha256.
PARAMS_FILE = Path(__file__).with_name("params") / "rule_based_v3.json"


def read_params(path: Path = PARAMS_FILE) -> tuple[dict, bytes]:
    """The parameters of the JSON file ``path`` and its bytes (which the judge's identity hashes).

    Output: (dict with at least :data:`PARAM_KEYS`, the file's bytes). Raises FileNotFoundError, or
    ValueError naming the file and key when a parameter is missing or outside its range
    (:func:`check_params`)."""
    raw = path.read_bytes()
    params = json.loads(raw.decode("utf-8"))
    check_params(params, str(path))
    return params, raw


def check_params(params: dict, where: str) -> None:
    """Raise ValueError naming ``where`` and the key when a parameter of ``params`` is missing or
    outside its range (numbers in [0, 1], ``support_semantic`` and ``word_counterpart`` in [-1, 1],
    ``support_lexical`` > 0, whole-number windows in [0, 50] / [-1, 50], ``extra_scope`` "passage"
    or "neighbours"); returns None when every value is valid."""
    for key in PARAM_KEYS + tuple(k for k in OPTIONAL_KEYS if k in params):
        v = params.get(key)
        low = -1.0 if key in ("support_semantic", "word_counterpart") else 0.0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not low <= float(v) <= 1.0:
            raise ValueError(f"{where}: parameter {key!r} must be a number in [{low:g}, 1], got {v!r}")
    if params["support_lexical"] <= 0:
        raise ValueError(f"{where}: parameter 'support_lexical' must be > 0")
    for key, low in (("counterpart_window", 0), ("semantic_span", -1)):
        v = params.get(key, low)
        if isinstance(v, bool) or not isinstance(v, int) or not low <= v <= 50:
            raise ValueError(f"{where}: parameter {key!r} must be a whole number in [{low}, 50], got {v!r}")
    if params.get("extra_scope", "passage") not in ("passage", "neighbours"):
        raise ValueError(f"{where}: parameter 'extra_scope' must be 'passage' or 'neighbours', "
                         f"got {params['extra_scope']!r}")
