"""The whiteboard drill's three tasks (`course interview --whiteboard`, course_tools/whiteboard.py): each one's
name, graded items, time budget, title and statement in English and Chinese, and the starter file the learner
writes the answer in (the statement as its docstring and the signature, never the answer)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Task:
    key: str
    name: str                 # what the learner defines
    items: tuple[str, ...]    # the checks (course_tools.checks.whiteboard)
    minutes: int              # a typical interview's budget
    title: dict
    statement: dict
    code: str                 # the starter's code: imports and the signature, no answer


RULES = {"en": "Rules: plain PyTorch. torch.softmax is allowed; F.scaled_dot_product_attention, nn.MultiheadAttention "
               "and the course's own attention (course_lib) are not, under any name.",
         "zh": "规则：只用基础的 PyTorch。可以用 torch.softmax；不能用 F.scaled_dot_product_attention、"
               "nn.MultiheadAttention 和课程自带的注意力实现（course_lib），换个名字也不行。"}

TASKS = {
    "sdpa": Task(
        "sdpa", "attention", ("wb.sdpa.unmasked", "wb.sdpa.padding"), 10,
        {"en": "scaled dot-product attention with a padding mask", "zh": "带填充掩码的缩放点积注意力"},
        {"en": """Write attention(q, k, v, key_padding_mask=None).

  q: (B, T_q, d_k), k: (B, T_k, d_k), v: (B, T_k, d_v), float tensors (T_q may differ from T_k,
     d_v from d_k).
  key_padding_mask: None, or a bool tensor (B, T_k): True = a real token, False = padding.
     Every query gives the padded keys weight 0. Every sequence has at least one real token.

Return (output, weights):
  weights (B, T_q, T_k) = softmax(q kᵀ / √d_k) over the keys, padded keys masked out;
  output (B, T_q, d_v) = weights @ v.

""" + RULES["en"],
         "zh": """编写 attention(q, k, v, key_padding_mask=None)。

  q: (B, T_q, d_k)，k: (B, T_k, d_k)，v: (B, T_k, d_v)，浮点张量（T_q 可以不等于 T_k，d_v 可以不等于 d_k）。
  key_padding_mask: None，或布尔张量 (B, T_k)：True 表示真实 token，False 表示填充。
     每个查询给填充键的权重都是 0。每个序列至少有一个真实 token。

返回 (output, weights)：
  weights (B, T_q, T_k) = 在键上做 softmax(q kᵀ / √d_k)，遮住填充键；
  output (B, T_q, d_v) = weights @ v。

""" + RULES["zh"]},
        "import math\n\nimport torch\n\n\ndef attention(q, k, v, key_padding_mask=None):\n"
        "    raise NotImplementedError\n"),
    "mha": Task(
        "mha", "MultiHeadAttention", ("wb.mha.heads", "wb.mha.padding", "wb.mha.causal"), 20,
        {"en": "masked multi-head attention", "zh": "带掩码的多头注意力"},
        {"en": """Write class MultiHeadAttention(nn.Module).

  __init__(self, d_model, num_heads): four nn.Linear(d_model, d_model) layers with a bias, named
     q_proj, k_proj, v_proj and out_proj. num_heads divides d_model; head_dim = d_model // num_heads.
  forward(self, query, key, value, key_padding_mask=None, causal=False) -> output (B, T_q, d_model)
     query: (B, T_q, d_model); key, value: (B, T_k, d_model).
     Project; split the features into num_heads heads (head h holds features h*head_dim ..
     (h+1)*head_dim - 1); attend in each head with softmax(q kᵀ / √head_dim); merge the heads back
     in the same order; apply out_proj.
     key_padding_mask: None or a bool tensor (B, T_k): True = a real token, False = padding (weight 0).
     causal: True only for self-attention (T_q == T_k): query i sees the keys j <= i.
     Every query keeps at least one key. No dropout. Returning (output, weights) is fine too: only
     the output is graded.

""" + RULES["en"],
         "zh": """编写 class MultiHeadAttention(nn.Module)。

  __init__(self, d_model, num_heads)：四个带偏置的 nn.Linear(d_model, d_model)，分别命名为
     q_proj、k_proj、v_proj 和 out_proj。num_heads 整除 d_model；head_dim = d_model // num_heads。
  forward(self, query, key, value, key_padding_mask=None, causal=False) -> output (B, T_q, d_model)
     query: (B, T_q, d_model)；key、value: (B, T_k, d_model)。
     先做投影；把特征拆成 num_heads 个头（第 h 个头是特征 h*head_dim .. (h+1)*head_dim - 1）；
     每个头内用 softmax(q kᵀ / √head_dim) 计算注意力；按同样的顺序把各头合并回来；最后经过 out_proj。
     key_padding_mask: None 或布尔张量 (B, T_k)：True 表示真实 token，False 表示填充（权重为 0）。
     causal: 只在自注意力（T_q == T_k）时为 True：查询 i 只看 j <= i 的键。
     每个查询至少保留一个键。没有 dropout。也可以返回 (output, weights)：只对 output 评分。

