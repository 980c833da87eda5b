"""BERT's dynamic masking for the masked-language-model objective (lesson 15).

Each call draws a fresh mask (dynamic masking, as RoBERTa does; BERT's original code fixed
the masks once when it wrote its training files):

1. select each non-special token independently with probability `ratio` (15%);
2. of the selected tokens, replace 80% by [MASK], 10% by a random token, leave 10% unchanged;
3. labels hold the original id at selected positions and -100 (ignored by
   `F.cross_entropy`) everywhere else.

Random replacements are ordinary words by construction: they are drawn from a fixed table of
allowed ids that does not depend on the batch. By default that table is the range of ids after
[MASK] — BERT's vocabulary layout ([PAD]=0, [unused...], [UNK]=100, [CLS]=101, [SEP]=102,
[MASK]=103, then words) and the course's ([PAD], [UNK], [CLS], [SEP], [MASK] first). A vocabulary
laid out differently passes `special_ids`. (Earlier versions excluded the ids found at special
positions of the batch, so [PAD] could be drawn as a "word" whenever a batch had no padding.)

The model must predict every selected token, including the unchanged ones: that is what
makes it keep a useful representation of tokens it can see, which is all it gets at
fine-tuning time when no [MASK] exists.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from .validation import require_id, require_ids, require_probability, require_shape

IGNORE_INDEX = -100  # F.cross_entropy's default ignore_index


def random_word_ids(vocab_size: int, mask_token_id: int,
                    special_ids: Sequence[int] | None = None) -> torch.Tensor:
    """The table of ids a random replacement is drawn from (uniformly), as a 1-D long tensor.

    special_ids None: range(mask_token_id + 1, vocab_size) (every id up to [MASK] is special).
    Otherwise: range(vocab_size) without `mask_token_id` and `special_ids`.
    """
    require_id("mask_token_id", mask_token_id, vocab_size)
    if special_ids is None:
        return torch.arange(mask_token_id + 1, vocab_size)
    allowed = torch.ones(vocab_size, dtype=torch.bool)
    excluded = torch.as_tensor([mask_token_id, *special_ids], dtype=torch.long)
    if ((excluded < 0) | (excluded >= vocab_size)).any():      # -1 would silently drop the last id
        raise ValueError(f"special_ids: expected ids in [0, vocab_size={vocab_size}), got {list(special_ids)}")
    allowed[excluded] = False
    return allowed.nonzero().squeeze(1)


def mask_tokens(input_ids: torch.Tensor, *, mask_token_id: int, vocab_size: int,
                special_tokens_mask: torch.Tensor, ratio: float = 0.15,
                generator: torch.Generator | None = None,
                mask_prob_split: Sequence[float] = (0.8, 0.1, 0.1),
                special_ids: Sequence[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (masked_input_ids, labels); `input_ids` itself is not modified.

    input_ids: (B, T) (any shape works) integer token ids.
    special_tokens_mask: same shape, True at [CLS], [SEP], [PAD] and any other position that
        must never be selected (padding counts as special).
    ratio: probability that a non-special token is selected (so the selected fraction
        fluctuates around `ratio` from call to call, as in Hugging Face's collator).
    mask_prob_split: (mask, random, keep) shares of the selected tokens; must sum to 1,
        e.g. (1.0, 0.0, 0.0) for "always [MASK]".
    special_ids: ids never drawn as random replacements (`mask_token_id` never is either);
        random replacements are drawn uniformly from the other ids of range(vocab_size).
        Default None: the special ids are 0 .. mask_token_id, i.e. random replacements are
        drawn uniformly from range(mask_token_id + 1, vocab_size) — BERT's and the course's
        layout, where [MASK] is the last special id. Either way the table of allowed ids
        depends only on these arguments, never on the batch's contents.
    generator: a torch.Generator for reproducible masks (random numbers are drawn on the
        generator's device and moved to `input_ids.device`).
    """
    # ids >= vocab_size would come back as labels that no output row can predict
    require_ids("input_ids", input_ids, vocab_size)
    require_shape("special_tokens_mask", special_tokens_mask, input_ids.shape, "input_ids")
    require_probability("ratio", ratio)
    p_mask, p_random, p_keep = (float(p) for p in mask_prob_split)
    if min(p_mask, p_random, p_keep) < 0 or not abs(p_mask + p_random + p_keep - 1.0) <= 1e-6:
        raise ValueError(f"mask_prob_split: expected three non-negative shares summing to 1, got {tuple(mask_prob_split)}")
    candidates = random_word_ids(vocab_size, mask_token_id, special_ids).to(input_ids.device)
    special = special_tokens_mask.to(device=input_ids.device, dtype=torch.bool)

    device = generator.device if generator is not None else torch.device("cpu")
    u_select = torch.rand(input_ids.shape, generator=generator, device=device)
    u_action = torch.rand(input_ids.shape, generator=generator, device=device)
    u_token = torch.rand(input_ids.shape, generator=generator, device=device)
    u_select, u_action, u_token = (u.to(input_ids.device) for u in (u_select, u_action, u_token))

    selected = (u_select < ratio) & ~special
    to_mask = selected & (u_action < p_mask)
    to_random = selected & (u_action >= p_mask) & (u_action < p_mask + p_random)

    masked = input_ids.clone()
    masked[to_mask] = mask_token_id
    if to_random.any():
        if len(candidates) == 0:        # e.g. [MASK] last (RoBERTa's layout) without special_ids
            raise ValueError(f"special_ids: no ordinary id left to draw random replacements from, got {special_ids}")
        # u_token in [0, 1) -> an index into the candidates, uniformly.
        index = (u_token * len(candidates)).long().clamp_max(len(candidates) - 1)
        masked[to_random] = candidates[index[to_random]].to(masked.dtype)
    labels = torch.full_like(input_ids, IGNORE_INDEX)
    labels[selected] = input_ids[selected]
    return masked, labels
