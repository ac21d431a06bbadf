"""Agreement between two raters (a judge and people, or two people): confusion matrix, Cohen's
kappa, per-class precision / recall, and the agreement between several labellers.

Calibrate a judge against human labels and measure the agreement before trusting its numbers
(Zheng et al., NeurIPS 2023, measure LLM judges' agreement with people). Cohen's kappa: J. Cohen, "A
coefficient of agreement for nominal scales", Educational and Psychological Measurement 20(1), 1960:
kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e the agreement expected
from the two raters' marginal label frequencies. Several labellers: the mean of the pairwise
Cohen's kappas (Light's kappa, R. J. Light 1971). Pure Python (polars only to read the labels of
:func:`inter_labeller_agreement`); no scipy / sklearn.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import polars as pl


def _check(a: Sequence[Hashable], b: Sequence[Hashable]) -> None:
    if len(a) != len(b):
        raise ValueError(f"the two label sequences differ in length: {len(a)} != {len(b)}")
    if len(a) == 0:
        raise ValueError("the label sequences are empty")


def confusion_matrix(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> tuple[list[Hashable], list[list[int]]]:
    """Counts of label pairs: ``matrix[i][j]`` = items with ``a == labels[i]`` and ``b == labels[j]``.

    Inputs: two equal-length, non-empty label sequences (rater a = rows, e.g. the human reference;
    rater b = columns, e.g. the judge); ``labels`` fixes the order (default: sorted union of the
    labels seen, by ``str``). Output: ``(labels, matrix)``, a square list of lists of ints summing
    to ``len(a)``. Raises ValueError for different lengths, empty input, or a label not in
    ``labels``.
    """
    _check(a, b)
    labs = list(labels) if labels is not None else sorted(set(a) | set(b), key=str)
    index = {lab: i for i, lab in enumerate(labs)}
    if len(index) != len(labs):
        raise ValueError(f"labels contain duplicates: {labs}")
    m = [[0] * len(labs) for _ in labs]
    for x, y in zip(a, b):
        if x not in index or y not in index:
            raise ValueError(f"label pair ({x!r}, {y!r}) not in labels {labs}")
        m[index[x]][index[y]] += 1
    return labs, m


def cohen_kappa(
    a: Sequence[Hashable], b: Sequence[Hashable], labels: Sequence[Hashable] | None = None
) -> float | None:
    """Cohen's kappa (1960) between two raters over the same items.

    Inputs: as :func:`confusion_matrix`. Output: kappa in [-1, 1]; None when undefined
    (p_e == 1: both raters gave one and the same label to every item). 1 = perfect agreement,
    0 = agreement expected by chance. Raises ValueError as :func:`confusion_matrix`.
    """
    _, m = confusion_matrix(a, b, labels)
    _, p_o, p_e = _agreement_terms(m)
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


def _agreement_terms(matrix: Sequence[Sequence[int]]) -> tuple[int, float, float]:
    """(n, p_o, p_e) of a square confusion matrix with n > 0: the observed agreement and the agreement
    expected from the two raters' marginals (Cohen 1960)."""
    n = sum(sum(row) for row in matrix)
    k = len(matrix)
    p_o = sum(matrix[i][i] for i in range(k)) / n
    rows = [sum(r) / n for r in matrix]
    cols = [sum(matrix[i][j] for i in range(k)) / n for j in range(k)]
    return n, p_o, sum(r * c for r, c in zip(rows, cols))


def per_class_precision_recall(
    reference: Sequence[Hashable], predicted: Sequence[Hashable],
    labels: Sequence[Hashable] | None = None,
) -> dict[Hashable, dict[str, float | int | None]]:
    """Precision, recall and support per label, with ``reference`` as the truth.

    Output: ``{label: {"precision": p, "recall": r, "support": n_reference, "predicted":
    n_predicted}}``; precision is None when the label was never predicted, recall None when it
    never occurs in ``reference``. Raises ValueError as :func:`confusion_matrix`.
    """
    labs, m = confusion_matrix(reference, predicted, labels)
    out: dict[Hashable, dict[str, float | int | None]] = {}
    for i, lab in enumerate(labs):
        tp = m[i][i]
        support = sum(m[i])
        n_pred = sum(m[r][i] for r in range(len(labs)))
        out[lab] = {
            "precision": tp / n_pred if n_pred else None,
            "recall": tp / support if support else None,
            "support": support,
            "predicted": n_pred,
        }
    return out


def accuracy(reference: Sequence[Hashable], predicted: Sequence[Hashable]) -> float:
    """Share of items on which the two sequences agree, in [0, 1]. Raises ValueError as
    :func:`confusion_matrix` for different lengths or empty input."""
    _check(reference, predicted)
    return sum(x == y for x, y in zip(reference, predicted)) / len(reference)


