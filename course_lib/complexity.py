"""What a sequence layer costs: FLOPs, sequential depth, saved memory, maximum path length (lesson 04).

FLOP convention: that of `torch.utils.flop_counter.FlopCounterMode` - only matrix products and
convolutions count, at 2 FLOPs per multiply-add (an (m, k) @ (k, n) product is 2·m·k·n). Softmax,
tanh, bias additions and the 1/√d_k scaling count 0: they are O(n²) or O(n·d) element-wise work,
never the leading term.

The closed forms below are for one sequence (`batch_size` multiplies them) and square layers
(width d in, width d out), the setting of Table 1 of "Attention Is All You Need":

    self-attention core     QKᵀ and AV            4·n²·d
    + projections           Q, K, V, output       8·n·d²
    restricted attention    window of r keys      4·n·r·d
    recurrent (Elman RNN)   W_ih x_t, W_hh h_t-1  4·n·d²
    convolution             kernel k, same pad    2·k·n·d²
"""
from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from .device import torch_threads
from .validation import is_int

# Autograd nodes of the operations FlopCounterMode counts: the "operations" of a sequential chain.
MATMUL_NODES = frozenset({"MmBackward0", "AddmmBackward0", "BmmBackward0", "BaddbmmBackward0",
                          "ConvolutionBackward0"})


def _require_odd(name: str, value) -> int:
    """A window centred on its position: an even size has no centre (the formulas would be off)."""
    if not is_int(value) or value < 1 or value % 2 == 0:
        raise ValueError(f"{name}: expected an odd positive int (a window centred on the position), "
                         f"got {value!r}")
    return int(value)


# ----------------------------------------------------------------------------- closed forms

def attention_flops(n: int, d: int, *, include_projections: bool = True, batch_size: int = 1) -> int:
    """FLOPs of one self-attention layer over n tokens of width d (any number of heads).

    Core: QKᵀ is (n, d)@(d, n) -> 2·n²·d, AV is (n, n)@(n, d) -> 2·n²·d. Splitting d into h heads of
    d/h changes nothing: h · 2·n²·(d/h) = 2·n²·d. Projections: four (n, d)@(d, d) products, 8·n·d².
    """
    flops = 4 * n * n * d
    if include_projections:
        flops += 8 * n * d * d
    return batch_size * flops


def restricted_attention_flops(n: int, d: int, window: int, *, include_projections: bool = True,
                               batch_size: int = 1) -> int:
    """Self-attention where each query sees only the `window` keys centred on it: 4·n·r·d (+ 8·n·d²)."""
    flops = 4 * n * _require_odd("window", window) * d
    if include_projections:
        flops += 8 * n * d * d
    return batch_size * flops


def rnn_flops(n: int, d: int, *, batch_size: int = 1) -> int:
    """One `nn.RNN(d, d)` layer (Elman, tanh): x_t W_ihᵀ and h_{t-1} W_hhᵀ at every step, 4·n·d²."""
    return batch_size * 4 * n * d * d


def conv1d_flops(n: int, d: int, kernel_size: int, *, batch_size: int = 1) -> int:
    """One `nn.Conv1d(d, d, k, padding=k // 2)`: n outputs, each k·d² multiply-adds, 2·k·n·d²."""
    return batch_size * 2 * _require_odd("kernel_size", kernel_size) * n * d * d


# ----------------------------------------------------------------------------- measurements

def count_flops(fn: Callable, *args, **kwargs) -> int:
    """FLOPs that FlopCounterMode sees while `fn(*args, **kwargs)` runs.

    Run it on the meta device to count without computing. Beware: fused kernels without a
    registered formula (CPU flash attention, oneDNN LSTM, cuDNN RNN) are counted as 0.
    """
    with FlopCounterMode(display=False) as counter:
        fn(*args, **kwargs)
    return int(counter.get_total_flops())


