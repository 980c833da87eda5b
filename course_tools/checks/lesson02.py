"""Graded checks for lesson 02 (what goes wrong without the Q/K/V projections?), applied where the
lesson did not go: instead of training, the learner *builds* the bilinear form x_i W_Q W_Kᵀ x_jᵀ that
sends every token to a chosen other token, for any relation (mutual pairs, cycles, many tokens to one),
on token vectors whose norms differ a hundredfold - and then finds how far one shared matrix
(W_Q = W_K) can get on mutual pairs: predicted (a bound that follows from Cauchy-Schwarz) and reached.

The checks are properties (softmax weight on the target, strict arg-max counts), so any d_k and any
valid construction passes. Feedback names what the learner's scores look like (symmetric, self-
preferring, the relation run backwards, a winner without margin)."""
import math

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, randint, written

MIN_WEIGHT = 0.9   # what "attends to its target" means


def _tokens(rng, T, d_model, one_hot=False):
    """(T, d_model) token vectors, linearly independent rows whose norms span 0.1 to 10."""
    if one_hot:
        return torch.eye(T, d_model)
    for _ in range(50):   # directions far from dependent: the norms alone set the conditioning (<= 100x)
        x = torch.randn(T, d_model, generator=rng)
        x = x / x.norm(dim=-1, keepdim=True)
        if torch.linalg.cond(x.double()) < 10:
            break
    norms = torch.exp((torch.rand(T, generator=rng) * 2 - 1) * math.log(10))
    return x * norms[:, None]


def _pairs_target(rng, T):
    """Mutual pairs (T even): target[a] = b and target[b] = a."""
    order = torch.randperm(T, generator=rng)
    target = torch.empty(T, dtype=torch.long)
    target[order[0::2]], target[order[1::2]] = order[1::2], order[0::2]
    return target


def _relation(rng, kind, T):
    if kind == "mutual pairs":
        return _pairs_target(rng, T)
    if kind == "one cycle through every token":
        order = torch.randperm(T, generator=rng)
        target = torch.empty(T, dtype=torch.long)
        target[order] = order.roll(-1)
        return target
    if kind == "every token to token 0 (and 0 to 1)":
        target = torch.zeros(T, dtype=torch.long)
        target[0] = 1
        return target
    target = torch.randint(0, T - 1, (T,), generator=rng)             # a random function, never to itself
    return target + (target >= torch.arange(T)).long()


def _projections(case, got, d_model):
    expect(isinstance(got, (tuple, list)) and len(got) == 2,
           f"[{case}] return a tuple (W_Q, W_K), got {type(got).__name__}")
    w_q, w_k = got
    for name, w in (("W_Q", w_q), ("W_K", w_k)):
        expect(isinstance(w, torch.Tensor) and w.dim() == 2,
               f"[{case}] {name} should be a 2-D tensor (d_model, d_k), got "
               f"{getattr(w, 'shape', type(w).__name__)}")
        expect(w.shape[0] == d_model, f"[{case}] {name} has shape {tuple(w.shape)}: it multiplies x from the "
                                      f"right (q = x @ W_Q), so its first dimension is d_model = {d_model}")
        expect(bool(torch.isfinite(w).all()), f"[{case}] {name} contains NaN or inf")
    expect(w_q.shape[1] == w_k.shape[1], f"[{case}] W_Q {tuple(w_q.shape)} and W_K {tuple(w_k.shape)}: q and k "
                                         "need the same width d_k for q·k")
    return w_q.detach().double(), w_k.detach().double()


def attention_weights(x, w_q, w_k):
    """softmax(q kᵀ / √d_k) in float64, with q = x W_Q, k = x W_K; also the scores."""
    q, k = x.double() @ w_q, x.double() @ w_k                        # (T, d_k)
    scores = q @ k.T / math.sqrt(w_q.shape[1])                       # (T, T)
    return scores.softmax(dim=-1), scores


