"""Graded checks for lesson 15: whole-word masking (BERT's May 2019 release; words are selected once each,
every piece of a selected word is predicted and treated 80/10/10 on its own), and what a masking rate and
split do to the input: the shares of tokens with a loss, seen as [MASK], replaced, left unchanged -
derived for hidden rates, then measured."""
import math
import numbers

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, randint, written

IGNORE = -100
PAD, CLS, SEP, MASK, N_SPECIAL = 0, 1, 2, 3, 4
_SHORTCUTS = ("course_lib.masking:mask_tokens", "course_lib.masking:random_word_ids")


def _batch(rng, n_rows, max_len, vocab_size, all_padding_row=False):
    """Rows [CLS] words [SEP] [PAD]...; words of 1-4 pieces. Returns ids, is_continuation, special, word_of
    (the index of each piece's word, -1 at specials). Vectorised: the rates check builds 144,000 positions."""
    ids = torch.randint(N_SPECIAL, vocab_size, (n_rows, max_len), generator=rng)
    lengths = torch.randint(max_len // 2, max_len + 1, (n_rows,), generator=rng).clamp(min=2)
    if all_padding_row:
        lengths[-1] = 0
    pieces = torch.randint(1, 5, (n_rows, max_len), generator=rng)
    starts = 1 + pieces.cumsum(1) - pieces                                 # (n_rows, max_len): word k starts here
    t = torch.arange(max_len).expand(n_rows, -1)                           # (n_rows, max_len)
    k = torch.searchsorted(starts, t.contiguous(), right=True) - 1         # word index within the row (-1: before)
    inside = (t >= 1) & (t <= lengths[:, None] - 2)                        # between [CLS] and [SEP]
    cont = inside & (starts.gather(1, k.clamp(min=0)) != t)
    n_words = torch.where(lengths >= 3, k.gather(1, (lengths - 2).clamp(min=0)[:, None])[:, 0] + 1, 0)
    offset = n_words.cumsum(0) - n_words                                   # words in the rows before
    word_of = torch.where(inside, offset[:, None] + k, torch.full_like(k, -1))
    special = ~inside
    ids[t == 0] = CLS
    ids[t == (lengths[:, None] - 1)] = SEP
    ids[t >= lengths[:, None]] = PAD
    return ids, cont, special, word_of


def _tolerance(p, n, floor):
    """About six standard errors of a share p counted over n draws (never below `floor`): no seed of the
    200 breaks it, and it still tells 80/10/10 from 90/5/5 and one draw per word from one per piece."""
    return max(floor, 6 * math.sqrt(p * (1 - p) / max(n, 1)))


def _call(fn, ids, cont, special, V, seed=0, **kw):
    g = torch.Generator().manual_seed(seed) if seed is not None else None
    before = (ids.clone(), cont.clone(), special.clone())
    out = fn(ids, cont, special, mask_token_id=MASK, vocab_size=V, generator=g, **kw)
    expect(torch.equal(ids, before[0]), "input_ids was modified in place: clone it before replacing tokens")
    expect(torch.equal(cont, before[1]) and torch.equal(special, before[2]),
           "is_continuation or special_tokens_mask was modified in place")
    if not (isinstance(out, tuple) and len(out) == 2):
        raise CheckFailed(f"return a tuple (masked_input_ids, labels), got {type(out).__name__}")
    masked, labels = out
    for name, t in (("masked_input_ids", masked), ("labels", labels)):
        expect(isinstance(t, torch.Tensor) and tuple(t.shape) == tuple(ids.shape),
               f"{name}: expected a tensor of shape {tuple(ids.shape)}, got "
               f"{tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__}")
    return masked, labels


def _split_words(case, labels, word_of, n_words):
    """Count pieces selected per word; fail when a word is partly selected."""
    valid = word_of >= 0
    sel = (labels != IGNORE) & valid
    per_word = torch.zeros(n_words, dtype=torch.long).index_add_(0, word_of[valid], sel[valid].long())
    size = torch.zeros(n_words, dtype=torch.long).index_add_(0, word_of[valid], torch.ones_like(word_of[valid]))
    partial = (per_word > 0) & (per_word < size)
    if partial.any():
        raise CheckFailed(f"[{case}] {int(partial.sum())} of {n_words} words are only partly selected (e.g. "
                          f"{int(per_word[partial][0])} of its {int(size[partial][0])} pieces): select whole words - one "
                          "draw per word, shared by all its pieces (the ## pieces follow their word)")
    return per_word > 0, size


@exercise("15.wwm-whole-words", points=2, uses="whole_word_mask", forbids=_SHORTCUTS)
def check_whole_words(fn, rng):
    """Words are selected entirely or not at all; specials untouched; ratio 0 and 1; the generator decides."""
    V = 300
    ids, cont, special, word_of = _batch(rng, 60, 40, V, all_padding_row=True)
    n_words = int(word_of.max()) + 1
    case = "ratio=1.0 (every word)"
    masked, labels = _call(fn, ids, cont, special, V, ratio=1.0)
    expect(bool((labels[~special] == ids[~special]).all()),
           f"[{case}] every word piece must be selected, with its original id as the label")
    expect(bool((labels[special] == IGNORE).all()), f"[{case}] special and padding positions must have label -100")
    expect(bool((masked[special] == ids[special]).all()), f"[{case}] special and padding positions must not change")
    _, labels = _call(fn, ids, cont, special, V, ratio=0.0)
    expect(bool((labels == IGNORE).all()), "[ratio=0.0] every label must be -100")
    for trial, ratio in enumerate((0.15, 0.3, 0.5)):
        seed = randint(rng, 0, 2**31)
        case = f"ratio={ratio}, random batch {trial} (words of 1-4 pieces, padding, an all-padding row)"
        masked, labels = _call(fn, ids, cont, special, V, seed=seed, ratio=ratio)
        n_sel = int((labels != IGNORE)[special].sum())
        expect(n_sel == 0, f"[{case}] {n_sel} special/padding positions were selected (labels != -100 there)")
        expect(int((masked != ids)[special].sum()) == 0, f"[{case}] special/padding positions were changed")
        sel = labels != IGNORE
        expect(bool((labels[sel] == ids[sel]).all()), f"[{case}] labels must hold the original id of every selected piece")
        expect(bool((masked[~sel] == ids[~sel]).all()), f"[{case}] pieces that were not selected must keep their id")
        _split_words(case, labels, word_of, n_words)
        again = _call(fn, ids, cont, special, V, seed=seed, ratio=ratio)
        expect(torch.equal(again[0], masked) and torch.equal(again[1], labels),
               f"[{case}] the same generator seed gave a different mask: draw every random number from `generator`")
        other = _call(fn, ids, cont, special, V, seed=seed + 1, ratio=ratio)
        expect(not torch.equal(other[1], labels), f"[{case}] another seed gave the same mask: masking must be dynamic")
    _call(fn, ids, cont, special, V, seed=None, ratio=0.2)        # generator=None must work


@exercise("15.wwm-rates", points=2, uses="whole_word_mask", forbids=_SHORTCUTS)
def check_rates(fn, rng):
    """Word-level selection rate, the per-piece 80/10/10 split, independent pieces, valid random ids."""
    V = 1000
    ids, cont, special, word_of = _batch(rng, 900, 160, V)
    n_words = int(word_of.max()) + 1
    for ratio in (0.15, 0.4):
        case = f"ratio={ratio}, {n_words} words"
        seed = randint(rng, 0, 2**31)
        masked, labels = _call(fn, ids, cont, special, V, seed=seed, ratio=ratio)
        chosen, size = _split_words(case, labels, word_of, n_words)
        share = chosen.float().mean().item()
        piece_share = (labels != IGNORE)[~special].float().mean().item()
        tol = _tolerance(ratio, n_words, 0.01)
        expect(abs(share - ratio) < tol,
               f"[{case}] share of words selected {share:.4f}, expected {ratio} ± {tol:.3f} (share of pieces selected "
               f"{piece_share:.4f})" + (" - selecting pieces and then extending them to their whole word selects "
                                        "long words more often: draw once per word" if share > ratio else ""))
        sel = labels != IGNORE
        n = int(sel.sum())
        shares = {"[MASK]": (masked[sel] == MASK).float().mean().item(),
                  "random": ((masked != ids) & (masked != MASK))[sel].float().mean().item(),
                  "unchanged": (masked == ids)[sel].float().mean().item()}
        for (name, got), target in zip(shares.items(), (0.8, 0.1, 0.1)):
            tol = _tolerance(target, n, 0.015)
            expect(abs(got - target) < tol, f"[{case}] {name} share of the {n} selected pieces {got:.4f}, "
                                            f"expected {target} ± {tol:.3f}")
        # independence: the two pieces of a selected two-piece word
        two = chosen & (size == 2)
        first = torch.zeros(n_words, dtype=torch.long)
        both = torch.zeros(n_words, dtype=torch.long)
        valid = word_of >= 0
        is_mask = (masked == MASK) & valid
        both.index_add_(0, word_of[valid], is_mask[valid].long())
        first = (both[two] == 2).float().mean().item()
        tol = _tolerance(0.64, int(two.sum()), 0.05)
        expect(abs(first - 0.64) < tol,
               f"[{case}] both pieces of a selected two-piece word became [MASK] in {first:.3f} of {int(two.sum())} "
               f"words, expected 0.64 ± {tol:.3f} (0.8 x 0.8): the 80/10/10 choice is made for each piece on its own, "
               "not once per word")
        replaced = (masked != ids) & (masked != MASK)
        drawn = masked[replaced]
        bad = sorted(set(drawn[(drawn <= MASK) | (drawn >= V)].tolist()))
        expect(not bad, f"[{case}] random replacements drew ids {bad[:8]}: draw only ordinary ids, "
                        f"mask_token_id + 1 .. vocab_size - 1 = {MASK + 1} .. {V - 1}")
        distinct = len(drawn.unique())
        expect(distinct > V // 2, f"[{case}] random replacements used only {distinct} distinct ids: draw a fresh "
                                  "uniform id for every replaced piece")


# ---------------------------------------------------------------- 15.expected-shares / 15.measure-shares

KEYS = ("loss", "mask", "random", "unchanged")


def shares_reference(ratio, split, n_ordinary):
    """Expected shares of the ordinary tokens: with a loss, seen as [MASK], replaced by another ordinary
    token, and left as they were but predicted (a random draw can pick the original: 1 / n_ordinary)."""
    p_mask, p_random, p_keep = split
    return {"loss": ratio, "mask": ratio * p_mask, "random": ratio * p_random * (1 - 1 / n_ordinary),
            "unchanged": ratio * (p_keep + p_random / n_ordinary)}


_SHARE_VARIANTS = {
    "draw-never-original": (lambda r, s, K: {"loss": r, "mask": r * s[0], "random": r * s[1], "unchanged": r * s[2]},
                            "a random replacement is drawn from all n_ordinary ids, the original among them: with "
                            "probability 1 / n_ordinary it draws the original, and the token looks unchanged"),
    "shares-of-selected": (lambda r, s, K: {"loss": 1.0, "mask": s[0], "random": s[1] * (1 - 1 / K),
                                            "unchanged": s[2] + s[1] / K},
                           "those are shares of the *selected* tokens; the question is the share of all ordinary "
                           "tokens (multiply by the rate)"),
}


def _shares(case, got, what):
    if not isinstance(got, dict):
        raise CheckFailed(f"[{case}] {what} should return a dict with the keys {KEYS}, got {type(got).__name__}")
    missing = [k for k in KEYS if k not in got]
    expect(not missing, f"[{case}] {what}: the dict has no key(s) {missing} (expected {KEYS})")
    out = {}
    for k in KEYS:
        v = got[k]
        if isinstance(v, torch.Tensor) and v.numel() == 1:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Real):
            raise CheckFailed(f"[{case}] {what}[{k!r}] should be a number, got {type(v).__name__}")
        out[k] = float(v)
    return out


