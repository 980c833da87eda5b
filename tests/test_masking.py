"""course_lib.masking: BERT's 15% / 80-10-10 dynamic masking, measured."""
from __future__ import annotations

import pytest
import torch

from course_lib.masking import IGNORE_INDEX, mask_tokens, random_word_ids

V, MASK, CLS, SEP, PAD = 1000, 4, 2, 3, 0
SPECIAL_IDS = [PAD, 1, CLS, SEP, MASK]


def make_batch(B=600, T=256, seed=0):
    """Rows of [CLS] tokens [SEP] [PAD]...; real tokens never use a special id."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, V, (B, T), generator=g)
    lengths = torch.randint(T // 2, T + 1, (B,), generator=g)
    pos = torch.arange(T)
    ids[:, 0] = CLS
    ids[torch.arange(B), lengths - 1] = SEP
    ids[pos[None, :] >= lengths[:, None]] = PAD
    special = torch.isin(ids, torch.tensor([PAD, CLS, SEP]))
    return ids, special


def run(ids, special, seed=0, **kw):
    return mask_tokens(ids, mask_token_id=MASK, vocab_size=V, special_tokens_mask=special,
                       generator=torch.Generator().manual_seed(seed), **kw)


def test_statistics_over_1e5_tokens():
    ids, special = make_batch()
    n_candidates = int((~special).sum())
    assert n_candidates > 1e5
    masked, labels = run(ids, special)
    selected = labels != IGNORE_INDEX
    frac = selected.sum().item() / n_candidates
    assert abs(frac - 0.15) < 0.005, frac
    n_sel = selected.sum().item()
    to_mask = (masked == MASK) & selected
    changed = (masked != ids) & selected & (masked != MASK)
    unchanged = (masked == ids) & selected
    # a random replacement can draw the original id (p = 1/995): count it as "unchanged"
    assert abs(to_mask.sum().item() / n_sel - 0.8) < 0.015
    assert abs(changed.sum().item() / n_sel - 0.1) < 0.015
    assert abs(unchanged.sum().item() / n_sel - 0.1) < 0.015
    # labels hold the original ids where selected, -100 elsewhere
    assert torch.equal(labels[selected], ids[selected])
    assert (labels[~selected] == IGNORE_INDEX).all()
    # nothing outside the selection changes, specials and padding never selected
    assert torch.equal(masked[~selected], ids[~selected])
    assert not selected[special].any()
    # random replacements never draw [MASK] or an id found at a special position
    assert not torch.isin(masked[changed], torch.tensor([PAD, CLS, SEP, MASK])).any()


def test_random_replacements_are_uniform_over_ordinary_ids():
    ids, special = make_batch(B=200, T=256)
    masked, labels = run(ids, special, mask_prob_split=(0.0, 1.0, 0.0), ratio=0.5)
    drawn = masked[labels != IGNORE_INDEX]
    counts = torch.bincount(drawn, minlength=V).float()
    # by default every id up to [MASK] (here 0..4, [UNK]=1 included) is special, never drawn
    assert counts[:MASK + 1].sum() == 0
    expected = drawn.numel() / (V - 5)
    chi2 = ((counts[5:] - expected) ** 2 / expected).sum().item()
    assert chi2 < 995 + 5 * (2 * 995) ** 0.5, chi2  # df = 994: mean 994, sd 44.6


def test_no_special_id_drawn_when_the_batch_has_no_padding():
    """Regression: the default used to exclude only ids seen at special positions, so [PAD]
    (and [UNK]) were drawn as random words whenever a batch had no padding."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(5, V, (400, 64), generator=g)
    ids[:, 0], ids[:, -1] = CLS, SEP                                  # no [PAD] anywhere
    special = torch.isin(ids, torch.tensor([CLS, SEP]))
    masked, labels = run(ids, special, mask_prob_split=(0.0, 1.0, 0.0), ratio=0.5)
    drawn = masked[labels != IGNORE_INDEX]
    assert drawn.numel() > 10_000
    assert not torch.isin(drawn, torch.tensor(SPECIAL_IDS)).any()
    assert drawn.min() >= MASK + 1 and drawn.max() < V


