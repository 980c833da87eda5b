"""A synthetic Markov language: each token has a few allowed successors (lessons 15+).

A first-order Markov chain over `vocab_size` tokens where every token can be followed by
exactly `n_successors` tokens, with random probabilities. A masked token can then be
predicted from its left neighbour (which narrows it to `n_successors` candidates) and its
right neighbour (which must be one of the candidate's successors): a small, exactly known
language in which masked-language-model pretraining learns something in a few seconds.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..validation import is_int, require_int


@dataclass
class MarkovLanguage:
    """transitions: (V, V) row-stochastic matrix, `n_successors` non-zeros per row."""
    transitions: torch.Tensor

    @property
    def vocab_size(self) -> int:
        return self.transitions.shape[0]


def make_markov_language(vocab_size: int, n_successors: int, generator: torch.Generator) -> MarkovLanguage:
    """Draw a random chain: each row picks `n_successors` distinct successors and
    probabilities over them uniformly from the simplex (Dirichlet(1, ..., 1))."""
    if not is_int(n_successors) or not 1 <= n_successors <= vocab_size:
        raise ValueError(f"n_successors: expected 1 <= n_successors <= vocab_size={vocab_size}, got {n_successors!r}")
    successors = torch.rand(vocab_size, vocab_size, generator=generator).argsort(dim=1)[:, :n_successors]
    # Dirichlet(1, ..., 1) = normalised Exp(1) draws, taken from `generator`.
    u = torch.rand(vocab_size, n_successors, generator=generator).clamp_min(1e-12)
    weights = -torch.log(u)
    probs = weights / weights.sum(dim=1, keepdim=True)
    transitions = torch.zeros(vocab_size, vocab_size)
    transitions.scatter_(1, successors, probs)
    return MarkovLanguage(transitions)


def sample_markov(language: MarkovLanguage, n: int, length: int, generator: torch.Generator,
                  offset: int = 0) -> torch.Tensor:
    """(n, length) token ids: first token uniform, then the chain; `offset` is added to every
    id (to leave room for special tokens such as [PAD], [CLS], [SEP], [MASK] below it)."""
    require_int("offset", offset, minimum=0)        # a negative one would give negative ids
    V = language.vocab_size
    ids = torch.empty(n, length, dtype=torch.long)
    ids[:, 0] = torch.randint(0, V, (n,), generator=generator)
    for t in range(1, length):
        ids[:, t] = torch.multinomial(language.transitions[ids[:, t - 1]], 1, generator=generator).squeeze(1)
    return ids + offset
