"""Weight tying: one (vocab_size, d_model) matrix as both the input embedding and the output layer
(lesson 12).

`nn.Embedding(V, d).weight` is (V, d): row v is the vector of token v. `nn.Linear(d, V).weight`
is also (V, d), because PyTorch stores a linear layer as (out_features, in_features) and computes
x @ weight.T. So the output layer scores token v by the dot product of the hidden state with
row v, and the very same Parameter can serve both roles - no transpose. Tying makes the two
modules hold one Parameter object: autograd then adds the gradients of both uses into its one
`.grad`, the optimizer keeps one state for it, and `module.parameters()` yields it once.
"""
from __future__ import annotations

from torch import nn

from .validation import shape_str


def tie_weights(embedding: nn.Module, lm_head: nn.Module) -> None:
    """Make `lm_head` use `embedding`'s weight Parameter (the same object, not a copy).

    embedding.weight: (vocab_size, d_model); lm_head.weight must have that shape too, which
    `nn.Linear(d_model, vocab_size)` has. An output bias, if any, stays `lm_head`'s own (BERT's
    MLM head keeps one). The embedding's values win: lm_head's previous weight is dropped.
    """
    if isinstance(lm_head, nn.Embedding):          # the two have the same shape: nothing else tells
        raise ValueError("lm_head: expected the output layer (an nn.Linear), got an nn.Embedding "
                         "- swapped arguments? tie_weights(embedding, lm_head)")
    table, head = embedding.weight, lm_head.weight
    if head.shape != table.shape:
        hint = " - a transposed layer? nn.Linear(d_model, vocab_size) stores (vocab_size, d_model)" \
            if head.shape == table.shape[::-1] else ""
        raise ValueError(f"lm_head.weight: expected shape {shape_str(table)} like embedding.weight "
                         f"(vocab_size, d_model), got {shape_str(head)}{hint}")
    lm_head.weight = table


def count_parameters(module: nn.Module) -> int:
    """Number of trainable numbers, each shared Parameter counted once (what the optimizer sees).

    Summing `module.state_dict()` instead counts a tied matrix once per name.
    """
    return sum(p.numel() for p in module.parameters())


def shared_parameters(module: nn.Module) -> list[list[str]]:
    """Groups of parameter names that refer to one Parameter object, e.g.
    [['embed.weight', 'lm_head.weight']]; [] when nothing is shared."""
    groups: dict[int, list[str]] = {}
    for name, p in module.named_parameters(remove_duplicate=False):
        groups.setdefault(id(p), []).append(name)
    return [names for names in groups.values() if len(names) > 1]
