"""Graded checks for lesson 19: masked mean pooling (padding excluded, all-padding rows -> 0)."""
import warnings
from functools import lru_cache

import torch

from course_lib.pooling import mean_pooling
from ..grading import CheckFailed, exercise, expect_close, expect_tensor

TEXTS = ("A cat.", "The gardener watered the roses in the yard this morning.",
         "Every object has an identity, a type and a value.", "Hi!",
         "In the kitchen, the onions were chopped by the chef.",
         "The yield statement can be used to omit the parentheses that would otherwise be required.")


def _diagnose(case, got, hidden, mask, expected):
    """Name the usual mistakes before the generic comparison."""
    got = expect_tensor(case, got, "mean_pooling")
    if tuple(got.shape) != tuple(expected.shape):
        return  # expect_close reports the shape
    got = got.detach().to(expected.dtype)
    plain = hidden.mean(dim=1)
    if torch.allclose(got, plain, atol=1e-5) and not torch.allclose(plain, expected, atol=1e-5):
        raise CheckFailed(f"[{case}] you averaged every position, padding included; multiply by "
                          f"attention_mask and divide by the number of real tokens per row")
    empty = mask.sum(dim=1) == 0
    if empty.any() and not torch.isfinite(got[empty]).all():
        raise CheckFailed(f"[{case}] a row with no real token (attention_mask all 0) gave NaN or "
                          f"inf; define it as zeros (divide by max(count, 1))")
    if empty.any() and not torch.allclose(got[empty], torch.zeros_like(got[empty])):
        raise CheckFailed(f"[{case}] a row with no real token should pool to zeros, got values "
                          f"up to {got[empty].abs().max().item():.3g}")


@exercise("19.mean-pooling", points=3, uses="mean_pooling")
def check_mean_pooling(fn, rng):
    """Random batches: padding (of any value) excluded, non-contiguous masks, int/float masks,
    an all-padding row pooled to zeros, gradients only to real tokens."""
    for case in range(6):
        B = int(torch.randint(2, 7, (1,), generator=rng))
        T = int(torch.randint(3, 12, (1,), generator=rng))
        H = int(torch.randint(2, 40, (1,), generator=rng))
        hidden = torch.randn(B, T, H, generator=rng)
        lengths = torch.randint(1, T + 1, (B,), generator=rng)
        mask = (torch.arange(T)[None] < lengths[:, None]).long()
        if case >= 2:
            mask[0, T - 1] = 1          # a longest row
            mask[-1] = 0                # a row of padding only
        if case >= 4:
            mask[1] = (torch.rand(T, generator=rng) < 0.5).long()   # gaps inside the row
            mask[1, 0] = 1
        hidden[mask == 0] = 50 * torch.randn(int((mask == 0).sum()), H, generator=rng)
        if case % 2:
            mask = mask.float()
        name = f"case {case}: hidden_states {(B, T, H)}, tokens per row {mask.sum(1).long().tolist()}"
        expected = mean_pooling(hidden, mask)
        leaf = hidden.clone().requires_grad_(True)
        got = fn(leaf, mask.clone())
        _diagnose(name, got, hidden, mask, expected)
        expect_close(name, got, expected, atol=1e-5, name="mean_pooling")
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the result is not connected to hidden_states by autograd; "
                              f"use torch operations")
        got.sum().backward()
        if leaf.grad is None or (leaf.grad[mask == 0] != 0).any():
            raise CheckFailed(f"[{name}] padded positions received a gradient; they must not count")


@lru_cache(maxsize=1)
def _minilm_batch():
    """Real MiniLM token vectors of TEXTS (Hugging Face's model and tokenizer), padded, and
    sentence-transformers' mean pooling of them: the model's own sentence embeddings."""
    from transformers import BertModel, BertTokenizerFast
    from transformers.utils import logging as hf_logging

    from course_lib.pretrained import minilm_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()   # no "Loading weights" bar in the feedback
        tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
        model = BertModel.from_pretrained(str(minilm_path())).eval()
    enc = tokenizer(list(TEXTS), padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state                       # (B, T, 384)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sentence_transformers.models import Pooling
        reference = Pooling(hidden.shape[-1], pooling_mode="mean")(
            {"token_embeddings": hidden, "attention_mask": enc["attention_mask"]})["sentence_embedding"]
    except ImportError:  # sentence-transformers' formula, written out: sum / max(count, 1e-9)
        m = enc["attention_mask"].unsqueeze(-1).float()
        reference = (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    return hidden, enc["attention_mask"], reference


@exercise("19.mean-pooling-minilm", points=2, uses="mean_pooling")
def check_mean_pooling_minilm(fn, rng):
    """Real MiniLM outputs of six sentences of different lengths: your pooling must equal
    sentence-transformers' Pooling(mode='mean'), i.e. all-MiniLM-L6-v2's sentence embeddings."""
    hidden, mask, reference = _minilm_batch()
    order = torch.randperm(len(TEXTS), generator=rng)
    hidden, mask, reference = hidden[order], mask[order], reference[order]
    name = f"MiniLM: {len(TEXTS)} sentences padded to {hidden.shape[1]} tokens"
    got = fn(hidden.clone(), mask.clone())
    _diagnose(name, got, hidden, mask, reference)
    expect_close(name, got, reference, atol=1e-5, name="mean_pooling")
