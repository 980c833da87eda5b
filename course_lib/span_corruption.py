"""T5's span corruption (Raffel et al. 2020, section 3.3.4) (lesson 23).

BERT corrupts tokens one by one; T5 corrupts *spans*. Per sequence of n tokens:

1. the number of noise tokens is round(n * noise_density) (15%), the number of spans is
   round(noise tokens / mean_noise_span_length) (mean length 3);
2. the noise tokens are cut into that many non-empty spans at random, and so are the kept
   tokens; the two kinds alternate, starting with kept tokens (T5's `random_spans_noise_mask`);
3. the encoder input keeps the kept tokens and replaces each noise span by one sentinel
   (<extra_id_0>, <extra_id_1>, ...); the decoder target lists each sentinel followed by the
   span it replaced, and ends with one more sentinel (T5 then appends </s>).

    original: Thank you for inviting me to your party last week .
    input:    Thank you <X> me to your party <Y> week .
    target:   <X> for inviting <Y> last <Z>

So the input is shorter than the original and the target is short: about 15% + one sentinel
per span, not a prediction at every position.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .validation import require_int


def _random_segmentation(num_items: int, num_segments: int, generator) -> torch.Tensor:
    """Lengths of `num_segments` non-empty segments that partition `num_items` items, uniformly
    over all such partitions: choose num_segments - 1 of the num_items - 1 gaps as cut points."""
    if num_segments == 1:
        return torch.tensor([num_items])
    gaps = torch.randperm(num_items - 1, generator=generator)[: num_segments - 1] + 1
    cuts = torch.cat([torch.tensor([0]), gaps.sort().values, torch.tensor([num_items])])
    return cuts.diff()


def random_spans_noise_mask(length: int, noise_density: float = 0.15,
                            mean_noise_span_length: float = 3.0,
                            generator: torch.Generator | None = None) -> torch.Tensor:
    """A boolean mask (length,), True = noise, laid out as T5's `random_spans_noise_mask`.

    Exactly round(length * noise_density) noise tokens (at least 1, at most length - 1) in
    round(noise / mean_noise_span_length) spans (at least 1); kept and noise spans alternate,
    starting with a kept span, so two noise spans never touch.
    """
    length = require_int("length", length, minimum=2)
    if not 0.0 < noise_density < 1.0:      # (it would be clamped silently)
        raise ValueError(f"noise_density: expected a fraction in (0, 1), got {noise_density}")
    num_noise = min(max(round(length * noise_density), 1), length - 1)
    num_spans = max(round(num_noise / mean_noise_span_length), 1)
    num_spans = min(num_spans, num_noise, length - num_noise)       # each span needs >= 1 token
    noise_lengths = _random_segmentation(num_noise, num_spans, generator)
    kept_lengths = _random_segmentation(length - num_noise, num_spans, generator)
    # kept, noise, kept, noise, ...: span starts at the cumulative sums
    interleaved = torch.stack([kept_lengths, noise_lengths], dim=1).reshape(-1)   # (2 * spans,)
    is_noise = torch.tensor([False, True]).repeat(num_spans)
    return torch.repeat_interleave(is_noise, interleaved)


def span_lengths(noise_mask: torch.Tensor) -> torch.Tensor:
    """Lengths of the runs of True in a 1-D boolean mask, in order."""
    # a float 0.5 would be cast to int8 0 (no span); 0/1 integers read as False/True
    if noise_mask.dtype != torch.bool and (noise_mask.is_floating_point()
                                           or bool(((noise_mask != 0) & (noise_mask != 1)).any())):
        raise ValueError(f"noise_mask: expected a bool tensor (or 0/1 integers), got {noise_mask.dtype}")
    m = noise_mask.to(torch.int8)
    edges = torch.diff(torch.cat([torch.zeros(1, dtype=torch.int8), m, torch.zeros(1, dtype=torch.int8)]))
    starts, ends = (edges == 1).nonzero().squeeze(1), (edges == -1).nonzero().squeeze(1)
    return ends - starts


def span_corrupt(input_ids: torch.Tensor, noise_mask: torch.Tensor,
                 sentinel_ids: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """(encoder input, decoder target) for one sequence (T,) and its noise mask (T,).

    Span k is replaced in the input by sentinel_ids[k]; the target is sentinel_ids[0], span 0,
    sentinel_ids[1], span 1, ..., then sentinel_ids[n_spans] as the end marker. T5's sentinels
    count down from the top of the vocabulary (<extra_id_0> = 32099); pass them in that order.
    """
    if noise_mask.shape != input_ids.shape or noise_mask.dtype != torch.bool:
        raise ValueError(f"noise_mask: expected a bool tensor of shape {tuple(input_ids.shape)}, "
                         f"got {noise_mask.dtype} {tuple(noise_mask.shape)}")
    mask = noise_mask.to(input_ids.device)
    starts = mask & ~torch.cat([mask.new_zeros(1), mask[:-1]])           # first token of a span
    n_spans = int(starts.sum())
    if len(sentinel_ids) < n_spans + 1:
        raise ValueError(f"sentinel_ids: {n_spans} spans need {n_spans + 1} sentinels "
                         f"(one per span and one to end the target), got {len(sentinel_ids)}")
    sentinels = torch.as_tensor(list(sentinel_ids), dtype=input_ids.dtype, device=input_ids.device)
    used = sentinels[:n_spans + 1]
    clash = used[torch.isin(used, input_ids)]
    if clash.numel():
        # a sentinel equal to a real token id makes the input and the target ambiguous
        raise ValueError(f"sentinel_ids: expected ids that do not occur in input_ids, got "
                         f"{clash.tolist()[:8]}, which do")
    span_index = torch.cumsum(starts.long(), 0) - 1                     # which span a token is in

    def collapse(ids, replaced):
        """Tokens where `replaced` is False; each run of True becomes its sentinel."""
        run_start = replaced & ~torch.cat([replaced.new_zeros(1), replaced[:-1]])
        out = torch.where(run_start, sentinels[span_index.clamp_min(0)], ids)
        return out[~replaced | run_start]

    inputs = collapse(input_ids, mask)
    # target: the noise tokens, each span preceded by its sentinel, then the end sentinel
    pieces = []
    for k, (begin, end) in enumerate(_runs(mask)):
        pieces += [sentinels[k:k + 1], input_ids[begin:end]]
    pieces.append(sentinels[n_spans:n_spans + 1])
    return inputs, torch.cat(pieces)


def _runs(mask: torch.Tensor) -> list[tuple[int, int]]:
    """[begin, end) of each run of True."""
    m = mask.to(torch.int8).cpu()
    edges = torch.diff(torch.cat([torch.zeros(1, dtype=torch.int8), m, torch.zeros(1, dtype=torch.int8)]))
    starts = (edges == 1).nonzero().squeeze(1).tolist()
    ends = (edges == -1).nonzero().squeeze(1).tolist()
    return list(zip(starts, ends))
