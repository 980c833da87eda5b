"""Graded checks for lesson 14: several BERT pairs packed into one row - ids, segment ids, positions
that restart per pair, the block-diagonal attention mask, and BERT's input embedding of the packed row
(three lookups summed, then LayerNorm), which must give each pair the vectors it would get alone.
References written here."""
import math
import random

import torch
from torch import nn

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, expect_close, expect_shape, randint, written

_SHORTCUTS = ("course_lib.bert:pack_pair", "course_lib.bert:BertEmbeddings", "course_lib.bert:BertModel",
              "course_lib.transformer:padding_mask")


def pack_reference(pairs, cls_id=101, sep_id=102):
    ids, types, positions, examples = [], [], [], []
    for index, (a, b) in enumerate(pairs):
        part = [cls_id, *a, sep_id] + ([] if b is None else [*b, sep_id])
        n_first = len(a) + 2
        ids += part
        types += [0] * n_first + [1] * (len(part) - n_first)
        positions += list(range(len(part)))
        examples += [index] * len(part)
    return ids, types, positions, examples


def mask_reference(example_ids):
    return ((example_ids[:, :, None] == example_ids[:, None, :]) & (example_ids >= 0)[:, None, :])[:, None]


def _python_rng(rng):
    return random.Random(randint(rng, 0, 2**62))


def _random_pairs(r, n_pairs):
    pairs = []
    for _ in range(n_pairs):
        a = [r.randint(1000, 2000) for _ in range(r.randint(0, 5))]
        kind = r.random()
        b = None if kind < 0.3 else [] if kind < 0.4 else [r.randint(1000, 2000) for _ in range(r.randint(1, 5))]
        pairs.append((a, b))
    return pairs


_NAMES = ("input_ids", "token_type_ids", "position_ids", "example_ids")
_HINTS = {"token_type_ids": "per pair: 0 for [CLS] A [SEP], 1 for B [SEP], and 0 again from the next pair's [CLS]",
          "position_ids": "positions restart at 0 at every pair's [CLS] (each pair gets the positions it would have alone)",
          "example_ids": "the index of the pair each token belongs to, 0 for the first pair",
          "input_ids": "[CLS] A [SEP] B [SEP] per pair ([CLS] A [SEP] when B is None; an empty B still gets its [SEP])"}


def _check_pack(fn, pairs, case, cls_id=101, sep_id=102):
    kwargs = {} if (cls_id, sep_id) == (101, 102) else {"cls_id": cls_id, "sep_id": sep_id}
    got = fn([(list(a), None if b is None else list(b)) for a, b in pairs], **kwargs)
    if not (isinstance(got, (tuple, list)) and len(got) == 4):
        raise CheckFailed(f"[{case}] return four tensors (input_ids, token_type_ids, position_ids, example_ids), "
                          f"got {type(got).__name__}")
    for name, value, want in zip(_NAMES, got, pack_reference(pairs, cls_id, sep_id)):
        expect(isinstance(value, torch.Tensor), f"[{case}] {name} should be a torch.Tensor, got {type(value).__name__}")
        # the dtype is graded on its own (14.dtypes): here any integer dtype counts
        expect(not value.is_floating_point() and not value.is_complex() and value.dtype != torch.bool,
               f"[{case}] {name} has dtype {value.dtype}: ids, segments and positions are integers")
        if value.dim() != 1 or value.tolist() != want:
            raise CheckFailed(f"[{case}] pairs {pairs}: {name} {value.tolist()}, expected {want} - {_HINTS[name]}")


