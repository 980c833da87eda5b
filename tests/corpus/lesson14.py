"""Exercise 14 (several pairs packed in one row; block-diagonal mask; the packed row's input embedding): wrong
answers and honest alternatives. Answer cells: 0 pack_pairs, 1 packed_attention_mask, 2 packed_embeddings,
3 the written answer."""
from . import Honest, Mistake

_PACK = "import torch\n\ndef pack_pairs(pairs, cls_id=101, sep_id=102):\n    ids, types, pos, ex = [], [], [], []\n"
_RET = "    return tuple(torch.tensor(x, dtype=torch.long) for x in (ids, types, pos, ex))\n"
_LOOP = ("    for k, (a, b) in enumerate(pairs):\n        part = [cls_id, *a, sep_id]\n        t = [0] * len(part)\n"
         "        if b is not None:\n            part += [*b, sep_id]\n            t += [1] * (len(b) + 1)\n")
_MASK = "import torch\n\ndef packed_attention_mask(example_ids):\n"
_EMB = "import math\nimport torch\n\ndef packed_embeddings(emb, input_ids, token_type_ids, position_ids):\n"
_W, _P, _S = ("emb.word_embeddings(input_ids)", "emb.position_embeddings(position_ids)",
              "emb.token_type_embeddings(token_type_ids)")

