"""Graded checks for lesson 18: showing that our BERT is the real BERT, where the lesson did not go.

The lesson loaded MiniLM into the course's `BertModel` and compared every layer with Hugging Face's.
The exercise turns that comparison into a tool and points it at models the lesson never built: small
BERTs of random configurations, copied into the course's model, some with a planted deviation (GELU's
tanh form, query and key swapped, a LayerNorm's eps), handed over in training mode as a training loop
leaves them. `parity_report(ours, theirs, batch)` returns the largest |ours - theirs| over the real
tokens of every hidden state. The learner first predicts how large each deviation's gap is on MiniLM;
the check shows the prediction beside the measurement.
"""
import copy
from functools import lru_cache

import torch
from torch import nn

from course_lib.bert import BertConfig, BertModel

from ..grader.authoring import CheckFailed, exercise, expect, randint, written

CHANGES = ("gelu-tanh", "layer-norm-eps", "embeddings-layer-norm-eps", "query-key-swap")
MINILM_SENTENCES = ["The cat sat on the mat.", "Transformers replaced recurrence with attention.",
                    "A dog is playing in the park with a ball that it found under a bench.", "Hello!",
                    "Is our BERT the real BERT?"]


def deviate(model, change, layer=2):
    """A copy of the course model with one change a reimplementation of BERT might get wrong (the
    exercise's set-up cell has the same function)."""
    broken = copy.deepcopy(model)
    block = broken.layers[min(layer, len(broken.layers) - 1)]
    if change == "gelu-tanh":
        block.activation = nn.GELU(approximate="tanh")
    elif change == "layer-norm-eps":
        block.norm1.eps = block.norm2.eps = 1e-5
    elif change == "embeddings-layer-norm-eps":
        broken.embeddings.LayerNorm.eps = 1e-5
    elif change == "query-key-swap":
        q, k = block.self_attn.q_proj, block.self_attn.k_proj
        with torch.no_grad():
            for name in ("weight", "bias"):
                a, b = getattr(q, name).clone(), getattr(k, name).clone()
                getattr(q, name).copy_(b)
                getattr(k, name).copy_(a)
    elif change is not None:
        raise ValueError(f"change: expected one of {CHANGES} or None, got {change!r}")
    return broken


def _states(ours, theirs, batch, ours_types=True, theirs_types=True):
    """Hidden states of both models in eval mode (the models' modes are restored)."""
    modes = ours.training, theirs.training
    ours.eval(), theirs.eval()
    try:
        with torch.no_grad():
            a = ours(batch["input_ids"], batch["token_type_ids"] if ours_types else None,
                     batch["attention_mask"], output_hidden_states=True).hidden_states
            b = theirs(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       token_type_ids=batch["token_type_ids"] if theirs_types else None,
                       output_hidden_states=True).hidden_states
    finally:
        ours.train(modes[0]), theirs.train(modes[1])
    return a, b


def reference(ours, theirs, batch):
    a, b = _states(ours, theirs, batch)
    real = batch["attention_mask"].bool()
    return [(x - y)[real].abs().max().item() for x, y in zip(a, b)]


def _variants(ours, theirs, batch):
    """What the usual mistakes report on these models and batch: {key: list of floats}."""
    real = batch["attention_mask"].bool()
    a, b = _states(ours, theirs, batch)
    out = {"padding": [(x - y).abs().max().item() for x, y in zip(a, b)],
           "mean": [(x - y)[real].abs().mean().item() for x, y in zip(a, b)],
           "signed": [(x - y)[real].max().item() for x, y in zip(a, b)]}
    if batch["token_type_ids"].any():
        for key, kw in (("ours-types", dict(ours_types=False)), ("theirs-types", dict(theirs_types=False))):
            a2, b2 = _states(ours, theirs, batch, **kw)
            out[key] = [(x - y)[real].abs().max().item() for x, y in zip(a2, b2)]
    return out


MISTAKES = (
    ("padding", "you compared the padded positions too: the two models leave different vectors there "
                "(the course's leaves zeros), which nobody reads - compare the real tokens only "
                "(attention_mask == 1)"),
    ("ours-types", "one model ran without the batch's token_type_ids while the other had them: pass "
                   "input_ids, token_type_ids and attention_mask to both models"),
    ("theirs-types", "one model ran without the batch's token_type_ids while the other had them: pass "
                     "input_ids, token_type_ids and attention_mask to both models"),
    ("mean", "you averaged |ours - theirs|; the report is the largest difference (one wrong number is a bug)"),
    ("signed", "you took the largest signed difference; take the largest absolute difference"),
)