@exercise("14.pack-pairs", points=2, uses="pack_pairs", forbids=_SHORTCUTS)
def check_pack(fn, rng):
    """Random packs of 1 to 6 pairs: ids, per-pair segment ids, restarting positions, pair indices."""
    _check_pack(fn, [([7, 8], [9]), ([5], None)], "worked example")
    _check_pack(fn, [([3], [4]), ([5, 6], [7])], "two full pairs (the second starts at segment 0, position 0)")
    _check_pack(fn, [([], [])], "one pair of empty segments")
    _check_pack(fn, [([], None)], "one empty single segment")
    r = _python_rng(rng)
    for case in range(12):
        special = (101, 102) if case % 3 else (r.randint(0, 5), r.randint(6, 9))
        _check_pack(fn, _random_pairs(r, r.randint(1, 6)), f"random pack {case}", *special)


def _mask_hint(got, example_ids):
    real = (example_ids >= 0)[:, None, :, None]
    if torch.equal(got & real, ~mask_reference(example_ids) & real):
        return " - the mask is inverted: in this course True means *may attend* (PyTorch's key_padding_mask means the opposite)"
    ids = example_ids[:, None, :, None], example_ids[:, None, None, :]
    pad_q, pad_k = ids[0] < 0, ids[1] < 0
    cross = (ids[0] != ids[1]) & ~pad_q & ~pad_k
    if (got & cross).any():
        return " - tokens of different pairs attend to each other: the mask must be block-diagonal (same pair only)"
    if (got & pad_k & ~pad_q).any():
        return " - padding keys (example id -1) are attended to: a real token never sees padding"
    return ""


def _check_mask(fn, example_ids, case):
    got = fn(example_ids.clone())
    expected = mask_reference(example_ids)
    expect_shape(case, got, expected.shape, "the mask")
    # the dtype is graded on its own (14.dtypes): here a 0/1 mask of any dtype counts, True/1 = may attend
    expect(got.dtype == torch.bool or bool(((got == 0) | (got == 1)).all()),
           f"[{case}] the mask should hold True/False (or 1/0), got other values")
    got = got.bool()
    # a padding query's row is not checked: its output is thrown away, so any convention is valid
    real_query = (example_ids >= 0)[:, None, :, None].expand_as(expected)
    if not torch.equal(got[real_query], expected[real_query]):
        b, _, i, j = ((got != expected) & real_query).nonzero()[0].tolist()
        raise CheckFailed(f"[{case}] example_ids {example_ids.tolist() if example_ids.numel() <= 40 else '...'}: "
                          f"mask[{b}, 0, {i}, {j}] is {bool(got[b, 0, i, j])}, expected {bool(expected[b, 0, i, j])} "
                          f"(query {i} in pair {int(example_ids[b, i])}, key {j} in pair {int(example_ids[b, j])})"
                          + _mask_hint(got, example_ids))


def _packed_rows(r, B, T):
    rows = []
    for _ in range(B):
        row = []
        for index in range(r.randint(1, 5)):
            row += [index] * r.randint(1, 5)
        row = row[:T] + [-1] * max(0, T - len(row))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.long)


@exercise("14.packed-mask", points=2, uses="packed_attention_mask", forbids=_SHORTCUTS)
def check_mask(fn, rng):
    """Block-diagonal (B, 1, T, T) mask: same pair only, padding (-1) never attended (padding queries: any row)."""
    _check_mask(fn, torch.tensor([[0, 0, 1, -1]]), "worked example")
    _check_mask(fn, torch.tensor([[0, 0, 1, 1, 1], [0, 1, 1, 2, 2]]), "pairs side by side, no padding")
    _check_mask(fn, torch.tensor([[0, 0, 0, -1, -1], [-1, -1, -1, -1, -1]]), "an all-padding row")
    _check_mask(fn, torch.tensor([[0]]), "T = 1")
    r = _python_rng(rng)
    for case in range(10):
        B, T = r.randint(1, 4), r.randint(2, 20)
        _check_mask(fn, _packed_rows(r, B, T), f"random batch {case}: B={B}, T={T}")


