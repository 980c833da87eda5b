"""The offline similarity set of lesson 19 (`course_lib.data.similarity_pairs`; lesson 25 reuses it)
and the rank statistics that score embeddings against it (`course_lib.sentence_similarity`)."""
import collections
import random
import re

import pytest

from course_lib.data.similarity_pairs import (DOC_SYNONYMS, SCENES, doc_sentences, rewrite,
                                              similarity_pairs)


def test_size_labels_and_determinism():
    pairs = similarity_pairs(0)
    assert len(pairs) >= 300
    counts = collections.Counter(label for *_, label in pairs)
    assert counts == {0: 120, 1: 120, 2: 120}
    assert similarity_pairs(0) == pairs
    assert similarity_pairs(1) != pairs
    assert len(similarity_pairs(3, n_per_label=10)) == 30


def test_pairs_are_distinct_strings():
    pairs = similarity_pairs(2)
    assert all(isinstance(a, str) and isinstance(b, str) and a != b for a, b, _ in pairs)
    assert len({(a, b) for a, b, _ in pairs}) == len(pairs)


def _scene_of(sentence):
    """The template scene whose words the sentence uses (None for pydoc text)."""
    low = sentence.lower()
    for scene in SCENES:
        words = [w for group in scene.objects + scene.places for w in group]
        if any(re.search(rf"\b{re.escape(w)}\b", low) for w in words):
            return scene.name
    return None


def _doc_topic(sentence):
    return {s: k for k, ss in doc_sentences().items() for s in ss}.get(sentence)


def test_labels_mean_what_they_say():
    for a, b, label in similarity_pairs(4):
        ta, tb = _doc_topic(a), _doc_topic(b)
        if ta is not None:  # pydoc source
            if label == 2:
                assert _doc_topic(b) is None and len(a.split()) >= len(b.split()) - 10
            elif label == 1:
                assert ta == tb
            else:
                assert tb is not None and ta != tb
        else:  # templates
            sa, sb = _scene_of(a), _scene_of(b)
            assert sa is not None and sb is not None, (a, b)
            assert (sa == sb) == (label > 0), (a, b, label)


def test_half_from_each_source():
    pairs = similarity_pairs(0, n_per_label=40)
    for label in (0, 1, 2):
        from_docs = sum(_doc_topic(a) is not None for a, _, lab in pairs if lab == label)
        assert from_docs == 20


def test_rewrite_changes_words_from_the_table():
    rng = random.Random(0)
    s = "The function returns the value of the first argument."
    out = rewrite(s, rng)
    assert out != s and out.endswith(".")
    changed = [w for w, v in zip(s.split(), out.split()) if w != v]
    assert changed and all(w.lower().strip(".,") in DOC_SYNONYMS for w in changed)


def test_doc_sentences_real_prose():
    docs = doc_sentences()
    total = sum(len(v) for v in docs.values())
    assert total > 250 and len(docs) > 30
    assert all(8 <= len(s.split()) <= 24 for ss in docs.values() for s in ss)


@pytest.mark.parametrize("kwargs, name", [({"seed": 1.5}, "seed"), ({"n_per_label": 1}, "n_per_label"),
                                          ({"n_per_label": "3"}, "n_per_label"),
                                          ({"n_per_label": 10**6}, "n_per_label")])
def test_bad_inputs(kwargs, name):
    with pytest.raises(ValueError, match=name):
        similarity_pairs(**kwargs)


def test_rank_statistics_against_scipy_and_sklearn():
    import numpy as np
    stats = pytest.importorskip("scipy.stats")
    metrics = pytest.importorskip("sklearn.metrics")
    from course_lib.sentence_similarity import roc_auc, spearman

    rng = np.random.default_rng(0)
    for _ in range(5):
        x = np.round(rng.normal(size=50), 1)            # ties on purpose
        y = rng.integers(0, 3, size=50)
        assert abs(spearman(x, y) - stats.spearmanr(x, y).statistic) < 1e-12
        pos = y > 0
        assert abs(roc_auc(x, pos) - metrics.roc_auc_score(pos, x)) < 1e-12
    with pytest.raises(ValueError, match="positive"):
        roc_auc([1.0, 2.0], [True, True])
    with pytest.raises(ValueError, match="x, y"):
        spearman([1.0, 2.0], [1.0])
