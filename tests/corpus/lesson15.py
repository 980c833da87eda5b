"""Exercise 15 (whole-word masking): wrong answers and honest alternatives."""
from . import Honest, Mistake

_HEAD = ("import torch\n\ndef whole_word_mask(input_ids, is_continuation, special_tokens_mask, *, mask_token_id,\n"
         "                    vocab_size, ratio=0.15, generator=None):\n"
         "    special = special_tokens_mask.bool()\n"
         "    starts = ~special & ~is_continuation.bool()\n"
         "    pos = torch.arange(input_ids.shape[-1]).expand_as(input_ids)\n"
         "    word_start = torch.where(starts, pos, -1).cummax(dim=-1).values\n")
_SELECT = ("    chosen = starts & (torch.rand(input_ids.shape, generator=generator) < ratio)\n"
           "    selected = ~special & (word_start >= 0) & chosen.gather(-1, word_start.clamp(min=0))\n")
_ACTION = "    action = torch.rand(input_ids.shape, generator=generator)\n"
_RANDOM = "    rnd = torch.randint(mask_token_id + 1, vocab_size, input_ids.shape, generator=generator)\n"
_APPLY = ("    masked = input_ids.clone()\n    masked[selected & (action < 0.8)] = mask_token_id\n"
          "    r = selected & (action >= 0.8) & (action < 0.9)\n    masked[r] = rnd[r]\n")
_LABELS = "    return masked, torch.where(selected, input_ids, torch.full_like(input_ids, -100))\n"


def _answer(select=_SELECT, action=_ACTION, random=_RANDOM, apply=_APPLY, labels=_LABELS):
    return {0: _HEAD + select + action + random + apply + labels}


MISTAKES = [
    Mistake("15.wwm-whole-words", "token-level-selection",
            _answer(select="    selected = ~special & (torch.rand(input_ids.shape, generator=generator) < ratio)\n"),
            "partly selected"),
    Mistake("15.wwm-whole-words", "continuation-pieces-forgotten",
            _answer(select="    selected = starts & (torch.rand(input_ids.shape, generator=generator) < ratio)\n"),
            "every word piece must be selected"),
    Mistake("15.wwm-whole-words", "labels-only-where-changed",
            _answer(labels="    return masked, torch.where(masked != input_ids, input_ids, torch.full_like(input_ids, -100))\n"),
            "every word piece must be selected"),
    Mistake("15.wwm-whole-words", "modified-in-place",
            _answer(apply="    masked = input_ids\n    masked[selected & (action < 0.8)] = mask_token_id\n"
                          "    r = selected & (action >= 0.8) & (action < 0.9)\n    masked[r] = rnd[r]\n",
                    labels="    return masked, torch.where(selected, masked, torch.full_like(masked, -100))\n"),
            "in place"),
    Mistake("15.wwm-whole-words", "specials-not-excluded",
            _answer(select="    chosen = ~is_continuation.bool() & (torch.rand(input_ids.shape, generator=generator) < ratio)\n"
                           "    ws = torch.where(~is_continuation.bool(), pos, -1).cummax(dim=-1).values\n"
                           "    selected = chosen.gather(-1, ws.clamp(min=0))\n"),
            "label -100"),
    Mistake("15.wwm-rates", "select-pieces-then-extend-to-words",
            _answer(select="    hit = ~special & (torch.rand(input_ids.shape, generator=generator) < ratio)\n"
                           "    ws = word_start.clamp(min=0)\n"
                           "    chosen = torch.zeros_like(hit).scatter_reduce(-1, ws, hit, 'amax')\n"
                           "    selected = ~special & (word_start >= 0) & chosen.gather(-1, ws)\n"),
            "extending them to their whole word"),
    Mistake("15.wwm-rates", "one-action-per-word",
            _answer(action="    action = torch.rand(input_ids.shape, generator=generator).gather(-1, word_start.clamp(min=0))\n"),
            "for each piece on its own"),
    Mistake("15.wwm-rates", "random-ids-include-specials",
            _answer(random="    rnd = torch.randint(0, vocab_size, input_ids.shape, generator=generator)\n"), "ordinary ids"),
    Mistake("15.wwm-rates", "one-random-id-for-the-batch",
            _answer(random="    rnd = torch.randint(mask_token_id + 1, vocab_size, (1,), generator=generator).expand(input_ids.shape)\n"),
            "distinct ids"),
    Mistake("15.wwm-rates", "ninety-ten-split",
            _answer(apply="    masked = input_ids.clone()\n    masked[selected & (action < 0.9)] = mask_token_id\n"
                          "    r = selected & (action >= 0.9)\n    masked[r] = rnd[r]\n"),
            "[MASK] share"),
]

HONEST = [
    Honest("python-loop-over-words", {0: (
        "import torch\n\ndef whole_word_mask(input_ids, is_continuation, special_tokens_mask, *, mask_token_id,\n"
        "                    vocab_size, ratio=0.15, generator=None):\n"
        "    B, T = input_ids.shape\n"
        "    u_word = torch.rand(B, T, generator=generator)\n"
        "    u_act = torch.rand(B, T, generator=generator)\n"
        "    rnd = torch.randint(mask_token_id + 1, vocab_size, (B, T), generator=generator)\n"
        "    masked, labels = input_ids.clone(), torch.full_like(input_ids, -100)\n"
        "    for b in range(B):\n        on = False\n"
        "        for t in range(T):\n"
        "            if special_tokens_mask[b, t]:\n                on = False\n                continue\n"
        "            if not is_continuation[b, t]:\n                on = bool(u_word[b, t] < ratio)\n"
        "            if on:\n                labels[b, t] = input_ids[b, t]\n"
        "                if u_act[b, t] < 0.8:\n                    masked[b, t] = mask_token_id\n"
        "                elif u_act[b, t] < 0.9:\n                    masked[b, t] = rnd[b, t]\n"
        "    return masked, labels\n")}),
    Honest("word-index-by-cumsum-and-helper", {0: (
        "import torch\n\ndef _word_index(starts, special):\n"
        "    idx = starts.long().cumsum(-1) - 1\n    return torch.where(special, -1, idx)\n\n"
        "def whole_word_mask(input_ids, is_continuation, special_tokens_mask, *, mask_token_id,\n"
        "                    vocab_size, ratio=0.15, generator=None):\n"
        "    special = special_tokens_mask.bool()\n    starts = ~special & ~is_continuation.bool()\n"
        "    word = _word_index(starts, special)\n"
        "    draw = torch.rand(input_ids.shape, generator=generator)\n"
        "    B, T = input_ids.shape\n    per_word = torch.full((B, T + 1), 2.0)\n"
        "    per_word.scatter_(-1, torch.where(starts, word, T), torch.where(starts, draw, 2.0))\n"
        "    selected = (word >= 0) & (per_word.gather(-1, word.clamp(min=0)) < ratio)\n"
        "    kind = torch.rand(input_ids.shape, generator=generator)\n"
        "    replacement = torch.randint(mask_token_id + 1, vocab_size, input_ids.shape, generator=generator)\n"
        "    out = torch.where(selected & (kind < 0.8), torch.full_like(input_ids, mask_token_id), input_ids)\n"
        "    out = torch.where(selected & (kind >= 0.8) & (kind < 0.9), replacement, out)\n"
        "    return out, input_ids.masked_fill(~selected, -100)\n")}),
]