""" + RULES["zh"]},
        "import math\n\nimport torch\nfrom torch import nn\n\n\nclass MultiHeadAttention(nn.Module):\n"
        "    def __init__(self, d_model, num_heads):\n        super().__init__()\n"
        "        raise NotImplementedError\n\n"
        "    def forward(self, query, key, value, key_padding_mask=None, causal=False):\n"
        "        raise NotImplementedError\n"),
    "mlm": Task(
        "mlm", "mask_tokens", ("wb.mlm.select", "wb.mlm.split"), 15,
        {"en": "BERT's MLM masking function", "zh": "BERT 的 MLM 遮盖函数"},
        {"en": """Write mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None).

  input_ids: (B, T) token ids (torch.long). special_tokens_mask: bool (B, T), True at [CLS], [SEP]
     and [PAD]. The ids 0 .. mask_token_id are special; the ordinary ids are
     mask_token_id + 1 .. vocab_size - 1.
  generator: a torch.Generator or None; pass it to your random draws.

Return (masked_input_ids, labels), both (B, T) integer tensors; do not modify input_ids.
  1. Select each ordinary token with probability 15%; special tokens are never selected.
  2. Of the selected tokens, 80% become mask_token_id, 10% a random ordinary id (uniform), and
     10% stay unchanged.
  3. labels: the original id at every selected position, -100 everywhere else.

Rules: plain PyTorch; course_lib.masking and Hugging Face's DataCollatorForLanguageModeling are not
allowed, under any name.""",
         "zh": """编写 mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None)。

  input_ids: (B, T) 的 token id（torch.long）。special_tokens_mask: 布尔 (B, T)，在 [CLS]、[SEP]、[PAD]
     处为 True。id 0 .. mask_token_id 是特殊 id；普通 id 是 mask_token_id + 1 .. vocab_size - 1。
  generator: torch.Generator 或 None；随机抽取时把它传进去。

返回 (masked_input_ids, labels)，都是 (B, T) 的整数张量；不要修改 input_ids。
  1. 每个普通 token 以 15% 的概率被选中；特殊 token 永远不选。
  2. 被选中的 token 中，80% 变成 mask_token_id，10% 变成随机的普通 id（均匀抽取），10% 保持不变。
  3. labels：每个被选中的位置是原始 id，其余位置都是 -100。

规则：只用基础的 PyTorch；不能用 course_lib.masking 和 Hugging Face 的 DataCollatorForLanguageModeling，
换个名字也不行。"""},
        "import torch\n\n\n"
        "def mask_tokens(input_ids, special_tokens_mask, vocab_size, mask_token_id, generator=None):\n"
        "    raise NotImplementedError\n"),
}

#: Each item's title in both languages (the checks' docstrings are the English ones).
ITEM_TITLES = {
    "wb.sdpa.unmasked": ("no mask: softmax(q kᵀ / √d_k) v and the weights", "无掩码：softmax(q kᵀ / √d_k) v 与权重"),
    "wb.sdpa.padding": ("key padding mask: padded keys get weight 0", "键填充掩码：填充键权重为 0"),
    "wb.mha.heads": ("heads: project, split, attend, merge, out_proj", "多头：投影、拆分、注意力、合并、out_proj"),
    "wb.mha.padding": ("key padding mask, in every head", "键填充掩码（每个头）"),
    "wb.mha.causal": ("causal mask: query i sees keys j <= i", "因果掩码：查询 i 只看 j <= i 的键"),
    "wb.mlm.select": ("selection: 15%, never a special token; labels -100 elsewhere",
                      "选取：15%，不选特殊 token；其余标签为 -100"),
    "wb.mlm.split": ("80% [MASK], 10% random ordinary id, 10% unchanged", "80% [MASK]、10% 随机普通 id、10% 不变"),
}


def command(task: str, lang: str, grade: bool = False) -> str:
    return f"course interview --whiteboard {task}" + (" --grade" if grade else "") + (" --lang zh" if lang == "zh" else "")


def starter(task: str, lang: str = "en") -> str:
    """The starter file: the statement as its docstring, then the imports and the signature."""
    spec = TASKS[task]
    lang = "zh" if lang == "zh" else "en"
    head = (f"{spec.title[lang]} - whiteboard drill, about {spec.minutes} minutes." if lang == "en"
            else f"白板练习：{spec.title[lang]}，建议用时约 {spec.minutes} 分钟。")
    done = (f"When done: press Enter in the terminal that started the clock, or run\n    {command(task, lang, True)}"
            if lang == "en" else f"完成后：在开始计时的终端里按回车，或运行\n    {command(task, lang, True)}")
    return f'"""{head}\n\n{spec.statement[lang]}\n\n{done}\n"""\n{spec.code}'