def sequential_depth(output: torch.Tensor) -> int:
    """Longest chain of matrix products / convolutions that feed each other in `output`'s graph.

    Operations on one chain must run one after the other (each needs the previous result), while
    everything inside one product runs in parallel: this is the "sequential operations" column of
    Table 1. Needs an output that requires grad (the autograd graph is the dependency graph).
    """
    if not isinstance(output, torch.Tensor) or output.grad_fn is None:
        raise ValueError("output: expected a tensor with a grad_fn (compute it from inputs or "
                         "parameters that require grad)")
    depth: dict = {}
    stack = [(output.grad_fn, False)]
    while stack:  # iterative post-order: an RNN graph is deeper than Python's recursion limit
        node, expanded = stack.pop()
        if node in depth:
            continue
        children = [child for child, _ in node.next_functions if child is not None]
        if not expanded:
            stack.append((node, True))
            stack.extend((child, False) for child in children if child not in depth)
        else:
            deepest = max((depth[child] for child in children), default=0)
            depth[node] = deepest + (node.name() in MATMUL_NODES)
    return depth[output.grad_fn]


def saved_activation_bytes(fn: Callable, *args, exclude=(), **kwargs) -> int:
    """Bytes of the distinct storages autograd keeps for the backward pass of `fn(*args, **kwargs)`.

    This is the memory a training step holds for the layer, measured exactly instead of from a
    noisy allocator peak. Storages of the tensors in `exclude` (pass `module.parameters()` to
    count activations only) are left out. Needs real tensors, not meta: storages are told apart
    by their address.
    """
    excluded = {tensor.untyped_storage().data_ptr() for tensor in exclude}
    storages: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in excluded:
            storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        fn(*args, **kwargs)
    return sum(storages.values())


def fit_power_law(values, **variables) -> dict[str, float]:
    """Least-squares fit of log(values) = log(c) + Σ_v α_v·log(v); returns {v: α_v, ..., "c": c}.

    fit_power_law(flops, n=ns, d=ds) -> {"n": 2.0, "d": 1.0, "c": 4.0} for 4·n²·d.
    """
    arrays = {name: np.asarray(raw, dtype=float) for name, raw in (("values", values), *variables.items())}
    for name, a in arrays.items():
        # the logs need positive finite numbers: log(0) = -inf and log(-1) = NaN fit nothing
        if a.ndim != 1 or a.shape != arrays["values"].shape or a.size < 2 or not (np.isfinite(a) & (a > 0)).all():
            raise ValueError(f"{name}: expected {max(arrays['values'].size, 2)} or more positive finite "
                             f"numbers like values (their logs are fitted), got {a.tolist()!r:.60}")
    y = np.log(arrays.pop("values"))
    design = np.column_stack([np.log(a) for a in arrays.values()] + [np.ones_like(y)])
    if np.linalg.matrix_rank(design) < design.shape[1]:
        raise ValueError("variables: the points do not vary each variable independently")
    solution, *_ = np.linalg.lstsq(design, y, rcond=None)
    fit = {name: float(a) for name, a in zip(variables, solution[:-1])}
    fit["c"] = float(np.exp(solution[-1]))
    return fit


# ----------------------------------------------------------------------------- path length

def one_thread():
    """Run the block on exactly one CPU thread, then restore the caller's setting.

    One thread whatever COURSE_TORCH_THREADS says (`course_lib.device.torch_threads(1)`): lesson
    04 times layers with `time.thread_time`, the CPU time of the calling thread alone, which
    would miss the work of a second torch thread and report a layer as cheaper than it is. (On
    a busy machine a thread that waits for its partner also measures the neighbours' load, not
    the operation.) Code that only computes asks for `torch_threads()` instead.
    """
    return torch_threads(1)