def _close(got, want):
    # float32 rounding of the two implementations (the lesson's 1e-5), or 1% of a real gap
    return abs(got - want) <= 1e-5 + 1e-2 * abs(want)


def _as_report(case, got, n):
    if isinstance(got, torch.Tensor):
        got = got.tolist() if got.dim() == 1 else got
    if not isinstance(got, (list, tuple)) or not all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in got):
        raise CheckFailed(f"[{case}] return a list of numbers (one per hidden state), got "
                          f"{type(got).__name__} {got!r:.80}")
    if len(got) != n:
        raise CheckFailed(f"[{case}] the models have {n - 1} layers, so hidden_states holds {n} tensors - "
                          f"the embeddings' output, then every layer's - and the report {n} numbers; got {len(got)}")
    return [float(x) for x in got]


def _random_pair(rng, change):
    """A Hugging Face BertModel of a random small configuration, its weights in the course's
    BertModel, one change planted in ours; both left in training mode."""
    from transformers import BertConfig as HFBertConfig
    from transformers import BertModel as HFBertModel
    from transformers.utils import logging as hf_logging

    heads = (2, 4)[randint(rng, 0, 2)]
    sizes = dict(vocab_size=randint(rng, 40, 120), hidden_size=heads * randint(rng, 6, 17),
                 num_hidden_layers=randint(rng, 1, 5), num_attention_heads=heads,
                 intermediate_size=randint(rng, 32, 129), max_position_embeddings=32, type_vocab_size=2,
                 initializer_range=0.2)
    config = BertConfig(**sizes)
    hf_logging.set_verbosity_error()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(randint(rng, 0, 2**31))
        theirs = HFBertModel(HFBertConfig(**sizes, attn_implementation="eager"), add_pooling_layer=True)
    ours = BertModel.from_hf_state_dict(config, theirs.state_dict())
    ours = deviate(ours, change, layer=randint(rng, 0, config.num_hidden_layers))
    ours.train(), theirs.train()
    return ours, theirs, config


def _random_batch(rng, config):
    B, T = randint(rng, 2, 6), randint(rng, 5, 13)
    lengths = torch.randint(2, T + 1, (B,), generator=rng)
    lengths[0], lengths[1] = T, randint(rng, 2, T)          # one full row, one padded row
    real = torch.arange(T)[None] < lengths[:, None]
    input_ids = torch.randint(1, config.vocab_size, (B, T), generator=rng).masked_fill(~real, 0)
    split = torch.randint(1, T, (B, 1), generator=rng)
    token_type_ids = ((torch.arange(T)[None] >= split) & real).long()   # a second segment
    return {"input_ids": input_ids, "token_type_ids": token_type_ids, "attention_mask": real.long()}


@lru_cache(maxsize=1)
def minilm_gaps():
    """{change: largest gap over MiniLM's hidden states} for the exercise's four changes in layer 2."""
    from transformers import BertModel as HFBertModel
    from transformers.utils import logging as hf_logging

    from course_lib.pretrained import load_minilm, minilm_path, minilm_tokenizer
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    ours, _ = load_minilm("cpu")
    theirs = HFBertModel.from_pretrained(str(minilm_path()), attn_implementation="eager")
    batch = minilm_tokenizer()(MINILM_SENTENCES)
    return {change: max(reference(deviate(ours, change), theirs, batch)) for change in CHANGES}


