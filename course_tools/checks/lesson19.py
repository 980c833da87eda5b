"""Graded checks for lesson 19: poolings the lesson did not build, and where the summary sits.

The lesson compares [CLS], masked mean and masked max pooling. The exercise builds attention pooling
(a softmax over each row's real tokens of `hidden_states @ query`; padding gets neither weight nor
gradient; with a zero query it is mean pooling, so one item compares with MiniLM's own sentence
embeddings), then the summary a causal model reads, the *last* real token, whose position moves with
the length and the padding side - the practical reason BERT's summary sits first. The learner
predicts how [CLS], the mean and the last token rank on MiniLM, and the check measures it with the
learner's own pooling. Tolerances follow the values' scale: float32 softmax weights carry an error of
about eps * |score|, so the output's error grows with the scores and the vectors' size."""
import warnings
from functools import lru_cache

import torch
import torch.nn.functional as F

from course_lib.pooling import mean_pooling

from ..grader.authoring import CheckFailed, exercise, expect, expect_tensor, randint, written


def reference(hidden, mask, query):
    """float64 masked softmax pooling; rows without a real token -> 0."""
    h = hidden.double()
    real = mask.bool()
    scores = (h @ query.double()).masked_fill(~real, float("-inf"))          # (B, T)
    w = torch.softmax(scores, dim=1)                                        # every row has a token
    return (w.unsqueeze(-1) * h).sum(dim=1)                                  # (B, H)


def tolerance(hidden, mask, query):
    """What rounding in the input's dtype allows: a score carries an error of about
    eps * sum_i |h_i q_i|, which is the relative error of its softmax weight, so the output's error is
    about that times the largest |h|. Ten times this bound (the official solution and the honest
    variants stay under a third of it, at 300 seeds)."""
    real = mask.bool()
    h = hidden.double()[real]                                                # (N, H) real tokens
    eps = torch.finfo(hidden.dtype).eps if hidden.dtype.is_floating_point else 1e-7
    spread = (h.abs() @ query.double().abs()).max().item()                   # the largest |score| bound
    return 10 * eps * (spread + 1.0) * max(1.0, h.abs().max().item())


def _compare(case, got, expected, tol, what="attention_pooling"):
    """Values only (the dtype is its own item); a message that says where and how far."""
    got = expect_tensor(case, got, what)
    if tuple(got.shape) != tuple(expected.shape):
        raise CheckFailed(f"[{case}] {what} returned shape {tuple(got.shape)}, expected {tuple(expected.shape)} "
                          f"(B, H): one vector per row")
    diff = (got.detach().double() - expected).abs()
    if not torch.isfinite(diff).all() or diff.max() > tol:
        row = int(torch.nonzero(~(diff <= tol))[0, 0])
        return row, diff.nan_to_num(float("inf"))[row].max().item()
    return None


def _diagnose(fn, case, got, hidden, mask, query, expected, tol, row, gap):
    """Name the usual mistakes; otherwise say which row is off and by how much."""
    got = got.detach().double()
    real = mask.bool()
    h = hidden.double()
    if not torch.isfinite(got[row]).all():
        raise CheckFailed(f"[{case}] row {row} is NaN or inf although it has real tokens: exp() of a large score "
                          f"overflows - here the padding's, whose vectors are huge; mask the scores (-inf) before "
                          f"the softmax, or subtract each row's maximum over its real tokens before exp()")
    close = lambda other: bool(((got - other).abs() <= tol).all())  # noqa: E731
    unmasked = reference(hidden, torch.ones_like(mask), query)
    if close(unmasked):
        raise CheckFailed(f"[{case}] padded positions took part in the softmax; give them weight 0 "
                          f"(attention_mask == 0 -> score -inf)")
    if not real.all():      # a property: the padding's vectors must not matter
        quiet = hidden.clone()
        quiet[~real] = 0.0
        again = fn(quiet, mask.clone(), query.clone())
        if isinstance(again, torch.Tensor) and again.shape == got.shape:
            moved = (again.detach().double() - got).abs().nan_to_num(float("inf")).max().item()
            if moved > tol:
                raise CheckFailed(f"[{case}] changing only the padding vectors changed your result by up to "
                                  f"{moved:.3g}: padding still takes part. Zeroing its weights after the softmax "
                                  f"is too late (its huge scores already took the mass): mask the scores before")
    wrong_axis = (torch.softmax((h @ query.double()).masked_fill(~real, -1e9), dim=0).unsqueeze(-1) * h).sum(1)
    if close(wrong_axis):
        raise CheckFailed(f"[{case}] your weights are normalised over the batch (dim 0); normalise over "
                          f"the tokens of each row")
    if close(mean_pooling(h, real)):
        raise CheckFailed(f"[{case}] you returned the masked mean: the weights must come from the "
                          f"softmax of hidden_states @ query")
    scaled = reference(hidden, mask, query / hidden.shape[-1] ** 0.5)
    if close(scaled):
        raise CheckFailed(f"[{case}] you scaled the scores by 1/sqrt(H): the task's scores are "
                          f"hidden_states @ query, unscaled (the query is learned, its size is its own)")
    raise CheckFailed(f"[{case}] row {row} (real tokens {mask[row].long().tolist()}) is off by up to {gap:.3g}; "
                      f"float32 rounding allows {tol:.2g} here. Work the task's example by hand with your code")


