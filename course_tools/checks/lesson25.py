"""Graded checks for lesson 25 (how do you make BERT inference fast on a CPU, which methods shrink
the model?): the size accounting behind "int8 is 4x smaller" measured on hidden models (only where
int8 is applied; BERT-base's shrink predicted first), and the per-channel idea carried to the
asymmetric uint8 scheme the lesson does not use, checked by properties (zero exact, half a step,
the finest step the row allows) so that every valid convention passes.

Nothing here depends on timing. The references are written here, independently of course_lib."""
import functools

import torch
from torch import nn

from ..grader.authoring import CheckFailed, call_learner, exercise, expect, expect_number, randint, written

FORBIDS = ("course_lib.quantization:quantize_per_channel_int8", "course_lib.quantization:quantize_per_tensor_int8",
           "course_lib.quantization:dequantize_int8", "course_lib.quantization:quantization_error",
           "course_lib.quantization:quantize_int8", "course_lib.fast_inference:size_on_disk",
           "torch:quantize_per_channel", "torch:quantize_per_tensor", "torch:fake_quantize_per_channel_affine",
           "torch:fake_quantize_per_tensor_affine", "torch:Tensor.int_repr", "torch:Tensor.dequantize",
           "torch:dequantize", "torch.ao.quantization:quantize_dynamic")



# ---------------------------------------------------------------- Task 1: bytes at int8

def int8_bytes(model: nn.Module, embeddings: bool = False, *, one_byte_all=False, scale_bytes=4,
               scales="row", bias_int8=False, shared_once=True, buffers=False, zero_points=0) -> int:
    """The reference accounting (keyword defaults) and its wrong variants."""
    quantised, biases = {}, set()
    for module in model.modules():
        if isinstance(module, nn.Linear) or (embeddings and isinstance(module, nn.Embedding)):
            quantised[id(module.weight)] = module.weight
            if bias_int8 and getattr(module, "bias", None) is not None:
                biases.add(id(module.bias))
    if shared_once is True:
        params = list(model.parameters())
    elif shared_once == "modules":          # every module once, but a tied parameter under each module
        params = [p for m in model.modules() for p in m.parameters(recurse=False)]
    else:                                   # every name (state_dict, remove_duplicate=False)
        params = [p for _, p in model.named_parameters(remove_duplicate=False)]
    total = 0
    for p in params:
        if one_byte_all:
            total += p.numel()
        elif id(p) in quantised:
            rows, cols = p.shape
            n_scales = {"row": rows, "column": cols, "tensor": 1, "none": 0}[scales]
            total += p.numel() + n_scales * (scale_bytes + zero_points)
        elif id(p) in biases:
            total += p.numel()
        else:
            total += 4 * p.numel()
    if buffers:     # at their own element size, or (a common slip) at 4 bytes each
        total += sum(b.numel() * (b.element_size() if buffers == "own" else 4) for b in model.buffers())
    return total


def _shared_stack(vocab, emb, hidden, depth, classes) -> nn.Module:
    """ALBERT-like: a factorised embedding, one layer registered `depth` times, a head without bias.
    Built from torch containers only: the learner's process can rebuild it (it cannot see this file)."""
    shared = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
    model = nn.ModuleDict({"embed": nn.Embedding(vocab, emb, padding_idx=0), "project": nn.Linear(emb, hidden),
                           "layers": nn.ModuleList([shared] * depth), "norm": nn.LayerNorm(hidden),
                           "head": nn.Linear(hidden, classes, bias=False)})
    model.register_buffer("position_ids", torch.arange(512))
    return model


def _mixed(vocab, dim, out) -> nn.Module:
    """A conv front end (stays float32), a raw 2-D parameter, tied embedding tables, a Linear, a buffer."""
    model = nn.ModuleDict({"tokens": nn.Embedding(vocab, dim), "output_embedding": nn.Embedding(vocab, dim),
                           "conv": nn.Conv1d(dim, dim, 3), "out": nn.Linear(dim, out)})
    model["output_embedding"].weight = model["tokens"].weight     # tied: one table
    model.register_parameter("mixing", nn.Parameter(torch.randn(dim, dim)))   # held directly
    model.register_buffer("running", torch.zeros(dim, 64))
    return model