def _diagnose(case, weights, scores, target, passes_one_hot):
    rows = torch.arange(len(target))
    on_target = weights[rows, target]
    bad = int(torch.nonzero(on_target < MIN_WEIGHT)[0, 0])
    best = int(weights[bad].argmax())
    said = (f"[{case}] token {bad} puts {on_target[bad]:.2f} of its weight on its target, token "
            f"{int(target[bad])}")
    scale = scores.abs().max().clamp_min(1e-12)
    symmetric = torch.allclose(scores, scores.T, atol=1e-6 * float(scale), rtol=0)
    if symmetric and torch.linalg.eigvalsh((scores + scores.T) / 2).min() >= -1e-6 * float(scale):
        raise CheckFailed(f"{said} - your scores form a Gram matrix (symmetric, no negative eigenvalue: "
                          "what W_Q = W_K gives): then S_ij ≤ max(S_ii, S_jj), and of two tokens that target "
                          "each other one always prefers itself")
    if best == int(target[bad]):
        raise CheckFailed(f"{said}: the target wins, but not by enough - the softmax needs a wider margin "
                          "between the target's score and the others")
    if passes_one_hot:
        raise CheckFailed(f"{said} - your construction works for one-hot tokens (x = I) but not for these "
                          "vectors: q = x @ W_Q and k = x @ W_K, so the projections must work through x")
    if best == bad:
        raise CheckFailed(f"{said} and {weights[bad, bad]:.2f} on itself: its own score is the largest, as "
                          "in raw attention")
    if int(target[best]) == bad:
        raise CheckFailed(f"{said} and {weights[bad, best]:.2f} on token {best}, which has token {bad} as "
                          "*its* target: the relation runs backwards (queries and keys swapped?)")
    raise CheckFailed(f"{said}; it attends most to token {best} ({weights[bad, best]:.2f})")


@exercise("02.look-elsewhere", points=3, uses="look_elsewhere")
def check_look_elsewhere(fn, rng):
    """Every token puts at least 0.9 of its softmax weight on its chosen target (any relation, any x)."""
    plans = [(4, 4, "mutual pairs", True), (6, 8, "mutual pairs", False), (5, 5, "one cycle through every token", False),
             (6, 9, "every token to token 0 (and 0 to 1)", False)]
    for _ in range(3):
        T = randint(rng, 3, 9)
        plans.append((T, T + randint(rng, 0, 6), "a random relation", False))
    worst = 1.0
    for T, d_model, kind, one_hot in plans:
        x = _tokens(rng, T, d_model, one_hot)
        target = _relation(rng, kind, T)
        case = (f"{T} tokens of width {d_model}" + (" (one-hot)" if one_hot else ", norms from 0.1 to 10")
                + f", {kind}: target {target.tolist()}")
        w_q, w_k = _projections(case, call_learner(case, fn, x.clone(), target.clone()), d_model)
        weights, scores = attention_weights(x, w_q, w_k)
        on_target = weights[torch.arange(T), target]
        if (on_target >= MIN_WEIGHT).all():
            worst = min(worst, float(on_target.min()))
            continue
        passes_one_hot = False
        if not one_hot:
            try:
                eye = torch.eye(T, d_model)
                q1, k1 = _projections(case, fn(eye, target.clone()), d_model)
                passes_one_hot = bool((attention_weights(eye, q1, k1)[0][torch.arange(T), target] >= MIN_WEIGHT).all())
            except Exception:  # noqa: BLE001 - only a diagnosis
                passes_one_hot = False
        _diagnose(case, weights, scores, target, passes_one_hot)
    return f"every token put at least {worst:.3f} of its weight on its target"


# ---------------------------------------------------------------- Task 2: one shared matrix

N_PAIRS = 5    # the prediction's setting: 10 tokens in 5 mutual pairs


def wins(scores, partner):
    """Tokens whose score for their partner is strictly above every other score in their row (self included)."""
    T = len(partner)
    margin = 1e-6 * float(scores.abs().max().clamp_min(1e-12))
    others = scores.masked_fill(torch.nn.functional.one_hot(partner, T).bool(), float("-inf"))
    return scores[torch.arange(T), partner] > others.amax(dim=-1) + margin


