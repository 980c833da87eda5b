"""Graded checks for lesson 23 (RoBERTa, ALBERT, T5, XLNet: what did each change?).

The lesson counts ALBERT's parameters, trains static vs dynamic masking, measures T5's span-corruption
statistics at 15% / mean span 3, and builds XLNet's two-stream masks over a full permutation. The
exercise applies two of those changes where the lesson did not go:

- 23.t5-raw-length (apply): T5 packs encoder inputs of a fixed length. How many raw tokens must a
  sequence have so that, after span corruption, its input is exactly that long, and how long is its
  target? (Hugging Face's `compute_input_and_target_lengths` of the T5 pretraining script.) Hidden
  noise densities, span lengths and input lengths, against a brute-force reference.
- 23.t5-prediction (predict, then measure): before running it, those two numbers for a 512-token input
  at 25% noise in spans of mean length 5; the note shows the learner's function beside the prediction.
- 23.xlnet-partial (apply): XLNet predicts only the last tokens of each factorisation order ("partial
  prediction"); the others are context, read in both directions, never predicted. The two-stream masks
  of that setting, checked on every content row and on the query rows of the predicted positions
  (XLNet computes no query stream elsewhere, so any value passes there).
- 23.written: the interview answer, graded by a person.

Wrong answers are diagnosed by recomputing the result with each usual mistake made. The course_lib
helpers that build span corruption and permutation masks are forbidden.
"""
import math
import numbers

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, expect_tuple, randint, written

FORBIDS = ("course_lib.span_corruption:random_spans_noise_mask", "course_lib.span_corruption:span_corrupt",
           "course_lib.span_corruption:span_lengths", "course_lib.span_corruption:_random_segmentation",
           "course_lib.permutation_masks:two_stream_masks", "course_lib.permutation_masks:ranks")


# ---------------------------------------------------------------- T5: how many raw tokens fill an input

def _round(x, half_up):
    return math.floor(x + 0.5) if half_up else round(x)


def corrupted_lengths(n, noise_density, mean_span, *, half_up=False, eos=True, sentinels=True, dropped=True):
    """(input length, target length) of n raw tokens after T5's span corruption: round(density * n) noise
    tokens in round(noise / mean_span) spans; the input keeps the other tokens, one sentinel per span and
    an end-of-sequence token; the target holds one sentinel per span, the noise tokens and an end-of-sequence
    token. The keyword arguments make the usual mistakes."""
    noise = _round(n * noise_density, half_up)
    spans = _round(noise / mean_span, half_up)
    kept = (n - noise) if dropped else n
    return (kept + (spans if sentinels else 0) + (1 if eos else 0),
            noise + (spans if sentinels else 0) + (1 if eos else 0))


def reference_raw_length(inputs_length, noise_density, mean_span, *, largest=True, **mistake):
    """The most raw tokens whose corrupted input has at most inputs_length tokens (the input length never
    decreases as n grows), and the target length then; `largest=False` gives the fewest whose input is
    exactly inputs_length (a mistake)."""
    n = 1
    while corrupted_lengths(n + 1, noise_density, mean_span, **mistake)[0] <= inputs_length:
        n += 1
        if n > 100 * inputs_length + 100:
            return None
    if not largest:
        while n > 1 and corrupted_lengths(n - 1, noise_density, mean_span, **mistake)[0] == inputs_length:
            n -= 1
    return n, corrupted_lengths(n, noise_density, mean_span, **mistake)[1]


T5_MISTAKES = (
    (dict(eos=False), "the input and the target each end with an end-of-sequence token: count it"),
    (dict(sentinels=False), "each noise span is replaced by one sentinel in the input, and each span of the "
                            "target starts with its sentinel: count them"),
    (dict(dropped=False), "the noise tokens leave the input (T5's input shrinks; BERT's keeps its length)"),
    (dict(largest=False), "several raw lengths give the same input length (one more noise token can cost one "
                          "less kept token): return the most raw tokens that still fit"),
)


