"""Argument checks that fail loudly, naming the argument and the expected vs actual value.

Arguments are checked where a user enters (CONTRIBUTING.md, "Style"): the top-level models'
forwards, the configs' __post_init__, the public functions a lesson calls - one helper call per
argument, so that a mistake that would otherwise pass silently (an id past the vocabulary, a
float mask read as a score bias, a typo read as another option) gets a sentence. The layers
inside a model check nothing that PyTorch's own error already says.
"""
from __future__ import annotations

import numbers

import torch


def shape_str(x) -> str:
    """A tensor's shape as "(2, 5)"; for something without a shape, its type (messages never crash)."""
    return str(tuple(x.shape)) if hasattr(x, "shape") else type(x).__name__


def require_tensor(name: str, x) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise ValueError(f"{name}: expected a torch.Tensor, got {type(x).__name__}")
    return x


def require_rank(name: str, x, rank: int | None = None, min_rank: int | None = None,
                 layout: str = "") -> torch.Tensor:
    """Check x.dim(); `layout` (e.g. "(B, T, d_model)") goes into the message."""
    require_tensor(name, x)
    hint = f" {layout}" if layout else ""
    if rank is not None and x.dim() != rank:
        raise ValueError(f"{name}: expected a {rank}-D tensor{hint}, got shape {shape_str(x)}")
    if min_rank is not None and x.dim() < min_rank:
        raise ValueError(f"{name}: expected at least {min_rank} dimensions{hint}, "
                         f"got shape {shape_str(x)}")
    return x


def require_bool_mask(name: str, mask, target_shape: tuple[int, ...], layout: str) -> torch.Tensor:
    """A boolean mask (True = may attend) that broadcasts to `target_shape`."""
    require_tensor(name, mask)
    if mask.dtype != torch.bool:
        raise ValueError(f"{name}: expected dtype torch.bool (True = may attend), got {mask.dtype}")
    try:
        torch.broadcast_shapes(mask.shape, target_shape)
        ok = mask.dim() <= len(target_shape)
    except RuntimeError:
        ok = False
    if not ok or torch.broadcast_shapes(mask.shape, target_shape) != torch.Size(target_shape):
        raise ValueError(f"{name}: shape {shape_str(mask)} does not broadcast to "
                         f"{tuple(target_shape)} {layout}")
    return mask


def require_attention_mask(name: str, attention_mask, like=None, like_name: str = "input_ids",
                           floats: bool = False) -> torch.Tensor:
    """A (B, T) attention_mask in Hugging Face's convention, 1 (or True) = token, 0 = padding:
    bool or 0/1 integers (0./1. floats too when `floats`). With `like` (the ids it masks, or
    their shape) it must have that shape. The models check their attention_mask with this at
    their entry; `course_lib.transformer.padding_mask` then turns it into the (B, 1, 1, T) mask
    that attention takes. The 0/1 values are read on the CPU only (see `require_ids`)."""
    require_tensor(name, attention_mask)
    if like is not None:
        # the shape of the ids names the rank too, and says more: a (B, 1, 1, T) mask made for
        # another library's attention reads "expected (B, T) like input_ids, got (B, 1, 1, T)"
        expected = tuple(like.shape if isinstance(like, torch.Tensor) else like)
        if tuple(attention_mask.shape) != expected:
            raise ValueError(f"{name}: expected shape {expected} (B, T) like {like_name}, "
                             f"got {shape_str(attention_mask)}")
    require_rank(name, attention_mask, rank=2, layout="(B, T)")
    if attention_mask.dtype == torch.bool:
        return attention_mask
    if attention_mask.is_complex() or (attention_mask.is_floating_point() and not floats):
        raise ValueError(f"{name}: expected 0/1 integers or bool, got {attention_mask.dtype}")
    if attention_mask.device.type == "cpu" and ((attention_mask != 0) & (attention_mask != 1)).any():
        raise ValueError(f"{name}: expected only 0 (padding) and 1 (token) values")
    return attention_mask


