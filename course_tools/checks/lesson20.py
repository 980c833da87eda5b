"""Graded checks for lesson 20 (BERT vs GPT vs ELMo: what does "bidirectional" mean?).

"Bidirectional" is about which tokens a position's output may depend on. The exercise:

- 20.dependencies (predict, then measure): the learner measures, by changing one token at a time, which
  input tokens each output position of a model depends on, on hidden random models (GPT, a backward LM,
  BERT, ELMo's predictive states, a prefix LM, two layers of a local window); the note shows the
  measured counts beside the prediction.
- 20.links-prediction: that prediction, a derivation (how many (output, input) pairs each family links).
- 20.prefix-lm-mask, 20.padding (apply): a prefix-LM (UniLM) mask over padded rows - bidirectional over
  a prefix of each row's real tokens, causal after it, padding on the left, on the right or in gaps.
- 20.elmo-states (apply): ELMo's predictive states where "the previous/next token" means the
  previous/next *real* token.
- 20.written: the interview answer, graded by a person.

Wrong answers are diagnosed by recomputing the result with each usual mistake made.
"""
import numbers

import torch

from ..grader.authoring import CheckFailed, call_learner, exercise, expect_tensor, randint, written


def as_bool(case, got, what):
    """A mask of True/False; 0/1 in another dtype is the same mask (the dtype is not what is graded)."""
    got = got.detach().cpu()
    if got.dtype == torch.bool:
        return got
    if got.is_complex() or not bool(((got == 0) | (got == 1)).all()):
        raise CheckFailed(f"[{case}] {what} should hold True/False (or 0/1) only")
    return got != 0


LABEL = {"full": "no padding", "right": "right padding", "left": "left padding", "gaps": "padding in gaps",
         "one": "T = 1"}


# ---------------------------------------------------------------- which tokens an output depends on

def _model(toy_lm, toy_elmo, kind, T, seed, prefix=0, window=1):
    """(a random model of this kind, its dependency matrix [output i, input j]). The models are built by the
    exercise's set-up cell (`toy_lm`, `toy_elmo`), in the learner's process, where the grader runs them."""
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    masks = {"GPT": j <= i, "backward LM": j >= i, "BERT": torch.ones(T, T, dtype=torch.bool),
             "prefix LM": (j < prefix) | (j <= i), "local window": (i - j).abs() <= window}
    if kind == "ELMo":
        return toy_elmo(T, seed=seed), i != j
    model = toy_lm(masks[kind], n_layers=2, seed=seed)
    if kind == "local window":                                          # two layers: the windows compose
        return model, (i - j).abs() <= 2 * window
    return model, masks[kind]


def _ids(rng, T, vocab_size=12):
    ids = torch.randint(0, vocab_size, (T,), generator=rng)
    ids[::3] = 0                         # a token that a fixed replacement id would leave unchanged
    ids[1::4] = vocab_size - 1
    return ids


def _matrix(case, got, T):
    got = expect_tensor(case, got, "the dependency matrix")
    if tuple(got.shape) != (T, T):
        raise CheckFailed(f"[{case}] expected a (T, T) = {(T, T)} matrix [output position, input token], got "
                          f"shape {tuple(got.shape)}")
    return as_bool(case, got, "the dependency matrix")


def _diagnose_dependencies(got, truth, ids):
    if torch.equal(got, truth.T):
        return "your matrix is transposed: row i is the output position, column j the input token changed"
    missing, extra = truth & ~got, got & ~truth
    if extra.any():
        i, j = (int(v) for v in extra.nonzero()[0])
        return (f"output {i} does not depend on token {j} (changing it leaves every logit at {i} as it was, up to "
                "float rounding), but your matrix says it does")
    cols = missing.any(0)
    if cols.any() and len(set(ids[cols].tolist())) == 1 and not missing[:, ~cols].any():
        return (f"every link you missed is to a token whose id is {int(ids[cols][0])}: did you replace tokens by a "
                "fixed id, which changes nothing where the token already has it?")
    i, j = (int(v) for v in missing.nonzero()[0])
    return (f"output {i} depends on token {j} (changing it moves the logits at {i}), but your matrix says it does "
            "not: compare every logit (not only the top token), with a tolerance near 1e-9 (the models are float64)")


