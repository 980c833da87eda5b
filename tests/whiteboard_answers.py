"""Answers to the whiteboard drill (`course interview --whiteboard`), as a learner would write them in
work/whiteboard/<task>.py: the reference of each task, honest variants that must score full marks
too, and plausible mistakes, each with the diagnosis (course_tools.checks.whiteboard.DIAGNOSES key)
its feedback must carry. They live in tests, not in the package the learner sees."""
from __future__ import annotations

# ---------------------------------------------------------------- sdpa

SDPA = '''\
import math

import torch


def attention(q, k, v, key_padding_mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])          # (B, T_q, T_k)
    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
'''

# einsum, the scale folded into q, a large negative additive mask, exp/sum by hand
SDPA_HONEST = '''\
import torch


def attention(q, k, v, key_padding_mask=None):
    q = q * q.size(-1) ** -0.5
    scores = torch.einsum("bqd,bkd->bqk", q, k)
    if key_padding_mask is not None:
        scores = scores + (~key_padding_mask).unsqueeze(1).float() * -1e9
    scores = scores - scores.amax(dim=-1, keepdim=True)
    e = scores.exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("bqk,bkd->bqd", weights, v), weights
'''

# softmax first, then zero the padded keys and renormalise: the same weights
SDPA_RENORMALISED = SDPA.replace('''    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
''', '''    weights = torch.softmax(scores, dim=-1)
    if key_padding_mask is not None:
        weights = weights * key_padding_mask[:, None, :]
        weights = weights / weights.sum(dim=-1, keepdim=True)
''')

SDPA_MISTAKES = {
    "no_scale": (SDPA.replace(" / math.sqrt(q.shape[-1])", ""), "wb.sdpa.unmasked"),
    "scale_dv": (SDPA.replace("math.sqrt(q.shape[-1])", "math.sqrt(v.shape[-1])"), "wb.sdpa.unmasked"),
    "softmax_dim": (SDPA.replace("dim=-1", "dim=1"), "wb.sdpa.unmasked"),
    "mask_after": (SDPA.replace('''    if key_padding_mask is not None:
        scores = scores.masked_fill(~key_padding_mask[:, None, :], float("-inf"))
    weights = torch.softmax(scores, dim=-1)
''', '''    weights = torch.softmax(scores, dim=-1)
    if key_padding_mask is not None:
        weights = weights.masked_fill(~key_padding_mask[:, None, :], 0.0)
'''), "wb.sdpa.padding"),
    "mask_axis": (SDPA.replace("~key_padding_mask[:, None, :]", "~key_padding_mask[:, :, None]"), "wb.sdpa.padding"),
    "mask_inverted": (SDPA.replace("~key_padding_mask[:, None, :]", "key_padding_mask[:, None, :]"), "wb.sdpa.padding"),
}

# the forbidden kernel, under another import name
SDPA_SHORTCUT = '''\
import torch
from torch.nn import functional as G
from torch.nn.functional import scaled_dot_product_attention as attend


def attention(q, k, v, key_padding_mask=None):
    mask = None if key_padding_mask is None else key_padding_mask[:, None, :]
    out = attend(q, k, v, attn_mask=mask)
    return out, None
'''
SDPA_SHORTCUT_ALIAS = '''\
import torch
import torch.nn.functional as G


def attention(q, k, v, key_padding_mask=None):
    mask = None if key_padding_mask is None else key_padding_mask[:, None, :]
    return G.scaled_dot_product_attention(q, k, v, attn_mask=mask), None
'''
# reached through a name the static check cannot resolve: the sandbox's kernel watch catches it
SDPA_SHORTCUT_HIDDEN = '''\
import torch

ops = [torch.nn.functional]


def attention(q, k, v, key_padding_mask=None):
    mask = None if key_padding_mask is None else key_padding_mask[:, None, :]
    fn = ops[0].scaled_dot_product_attention
    out = fn(q, k, v, attn_mask=mask)
    weights = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return out, weights
'''

# ---------------------------------------------------------------- mha

MHA = '''\
import math

import torch
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        assert d_model % num_heads == 0
        self.num_heads, self.head_dim = num_heads, d_model // num_heads
        self.q_proj = nn.Linear(d_model, d_model)
        self.k_proj = nn.Linear(d_model, d_model)
        self.v_proj = nn.Linear(d_model, d_model)
        self.out_proj = nn.Linear(d_model, d_model)

    def split(self, x):                      # (B, T, d_model) -> (B, h, T, head_dim)
        B, T, _ = x.shape
        return x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, key_padding_mask=None, causal=False):
        q, k, v = self.split(self.q_proj(query)), self.split(self.k_proj(key)), self.split(self.v_proj(value))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)      # (B, h, T_q, T_k)
        if key_padding_mask is not None:
            scores = scores.masked_fill(~key_padding_mask[:, None, None, :], float("-inf"))
        if causal:
            T_q, T_k = scores.shape[-2:]
            future = torch.ones(T_q, T_k, dtype=torch.bool, device=scores.device).triu(1)
            scores = scores.masked_fill(future, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(query.shape)         # (B, T_q, d_model)
        return self.out_proj(out)
'''

