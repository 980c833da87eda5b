"""Graded checks for lesson 22: Transformer-XL's relative scores laid out another way, and the
memories of every layer.

The lesson's shift reads distances in descending order and leaves the future as garbage (it is
masked later). The exercise takes the layout of T5/DeBERTa-style tables - column c = distance c,
ascending, with only R distances available (larger ones clamped to R - 1, like Transformer-XL's
clamp_len) - and asks for the (query, key) scores with the future set to 0, and the memory update of
a whole stack of layers, first segment (no memory yet) and an evaluation-time mem_len included."""
import torch

from ..grading import CheckFailed, exercise, expect_close, expect_shape, expect_tensor, randint


def reference_scores(x, memory_length):
    """Loops: y[..., i, j] = x[..., i, min(M + i - j, R - 1)] for j <= M + i, else 0."""
    *lead, Q, R = x.shape
    K = memory_length + Q
    flat = x.reshape(-1, Q, R)
    out = torch.zeros(flat.shape[0], Q, K, dtype=x.dtype)
    for i in range(Q):
        for j in range(K):
            d = memory_length + i - j
            if d >= 0:
                out[:, i, j] = flat[:, i, min(d, R - 1)]
    return out.reshape(*lead, Q, K)


def _descending(x, memory_length):
    """The lesson's layout read by mistake: column c = distance R - 1 - c."""
    return reference_scores(x.flip(-1), memory_length)


def _no_memory_offset(x, memory_length):
    *lead, Q, R = x.shape
    K = memory_length + Q
    out = torch.zeros(*lead, Q, K, dtype=x.dtype)
    for i in range(Q):
        for j in range(K):
            d = i - j
            if d >= 0:
                out[..., i, j] = x[..., i, min(d, R - 1)]
    return out


@exercise("22.relative-scores", points=3, uses="relative_scores",
          forbids=("course_lib.transformer_xl:rel_shift", "course_lib.transformer_xl:rel_shift_by_index"))
def check_relative_scores(fn, rng):
    """Every entry: the clamped distance's score where the key is visible, 0 in the future; any
    leading dimensions; no memory, one query, fewer distances than keys."""
    fixed = [((3,), 2, 6), ((1,), 0, 1), ((2, 3), 4, 3), ((5,), 0, 5), ((2,), 3, 9)]   # (lead+Q, M, R)
    for case in range(10):
        if case < len(fixed):
            shape, M, R = fixed[case]
            lead, Q = shape[:-1], shape[-1]
        else:
            n_lead = randint(rng, 0, 3)
            lead = tuple(int(s) for s in torch.randint(1, 4, (n_lead,), generator=rng))
            Q = randint(rng, 1, 8)
            M = randint(rng, 0, 9)
            R = randint(rng, 1, M + Q + 3)
        dtype = torch.float64 if case == 6 else torch.float32
        x = torch.randn(*lead, Q, R, generator=rng, dtype=torch.float64).to(dtype)
        name = f"case {case}: x {tuple(x.shape)} (Q={Q}, R={R} distances), memory_length={M}, so K={M + Q}"
        got = expect_tensor(name, fn(x.clone(), M), "relative_scores(x, memory_length)")
        expected = reference_scores(x, M)
        expect_shape(name, got, expected.shape, "relative_scores(x, memory_length)")
        got = got.detach().to(dtype)
        if torch.allclose(got, expected, atol=1e-6):
            continue
        future = torch.ones(Q, M + Q, dtype=torch.bool).triu(M + 1)
        if torch.allclose(got.masked_fill(future, 0), expected, atol=1e-6):
            raise CheckFailed(f"[{name}] the visible entries are right but the future (key j > M + i) "
                              f"is not 0")
        for wrong, message in ((_descending(x, M), "you read the columns in descending order (the lesson's "
                                "layout); here column c holds distance c"),
                               (_no_memory_offset(x, M), "the distance of query i to key j is M + i - j: "
                                "query i sits at key position M + i, after the memory")):
            if torch.allclose(got, wrong, atol=1e-6):
                raise CheckFailed(f"[{name}] {message}")
        bad = ((got - expected).abs() > 1e-6).reshape(-1, Q, M + Q).any(0)
        i, j = (int(v) for v in torch.nonzero(bad)[0])
        d = M + i - j
        want = "0 (the future)" if d < 0 else (f"x[..., {i}, {min(d, R - 1)}] (distance {d}"
                                               + (f", clamped to R - 1 = {R - 1})" if d > R - 1 else ")"))
        raise CheckFailed(f"[{name}] query {i}, key {j} should hold {want}; got "
                          f"{got.reshape(-1, Q, M + Q)[0, i, j].item():.4g}, expected "
                          f"{expected.reshape(-1, Q, M + Q)[0, i, j].item():.4g} (first batch entry)")


