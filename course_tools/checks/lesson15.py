"""Graded checks for lesson 15: whole-word masking (BERT's May 2019 release). Words are selected once
each; every piece of a selected word is predicted and treated 80/10/10 on its own."""
import torch

from ..grading import CheckFailed, exercise, expect, randint

IGNORE = -100
PAD, CLS, SEP, MASK, N_SPECIAL = 0, 1, 2, 3, 4
_SHORTCUTS = ("course_lib.masking:mask_tokens", "course_lib.masking:random_word_ids")


def _batch(rng, n_rows, max_len, vocab_size, all_padding_row=False):
    """Rows [CLS] words [SEP] [PAD]...; words of 1-4 pieces. Returns ids, is_continuation, special, word_of
    (the index of each piece's word, -1 at specials)."""
    ids = torch.randint(N_SPECIAL, vocab_size, (n_rows, max_len), generator=rng)
    cont = torch.zeros(n_rows, max_len, dtype=torch.bool)
    special = torch.ones(n_rows, max_len, dtype=torch.bool)
    word_of = torch.full((n_rows, max_len), -1)
    lengths = torch.randint(max_len // 2, max_len + 1, (n_rows,), generator=rng).tolist()
    pieces = torch.randint(1, 5, (n_rows, max_len), generator=rng).tolist()
    word = 0
    for b in range(n_rows):
        length = 0 if (all_padding_row and b == n_rows - 1) else max(lengths[b], 2)
        if length:
            ids[b, 0], ids[b, length - 1] = CLS, SEP
        t, k = 1, 0
        while t < length - 1:
            n = min(pieces[b][k], length - 1 - t)
            k += 1
            special[b, t:t + n] = False
            cont[b, t + 1:t + n] = True
            word_of[b, t:t + n] = word
            word, t = word + 1, t + n
        ids[b, length:] = PAD
    return ids, cont, special, word_of


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
        expect(abs(share - ratio) < 0.01,
               f"[{case}] share of words selected {share:.4f}, expected {ratio} ± 0.01 (share of pieces selected "
               f"{piece_share:.4f})" + (" - selecting pieces and then extending them to their whole word selects "
                                        "long words more often: draw once per word" if share > ratio else ""))
        sel = labels != IGNORE
        n = int(sel.sum())
        shares = {"[MASK]": (masked[sel] == MASK).float().mean().item(),
                  "random": ((masked != ids) & (masked != MASK))[sel].float().mean().item(),
                  "unchanged": (masked == ids)[sel].float().mean().item()}
        for (name, got), target in zip(shares.items(), (0.8, 0.1, 0.1)):
            expect(abs(got - target) < 0.015, f"[{case}] {name} share of the {n} selected pieces {got:.4f}, "
                                              f"expected {target} ± 0.015")
        # independence: the two pieces of a selected two-piece word
        two = chosen & (size == 2)
        first = torch.zeros(n_words, dtype=torch.long)
        both = torch.zeros(n_words, dtype=torch.long)
        valid = word_of >= 0
        is_mask = (masked == MASK) & valid
        both.index_add_(0, word_of[valid], is_mask[valid].long())
        first = (both[two] == 2).float().mean().item()
        expect(abs(first - 0.64) < 0.05,
               f"[{case}] both pieces of a selected two-piece word became [MASK] in {first:.3f} of {int(two.sum())} "
               "words, expected 0.64 ± 0.05 (0.8 x 0.8): the 80/10/10 choice is made for each piece on its own, "
               "not once per word")
        replaced = (masked != ids) & (masked != MASK)
        drawn = masked[replaced]
        bad = sorted(set(drawn[(drawn <= MASK) | (drawn >= V)].tolist()))
        expect(not bad, f"[{case}] random replacements drew ids {bad[:8]}: draw only ordinary ids, "
                        f"mask_token_id + 1 .. vocab_size - 1 = {MASK + 1} .. {V - 1}")
        distinct = len(drawn.unique())
        expect(distinct > V // 2, f"[{case}] random replacements used only {distinct} distinct ids: draw a fresh "
                                  "uniform id for every replaced piece")
