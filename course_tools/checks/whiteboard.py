"""Graded checks of the whiteboard drill (`course interview --whiteboard`, course_tools/whiteboard.py):
three classic interview tasks, written against the clock in a plain .py file and graded by the
course's grader (the learner's code runs in the grader's sandbox, these checks here) on hidden
cases drawn from a fresh seed.

Why one module: one drill's checks, as each checks/lessonNN.py holds one lesson's: the three tasks' items
share one registry (WHITEBOARD), one DIAGNOSES table that whiteboard_zh.py translates as a whole, and the slip
search and failure helpers; a grader author reads here everything the drill grades and every mistake it names.

- `wb.sdpa.*`: scaled dot-product attention with a key padding mask, `attention(q, k, v, key_padding_mask)`;
- `wb.mha.*`: masked multi-head attention, an nn.Module with its own projections;
- `wb.mlm.*`: BERT's MLM masking (15% selected; 80/10/10; specials never selected; labels -100 elsewhere).

They register in their own registry, WHITEBOARD, not in the lessons' REGISTRY: no lesson notebook
grades them, and a lesson's tools (`course grade`, the gradebook) never see them.

The checks are properties, so every valid answer passes: matmul or einsum, any correct head split,
a -inf or a large negative fill, masking before the softmax or renormalising after it, Bernoulli
or exact-count selection. A wrong answer is compared with the known mistakes (no 1/√d_k, the mask
after the softmax, on the query axis or inverted, heads split or merged in the wrong order, the
future visible, [CLS]/[SEP] selected, 10% drawn from the 20% left, labels not -100, ...), alone and
in pairs, and the feedback names the one it matches. Every diagnosis is a template in English and
Chinese (DIAGNOSES), so `--lang zh` shows it in Chinese.
"""
from __future__ import annotations

import itertools
import math

import torch
from torch import nn

from ..grader.authoring import (CheckFailed, call_learner, exercise, expect, expect_close, expect_shape, expect_tensor,
                       expect_tuple, randint)
from ..shortcuts import ATTENTION

#: The drill's checks, by id (the lessons' checks are in grader.authoring.REGISTRY).
WHITEBOARD: dict = {}

ATTENTION_FORBIDS = ATTENTION + ("course_lib.attention:scaled_dot_product_attention",
                                 "course_lib.attention:MultiHeadAttention", "course_lib.attention:split_heads",
                                 "course_lib.attention:merge_heads", "course_lib.self_attention:SelfAttention")
MLM_FORBIDS = ("course_lib.masking:mask_tokens", "course_lib.masking:random_word_ids",
               "transformers:DataCollatorForLanguageModeling",
               "transformers.data.data_collator:DataCollatorForLanguageModeling",
               "transformers:DataCollatorForWholeWordMask")

