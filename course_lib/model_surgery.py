"""Cheaper models without int8 (lesson 25): low-rank feed-forward matrices and fewer layers,
built from the same trained weights without retraining (lesson 24 trains a shallower student
properly, by distillation). Judged by the measurements of `course_lib.fast_inference`.

    smaller = low_rank_ffn(model, rank=64)          # feed-forward matrices of rank 64
    shallow = first_layers(model, 3)                # the first 3 encoder layers
"""
from __future__ import annotations

import copy

import torch
from torch import nn

from .validation import is_int


class LowRankLinear(nn.Module):
    """x -> x V^T U^T + b: an (out, in) matrix replaced by (out, r) @ (r, in), the best rank-r
    approximation in Frobenius norm (truncated SVD, Eckart-Young)."""

    def __init__(self, linear: nn.Linear, rank: int):
        super().__init__()
        out_features, in_features = linear.weight.shape
        if not is_int(rank) or not 1 <= rank <= min(out_features, in_features):   # 0: the bias alone
            raise ValueError(f"rank: expected 1..{min(out_features, in_features)} for a "
                             f"{out_features}x{in_features} weight, got {rank}")
        U, S, Vh = torch.linalg.svd(linear.weight.detach().to(torch.float32), full_matrices=False)
        root = S[:rank].sqrt()
        self.down = nn.Linear(in_features, rank, bias=False)            # (r, in)
        self.up = nn.Linear(rank, out_features, bias=linear.bias is not None)   # (out, r)
        with torch.no_grad():
            self.down.weight.copy_(root[:, None] * Vh[:rank])
            self.up.weight.copy_(U[:, :rank] * root)
            if linear.bias is not None:
                self.up.bias.copy_(linear.bias)
        self.to(linear.weight.device)

    def forward(self, x):
        return self.up(self.down(x))


def _ffn_linears(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """(parent, attribute) of every feed-forward nn.Linear: the course BertModel's
    `layers.N.linear1/linear2`, or Hugging Face's `encoder.layer.N.intermediate.dense` /
    `encoder.layer.N.output.dense` (not `attention.output.dense`)."""
    found = []
    if hasattr(model, "layers"):
        for layer in model.layers:
            found += [(layer, "linear1"), (layer, "linear2")]
    elif hasattr(model, "encoder") and hasattr(model.encoder, "layer"):
        for layer in model.encoder.layer:
            found += [(layer.intermediate, "dense"), (layer.output, "dense")]
    else:
        raise ValueError(f"model: expected a course BertModel (.layers) or a Hugging Face "
                         f"BertModel (.encoder.layer), got {type(model).__name__}")
    return found


def low_rank_ffn(model: nn.Module, rank: int) -> nn.Module:
    """A copy of `model` with every feed-forward matrix replaced by its best rank-`rank`
    approximation (`LowRankLinear`); attention and embeddings unchanged."""
    model = copy.deepcopy(model)
    for parent, name in _ffn_linears(model):
        setattr(parent, name, LowRankLinear(getattr(parent, name), rank))
    return model


def first_layers(model: nn.Module, num_layers: int) -> nn.Module:
    """A copy of `model` keeping only its first `num_layers` encoder layers (a shallower model
    made without training; lesson 24 trains such a student properly, by distillation)."""
    model = copy.deepcopy(model)
    stack = model.layers if hasattr(model, "layers") else model.encoder.layer
    if not is_int(num_layers) or not 1 <= num_layers <= len(stack):    # -1 would drop the last one
        raise ValueError(f"num_layers: expected 1..{len(stack)}, got {num_layers}")
    del stack[num_layers:]
    if hasattr(model, "config") and hasattr(model.config, "num_hidden_layers"):
        model.config = copy.deepcopy(model.config)
        model.config.num_hidden_layers = num_layers
    return model