def _models(rng):
    from course_lib.bert import BertConfig, BertModel
    heads = randint(rng, 1, 4)
    hidden = heads * randint(rng, 4, 12)
    config = BertConfig(vocab_size=randint(rng, 50, 400), hidden_size=hidden, num_hidden_layers=randint(rng, 1, 4),
                        num_attention_heads=heads, intermediate_size=2 * hidden + randint(rng, 0, 16),
                        max_position_embeddings=randint(rng, 16, 80), type_vocab_size=2)
    bert = BertModel(config)
    stack = _shared_stack(randint(rng, 30, 200), randint(rng, 4, 16), randint(rng, 8, 32), randint(rng, 2, 5),
                         randint(rng, 2, 6))
    mixed = _mixed(randint(rng, 20, 100), randint(rng, 4, 16), randint(rng, 2, 8))
    bert_name = (f"a course BertModel (vocab {config.vocab_size}, hidden {hidden}, {config.num_hidden_layers} "
                 f"layer(s))")
    return [(bert, bert_name, False), (bert, bert_name, True),
            (stack, "an ALBERT-like model: one layer registered 3+ times, a head without bias", False),
            (stack, "an ALBERT-like model: one layer registered 3+ times, a head without bias", True),
            (mixed, "a Conv1d, a raw 2-D parameter, two tied embedding tables, a buffer", True),
            (mixed, "a Conv1d, a raw 2-D parameter, two tied embedding tables, a buffer", False)]


def _size_slip(model, embeddings, got) -> str | None:
    slips = [
        (dict(one_byte_all=True), "every parameter counted at 1 byte: only nn.Linear weights (and, with "
                                  "embeddings=True, nn.Embedding tables) become int8; biases, LayerNorm, other "
                                  "layers and parameters held directly stay float32"),
        (dict(scales="none"), "the scales are missing: every output row keeps one float32 scale (4 bytes)"),
        (dict(scales="tensor"), "one scale per matrix: per channel means one per output row"),
        (dict(scales="column"), "one scale per input column: a Linear's weight is (out_features, in_features), "
                                "and a channel is an output row"),
        (dict(buffers=4), "the buffers were counted: they are not parameters (position ids, running "
                          "statistics)"),
        (dict(scale_bytes=8), "the scales counted at 8 bytes: the accounting stores them as float32"),
        (dict(zero_points=4), "a zero point counted per row: symmetric int8 has none (0 is code 0)"),
        (dict(zero_points=8), "a zero point counted per row: symmetric int8 has none (0 is code 0)"),
        (dict(bias_int8=True), "the biases counted at 1 byte: they stay float32"),
        (dict(shared_once=False), "a shared parameter counted more than once (state_dict and "
                                  "named_parameters(remove_duplicate=False) list it under every name): "
                                  "a shared layer or a tied table is stored once"),
        (dict(shared_once="modules"), "a tied parameter counted more than once (once for every module that holds "
                                      "it): a tied table is stored once - model.parameters() lists it once"),
        (dict(buffers="own"), "the buffers were counted: they are not parameters (position ids, running "
                             "statistics)"),
    ]
    for kwargs, message in slips:
        other = int8_bytes(model, embeddings, **kwargs)
        if got == other and other != int8_bytes(model, embeddings):
            return message
    if got == int8_bytes(model, not embeddings):
        return (f"that is the count with embeddings={not embeddings}: " +
                ("the nn.Embedding tables stay float32 unless embeddings=True" if not embeddings else
                 "with embeddings=True the nn.Embedding tables are int8 too"))
    fp32 = 4 * sum(p.numel() for p in model.parameters())
    if got == fp32:
        return "that is the float32 size: nothing was counted at 1 byte"
    if got == 8 * int8_bytes(model, embeddings):
        return "that is in bits: count bytes"
    return None