#: key -> (English, Chinese): the feedback of each diagnosed mistake; `{name}` fields are filled in.
DIAGNOSES = {
    # scaled dot-product attention and multi-head attention
    "no_scale": ("the scores were not scaled: divide q·kᵀ by √d_k (the key dimension; head_dim in each head), or "
                 "the softmax saturates as d_k grows",
                 "分数没有缩放：q·kᵀ 要除以 √d_k（键的维度；多头时为每个头的 head_dim），否则 d_k 越大 softmax 越饱和"),
    "scale_dk": ("the scores were divided by d_k: divide by √d_k", "分数除以了 d_k：应除以 √d_k"),
    "scale_dv": ("the scores were divided by √d_v (the value dimension): the scale is √d_k, the dimension of q and k",
                 "分数除以了 √d_v（值的维度）：缩放用 √d_k，即 q 与 k 的维度"),
    "scale_d_model": ("the scores were divided by √d_model: each head's scores are divided by √head_dim",
                      "分数除以了 √d_model：每个头的分数应除以 √head_dim"),
    "softmax_dim": ("the softmax ran over the queries (dim -2): each query's weights over the keys must sum to 1 "
                    "(dim -1)",
                    "softmax 作用在查询维（dim -2）上：每个查询对所有键的权重之和应为 1（dim -1）"),
    "mask_after": ("the mask was applied after the softmax: the padded keys were zeroed but the other weights were "
                   "not renormalised (a row sums to less than 1) - fill the masked scores with -inf before the "
                   "softmax",
                   "掩码在 softmax 之后才施加：填充键的权重被置零，但其余权重没有重新归一化（每行之和小于 1）——"
                   "应在 softmax 之前把被遮住的分数填为 -inf"),
    "mask_inverted": ("the mask is inverted: True marks a real token (attend to it), False padding (weight 0)",
                      "掩码取反了：True 表示真实 token（可以关注），False 表示填充（权重为 0）"),
    "mask_axis": ("the padding mask was applied to the queries (rows), not the keys (columns): key_padding_mask "
                  "(B, T_k) broadcasts as (B, 1, T_k), or (B, 1, 1, T_k) with heads - every query ignores the padded keys",
                  "填充掩码加在了查询（行）上，而不是键（列）上：key_padding_mask (B, T_k) 应广播为 (B, 1, T_k)，"
                  "多头时为 (B, 1, 1, T_k)——每个查询都忽略填充的键"),
    "split_view": ("the heads were split by viewing (B, T, d_model) as (B, num_heads, T, head_dim): each 'head' then "
                   "mixes positions - view as (B, T, num_heads, head_dim), then transpose(1, 2)",
                   "拆分多头时把 (B, T, d_model) 直接 view 成 (B, num_heads, T, head_dim)：这样每个“头”混杂了不同位置——"
                   "应先 view 成 (B, T, num_heads, head_dim)，再 transpose(1, 2)"),
    "merge_view": ("the heads were merged by viewing (B, num_heads, T, head_dim) as (B, T, d_model) without "
                   "transposing back: transpose(1, 2) first, then reshape",
                   "合并多头时把 (B, num_heads, T, head_dim) 直接 view 成 (B, T, d_model)，没有先转置回来："
                   "应先 transpose(1, 2)，再 reshape"),
    "no_out_proj": ("the heads were merged but out_proj was not applied", "多头合并后没有经过 out_proj"),
    "causal_future": ("the causal mask is transposed: query i sees the keys j ≥ i (the future) - keep j ≤ i "
                      "(torch.tril)",
                      "因果掩码方向反了：查询 i 看到了 j ≥ i 的键（未来）——应保留 j ≤ i（torch.tril）"),
    "causal_strict": ("the causal mask hides the diagonal: query i must see keys j ≤ i, itself included (the first "
                      "query is left with nothing to attend to)",
                      "因果掩码把对角线也遮住了：查询 i 应看到 j ≤ i 的键，包括它自己（否则第一个查询无处可看）"),
    "causal_inverted": ("the causal mask is inverted: query i sees only the keys j > i - mask j > i "
                        "(triu(diagonal=1) marks what to hide)",
                        "因果掩码取反了：查询 i 只看到 j > i 的键——应遮住 j > i（triu(diagonal=1) 标出的是要遮住的位置）"),
    "causal_leak": ("the output at position {pos} changed when only later positions changed: the causal mask "
                    "leaks the future (query i may see keys j ≤ i only)",
                    "只改变后面的位置，位置 {pos} 的输出却变了：因果掩码泄露了未来（查询 i 只能看到 j ≤ i 的键）"),
    "padding_leak": ("the output changed when only padded keys and values changed: padded keys must get weight "
                     "exactly 0 (fill their scores with -inf, or a large negative number, before the softmax)",
                     "只改变被填充的键和值，输出却变了：填充键的权重必须恰好为 0（在 softmax 之前把它们的分数填为 -inf 或很大的负数）"),
    "padding_weight": ("a padded key got weight {weight}: padded keys must get weight exactly 0",
                       "一个填充键得到了权重 {weight}：填充键的权重必须恰好为 0"),
    "rows_sum": ("the weights of a query sum to {total}, not 1: normalise over the real keys only",
                 "某个查询的权重之和为 {total}，不是 1：只在真实的键上归一化"),
    "matches": ("your result matches this mistake: {what}", "你的结果与这个错误一致：{what}"),
    "matches_two": ("your result matches two mistakes at once: {first}; and {second}",
                    "你的结果同时对应两个错误：{first}；另外，{second}"),
    "linear": ("`{name}` should be an nn.Linear({d}, {d}) with a bias, got {got}",
               "`{name}` 应为带偏置的 nn.Linear({d}, {d})，实际是 {got}"),
    "not_module": ("MultiHeadAttention(d_model, num_heads) should be an nn.Module", "MultiHeadAttention(d_model, num_heads) 应为 nn.Module"),
    # MLM masking
    "in_place": ("input_ids was modified in place: clone it before replacing tokens",
                 "input_ids 被原地修改了：替换 token 之前先用 input_ids.clone() 复制一份"),
    "integer": ("{name} should be an integer tensor (torch.long), got {dtype}",
                "{name} 应为整数张量（torch.long），实际是 {dtype}"),
    "special_selected": ("{count} special positions ([CLS], [SEP], [PAD]) were selected or changed: special tokens "
                         "are never selected - their label is -100 and their id stays",
                         "有 {count} 个特殊位置（[CLS]、[SEP]、[PAD]）被选中或被改动：特殊 token 永远不选——"
                         "它们的标签是 -100，id 保持不变"),
    "labels_masked": ("the labels hold the input after masking ([MASK] or the random id): a label is the original id",
                      "标签存的是遮盖后的输入（[MASK] 或随机 id）：标签应是原始 id"),
    "labels_fill": ("{count} positions that were not selected have label {value}: every unselected position gets "
                    "-100 (F.cross_entropy's ignore_index)",
                    "有 {count} 个未被选中的位置标签为 {value}：所有未选中的位置标签都应为 -100（F.cross_entropy 的 ignore_index）"),
    "labels_everywhere": ("every ordinary position has a label: only the selected 15% are predicted, the others "
                          "get -100",
                          "每个普通位置都有标签：只预测被选中的 15%，其余位置标签为 -100"),
    "labels_wrong": ("a selected position's label is not its original id (label {label}, input id {original})",
                     "某个被选中位置的标签不是它的原始 id（标签 {label}，输入 id {original}）"),
    "only_mask_labelled": ("labels are set only where the input became [MASK]: the 10% replaced by a random token "
                           "and the 10% left unchanged are selected too and must be predicted",
                           "只有变成 [MASK] 的位置才有标签：被替换为随机 token 的 10% 和保持不变的 10% 也被选中了，同样要预测"),
    "changed_unlabelled": ("{count} positions changed although their label is -100: every changed position is a "
                           "selected one and must be predicted",
                           "有 {count} 个位置被改动了，标签却是 -100：被改动的位置都是被选中的，必须预测"),
    "rate": ("{share} of the ordinary tokens were selected, expected 0.15 ± {tol}",
             "普通 token 中被选中的比例为 {share}，应为 0.15 ± {tol}"),
    "not_dynamic": ("two calls with different generators gave the same mask: draw it at random on every call",
                    "两次调用（不同的 generator）得到了相同的遮盖：每次调用都要随机抽取"),
    "split": ("of the {n} selected tokens {mask} became [MASK], {random} a random token and {kept} stayed "
              "unchanged: expected 0.8 / 0.1 / 0.1 (± {tol})",
              "在 {n} 个被选中的 token 中，{mask} 变成 [MASK]，{random} 变成随机 token，{kept} 保持不变："
              "应为 0.8 / 0.1 / 0.1（± {tol}）"),
    "split_half": ("the random token was drawn with probability 0.1 from the 20% left after [MASK] (2% of the "
                   "selected): of the rest, half are random (probability 0.5), half stay",
                   "随机 token 是在 [MASK] 之后剩下的 20% 中以概率 0.1 抽取的（只占被选中的 2%）：剩下的部分应一半随机"
                   "（概率 0.5）、一半不变"),
    "random_special": ("random replacements drew special ids {ids}: draw from the ordinary ids, mask_token_id + 1 .. "
                       "vocab_size - 1",
                       "随机替换抽到了特殊 id {ids}：应从普通 id 中抽取，即 mask_token_id + 1 .. vocab_size - 1"),
    "random_narrow": ("random replacements used {distinct} of the {k} ordinary ids: draw each one uniformly from "
                      "all of them",
                      "随机替换只用到了 {k} 个普通 id 中的 {distinct} 个：每次都应从全部普通 id 中均匀抽取"),
    "random_same": ("the random replacements at different positions are all the same id: draw one for each position",
                    "不同位置的随机替换都是同一个 id：每个位置各抽一个"),
}


