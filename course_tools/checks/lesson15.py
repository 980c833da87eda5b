"""Graded checks for lesson 15: BERT's dynamic masking (mask_tokens)."""
import torch

from ..grading import CheckFailed, exercise, expect

IGNORE = -100
PAD, CLS, SEP, MASK, N_SPECIAL = 0, 1, 2, 3, 4


def _batch(rng, n_rows=900, max_len=160, vocab_size=1000):
    """Rows [CLS] words [SEP] [PAD]...; > 100k ordinary tokens."""
    ids = torch.randint(N_SPECIAL, vocab_size, (n_rows, max_len), generator=rng)
    lengths = torch.randint(max_len // 2, max_len + 1, (n_rows,), generator=rng)
    ids[:, 0] = CLS
    ids[torch.arange(n_rows), lengths - 1] = SEP
    ids[torch.arange(max_len)[None, :] >= lengths[:, None]] = PAD
    return ids, ids < N_SPECIAL


def _call(fn, ids, special, vocab_size, rng, seed=None, **kw):
    if seed is None:
        seed = int(torch.randint(0, 2**31, (1,), generator=rng))
    g = torch.Generator().manual_seed(seed) if seed >= 0 else None
    before = ids.clone()
    out = fn(ids, mask_token_id=MASK, vocab_size=vocab_size, special_tokens_mask=special, generator=g, **kw)
    expect(torch.equal(ids, before), "input_ids was modified in place: clone it before replacing "
           "tokens (the caller still needs the original ids)")
    if not (isinstance(out, tuple) and len(out) == 2):
        raise CheckFailed(f"return a tuple (masked_input_ids, labels), got {type(out).__name__}")
    masked, labels = out
    expect(tuple(masked.shape) == tuple(ids.shape) and tuple(labels.shape) == tuple(ids.shape),
           f"shapes: masked {tuple(masked.shape)}, labels {tuple(labels.shape)}, expected {tuple(ids.shape)}")
    return masked, labels


@exercise("15.mask-statistics", points=3, uses="mask_tokens")
def check_statistics(fn, rng):
    """Selected share ≈ ratio and (mask, random, keep) ≈ mask_prob_split over > 100k tokens."""
    V = 1000
    for ratio, split in [(0.15, (0.8, 0.1, 0.1)), (0.4, (0.8, 0.1, 0.1)), (0.25, (0.5, 0.2, 0.3))]:
        ids, special = _batch(rng, vocab_size=V)
        masked, labels = _call(fn, ids, special, V, rng, ratio=ratio, mask_prob_split=split)
        selected = labels != IGNORE
        case = f"ratio={ratio}, mask_prob_split={split}"
        share = selected[~special].float().mean().item()
        expect(abs(share - ratio) < 0.01, f"[{case}] selected share of ordinary tokens {share:.4f}, "
               f"expected {ratio} ± 0.01 (select each non-special token with probability ratio)")
        n = int(selected.sum())
        shares = {"[MASK]": (masked[selected] == MASK).float().mean().item(),
                  "random": ((masked != ids) & (masked != MASK))[selected].float().mean().item(),
                  "unchanged": (masked == ids)[selected].float().mean().item()}
        for (name, got), target in zip(shares.items(), split):
            expect(abs(got - target) < 0.015, f"[{case}] {name} share of the {n} selected tokens "
                   f"{got:.4f}, expected {target} ± 0.015")


@exercise("15.specials-untouched", points=2, uses="mask_tokens")
def check_specials(fn, rng):
    """Special tokens and padding are never selected or changed; random words are never special ids."""
    V = 40    # a small vocabulary: random replacements hit every id many times
    ids, special = _batch(rng, n_rows=400, max_len=64, vocab_size=V)
    masked, labels = _call(fn, ids, special, V, rng, ratio=0.5, mask_prob_split=(0.0, 1.0, 0.0))
    n_sel = int((labels != IGNORE)[special].sum())
    expect(n_sel == 0, f"{n_sel} special/padding positions were selected (labels != -100 there)")
    n_changed = int((masked != ids)[special].sum())
    expect(n_changed == 0, f"{n_changed} special/padding positions were changed in masked_input_ids")
    replaced = (masked != ids) & ~special
    bad = masked[replaced]
    bad = bad[bad < N_SPECIAL]
    expect(len(bad) == 0, f"random replacements drew special ids {sorted(set(bad.tolist()))} "
           f"([PAD]=0, [CLS]=1, [SEP]=2, [MASK]=3): draw only from the ordinary ids")
    # a batch without any padding: [PAD] is nowhere in it, and must still never be drawn
    ids, special = _batch(rng, n_rows=400, max_len=64, vocab_size=V)
    ids = torch.where(ids == PAD, torch.randint(N_SPECIAL, V, ids.shape, generator=rng), ids)
    ids[ids == SEP] = N_SPECIAL
    ids[:, -1] = SEP
    special = ids < N_SPECIAL
    masked, labels = _call(fn, ids, special, V, rng, ratio=0.5, mask_prob_split=(0.0, 1.0, 0.0))
    drawn = masked[labels != IGNORE]
    bad = sorted(set(drawn[drawn < N_SPECIAL].tolist()))
    expect(len(bad) == 0, f"in a batch without padding, random replacements drew special ids {bad} "
           f"([PAD]=0, [CLS]=1, [SEP]=2, [MASK]=3): the ordinary ids are those after mask_token_id, "
           f"whatever the batch contains")
    ids, special = _batch(rng, n_rows=200, max_len=64, vocab_size=V)
    masked, labels = _call(fn, ids, special, V, rng, ratio=1.0)
    expect(bool((labels[~special] != IGNORE).all()), "ratio=1.0: every ordinary token must be selected")
    expect(bool((labels[special] == IGNORE).all()), "ratio=1.0: special tokens must still never be selected")


@exercise("15.labels-and-copy", points=2, uses="mask_tokens")
def check_labels(fn, rng):
    """Labels: original id where selected, -100 elsewhere; unselected inputs unchanged; no in-place edit."""
    V = 1000
    ids, special = _batch(rng, n_rows=300, max_len=64, vocab_size=V)
    before = ids.clone()
    masked, labels = _call(fn, ids, special, V, rng, ratio=0.3)
    expect(torch.equal(ids, before), "input_ids was modified in place: clone it before replacing tokens")
    expect(masked is not ids, "return a new tensor, not input_ids itself")
    selected = labels != IGNORE
    expect(bool((labels[selected] == ids[selected]).all()),
           "labels must hold the original token id at every selected position")
    expect(bool((masked[~selected] == ids[~selected]).all()),
           "positions that were not selected (labels == -100) must keep their original token")
    expect(bool((selected & (masked == MASK)).sum() > 0), "no [MASK] in the output at ratio=0.3")
    _, labels_none = _call(fn, ids, special, V, rng, ratio=0.0)
    expect(bool((labels_none == IGNORE).all()), "ratio=0.0: every label must be -100")


@exercise("15.dynamic-and-random", points=2, uses="mask_tokens")
def check_dynamic_and_random(fn, rng):
    """Masks are drawn from `generator` (same seed: same mask; another seed: another mask; None works);
    random words are valid, varied ordinary ids; `special_ids` is honoured."""
    V = 1000
    ids, special = _batch(rng, n_rows=300, max_len=64, vocab_size=V)
    seed = int(torch.randint(0, 2**31, (1,), generator=rng))
    first = _call(fn, ids, special, V, rng, seed=seed)
    again = _call(fn, ids, special, V, rng, seed=seed)
    other = _call(fn, ids, special, V, rng, seed=seed + 1)
    expect(torch.equal(first[1], again[1]) and torch.equal(first[0], again[0]),
           "the same generator seed gave a different mask: draw every random number from `generator`")
    expect(not torch.equal(first[1], other[1]),
           "another generator seed gave the same mask: masking must be dynamic (a new mask per call), "
           "so draw the selection from `generator`, not from a fixed seed")
    masked, labels = _call(fn, ids, special, V, rng, seed=-1)      # generator=None must work too
    expect(bool((labels != IGNORE).any()), "generator=None: nothing was selected")

    masked, labels = _call(fn, ids, special, V, rng, ratio=0.5, mask_prob_split=(0.0, 1.0, 0.0))
    replaced = (masked != ids) & ~special
    drawn = masked[replaced]
    expect(bool(((drawn >= 0) & (drawn < V)).all()),
           f"random replacements must be ids in range(vocab_size={V}); got ids from "
           f"{drawn.min().item()} to {drawn.max().item()}")
    n_distinct = len(drawn.unique())
    expect(n_distinct > V // 2, f"random replacements used only {n_distinct} distinct ids out of "
           f"{V - N_SPECIAL} ordinary ones: draw a fresh uniform id for every replaced position")

    extra = N_SPECIAL + 7                                           # declared special by the caller
    masked, labels = _call(fn, ids, special, V, rng, ratio=0.5, mask_prob_split=(0.0, 1.0, 0.0),
                           special_ids=list(range(N_SPECIAL)) + [extra])
    replaced = (masked != ids) & ~special
    expect(not bool((masked[replaced] == extra).any()),
           f"special_ids=[0, 1, 2, 3, {extra}] was given, but id {extra} was drawn as a random word")
