"""Exercise 15 (whole-word masking; the shares of tokens a masking rate and split give, derived and measured):
wrong answers and honest alternatives. Answer cells: 0 whole_word_mask, 1 expected_shares, 2 measure_shares,
3 the written answer."""
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



def _expected(body):
    return {1: "def expected_shares(ratio, split, n_ordinary):\n    pm, pr, pk = split\n" + body}


def _measure(random="~same & ~is_mask", unchanged="has_label & same", denominator="ordinary"):
    return {2: "def measure_shares(input_ids, masked_input_ids, labels, special_tokens_mask, mask_token_id):\n"
               "    ordinary = ~special_tokens_mask\n    has_label = labels != -100\n"
               "    is_mask = masked_input_ids == mask_token_id\n    same = masked_input_ids == input_ids\n"
               f"    n = int(({denominator}).sum())\n"
               "    share = lambda f: int((f & ordinary).sum()) / n\n"
               f"    return {{'loss': share(has_label), 'mask': share(is_mask), 'random': share({random}),\n"
               f"            'unchanged': share({unchanged})}}\n"}


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
    Mistake("15.expected-shares", "random-never-draws-the-original",
            _expected("    return {'loss': ratio, 'mask': ratio * pm, 'random': ratio * pr, 'unchanged': ratio * pk}\n"),
            "1 / n_ordinary"),
    Mistake("15.expected-shares", "shares-of-the-selected-tokens",
            _expected("    return {'loss': 1.0, 'mask': pm, 'random': pr * (1 - 1 / n_ordinary),\n"
                      "            'unchanged': pk + pr / n_ordinary}\n"), "multiply by the rate"),
    Mistake("15.expected-shares", "loss-only-where-the-input-changed",
            _expected("    return {'loss': ratio * (pm + pr), 'mask': ratio * pm, 'random': ratio * pr * (1 - 1 / n_ordinary),\n"
                      "            'unchanged': ratio * (pk + pr / n_ordinary)}\n"), "expected"),
    Mistake("15.expected-shares", "mask-is-the-rate",
            _expected("    return {'loss': ratio, 'mask': ratio, 'random': ratio * pr, 'unchanged': ratio * pk}\n"),
            "expected"),
    Mistake("15.measure-shares", "divided-by-every-position", _measure(denominator="torch.ones_like(ordinary)"),
            "divided by every position"),
    Mistake("15.measure-shares", "divided-by-the-selected", _measure(denominator="has_label & ordinary"),
            "shares of the selected tokens"),
    Mistake("15.measure-shares", "random-counts-every-change", _measure(random="~same"), "'random'"),
    Mistake("15.measure-shares", "unchanged-without-a-label", _measure(unchanged="same"), "'unchanged'"),
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
    Honest("fractions-and-numpy-counts", {
        1: "from fractions import Fraction\n\n"
           "def expected_shares(ratio, split, n_ordinary):\n"
           "    pm, pr, pk = (Fraction(str(p)) for p in split)\n    r, hit = Fraction(str(ratio)), Fraction(1, n_ordinary)\n"
           "    shares = {'loss': r, 'mask': r * pm, 'random': r * pr * (1 - hit), 'unchanged': r * (pk + pr * hit)}\n"
           "    return {k: float(v) for k, v in shares.items()}\n",
        2: "import numpy as np\n\n"
           "def measure_shares(input_ids, masked_input_ids, labels, special_tokens_mask, mask_token_id):\n"
           "    x, m, y = input_ids.numpy(), masked_input_ids.numpy(), labels.numpy()\n"
           "    keep = ~special_tokens_mask.numpy()\n    x, m, y = x[keep], m[keep], y[keep]\n"
           "    return {'loss': np.mean(y != -100), 'mask': np.mean(m == mask_token_id),\n"
           "            'random': np.mean((m != x) & (m != mask_token_id)),\n"
           "            'unchanged': np.mean((y != -100) & (m == x))}\n"}),
    Honest("tensor-shares-and-a-loop-derivation", {
        1: "def expected_shares(ratio, split, n_ordinary):\n"
           "    # walk the three actions; a random draw is the original with probability 1 / n_ordinary\n"
           "    out = {'loss': 0.0, 'mask': 0.0, 'random': 0.0, 'unchanged': 0.0}\n"
           "    for action, p in zip(('mask', 'random', 'keep'), split):\n"
           "        out['loss'] += ratio * p\n"
           "        if action == 'mask':\n            out['mask'] += ratio * p\n"
           "        elif action == 'random':\n"
           "            out['random'] += ratio * p * (n_ordinary - 1) / n_ordinary\n"
           "            out['unchanged'] += ratio * p / n_ordinary\n"
           "        else:\n            out['unchanged'] += ratio * p\n"
           "    out['loss'] = ratio\n    return out\n",
        2: "import torch\n\n"
           "def measure_shares(input_ids, masked_input_ids, labels, special_tokens_mask, mask_token_id):\n"
           "    sel = ~special_tokens_mask\n    n = torch.count_nonzero(sel).double()\n"
           "    x, m, y = input_ids[sel], masked_input_ids[sel], labels[sel]\n"
           "    return {'loss': torch.count_nonzero(y != -100) / n, 'mask': torch.count_nonzero(m == mask_token_id) / n,\n"
           "            'random': torch.count_nonzero((m != x) & (m != mask_token_id)) / n,\n"
           "            'unchanged': torch.count_nonzero((y != -100) & (m == x)) / n}\n"}),
]