@exercise("20.dependencies", points=2, uses=("dependency_matrix", "predicted_links", "toy_lm", "toy_elmo"),
          forbids=("course_lib.lm_masks:direction_mask", "course_lib.lm_masks:lm_attention_mask"))
def check_dependencies(fn, predicted, toy_lm, toy_elmo, rng):
    """The measured dependency matrix of hidden random models equals the reference."""
    kinds = ["GPT", "BERT", "ELMo", "backward LM", "prefix LM", "local window", "prefix LM", "ELMo"]
    for case, kind in enumerate(kinds):
        T = randint(rng, 4, 9)
        prefix, window = randint(rng, 1, T), randint(rng, 1, 3)
        model, truth = _model(toy_lm, toy_elmo, kind, T, randint(rng, 0, 2**30), prefix=prefix, window=window)
        ids = _ids(rng, T)
        detail = {"prefix LM": f", prefix of {prefix}", "local window": f", 2 layers of a window of ±{window}"}
        name = f"case {case}: a random {kind}{detail.get(kind, '')}, input_ids {ids.tolist()}"
        got = _matrix(name, call_learner(name, fn, model, ids.clone(), 12), T)
        if not torch.equal(got, truth):
            raise CheckFailed(f"[{name}] {_diagnose_dependencies(got, truth, ids)}")
    measured = {}
    for kind in ("GPT", "ELMo", "BERT", "prefix LM"):
        model, _ = _model(toy_lm, toy_elmo, kind, 8, seed=0, prefix=3)
        case = f"the prediction's {kind} (T = 8)"
        measured[kind] = int(_matrix(case, call_learner(case, fn, model, _ids(torch.Generator().manual_seed(0), 8),
                                                        12), 8).sum())
    said = (f"you predicted {predicted}" if isinstance(predicted, dict) else "no prediction recorded")
    return f"{said}; your measurement gives {measured} (linked (output, token) pairs, T = 8)"


LINKS = {"GPT": 36, "ELMo": 56, "BERT": 64, "prefix LM": 39}     # T = 8, prefix of 3


@exercise("20.links-prediction", points=1, uses="predicted_links")
def check_links_prediction(value, rng):
    """The predicted number of linked (output, token) pairs at T = 8 for GPT, ELMo, BERT, a prefix LM."""
    if not isinstance(value, dict) or set(value) != set(LINKS) or not all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value.values()):
        raise CheckFailed(f"write your prediction as a dict of numbers with the keys {sorted(LINKS)}: "
                          "predicted_links = {'GPT': ..., ...}")
    known = {("GPT", 28): "GPT's output at i has read token i itself (it predicts token i + 1 from tokens 0..i)",
             ("GPT", 64): "GPT's causal mask hides every token after i",
             ("ELMo", 64): "ELMo's predictive state at i is the forward LM at i - 1 and the backward LM at i + 1: "
                           "neither has read token i",
             ("ELMo", 36): "ELMo's two halves together cover both sides of i (all but i itself)",
             ("ELMo", 72): "count pairs, not the two halves separately: the halves together miss only token i",
             ("BERT", 56): "BERT's output at i reads every position, its own included (there it sees [MASK] or "
                           "the token)",
             ("prefix LM", 36): "the prefix tokens see each other in both directions",
             ("prefix LM", 54): "the prefix tokens see each other, not the tokens after the prefix: those are "
                                "still to be written"}
    wrong = [(k, v) for k, v in value.items() if v != LINKS[k]]
    if not wrong:
        return f"you predicted {value}: GPT T(T+1)/2, ELMo T(T-1), BERT T^2, the prefix LM 3*3 + (4+5+...+8)"
    kind, v = wrong[0]
    why = known.get((kind, v), f"count, for each output position i of the {kind}, which of the 8 tokens it can read")
    raise CheckFailed(f"you predicted {v:g} links for {kind}; {why}")