# einsum per head, reshape + permute, one combined boolean mask, returns (output, weights)
MHA_HONEST = '''\
import torch
import torch.nn as nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, query, key, value, key_padding_mask=None, causal=False):
        B, T_q, d = query.shape
        T_k = key.shape[1]
        hd = d // self.h
        q = self.q_proj(query).reshape(B, T_q, self.h, hd).permute(0, 2, 1, 3)
        k = self.k_proj(key).reshape(B, T_k, self.h, hd).permute(0, 2, 1, 3)
        v = self.v_proj(value).reshape(B, T_k, self.h, hd).permute(0, 2, 1, 3)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) * hd ** -0.5
        keep = torch.ones(B, 1, T_q, T_k, dtype=torch.bool)
        if key_padding_mask is not None:
            keep = keep & key_padding_mask.view(B, 1, 1, T_k)
        if causal:
            keep = keep & torch.tril(torch.ones(T_q, T_k, dtype=torch.bool))
        scores = scores.masked_fill(~keep, torch.finfo(scores.dtype).min)
        weights = scores.softmax(-1)
        out = torch.einsum("bhqk,bhkd->bqhd", weights, v).reshape(B, T_q, d)
        return self.out_proj(out), weights
'''

MHA_MISTAKES = {
    "no_scale": (MHA.replace(" / math.sqrt(self.head_dim)", ""), "wb.mha.heads"),
    "scale_d_model": (MHA.replace("math.sqrt(self.head_dim)", "math.sqrt(self.num_heads * self.head_dim)"),
                      "wb.mha.heads"),
    "split_view": (MHA.replace("x.view(B, T, self.num_heads, self.head_dim).transpose(1, 2)",
                               "x.view(B, self.num_heads, T, self.head_dim)")
                   .replace("(weights @ v).transpose(1, 2).reshape(query.shape)", "(weights @ v).reshape(query.shape)"),
                   "wb.mha.heads"),
    "merge_view": (MHA.replace("(weights @ v).transpose(1, 2).reshape(query.shape)", "(weights @ v).reshape(query.shape)"),
                   "wb.mha.heads"),
    "no_out_proj": (MHA.replace("return self.out_proj(out)", "return out"), "wb.mha.heads"),
    "mask_axis": (MHA.replace("~key_padding_mask[:, None, None, :]", "~key_padding_mask[:, None, :, None]"),
                  "wb.mha.padding"),
    "causal_future": (MHA.replace(".triu(1)", ".tril(-1)"), "wb.mha.causal"),
    "causal_strict": (MHA.replace(".triu(1)", ".triu(0)"), "wb.mha.causal"),
}

MHA_SHORTCUT = '''\
from torch import nn


class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.inner = nn.MultiheadAttention(d_model, num_heads, batch_first=True)

    def forward(self, query, key, value, key_padding_mask=None, causal=False):
        return self.inner(query, key, value, key_padding_mask=None if key_padding_mask is None else ~key_padding_mask)[0]
'''

# ---------------------------------------------------------------- mlm

MLM = '''\
import torch


def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None):
    labels = input_ids.clone()
    selected = (torch.rand(input_ids.shape, generator=generator) < 0.15) & ~special_tokens_mask
    labels[~selected] = -100
    masked = input_ids.clone()
    action = torch.rand(input_ids.shape, generator=generator)
    to_mask = selected & (action < 0.8)
    to_random = selected & (action >= 0.8) & (action < 0.9)
    masked[to_mask] = mask_token_id
    random_ids = torch.randint(mask_token_id + 1, vocab_size, input_ids.shape, generator=generator)
    masked[to_random] = random_ids[to_random]
    return masked, labels
'''

# Hugging Face's collator's way: bernoulli draws, 0.8 then 0.5 of the rest; torch.where
MLM_HONEST = '''\
import torch


def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None):
    probability = torch.full(input_ids.shape, 0.15)
    probability.masked_fill_(special_tokens_mask, 0.0)
    selected = torch.bernoulli(probability, generator=generator).bool()
    labels = torch.where(selected, input_ids, torch.full_like(input_ids, -100))
    replaced = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & selected
    inputs = input_ids.clone()
    inputs[replaced] = mask_token_id
    random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & selected & ~replaced
    words = torch.randint(mask_token_id + 1, vocab_size, input_ids.shape, dtype=torch.long, generator=generator)
    inputs[random] = words[random]
    return inputs, labels
'''

MLM_MISTAKES = {
    "special_selected": (MLM.replace(" & ~special_tokens_mask", ""), "wb.mlm.select"),
    "labels_fill": (MLM.replace("labels[~selected] = -100", "labels[~selected] = 0"), "wb.mlm.select"),
    "labels_everywhere": (MLM.replace("    labels[~selected] = -100\n", ""), "wb.mlm.select"),
    "labels_masked": (MLM.replace("    return masked, labels", "    labels[selected] = masked[selected]\n"
                                  "    return masked, labels"), "wb.mlm.select"),
    "split_half": (MLM.replace("(action < 0.9)", "(action < 0.82)"), "wb.mlm.split"),
    "random_special": (MLM.replace("torch.randint(mask_token_id + 1, vocab_size", "torch.randint(0, vocab_size"),
                       "wb.mlm.split"),
    "in_place": (MLM.replace("    masked = input_ids.clone()\n", "    masked = input_ids\n"), "wb.mlm.select"),
}

MLM_SHORTCUT = '''\
from course_lib.masking import mask_tokens as course_mask


def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None):
    return course_mask(input_ids, mask_token_id=mask_token_id, vocab_size=vocab_size,
                       special_tokens_mask=special_tokens_mask, generator=generator)
'''

ANSWERS = {"sdpa": SDPA, "mha": MHA, "mlm": MLM}
HONEST = {"sdpa": [SDPA_HONEST, SDPA_RENORMALISED], "mha": [MHA_HONEST], "mlm": [MLM_HONEST]}
MISTAKES = {"sdpa": SDPA_MISTAKES, "mha": MHA_MISTAKES, "mlm": MLM_MISTAKES}
SHORTCUTS = {"sdpa": [SDPA_SHORTCUT, SDPA_SHORTCUT_ALIAS], "mha": [MHA_SHORTCUT], "mlm": [MLM_SHORTCUT]}
