"""Agreement of the embedded judge with BEGIN's human labels, on any file in BEGIN's TSV format.

BEGIN (Dziri, Rashkin, Linzen & Reitter, "Evaluating Groundedness in Dialogue Systems: The BEGIN
Benchmark", arXiv 2105.00071): tab-separated, a header row, no quoting; the columns read are
``knowledge`` (the evidence), ``response`` (the text judged), ``begin_label`` ("Fully attributable"
/ "Not fully attributable" / "Generic") and, when present, ``model_name``. Rows labelled
"Generic" are dropped and counted (they are neither attributable nor not).

Each row becomes one run (one retrieved chunk = the knowledge, answer = the response) judged through
the pipeline path (``core.judging.judge_runs``). The mapping, fixed before any figure was seen:
judge "attributable" iff the answer is judged and every claim is SUPPORTED; anything else (a claim
not SUPPORTED, no checkable claim, abstention wording, a judge error) is "not attributable", so n
is every non-Generic row. People: "Fully attributable" → attributable, "Not fully attributable" →
not attributable.

Prints the judge and its parameter hash, n, the dropped Generic rows, Cohen's kappa, raw agreement
with its 95% Wilson interval, the confusion matrix (rows = people, columns = judge), per-label
precision / recall, kappa per generating model, the speed (answers judged per second, with the
machine's load average and CPU count) and, on the last line, kappa alone.

Usage: python bench/begin_calibration.py [--file PATH] [--no-semantic]
Default file: ``begin_wow/begin_dev_wow.tsv`` under ``RAG_EVAL_DATASETS`` or ``../shared/datasets``.
A missing file, a missing column or an unknown label is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections import Counter
from pathlib import Path

import polars as pl

from rag_eval_pipeline.core.judging import judge_runs
from rag_eval_pipeline.core.metrics.agreement import accuracy, cohen_kappa, confusion_matrix, per_class_precision_recall
from rag_eval_pipeline.core.metrics.stats import wilson_interval
from rag_eval_pipeline.core.tables import RETRIEVED_HIT

REPO = Path(__file__).resolve().parents[1]
LABELS = ["attributable", "not_attributable"]
HUMAN = {"Fully attributable": "attributable", "Not fully attributable": "not_attributable"}
REQUIRED = ("knowledge", "response", "begin_label")


class BeginFileError(ValueError):
    """A BEGIN file that cannot be read: the message names the file, line and field."""


def load_begin(path: Path) -> tuple[list[dict[str, str]], int]:
    """(non-Generic rows, number of Generic rows dropped) of a BEGIN TSV file.

    Raises BeginFileError naming the file (and line, field) for a missing file, a missing column,
    a row with the wrong number of fields or a label outside BEGIN's three.
    """
    if not path.is_file():
        raise BeginFileError(f"{path}: file not found")
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            reader = csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise BeginFileError(f"{path}: line 1: missing column(s) {missing}; found {reader.fieldnames}")
            rows, generic = [], 0
            for line, row in enumerate(reader, start=2):
                if None in row or any(row.get(c) is None for c in REQUIRED):
                    raise BeginFileError(f"{path}: line {line}: expected {len(reader.fieldnames)} tab-separated fields")
                label = row["begin_label"].strip()
                if label == "Generic":
                    generic += 1
                    continue
                if label not in HUMAN:
                    raise BeginFileError(f"{path}: line {line}: field begin_label: {label!r} is not one of "
                                         f"{sorted([*HUMAN, 'Generic'])}")
                rows.append(row)
    except UnicodeDecodeError as exc:
        raise BeginFileError(f"{path}: not UTF-8 ({exc})") from exc
    return rows, generic


def frames(rows: list[dict[str, str]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(corpus snapshot, rag_runs) for the rows: one chunk (the knowledge) per row."""
    qids = [f"begin{i:04d}" for i in range(len(rows))]
    snapshot = pl.DataFrame({"chunk_id": [f"{q}#0" for q in qids], "text": [r["knowledge"] for r in rows]})
    runs = pl.DataFrame(
        [{"system": r.get("model_name") or "begin", "question_id": q,
          "retrieved": [{"chunk_id": f"{q}#0", "score": 1.0, "rank": 1}],
          "decision": "answer", "answer": r["response"]} for q, r in zip(qids, rows)],
        schema={"system": pl.Utf8, "question_id": pl.Utf8, "retrieved": pl.List(RETRIEVED_HIT),
                "decision": pl.Utf8, "answer": pl.Utf8},
    )
    return snapshot, runs


def judge_labels_of(labels: pl.DataFrame, answers: pl.DataFrame) -> dict[str, str]:
    """question_id → "attributable" / "not_attributable" by the mapping of the module docstring."""
    sup = {}
    for qid, verdict in labels.select("question_id", "verdict").iter_rows():
        sup[qid] = sup.get(qid, True) and verdict == "SUPPORTED"
    return {qid: "attributable" if status == "judged" and sup.get(qid, False) else "not_attributable"
            for qid, status in answers.select("question_id", "status").iter_rows()}