def _reference_memories(memories, layer_inputs, mem_len):
    out = []
    for l, h in enumerate(layer_inputs):
        both = h if memories is None else torch.cat([memories[l], h], dim=1)
        out.append(both[:, both.shape[1] - min(mem_len, both.shape[1]):].detach())
    return out


@exercise("22.memory-update", points=2, uses="update_memories")
def check_memory_update(fn, rng):
    """Per layer, the last mem_len positions of [memory; input], detached; None = first segment;
    mem_len may differ from the memory's length (evaluation); mem_len = 0 gives empty memories."""
    fixed = [(None, 5, 3), (4, 5, 0), (3, 2, 20), (6, 4, 6), (None, 3, 0), (2, 3, 8)]   # (M, T, mem_len)
    for case in range(9):
        if case < len(fixed):
            M, T, mem_len = fixed[case]
        else:
            M = randint(rng, 0, 10)
            T = randint(rng, 1, 8)
            mem_len = randint(rng, 0, 16)
        L = randint(rng, 1, 4)
        B, d = randint(rng, 1, 3), randint(rng, 2, 6)
        memories = None if M is None else [torch.randn(B, M, d, generator=rng) for _ in range(L)]
        # the layer inputs come out of the model: they require grad
        inputs = [torch.randn(B, T, d, generator=rng).requires_grad_(True) for _ in range(L)]
        name = (f"case {case}: {L} layers, memories {'None' if M is None else (B, M, d)}, "
                f"layer_inputs {(B, T, d)}, mem_len={mem_len}")
        got = fn(None if memories is None else [m.clone() for m in memories], [h for h in inputs], mem_len)
        if not isinstance(got, (list, tuple)) or len(got) != L:
            raise CheckFailed(f"[{name}] return a list with one memory per layer ({L}), got "
                              f"{type(got).__name__}{f' of length {len(got)}' if hasattr(got, '__len__') else ''}")
        expected = _reference_memories(memories, inputs, mem_len)
        for l, (g, e) in enumerate(zip(got, expected)):
            g = expect_tensor(name, g, f"the memory of layer {l}")
            if mem_len == 0 and tuple(g.shape) != tuple(e.shape):
                raise CheckFailed(f"[{name}] mem_len=0 must give an empty memory of shape {tuple(e.shape)}, "
                                  f"got {tuple(g.shape)} - careful: x[:, -0:] is the whole of x")
            if tuple(g.shape) == tuple(e.shape) and e.numel():
                both = inputs[l].detach() if memories is None else torch.cat([memories[l], inputs[l].detach()], 1)
                if torch.equal(g.detach(), both[:, :e.shape[1]]) and not torch.equal(g.detach(), e):
                    raise CheckFailed(f"[{name}] layer {l}: you kept the first mem_len positions; keep the "
                                      f"last ones (the most recent states)")
            expect_close(name, g.detach(), e, atol=0, rtol=0, name=f"the memory of layer {l}")
            if g.requires_grad:
                raise CheckFailed(f"[{name}] the memory of layer {l} is still connected to the graph "
                                  f"(requires_grad): .detach() it, or the next segment's loss back-"
                                  f"propagates into this segment and keeps its graph alive")