def kappa_or_reason(a: list[str], b: list[str], labels: list[str], who_a: str, who_b: str
                     ) -> tuple[float | None, str | None]:
    """Cohen's kappa between label lists ``a`` and ``b`` (equal length, non-empty), or None with the
    reason when it measures nothing: one side gives every item the same label, so kappa is undefined
    or identically 0 whatever the other's quality. ``who_a`` / ``who_b`` name the raters in the
    reason ("people" / "the judge" get their own wording). Output: ``(kappa in [-1, 1] or None,
    reason or None)``. Raises ValueError as :func:`confusion_matrix`. Source: J. Cohen (1960)."""
    if len(set(a)) == 1 and who_a == "people":
        return None, (f"people gave every item the label {a[0]!r}: kappa undefined (no variation to agree on); "
                      "label a sample with both outcomes")
    if len(set(a)) == 1:
        return None, f"{who_a} gave every item the label {a[0]!r}: kappa undefined (a constant rater)"
    if len(set(b)) == 1 and who_b == "the judge":
        return None, (f"the judge gave every item the label {b[0]!r}: kappa undefined (a constant rater has kappa 0 "
                      "whatever its quality)")
    if len(set(b)) == 1:
        return None, f"{who_b} gave every item the label {b[0]!r}: kappa undefined (a constant rater)"
    kappa = cohen_kappa(a, b, labels)
    if kappa is None:  # pragma: no cover - p_e == 1 needs both sides constant, handled above
        return None, "kappa undefined (chance agreement is 1)"
    return kappa, None



def inter_labeller_agreement(human_mapped: pl.DataFrame, item: Sequence[str], labels: Sequence[str]
                             ) -> dict[str, Any]:
    """Agreement between people on the items two or more of them labelled.

    Input: one calibrated ``label`` per (item, ``annotator``) (columns ``item`` + annotator +
    label), the label set. Output: {"labellers": sorted names, "human_kappa": Cohen's kappa for two
    people, Light's kappa (the mean of the pairwise Cohen's kappas, R. J. Light 1971) for more, or
    None, "human_kappa_reason": why None, "human_kappa_n": items labelled by at least two people,
    "human_pairs": [{a, b, n, kappa, agreement, reason}] per pair with common items}. A pair's
    kappa is None (with the reason) when one person gave every common item the same label.
    Source: J. Cohen (1960); R. J. Light, Psychological Bulletin 76(5), 1971. Never raises.
    """
    item = list(item)
    names = sorted(set(human_mapped["annotator"].to_list())) if human_mapped.height else []
    out: dict[str, Any] = {"labellers": names, "human_kappa": None, "human_kappa_n": 0, "human_pairs": []}
    if len(names) < 2:
        out["human_kappa_reason"] = ("one labeller only: agreement between people needs two people labelling the "
                                     "same items" if names else "no hand labels")
        return out
    by_person = {a: {tuple(r[:-1]): r[-1] for r in human_mapped.filter(pl.col("annotator") == a)
                     .select(*item, "label").rows()} for a in names}
    counts: dict[tuple, int] = {}
    for d in by_person.values():
        for k in d:
            counts[k] = counts.get(k, 0) + 1
    out["human_kappa_n"] = sum(1 for c in counts.values() if c >= 2)
    kappas = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            common = sorted(set(by_person[a]) & set(by_person[b]))
            if not common:
                continue
            la, lb = [by_person[a][k] for k in common], [by_person[b][k] for k in common]
            kappa, reason = kappa_or_reason(la, lb, list(labels), repr(a), repr(b))
            agree = sum(x == y for x, y in zip(la, lb)) / len(common)
            out["human_pairs"].append({"a": a, "b": b, "n": len(common), "kappa": kappa, "agreement": agree,
                                       "reason": reason})
            if kappa is not None:
                kappas.append(kappa)
    if not out["human_pairs"]:
        out["human_kappa_reason"] = "no item is labelled by two people"
    elif not kappas:
        out["human_kappa_reason"] = "; ".join(f"{p['a']} vs {p['b']}: {p['reason']}" for p in out["human_pairs"])
    else:
        out["human_kappa"] = sum(kappas) / len(kappas)
        out["human_kappa_reason"] = None
    return out



#: The two-sided 95% normal quantile, Φ⁻¹(0.975) (scipy.stats.norm.ppf(0.975)).
Z_95 = 1.959963984540054


def kappa_interval(matrix: Sequence[Sequence[int]], z: float = Z_95) -> tuple[float | None, float | None]:
    """Approximate 95% confidence interval of Cohen's kappa from a confusion matrix.

    Input: a square matrix of non-negative counts (rows = rater a, columns = rater b), ``z`` the normal
    quantile (default 1.96 for 95%). Output: ``(low, high)`` clipped to [-1, 1]; ``(None, None)`` when
    the matrix is empty (n = 0) or kappa is undefined (p_e = 1). Method: kappa ± z·σ with Cohen's large-
    sample standard error σ = sqrt(p_o (1 - p_o) / (n (1 - p_e)²)) (J. Cohen, "A coefficient of
    agreement for nominal scales", Educational and Psychological Measurement 20(1), 1960, eq. 9). It is
    an approximation for large n; with few labels the interval is wide, which is the point of showing it.
    Raises nothing.
    """
    if sum(sum(row) for row in matrix) <= 0:
        return None, None
    n, p_o, p_e = _agreement_terms(matrix)
    if p_e >= 1.0:
        return None, None
    kappa = (p_o - p_e) / (1.0 - p_e)
    half = z * (p_o * (1.0 - p_o) / (n * (1.0 - p_e) ** 2)) ** 0.5
    return max(-1.0, kappa - half), min(1.0, kappa + half)
