"""Lexical correctness against the reference answer: SQuAD's token F1 and token recall.

Faithfulness cannot see an omission (an answer that leaves out the important
exception can be perfectly faithful); only a comparison with a reviewed reference answer catches it.
This is the deterministic, offline version: the official SQuAD evaluation's normalisation
(Rajpurkar et al. 2016, ``evaluate-v2.0.py``: lower case, drop punctuation and articles, collapse
whitespace), extended with Spanish articles, then token F1 and token recall of the reference.
A model judge's correctness (``core/judges/openai_compatible.py``) is reported apart.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Mapping

import polars as pl

from rag_eval_pipeline.core.metrics.names import CORRECTNESS_METRICS as CORRECTNESS_METRICS  # re-exported

_ARTICLES = re.compile(r"\b(a|an|the|el|la|los|las|un|una|unos|unas|lo)\b")
_PUNCT = set(string.punctuation) | {"¿", "¡", "«", "»", "“", "”", "‘", "’", "…", "–", "—"}


def normalise_answer(text: str) -> str:
    """SQuAD's answer normalisation plus Spanish articles and NFKC: lower case, no punctuation, no articles."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if ch in _PUNCT else ch for ch in text)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_scores(answer: str, reference: str) -> tuple[float, float, int, int, int]:
    """Token overlap of ``answer`` with ``reference`` after :func:`normalise_answer`.

    Output: (f1, recall, common, answer_tokens, reference_tokens); f1 and recall in [0, 1].
    Raises ValueError when the reference normalises to no token (recall would have no denominator).
    Source: the official SQuAD v2.0 evaluation script's ``compute_f1`` (bag-of-tokens overlap).
    """
    a, r = normalise_answer(answer).split(), normalise_answer(reference).split()
    if not r:
        raise ValueError(f"reference answer {reference!r} has no token after normalisation")
    common = sum((Counter(a) & Counter(r)).values())
    if common == 0:
        return 0.0, 0.0, 0, len(a), len(r)
    precision, recall = common / len(a), common / len(r)
    return 2 * precision * recall / (precision + recall), recall, common, len(a), len(r)


def correctness_question_metrics(rag_runs: pl.DataFrame, golden: pl.DataFrame, *,
                                 citation_formats=None, known_chunks=None) -> pl.DataFrame:
    """``answer_token_f1`` and ``reference_token_recall`` per (system, question).

    Inline citation markers are stripped from the answer first (its system's format from
    ``citation_formats``, default every syntax; ``known_chunks``: the snapshot's chunk ids, so that
    ``[doc_id]`` is recognised): a marker is not a word of the answer.

    Inputs: rag_runs and golden_set tables. Output: question_metrics rows without ``split`` (k and
    ranking_mode null). A value exists only for an answered, answerable question with a reference
    answer; otherwise it is null with status ``not_answered`` / ``not_answerable`` / ``no_reference``
    / ``run_error``. Recall's numerator/denominator are reference tokens found / reference tokens.
    """
    ref = golden.select("question_id", "answerability", "reference_answer")
    # the id sets once, not per answer (see strip_markers)
    # a mapping chunk id -> document id (the snapshot's doc_id) is kept as it is: it names the documents
    chunks = (known_chunks if isinstance(known_chunks, Mapping) else set(known_chunks)) \
        if known_chunks is not None else None
    rows = []
    for r in rag_runs.join(ref, on="question_id", how="inner").iter_rows(named=True):
        base = {"system": r["system"], "question_id": r["question_id"], "k": None, "ranking_mode": None}
        status, scores = "ok", None
        if r["decision"] == "error":
            status = "run_error"
        elif r["answerability"] != "answerable":
            status = "not_answerable"
        elif r["decision"] != "answer" or not (r["answer"] or "").strip():
            status = "not_answered"
        elif not normalise_answer(r["reference_answer"] or ""):
            status = "no_reference"
        else:
            from rag_eval_pipeline.core.citations.markers import DEFAULT_FORMAT, strip_markers

            fmt = (citation_formats or {}).get(r["system"], DEFAULT_FORMAT)
            scores = token_scores(strip_markers(r["answer"], fmt, known_chunks=chunks), r["reference_answer"])
        if scores is None:
            for m in ("answer_token_f1", "reference_token_recall"):
                rows.append(base | {"metric": m, "value": None, "numerator": None, "denominator": None,
                                    "status": status})
            continue
        f1, recall, common, _, n_ref = scores
        rows.append(base | {"metric": "answer_token_f1", "value": f1, "numerator": f1, "denominator": 1.0,
                            "status": "ok"})
        rows.append(base | {"metric": "reference_token_recall", "value": recall, "numerator": float(common),
                            "denominator": float(n_ref), "status": "ok"})
    schema = {"system": pl.Utf8, "question_id": pl.Utf8, "metric": pl.Utf8, "k": pl.Int32, "value": pl.Float64,
              "numerator": pl.Float64, "denominator": pl.Float64, "status": pl.Utf8, "ranking_mode": pl.Utf8}
    return pl.DataFrame(rows, schema=schema)