@exercise("25.int8-size", points=2, uses="int8_size_bytes", forbids=FORBIDS)
def check_int8_size(fn, rng):
    """Bytes of a model's parameters with int8 Linear (and Embedding) weights and per-row scales.

    Every nn.Linear weight (and nn.Embedding with embeddings=True) at 1 byte plus a float32 scale per
    row, the rest float32, each parameter once."""
    for case, (model, name, embeddings) in enumerate(_models(rng)):
        label = f"case {case}: {name}, embeddings={embeddings}"
        got = call_learner(label, fn, model, embeddings)
        got = expect_number(label, got, "int8_size_bytes")
        want = int8_bytes(model, embeddings)
        if got != want:
            slip = _size_slip(model, embeddings, int(got) if got == int(got) else -1)
            fp32 = 4 * sum(p.numel() for p in model.parameters())
            slip = slip or ("it matches none of the usual slips (a scale per output row, biases and the rest "
                            "float32, shared parameters once)")
            raise CheckFailed(f"[{label}] got {got:,.0f} bytes, expected {want:,} (float32: {fp32:,}) - {slip}")
    return None


@functools.lru_cache(maxsize=1)
def bert_base_sizes():
    """(float32, Linear-only int8, every matrix int8) bytes of BERT-base, counted on the meta device."""
    from course_lib.bert import BertConfig, BertModel
    config = BertConfig(vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                        intermediate_size=3072, max_position_embeddings=512, type_vocab_size=2)
    with torch.device("meta"):
        model = BertModel(config)
    return 4 * sum(p.numel() for p in model.parameters()), int8_bytes(model), int8_bytes(model, True)


@exercise("25.predict-size", points=1, uses="predicted_bert_base_shrink")
def check_predict_size(predicted, rng=None):
    """BERT-base's float32 size over its size with int8 Linear weights, predicted from its configuration."""
    case = "your prediction"
    predicted = expect_number(case, predicted, "predicted_bert_base_shrink")
    fp32, linear, every = bert_base_sizes()
    shrink, shrink_all = fp32 / linear, fp32 / every
    beside = (f"you predicted {predicted:g}; the accounting gives {fp32 / 1e6:.1f} MB -> {linear / 1e6:.1f} MB, "
              f"{shrink:.2f}x")
    if abs(predicted - shrink) <= 0.04 * shrink:
        return (beside + f" (PyTorch's BERT tutorial measured 438 MB -> 181 MB; with the embeddings int8 too, "
                f"{shrink_all:.2f}x)")
    if abs(predicted - 4) <= 0.1 or abs(predicted - shrink_all) <= 0.1:
        why = ("4x holds only where int8 is applied: the embedding tables, 22% of BERT-base's weights, stay "
               "float32 under PyTorch's dynamic int8")
    elif abs(predicted - 1.55) <= 0.1:
        why = "that is MiniLM's: half its weights are embeddings, BERT-base's share is smaller"
    elif predicted < 1:
        why = "the shrink is float32 size / int8 size, more than 1"
    else:
        why = "count the parameters in the embedding tables and in the Linear layers"
    raise CheckFailed(f"[{case}] {beside} - {why}")


# ---------------------------------------------------------------- Task 2: asymmetric uint8

def _weight(rng, case):
    """Rows of different scales: symmetric, all positive, all negative; exact zeros in every case;
    a zero row and a constant row; values x1000."""
    out_f, in_f = randint(rng, 4, 30), randint(rng, 3, 40)
    w = torch.randn(out_f, in_f, generator=rng) * (torch.rand(out_f, 1, generator=rng) * 0.5 + 0.01)
    kind = torch.randint(0, 3, (out_f,), generator=rng)
    kind[:3] = torch.tensor([0, 1, 2])
    w[kind == 1] = w[kind == 1].abs() + 0.2                      # all positive, away from 0
    w[kind == 2] = -w[kind == 2].abs()                           # all negative
    pruned = (torch.rand(out_f, in_f, generator=rng) < 0.1) & (kind == 0)[:, None]
    w[pruned] = 0.0                                              # pruned weights: exact zeros
    if case == 0:
        w[3] = 0.0                                               # a row of zeros
        if out_f > 4:
            w[4] = 0.37                                          # a constant positive row
    if case == 3:
        w = w * 1e3
    return w


