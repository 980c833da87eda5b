"""Graded checks for lesson 22: Transformer-XL's relative shift and memory update."""
import torch

from course_lib.transformer_xl import memory_mask, rel_shift, update_memory
from ..grading import CheckFailed, exercise, expect_close, expect_shape, expect_tensor


def _shift_case(rng):
    """Scores (*lead, Q, K) with K >= Q: random leading dims, sometimes no memory (K == Q)."""
    n_lead = int(torch.randint(0, 3, (1,), generator=rng))
    lead = tuple(int(s) for s in torch.randint(1, 4, (n_lead,), generator=rng))
    Q = int(torch.randint(1, 9, (1,), generator=rng))
    M = int(torch.randint(0, 11, (1,), generator=rng))
    return torch.randn(*lead, Q, Q + M, generator=rng)


@exercise("22.rel-shift", points=3, uses="rel_shift")
def check_rel_shift(fn, rng):
    """y[..., i, j] = x[..., i, j + Q - 1 - i] wherever key j is visible to query i (j <= i + K - Q)."""
    shapes = [(4, 4), (1, 1), (2, 3, 5, 9)]
    for case in range(8):
        x = torch.randn(*shapes[case], generator=rng) if case < len(shapes) else _shift_case(rng)
        Q, K = x.shape[-2], x.shape[-1]
        name = f"case {case}: x of shape {tuple(x.shape)} (Q={Q} queries, K={K} keys, memory {K - Q})"
        got = expect_tensor(name, fn(x.clone()), "rel_shift(x)")
        expect_shape(name, got, x.shape, "rel_shift(x)")
        visible = memory_mask(Q, K - Q)                    # only these entries are ever used
        expected = rel_shift(x)
        got_visible = got.detach().to(x.dtype).masked_fill(~visible, 0)
        want_visible = expected.masked_fill(~visible, 0)
        if not torch.allclose(got_visible, want_visible, atol=1e-6) and Q > 1:
            if torch.allclose(got_visible, x.masked_fill(~visible, 0), atol=1e-6):
                raise CheckFailed(f"[{name}] you returned x unshifted: row i must move left by "
                                  f"Q - 1 - i columns so that column j holds distance (i + K - Q) - j")
            wrong = ((got_visible - want_visible).abs() > 1e-6).reshape(-1, Q, K).any(0)
            i, j = (int(v) for v in torch.nonzero(wrong)[0])
            raise CheckFailed(f"[{name}] query i={i}, key j={j} should hold x[..., {i}, {j + Q - 1 - i}] "
                              f"(distance {i + K - Q - j}); row i moves left by Q - 1 - i = {Q - 1 - i} "
                              f"columns")
        expect_close(name, got_visible, want_visible, atol=1e-6,
                     name="rel_shift(x) on the visible entries (j <= i + K - Q)")


@exercise("22.memory-update", points=2, uses="update_memory")
def check_memory_update(fn, rng):
    """The last mem_len positions of [memory; hidden]; mem_len = 0 gives an empty memory."""
    fixed = [(0, 5, 4), (6, 5, 0), (3, 2, 20), (7, 4, 7)]   # (M, T, mem_len)
    for case in range(8):
        if case < len(fixed):
            M, T, mem_len = fixed[case]
        else:
            M, T, mem_len = (int(v) for v in (torch.randint(0, 12, (1,), generator=rng),
                                              torch.randint(1, 9, (1,), generator=rng),
                                              torch.randint(0, 20, (1,), generator=rng)))
        B, d = int(torch.randint(1, 4, (1,), generator=rng)), int(torch.randint(2, 9, (1,), generator=rng))
        memory, hidden = torch.randn(B, M, d, generator=rng), torch.randn(B, T, d, generator=rng)
        name = f"case {case}: memory {(B, M, d)}, hidden {(B, T, d)}, mem_len={mem_len}"
        got = expect_tensor(name, fn(memory.clone(), hidden.clone(), mem_len), "update_memory(...)")
        expected = update_memory(memory, hidden, mem_len)
        if mem_len == 0 and tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] mem_len=0 must give an empty memory of shape "
                              f"{tuple(expected.shape)}, got {tuple(got.shape)} - careful: "
                              f"x[:, -0:] is the whole of x, not nothing")
        expect_close(name, got, expected, atol=0, rtol=0, name="update_memory(...)")
