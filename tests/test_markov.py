"""course_lib.data.markov: the synthetic Markov language, against counted transitions."""
import pytest
import torch

from course_lib.data.markov import make_markov_language, sample_markov


def test_rows_are_distributions_with_k_successors():
    lang = make_markov_language(64, 3, torch.Generator().manual_seed(0))
    P = lang.transitions
    assert P.shape == (64, 64)
    torch.testing.assert_close(P.sum(1), torch.ones(64))
    assert ((P > 0).sum(1) == 3).all()


def test_samples_follow_the_chain():
    lang = make_markov_language(16, 3, torch.Generator().manual_seed(1))
    ids = sample_markov(lang, 4000, 20, torch.Generator().manual_seed(2), offset=4)
    assert ids.shape == (4000, 20) and ids.min() >= 4 and ids.max() < 20
    prev, nxt = (ids[:, :-1] - 4).reshape(-1), (ids[:, 1:] - 4).reshape(-1)
    assert (lang.transitions[prev, nxt] > 0).all()        # only allowed successors appear
    counts = torch.zeros(16, 16).index_put_((prev, nxt), torch.ones(len(prev)), accumulate=True)
    empirical = counts / counts.sum(1, keepdim=True)
    torch.testing.assert_close(empirical, lang.transitions, atol=0.03, rtol=0)


def test_same_generator_same_language():
    a = make_markov_language(8, 2, torch.Generator().manual_seed(5)).transitions
    b = make_markov_language(8, 2, torch.Generator().manual_seed(5)).transitions
    assert torch.equal(a, b)


def test_bad_arguments():
    with pytest.raises(ValueError, match="n_successors"):
        make_markov_language(4, 5, torch.Generator())
