"""Argument checks that fail loudly, naming the argument and the expected vs actual shape.

Every public function of the course validates its inputs with these helpers so that a
learner who passes a tensor of the wrong shape gets a sentence, not a broadcasting
accident or a cryptic matmul error three calls deeper.
"""
from __future__ import annotations

import torch


def shape_str(x) -> str:
    return str(tuple(x.shape))


def require_tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return x


def require_rank(name: str, x, rank: int | None = None, min_rank: int | None = None,
                 layout: str = "") -> torch.Tensor:
    """Check x.dim(); `layout` (e.g. "(B, T, d_model)") goes into the message."""
    require_tensor(name, x)
    hint = f" {layout}" if layout else ""
    if rank is not None and x.dim() != rank:
        raise ValueError(f"{name}: expected a {rank}-D tensor{hint}, got shape {shape_str(x)}")
    if min_rank is not None and x.dim() < min_rank:
        raise ValueError(f"{name}: expected at least {min_rank} dimensions{hint}, "
                         f"got shape {shape_str(x)}")
    return x


def require_size(name: str, x, dim: int, expected: int, what: str) -> None:
    """Check one dimension, e.g. the feature size of the last axis."""
    if x.shape[dim] != expected:
        raise ValueError(f"{name}: expected size {expected} at dim {dim} ({what}), "
                         f"got shape {shape_str(x)}")


def require_bool_mask(name: str, mask, target_shape: tuple[int, ...], layout: str) -> torch.Tensor:
    """A boolean mask (True = may attend) that broadcasts to `target_shape`."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise ValueError(f"{name}: expected dtype torch.bool (True = may attend), got {mask.dtype}")
    try:
        torch.broadcast_shapes(mask.shape, target_shape)
        ok = mask.dim() <= len(target_shape)
    except RuntimeError:
        ok = False
    if not ok or torch.broadcast_shapes(mask.shape, target_shape) != torch.Size(target_shape):
        raise ValueError(f"{name}: shape {shape_str(mask)} does not broadcast to "
                         f"{tuple(target_shape)} {layout}")
    return mask


def require_divisible(name: str, value: int, divisor_name: str, divisor: int) -> None:
    if divisor <= 0 or value % divisor != 0:
        raise ValueError(f"{name}={value} must be divisible by {divisor_name}={divisor}")
