"""Fit the rule-based judge's few parameters on public training data, and report honest agreement.

Data: BEGIN's Wizard-of-Wikipedia dev file (``../shared/datasets/begin_wow/begin_dev_wow.tsv``;
Dziri et al., arXiv 2105.00071): 430 responses, each with its knowledge snippet and a human label
"Fully attributable" / "Not fully attributable". No other file is used for fitting; the embedded
sample's hand labels are never read here.

What is fitted: the four numbers of the decision rule (``core/judges/evidence.py``) —
``support_lexical``, ``lexical_floor``, ``support_semantic`` and ``word_counterpart`` (the word
similarity that excuses an extra word as a substitution) — by grid search maximising Cohen's kappa at
response level (judge "attributable" iff every claim is SUPPORTED; a response with no checkable claim
counts as not attributable, so n is always 430): the first three exhaustively for a given
``word_counterpart``, then ``word_counterpart`` for them, twice (coordinate ascent). HaluEval and
SciFact are never read here: they are evaluation only (``bench/halueval_pairwise.py``,
``bench/long_inputs.py``).

Honest figure: 5-fold cross-validation with folds **grouped by knowledge snippet** (BEGIN pairs
one snippet with the responses of four dialogue models; grouping keeps a snippet's responses in one
fold), seed 0: fit on four folds, score the fifth, pool the five held-out predictions; kappa overall
and per generating model (``model_name``). Beside it, on the same folds, the naive baseline:
content-word overlap (lower-cased letter runs minus the judge's stopwords; share of the response's
words found in the snippet) with one threshold fitted the same way.

No held-out row shapes its own prediction: the evidence is computed once with no fitted value in
it (extra words on every pair sharing a token, whatever ``lexical_floor``; the semantic score and
word counterparts on every pair), and the candidate ``support_semantic`` values (quantiles of the
observed cosines) are taken from the four training folds only, inside each fold.

Three structural choices are not searched by the grid but set by options, each value compared by
the same cross-validation (one run per value; the runs are listed in docs/judges.md):
``--counterpart-window`` (how many sentence words on each side of an extra word's aligned place may
excuse it; 0 = any word of the sentence), ``--semantic-span`` (words kept around the part of the
sentence that shares the claim's words when the semantic signal encodes it; -1 = the whole
sentence) and ``--extra-scope`` (``passage`` or ``neighbours``: which words of the chunk a sentence
may leave implicit). Defaults: the values in the parameter file.

``--write`` stores the parameters fitted on all 430 responses in the package's parameter file
(their sha256 becomes the judge's prompt_sha256, so every earlier calibration goes stale).

Usage: python bench/fit_rule_based.py [--datasets DIR] [--write] [--counterpart-window N]
[--semantic-span N] [--extra-scope passage|neighbours]
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

from rag_eval_pipeline.core.judges.rule_based import PARAMS_FILE, STOPWORDS, RuleBasedJudge, decide
from rag_eval_pipeline.core.metrics.agreement import cohen_kappa

REPO = Path(__file__).resolve().parents[1]
LABELS = ["attributable", "not_attributable"]
#: The grid, kept coarse on purpose (430 labels): 7 x 4 x 12 candidate rules.
GRID_LEXICAL = [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]
GRID_FLOOR = [0.3, 0.4, 0.5, 0.6]
#: Word-to-word similarities that excuse an extra word (1.01: none is excused).
GRID_COUNTERPART = [0.80, 0.82, 0.84, 0.86, 0.88, 0.90, 0.92, 0.95, 1.01]


def load_begin(path: Path) -> list[dict[str, str]]:
    """Rows of a BEGIN TSV (tab-separated, header, no quoting)."""
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))


def response_evidence(judge: RuleBasedJudge, response: str, knowledge: str):
    """Per claim of one response: (fixed NOT_MENTIONED reason or None, evidence row with the
    semantic score on every sentence), exactly as the judge computes them."""
    return [(fixed, row) for _, fixed, row in judge.analyse(response, [knowledge])]


def predict(table, params: dict) -> str:
    """The judge's response-level label under ``params``: attributable iff every claim is SUPPORTED
    (no checkable claim: not attributable)."""
    if not table:
        return "not_attributable"
    ok = all(fixed is None and any(decide(ev, params) == "SUPPORTED" for ev in row) for fixed, row in table)
    return "attributable" if ok else "not_attributable"


def kappa(human: list[str], pred: list[str]) -> float:
    k = cohen_kappa(human, pred, LABELS)
    return -1.0 if k is None else k


def semantic_grid(tables) -> list[float]:
    vals = sorted({round(ev.semantic, 3) for t in tables for _, row in t for ev in row if ev.semantic is not None})
    if not vals:
        return [1.0]
    qs = np.quantile(vals, np.linspace(0.5, 1.0, 11))  # the upper half of the observed cosines
    return sorted({round(float(q), 3) for q in qs} | {1.01})


def fit(tables, human: list[str], idx: list[int], sem_grid: list[float],
        counterpart_grid: list[float] = GRID_COUNTERPART) -> tuple[dict, float]:
    """Grid search on rows ``idx``: (best params, their kappa), by coordinate ascent over
    ``word_counterpart`` and the other three. Ties: the first found, i.e. the highest thresholds
    (the most conservative rule) of the grid order."""
    h = [human[i] for i in idx]

    def score(p: dict) -> float:
        return kappa(h, [predict(tables[i], p) for i in idx])

    tau = 1.01
    best, best_k = None, -2.0
    for _ in range(2):
        for lex in GRID_LEXICAL:
            for floor in GRID_FLOOR:
                if floor >= lex:
                    continue
                for sem in sem_grid:
                    p = {"support_lexical": lex, "lexical_floor": floor, "support_semantic": min(sem, 1.0),
                         "word_counterpart": tau}
                    if sem > 1.0:  # the semantic signal off (a cosine never exceeds 1 + rounding)
                        p = {"support_lexical": lex, "lexical_floor": lex, "support_semantic": 1.0,
                             "word_counterpart": tau}
                    k = score(p)
                    if k > best_k + 1e-12:
                        best, best_k = p, k
        for t in counterpart_grid:
            p = dict(best, word_counterpart=t)
            k = score(p)
            if k > best_k + 1e-12:
                best, best_k = p, k
        if best["word_counterpart"] == tau:
            break
        tau = best["word_counterpart"]
    return best, best_k


_WORD = re.compile(r"[^\W\d_]+")


def overlap(response: str, knowledge: str) -> float:
    """Naive baseline score: share of the response's content words found in the knowledge."""
    r = {w for w in _WORD.findall(response.casefold()) if w not in STOPWORDS and len(w) > 1}
    k = {w for w in _WORD.findall(knowledge.casefold()) if w not in STOPWORDS and len(w) > 1}
    return len(r & k) / len(r) if r else 0.0