def _pair(case, got):
    got = expect_tuple(case, got, ("tokens_length", "targets_length"), lists=True)
    out = []
    for v in got:
        if isinstance(v, torch.Tensor) and v.numel() == 1 and not v.dtype.is_floating_point:
            v = v.item()
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise CheckFailed(f"[{case}] return two ints (tokens_length, targets_length), got {got!r:.80}")
        out.append(int(v))
    return tuple(out)


def _t5_cases(rng):
    fixed = [(512, 0.15, 3.0), (20, 0.15, 3.0), (512, 0.5, 1.0), (114, 0.25, 2.0), (568, 0.3, 8.0)]
    cases = list(fixed)
    for _ in range(14):
        density = [0.1, 0.15, 0.2, 0.25, 0.3, 0.5][randint(rng, 0, 6)] if randint(rng, 0, 2) else \
            round(0.05 + 0.5 * float(torch.rand(1, generator=rng)), 3)
        mean_span = [1.0, 2.0, 3.0, 5.0, 8.0, 10.0][randint(rng, 0, 6)] if randint(rng, 0, 2) else \
            round(1 + 9 * float(torch.rand(1, generator=rng)), 2)
        low = max(16, math.ceil(3 * mean_span / density))       # at least a couple of spans
        cases.append((randint(rng, low, low + 2000), density, mean_span))
    return cases


@exercise("23.t5-raw-length", points=3, uses="t5_raw_length", forbids=FORBIDS)
def check_t5_raw_length(fn, rng):
    """(tokens_length, targets_length) equal the reference on hidden input lengths, noise densities and mean
    span lengths (either rounding of halves accepted)."""
    for k, (L, density, mean_span) in enumerate(_t5_cases(rng)):
        case = f"case {k}: inputs_length={L}, noise_density={density}, mean_noise_span_length={mean_span}"
        got = _pair(case, call_learner(case, fn, L, density, mean_span))
        accepted = {reference_raw_length(L, density, mean_span, half_up=h) for h in (False, True)}
        if got in accepted:
            continue
        expected = reference_raw_length(L, density, mean_span)
        for kwargs, why in T5_MISTAKES:
            if got == reference_raw_length(L, density, mean_span, **kwargs) != expected:
                raise CheckFailed(f"[{case}] got {got}, expected {expected}: this matches a known mistake - {why}")
        n, target = got
        made = corrupted_lengths(n, density, mean_span) if n > 0 else (0, 0)
        if made[0] > L:
            why = f"{n} raw tokens make an input of {made[0]} > {L}: too many"
        elif made[0] < L or corrupted_lengths(n + 1, density, mean_span)[0] <= L:
            why = f"{n} raw tokens make an input of {made[0]}, and more raw tokens would still fit"
        else:
            why = f"the raw length is right; {n} raw tokens give a target of {made[1]} tokens"
        raise CheckFailed(f"[{case}] got {got}, expected {expected}: {why}")


PREDICT = (512, 0.25, 5.0)   # the task's setting


@exercise("23.t5-prediction", points=1, uses=("predicted_raw_tokens", "predicted_target_length", "t5_raw_length"),
          forbids=FORBIDS)