def said(key: str, **values) -> str:
    """The English feedback of diagnosis `key`, its fields filled."""
    return DIAGNOSES[key][0].format(**values)


def _fail(case: str, key: str, **values):
    raise CheckFailed(f"[{case}] {said(key, **values)}")


def _shape(t) -> str:
    return str(tuple(t.shape))


def _first(got):
    """The output of a forward that may return (output, weights): the task allows either."""
    if isinstance(got, (tuple, list)) and got and isinstance(got[0], torch.Tensor):
        return got[0]
    return got


def _close(got, want, atol) -> bool:
    if not isinstance(got, torch.Tensor) or tuple(got.shape) != tuple(want.shape):
        return False
    got = got.detach().double()
    want = want.double()
    return bool(torch.allclose(got, want, atol=atol, rtol=1e-4, equal_nan=True))


def _matching(reference, got_close) -> bool:
    """Whether the answer equals a mistake's reference; False when that mistake is impossible on this case
    (a mask on the query axis when T_q != T_k)."""
    try:
        return bool(got_close(reference()))
    except (RuntimeError, IndexError, ValueError):
        return False


def _diagnose(case: str, matches) -> None:
    """Fail naming the first known mistake (or pair of mistakes) that `matches(flags)` says the answer equals."""
    for keys in matches:
        if len(keys) == 1:
            _fail(case, "matches", what=said(keys[0]))
        _fail(case, "matches_two", first=said(keys[0]), second=said(keys[1]))


def _slip_search(groups, is_match):
    """The slips (one or two, from different groups) whose reference equals the answer; `groups` is a list of
    lists of (flags, key). Yields at most one match, as a tuple of keys."""
    singles = [s for g in groups for s in g]
    for flags, key in singles:
        if is_match(flags):
            yield (key,)
            return
    for ga, gb in itertools.combinations(groups, 2):
        for (fa, ka), (fb, kb) in itertools.product(ga, gb):
            if is_match({**fa, **fb}):
                yield (ka, kb)
                return


# ---------------------------------------------------------------- attention, the reference and its slips

def _weights(scores, keep, *, after=False, dim=-1):
    """softmax over the keys with `keep` (bool, broadcastable; None: no mask) applied before (or after) it."""
    if keep is not None and not after:
        scores = scores.masked_fill(~keep, float("-inf"))
    w = torch.softmax(scores, dim=dim)
    if keep is not None and after:
        w = w.masked_fill(~keep, 0.0)
    return w