def fit_threshold(scores: list[float], human: list[str], idx: list[int]) -> tuple[float, float]:
    best_t, best_k = 1.0, -2.0
    h = [human[i] for i in idx]
    for t in sorted({round(scores[i], 4) for i in idx}):
        k = kappa(h, ["attributable" if scores[i] >= t else "not_attributable" for i in idx])
        if k > best_k + 1e-12:
            best_t, best_k = t, k
    return best_t, best_k


def grouped_folds(rows: list[dict[str, str]], n_folds: int = 5, seed: int = 0) -> list[list[int]]:
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r["knowledge"], []).append(i)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    folds: list[list[int]] = [[] for _ in range(n_folds)]
    for n, key in enumerate(keys):
        folds[n % n_folds].extend(groups[key])
    return folds


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = Path(os.environ.get("RAG_EVAL_DATASETS", REPO.parent / "shared" / "datasets"))
    ap.add_argument("--datasets", type=Path, default=default)
    ap.add_argument("--write", action="store_true", help="store the parameters fitted on all rows")
    ap.add_argument("--counterpart-window", type=int, default=None,
                    help="sentence words on each side of an extra word's aligned place (0: all)")
    ap.add_argument("--semantic-span", type=int, default=None,
                    help="words kept around the claim's part of a sentence for the semantic signal (-1: all)")
    ap.add_argument("--extra-scope", choices=("passage", "neighbours"), default=None,
                    help="words a sentence may leave implicit: its whole chunk, or the chunk's first "
                         "sentence and the sentence before")
    args = ap.parse_args(argv)
    path = args.datasets / "begin_wow" / "begin_dev_wow.tsv"
    if not path.is_file():
        print(f"{path}: file not found", file=sys.stderr)
        return 2
    rows = [r for r in load_begin(path) if r["begin_label"] != "Generic"]
    human = ["attributable" if r["begin_label"] == "Fully attributable" else "not_attributable" for r in rows]
    judge = RuleBasedJudge()
    structure = {"counterpart_window": int(judge.params.get("counterpart_window", 0)),
                 "semantic_span": int(judge.params.get("semantic_span", -1)),
                 "extra_scope": str(judge.params.get("extra_scope", "passage"))}
    if args.counterpart_window is not None:
        structure["counterpart_window"] = args.counterpart_window
    if args.semantic_span is not None:
        structure["semantic_span"] = args.semantic_span
    if args.extra_scope is not None:
        structure["extra_scope"] = args.extra_scope
    judge.params.update(structure)
    print(f"structure: {structure}")
    t0 = time.perf_counter()
    tables = [response_evidence(judge, r["response"], r["knowledge"]) for r in rows]
    print(f"evidence for {len(rows)} responses (semantic on every pair) in {time.perf_counter() - t0:.1f}s")
    scores = [overlap(r["response"], r["knowledge"]) for r in rows]

    folds = grouped_folds(rows)
    pred_rule = [""] * len(rows)
    pred_base = [""] * len(rows)
    lexical_only = [""] * len(rows)
    per_fold = []
    for f, test in enumerate(folds):
        train = [i for g, fold in enumerate(folds) if g != f for i in fold]
        # the semantic grid from the training folds only (no quantile of a held-out row)
        p, k_train = fit(tables, human, train, semantic_grid([tables[i] for i in train]))
        t, _ = fit_threshold(scores, human, train)
        p_lex, _ = fit(tables, human, train, [1.01], [1.01])  # the same rule, no encoder signal
        for i in test:
            pred_rule[i] = predict(tables[i], p)
            pred_base[i] = "attributable" if scores[i] >= t else "not_attributable"
            lexical_only[i] = predict(tables[i], p_lex)
        k_rule = kappa([human[i] for i in test], [pred_rule[i] for i in test])
        k_base = kappa([human[i] for i in test], [pred_base[i] for i in test])
        per_fold.append((k_rule, k_base))
        fitted = {k: float(v) for k, v in p.items()}
        print(f"fold {f + 1}: n={len(test)}  fitted {fitted} (train kappa {k_train:.3f}); "
              f"held-out kappa rule {k_rule:.3f}, baseline {k_base:.3f} (threshold {t:.3f})")
    k_rule = kappa(human, pred_rule)
    k_base = kappa(human, pred_base)
    k_lex = kappa(human, lexical_only)
    models = sorted({r.get("model_name") or "begin" for r in rows})
    by_model = {}
    for m in models:
        ix = [i for i, r in enumerate(rows) if (r.get("model_name") or "begin") == m]
        hm = [human[i] for i in ix]
        by_model[m] = (len(ix), kappa(hm, [pred_rule[i] for i in ix]), kappa(hm, [pred_base[i] for i in ix]))
    agree = sum(a == b for a, b in zip(human, pred_rule)) / len(rows)
    print(f"5-fold CV (grouped by knowledge snippet), pooled held-out kappa: rule {k_rule:.3f} "
          f"(agreement {agree:.3f}); same rule without the semantic signal {k_lex:.3f}; "
          f"naive content-word overlap, one threshold {k_base:.3f}")
    print("pooled held-out kappa by generating model (rule / baseline): " + ", ".join(
        f"{m} {kr:.3f} / {kb:.3f} (n={n})" for m, (n, kr, kb) in by_model.items()))
    print(f"per-fold mean kappa: rule {np.mean([a for a, _ in per_fold]):.3f} "
          f"(sd {np.std([a for a, _ in per_fold]):.3f}), baseline {np.mean([b for _, b in per_fold]):.3f} "
          f"(sd {np.std([b for _, b in per_fold]):.3f})")
    p_all, k_all = fit(tables, human, list(range(len(rows))), semantic_grid(tables))
    p_all = {k: float(v) for k, v in p_all.items()}
    print(f"fitted on all {len(rows)}: {p_all} (in-sample kappa {k_all:.3f}, optimistic)")
    if args.write:
        current = json.loads(PARAMS_FILE.read_text(encoding="utf-8"))
        out = {
            **{k: v for k, v in current.items() if k not in p_all},  # rule, encoder, sentence_window
            **{k: p_all[k] for k in ("support_lexical", "lexical_floor", "support_semantic", "word_counterpart")},
            **structure,
            "fitted_on": "BEGIN WoW dev (begin_wow/begin_dev_wow.tsv, 430 responses), bench/fit_rule_based.py",
            "cv_kappa_5fold_grouped": round(k_rule, 3),
            "cv_kappa_baseline_overlap": round(k_base, 3),
            "cv_kappa_by_model": {m: round(kr, 3) for m, (_, kr, _) in by_model.items()},
            "cv_kappa_baseline_by_model": {m: round(kb, 3) for m, (_, _, kb) in by_model.items()},
        }
        PARAMS_FILE.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {PARAMS_FILE}")
    print(f"{k_rule:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