def require_divisible(name: str, value: int, divisor_name: str, divisor: int) -> None:
    if divisor <= 0 or value % divisor != 0:
        raise ValueError(f"{name}={value} must be divisible by {divisor_name}={divisor}")


def require_shape(name: str, x, shape, like: str) -> torch.Tensor:
    """x has exactly `shape`, the shape of `like` (e.g. token_type_ids like input_ids)."""
    require_tensor(name, x)
    if tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {tuple(shape)} like {like}, got {shape_str(x)}")
    return x


def require_instance(name: str, value, cls, what: str | None = None):
    """value is a `cls` (e.g. a config of the right class, an nn.Module)."""
    if not isinstance(value, cls):
        raise ValueError(f"{name}: expected {what or 'a ' + cls.__name__}, got {type(value).__name__}")
    return value


def require_choice(name: str, value, choices):
    """One of a few named options (an activation, a pooling mode, a strategy)."""
    choices = tuple(choices)
    if value not in choices:
        shown = " or ".join(map(repr, choices)) if len(choices) == 2 else f"one of {choices}"
        raise ValueError(f"{name}: expected {shown}, got {value!r}")
    return value


# --- scalars ----------------------------------------------------------------------------------
# Each check names the argument and says what was expected and what came: "d_model: expected a
# positive int, got -64". bool is refused where a number is expected (True is an int in Python).

def is_int(value) -> bool:
    # numpy's integers count (a size read from an array), bool does not
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def require_int(name: str, value, minimum: int | None = None) -> int:
    """An int (not a bool), at least `minimum` when given."""
    if not is_int(value):
        raise ValueError(f"{name}: expected an int, got {type(value).__name__} {value!r}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: expected an int >= {minimum}, got {value}")
    return int(value)


def require_positive_int(name: str, value) -> int:
    """An int >= 1 (a size, a count, a number of heads or layers)."""
    if not is_int(value):
        raise ValueError(f"{name}: expected a positive int, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name}: expected a positive int, got {value}")
    return int(value)


def require_finite(name: str, value, minimum: float | None = None, maximum: float | None = None,
                   strict_minimum: bool = False) -> float:
    """A finite real number (int or float, not bool), within [minimum, maximum] when given
    (`strict_minimum`: > minimum, e.g. a learning rate or an epsilon that must be > 0)."""
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}: expected a finite number, got {type(value).__name__} {value!r}")
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError(f"{name}: expected a finite number, got {value}")
    if minimum is not None and (value <= minimum if strict_minimum else value < minimum):
        raise ValueError(f"{name}: expected a number {'>' if strict_minimum else '>='} {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name}: expected a number <= {maximum}, got {value}")
    return float(value)


def require_positive(name: str, value) -> float:
    """A finite number > 0 (an epsilon, a learning rate, a temperature)."""
    return require_finite(name, value, minimum=0.0, strict_minimum=True)


def require_probability(name: str, value) -> float:
    """A probability: a finite number in [0, 1]."""
    return require_finite(name, value, minimum=0.0, maximum=1.0)


def require_str(name: str, value) -> str:
    """Text: a str (not bytes, not a list of words, not a number)."""
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected a str, got {type(value).__name__} {value!r:.60}")
    return value


def refuse_one_text(name: str, value) -> None:
    """Where a collection of texts is expected, one str is refused: iterating over it would
    yield its characters, each taken for a text."""
    if isinstance(value, str):
        raise ValueError(f"{name}: expected a list of str, got one str {value!r:.60} "
                         f"(wrap it: [{value!r:.30}])")


def require_texts(name: str, value) -> list[str]:
    """A non-empty list (or tuple) of str; a single str is refused (it would be read character by
    character)."""
    refuse_one_text(name, value)
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name}: expected a list of str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name}: expected a non-empty list of str, got an empty {type(value).__name__}")
    for i, text in enumerate(value):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}]: expected a str, got {type(text).__name__} {text!r:.60}")
    return list(value)


# --- tensors ----------------------------------------------------------------------------------