def sdpa_reference(q, k, v, key_padding_mask=None, *, scale="d_k", after=False, axis="key", invert=False, dim=-1):
    """(output, weights) in float64; the keyword defaults are the task, the others its known mistakes."""
    q, k, v = q.double(), k.double(), v.double()
    d_k, d_v = q.shape[-1], v.shape[-1]
    scores = q @ k.transpose(-2, -1) / {"d_k": math.sqrt(d_k), "none": 1.0, "d_k_plain": d_k,
                                         "d_v": math.sqrt(d_v)}[scale]
    keep = None
    if key_padding_mask is not None:
        keep = key_padding_mask[:, None, :] if axis == "key" else key_padding_mask[:, :, None]
        keep = (~keep if invert else keep).expand_as(scores)
    w = _weights(scores, keep, after=after, dim=dim)
    return w @ v, w


SCALE_SLIPS = [({"scale": "none"}, "no_scale"), ({"scale": "d_k_plain"}, "scale_dk"), ({"scale": "d_v"}, "scale_dv")]
SOFTMAX_SLIPS = [({"dim": -2}, "softmax_dim")]
MASK_SLIPS = [({"after": True}, "mask_after"), ({"invert": True}, "mask_inverted"), ({"axis": "query"}, "mask_axis")]


def _sdpa_case(rng, *, B=None, T_q=None, T_k=None, d_k=None, d_v=None, masked=False, right_padded=False):
    B = B or randint(rng, 1, 4)
    T_q, T_k = T_q or randint(rng, 1, 8), T_k or randint(rng, 2, 9)
    d_k = d_k or randint(rng, 4, 33)
    d_v = d_v or randint(rng, 2, 13)
    q, k, v = (torch.randn(B, t, d, generator=rng) for t, d in ((T_q, d_k), (T_k, d_k), (T_k, d_v)))
    mask = None
    if masked:
        if right_padded:
            lengths = torch.randint(1, T_k + 1, (B,), generator=rng)
            mask = torch.arange(T_k)[None, :] < lengths[:, None]
        else:
            mask = torch.rand(B, T_k, generator=rng) < 0.6
            mask[torch.arange(B), torch.randint(0, T_k, (B,), generator=rng)] = True   # one real key at least
        if bool(mask.all()):
            mask[0, -1] = False       # something to mask
            mask[0, 0] = True
    name = f"q {_shape(q)}, k {_shape(k)}, v {_shape(v)}" + (f", key_padding_mask {_shape(mask)}" if masked else "")
    return name, q, k, v, mask


def _call_sdpa(fn, case, q, k, v, mask):
    args = (q.clone(), k.clone(), v.clone()) + ((mask.clone(),) if mask is not None else ())
    got = expect_tuple(case, call_learner(case, fn, *args), ("output", "weights"), lists=True)
    out, w = got
    expect_shape(case, out, (q.shape[0], q.shape[1], v.shape[-1]), name="output")
    expect_shape(case, w, (q.shape[0], q.shape[1], k.shape[1]), name="weights")
    return out.detach(), w.detach()


def _check_sdpa_case(fn, case, q, k, v, mask, groups):
    out, w = _call_sdpa(fn, case, q, k, v, mask)
    want_out, want_w = sdpa_reference(q, k, v, mask)
    atol = 1e-5 * max(1.0, float(want_out.abs().max()))
    if _close(w, want_w, 1e-5) and _close(out, want_out, atol):
        return out
    _diagnose(case, _slip_search(groups, lambda flags: _matching(
        lambda: sdpa_reference(q, k, v, mask, **flags),
        lambda ref: _close(w, ref[1], 1e-5) and _close(out, ref[0], atol))))
    if mask is not None:
        padded = ~mask[:, None, :].expand_as(w)
        leaked = w.double().abs().masked_fill(~padded, 0.0)
        if float(leaked.max()) > 1e-6:
            _fail(case, "padding_weight", weight=f"{float(leaked.max()):.3g}")
        sums = w.double().sum(-1)
        if not bool(((sums - 1).abs() < 1e-4).all()):
            _fail(case, "rows_sum", total=f"{float(sums[((sums - 1).abs() >= 1e-4)][0]):.4g}")
    expect_close(case, w, want_w.float(), atol=1e-5, name="weights")
    expect_close(case, out, want_out.float(), atol=atol, name="output")
    return out


@exercise("wb.sdpa.unmasked", points=2, uses="attention", forbids=ATTENTION_FORBIDS, registry=WHITEBOARD)
def check_sdpa_unmasked(fn, rng):
    """softmax(q kᵀ / √d_k) v and its weights, without a mask: T_q ≠ T_k, d_k ≠ d_v."""
    cases = [_sdpa_case(rng, B=2, T_q=4, T_k=6, d_k=16, d_v=8)]
    for _ in range(4):
        d_k = randint(rng, 4, 33)
        cases.append(_sdpa_case(rng, d_k=d_k, d_v=d_k + randint(rng, 1, 9)))
    for case, q, k, v, _ in cases:
        _check_sdpa_case(fn, case, q, k, v, None, [SCALE_SLIPS, SOFTMAX_SLIPS])


