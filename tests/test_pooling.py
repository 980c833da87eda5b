"""Pooling (lesson 19) against independent references: loops over the real tokens, and
sentence-transformers' own Pooling module on real MiniLM outputs."""
import warnings

import pytest
import torch

from course_lib.pooling import cls_pooling, max_pooling, mean_pooling, pool


def _batch(seed=0, B=5, T=7, H=6):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(B, T, H, generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = (torch.arange(T)[None] < lengths[:, None]).long()
    return h, mask, lengths


def test_against_loops_over_real_tokens():
    for seed in range(5):
        h, mask, lengths = _batch(seed)
        mean_ref = torch.stack([h[i, :n].mean(0) for i, n in enumerate(lengths.tolist())])
        max_ref = torch.stack([h[i, :n].max(0).values for i, n in enumerate(lengths.tolist())])
        torch.testing.assert_close(mean_pooling(h, mask), mean_ref)
        torch.testing.assert_close(max_pooling(h, mask), max_ref)
        torch.testing.assert_close(cls_pooling(h), h[:, 0])
        torch.testing.assert_close(pool(h, mask.bool(), "mean"), mean_ref)


def test_padding_is_ignored_whatever_it_holds():
    h, mask, _ = _batch(1)
    noisy = h.clone()
    noisy[mask == 0] = 1e4
    torch.testing.assert_close(mean_pooling(noisy, mask), mean_pooling(h, mask))
    torch.testing.assert_close(max_pooling(noisy, mask), max_pooling(h, mask))


def test_non_contiguous_mask_and_all_padding_rows():
    h = torch.randn(3, 4, 2)
    mask = torch.tensor([[1, 0, 1, 0], [0, 0, 0, 0], [1, 1, 1, 1]])
    torch.testing.assert_close(mean_pooling(h, mask)[0], (h[0, 0] + h[0, 2]) / 2)
    assert torch.equal(mean_pooling(h, mask)[1], torch.zeros(2))
    assert torch.equal(max_pooling(h, mask)[1], torch.zeros(2))
    assert torch.isfinite(mean_pooling(h, mask)).all() and torch.isfinite(max_pooling(h, mask)).all()


def test_gradients_flow_only_to_real_tokens():
    h, mask, _ = _batch(2)
    h.requires_grad_(True)
    mean_pooling(h, mask).sum().backward()
    assert torch.all(h.grad[mask == 0] == 0) and torch.all(h.grad[mask == 1] != 0)


@pytest.fixture(scope="module")
def minilm_outputs():
    from transformers import BertModel, BertTokenizerFast

    from course_lib.pretrained import minilm_path

    path = minilm_path()
    tok = BertTokenizerFast.from_pretrained(path)
    model = BertModel.from_pretrained(path).eval()
    texts = ["A cat.", "The gardener watered the roses in the yard this morning.",
             "Every object has an identity, a type and a value."]
    enc = tok(texts, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    return hidden, enc["attention_mask"]


@pytest.mark.parametrize("mode, ours", [("mean", mean_pooling), ("max", max_pooling),
                                        ("cls", lambda h, m: cls_pooling(h))])
def test_against_sentence_transformers_pooling(minilm_outputs, mode, ours):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        Pooling = pytest.importorskip("sentence_transformers.models").Pooling
    hidden, mask = minilm_outputs
    reference = Pooling(hidden.shape[-1], pooling_mode=mode)(
        {"token_embeddings": hidden, "attention_mask": mask})["sentence_embedding"]
    torch.testing.assert_close(ours(hidden, mask), reference, atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("call, name", [
    (lambda: mean_pooling(torch.randn(2, 3, 4), torch.ones(2, 4)), "attention_mask"),
    (lambda: max_pooling(torch.randn(2, 3, 4), torch.ones(2, 3, 1)), "attention_mask"),
    (lambda: mean_pooling(torch.randn(2, 3, 4), torch.full((2, 3), 2)), "attention_mask"),
    (lambda: pool(torch.randn(2, 3, 4), torch.ones(2, 3), "sum"), "mode"),
])
def test_bad_inputs(call, name):
    with pytest.raises(ValueError, match=name):
        call()
