"""Graded checks for lesson 19: attention pooling with a learned query, padding excluded.

The lesson compares [CLS], masked mean and masked max pooling; the exercise builds the pooling it
does not show: a softmax over each row's real tokens of the scores `hidden_states @ query`, stable for
large scores, all-padding rows pooled to zeros, padding getting neither weight nor gradient. With a
zero query it is mean pooling, so the second item compares with MiniLM's own sentence embeddings."""
import warnings
from functools import lru_cache

import torch

from course_lib.pooling import mean_pooling

from ..grading import CheckFailed, exercise, expect_close, expect_tensor, randint


def reference(hidden, mask, query):
    """float64 masked softmax pooling; rows without a real token -> 0."""
    h = hidden.double()
    real = mask.bool()
    scores = (h @ query.double()).masked_fill(~real, float("-inf"))          # (B, T)
    top = scores.amax(dim=1, keepdim=True).clamp(min=-1e300)                  # finite for empty rows
    w = (scores - top).exp() * real
    w = w / w.sum(dim=1, keepdim=True).clamp(min=1e-300)
    return (w.unsqueeze(-1) * h).sum(dim=1)                                  # (B, H)


def _diagnose(case, got, hidden, mask, query, expected):
    """Name the usual mistakes before the generic comparison."""
    got = expect_tensor(case, got, "attention_pooling")
    if tuple(got.shape) != tuple(expected.shape):
        return
    got = got.detach().double()
    real = mask.bool()
    empty = ~real.any(dim=1)
    full = torch.ones_like(mask)
    if not torch.isfinite(got[~empty]).all():
        row = int(torch.nonzero(~torch.isfinite(got).all(-1) & ~empty)[0])
        raise CheckFailed(f"[{case}] row {row} is NaN or inf although it has real tokens (scores up to "
                          f"{(hidden[row].double() @ query.double()).abs().max().item():.3g}): exp() of large "
                          f"scores overflows or all real weights underflow - subtract the max over the "
                          f"row's real tokens before exp()")
    if empty.any() and not torch.isfinite(got[empty]).all():
        raise CheckFailed(f"[{case}] a row with no real token (attention_mask all 0) gave NaN or inf; "
                          f"a softmax over only -inf is NaN: pool such a row to zeros")
    if empty.any() and not torch.allclose(got[empty], torch.zeros_like(got[empty])):
        raise CheckFailed(f"[{case}] a row with no real token should pool to zeros, got values up to "
                          f"{got[empty].abs().max().item():.3g}")
    unmasked = reference(hidden, full, query)
    if not torch.allclose(unmasked, expected, atol=1e-4) and torch.allclose(got, unmasked, atol=1e-4):
        raise CheckFailed(f"[{case}] padded positions took part in the softmax; give them weight 0 "
                          f"(attention_mask == 0 -> score -inf)")
    h = hidden.double()
    wrong_axis = (torch.softmax((h @ query.double()).masked_fill(~real, -1e9), dim=0).unsqueeze(-1) * h).sum(1)
    if torch.allclose(got, wrong_axis, atol=1e-4) and not torch.allclose(wrong_axis, expected, atol=1e-4):
        raise CheckFailed(f"[{case}] your weights are normalised over the batch (dim 0); normalise over "
                          f"the tokens of each row")
    mean = mean_pooling(h, real)
    if torch.allclose(got, mean, atol=1e-4) and not torch.allclose(mean, expected, atol=1e-4):
        raise CheckFailed(f"[{case}] you returned the masked mean: the weights must come from the "
                          f"softmax of hidden_states @ query")


def _case(rng, case):
    B = randint(rng, 2, 7)
    T = randint(rng, 1 if case == 5 else 3, 12)
    H = randint(rng, 2, 40)
    hidden = torch.randn(B, T, H, generator=rng)
    query = torch.randn(H, generator=rng) / H ** 0.5
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    mask = (torch.arange(T)[None] < lengths[:, None]).long()
    if case in (1, 4):
        mask = mask.flip(1)                              # left padding
    if case >= 2:
        mask[-1] = 0                                     # a row of padding only
    if case >= 3 and T > 1:
        mask[0] = (torch.rand(T, generator=rng) < 0.5).long()   # gaps inside the row
        mask[0, 0] = 1
    if case == 4:
        hidden = hidden * 300                            # scores of several thousand
    # padding holds large vectors, aligned with the query so that they would dominate the softmax
    n_pad = int((mask == 0).sum())
    hidden[mask == 0] = 40 * torch.randn(n_pad, H, generator=rng) + 40 * query / query.norm()
    if case % 2:
        mask = mask.float()
    if case == 3:
        hidden, query = hidden.double(), query.double()
    return hidden, mask, query