# ---------------------------------------------------------------- the prefix-LM mask

def reference_mask(attention_mask, prefix_length, *, prefix_by="rank", prefix_off=0, causal="<=",
                   hide_padding=True, prefix_sees=True, real_from="mask"):
    """Loops, on purpose: key j is visible from query i iff j is real and (j is among the first
    prefix_length real tokens of the row, or j <= i). The keyword arguments make the usual mistakes."""
    B, T = attention_mask.shape
    out = torch.zeros(B, 1, T, T, dtype=torch.bool)
    for b in range(B):
        if real_from == "lengths":
            n = int(attention_mask[b].bool().sum())
            real = [j < n for j in range(T)]
        else:
            real = [bool(v) for v in attention_mask[b]]
        first = next((j for j in range(T) if real[j]), 0)
        rank, in_prefix = 0, []
        for j in range(T):
            limit = int(prefix_length[b]) + prefix_off
            where = {"rank": rank, "position": j, "offset": j - first}[prefix_by]
            in_prefix.append(real[j] and where < limit and prefix_sees)
            rank += real[j]
        for i in range(T):
            for j in range(T):
                seen = in_prefix[j] or (j <= i if causal == "<=" else j < i if causal == "<" else True)
                out[b, 0, i, j] = seen and (real[j] or not hide_padding)
    return out


MASK_MISTAKES = (
    (dict(prefix_by="position"), "the prefix counted in positions: it is the row's first prefix_length *real* "
                                 "tokens (count them, skipping padding)"),
    (dict(prefix_by="offset"), "the prefix counted in positions from the first real token: padding inside the "
                               "row (gaps) does not count either"),
    (dict(prefix_off=1), "the prefix holds one real token too many"),
    (dict(prefix_off=-1), "the prefix holds one real token too few"),
    (dict(causal="<"), "after the prefix a query does not see its own key: a token sees itself and the tokens "
                       "before it"),
    (dict(hide_padding=False), "a padding key is visible: no query may attend to padding"),
    (dict(prefix_sees=False), "the prefix is not bidirectional: this is GPT's causal mask"),
    (dict(causal="all"), "the tokens after the prefix see later tokens too: this is BERT's mask; after the "
                         "prefix the row is written left to right"),
    (dict(real_from="lengths"), "the real tokens taken as the first sum(attention_mask) positions (right "
                                "padding assumed): read attention_mask itself, padding may sit anywhere"),
)


def _mask(rng, B, T, layout):
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0] = T
    if layout == "full":
        lengths[:] = T
    mask = (torch.arange(T)[None, :] < lengths[:, None]).long()
    if layout == "left":
        mask = mask.flip(1)
    elif layout == "gaps":
        mask = (torch.rand(B, T, generator=rng) < 0.6).long()
        mask[:, 0] = 0                         # the first position is padding: offsets matter
        mask[0, :4] = torch.tensor([0, 1, 0, 1])   # a gap inside the prefix of row 0
        if B > 1:
            mask[-1] = 0                       # a row of padding only
    return mask


def _explain(got, expected, attention_mask, prefix_length):
    b, _, i, j = (int(v) for v in (got != expected).nonzero()[0])
    key = "padding" if attention_mask[b, j] == 0 else "a real token"
    return (f"row {b} (attention_mask {attention_mask[b].tolist()}, prefix_length "
            f"{int(prefix_length[b])}), query {i}, key {j} ({key}): expected {bool(expected[b, 0, i, j])}, "
            f"got {bool(got[b, 0, i, j])}")