def _parts(name, got, out_f):
    if not (isinstance(got, (tuple, list)) and len(got) == 3):
        raise CheckFailed(f"[{name}] return a tuple (q, scale, zero_point), got {type(got).__name__}")
    q, scale, zero_point = got
    for value, what in ((q, "q"), (scale, "scale"), (zero_point, "zero_point")):
        if not isinstance(value, torch.Tensor):
            raise CheckFailed(f"[{name}] {what} should be a tensor, got {type(value).__name__}")
    return q, scale, zero_point


def _symmetric_error(w):
    step = w.abs().amax(1) / 127
    step = torch.where(step > 0, step, torch.ones_like(step))[:, None]
    return float(torch.linalg.norm(w - (w / step).round().clamp(-127, 127) * step) / torch.linalg.norm(w))


@exercise("25.asymmetric", points=2, uses="quantize_asymmetric", forbids=FORBIDS)
def check_asymmetric(fn, rng):
    """Per row: 0 exact, every weight within half a step, the finest step the row's range allows."""
    for case in range(5):
        w = _weight(rng, case)
        out_f = w.shape[0]
        name = f"case {case}: weight {tuple(w.shape)}{' (x1000)' if case == 3 else ''}"
        q, scale, zero_point = _parts(name, call_learner(name, fn, w.clone()), out_f)
        if q.shape != w.shape:
            raise CheckFailed(f"[{name}] q has shape {tuple(q.shape)}, expected {tuple(w.shape)}")
        if scale.numel() == 1 and out_f > 1:
            raise CheckFailed(f"[{name}] one scale for the whole matrix: every output row gets its own")
        if scale.numel() != out_f or zero_point.numel() != out_f:
            raise CheckFailed(f"[{name}] expected one scale and one zero_point per output row ({out_f}), got "
                              f"{scale.numel()} and {zero_point.numel()}")
        scale = scale.detach().reshape(-1).double()
        zp = zero_point.detach().reshape(-1).double()
        codes = q.detach().double()
        if q.dtype == torch.int8 and (codes < 0).any():
            raise CheckFailed(f"[{name}] q holds negative codes in int8: codes above 127 wrapped around; the "
                              f"asymmetric scheme's codes are 0..255 (torch.uint8)")
        if not torch.isfinite(scale).all() or (scale <= 0).any():
            r = int(torch.nonzero(~torch.isfinite(scale) | (scale <= 0))[0])
            raise CheckFailed(f"[{name}] row {r} (min {w[r].min().item():.4g}, max {w[r].max().item():.4g}) has "
                              f"scale {scale[r].item()}: every row needs a positive, finite step"
                              f"{' - a row of zeros has range 0: give it any positive scale' if (w[r] == 0).all() else ''}")
        if (zp != zp.round()).any() or (zp < 0).any() or (zp > 255).any():
            r = int(torch.nonzero((zp != zp.round()) | (zp < 0) | (zp > 255))[0])
            raise CheckFailed(f"[{name}] row {r} (min {w[r].min().item():.4g}, max {w[r].max().item():.4g}): "
                              f"zero_point {zp[r].item():g} is not a code in 0..255, so 0 is not represented - "
                              f"the range mapped onto the codes must include 0")
        if (codes < 0).any() or (codes > 255).any() or (codes != codes.round()).any():
            raise CheckFailed(f"[{name}] q holds values outside the codes 0..255 (min {codes.min().item():g}, "
                              f"max {codes.max().item():g})")
        back = scale[:, None] * (codes - zp[:, None])                       # (out, in) what q stands for
        zeros = (w == 0) & (back != 0)
        if zeros.any():
            r, c = (int(v) for v in torch.nonzero(zeros)[0])
            raise CheckFailed(f"[{name}] w[{r}, {c}] = 0 comes back as {back[r, c].item():.4g}: 0 must be exact "
                              f"(q = zero_point)")
        error = (w.double() - back).abs()
        bound = 0.5 * scale[:, None] * (1 + 1e-4) + 1e-6 * w.double().abs()
        if (error > bound).any():
            r, c = (int(v) for v in torch.nonzero(error > bound)[0])
            lo, hi = min(w[r].min().item(), 0.0), max(w[r].max().item(), 0.0)
            hint = ""
            if w[r].min() > 0 or w[r].max() < 0:
                hint = (" - this row's weights are all of one sign: the codes must cover the range from 0 to "
                        "its far end, not only min..max")
            elif int(codes[r, c]) in (0, 255):
                hint = " - the code was clamped: the row's range does not fit in the 256 codes at this step"
            elif error[r, c] <= scale[r] * 1.0001:
                hint = " - rounded down or truncated? Round to the nearest code: that keeps every weight within half a step"
            raise CheckFailed(f"[{name}] w[{r}, {c}] = {w[r, c].item():.5g} comes back as {back[r, c].item():.5g}, "
                              f"off by {error[r, c].item():.3g}, more than half a step ({scale[r].item() / 2:.3g}); "
                              f"row range with 0: [{lo:.4g}, {hi:.4g}]{hint}")
        lo = w.double().amin(1).clamp(max=0)
        hi = w.double().amax(1).clamp(min=0)
        finest = (hi - lo) / 255
        coarse = (finest > 0) & (scale > finest * 1.001)
        if coarse.any():
            r = int(torch.nonzero(coarse)[0])
            times = scale[r].item() / finest[r].item()
            symmetric = max(abs(lo[r].item()), hi[r].item()) / 127
            if abs(scale[r].item() - symmetric) <= 1e-3 * symmetric:
                hint = ("the symmetric step max|row| / 127: its codes reach out to -max|row| and +max|row| "
                        "whatever the row's range (on a one-sided row half of them are never used)")
            elif w[r].min() > 0 or w[r].max() < 0:
                hint = ("this row's weights are all of one sign: the range with 0 runs from 0 to its far end, "
                        "and the 256 codes should span that range, no more")
            else:
                hint = "the 256 codes should span the row's range (with 0), no more"
            raise CheckFailed(f"[{name}] row {r} (min {w[r].min().item():.4g}, max {w[r].max().item():.4g}): step "
                              f"{scale[r].item():.4g} is {times:.2f}x the finest its range allows ({finest[r].item():.4g}) "
                              f"- {hint}")
    g = torch.Generator().manual_seed(25)
    positive = torch.rand(64, 256, generator=g) + 0.05                   # all-positive rows
    q, scale, zp = call_learner("an all-positive 64 x 256 matrix", fn, positive.clone())
    back = scale.double().reshape(-1, 1) * (q.double() - zp.double().reshape(-1, 1))
    yours = float(torch.linalg.norm(positive.double() - back) / torch.linalg.norm(positive.double()))
    symmetric = _symmetric_error(positive)
    return (f"on an all-positive 64 x 256 matrix your scheme's error is {symmetric / yours:.2f}x smaller than the "
            f"symmetric int8 one's ({yours:.2e} vs {symmetric:.2e})")