def test_random_word_table():
    assert torch.equal(random_word_ids(10, 4), torch.arange(5, 10))
    # an explicit list: everything else except [MASK] and the listed ids
    assert random_word_ids(10, 4, special_ids=[0, 7]).tolist() == [1, 2, 3, 5, 6, 8, 9]
    # [MASK] last in the vocabulary (RoBERTa's layout) needs special_ids
    assert random_word_ids(10, 9).numel() == 0
    assert random_word_ids(10, 9, special_ids=[0, 1, 2, 3]).tolist() == [4, 5, 6, 7, 8]
    with pytest.raises(ValueError, match="special_ids"):
        random_word_ids(10, 4, special_ids=[12])


def test_explicit_special_ids_are_honoured():
    ids, special = make_batch(B=200, T=256)
    masked, labels = run(ids, special, mask_prob_split=(0.0, 1.0, 0.0), ratio=0.5,
                         special_ids=[PAD, CLS, SEP, 7])
    drawn = masked[labels != IGNORE_INDEX]
    counts = torch.bincount(drawn, minlength=V)
    assert counts[[PAD, CLS, SEP, MASK, 7]].sum() == 0
    assert counts[1] > 0                                              # [UNK] not listed: allowed
    with pytest.raises(ValueError, match="ordinary id"):
        mask_tokens(ids, mask_token_id=V - 1, vocab_size=V, special_tokens_mask=special,
                    mask_prob_split=(0.0, 1.0, 0.0))


def test_deterministic_with_a_seeded_generator_and_dynamic_across_calls():
    ids, special = make_batch(B=8, T=64)
    a = run(ids, special, seed=3)
    b = run(ids, special, seed=3)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    g = torch.Generator().manual_seed(3)
    kw = dict(mask_token_id=MASK, vocab_size=V, special_tokens_mask=special, generator=g)
    first = mask_tokens(ids, **kw)
    second = mask_tokens(ids, **kw)
    assert torch.equal(first[1], a[1])
    assert not torch.equal(first[1], second[1])  # a new mask every call (dynamic masking)


def test_input_not_modified_in_place():
    ids, special = make_batch(B=8, T=64)
    before = ids.clone()
    run(ids, special)
    assert torch.equal(ids, before)


@pytest.mark.parametrize("split", [(1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.8, 0.2, 0.0)])
def test_mask_prob_split(split):
    ids, special = make_batch(B=100, T=128)
    masked, labels = run(ids, special, mask_prob_split=split)
    sel = labels != IGNORE_INDEX
    frac_mask = ((masked == MASK) & sel).sum().item() / sel.sum().item()
    frac_same = ((masked == ids) & sel).sum().item() / sel.sum().item()
    assert abs(frac_mask - split[0]) < 0.02
    assert abs(frac_same - split[2]) < 0.02 + 0.001  # + chance that a random draw is the original


@pytest.mark.parametrize("ratio", [0.0, 0.4, 1.0])
def test_other_ratios(ratio):
    ids, special = make_batch(B=100, T=128)
    _, labels = run(ids, special, ratio=ratio)
    frac = (labels != IGNORE_INDEX).sum().item() / (~special).sum().item()
    assert abs(frac - ratio) < 0.01
    assert not (labels != IGNORE_INDEX)[special].any()


def test_bad_arguments():
    ids, special = make_batch(B=2, T=8)
    with pytest.raises(ValueError, match="special_tokens_mask"):
        run(ids, special[:, :4])
    with pytest.raises(ValueError, match="mask_prob_split"):
        run(ids, special, mask_prob_split=(0.8, 0.1, 0.2))
    with pytest.raises(ValueError, match="ratio"):
        run(ids, special, ratio=1.5)
    with pytest.raises(ValueError, match="mask_token_id"):
        mask_tokens(ids, mask_token_id=V, vocab_size=V, special_tokens_mask=special)
