"""Scoring sentence embeddings against labelled pairs: rank statistics, written out (no scipy or
scikit-learn needed) (lesson 19; lesson 25 reuses them).

`spearman(x, y)` is the rank correlation of similarity scores with graded labels (2 paraphrase,
1 related, 0 unrelated); `roc_auc(scores, positive)` the probability that a random positive pair
scores above a random negative one. The labelled pairs themselves are data:
`course_lib.data.similarity_pairs`.
"""
from __future__ import annotations


def _ranks(values) -> "np.ndarray":
    """Average ranks 1..n (ties share the mean of their ranks), as scipy.stats.rankdata."""
    import numpy as np
    import pandas as pd

    return pd.Series(np.asarray(values, dtype=float)).rank(method="average").to_numpy()


def _numbers(name: str, values) -> "np.ndarray":
    """values as a 1-D float array of finite numbers: a 2-D array would be flattened silently
    (pairing the wrong entries) and one NaN turns every rank statistic into NaN."""
    import numpy as np

    if isinstance(values, (str, bytes, dict)):
        raise ValueError(f"{name}: expected a 1-D sequence of numbers, got {type(values).__name__}")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a 1-D sequence of numbers, got {type(values).__name__} "
                         f"{values!r:.40}") from None
    if array.ndim != 1:
        raise ValueError(f"{name}: expected a 1-D sequence of numbers, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name}: expected finite numbers, got {int((~np.isfinite(array)).sum())} "
                         f"NaN or inf")
    return array


def spearman(x, y) -> float:
    """Spearman's rank correlation: Pearson's r of the average ranks of x and y."""
    import numpy as np

    x, y = _numbers("x", x).ravel(), _numbers("y", y).ravel()
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"x, y: expected two sequences of one length >= 2, got {x.size} and {y.size}")
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    if denominator == 0:
        raise ValueError("x, y: a constant sequence has no rank correlation")
    return float((rx * ry).sum() / denominator)


def roc_auc(scores, positive) -> float:
    """Area under the ROC curve = the probability that a random positive scores above a random
    negative (ties count 1/2): the Mann-Whitney U statistic over n_pos * n_neg."""
    import numpy as np

    scores = _numbers("scores", scores).ravel()
    if scores.size == 0:
        raise ValueError("scores: expected at least one positive and one negative score, got none")
    positive = np.asarray(positive)
    if positive.ndim != 1:
        raise ValueError(f"positive: expected a 1-D sequence of flags, got shape {positive.shape}")
    positive = positive.ravel()
    if positive.dtype != bool:
        # a class label 2 cast to bool would count as positive: only 0/1 flags are read as such
        values = set(np.unique(positive).tolist())
        if not values <= {0, 1}:
            raise ValueError(f"positive: expected bool or 0/1 flags, got values {sorted(values)[:6]}")
        positive = positive.astype(bool)
    if scores.shape != positive.shape:
        raise ValueError(f"positive: expected {scores.size} flags like scores, got {positive.size}")
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"positive: expected both classes, got {n_pos} positives, {n_neg} negatives")
    ranks = _ranks(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