@exercise("25.asymmetric-dtypes", points=1, uses="quantize_asymmetric", forbids=FORBIDS)
def check_asymmetric_dtypes(fn, rng):
    """q torch.uint8 (out, in), scale floating (out,), zero_point an integer tensor (out,)."""
    w = _weight(rng, 1)
    name = f"weight {tuple(w.shape)}"
    q, scale, zero_point = _parts(name, call_learner(name, fn, w.clone()), w.shape[0])
    expect(q.dtype == torch.uint8, f"[{name}] q should have dtype torch.uint8 (codes 0..255, one byte each), got "
                                   f"{q.dtype}" + (" - int8 holds -128..127" if q.dtype == torch.int8 else ""))
    expect(tuple(q.shape) == tuple(w.shape), f"[{name}] q has shape {tuple(q.shape)}, expected {tuple(w.shape)}")
    expect(scale.is_floating_point(), f"[{name}] scale should be a floating tensor, got {scale.dtype}")
    expect(tuple(scale.shape) == (w.shape[0],), f"[{name}] scale should have shape ({w.shape[0]},), got "
                                                 f"{tuple(scale.shape)}")
    expect(not zero_point.is_floating_point() and zero_point.dtype != torch.bool,
           f"[{name}] zero_point should be an integer tensor (a code), got {zero_point.dtype}")
    expect(tuple(zero_point.shape) == (w.shape[0],), f"[{name}] zero_point should have shape ({w.shape[0]},), got "
                                                      f"{tuple(zero_point.shape)}")