def _check_masks(fn, rng, layouts):
    for case, layout in enumerate(layouts):
        B = randint(rng, 2, 5)
        T = 1 if layout == "one" else randint(rng, 4, 10)
        attention_mask = _mask(rng, B, T, "full" if layout == "one" else layout)
        real = attention_mask.sum(1)
        prefix = (torch.rand(B, generator=rng) * (real + 1).float()).long()
        if case == 1:
            prefix[:] = 0                       # no prefix: the GPT mask
        if case == 2:
            prefix = real.clone() + 1           # everything in the prefix: the BERT mask
        if case not in (1, 2) and layout != "one":
            prefix[0] = 2                       # row 0's prefix spans padding (left or a gap)
        if attention_mask.dtype != torch.bool and case % 2:
            attention_mask = attention_mask.bool()
        name = f"case {case} ({LABEL[layout]}): attention_mask {tuple(attention_mask.shape)}"
        got = expect_tensor(name, call_learner(name, fn, attention_mask.clone(), prefix.clone()), "the mask")
        expected = reference_mask(attention_mask, prefix)
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, 1, T, T) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        got = as_bool(name, got, "the mask")
        if torch.equal(got, expected):
            continue
        if torch.equal(got, expected.transpose(-1, -2)):
            raise CheckFailed(f"[{name}] your mask is transposed: entry [b, 0, i, j] is query i, key j")
        for kwargs, why in MASK_MISTAKES:
            if torch.equal(got, reference_mask(attention_mask, prefix, **kwargs)):
                raise CheckFailed(f"[{name}] this matches a known mistake - {why} "
                                  f"(first wrong entry: {_explain(got, expected, attention_mask, prefix)})")
        raise CheckFailed(f"[{name}] {_explain(got, expected, attention_mask, prefix)}")


@exercise("20.prefix-lm-mask", points=2, uses="prefix_lm_mask",
          forbids=("course_lib.lm_masks:direction_mask", "course_lib.lm_masks:lm_attention_mask"))
def check_prefix_lm_mask(fn, rng):
    """Prefix bidirectional, the rest causal: full and right-padded rows, prefix 0 (GPT) and a
    prefix covering every token (BERT)."""
    _check_masks(fn, rng, ("full", "right", "right", "full", "right", "one"))


@exercise("20.padding", points=2, uses="prefix_lm_mask",
          forbids=("course_lib.lm_masks:direction_mask", "course_lib.lm_masks:lm_attention_mask"))
def check_padding(fn, rng):
    """Left padding and padding in gaps (prefix counted in real tokens), an all-padding row."""
    _check_masks(fn, rng, ("left", "left", "gaps", "gaps", "left", "gaps"))


# ---------------------------------------------------------------- ELMo's predictive states

def reference_states(forward_states, backward_states, attention_mask, *, by_position=False, zero_padding=True,
                     swapped=False):
    """Loops: position i (real) gets [forward at the previous real token ; backward at the next real
    token], zeros where there is none; padding positions are all zeros. The keyword arguments make the
    usual mistakes: neighbours by position, padding positions filled in, halves swapped."""
    B, T, D = forward_states.shape
    out = torch.zeros(B, T, 2 * D, dtype=forward_states.dtype)
    for b in range(B):
        real = [j for j in range(T) if attention_mask[b, j]]
        for i in range(T):
            if not attention_mask[b, i] and zero_padding:
                continue
            if by_position:
                before, after = [i - 1] if i > 0 else [], [i + 1] if i + 1 < T else []
            else:
                before, after = [j for j in real if j < i], [j for j in real if j > i]
            if swapped:
                if after:
                    out[b, i, :D] = forward_states[b, after[0]]
                if before:
                    out[b, i, D:] = backward_states[b, before[-1]]
                continue
            if before:
                out[b, i, :D] = forward_states[b, before[-1]]
            if after:
                out[b, i, D:] = backward_states[b, after[0]]
    return out


