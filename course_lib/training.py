"""A small, generic training loop with a quiet progress bar, and accuracy helpers.

Lessons pass a closure that produces a batch for a step and a closure that computes the
loss, so the loop knows nothing about the task:

    history = train(model, lambda step: make_batch(...), lambda m, b: F.cross_entropy(...),
                    steps=300, optimizer=torch.optim.Adam(model.parameters(), 1e-3))
"""
from __future__ import annotations

import math
import os

import pandas as pd
import torch
from tqdm.std import tqdm  # text bars: readable in stored notebooks, no widget dependency

from .device import seed_everything
from .validation import require_positive, require_positive_int


def train(model, batches_fn, loss_fn, steps: int, optimizer, scheduler=None, clip: float | None = None,
          desc: str = "train", log_every: int = 1, seed: int | None = None,
          progress: bool = True) -> pd.DataFrame:
    """Run `steps` optimizer steps; return the history as a DataFrame.

    batches_fn(step) -> batch; loss_fn(model, batch) -> scalar loss tensor.
    clip: max global gradient norm (None = no clipping). The recorded grad_norm is the norm
    *before* clipping, lr the learning rate used for that step. Every `log_every`-th step (and
    the last) is recorded, with columns step, loss, lr, grad_norm. `seed` seeds torch (dropout)
    before the first step. A non-finite loss is recorded, not raised: divergence is data.
    The bar refreshes at most every TQDM_MININTERVAL seconds (default 10) so stored notebook
    outputs stay small.
    """
    require_positive_int("steps", steps)        # 0 would return an empty history
    if clip is not None:
        # clip=0 scales every gradient to zero (nothing learns); a negative clip flips them
        require_positive("clip", clip)
    if seed is not None:
        seed_everything(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    rows = []
    model.train()
    bar = tqdm(range(steps), desc=desc, disable=not progress,
               mininterval=float(os.environ.get("TQDM_MININTERVAL", 10)))
    for step in bar:
        batch = batches_fn(step)
        loss = loss_fn(model, batch)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if clip is None:
            grad_norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
        else:
            grad_norm = torch.nn.utils.clip_grad_norm_(params, clip)   # returns the norm before
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        if step % log_every == 0 or step == steps - 1:
            rows.append({"step": step, "loss": loss.item(), "lr": lr, "grad_norm": grad_norm.item()})
            bar.set_postfix(loss=f"{rows[-1]['loss']:.4f}", refresh=False)
    return pd.DataFrame(rows, columns=["step", "loss", "lr", "grad_norm"])


def token_accuracy(logits_or_ids, targets, ignore_index: int = -100) -> float:
    """Fraction of positions (targets != ignore_index) predicted right; takes logits
    (..., V) (arg-max is taken) or predicted ids shaped like `targets`."""
    pred = _ids(logits_or_ids, targets, ignore_index)
    keep = targets != ignore_index
    if not keep.any():
        return math.nan
    return (pred[keep] == targets[keep]).float().mean().item()


def sequence_accuracy(logits_or_ids, targets, ignore_index: int = -100) -> float:
    """Fraction of rows of `targets` (B, T) whose every non-ignored position is right
    (exact-sequence accuracy, lesson 11's measure)."""
    pred = _ids(logits_or_ids, targets, ignore_index)
    wrong = (pred != targets) & (targets != ignore_index)                 # (B, T)
    return (~wrong.any(dim=-1)).float().mean().item()


def _ids(logits_or_ids, targets, ignore_index):
    """Predicted ids shaped like targets: the arg-max of logits (..., V), or the ids as given."""
    if logits_or_ids.shape == targets.shape:
        if logits_or_ids.is_floating_point():       # compared with ids, every position would be wrong
            raise ValueError(f"logits_or_ids: predicted ids shaped like targets {tuple(targets.shape)} "
                             f"must be integers, got {logits_or_ids.dtype} (logits need a last dimension V)")
        return logits_or_ids
    if logits_or_ids.shape[:-1] != targets.shape:
        raise ValueError(f"logits_or_ids: expected logits {tuple(targets.shape)} + (V,) or ids "
                         f"{tuple(targets.shape)}, got {tuple(logits_or_ids.shape)}")
    return logits_or_ids.argmax(-1)