def _close(a, b):
    return all(math.isclose(a[k], b[k], rel_tol=1e-9, abs_tol=1e-12) for k in KEYS)


def _show(d):
    return "{" + ", ".join(f"{k!r}: {d[k]:.6g}" for k in KEYS) + "}"


@exercise("15.expected-shares", points=2, uses="expected_shares", forbids=_SHORTCUTS)
def check_expected_shares(fn, rng):
    """Derived: the expected shares of ordinary tokens with a loss, [MASK], replaced, unchanged, on hidden rates."""
    cases = [(0.15, (0.8, 0.1, 0.1), 10, "worked example"), (0.15, (0.8, 0.1, 0.1), 30_000, "BERT's defaults"),
             (0.4, (1.0, 0.0, 0.0), 500, "100% [MASK]"), (0.3, (0.0, 1.0, 0.0), 1, "one ordinary id: every draw is the original")]
    for n in range(6):
        ratio = randint(rng, 1, 100) / 100
        a, b = sorted(randint(rng, 0, 101) for _ in range(2))
        split = (a / 100, (b - a) / 100, (100 - b) / 100)
        cases.append((ratio, split, randint(rng, 1, 50), f"hidden rate {n}"))
    for ratio, split, K, label in cases:
        case = f"{label}: ratio={ratio}, split={split}, n_ordinary={K}"
        got = _shares(case, call_learner(case, fn, ratio, split, K), "expected_shares")
        expected = shares_reference(ratio, split, K)
        if not _close(got, expected):
            hint = next((f" - {why}" for f, why in _SHARE_VARIANTS.values() if _close(got, f(ratio, split, K))), "")
            raise CheckFailed(f"[{case}] got {_show(got)}, expected {_show(expected)}{hint}")


