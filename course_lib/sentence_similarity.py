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

    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or not np.isfinite(array).all():
        raise ValueError(f"{name}: expected a 1-D sequence of finite numbers, got shape {array.shape}: {array!r:.60}")
    return array


def spearman(x, y) -> float:
    """Spearman's rank correlation: Pearson's r of the average ranks of x and y."""
    import numpy as np

    x, y = _numbers("x", x), _numbers("y", y)
    rx, ry = _ranks(x), _ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    if denominator == 0:            # (one value, or a constant sequence; unequal lengths fail above)
        raise ValueError(f"x, y: expected two non-constant sequences of one length >= 2, got {x.size} and {y.size} values")
    return float((rx * ry).sum() / denominator)


def roc_auc(scores, positive) -> float:
    """Area under the ROC curve = the probability that a random positive scores above a random
    negative (ties count 1/2): the Mann-Whitney U statistic over n_pos * n_neg."""
    import numpy as np

    scores, flags = _numbers("scores", scores), np.asarray(positive)
    positive = flags.astype(bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    # a class label 2 cast to bool would count as positive; one class leaves nothing to compare
    if not set(np.unique(flags).tolist()) <= {0, 1} or n_pos == 0 or n_neg == 0:
        raise ValueError(f"positive: expected bool or 0/1 flags of both classes, got values "
                         f"{np.unique(flags)[:6].tolist()} ({n_pos} positives, {n_neg} negatives)")
    ranks = _ranks(scores)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
