"""course_lib.span_corruption: T5's layout rules, a round trip, and a hand-made example."""
import pytest
import torch

from course_lib.span_corruption import random_spans_noise_mask, span_corrupt, span_lengths


def test_paper_example():
    # "Thank you for inviting me to your party last week ." with "for inviting" and "last" dropped
    words = "Thank you for inviting me to your party last week .".split()
    ids = torch.arange(len(words))
    mask = torch.tensor([w in ("for", "inviting", "last") for w in words])
    inputs, targets = span_corrupt(ids, mask, sentinel_ids=[100, 101, 102])
    assert inputs.tolist() == [0, 1, 100, 4, 5, 6, 7, 101, 9, 10]
    assert targets.tolist() == [100, 2, 3, 101, 8, 102]


@pytest.mark.parametrize("length", [10, 57, 128, 512])
def test_counts_and_layout(length):
    g = torch.Generator().manual_seed(length)
    for _ in range(20):
        mask = random_spans_noise_mask(length, 0.15, 3.0, g)
        n_noise = max(round(length * 0.15), 1)
        assert mask.shape == (length,) and mask.dtype == torch.bool
        assert int(mask.sum()) == n_noise
        assert len(span_lengths(mask)) == min(max(round(n_noise / 3.0), 1), n_noise)
        assert not mask[0]                         # kept tokens come first


def test_round_trip():
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        ids = torch.randint(0, 1000, (64,), generator=g)
        mask = random_spans_noise_mask(64, 0.3, 2.0, g)
        sentinels = list(range(2000, 2000 + 40))
        inputs, targets = span_corrupt(ids, mask, sentinels)
        # rebuild the original: replace each sentinel in inputs by what follows it in targets
        pieces, current = {}, None
        for t in targets.tolist():
            if t >= 2000:
                current = t
                pieces[current] = []
            else:
                pieces[current].append(t)
        rebuilt = [x for t in inputs.tolist() for x in (pieces[t] if t >= 2000 else [t])]
        assert rebuilt == ids.tolist()
        n_spans = len(span_lengths(mask))
        assert len(inputs) == 64 - int(mask.sum()) + n_spans
        assert len(targets) == int(mask.sum()) + n_spans + 1


def test_span_lengths():
    assert span_lengths(torch.tensor([0, 1, 1, 0, 1, 0, 1, 1, 1]).bool()).tolist() == [2, 1, 3]
    assert span_lengths(torch.zeros(4, dtype=torch.bool)).tolist() == []


def test_bad_inputs():
    with pytest.raises(ValueError, match="noise_density"):
        random_spans_noise_mask(10, 1.5)
    with pytest.raises(ValueError, match="length"):
        random_spans_noise_mask(1)
    with pytest.raises(ValueError, match="sentinel_ids"):
        span_corrupt(torch.arange(10), torch.tensor([0, 1, 0, 1, 0, 1, 0, 0, 0, 0]).bool(), [100, 101])
    with pytest.raises(ValueError, match="noise_mask"):
        span_corrupt(torch.arange(10), torch.ones(9, dtype=torch.bool), [100])