def _masker(ids, special, ratio, split, mask_id, vocab_size, g):
    """A reference masking pass (BERT's recipe with any rate and split)."""
    u_select, u_action = torch.rand(ids.shape, generator=g), torch.rand(ids.shape, generator=g)
    selected = (u_select < ratio) & ~special
    to_mask = selected & (u_action < split[0])
    to_random = selected & (u_action >= split[0]) & (u_action < split[0] + split[1])
    masked = ids.clone()
    masked[to_mask] = mask_id
    draws = torch.randint(mask_id + 1, vocab_size, ids.shape, generator=g)
    masked[to_random] = draws[to_random]
    labels = torch.where(selected, ids, torch.full_like(ids, IGNORE))
    return masked, labels


def measured_reference(input_ids, masked, labels, special, mask_id, variant="right"):
    ordinary = ~special if variant != "all-positions" else torch.ones_like(special)
    with_loss = labels != IGNORE
    n = ordinary.sum().item()
    share = lambda x: (x & ordinary).sum().item() / n
    if variant == "of-selected":
        n = (with_loss & ordinary).sum().item()
    return {"loss": share(with_loss), "mask": share(masked == mask_id),
            "random": share((masked != input_ids) & (masked != mask_id)),
            "unchanged": share(with_loss & (masked == input_ids))}