def require_floating(name: str, x) -> torch.Tensor:
    """A floating-point tensor."""
    require_tensor(name, x)
    if not x.is_floating_point():
        raise ValueError(f"{name}: expected a floating-point tensor, got {x.dtype}")
    return x


def require_ids(name: str, ids, vocab_size: int | None = None, allow: tuple[int, ...] = (),
                what: str = "vocab_size") -> torch.Tensor:
    """Integer token ids, each in [0, vocab_size) (or one of `allow`, e.g. -100 for ignored labels).

    The range costs a pass over the ids, so it is read on the CPU only: there an id >= vocab_size
    would fail deep inside an embedding ("index out of range in self"). On an accelerator reading
    the answer back would stall every forward (a device sync); CUDA's own bounds check stops a
    bad id there."""
    require_tensor(name, ids)
    if ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise ValueError(f"{name}: expected integer ids (torch.long), got dtype {ids.dtype}")
    if ids.numel() and vocab_size is not None and ids.device.type == "cpu":
        valid = (ids >= 0) & (ids < vocab_size)
        for value in allow:
            valid |= ids == value
        if not bool(valid.all()):
            allowed = f" or {', '.join(map(str, allow))}" if allow else ""
            raise ValueError(f"{name}: ids must be in [0, {what}={vocab_size}){allowed}, got values in "
                             f"[{int(ids.min())}, {int(ids.max())}]")
    return ids


def require_token_ids(name: str, ids, vocab_size: int, max_len: int | None = None,
                      max_name: str = "max_len") -> torch.Tensor:
    """A model's (B, T) input ids: 2-D, 1 <= T <= max_len (the rows of its position table), each
    in [0, vocab_size) - the one check at a model's entry."""
    require_rank(name, ids, rank=2, layout="(B, T)")
    T = ids.shape[1]
    if T == 0:
        raise ValueError(f"{name}: expected at least one position, got shape {shape_str(ids)}")
    if max_len is not None and T > max_len:
        raise ValueError(f"{name}: sequence length {T} exceeds {max_name}={max_len} (the position "
                         f"table has no row {max_len}); truncate or use a sliding window")
    return require_ids(name, ids, vocab_size)


def require_id(name: str, value, vocab_size: int, what: str = "vocab_size") -> int:
    """One token id (an int such as bos_id or mask_token_id) in [0, vocab_size)."""
    require_int(name, value)
    if not 0 <= value < vocab_size:
        raise ValueError(f"{name}: expected an id in [0, {what}={vocab_size}), got {value}")
    return int(value)


def require_labels(name: str, labels, num_classes: int, ignore_index: int | None = -100,
                   what: str = "num_classes") -> torch.Tensor:
    """Class labels in [0, num_classes), or `ignore_index` (-100, what cross_entropy skips)."""
    allow = (ignore_index,) if ignore_index is not None else ()
    return require_ids(name, labels, num_classes, allow=allow, what=what)


def require_finite_values(name: str, x) -> torch.Tensor:
    """A floating tensor without NaN or ±inf (one reduction over x: for weights and scores that a
    NaN would silently spoil, not for activations in a training loop)."""
    require_floating(name, x)
    if not bool(torch.isfinite(x).all()):
        n_bad = int((~torch.isfinite(x)).sum())
        raise ValueError(f"{name}: expected finite values, got {n_bad} NaN or inf in shape {shape_str(x)}")
    return x


def require_same_dtype(name: str, x, reference_name: str, reference) -> None:
    """Two tensors that meet in one matrix product have one dtype."""
    if x.dtype != reference.dtype:
        raise ValueError(f"{name}: expected dtype {reference.dtype} like {reference_name}, got {x.dtype}")


def require_same_batch(name: str, x, reference_name: str, reference) -> None:
    """Two tensors that pair up row by row have the same batch size (no silent broadcasting)."""
    if x.shape[0] != reference.shape[0]:
        raise ValueError(f"{name}: batch size {x.shape[0]} differs from {reference_name}'s "
                         f"{reference.shape[0]} (shapes {shape_str(x)} and {shape_str(reference)})")