@exercise("14.dtypes", points=1, uses=("pack_pairs", "packed_attention_mask"), forbids=_SHORTCUTS)
def check_dtypes(pack, mask_fn, rng):
    """Conformance: pack_pairs returns torch.long tensors (what nn.Embedding takes), the mask torch.bool."""
    got = call_learner("dtypes", pack, [([7, 8], [9]), ([5], None)])
    expect(isinstance(got, (tuple, list)) and len(got) == 4 and all(isinstance(t, torch.Tensor) for t in got),
           "[pack_pairs] return four tensors (input_ids, token_type_ids, position_ids, example_ids)")
    for name, value in zip(_NAMES, got):
        expect(value.dtype == torch.long, f"[pack_pairs] {name} has dtype {value.dtype}, expected torch.long "
                                          "(what nn.Embedding and the course's models take)")
    mask = call_learner("dtypes", mask_fn, torch.tensor([[0, 0, 1, -1]]))
    expect(isinstance(mask, torch.Tensor), f"[packed_attention_mask] return a tensor, got {type(mask).__name__}")
    expect(mask.dtype == torch.bool, f"[packed_attention_mask] the mask has dtype {mask.dtype}, expected torch.bool "
                                     "(the course's attention takes a boolean mask, True = may attend)")


# ---------------------------------------------------------------- 14.packed-embeddings

def _embeddings(rng, V, P, S, H):
    """BERT's input-embedding members with random weights (no forward: the learner writes it)."""
    emb = nn.ModuleDict({"word_embeddings": nn.Embedding(V, H), "position_embeddings": nn.Embedding(P, H),
                         "token_type_embeddings": nn.Embedding(S, H),
                         "LayerNorm": nn.LayerNorm(H, eps=[1e-12, 1e-5][randint(rng, 0, 2)])}).double()
    with torch.no_grad():
        for name, p in emb.named_parameters():
            p.copy_(torch.randn(p.shape, generator=rng, dtype=torch.float64) * (0.5 if "LayerNorm" in name else 1.0)
                    + (1.0 if name == "LayerNorm.weight" else 0.0))
    return emb.eval()


def embeddings_reference(emb, ids, types, positions, variant="right"):
    word, pos, seg = emb.word_embeddings(ids), emb.position_embeddings(positions), emb.token_type_embeddings(types)
    ln = emb.LayerNorm
    if variant == "arange-positions":
        pos = emb.position_embeddings(torch.arange(ids.shape[-1]).expand_as(ids))
    if variant == "no-segment":
        seg = torch.zeros_like(seg)
    if variant == "scaled":
        word = word * math.sqrt(word.shape[-1])
    if variant == "norm-each":
        return ln(word) + ln(pos) + ln(seg)
    summed = word + pos + seg                                                 # (B, T, H)
    if variant == "no-layernorm":
        return summed
    if variant.startswith("no-affine"):     # with the LayerNorm's eps, or BERT's 1e-12, or PyTorch's 1e-5
        eps = {"no-affine": ln.eps, "no-affine-bert-eps": 1e-12, "no-affine-torch-eps": 1e-5}[variant]
        return nn.functional.layer_norm(summed, summed.shape[-1:], eps=eps)
    return ln(summed)


_EMBED_HINTS = {
    "arange-positions": "the positions are 0 .. T-1 along the row: use position_ids, which restart at every pair's [CLS]",
    "no-segment": "the segment (token_type) embedding is missing from the sum",
    "no-layernorm": "that is the plain sum: BERT applies its LayerNorm to the sum",
    "norm-each": "each embedding was normalised on its own: BERT adds the three, then applies one LayerNorm to the sum",
    **{variant: "normalised without the LayerNorm's own weight and bias: call emb.LayerNorm"
       for variant in ("no-affine", "no-affine-bert-eps", "no-affine-torch-eps")},
    "scaled": "the word embeddings were multiplied by sqrt(hidden): BERT adds them unscaled (the x sqrt(d_model) is "
              "the original Transformer's, lesson 06)",
}