_MEASURE_HINTS = {
    "all-positions": "you divided by every position; the shares are of the ordinary tokens ([CLS], [SEP] and "
                     "padding are never selected)",
    "of-selected": "those are shares of the selected tokens; divide by the ordinary tokens",
}


@exercise("15.measure-shares", points=2, uses=("measure_shares", "expected_shares"), forbids=_SHORTCUTS)
def check_measure_shares(fn, expected_fn, rng):
    """Measured from one masking pass: the shares of ordinary tokens with a loss, [MASK], replaced, unchanged."""
    for trial in range(6):
        V = randint(rng, 8, 40) if trial % 2 else randint(rng, 200, 2000)
        n_rows, T = randint(rng, 20, 60), randint(rng, 8, 40)
        ids = torch.randint(N_SPECIAL, V, (n_rows, T), generator=rng)
        lengths = torch.randint(2, T + 1, (n_rows,), generator=rng)
        ids[:, 0] = CLS
        ids[torch.arange(n_rows), lengths - 1] = SEP
        ids[torch.arange(T)[None, :] >= lengths[:, None]] = PAD
        special = ids < N_SPECIAL
        ratio = randint(rng, 5, 80) / 100
        a, b = sorted(randint(rng, 0, 101) for _ in range(2))
        split = (a / 100, (b - a) / 100, (100 - b) / 100)
        masked, labels = _masker(ids, special, ratio, split, MASK, V, rng)
        case = (f"trial {trial}: {n_rows} rows of up to {T} tokens with padding, {V - N_SPECIAL} ordinary ids, "
                f"masked at ratio={ratio}, split={split}")
        got = _shares(case, call_learner(case, fn, ids.clone(), masked.clone(), labels.clone(), special.clone(), MASK),
                      "measure_shares")
        expected = measured_reference(ids, masked, labels, special, MASK)
        if not _close(got, expected):
            for variant, hint in _MEASURE_HINTS.items():
                if _close(got, measured_reference(ids, masked, labels, special, MASK, variant)):
                    raise CheckFailed(f"[{case}] got {_show(got)}, expected {_show(expected)} - {hint}")
            wrong = [k for k in KEYS if not math.isclose(got[k], expected[k], rel_tol=1e-9, abs_tol=1e-12)]
            raise CheckFailed(f"[{case}] got {_show(got)}, expected {_show(expected)}: {', '.join(map(repr, wrong))} "
                              "differ (shares of the ordinary tokens: loss = has a label, mask = input is [MASK], "
                              "random = input is another ordinary id, unchanged = has a label and its own id)")
    # the measured value at BERT's defaults, beside the learner's own derivation
    V = 30_000 + N_SPECIAL
    ids = torch.randint(N_SPECIAL, V, (400, 512), generator=rng)
    ids[:, 0], ids[:, -1] = CLS, SEP
    special = ids < N_SPECIAL
    masked, labels = _masker(ids, special, 0.15, (0.8, 0.1, 0.1), MASK, V, rng)
    measured = _shares("BERT's defaults", call_learner("BERT's defaults", fn, ids.clone(), masked.clone(),
                                                       labels.clone(), special.clone(), MASK), "measure_shares")
    try:
        predicted = _shares("BERT's defaults", expected_fn(0.15, (0.8, 0.1, 0.1), V - N_SPECIAL), "expected_shares")
        said = f"your expected_shares gives {_show(predicted)}"
    except Exception:  # noqa: BLE001 - not written yet: the measurement stands on its own
        said = "expected_shares is not written yet"
    return (f"at BERT's defaults (15%, 80/10/10, 30,000 ordinary ids) on {int((~special).sum()):,} tokens you "
            f"measured {_show(measured)}; {said}")


written("15.written", points=2, rubric=(
    "BERT selects 15% of the ordinary tokens (never specials or padding) and predicts every selected one; of "
    "those 80% become [MASK], 10% a random ordinary word, 10% stay - so about 12% of the input is [MASK] and the "
    "loss also covers the unchanged and replaced tokens",
    "15% is a trade-off, not a law: a higher rate gives more predictions per sequence but less context for each; "
    "measured at equal compute, 40% did at least as well as 15% (both evaluated at 15%) and 80% kept most of "
    "the accuracy (Wettig et al. 2023 found the same for BERT-large)",
    "80/10/10 exists because fine-tuning inputs contain no [MASK]: it hardly changes accuracy at [MASK] "
    "positions, and makes the model keep useful representations of tokens it can see, since any visible token "
    "may be the one it must predict (BERT's Table 8: small gains, largest in the feature-based setting)",
    "masks are drawn afresh every time a sequence is used (dynamic masking, RoBERTa); BERT's original scripts "
    "fixed them when writing the training files",
))