@exercise("wb.sdpa.padding", points=3, uses="attention", forbids=ATTENTION_FORBIDS, registry=WHITEBOARD)
def check_sdpa_padding(fn, rng):
    """A key padding mask (B, T_k), True = real token: padded keys get weight 0; self- then cross-attention."""
    cases = []
    for i in range(3):    # T_q == T_k first: a mask on the wrong axis still has the right shape there
        T = randint(rng, 3, 9)
        cases.append(_sdpa_case(rng, B=randint(rng, 2, 4), T_q=T, T_k=T, masked=True, right_padded=i == 0))
    for i in range(3):
        T_k = randint(rng, 3, 9)
        cases.append(_sdpa_case(rng, T_q=T_k + randint(rng, 1, 4), T_k=T_k, masked=True, right_padded=i == 0))
    for case, q, k, v, mask in cases:
        out = _check_sdpa_case(fn, case, q, k, v, mask, [MASK_SLIPS, SCALE_SLIPS])
        # the property behind it: what sits at a padded key changes nothing
        noisy_k, noisy_v = k.clone(), v.clone()
        hidden = ~mask
        noisy_k[hidden] = torch.randn(int(hidden.sum()), k.shape[-1], generator=rng) * 10
        noisy_v[hidden] = torch.randn(int(hidden.sum()), v.shape[-1], generator=rng) * 10
        again, _ = _call_sdpa(fn, case, q, noisy_k, noisy_v, mask)
        if not _close(again, out, 1e-4 * max(1.0, float(out.abs().max()))):
            _fail(case, "padding_leak")


# ---------------------------------------------------------------- multi-head attention

PROJECTIONS = ("q_proj", "k_proj", "v_proj", "out_proj")


def mha_reference(W, query, key, value, num_heads, key_padding_mask=None, causal=False, *, scale="head",
                  split="ok", merge="ok", out_proj=True, after=False, axis="key", invert=False, causal_slip="ok",
                  dim=-1):
    """The output (B, T_q, d_model) in float64; `W` {name: (weight, bias)}; the keyword defaults are the task."""
    B, T_q, d = query.shape
    T_k = key.shape[1]
    hd = d // num_heads

    def project(x, name):
        w, b = W[name]
        return x.double() @ w.double().T + b.double()

    def heads(t):
        T = t.shape[1]
        return t.reshape(B, num_heads, T, hd) if split == "view" else t.reshape(B, T, num_heads, hd).transpose(1, 2)

    q, k, v = heads(project(query, "q_proj")), heads(project(key, "k_proj")), heads(project(value, "v_proj"))
    scores = q @ k.transpose(-2, -1) / {"head": math.sqrt(hd), "none": 1.0, "model": math.sqrt(d)}[scale]
    keep = None
    if key_padding_mask is not None:
        keep = key_padding_mask[:, None, None, :] if axis == "key" else key_padding_mask[:, None, :, None]
        keep = ~keep if invert else keep
    if causal:
        i, j = torch.arange(T_q)[:, None], torch.arange(T_k)[None, :]
        rule = {"ok": j <= i, "future": j >= i, "strict": j < i, "inverted": j > i}[causal_slip]
        keep = rule if keep is None else keep & rule
    if keep is not None:
        keep = keep.expand_as(scores)
    o = _weights(scores, keep, after=after, dim=dim) @ v                    # (B, h, T_q, hd)
    o = o.reshape(B, T_q, d) if merge == "view" else o.transpose(1, 2).reshape(B, T_q, d)
    if out_proj:
        o = project(o, "out_proj")
    return o


HEAD_SLIPS = [({"split": "view"}, "split_view"), ({"split": "view", "merge": "view"}, "split_view"),
              ({"merge": "view"}, "merge_view"), ({"out_proj": False}, "no_out_proj")]
MHA_SCALE_SLIPS = [({"scale": "none"}, "no_scale"), ({"scale": "model"}, "scale_d_model")]
CAUSAL_SLIPS = [({"causal_slip": "future"}, "causal_future"), ({"causal_slip": "strict"}, "causal_strict"),
                ({"causal_slip": "inverted"}, "causal_inverted")]


def _build(cls, rng, d_model, num_heads, case):
    layer = call_learner(case, cls, d_model, num_heads)
    expect(isinstance(layer, nn.Module), f"[{case}] {said('not_module')}")
    W = {}
    for name in PROJECTIONS:
        proj = getattr(layer, name, None)
        ok = isinstance(proj, nn.Linear) and proj.bias is not None and proj.in_features == d_model \
            and proj.out_features == d_model
        if not ok:
            got = (f"nn.Linear({proj.in_features}, {proj.out_features}" + (")" if proj.bias is not None else ", bias=False)")
                   if isinstance(proj, nn.Linear) else type(proj).__name__ if proj is not None else "None")
            _fail(case, "linear", name=name, d=d_model, got=got)
        with torch.no_grad():
            proj.weight.copy_(torch.randn(d_model, d_model, generator=rng) / math.sqrt(d_model))
            proj.bias.copy_(torch.randn(d_model, generator=rng) * 0.2)
        W[name] = (proj.weight.detach().clone(), proj.bias.detach().clone())
    return layer, W


