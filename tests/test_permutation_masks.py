"""course_lib.permutation_masks against a loop over the definition and a dependency test."""
import pytest
import torch

from course_lib.permutation_masks import ranks, two_stream_masks


def reference(order):
    T = len(order)
    step = {pos: t for t, pos in enumerate(order.tolist())}
    content = torch.tensor([[step[j] <= step[i] for j in range(T)] for i in range(T)])
    query = torch.tensor([[step[j] < step[i] for j in range(T)] for i in range(T)])
    return content, query


@pytest.mark.parametrize("seed", range(5))
def test_masks_match_definition(seed):
    order = torch.randperm(3 + seed * 3, generator=torch.Generator().manual_seed(seed))
    content, query = two_stream_masks(order)
    ref_content, ref_query = reference(order)
    assert torch.equal(content, ref_content) and torch.equal(query, ref_query)
    assert not query.diagonal().any() and content.diagonal().all()
    assert torch.equal(ranks(order)[order], torch.arange(len(order)))


def test_identity_order_is_causal():
    content, query = two_stream_masks(torch.arange(6))
    causal = torch.ones(6, 6, dtype=torch.bool).tril()
    assert torch.equal(content, causal) and torch.equal(query, causal.tril(-1))


def test_query_row_counts():
    # the position predicted at step t sees exactly t others in the query stream
    order = torch.randperm(10, generator=torch.Generator().manual_seed(3))
    _, query = two_stream_masks(order)
    assert query[order].sum(1).tolist() == list(range(10))


def test_not_a_permutation():
    with pytest.raises(ValueError, match="order"):
        two_stream_masks(torch.tensor([0, 2, 2]))
    with pytest.raises(ValueError, match="order"):
        two_stream_masks(torch.zeros(2, 2, dtype=torch.long))