@exercise("02.shared-bound", points=1, uses="predicted_shared_wins")
def check_shared_bound(predicted, rng=None):
    """With q = k = xW, at most one token per mutual pair can score its partner above itself."""
    case = "your prediction"
    if isinstance(predicted, torch.Tensor) and predicted.numel() == 1:
        predicted = predicted.item()
    expect(isinstance(predicted, (int, float)) and not isinstance(predicted, bool),
           f"[{case}] predicted_shared_wins should be a number, got {type(predicted).__name__}")
    if predicted == N_PAIRS:
        return (f"you predicted {predicted:g} of {2 * N_PAIRS}: one per pair - S_ab ≤ max(S_aa, S_bb), so the "
                "token with the shorter xW can win, its partner cannot")
    if predicted >= 2 * N_PAIRS:
        why = ("that is what W_Q ≠ W_K reaches (Task 1); with one matrix the scores S = (xW)(xW)ᵀ are a Gram "
               "matrix - compare S_ab with S_aa and S_bb")
    elif predicted < N_PAIRS:
        why = ("lesson 02's plural/singular pairs: a shorter vector pointing along a longer one scores it above "
               "itself, so in every pair one token can win")
    else:
        why = "in a pair a ↔ b, both winning needs S_ab > S_aa and S_ab > S_bb: what does Cauchy-Schwarz allow?"
    raise CheckFailed(f"[{case}] you predicted {predicted:g} of {2 * N_PAIRS} - {why}")


def _pairs(rng, n_pairs):
    order = torch.randperm(2 * n_pairs, generator=rng)
    return order.view(n_pairs, 2)                                         # (n_pairs, 2): a ↔ b


@exercise("02.shared-best", points=2, uses="best_shared")
def check_shared_best(fn, rng):
    """One matrix W for queries and keys that makes one token of every mutual pair prefer its partner."""
    plans = [(2, 4, True), (N_PAIRS, 2 * N_PAIRS, False)]
    for _ in range(3):
        n = randint(rng, 1, 5)
        plans.append((n, 2 * n + randint(rng, 0, 5), False))
    for n_pairs, d_model, one_hot in plans:
        T = 2 * n_pairs
        x = _tokens(rng, T, d_model, one_hot)
        pairs = _pairs(rng, n_pairs)
        partner = torch.empty(T, dtype=torch.long)
        partner[pairs[:, 0]], partner[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
        case = (f"{T} tokens of width {d_model}" + (" (one-hot)" if one_hot else ", norms from 0.1 to 10")
                + f", pairs {pairs.tolist()}")
        got = call_learner(case, fn, x.clone(), pairs.clone())
        expect(isinstance(got, torch.Tensor) and got.dim() == 2 and got.shape[0] == d_model,
               f"[{case}] return one matrix W of shape (d_model, d_k) = ({d_model}, ...), q = k = x @ W; got "
               f"{getattr(got, 'shape', type(got).__name__)}")
        expect(bool(torch.isfinite(got).all()), f"[{case}] W contains NaN or inf")
        y = x.double() @ got.detach().double()                            # (T, d_k): q = k = y
        won = wins(y @ y.T, partner)
        lost = [p for p in pairs.tolist() if not won[p].any()]
        if lost:
            a, b = lost[0]
            raise CheckFailed(f"[{case}] {int(won.sum())} of {T} tokens prefer their partner, the most is "
                              f"{n_pairs} (one per pair): in pair ({a}, {b}) neither token scores its partner "
                              "strictly above itself and every other token")
    return (f"one token of every pair prefers its partner ({N_PAIRS} of {2 * N_PAIRS}), the most a shared "
            "matrix allows; Task 1's W_Q ≠ W_K gets all of them")


written("02.written", points=2, rubric=(
    "without projections the scores are the Gram matrix XXᵀ/√d: symmetric (i is drawn to j exactly as j to i) "
    "and, by Cauchy-Schwarz, S_ij ≤ max(S_ii, S_jj)",
    "so attention can only follow raw similarity: stuck on the token itself when norms are large, nearly "
    "uniform when they are small (MiniLM's word table: 0.033 against 1/32)",
    "a token cannot attend to another by its role (a partner, a successor): the lookup tasks stay near chance "
    "without projections and reach 1.00 with them",
    "W_Q and W_K must differ: the score x_iᵀ W_Qᵀ W_K x_j can be asymmetric and indefinite; one shared "
    "matrix is still a Gram matrix and fails like raw attention",
    "W_V separately chooses what is copied, independently of who is attended",
))