def _sizes(rng, *, min_heads=1):
    num_heads = randint(rng, min_heads, 5)
    return num_heads * randint(rng, 2, 6), num_heads


def _call_mha(case, layer, query, key, value, **kwargs):
    got = _first(call_learner(case, layer, query.clone(), key.clone(), value.clone(),
                              **{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in kwargs.items()}))
    expect_tensor(case, got, name="output")
    expect_shape(case, got, query.shape, name="output")
    return got.detach()


def _check_mha(case, layer, W, num_heads, query, key, value, groups, **kwargs):
    out = _call_mha(case, layer, query, key, value, **kwargs)
    want = mha_reference(W, query, key, value, num_heads, **kwargs)
    atol = 1e-4 * max(1.0, float(want.abs().max()))
    if _close(out, want, atol):
        return out
    _diagnose(case, _slip_search(groups, lambda flags: _matching(
        lambda: mha_reference(W, query, key, value, num_heads, **kwargs, **flags), lambda ref: _close(out, ref, atol))))
    return out


def _mha_case(rng, d_model, num_heads, B, T_q, T_k=None, *, cross=False, masked=False):
    T_k = T_q if T_k is None else T_k
    query = torch.randn(B, T_q, d_model, generator=rng)
    key = torch.randn(B, T_k, d_model, generator=rng) if cross else query
    value = torch.randn(B, T_k, d_model, generator=rng) if cross else query
    name = (f"d_model={d_model}, num_heads={num_heads}, query {_shape(query)}"
            + (f", key/value {_shape(key)}" if cross else " = key = value"))
    mask = None
    if masked:
        lengths = torch.randint(1, T_k + 1, (B,), generator=rng)
        lengths[0] = max(1, T_k - 2)
        mask = torch.arange(T_k)[None, :] < lengths[:, None]
        name += f", key_padding_mask {_shape(mask)}"
    return name, query, key, value, mask


@exercise("wb.mha.heads", points=3, uses="MultiHeadAttention", forbids=ATTENTION_FORBIDS, registry=WHITEBOARD)
def check_mha_heads(cls, rng):
    """Project, split into heads, attend per head with 1/√head_dim, merge in order, out_proj: self- and cross-attention."""
    plans = [(12, 3, 2, 5, None, False), (8, 1, 1, 4, None, False), (8, 8, 2, 3, None, False)]
    for _ in range(3):
        d_model, num_heads = _sizes(rng, min_heads=2)
        plans.append((d_model, num_heads, randint(rng, 1, 4), randint(rng, 2, 7), randint(rng, 2, 7), True))
    for d_model, num_heads, B, T_q, T_k, cross in plans:
        case, query, key, value, _ = _mha_case(rng, d_model, num_heads, B, T_q, T_k, cross=cross)
        layer, W = _build(cls, rng, d_model, num_heads, case)
        out = _check_mha(case, layer, W, num_heads, query, key, value, [HEAD_SLIPS, MHA_SCALE_SLIPS, SOFTMAX_SLIPS])
        want = mha_reference(W, query, key, value, num_heads)
        expect_close(case, out, want.float(), atol=1e-4 * max(1.0, float(want.abs().max())), name="output")


@exercise("wb.mha.padding", points=2, uses="MultiHeadAttention", forbids=ATTENTION_FORBIDS, registry=WHITEBOARD)
def check_mha_padding(cls, rng):
    """key_padding_mask (B, T_k), True = real token: padded keys are ignored by every query of every head."""
    plans = []
    for i in range(4):    # self-attention first: a mask on the query axis still has the right shape there
        d_model, num_heads = _sizes(rng, min_heads=2)
        T_q = randint(rng, 3, 8)
        cross = i >= 2
        plans.append((d_model, num_heads, randint(rng, 2, 4), T_q, T_q + randint(rng, 1, 4) if cross else None, cross))
    for d_model, num_heads, B, T_q, T_k, cross in plans:
        case, query, key, value, mask = _mha_case(rng, d_model, num_heads, B, T_q, T_k, cross=cross, masked=True)
        layer, W = _build(cls, rng, d_model, num_heads, case)
        out = _check_mha(case, layer, W, num_heads, query, key, value, [MASK_SLIPS, HEAD_SLIPS, MHA_SCALE_SLIPS],
                         key_padding_mask=mask)
        if cross:     # the property: what sits at a padded key and value changes nothing
            noisy_k, noisy_v = key.clone(), value.clone()
            noisy_k[~mask] = torch.randn(int((~mask).sum()), d_model, generator=rng) * 10
            noisy_v[~mask] = torch.randn(int((~mask).sum()), d_model, generator=rng) * 10
            again = _call_mha(case, layer, query, noisy_k, noisy_v, key_padding_mask=mask)
            if not _close(again, out, 1e-4 * max(1.0, float(out.abs().max()))):
                _fail(case, "padding_leak")
        want = mha_reference(W, query, key, value, num_heads, key_padding_mask=mask)
        expect_close(case, out, want.float(), atol=1e-4 * max(1.0, float(want.abs().max())), name="output")