@exercise("19.attention-pooling", points=3, uses="attention_pooling",
          forbids=("course_lib.pooling:mean_pooling", "course_lib.pooling:max_pooling", "course_lib.pooling:pool"))
def check_attention_pooling(fn, rng):
    """Random batches: right and left padding, gaps, int/float masks, an all-padding row, large
    scores, float64, one-token rows; padding gets no weight and no gradient."""
    labels = ("right padding", "left padding, float mask", "an all-padding row", "gaps, float64",
              "left padding, scores of several thousand", "T may be 1, float mask", "random", "random")
    for case in (0, 1, 4, 2, 3, 5, 6, 7):      # large scores before the all-padding row
        label = labels[case]
        hidden, mask, query = _case(rng, case)
        B, T, H = hidden.shape
        name = (f"case {case} ({label}): hidden_states {(B, T, H)} {str(hidden.dtype)[6:]}, "
                f"attention_mask {mask.long().tolist()}")
        if len(name) > 160:
            name = name[:157] + "..."
        expected = reference(hidden, mask, query)
        leaf = hidden.clone().requires_grad_(True)
        got = fn(leaf, mask.clone(), query.clone())
        _diagnose(name, got, hidden, mask, query, expected)
        expect_close(name, got.detach().double(), expected, atol=1e-4, rtol=1e-4, name="attention_pooling")
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the result is not connected to hidden_states by autograd; "
                              f"use torch operations")
        got.sum().backward()
        if leaf.grad is None or (leaf.grad[mask == 0] != 0).any():
            raise CheckFailed(f"[{name}] padded positions received a gradient; they must not count")


TEXTS = ("A cat.", "The gardener watered the roses in the yard this morning.",
         "Every object has an identity, a type and a value.", "Hi!",
         "In the kitchen, the onions were chopped by the chef.",
         "The yield statement can be used to omit the parentheses that would otherwise be required.")


@lru_cache(maxsize=1)
def _minilm_batch():
    """Real MiniLM token vectors of TEXTS, padded, and sentence-transformers' mean pooling of them."""
    from transformers import BertModel, BertTokenizerFast
    from transformers.utils import logging as hf_logging

    from course_lib.pretrained import minilm_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()
        tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
        model = BertModel.from_pretrained(str(minilm_path())).eval()
    enc = tokenizer(list(TEXTS), padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state                       # (B, T, 384)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sentence_transformers.models import Pooling
        mean = Pooling(hidden.shape[-1], pooling_mode="mean")(
            {"token_embeddings": hidden, "attention_mask": enc["attention_mask"]})["sentence_embedding"]
    except ImportError:  # the course's masked mean: sentence-transformers' formula on rows with a token
        mean = mean_pooling(hidden, enc["attention_mask"])
    return hidden, enc["attention_mask"], mean


@exercise("19.attention-pooling-minilm", points=2, uses="attention_pooling",
          forbids=("course_lib.pooling:mean_pooling", "course_lib.pooling:max_pooling", "course_lib.pooling:pool"))
def check_attention_pooling_minilm(fn, rng):
    """Real MiniLM outputs: with a zero query your pooling must equal sentence-transformers'
    mean pooling (all-MiniLM-L6-v2's sentence embeddings); with a random query, the reference."""
    hidden, mask, mean = _minilm_batch()
    order = torch.randperm(len(TEXTS), generator=rng)
    hidden, mask, mean = hidden[order], mask[order], mean[order]
    H = hidden.shape[-1]
    zero = torch.zeros(H)
    name = f"MiniLM, zero query: {len(TEXTS)} sentences padded to {hidden.shape[1]} tokens"
    got = fn(hidden.clone(), mask.clone(), zero)
    _diagnose(name, got, hidden, mask, zero, mean.double())
    expect_close(name, got.detach().float(), mean, atol=1e-5, name="attention_pooling (zero query = mean)")
    query = torch.randn(H, generator=rng)
    name = f"MiniLM, a random query of norm {query.norm().item():.1f}: {len(TEXTS)} sentences"
    expected = reference(hidden, mask, query)
    got = fn(hidden.clone(), mask.clone(), query)
    _diagnose(name, got, hidden, mask, query, expected)
    expect_close(name, got.detach().double(), expected, atol=1e-4, rtol=1e-4, name="attention_pooling")