MISTAKES = [
    Mistake("14.pack-pairs", "positions-not-restarted",
            {0: _PACK + _LOOP + "        ids += part\n        types += t\n        ex += [k] * len(part)\n"
                "    pos = list(range(len(ids)))\n" + _RET}, "positions restart at 0"),
    Mistake("14.pack-pairs", "segment-ids-alternate-per-pair",
            {0: _PACK + "    for k, (a, b) in enumerate(pairs):\n        part = [cls_id, *a, sep_id]\n"
                "        if b is not None:\n            part += [*b, sep_id]\n"
                "        ids += part\n        types += [k % 2] * len(part)\n        pos += list(range(len(part)))\n"
                "        ex += [k] * len(part)\n" + _RET}, "token_type_ids"),
    Mistake("14.pack-pairs", "segment-ids-never-reset",
            {0: _PACK + "    seen_b = False\n" + _LOOP.replace("        t = [0] * len(part)\n",
                                                             "        t = [1 if seen_b else 0] * len(part)\n")
                + "        seen_b = seen_b or b is not None\n"
                "        ids += part\n        types += t\n        pos += list(range(len(part)))\n        ex += [k] * len(part)\n"
                + _RET}, "0 again from the next pair"),
    Mistake("14.pack-pairs", "empty-b-without-sep",
            {0: _PACK + _LOOP.replace("if b is not None:", "if b:")
                + "        ids += part\n        types += t\n        pos += list(range(len(part)))\n        ex += [k] * len(part)\n"
                + _RET}, "an empty B still gets its [SEP]"),
    Mistake("14.pack-pairs", "first-sep-in-segment-one",
            {0: _PACK + "    for k, (a, b) in enumerate(pairs):\n        part = [cls_id, *a]\n        t = [0] * len(part)\n"
                "        if b is not None:\n            part += [sep_id, *b, sep_id]\n            t += [1] * (len(b) + 2)\n"
                "        else:\n            part += [sep_id]\n            t += [0]\n"
                "        ids += part\n        types += t\n        pos += list(range(len(part)))\n        ex += [k] * len(part)\n"
                + _RET}, "token_type_ids"),
    Mistake("14.packed-mask", "padding-only-mask",
            {1: _MASK + "    real = example_ids >= 0\n    return (real[:, None, :] & real[:, :, None])[:, None]\n"},
            "block-diagonal"),
    Mistake("14.packed-mask", "real-tokens-see-padding-keys",
            {1: _MASK + "    same = example_ids[:, :, None] == example_ids[:, None, :]\n"
                "    return (same | (example_ids < 0)[:, None, :])[:, None]\n"}, "padding keys"),
    Mistake("14.packed-mask", "no-head-axis",
            {1: _MASK + "    return (example_ids[:, :, None] == example_ids[:, None, :]) & (example_ids >= 0)[:, None, :]\n"},
            "expected (1, 1, 4, 4)"),
    Mistake("14.packed-mask", "inverted-pytorch-convention",
            {1: _MASK + "    same = example_ids[:, :, None] == example_ids[:, None, :]\n"
                "    return ~(same & (example_ids >= 0)[:, None, :])[:, None]\n"}, "inverted"),
    Mistake("14.dtypes", "pack-as-int32",
            {0: _PACK + _LOOP + "        ids += part\n        types += t\n        pos += list(range(len(part)))\n"
                "        ex += [k] * len(part)\n    return tuple(torch.tensor(x, dtype=torch.int32) for x in (ids, types, pos, ex))\n"},
            "expected torch.long"),
    Mistake("14.dtypes", "float-mask",
            {1: _MASK + "    same = example_ids[:, :, None] == example_ids[:, None, :]\n"
                "    return (same & (example_ids >= 0)[:, None, :])[:, None].float()\n"}, "expected torch.bool"),
    Mistake("14.dtypes", "mask-of-ints",
            {1: _MASK + "    same = (example_ids[:, :, None] == example_ids[:, None, :]).long()\n"
                "    return (same * (example_ids >= 0).long()[:, None, :])[:, None]\n"}, "expected torch.bool"),
    Mistake("14.packed-embeddings", "positions-along-the-row",
            {2: _EMB + "    positions = torch.arange(input_ids.shape[1]).expand_as(input_ids)\n"
                f"    return emb.LayerNorm({_W} + emb.position_embeddings(positions) + {_S})\n"}, "use position_ids"),
    Mistake("14.packed-embeddings", "no-layernorm", {2: _EMB + f"    return {_W} + {_P} + {_S}\n"},
            "applies its LayerNorm to the sum"),
    Mistake("14.packed-embeddings", "layernorm-on-each",
            {2: _EMB + f"    return emb.LayerNorm({_W}) + emb.LayerNorm({_P}) + emb.LayerNorm({_S})\n"},
            "one LayerNorm to the sum"),
    Mistake("14.packed-embeddings", "transformer-scaling",
            {2: _EMB + "    h = emb.word_embeddings.embedding_dim\n"
                f"    return emb.LayerNorm({_W} * math.sqrt(h) + {_P} + {_S})\n"}, "unscaled"),
    Mistake("14.packed-embeddings", "segment-forgotten", {2: _EMB + f"    return emb.LayerNorm({_W} + {_P})\n"},
            "segment"),
    Mistake("14.packed-embeddings", "plain-layer-norm",
            {2: _EMB + "    x = " + _W + " + " + _P + " + " + _S + "\n"
                "    return (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + 1e-12)\n"},
            "emb.LayerNorm"),
]
HONEST = [
    Honest("numpy-then-tensor-and-loop-mask", {
        0: "import numpy as np\nimport torch\n\ndef pack_pairs(pairs, cls_id=101, sep_id=102):\n"
           "    rows = []\n    for k, (a, b) in enumerate(pairs):\n"
           "        first = np.array([cls_id, *a, sep_id])\n"
           "        second = np.array([] if b is None else [*b, sep_id], dtype=np.int64)\n"
           "        ids = np.concatenate([first, second]).astype(np.int64)\n"
           "        types = np.concatenate([np.zeros(len(first)), np.ones(len(second))]).astype(np.int64)\n"
           "        rows.append(np.stack([ids, types, np.arange(len(ids)), np.full(len(ids), k)]))\n"
           "    out = torch.from_numpy(np.concatenate(rows, axis=1))\n"
           "    return out[0], out[1], out[2], out[3]\n",
        1: "import torch\n\ndef packed_attention_mask(example_ids):\n    B, T = example_ids.shape\n"
           "    mask = torch.zeros(B, 1, T, T, dtype=torch.bool)\n"
           "    for b in range(B):\n        for i in range(T):\n            for j in range(T):\n"
           "                e = int(example_ids[b, i])\n"
           "                mask[b, 0, i, j] = e >= 0 and e == int(example_ids[b, j])\n    return mask\n"}),
    Honest("cumsum-positions-and-one-hot-mask", {
        0: "import torch\n\ndef pack_pairs(pairs, cls_id=101, sep_id=102):\n    chunks = []\n"
           "    for k, (a, b) in enumerate(pairs):\n        seg = [0] * (len(a) + 2) + ([] if b is None else [1] * (len(b) + 1))\n"
           "        ids = [cls_id, *a, sep_id] + ([] if b is None else [*b, sep_id])\n"
           "        chunks.append(torch.tensor([ids, seg, [k] * len(ids)]))\n"
           "    ids, types, ex = torch.cat(chunks, dim=1)\n"
           "    starts = (ids == cls_id) & torch.cat([torch.tensor([True]), ex[1:] != ex[:-1]])\n"
           "    group = starts.long().cumsum(0) - 1\n"
           "    first_index = torch.nonzero(starts).squeeze(1)\n"
           "    pos = torch.arange(len(ids)) - first_index[group]\n"
           "    return ids.long(), types.long(), pos.long(), ex.long()\n",
        1: "import torch\nimport torch.nn.functional as F\n\ndef packed_attention_mask(example_ids):\n"
           "    n = int(example_ids.max().clamp(min=0)) + 1\n"
           "    one_hot = F.one_hot(example_ids.clamp(min=0), n) * (example_ids >= 0)[..., None]\n"
           "    return (one_hot.float() @ one_hot.float().transpose(1, 2) > 0).unsqueeze(1)\n",
        2: "import torch\nimport torch.nn.functional as F\n\n"
           "def packed_embeddings(emb, input_ids, token_type_ids, position_ids):\n"
           "    # the lesson's Experiment 1: one linear layer on the concatenated one-hot vectors\n"
           "    tables = [emb.word_embeddings.weight, emb.position_embeddings.weight, emb.token_type_embeddings.weight]\n"
           "    one_hots = [F.one_hot(i, t.shape[0]).to(t.dtype) for i, t in\n"
           "                zip((input_ids, position_ids, token_type_ids), tables)]\n"
           "    x = torch.cat(one_hots, -1) @ torch.cat(tables, 0)\n"
           "    ln = emb.LayerNorm\n"
           "    mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)\n"
           "    return (x - mean) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias\n"}),
    Honest("padding-queries-see-padding-and-functional-embedding", {
        1: _MASK + "    # a padding query attends to the padding keys (its output is thrown away)\n"
           "    return (example_ids[:, :, None] == example_ids[:, None, :])[:, None]\n",
        2: "import torch.nn.functional as F\n\n"
           "def packed_embeddings(emb, input_ids, token_type_ids, position_ids):\n"
           "    x = F.embedding(input_ids, emb.word_embeddings.weight)\n"
           "    x = x + F.embedding(token_type_ids, emb.token_type_embeddings.weight)\n"
           "    x = x + F.embedding(position_ids, emb.position_embeddings.weight)\n"
           "    ln = emb.LayerNorm\n"
           "    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)\n"}),
]