STATE_MISTAKES = (
    (dict(by_position=True), "the neighbours taken by position (i - 1, i + 1): in a padded row the previous "
                             "or next real token may be further away"),
    (dict(by_position=True, zero_padding=False), "the neighbours taken by position (i - 1, i + 1), padding "
                                                 "included: skip padding, and leave padding positions at zero"),
    (dict(zero_padding=False), "a padding position got states: padding positions must be all zeros"),
    (dict(swapped=True), "the halves are swapped: the forward LM's state comes from the previous real token, "
                         "the backward LM's from the next"),
)


@exercise("20.elmo-states", points=2, uses="elmo_predictive_states",
          forbids=("course_lib.lm_masks:elmo_predictive_states",))
def check_elmo_states(fn, rng):
    """[forward at the previous real token ; backward at the next real token], zeros elsewhere."""
    for case, layout in enumerate(("full", "right", "left", "gaps", "gaps", "one")):
        B = randint(rng, 2, 4)
        T = 1 if layout == "one" else randint(rng, 4, 9)
        D = randint(rng, 1, 6)
        mask = _mask(rng, B, T, "full" if layout == "one" else layout)
        f = torch.randn(B, T, D, generator=rng)
        b = torch.randn(B, T, D, generator=rng)
        name = f"case {case} ({LABEL[layout]}): states ({B}, {T}, {D})"
        got = expect_tensor(name, call_learner(name, fn, f.clone(), b.clone(), mask.clone()), "the states")
        expected = reference_states(f, b, mask)
        if tuple(got.shape) != tuple(expected.shape):
            raise CheckFailed(f"[{name}] expected shape (B, T, 2D) = {tuple(expected.shape)}, "
                              f"got {tuple(got.shape)}")
        got = got.detach().cpu().to(torch.float32)
        if torch.allclose(got, expected, atol=1e-6):
            continue
        at_i = torch.cat([f, b], dim=-1)                                   # (B, T, 2D): the states at i itself
        if torch.allclose(got, at_i) or torch.allclose(got, at_i * mask[..., None]):
            raise CheckFailed(f"[{name}] you concatenated the states at i itself: both have seen "
                              f"token i. Use the previous and the next real token's states")
        for kwargs, why in STATE_MISTAKES:
            if torch.allclose(got, reference_states(f, b, mask, **kwargs), atol=1e-6):
                raise CheckFailed(f"[{name}] this matches a known mistake - {why}")
        for half, label in ((slice(0, D), "forward half"), (slice(D, 2 * D), "backward half")):
            bad = ~torch.isclose(got[..., half], expected[..., half], atol=1e-6).all(-1)   # (B, T)
            if bad.any():
                r, i = (int(v) for v in bad.nonzero()[0])
                where = "a padding position (must be zeros)" if mask[r, i] == 0 else "a real token"
                raise CheckFailed(f"[{name}] row {r} (attention_mask {mask[r].tolist()}), position {i}, "
                                  f"{where}: the {label} is wrong (expected "
                                  f"{[round(v, 4) for v in expected[r, i, half].tolist()]}, got "
                                  f"{[round(v, 4) for v in got[r, i, half].tolist()]})")


written("20.written", points=2, rubric=(
    "'Bidirectional' is about what a position's representation may depend on: GPT's causal mask lets position i "
    "read tokens 0..i only; BERT reads every token in every layer and hides the answer with [MASK] instead of "
    "with the attention mask",
    "ELMo trains a forward and a backward LM separately and concatenates their states: both sides are seen, but "
    "they meet only in the head on top (shallow); where the answer needs both sides jointly it cannot combine "
    "them (a linear head adds the two halves' scores) and trailed BERT far at equal steps even with an MLP head",
    "GPT cannot use context to the right of the position that decides (its logits do not move when the right "
    "side changes), while GPT's causal objective is what lets it generate left to right and train on every "
    "next token; BERT can be made to write by filling [MASK]s, at a cost (no cache, fewer training targets)",
    "The mask and the objective go together: a bidirectional mask with a next-token loss would let each "
    "position copy its answer; prefix LMs (UniLM, T5's prefix-LM) mix the two - bidirectional over a prefix, "
    "causal after it",
))
