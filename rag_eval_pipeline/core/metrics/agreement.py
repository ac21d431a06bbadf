"""Agreement between two raters (a judge and people): confusion matrix, Cohen's kappa, per-class
precision / recall.

Seed ``004_292fd69c3d96947d.txt``: calibrate a judge against human labels and measure the
agreement before trusting its numbers. Cohen's kappa: J. Cohen, "A coefficient of agreement for
nominal scales", Educational and Psychological Measurement 20(1), 1960:
kappa = (p_o - p_e) / (1 - p_e), with p_o the observed agreement and p_e the agreement expected
from the two raters' marginal label frequencies. Pure Python; no scipy / sklearn.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


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
    n = len(a)
    p_o = sum(m[i][i] for i in range(len(m))) / n
    rows = [sum(r) / n for r in m]
    cols = [sum(m[i][j] for i in range(len(m))) / n for j in range(len(m))]
    p_e = sum(r * c for r, c in zip(rows, cols))
    if p_e >= 1.0:
        return None
    return (p_o - p_e) / (1.0 - p_e)


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