def max_path_length(hop: Callable[[int], torch.Tensor], n: int, max_hops: int | None = None) -> int:
    """Longest shortest path, in hops, from an input position to an output position that sees it.

    `hop(l)` is the (n, n) boolean connectivity of the l-th hop: entry [i, j] is True when
    position j after the hop reads position i before it. A hop is one layer for stacked layers
    (attention, convolution) and one time step for a recurrence. This is breadth-first search
    over the unrolled graph, one hop (one frontier) at a time; it stops at the first hop that
    reaches no new (input, output) pair.
    """
    max_hops = 4 * n + 8 if max_hops is None else max_hops
    # The matrices are tiny: one thread, or COURSE_TORCH_THREADS' count (the path lengths are
    # sums of 0/1 entries, exact at any thread count).
    with torch_threads():
        return _breadth_first(hop, n, max_hops)


def _breadth_first(hop, n, max_hops):
    reach = torch.eye(n)                                  # paths of length 0: i -> i
    distance = torch.full((n, n), -1, dtype=torch.long)   # -1: not reached yet
    for length in range(1, max_hops + 1):
        reach = ((reach @ hop(length - 1).float()) > 0).float()  # endpoints of paths with `length` hops
        new = (reach > 0) & (distance < 0)
        if not new.any():
            return int(distance.max())
        distance[new] = length
    raise ValueError(f"max_hops={max_hops}: the search had not finished; give more hops")


def attention_hops(n: int) -> Callable[[int], torch.Tensor]:
    """Every position reads every position, in every layer."""
    full = torch.ones(n, n, dtype=torch.bool)
    return lambda layer: full


def band_hops(n: int, window: int) -> Callable[[int], torch.Tensor]:
    """A centred window (a convolution of kernel k, or restricted attention over r keys): |i-j| <= window//2."""
    window = _require_odd("window", window)
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]
    band = offsets.abs() <= window // 2
    return lambda layer: band


def dilated_causal_hops(n: int, kernel_size: int) -> Callable[[int], torch.Tensor]:
    """Layer l is a causal convolution with dilation k**l (WaveNet): j reads j - m·k**l, m < k."""
    offsets = torch.arange(n)[None, :] - torch.arange(n)[:, None]          # j - i

    def hop(layer):
        dilation = kernel_size ** layer
        return (offsets >= 0) & (offsets % dilation == 0) & (offsets // dilation < kernel_size)
    return hop


def recurrent_hops(n: int) -> Callable[[int], torch.Tensor]:
    """Hop 0: x_t enters h_t. Every later hop: h_{t-1} -> h_t (one time step)."""
    step = torch.diag(torch.ones(n - 1, dtype=torch.bool), diagonal=1)    # [t-1, t] = True
    identity = torch.eye(n, dtype=torch.bool)
    return lambda hop_index: identity if hop_index == 0 else step


# ----------------------------------------------------------------------------- restricted attention

def restricted_self_attention(q, k, v, window: int):
    """Self-attention in which query i sees only keys i - window//2 ... i + window//2.

    Table 1's fourth row. Keys and values are cut into one window per query (`unfold`), so
    the work is 4·n·r·d instead of 4·n²·d: nothing outside the window is ever computed.
    q, k: (..., T, d_k), v: (..., T, d_v). Returns (output (..., T, d_v), weights (..., T, window)),
    where weights[..., i, m] belongs to key i - window//2 + m (0 outside the sequence).
    """
    window = _require_odd("window", window)
    T, d_k, half = q.shape[-2], q.shape[-1], window // 2

    k_windows = F.pad(k, (0, 0, half, half)).unfold(-2, window, 1)        # (..., T, d_k, window)
    v_windows = F.pad(v, (0, 0, half, half)).unfold(-2, window, 1)        # (..., T, d_v, window)
    scores = (q.unsqueeze(-2) @ k_windows).squeeze(-2) / math.sqrt(d_k)   # (..., T, window)
    key_index = torch.arange(T, device=q.device)[:, None] + torch.arange(window, device=q.device) - half
    inside = (key_index >= 0) & (key_index < T)                             # (T, window)
    scores = scores.masked_fill(~inside, torch.finfo(scores.dtype).min)     # padding keys get 0 weight
    weights = scores.softmax(dim=-1)
    out = (weights.unsqueeze(-2) @ v_windows.transpose(-2, -1)).squeeze(-2)  # (..., T, d_v)
    return out, weights