def score(rows: list[dict[str, str]], judge) -> dict:
    """Judge every row and compare with people. Output: dict with n, kappa (None when undefined),
    agreement, its Wilson interval, confusion matrix, per-label precision/recall, per-model kappa,
    statuses, seconds and answers per second."""
    snapshot, runs = frames(rows)
    t0 = time.perf_counter()
    labels, answers = judge_runs(runs, snapshot, judge)
    secs = time.perf_counter() - t0
    pred = judge_labels_of(labels, answers)
    qids = runs["question_id"].to_list()
    human = [HUMAN[r["begin_label"].strip()] for r in rows]
    judged = [pred[q] for q in qids]
    _, matrix = confusion_matrix(human, judged, LABELS)
    agree = accuracy(human, judged) if rows else None
    low, high = wilson_interval(sum(h == j for h, j in zip(human, judged)), len(rows)) if rows else (None, None)
    per_model = {}
    for m in sorted({r.get("model_name") or "begin" for r in rows}):
        idx = [i for i, r in enumerate(rows) if (r.get("model_name") or "begin") == m]
        per_model[m] = (len(idx), cohen_kappa([human[i] for i in idx], [judged[i] for i in idx], LABELS))
    return {"n": len(rows), "kappa": cohen_kappa(human, judged, LABELS) if rows else None,
            "auc": ranking_auc(labels, qids, human),
            "agreement": agree, "ci": (low, high), "confusion": matrix,
            "per_label": per_class_precision_recall(human, judged, LABELS), "per_model": per_model,
            "statuses": dict(Counter(answers["status"].to_list())), "seconds": secs,
            "answers_per_s": len(rows) / secs if secs > 0 else float("inf")}


def ranking_auc(labels: pl.DataFrame, qids: list[str], human: list[str]) -> dict[str, float | None]:
    """ROC AUC of three answer scores for "attributable" (Mann-Whitney U / (n1 n0), ties one half;
    scipy): the share of SUPPORTED claims, the mean ``support_score`` and the mean of the two weakest
    claims' ``support_score`` (``answer_support``, the judge's answer-level graded support; null
    scores left out). An answer without claims scores 0. None when a class is empty
    or the judge gives no score."""
    from scipy.stats import mannwhitneyu

    from rag_eval_pipeline.core.judges.rule_verdict import answer_support

    share: dict[str, list[float]] = {}
    graded: dict[str, list[float]] = {}
    for qid, verdict, sc in labels.select("question_id", "verdict", "support_score").iter_rows():
        share.setdefault(qid, []).append(float(verdict == "SUPPORTED"))
        if sc is not None:
            graded.setdefault(qid, []).append(sc)
    out: dict[str, float | None] = {}
    for name, per in (("share", share), ("graded", graded), ("weakest", graded)):
        xs = [(answer_support(per[q]) if name == "weakest" else sum(per[q]) / len(per[q])) if per.get(q)
              else 0.0 for q in qids]
        pos = [x for x, h in zip(xs, human) if h == "attributable"]
        neg = [x for x, h in zip(xs, human) if h != "attributable"]
        out[name] = (float(mannwhitneyu(pos, neg).statistic / (len(pos) * len(neg)))
                     if pos and neg and (name == "share" or graded) else None)
    return out


def fmt(k: float | None) -> str:
    return "undefined" if k is None else f"{k:.3f}"


def print_report(res: dict, generic: int) -> None:
    """Print the figures of :func:`score` (kappa last)."""
    print(f"n = {res['n']} (Generic rows dropped: {generic}); answer statuses {res['statuses']}")
    if res["agreement"] is not None:
        print(f"raw agreement = {res['agreement']:.3f} (95% Wilson [{res['ci'][0]:.3f}, {res['ci'][1]:.3f}])")
    print("confusion (rows = people, columns = judge):")
    print(f"    {'':18s}" + "".join(f"{lab:>18s}" for lab in LABELS))
    for lab, r in zip(LABELS, res["confusion"]):
        print(f"    {lab:18s}" + "".join(f"{x:18d}" for x in r))
    for lab, d in res["per_label"].items():
        p = "n/a" if d["precision"] is None else f"{d['precision']:.3f}"
        r = "n/a" if d["recall"] is None else f"{d['recall']:.3f}"
        print(f"    {lab:18s} precision {p}  recall {r}  support {d['support']}  predicted {d['predicted']}")
    print("kappa by generating model: " + ", ".join(f"{m} {fmt(k)} (n={n})" for m, (n, k) in res["per_model"].items()))
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("n/a",)
    print(f"speed: {res['n']} answers judged in {res['seconds']:.1f} s = {res['answers_per_s']:.1f} answers/s "
          f"(machine: {os.cpu_count()} CPUs, load average {', '.join(f'{x:.2f}' for x in load)})")
    print(f"ROC AUC for attributable: share of SUPPORTED claims {fmt(res['auc']['share'])}, graded support "
          f"(mean support_score) {fmt(res['auc']['graded'])}, two weakest claims' support_score "
          f"{fmt(res['auc']['weakest'])}")
    print(f"Cohen's kappa = {fmt(res['kappa'])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    datasets = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    default = datasets / "begin_wow" / "begin_dev_wow.tsv"
    ap.add_argument("--file", type=Path, default=default, help="a BEGIN-format TSV file")
    ap.add_argument("--no-semantic", action="store_true", help="judge without the semantic signal")
    args = ap.parse_args(argv)
    from rag_eval_pipeline.core.judges.rule_based import RuleBasedJudge

    try:
        rows, generic = load_begin(args.file)
    except BeginFileError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    judge = RuleBasedJudge(semantic=not args.no_semantic)
    print(f"judge {judge.name} / {judge.model}, prompt_sha256 {judge.prompt_sha256}")
    print(f"file {args.file}")
    res = score(rows, judge)
    print_report(res, generic)
    print(fmt(res["kappa"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