@exercise("wb.mha.causal", points=2, uses="MultiHeadAttention", forbids=ATTENTION_FORBIDS, registry=WHITEBOARD)
def check_mha_causal(cls, rng):
    """causal=True (self-attention): query i sees keys j ≤ i; with a right-padded key_padding_mask too."""
    for i in range(4):
        d_model, num_heads = _sizes(rng, min_heads=2 if i < 2 else 1)
        B, T = randint(rng, 1, 4), randint(rng, 3, 8)
        case, x, _, _, mask = _mha_case(rng, d_model, num_heads, B, T, masked=i >= 2)
        case += ", causal=True"
        layer, W = _build(cls, rng, d_model, num_heads, case)
        kwargs = {"causal": True} if mask is None else {"causal": True, "key_padding_mask": mask}
        out = _check_mha(case, layer, W, num_heads, x, x, x, [CAUSAL_SLIPS, MASK_SLIPS, HEAD_SLIPS, MHA_SCALE_SLIPS],
                         **kwargs)
        # the property: changing the positions after t changes nothing at t
        t = randint(rng, 0, T - 1)
        changed = x.clone()
        changed[:, t + 1:] = torch.randn(B, T - t - 1, d_model, generator=rng) * 5
        again = _call_mha(case, layer, changed, changed, changed, **kwargs)
        if not _close(again[:, :t + 1], out[:, :t + 1], 1e-4 * max(1.0, float(out.abs().max()))):
            _fail(case, "causal_leak", pos=t)
        want = mha_reference(W, x, x, x, num_heads, **kwargs)
        expect_close(case, out, want.float(), atol=1e-4 * max(1.0, float(want.abs().max())), name="output")


# ---------------------------------------------------------------- BERT's MLM masking

IGNORE = -100


def _tolerance(p: float, n: int, floor: float) -> float:
    """About six standard errors of a share p over n draws (never below `floor`)."""
    return max(floor, 6 * math.sqrt(p * (1 - p) / max(n, 1)))


LAYOUTS = {"course": {"pad": 0, "cls": 2, "sep": 3, "mask": 4},         # [PAD] [UNK] [CLS] [SEP] [MASK], words
           "bert": {"pad": 0, "cls": 101, "sep": 102, "mask": 103}}      # [PAD] [unused..] [UNK] [CLS] [SEP] [MASK]