def check_t5_prediction(raw, target, fn, rng):
    """The predicted raw length (within 1%) and target length (within 2%) for a 512-token input at 25% noise
    in spans of mean length 5."""
    for value, name in ((raw, "predicted_raw_tokens"), (target, "predicted_target_length")):
        if value is None or isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
            raise CheckFailed(f"write your prediction as a number: {name} = ...")
    n, t = reference_raw_length(*PREDICT)
    if abs(raw - n) > 0.01 * n:
        known = {round(511 / 0.75): "no sentinels: each of the noise spans leaves one sentinel in the input",
                 round(512 / 0.9): "this is the lesson's setting (15% noise, mean span 3, input 90% of the raw "
                                   "length); here 25% of the tokens are noise, in spans of mean length 5",
                 round(512 / 0.75): "no sentinels: each of the noise spans leaves one sentinel in the input",
                 512: "the input is shorter than the raw text: the noise tokens leave it"}
        why = next((w for v, w in known.items() if abs(raw - v) <= 0.01 * v), "work out which fraction of the raw "
                   "tokens the input keeps: the kept tokens, one sentinel per span, and the end-of-sequence token")
        raise CheckFailed(f"you predicted {raw:g} raw tokens; not within 1% of this setting's length: {why}")
    if abs(target - t) > 0.02 * t:
        known = {round(0.25 * n + 1): "the target starts each span with its sentinel: count them",
                 round(0.25 * n): "the target holds the noise tokens, a sentinel per span and an end-of-sequence "
                                  "token"}
        why = next((w for v, w in known.items() if abs(target - v) <= 0.02 * v), "the target holds a sentinel "
                   "per span, the noise tokens and the end-of-sequence token")
        raise CheckFailed(f"you predicted a target of {target:g} tokens; not within 2% of this setting's: {why}")
    measured = ""
    try:
        got = fn(*PREDICT)
        measured = (f"; your t5_raw_length gives {tuple(int(v) for v in got)}: the input keeps "
                    f"{512 / int(got[0]):.0%} of the raw length and the target is {int(got[1]) / int(got[0]):.0%} "
                    "of it (the lesson's 15% / mean 3: 90% and 20%)")
    except Exception:  # noqa: BLE001 - the function is graded by 23.t5-raw-length
        pass
    return f"you predicted {raw:g} raw tokens and a {target:g}-token target{measured}"


# ---------------------------------------------------------------- XLNet: partial prediction

def reference_partial(order, num_predict, *, context_both_ways=True, context_sees_targets=False,
                      targets_first=False, query_self=False, content_self=True, rank_is_order=False):
    """(content, query), (T, T) bool, [i, j] = position i may attend to position j. The first
    T - num_predict positions of `order` are context: they see every context position and no target.
    The last num_predict are predicted in the order: a target's content sees the context and the targets
    up to itself, its query the context and the targets before it. Query rows of context positions are
    False (XLNet computes none). The keyword arguments make the usual mistakes."""
    T = len(order)
    order = [int(v) for v in order]
    rank = list(order) if rank_is_order else [order.index(i) for i in range(T)]
    n_context = num_predict if targets_first else T - num_predict
    is_target = [((rank[i] < n_context) if targets_first else (rank[i] >= n_context)) for i in range(T)]
    content = torch.zeros(T, T, dtype=torch.bool)
    query = torch.zeros(T, T, dtype=torch.bool)
    for i in range(T):
        for j in range(T):
            if not is_target[i]:
                if context_sees_targets:
                    content[i, j] = True
                elif not is_target[j]:
                    content[i, j] = True if context_both_ways else rank[j] <= rank[i]
                continue
            visible = (not is_target[j]) or rank[j] < rank[i]          # the context, and earlier targets
            content[i, j] = visible or (i == j and content_self)
            query[i, j] = visible or (i == j and query_self)
    return content, query


XLNET_MISTAKES = (
    (dict(context_both_ways=False), "the context positions see each other only in the order's direction (the "
                                    "full-permutation masks): they are never predicted, so XLNet lets them read "
                                    "each other in both directions"),
    (dict(context_sees_targets=True), "a context position reads a target: the target's token would leak into "
                                      "the states that predict it"),
    (dict(targets_first=True), "the predicted positions are the first num_predict of the order; XLNet predicts "
                               "the last ones, with the rest of the order as their context"),
    (dict(query_self=True), "a target's query stream sees its own token: then predicting it is copying"),
    (dict(content_self=False), "a target's content stream does not see its own token: the content stream is what "
                               "later targets read, so it must hold the token"),
    (dict(rank_is_order=True), "order[t] is the position predicted at step t; a position's rank is where it "
                               "appears in order, not order[position]"),
)