def _case(rng, case):
    """Random batches: right and left padding, gaps inside a row, int or float masks, float64, one-token
    rows; padding vectors large and aligned with the query, so that counting them shows."""
    B = randint(rng, 2, 7)
    T = randint(rng, 1 if case == 4 else 3, 12)
    H = randint(rng, 2, 40)
    hidden = torch.randn(B, T, H, generator=rng)
    query = torch.randn(H, generator=rng) / H ** 0.5
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0] = T                                       # one full row
    mask = (torch.arange(T)[None] < lengths[:, None]).long()
    if case in (1, 3):
        mask = mask.flip(1)                              # left padding
    if case >= 2 and T > 1:
        mask[-1] = (torch.rand(T, generator=rng) < 0.5).long()   # gaps inside a row
        mask[-1, T // 2] = 1
    n_pad = int((mask == 0).sum())
    hidden[mask == 0] = 40 * torch.randn(n_pad, H, generator=rng) + 40 * query / query.norm()
    if case % 2:
        mask = mask.float()
    if case == 3:
        hidden, query = hidden.double(), query.double()
    return hidden, mask, query


POOLING_FORBIDS = ("course_lib.pooling:mean_pooling", "course_lib.pooling:max_pooling", "course_lib.pooling:pool")


@exercise("19.attention-pooling", points=3, uses="attention_pooling", forbids=POOLING_FORBIDS)
def check_attention_pooling(fn, rng):
    """Random batches: right and left padding, gaps, int/float masks, float64, one-token rows; padding
    gets no weight and no gradient."""
    labels = ("right padding", "left padding, float mask", "gaps inside a row", "left padding, float64",
              "T may be 1, gaps", "random", "random")
    for case, label in enumerate(labels):
        hidden, mask, query = _case(rng, case)
        B, T, H = hidden.shape
        name = (f"case {case} ({label}): hidden_states {(B, T, H)} {str(hidden.dtype)[6:]}, "
                f"attention_mask {mask.long().tolist()}")
        if len(name) > 160:
            name = name[:157] + "..."
        expected = reference(hidden, mask, query)
        tol = tolerance(hidden, mask, query)
        leaf = hidden.clone().requires_grad_(True)
        got = fn(leaf, mask.clone(), query.clone())
        off = _compare(name, got, expected, tol)
        if off is not None:
            _diagnose(fn, name, got, hidden, mask, query, expected, tol, *off)
        if not got.requires_grad:
            raise CheckFailed(f"[{name}] the result is not connected to hidden_states by autograd; "
                              f"use torch operations")
        got.sum().backward()
        if leaf.grad is None or (leaf.grad[mask == 0] != 0).any():
            raise CheckFailed(f"[{name}] padded positions received a gradient; they must not count")


@exercise("19.attention-pooling-dtype", points=1, uses="attention_pooling", forbids=POOLING_FORBIDS)
def check_attention_pooling_dtype(fn, rng):
    """The result keeps the input's dtype: float64 in, float64 out; float32 in, float32 out."""
    for dtype in (torch.float64, torch.float32):
        hidden, mask, query = _case(rng, 0)
        hidden, query = hidden.to(dtype), query.to(dtype)
        got = expect_tensor(f"{str(dtype)[6:]} input", fn(hidden, mask, query), "attention_pooling")
        expect(got.dtype == dtype, f"[hidden_states and query {str(dtype)[6:]}] attention_pooling returned "
               f"{str(got.dtype)[6:]}; keep the input's dtype (a float64 pipeline must not drop to float32, "
               f"nor a float32 one double its memory)")


TEXTS = ("A cat.", "The gardener watered the roses in the yard this morning.",
         "Every object has an identity, a type and a value.", "Hi!",
         "In the kitchen, the onions were chopped by the chef.",
         "The yield statement can be used to omit the parentheses that would otherwise be required.")


@lru_cache(maxsize=1)
def _minilm():
    from transformers import BertModel, BertTokenizerFast
    from transformers.utils import logging as hf_logging

    from course_lib.pretrained import minilm_path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
        tokenizer = BertTokenizerFast.from_pretrained(str(minilm_path()))
        model = BertModel.from_pretrained(str(minilm_path())).eval()
    return tokenizer, model


@lru_cache(maxsize=1)
def _minilm_batch():
    """Real MiniLM token vectors of TEXTS, padded, and sentence-transformers' mean pooling of them."""
    tokenizer, model = _minilm()
    enc = tokenizer(list(TEXTS), padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state                       # (B, T, 384)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from sentence_transformers.models import Pooling
        mean = Pooling(hidden.shape[-1], pooling_mode="mean")(
            {"token_embeddings": hidden, "attention_mask": enc["attention_mask"]})["sentence_embedding"]
    except ImportError:  # the course's masked mean: sentence-transformers' formula on rows with a token
        mean = mean_pooling(hidden, enc["attention_mask"])
    return hidden, enc["attention_mask"], mean


@exercise("19.attention-pooling-minilm", points=2, uses="attention_pooling", forbids=POOLING_FORBIDS)
def check_attention_pooling_minilm(fn, rng):
    """Real MiniLM outputs: with a zero query your pooling must equal sentence-transformers'
    mean pooling (all-MiniLM-L6-v2's sentence embeddings); with a random query, the reference."""
    hidden, mask, mean = _minilm_batch()
    order = torch.randperm(len(TEXTS), generator=rng)
    hidden, mask, mean = hidden[order], mask[order], mean[order]
    H = hidden.shape[-1]
    for query, name in ((torch.zeros(H), f"MiniLM, zero query: {len(TEXTS)} sentences padded to "
                                         f"{hidden.shape[1]} tokens (expected: MiniLM's own mean embeddings)"),
                        (torch.randn(H, generator=rng), "MiniLM, a random query")):
        expected = mean.double() if not query.any() else reference(hidden, mask, query)
        tol = tolerance(hidden, mask, query)
        got = fn(hidden.clone(), mask.clone(), query)
        off = _compare(name, got, expected, tol)
        if off is not None:
            _diagnose(fn, name, got, hidden, mask, query, expected, tol, *off)


# ---------------------------------------------------------------- the last real token

def last_token(hidden, mask):
    """Reference: each row's vector at its last real position."""
    T = mask.shape[1]
    last = (mask.bool().long() * torch.arange(1, T + 1)).argmax(dim=1)      # the largest real index
    return hidden[torch.arange(hidden.shape[0]), last]


def _last_case(rng, side):
    B, T, H = randint(rng, 3, 7), randint(rng, 4, 12), randint(rng, 2, 20)
    hidden = torch.randn(B, T, H, generator=rng)
    lengths = torch.randint(1, T + 1, (B,), generator=rng)
    lengths[0], lengths[1] = T, randint(rng, 1, T)      # one full row, one padded
    mask = (torch.arange(T)[None] < lengths[:, None]).long()
    if side == "left":
        mask = mask.flip(1)
    # padding keeps vectors of its own (Hugging Face's models leave some there), so a wrong index shows
    return hidden, mask


@exercise("19.last-token", points=2, uses=("last_token_pooling", "predicted_spearman"),
          forbids=POOLING_FORBIDS)
def check_last_token(fn, predicted, rng):
    """The last real token of each row, with right or left padding, int or float masks; beside the
    prediction, what [CLS], the mean and the last token score on MiniLM."""
    for number, side in enumerate(("right", "left", "right", "left", "none")):
        hidden, mask = _last_case(rng, side)
        if side == "none":
            mask = torch.ones_like(mask)
        if number >= 2:
            mask = mask.float()
        B, T, H = hidden.shape
        case = (f"case {number} ({side} padding): hidden_states {(B, T, H)}, attention_mask "
                f"{mask.long().tolist()}")
        if len(case) > 170:
            case = case[:167] + "..."
        expected = last_token(hidden, mask)
        got = expect_tensor(case, fn(hidden.clone(), mask.clone()), "last_token_pooling")
        if tuple(got.shape) != (B, H):
            raise CheckFailed(f"[{case}] last_token_pooling returned shape {tuple(got.shape)}, expected {(B, H)}")
        got = got.detach().to(hidden.dtype)
        if torch.equal(got, expected):
            continue
        row = int(torch.nonzero((got != expected).any(-1))[0])
        at = [t for t in range(T) if torch.equal(got[row], hidden[row, t])]
        real = [t for t in range(T) if mask[row, t]]
        where = f"position {at[0]}" if at else "a vector that is no token of the row"
        lead = f"[{case}] row {row} (real tokens at {real[0]}..{real[-1]}): you returned {where}"
        if at and at[0] == T - 1 and mask[row, T - 1] == 0:
            raise CheckFailed(f"{lead}, the last position of the padded tensor - padding here: with right "
                              f"padding the last real token moves with the row's length")
        if at and at[0] == int(mask[row].sum()) - 1 and side == "left":
            raise CheckFailed(f"{lead} = length - 1, which assumes right padding; with left padding the real "
                              f"tokens end at position {T - 1}: find the last position whose mask is 1")
        if at and at[0] == real[0]:
            raise CheckFailed(f"{lead}, the first real token: the summary a causal model reads is the last "
                              f"one (it is the only token that has seen the whole sequence)")
        raise CheckFailed(f"{lead}, expected the last real token, position {real[-1]}")
    return _minilm_note(fn, predicted)


@lru_cache(maxsize=1)
def _benchmark():
    """MiniLM token vectors of 150 of the lesson's labelled pairs (fixed), padded on the right."""
    import random

    from course_lib.data.similarity_pairs import similarity_pairs
    tokenizer, model = _minilm()
    pairs = random.Random(1).sample(similarity_pairs(0, n_per_label=200), 150)
    sentences = sorted({s for a, b, _ in pairs for s in (a, b)})
    index = {s: i for i, s in enumerate(sentences)}
    enc = tokenizer(sentences, padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**enc).last_hidden_state
    a = torch.tensor([index[x] for x, _, _ in pairs])
    b = torch.tensor([index[x] for _, x, _ in pairs])
    return hidden, enc["attention_mask"], a, b, [label for *_, label in pairs]


def _minilm_note(fn, predicted):
    from course_lib.sentence_similarity import spearman
    hidden, mask, a, b, labels = _benchmark()
    score = lambda v: spearman(F.cosine_similarity(v[a], v[b]).numpy(), labels)  # noqa: E731
    measured = {"[CLS]": score(hidden[:, 0]), "mean": score(mean_pooling(hidden, mask))}
    try:
        measured["last token"] = score(fn(hidden.clone(), mask.clone()).detach().float())
    except Exception as error:  # noqa: BLE001 - the learner's code: the note says so
        return f"(your last_token_pooling raised {type(error).__name__} on MiniLM's batch)"
    keys = ("[CLS]", "mean", "last token")
    got = " / ".join(f"{measured[k]:.2f}" for k in keys)
    if isinstance(predicted, dict) and all(isinstance(predicted.get(k), (int, float)) for k in keys):
        said = "you predicted " + " / ".join(f"{predicted[k]:.2f}" for k in keys)
    else:
        said = "you recorded no prediction (a dict with the keys '[CLS]', 'mean', 'last token')"
    return (f"{said} for [CLS] / mean / last token; on 150 of the lesson's pairs MiniLM's Spearman is {got} "
            f"(its last real token is [SEP])")


written("19.written", points=2, rubric=(
    "[CLS] is a slot with no word of its own: it holds whatever training puts there - in BERT the NSP "
    "head reads it, so it is trained for NSP, not as a general sentence meaning",
    "which vector is best depends on the training objective: MiniLM (sentence-transformers) was trained "
    "with mean pooling and there the mean beats [CLS] (Spearman about 0.88 vs 0.80); a fine-tuned [CLS] "
    "is as good as the mean",
    "'[CLS] fuses the words fairly' is wrong: in middle layers it attends mostly to itself (an attention "
    "sink), not evenly to the words",
    "'first' is a convention with a practical reason: a bidirectional encoder sees every position from "
    "anywhere (start, middle and end all learned the task), and slot 0 does not move with length or "
    "padding, while a last-token summary must be found from the attention mask",
    "mean pooling must exclude padding (attention_mask), or a sentence's vector changes with its batch",
))