@exercise("18.parity-report", points=3, uses="parity_report")
def check_parity_report(fn, rng):
    """Small BERTs of random configurations, copied into the course's model, some with a planted
    deviation, in training mode: the largest |ours - theirs| over the real tokens of every hidden state."""
    changes = [None, "gelu-tanh", "query-key-swap", "embeddings-layer-norm-eps", None]
    for number, change in enumerate(changes):
        ours, theirs, config = _random_pair(rng, change)
        batch = _random_batch(rng, config)
        B, T = batch["input_ids"].shape
        case = (f"case {number}: a {config.num_hidden_layers}-layer BERT (hidden_size {config.hidden_size}), "
                f"{'no change' if change is None else 'one change planted: ' + change}, a batch {(B, T)} "
                f"with {int((batch['attention_mask'] == 0).sum())} padded positions")
        n = config.num_hidden_layers + 1
        first = _as_report(case, fn(ours, theirs, {k: v.clone() for k, v in batch.items()}), n)
        ours.train(), theirs.train()           # as a training loop would hand them over again
        second = _as_report(case, fn(ours, theirs, {k: v.clone() for k, v in batch.items()}), n)
        want = reference(ours, theirs, batch)
        if first != second and not all(_close(g, w) for g, w in zip(first, want)):
            raise CheckFailed(f"[{case}] two calls on the same models and batch gave different reports "
                              f"({first[-1]:.3g}, then {second[-1]:.3g} for the last layer): dropout is on - the "
                              f"models come in training mode")
        bad = [i for i, (g, w) in enumerate(zip(first, want)) if not _close(g, w)]
        if not bad:
            continue
        variants = _variants(ours, theirs, batch)
        for key, message in MISTAKES:
            if key in variants and all(_close(g, v) for g, v in zip(first, variants[key])):
                raise CheckFailed(f"[{case}] {message}")
        i = bad[0]
        what = "the embeddings' output" if i == 0 else f"layer {i}'s output"
        raise CheckFailed(f"[{case}] value {i} ({what}): got {first[i]:.3g}, expected {want[i]:.3g}, the "
                          f"largest |ours - theirs| over the real tokens of hidden_states[{i}] with both models "
                          f"in evaluation mode")


def _fmt(x):
    return f"{x:.0e}" if isinstance(x, (int, float)) and not isinstance(x, bool) else "?"


@exercise("18.measured", points=1, uses=("measured_gap", "predicted_gap"))
def check_measured(measured, predicted, rng):
    """The four deviations measured on MiniLM with parity_report, beside the prediction."""
    want = minilm_gaps()
    expect(isinstance(measured, dict) and set(measured) == set(CHANGES),
           f"measured_gap should be a dict with the keys {list(CHANGES)}, got "
           f"{sorted(measured) if isinstance(measured, dict) else type(measured).__name__}")
    for change in CHANGES:
        value = measured[change]
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        expect(isinstance(value, (int, float)) and not isinstance(value, bool),
               f"measured_gap[{change!r}] should be one number, got {value!r:.60}")
        if isinstance(predicted, dict) and predicted.get(change) == value and not _close(value, want[change]):
            raise CheckFailed(f"measured_gap[{change!r}] is your prediction ({value:.3g}): measure it, "
                              f"max(parity_report(deviate(ours_minilm, {change!r}), reference, batch))")
        if not _close(value, want[change]):
            raise CheckFailed(f"measured_gap[{change!r}] is {value:.3g}, but the largest gap over every "
                              f"hidden state of deviate(ours_minilm, {change!r}) against reference on the "
                              f"set-up's batch is {want[change]:.3g}: take max(parity_report(...)) over all "
                              f"hidden states")
    if isinstance(predicted, dict) and all(isinstance(predicted.get(c), (int, float)) for c in CHANGES):
        said = "you predicted " + " / ".join(_fmt(predicted[c]) for c in CHANGES)
    else:
        said = "you recorded no prediction (a dict with the four changes as keys)"
    return (f"{said} for {', '.join(CHANGES)}; MiniLM measures " + " / ".join(f"{want[c]:.1e}" for c in CHANGES)
            + "; float32 rounding alone leaves about 4e-06")


written("18.written", points=2, rubric=(
    "load the real weights with strict name mapping: every checkpoint tensor lands in a module and none is "
    "missing or left over (a strict load_state_dict)",
    "run both implementations on the same (padded) batch, in evaluation mode (dropout off), and compare "
    "layer by layer - embeddings, every layer, pooler - not only the final output",
    "compare only the real tokens (attention_mask = 1): padded positions hold vectors nobody reads",
    "'equal' means within float32 rounding (about 1e-6 here); a real bug shows as a larger gap starting "
    "at the layer where it enters (GELU's tanh form about 1e-3, swapped weights order 1), while a subtle "
    "one such as an encoder LayerNorm's eps of 1e-5 leaves only a few times 1e-5, so the tolerance must be tight",
))