def _masks(case, got, T):
    content, query = expect_tuple(case, got, ("content_mask", "query_mask"), lists=True)
    out = []
    for m, name in ((content, "content_mask"), (query, "query_mask")):
        if not isinstance(m, torch.Tensor) or tuple(m.shape) != (T, T):
            raise CheckFailed(f"[{case}] {name} should be a (T, T) = {(T, T)} tensor of True/False, got "
                              f"{type(m).__name__} {tuple(getattr(m, 'shape', ()))}")
        m = m.detach().cpu()
        if m.dtype != torch.bool:     # 0/1 in another dtype is the same mask: the dtype is not graded
            if m.is_complex() or not bool(((m == 0) | (m == 1)).all()):
                raise CheckFailed(f"[{case}] {name} should hold True/False (or 0/1) only")
            m = m != 0
        out.append(m)
    return out


def _same(got, expected, targets):
    """Content rows all; query rows of the targets only."""
    return torch.equal(got[0], expected[0]) and torch.equal(got[1][targets], expected[1][targets])


@exercise("23.xlnet-partial", points=3, uses="partial_prediction_masks", forbids=FORBIDS)
def check_xlnet_partial(fn, rng):
    """Content rows and the predicted positions' query rows equal the reference on hidden orders and numbers
    of predicted positions (all of them, one, identity orders)."""
    fixed = [(torch.tensor([2, 0, 3, 1]), 2), (torch.tensor([1, 3, 0, 2, 4]), 1), (torch.arange(6), 3),
             (torch.tensor([4, 1, 0, 3, 2]), 5)]
    cases = list(fixed)
    for _ in range(8):
        T = randint(rng, 2, 13)
        cases.append((torch.randperm(T, generator=rng), randint(rng, 1, T + 1)))
    for k, (order, K) in enumerate(cases):
        T = len(order)
        case = f"case {k}: order {order.tolist()}, num_predict={K}"
        got = _masks(case, call_learner(case, fn, order.clone(), K), T)
        expected = reference_partial(order, K)
        rank = torch.empty(T, dtype=torch.long)
        rank[order] = torch.arange(T)
        targets = rank >= T - K
        if _same(got, expected, targets):
            continue
        if _same([m.T for m in got], expected, targets):
            raise CheckFailed(f"[{case}] your masks are transposed: entry [i, j] says whether position i (row) may "
                              "attend to position j (column)")
        for kwargs, why in XLNET_MISTAKES:
            if _same(got, reference_partial(order, K, **kwargs), targets):
                raise CheckFailed(f"[{case}] this matches a known mistake - {why}")
        bad = got[0] != expected[0]
        stream = "content"
        if not bad.any():
            bad, stream = (got[1] != expected[1]) & targets[:, None], "query"
        i, j = (int(v) for v in bad.nonzero()[0])
        k = 0 if stream == "content" else 1
        role = {p: ("a target" if targets[p] else "context") for p in (i, j)}
        raise CheckFailed(f"[{case}] {stream} stream, position {i} ({role[i]}, rank {int(rank[i])}) and position "
                          f"{j} ({role[j]}, rank {int(rank[j])}): expected {bool(expected[k][i, j])}, "
                          f"got {bool(got[k][i, j])}")


written("23.written", points=2, rubric=(
    "RoBERTa kept BERT's architecture and changed the training: no NSP, more data, larger batches, longer, "
    "dynamic masking (a fresh mask each time a sequence is used; against one fixed mask per sequence it avoids "
    "memorising the masks, against BERT's 10 fixed masks the gain is small); its only parameter change is a "
    "larger BPE vocabulary (124.6M vs 109.5M for base)",
    "ALBERT cut parameters, not computation: a factorised embedding (V x E + E x H with E = 128) and one set of "
    "layer weights shared by all layers (ALBERT-base 11.7M, about a tenth of BERT-base), FLOPs unchanged at equal "
    "depth; and SOP instead of NSP",
    "T5 is an encoder-decoder that casts every task as text to text, pretrained by span corruption: 15% of the "
    "tokens in spans of mean length 3, each span replaced by one sentinel, so the input is about 90% and the "
    "target about 20% of the original length (shorter targets, cheaper training)",
    "XLNet is autoregressive over a random factorisation order (a permutation language model): each token is "
    "predicted from tokens on both sides without [MASK]; two-stream attention (the query stream never sees its "
    "own token, the content stream does), partial prediction of the last tokens of the order, Transformer-XL's "
    "memory",
))