@functools.lru_cache(maxsize=1)
def error_ratio_measured():
    """Symmetric int8 over asymmetric uint8 relative error, per channel, on an all-positive matrix."""
    g = torch.Generator().manual_seed(25)
    w = (torch.rand(256, 256, generator=g) + 0.05).double()
    lo, hi = w.amin(1).clamp(max=0), w.amax(1).clamp(min=0)
    step = ((hi - lo) / 255)[:, None]
    zp = (-lo[:, None] / step).round()
    back = ((w / step).round() + zp).clamp(0, 255).sub(zp) * step
    return _symmetric_error(w) / float(torch.linalg.norm(w - back) / torch.linalg.norm(w))


@exercise("25.predict-error-ratio", points=1, uses="predicted_error_ratio")
def check_predict_error_ratio(predicted, rng=None):
    """The predicted ratio of symmetric to asymmetric per-channel error on all-positive rows."""
    case = "your prediction"
    predicted = expect_number(case, predicted, "predicted_error_ratio")
    measured = error_ratio_measured()
    beside = f"you predicted {predicted:g}; the measurement on an all-positive 256 x 256 matrix gives {measured:.2f}"
    if 1.8 <= predicted <= 2.2:
        return beside
    if abs(predicted - 4) <= 0.3:
        why = "the rounding error grows with the step, not with its square"
    elif abs(predicted - 1) <= 0.15:
        why = ("both have 256 codes, but the symmetric grid spends half of them on negative values the row "
               "never takes")
    elif predicted < 1:
        why = "the symmetric error is the larger one: the ratio is above 1"
    else:
        why = "compare the two steps over the same all-positive row"
    raise CheckFailed(f"[{case}] {beside} - {why}")


# ---------------------------------------------------------------- the question, in words

written("25.written", points=2, rubric=(
    "Quantise the weights to int8 with one scale per output channel and run them in an int8 runtime (ONNX "
    "Runtime): about 4x smaller where int8 is applied, and in the lesson's run about twice as fast as the "
    "fastest float32 path; per-tensor scales lose fidelity because a few rows hold much larger weights "
    "(mean cosine 0.96 vs 0.993).",
    "'4x smaller' holds only where int8 is applied: PyTorch's dynamic int8 converts only nn.Linear, so "
    "MiniLM (half its weights in embeddings) shrinks 1.5x; ONNX Runtime also quantises the embeddings (3.9x).",
    "Speed is measured against the fastest float32 path (SDPA or ONNX Runtime fp32), at the deployment's batch "
    "size, thread count and machine; the old 'ONNX Runtime is 3x faster' folds two steps into one.",
    "Fidelity is checked, not assumed: cosine to the float32 embeddings or the downstream metric (PyTorch's "
    "default 7-bit activations cost fidelity; bf16 only on CPUs with native support).",
    "Low-rank factorisation or dropping layers only pays with retraining/distillation (cosine 0.54 and 0.34 "
    "without it).",
))