def _check_embed(fn, emb, ids, types, positions, case):
    with torch.no_grad():
        got = call_learner(case, fn, emb, ids.clone(), types.clone(), positions.clone())
        expected = embeddings_reference(emb, ids, types, positions)
    expect_shape(case, got, expected.shape, "packed_embeddings(...)")
    tol = 1e-6 * max(1.0, float(expected.abs().max()))
    if not torch.allclose(got.detach().double(), expected, atol=tol, rtol=1e-6):
        for variant, hint in _EMBED_HINTS.items():
            with torch.no_grad():
                wrong = embeddings_reference(emb, ids, types, positions, variant)
            if torch.allclose(got.detach().double(), wrong, atol=tol, rtol=1e-6) \
                    and not torch.allclose(wrong, expected, atol=tol, rtol=1e-6):
                raise CheckFailed(f"[{case}] your vectors differ from BERT's input embedding - {hint}")
    expect_close(case, got, expected, atol=tol, rtol=1e-6, name="packed_embeddings(...)")
    return got.detach().double()


@exercise("14.packed-embeddings", points=2, uses="packed_embeddings", forbids=_SHORTCUTS)
def check_packed_embeddings(fn, rng):
    """The packed row's input embedding: every pair gets exactly the vectors it would get alone."""
    r = _python_rng(rng)
    for trial in range(6):
        V, P, H = r.randint(20, 60), r.randint(40, 64), r.randint(4, 24)
        emb = _embeddings(rng, V, P, 2, H)
        rows, alone = [], []
        for _ in range(r.randint(1, 3)):
            pairs = [([r.randint(3, V - 1) for _ in range(r.randint(0, 4))],
                      None if r.random() < 0.3 else [r.randint(3, V - 1) for _ in range(r.randint(0, 4))])
                     for _ in range(r.randint(1, 4))]
            rows.append(pack_reference(pairs, cls_id=1, sep_id=2))
            alone.append(pairs)
        T = max(len(row[0]) for row in rows)
        pad = lambda values, fill: torch.tensor([v + [fill] * (T - len(v)) for v in values], dtype=torch.long)
        ids, types, positions = (pad([row[k] for row in rows], 0) for k in range(3))
        case = f"trial {trial}: {len(rows)} packed rows of up to {T} tokens, hidden size {H}"
        got = _check_embed(fn, emb, ids, types, positions, case)
        # the property the packing needs: a pair in a row gets the vectors it gets alone, at positions 0..
        for b, pairs in enumerate(alone):
            start = 0
            for k, pair in enumerate(pairs):
                one = [torch.tensor([v], dtype=torch.long) for v in pack_reference([pair], 1, 2)[:3]]
                case_alone = f"{case}, row {b}, pair {k} packed alone"
                single = _check_embed(fn, emb, *one, case_alone)
                n = one[0].shape[1]
                expect(torch.allclose(got[b, start:start + n], single[0], atol=1e-6 * max(1.0, float(single.abs().max()))),
                       f"[{case}] row {b}, pair {k}: its vectors in the packed row differ from its vectors alone")
                start += n


written("14.written", points=2, rubric=(
    "the input is [CLS] A [SEP] B [SEP]: token ids, segment ids (0 for [CLS] A [SEP], 1 for B [SEP]) and "
    "positions 0..T-1, each looking up its own learned table; [CLS] is first so that a classifier head reads its "
    "final vector (a good sentence vector only when an objective trains it to be one)",
    "the three rows are added, then LayerNorm'd (and dropout); the sum is one linear layer applied to the three "
    "concatenated one-hot vectors, so concatenate-then-project has the same power: the real question is whether "
    "the parts can be told apart",
    "measured: linear probes read token, position and segment back even from random tables with the same norms "
    "(so recoverability comes from 384 dimensions, not training); the trained tables keep positions in a few "
    "directions (12 of 384 hold about 96% of their variance) that the token table largely avoids",
    "neighbouring positions are learned to be similar, so the exact position is a little harder to read (near "
    "misses), not lost; the limits 512 positions and 2 segments are the row counts of the released tables",
))
