"""Graded checks for lesson 22 (how does Transformer-XL see past the segment boundary?).

- 22.reach (predict, then measure): the learner measures, by changing one token at a time, the earliest
  stream position whose token can change a Transformer-XL's logits at a given position, on hidden random
  models (1-3 layers, memories shorter, equal to and longer than the segment, no memory); the reference is
  the recurrence the memory defines. The note shows the measurement on the prediction's model.
- 22.reach-prediction: that prediction, a derivation (the reach grows by one memory per layer, counted
  from each layer's segment start).
- 22.relative-scores (apply): the lesson's shift reads distances in descending order and leaves the
  future as garbage (it is masked later). The exercise takes the layout of T5/DeBERTa-style tables -
  column c = distance c, ascending, with only R distances available (larger ones clamped to R - 1, like
  Transformer-XL's clamp_len) - and asks for the (query, key) scores with the future set to 0.
- 22.memory-update (build): the memory update of a whole stack of layers, first segment (no memory yet)
  and an evaluation-time mem_len included.
- 22.written: the interview answer, graded by a person.
"""
import numbers

import torch

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect_close, expect_shape, expect_tensor, randint,
                       written)


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


# ---------------------------------------------------------------- how far back a stack of memories reaches

def earliest_position(n_layers, mem_len, segment_length, position):
    """The earliest stream position whose token can change the logits at `position`. Layer n at stream
    position t reads the states that entered it at [its segment's start - mem_len, t] (the memory, then
    the segment up to t); the earliest of those reaches furthest back through the layer below."""
    t = position
    for _ in range(n_layers):
        t = max(0, (t // segment_length) * segment_length - mem_len)
    return t


def random_xl(n_layers, mem_len, seed, vocab_size=20, d_model=16):
    """The exercise's `random_xl`: random weights, the attention's key/value and output maps scaled by 3
    so that every real dependency moves a logit by well over 1e-5 (measured: at least about 4e-4)."""
    from course_lib.transformer_xl import TransformerXL, TransformerXLConfig
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = TransformerXL(TransformerXLConfig(vocab_size, d_model, n_heads=2, n_layers=n_layers, d_ff=32,
                                                  mem_len=mem_len)).eval()
    with torch.no_grad():
        for layer in model.layers:
            layer.attn.kv_net.weight.mul_(3)
            layer.attn.out.weight.mul_(3)
    return model


PREDICTION = dict(n_layers=3, mem_len=4, segment_length=4, position=19)   # the task's setting


ONE_BACK = ("this is only one memory (or one segment) back from the position's segment, what the first layer "
            "reads; each layer above reads states that had read a memory themselves: search every earlier position")
REACH_MISTAKES = (   # (what the mistaken measurement returns, what it looks like)
    (lambda L, M, T, t, truth: t // T * T,
     "nothing before the position's own segment reaches it: carry the memory from one segment to the next "
     "(logits, memory = model(segment, memory))"),
    (lambda L, M, T, t, truth: 0,
     "every earlier token reaches it: did you run the whole stream as one segment? The model reads segments "
     "of segment_length tokens, carrying the memory"),
    (lambda L, M, T, t, truth: max(truth, t // T * T - T), ONE_BACK),
    (lambda L, M, T, t, truth: max(0, t // T * T - M), ONE_BACK),
    (lambda L, M, T, t, truth: max(0, t - L * M),
     "this is n_layers * mem_len before the position: is it what you measured? Each layer's memory starts "
     "mem_len before its own segment's start, not before the position"),
    (lambda L, M, T, t, truth: t - truth, "you returned a distance (position - earliest); return the position"),
)


def _as_position(case, got):
    if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.dtype.is_floating_point:
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, numbers.Integral):
        raise CheckFailed(f"[{case}] return the earliest position as an int, got {type(got).__name__} {got!r:.60}")
    return int(got)


def _measure(fn, case, n_layers, mem_len, T, position, seed, n_segments=None):
    model = random_xl(n_layers, mem_len, seed)
    n_segments = n_segments or position // T + 1
    stream = torch.randint(0, model.config.vocab_size, (1, n_segments * T),
                           generator=torch.Generator().manual_seed(seed))
    return _as_position(case, call_learner(case, fn, model, stream.clone(), T, position))


@exercise("22.reach", points=2, uses=("earliest_dependency", "predicted_earliest"),
          forbids=("course_lib.transformer_xl:update_memory",))
def check_reach(fn, predicted, rng):
    """The measured earliest position on hidden random models and positions equals the reference."""
    fixed = [(1, 0, 4, 6), (2, 4, 4, 13), (1, 3, 4, 9), (3, 4, 4, 19), (2, 6, 4, 17), (2, 2, 5, 14)]
    cases = list(fixed)
    for _ in range(4):
        n_layers, T = randint(rng, 1, 4), randint(rng, 1, 6)
        mem_len = randint(rng, 0, 9)
        position = randint(rng, 0, min(n_layers * (mem_len + T) + 2 * T, 36))
        cases.append((n_layers, mem_len, T, position))
    wrong = []                                                 # (case, got, truth, (L, M, T, t))
    for k, (n_layers, mem_len, T, position) in enumerate(cases):
        truth = earliest_position(n_layers, mem_len, T, position)
        n_segments = position // T + 1 + (k % 2)               # sometimes a segment after the position
        case = (f"case {k}: {n_layers} layer(s), mem_len={mem_len}, segment_length={T}, a stream of "
                f"{n_segments * T} tokens, position={position}")
        got = _measure(fn, case, n_layers, mem_len, T, position, seed=randint(rng, 0, 2**30), n_segments=n_segments)
        if got != truth:
            wrong.append((case, got, truth, (n_layers, mem_len, T, position)))
    # a fixed model whose weakest real dependency moves a logit by about 1e-3 (seed 11, measured): a
    # tolerance far above float32 rounding misses it at every run
    n_layers, mem_len, T, position = 3, 6, 4, 33
    truth = earliest_position(n_layers, mem_len, T, position)
    case = (f"case {len(cases)}: {n_layers} layers, mem_len={mem_len}, segment_length={T}, a stream of "
            f"{(position // T + 1) * T} tokens, position={position} (a model with weak links)")
    got = _measure(fn, case, n_layers, mem_len, T, position, seed=11)
    if got != truth:
        wrong.append((case, got, truth, (n_layers, mem_len, T, position)))
    if wrong:
        # a mistake explains the answers when it gives every wrong one (and differs from the truth there);
        # one wrong case alone is too little to tell a mistake from a coincidence
        for mistake, why in REACH_MISTAKES if len(wrong) > 1 else ():
            if all(got == mistake(*args, truth) for _, got, truth, args in wrong):
                case, got, truth, _ = wrong[0]
                raise CheckFailed(f"[{case}] you measured {got}, expected {truth}: {why}")
        case, got, truth, _ = wrong[0]
        why = ("too late: a change at the earliest positions moves a logit by a small but real amount (these "
               "models make it at least about 1e-4); compare every logit, with a tolerance near 1e-5"
               if got > truth else
               "too early: a change there leaves every logit at the position as it was (up to float rounding)")
        raise CheckFailed(f"[{case}] you measured {got}, expected {truth}: {why}")
    measured = _measure(fn, "the prediction's model", seed=0, **{
        "n_layers": PREDICTION["n_layers"], "mem_len": PREDICTION["mem_len"], "T": PREDICTION["segment_length"],
        "position": PREDICTION["position"]})
    said = (f"you predicted {predicted}" if isinstance(predicted, numbers.Real) and not isinstance(predicted, bool)
            else "no prediction recorded")
    return (f"{said}; your measurement on a 3-layer model with segments of 4 and mem_len 4 gives position {measured} "
            f"for position 19: {19 - measured} tokens back, though the gradient stops at every segment boundary")


@exercise("22.reach-prediction", points=1, uses="predicted_earliest")
def check_reach_prediction(value, rng):
    """The predicted earliest position for 3 layers, segments of 4, mem_len 4, position 19."""
    if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise CheckFailed("write your prediction as a number: predicted_earliest = ... (a stream position)")
    truth = earliest_position(**PREDICTION)
    if value == truth:
        return (f"you predicted {value}: each layer reaches one memory further back, counted from the start of "
                f"the segment it reads in: 19 -> 16 - 4 = 12 -> 8 -> 4")
    known = {19 - 3 * 4: "this is 3 x 4 before position 19; but each layer's memory starts mem_len before the start of "
                         "its segment, not before the position",
             16 - 4: "this is one memory back, what the first layer reads: the gradient stops at the boundary, the "
                     "information does not - the memory of layer 2 holds states that had read a memory themselves",
             16: "nothing before the segment? The memory is read in every layer",
             0: "not the whole stream: each layer adds one memory's reach, and there are 3 layers",
             19 - truth: "that is a distance; write the position (the earliest stream index)"}
    why = known.get(value, "follow one layer at a time: at layer n, the state at position t reads the states that "
                           "entered layer n from mem_len before its segment's start up to t")
    raise CheckFailed(f"you predicted {value}; {why}")


written("22.written", points=2, rubric=(
    "Segment-level recurrence: every layer caches the hidden states of the previous segment (M positions) as a "
    "memory, gradient stopped, and the next segment's queries attend over [memory; segment]; a vanilla model "
    "trained on separate segments cannot use anything before the boundary (context fragmentation)",
    "Relative positions are required: with absolute positions memory slot p and segment slot p get the same "
    "vector (in the lesson absolute positions + memory failed and even broke a within-segment copy); the score "
    "uses the distance i - j, computed for all distances in one matmul and moved into place by the relative shift",
    "The gradient stops at the boundary, the information does not: each layer reaches one memory further, so the "
    "reach grows with depth (about N x L), and a model trained with one memory length can be evaluated with a "
    "longer one",
    "Cost: the cache processes each token once, far cheaper than re-running a sliding window per token (23-72x "
    "fewer FLOPs in the lesson), but dearer per token than separate segments (it attends over M + T keys)",
))