def mlm_batch(rng, rows: int, length: int, vocab_size: int, layout: str = "course"):
    """Rows `[CLS] words [SEP] [PAD]...` of ordinary ids: (input_ids, special_tokens_mask)."""
    ids_of = LAYOUTS[layout]
    ids = torch.randint(ids_of["mask"] + 1, vocab_size, (rows, length), generator=rng)
    lengths = torch.randint(max(3, length // 2), length + 1, (rows,), generator=rng)
    t = torch.arange(length)[None, :]
    ids[:, 0] = ids_of["cls"]
    ids[torch.arange(rows), lengths - 1] = ids_of["sep"]
    ids[t >= lengths[:, None]] = ids_of["pad"]
    special = (t == 0) | (t >= lengths[:, None] - 1)
    return ids, special


def _call_mlm(fn, case, ids, special, vocab_size, mask_id, generator):
    mine = ids.clone()
    got = call_learner(case, fn, mine, special.clone(), vocab_size=vocab_size, mask_token_id=mask_id,
                       generator=generator)
    expect(torch.equal(mine, ids), f"[{case}] {said('in_place')}")
    masked, labels = expect_tuple(case, got, ("masked_input_ids", "labels"), lists=True)
    for name, t in (("masked_input_ids", masked), ("labels", labels)):
        expect_shape(case, t, ids.shape, name=name)
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            _fail(case, "integer", name=name, dtype=str(t.dtype))
    return masked.detach().long(), labels.detach().long()


def _check_selection(case, ids, special, masked, labels, mask_id):
    """Specials untouched, labels = original id where selected and -100 elsewhere, nothing else changed."""
    ordinary = ~special
    selected = labels != IGNORE
    if bool(selected[ordinary].all()) and bool((labels[ordinary] == ids[ordinary]).all()):
        _fail(case, "labels_everywhere")
    at_special = labels[special].unique()
    if len(at_special) == 1 and int(at_special[0]) != IGNORE:     # -100 replaced by another fill value
        value = int(at_special[0])
        _fail(case, "labels_fill", count=int(((labels == value) & (ids != value)).sum() + special.sum()), value=value)
    touched = special & ((labels != IGNORE) | (masked != ids))
    if bool(touched.any()):
        _fail(case, "special_selected", count=int(touched.sum()))
    bad = selected & (labels != ids)
    if bool(bad.any()):
        changed = masked != ids
        if bool((labels[bad] == masked[bad]).all()) and bool((bad <= changed).all()):
            _fail(case, "labels_masked")
        values = labels[bad].unique()
        if len(values) == 1 and int(bad.sum()) > 10:
            _fail(case, "labels_fill", count=int(bad.sum()), value=int(values[0]))
        where = tuple(torch.nonzero(bad)[0].tolist())
        _fail(case, "labels_wrong", label=int(labels[where]), original=int(ids[where]))
    changed = (masked != ids) & ~selected
    if bool(changed.any()):
        if bool((selected == (masked == mask_id)).all()):
            _fail(case, "only_mask_labelled")
        _fail(case, "changed_unlabelled", count=int(changed.sum()))


def _masked_batch(fn, rng, layout: str, vocab_size: int, rows: int, length: int):
    """A fresh batch masked by the learner's `fn` (its own generator), the selection checked:
    (case, input_ids, special_tokens_mask, mask_token_id, masked_input_ids, labels)."""
    mask_id = LAYOUTS[layout]["mask"]
    ids, special = mlm_batch(rng, rows, length, vocab_size, layout)
    case = f"input_ids {_shape(ids)}, vocab_size={vocab_size}, mask_token_id={mask_id}"
    generator = torch.Generator().manual_seed(randint(rng, 0, 2**31))
    masked, labels = _call_mlm(fn, case, ids, special, vocab_size, mask_id, generator)
    _check_selection(case, ids, special, masked, labels, mask_id)
    return case, ids, special, mask_id, masked, labels


@exercise("wb.mlm.select", points=2, uses="mask_tokens", forbids=MLM_FORBIDS, registry=WHITEBOARD)
def check_mlm_select(fn, rng):
    """15% of the ordinary tokens selected, specials never; labels: the original id where selected, -100 elsewhere."""
    seen = []
    for layout, vocab_size in (("course", 500), ("bert", 3000), ("course", 80)):
        case, ids, special, mask_id, masked, labels = _masked_batch(fn, rng, layout, vocab_size, 160, 64)
        ordinary = ~special
        n = int(ordinary.sum())
        share = float((labels != IGNORE)[ordinary].float().mean())
        tol = _tolerance(0.15, n, 0.015)
        if abs(share - 0.15) >= tol:
            _fail(case, "rate", share=f"{share:.3f}", tol=f"{tol:.3f}")
        seen.append((case, ids, special, vocab_size, mask_id, labels))
    case, ids, special, vocab_size, mask_id, labels = seen[0]
    other = torch.Generator().manual_seed(randint(rng, 0, 2**31))
    _, again = _call_mlm(fn, case, ids, special, vocab_size, mask_id, other)
    if torch.equal(again, labels):
        _fail(case, "not_dynamic")
    _call_mlm(fn, case + ", generator=None", ids, special, vocab_size, mask_id, None)


@exercise("wb.mlm.split", points=2, uses="mask_tokens", forbids=MLM_FORBIDS, registry=WHITEBOARD)
def check_mlm_split(fn, rng):
    """Of the selected: 80% [MASK], 10% a uniform random ordinary id, 10% unchanged."""
    for layout, vocab_size in (("course", 64), ("bert", 5000)):
        case, ids, special, mask_id, masked, labels = _masked_batch(fn, rng, layout, vocab_size, 400, 128)
        selected = labels != IGNORE
        n = int(selected.sum())
        k = vocab_size - mask_id - 1                       # the ordinary ids
        replaced = selected & (masked != ids) & (masked != mask_id)
        drawn = masked[replaced]
        bad = sorted(set(drawn[(drawn <= mask_id) | (drawn >= vocab_size)].tolist()))
        if bad:
            _fail(case, "random_special", ids=bad[:6])
        shares = {"mask": float((masked[selected] == mask_id).float().mean()),
                  "random": float(replaced[selected].float().mean()),
                  "kept": float((masked[selected] == ids[selected]).float().mean())}
        expected = {"mask": 0.8, "random": 0.1 * (1 - 1 / k), "kept": 0.1 + 0.1 / k}
        tol = _tolerance(0.1, n, 0.015)
        if any(abs(shares[key] - expected[key]) >= _tolerance(expected[key], n, 0.015) for key in shares):
            if abs(shares["mask"] - 0.8) < tol and abs(shares["random"] - 0.02) < tol:
                _fail(case, "split_half")
            _fail(case, "split", n=n, mask=f"{shares['mask']:.3f}", random=f"{shares['random']:.3f}",
                  kept=f"{shares['kept']:.3f}", tol=f"{tol:.3f}")
        distinct = len(drawn.unique())
        if len(drawn) > 20 and distinct == 1:
            _fail(case, "random_same")
        if len(drawn) >= 8 * k and distinct < 0.8 * k:
            _fail(case, "random_narrow", distinct=distinct, k=k)
