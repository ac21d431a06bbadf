"""Per-question faithfulness metrics from the judge tables.

Definitions (Ragas' ``faithfulness``, Es et al., EACL 2024 demo: supported claims / claims, e.g.
5 of 6 → 0.83; the whole-answer YES / PARTIAL / NO label scored 1 / 0.5 / 0, this pipeline's scoring),
computed per (system, question) over the judge's repeats:

- ``faithfulness`` = SUPPORTED / judged claims. JUDGE_ERROR claims are left out of numerator and
  denominator (and counted by ``judge_error_rate``).
- ``faithfulness_holistic`` = mean over judged repeats of the YES/PARTIAL/NO score derived from the
  claim verdicts by :func:`~rag_eval_pipeline.core.judges.base.holistic_label` (the judge's own
  holistic label is not stored in the tables); numerator = sum of scores, denominator = repeats.
- ``contradicted_claim_rate`` = CONTRADICTED / judged claims.
- ``quote_downgrade_rate`` = claims whose SUPPORTED verdict ``judge_runs`` downgraded because the
  quote was not in the retrieved text / judged claims (numerator = the count).
- ``judge_error_rate`` = JUDGE_ERROR rows / all claim rows, every repeat included (numerator =
  the count of judge errors; a failed answer is one row).

With several repeats the counts are pooled: numerator and denominator are summed over the repeats
whose status is "judged", and value = numerator / denominator.

Not evaluable is not zero (project design): value, numerator and denominator are null, and
``status`` says why — "abstained", "abstention_text_in_answer" (the decision was ``answer`` but
the text abstains: not judged, counted as an abstention by the decision metrics), "clarify",
"run_error", "no_retrieval", "no_claims" (an answer with no claim is never faithfulness 1.0),
"judge_error" (no verdict other than JUDGE_ERROR).
``status`` is "ok" otherwise. ``k`` and ``ranking_mode`` are null. Never NaN.
"""

from __future__ import annotations

from collections import defaultdict

import polars as pl

from rag_eval_pipeline.core.errors import InputError, SchemaError
from rag_eval_pipeline.core.judges.base import HOLISTIC_SCORES, holistic_label
from rag_eval_pipeline.core.judging import DOWNGRADE_PREFIX
from rag_eval_pipeline.core.metrics.names import FAITHFULNESS_METRICS as FAITHFULNESS_METRICS  # re-exported
from rag_eval_pipeline.core.tables import SCHEMAS, VERDICTS

#: Which status explains a null when the repeats disagree (first present wins).
_STATUS_PRECEDENCE = ("run_error", "abstained", "abstention_text_in_answer", "clarify", "no_retrieval",
                      "judge_error", "no_claims")

OUTPUT_SCHEMA = pl.Schema({k: v for k, v in SCHEMAS["question_metrics"].items() if k != "split"})


def faithfulness_question_metrics(
    judge_labels: pl.DataFrame, answer_judgements: pl.DataFrame
) -> pl.DataFrame:
    """Faithfulness metrics per (system, question) (definitions in the module docstring).

    Inputs: ``judge_labels`` and ``answer_judgements`` as produced by
    :func:`rag_eval_pipeline.core.judging.judge_runs` (only system, question_id, repeat, verdict,
    justification / status are read). Output: a frame with the question_metrics columns minus
    ``split`` (system, question_id, metric, k, value, numerator, denominator, status,
    ranking_mode), one row per (system, question, metric in ``FAITHFULNESS_METRICS``), in the
    order of first appearance in ``answer_judgements``; values in [0, 1] or null.
    Raises SchemaError for a missing column, InputError for an unknown verdict or for a label whose
    (system, question_id, repeat) has no answer_judgements row.
    """
    for df, table, cols in (
        (judge_labels, "judge_labels", ("system", "question_id", "repeat", "verdict", "justification")),
        (answer_judgements, "answer_judgements", ("system", "question_id", "repeat", "status")),
    ):
        missing = [c for c in cols if c not in df.columns]
        if missing:
            raise SchemaError(f"table {table!r}: missing columns {missing}")

    statuses: dict[tuple[str, str], dict[int, str]] = {}
    for r in answer_judgements.select("system", "question_id", "repeat", "status").iter_rows():
        statuses.setdefault((r[0], r[1]), {})[r[2]] = r[3]

    verdicts: dict[tuple[str, str, int], list[tuple[str, bool]]] = defaultdict(list)
    for i, (system, qid, rep, verdict, just) in enumerate(judge_labels.select(
            "system", "question_id", "repeat", "verdict", "justification").iter_rows(), start=1):
        if verdict not in VERDICTS:
            raise InputError(f"verdict {verdict!r} is not one of {VERDICTS}",
                             path="judge_labels", line=i, field="verdict")
        if rep not in statuses.get((system, qid), {}):
            raise InputError(f"label for system {system!r}, question {qid!r}, repeat {rep} has "
                             "no answer_judgements row", path="judge_labels", line=i,
                             field="question_id")
        verdicts[(system, qid, rep)].append((verdict, bool(just and just.startswith(DOWNGRADE_PREFIX))))

    rows = []
    for (system, qid), by_rep in statuses.items():
        judged = [rep for rep, st in sorted(by_rep.items()) if st == "judged"]
        null_status = next((s for s in _STATUS_PRECEDENCE if s in by_rep.values()), "judge_error")
        claims = [v for rep in judged for v in verdicts.get((system, qid, rep), [])]
        ok = [(v, d) for v, d in claims if v != "JUDGE_ERROR"]
        all_rows = [v for rep in sorted(by_rep) for v, _ in verdicts.get((system, qid, rep), [])]

        claim_status = "ok" if ok else (null_status if not judged else "judge_error")
        n = len(ok)
        counts = {
            "faithfulness": sum(v == "SUPPORTED" for v, _ in ok),
            "contradicted_claim_rate": sum(v == "CONTRADICTED" for v, _ in ok),
            "quote_downgrade_rate": sum(d for _, d in ok),
        }
        scores = []
        for rep in judged:
            label = holistic_label([v for v, _ in verdicts.get((system, qid, rep), [])])
            if label is not None:
                scores.append(HOLISTIC_SCORES[label])

        def add(metric: str, num: float, den: float, status: str, *,
                system: str = system, qid: str = qid) -> None:
            ok_ = status == "ok"
            rows.append({
                "system": system, "question_id": qid, "metric": metric, "k": None,
                "value": (num / den) if ok_ else None,
                "numerator": float(num) if ok_ else None,
                "denominator": float(den) if ok_ else None,
                "status": status, "ranking_mode": None,
            })

        add("faithfulness", counts["faithfulness"], n, claim_status)
        add("faithfulness_holistic", sum(scores), len(scores), "ok" if scores else claim_status)
        add("contradicted_claim_rate", counts["contradicted_claim_rate"], n, claim_status)
        add("quote_downgrade_rate", counts["quote_downgrade_rate"], n, claim_status)
        n_err = sum(v == "JUDGE_ERROR" for v in all_rows)
        add("judge_error_rate", n_err, len(all_rows), "ok" if all_rows else null_status)

    return pl.DataFrame(rows, schema=OUTPUT_SCHEMA)
