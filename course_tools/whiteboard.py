"""`course interview --whiteboard [sdpa|mha|mlm]`: a timed whiteboard drill, graded by the course's grader.

Three classic interview tasks, each a function or class to write from a blank page:

- `sdpa`: scaled dot-product attention with a key padding mask (about 10 minutes);
- `mha`: masked multi-head attention, an nn.Module with its own projections (about 20 minutes);
- `mlm`: BERT's masked-language-model masking, 15% and 80/10/10 (about 15 minutes).

`course interview --whiteboard sdpa` writes a starter file `work/whiteboard/sdpa.py` (the task
statement as its docstring and the signature, never the answer; an earlier attempt is kept in
`work/whiteboard/attempts/`), starts the clock and waits: the learner writes the answer in their
editor and presses Enter. The file is then graded like an exercise notebook - the static shortcut
check (shortcuts.py), then the learner's code in the grader's sandbox (grader/channel.py, grader/proxy.py) and
the checks (checks/whiteboard.py) on hidden cases of a fresh seed - and each item's verdict is
printed with its diagnosis, with the minutes taken. `--grade` grades the file later (another
terminal, after a break: the clock kept running). Each grading appends a record (task, points,
max, seconds, timestamp, per-item points) to `build/whiteboard.jsonl` (or `$COURSE_WHITEBOARD_FILE`);
a full score stops the clock.

`--lang zh` speaks Chinese throughout: the statement, the starter's docstring, the frame and the
diagnoses (DIAGNOSES in checks/whiteboard.py and GENERIC below translate the grader's feedback).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import random
import re
import string
import time
from dataclasses import dataclass
from pathlib import Path

from . import ROOT

RECORD_ENV = "COURSE_WHITEBOARD_FILE"
MAX_SOURCE_BYTES = 256 * 1024


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

#: The terminal frame, per language (nothing English in zh).
WORDS = {
    "en": {
        "header": "Whiteboard drill: {title} - about {minutes} minutes.",
        "file": "Write your answer in {path} (your editor, no notebook, no search: as at a whiteboard).",
        "kept": "(your earlier attempt is kept in {path})",
        "clock": "The clock started at {time}.",
        "enter": "Press Enter here when you are done (or grade later: {command}) > ",
        "later": "The clock keeps running; grade when you are done: {command}",
        "no_file": "no {path}: start the drill first ({command})",
        "no_task": "no whiteboard drill started yet: course interview --whiteboard [sdpa|mha|mlm]",
        "graded": "Grading {path} on hidden cases (the course's grader, a few seconds)...",
        "unchanged": "{path} is still the starter: write your answer in it first",
        "pass": "PASS", "fail": "FAIL",
        "score_timed": "score {points}/{max} in {minutes:.1f} minutes (budget {budget} minutes{over})",
        "over": "; over budget",
        "score_untimed": "score {points}/{max} (untimed: no clock was running)",
        "done": "Full marks: the clock is stopped. Recorded in {path}",
        "again": "The clock keeps running: fix the file and grade again ({command}). Recorded in {path}",
        "error": "not graded: {message}",
        "picked": "The interviewer picks: {task}",
    },
    "zh": {
        "header": "白板练习：{title}——建议用时约 {minutes} 分钟。",
        "file": "在 {path} 中写出答案（用你的编辑器，不用笔记本、不查资料：就像在白板上）。",
        "kept": "（上一次的作答保存在 {path}）",
        "clock": "计时从 {time} 开始。",
        "enter": "完成后在这里按回车（或稍后评分：{command}）> ",
        "later": "计时继续；完成后评分：{command}",
        "no_file": "没有 {path}：请先开始练习（{command}）",
        "no_task": "还没有开始白板练习：course interview --whiteboard [sdpa|mha|mlm]",
        "graded": "正在用隐藏用例为 {path} 评分（课程的评分器，需要几秒钟）……",
        "unchanged": "{path} 还是初始文件：请先在里面写出答案",
        "pass": "通过", "fail": "未通过",
        "score_timed": "得分 {points}/{max}，用时 {minutes:.1f} 分钟（建议 {budget} 分钟{over}）",
        "over": "；超时",
        "score_untimed": "得分 {points}/{max}（未计时：没有正在进行的计时）",
        "done": "满分：计时停止。记录：{path}",
        "again": "计时继续：改好文件后再次评分（{command}）。记录：{path}",
        "error": "未评分：{message}",
        "picked": "面试官出题：{task}",
    },
}

#: The grader's generic feedback (grader/run.py, grader/authoring.py, shortcuts.py, grader/proxy.py) in Chinese; `{field}`s
#: are carried over. Applied after the checks' own DIAGNOSES.
GENERIC = (
    ("not implemented yet (your file still raises NotImplementedError)", "尚未实现（文件仍抛出 NotImplementedError）"),
    ("not graded: your code uses {what}; this exercise asks you to write it yourself",
     "不计分：你的代码用了 {what}；这道题要求自己实现"),
    ("not graded: your code uses {what}; graded code must call functions directly (no dynamic imports or lookups)",
     "不计分：你的代码用了 {what}；被评分的代码必须直接调用函数（不能动态导入或动态查找）"),
    ("your code calls {what}, which this exercise asks you not to use (write it yourself)",
     "你的代码调用了 {what}，这道题不允许使用（请自己实现）"),
    (", which runs ", "，它运行 "),
    (" (the kernel of {what})", "（{what} 的内核）"),
    ("{name} has shape {got}, expected {expected}", "{name} 的形状是 {got}，应为 {expected}"),
    (" - the same sizes in another order: a missing or extra transpose?", "——尺寸相同但顺序不同：少了或多了一次转置？"),
    (" - the same number of elements: a wrong view/reshape?", "——元素个数相同：view/reshape 用错了？"),
    ("{name} differs from the reference: max |difference| {diff} at index {index} (got {got}, expected {expected}; "
     "tolerance {tol})", "{name} 与参考答案不符：最大差值 {diff}，位置 {index}（得到 {got}，应为 {expected}；容差 {tol}）"),
    ("{name} contains NaN (first at index {index}); a fully masked row or a division by zero?",
     "{name} 含有 NaN（首个位于 {index}）：某一行被完全遮住，或除以了零？"),
    ("{name} should be a torch.Tensor, got {got}", "{name} 应为 torch.Tensor，实际是 {got}"),
    ("forward should return a tuple ({names}), got {got}", "forward 应返回元组 ({names})，实际是 {got}"),
    ("return a tuple ({names}), got {got}", "应返回元组 ({names})，实际是 {got}"),
    ("a {kind} of {n} values", "含 {n} 个值的 {kind}"),
    ("took longer than {seconds} s (an infinite loop?)", "运行超过 {seconds} 秒（死循环？）"),
    ("your code ended the process: {why}", "你的代码使进程退出：{why}"),
    ("{name} is not defined", "{name} 未定义"),
    ("; your file raised {error}", "；文件运行时抛出了 {error}"),
    ("your file took longer than {seconds} s to run", "文件运行超过 {seconds} 秒"),
    ("your code raised {error}", "你的代码抛出了 {error}"),
    ("your result", "你的结果"),
)


def _pattern(template: str) -> re.Pattern:
    """A regex for the text `template` formats to: each field matches any text (the first, when it opens
    the template, one word - or "your result")."""
    out, parts, seen = [], list(string.Formatter().parse(template)), set()
    for k, (literal, field, _, _) in enumerate(parts):
        out.append(re.escape(literal))
        if field is None:
            continue
        if field in seen:                                   # the same value again
            out.append(f"(?P={field})")
        elif k == 0 and not literal:
            out.append(f"(?P<{field}>your result|[^\\s\\]]+)")
        elif k == len(parts) - 1:
            out.append(f"(?P<{field}>.+)")
        else:
            out.append(f"(?P<{field}>.+?)")
        seen.add(field)
    return re.compile("".join(out), re.S)


def _table():
    from .checks.whiteboard import DIAGNOSES
    pairs = sorted(DIAGNOSES.values(), key=lambda p: len(p[0]), reverse=True) + list(GENERIC)
    return [(_pattern(en), zh) for en, zh in pairs]


_TABLE: list = []


def to_zh(feedback: str) -> str:
    """The grader's (English) feedback in Chinese: the diagnoses, then the generic sentences."""
    if not _TABLE:
        _TABLE.extend(_table())
    for pattern, zh in _TABLE:
        feedback = pattern.sub(lambda m, zh=zh: zh.format(**m.groupdict()), feedback)
    return feedback


def say(feedback: str, lang: str) -> str:
    feedback = feedback.replace("(the cell still raises NotImplementedError)",
                                "(your file still raises NotImplementedError)")
    return to_zh(feedback) if lang == "zh" else feedback


# ---------------------------------------------------------------- files: the starter, the clock, the records

def whiteboard_dir() -> Path:
    from .workspace import work_dir
    return work_dir() / "whiteboard"


def record_file() -> Path:
    return Path(os.environ.get(RECORD_ENV) or ROOT / "build" / "whiteboard.jsonl")


def _shown(path: Path) -> str:
    try:
        return path.relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


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


def _clock_path() -> Path:
    return whiteboard_dir() / ".clock.json"


def _clock() -> dict:
    try:
        data = json.loads(_clock_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save_clock(clock: dict) -> None:
    _clock_path().parent.mkdir(parents=True, exist_ok=True)
    _clock_path().write_text(json.dumps(clock, indent=1), encoding="utf-8")


def start(task: str, lang: str = "en", now: float | None = None) -> tuple[Path, Path | None]:
    """Write the starter file and start the clock: (the file, where an earlier attempt was kept or None)."""
    path = whiteboard_dir() / f"{task}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    kept = None
    if path.exists():
        old = path.read_text(encoding="utf-8", errors="replace")
        if old not in (starter(task, "en"), starter(task, "zh")):
            stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
            kept = path.parent / "attempts" / f"{task}-{stamp}.py"
            kept.parent.mkdir(exist_ok=True)
            path.replace(kept)
    path.write_text(starter(task, lang), encoding="utf-8")
    clock = _clock()
    clock[task] = {"start": time.time() if now is None else now, "attempts": 0}   # once the file is there
    _save_clock(clock)
    return path, kept


def record(task: str, result: dict, seconds: float | None, lang: str, attempt: int,
           when: dt.datetime | None = None) -> dict:
    """Append one graded attempt to the record file; returns the entry."""
    when = when or dt.datetime.now()
    entry = {"when": when.isoformat(timespec="seconds"), "task": task, "points": result["score"],
             "max": result["max_score"], "seconds": None if seconds is None else round(seconds, 1),
             "budget_seconds": TASKS[task].minutes * 60, "attempt": attempt, "lang": lang,
             "items": {i["id"]: i["points"] for i in result["items"]}}
    path = record_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def history(path: Path | None = None) -> list[dict]:
    """The drill's records: the same JSON-lines reading as the interview's log."""
    from .interview import history as read_log
    return read_log(record_file() if path is None else path)


# ---------------------------------------------------------------- grading: the course's grader on a .py file

def read_source(path) -> str:
    from .grader.errors import GradeError
    from .grader.notebook import shown_name
    path = Path(path)
    if not path.is_file():
        raise GradeError("not-found", f"no such file {shown_name(path)!r}")
    data = path.read_bytes()
    if len(data) > MAX_SOURCE_BYTES:
        raise GradeError("too-large", f"{shown_name(path)!r} is {len(data)} bytes; the limit is {MAX_SOURCE_BYTES}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise GradeError("unreadable", f"{shown_name(path)!r} is not UTF-8 text") from None


def grade_source(source: str, task: str, *, seed: int | None = None, item_timeout: float = 60.0,
                 start_timeout: float = 180.0, limits=None) -> dict:
    """Grade the learner's code `source` for `task` as `course grade` grades a notebook: per item, the static
    shortcut check, then the check on hidden cases (`seed`: None draws fresh ones) against the learner's objects
    in a sandboxed process. Returns {"task", "score", "max_score", "items": [{"id", "points", "max_points",
    "passed", "feedback"}]}; GradeError when the sandbox cannot start."""
    from .checks.whiteboard import WHITEBOARD
    from .grader.channel import Channel
    from .grader.errors import LearnerDied, ProtocolError, Timeout
    from .grader.notebook import clean
    from .grader.run import run_item, start, static_check
    from .shortcuts import forbidden_for

    exercises = [WHITEBOARD[i] for i in TASKS[task].items]
    forbidden = {ex.id: forbidden_for(ex.id, ex.forbids) for ex in exercises}
    state = {"channel": None, "remote": None, "raised": "", "fatal": ""}

    def learner():
        """A live learner process that has run the file (a fresh one after a kill)."""
        if state["channel"] is not None and state["channel"].alive:
            return state["channel"], state["remote"]
        if state["channel"] is not None:
            state["channel"].close()
        channel = state["channel"] = Channel(None, limits)
        remote = state["remote"] = start(channel, forbidden, start_timeout)
        channel.allow(item_timeout)
        remote.exec_cell("__name__ = 'whiteboard'")      # the file's `if __name__ == "__main__":` block does not run
        try:
            remote.exec_cell(source)
        except Timeout:
            state["fatal"] = f"your file took longer than {item_timeout:g} s to run"
        except (LearnerDied, ProtocolError) as error:
            state["fatal"] = f"your code ended the process: {clean(error, 120)}"
        except Exception as error:  # noqa: BLE001 - the learner's exception, by name
            state["raised"] = clean(f"{getattr(error, 'type_name', type(error).__name__)}: {error}", 200)
        return channel, remote

    items = []
    try:
        for ex in exercises:
            item = {"id": ex.id, "points": 0, "max_points": ex.points, "passed": False, "feedback": ""}
            items.append(item)
            refused = static_check(ex, [source], [])
            if refused:
                item["feedback"] = clean(refused)
                continue
            if state["fatal"]:
                item["feedback"] = state["fatal"]
                continue
            channel, remote = learner()
            if state["fatal"]:
                item["feedback"] = state["fatal"]
                continue
            passed, feedback = run_item(channel, remote, ex, item_timeout, seed)
            if passed is None:        # the learner's process had to be killed: a fresh one for the next item
                channel.kill()
                passed = False
            if not passed and feedback.endswith("is not defined") and state["raised"]:
                feedback += f"; your file raised {state['raised']}"
            item.update(passed=bool(passed), points=ex.points if passed else 0, feedback=clean(feedback))
    finally:
        if state["channel"] is not None:
            state["channel"].close()
    return {"task": task, "score": sum(i["points"] for i in items),
            "max_score": sum(i["max_points"] for i in items), "items": items}


def grade_file(path, task: str, **kwargs) -> dict:
    """`grade_source` on the file at `path` (GradeError when it cannot be read)."""
    return grade_source(read_source(path), task, **kwargs)


# ---------------------------------------------------------------- the terminal session

def report(result: dict, lang: str = "en") -> list[str]:
    """One line per item: the verdict, the points, the title, and on a failure the diagnosis."""
    w = WORDS[lang]
    lines = []
    for item in result["items"]:
        en, zh = ITEM_TITLES.get(item["id"], (item["id"], item["id"]))
        mark = w["pass"] if item["passed"] else w["fail"]
        lines.append(f"  {mark:<4} {item['points']}/{item['max_points']}  {item['id']}  {zh if lang == 'zh' else en}")
        if not item["passed"]:
            lines.append(f"        {say(item['feedback'], lang)}")
    return lines


def _unchanged(path: Path, task: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") in (starter(task, "en"), starter(task, "zh"))
    except (OSError, UnicodeDecodeError):
        return False


def finish(task: str, lang: str = "en", write=print, now: float | None = None, **grade_kwargs) -> int:
    """Grade work/whiteboard/<task>.py, print the verdicts and the time, append the record. 0 on full marks."""
    from .grader.errors import GradeError
    w = WORDS[lang]
    now = time.time() if now is None else now
    path = whiteboard_dir() / f"{task}.py"
    if not path.exists():
        write(w["no_file"].format(path=_shown(path), command=command(task, lang)))
        return 2
    if _unchanged(path, task):
        write(w["unchanged"].format(path=_shown(path)))
        return 2
    clock = _clock()
    running = clock.get(task) if isinstance(clock.get(task), dict) else None
    seconds = max(0.0, now - float(running["start"])) if running else None
    write(w["graded"].format(path=_shown(path)))
    try:
        result = grade_file(path, task, **grade_kwargs)
    except GradeError as error:
        write(w["error"].format(message=str(error)))
        return 2
    for line in report(result, lang):
        write(line)
    full = result["score"] == result["max_score"]
    budget = TASKS[task].minutes
    if seconds is None:
        write(w["score_untimed"].format(points=result["score"], max=result["max_score"]))
    else:
        write(w["score_timed"].format(points=result["score"], max=result["max_score"], minutes=seconds / 60,
                                      budget=budget, over=w["over"] if seconds > budget * 60 else ""))
    attempt = (int(running.get("attempts", 0)) + 1) if running else 1
    record(task, result, seconds, lang, attempt)
    if running:
        if full:
            clock.pop(task, None)
        else:
            clock[task] = {**running, "attempts": attempt}
        _save_clock(clock)
    write((w["done"] if full else w["again"]).format(path=_shown(record_file()), command=command(task, lang, True)))
    return 0 if full else 1


def main(task: str | None, lang: str = "en", grade_only: bool = False, read=input, write=print,
         rng=None, **grade_kwargs) -> int:
    """`course interview --whiteboard [TASK] [--grade]`: start the drill (a task picked at random when none
    is named), wait for Enter, grade; or, with `grade_only`, grade the file (the task started last when none)."""
    lang = "zh" if lang == "zh" else "en"
    w = WORDS[lang]
    if task not in TASKS:
        if grade_only:
            clock = _clock()
            started = [t for t in clock if t in TASKS and isinstance(clock[t], dict)]
            task = max(started, key=lambda t: clock[t].get("start", 0), default=None)
            if task is None:
                write(w["no_task"])
                return 2
        else:
            task = (rng or random.Random()).choice(sorted(TASKS))
            write(w["picked"].format(task=task))
    if grade_only:
        return finish(task, lang, write, **grade_kwargs)
    spec = TASKS[task]
    path, kept = start(task, lang)
    write("\n" + w["header"].format(title=spec.title[lang], minutes=spec.minutes))
    write("")
    write(spec.statement[lang])
    write("")
    write(w["file"].format(path=_shown(path)))
    if kept is not None:
        write(w["kept"].format(path=_shown(kept)))
    write(w["clock"].format(time=dt.datetime.now().strftime("%H:%M")))
    while True:
        try:
            read(w["enter"].format(command=command(task, lang, True)))
        except (EOFError, KeyboardInterrupt):
            write("\n" + w["later"].format(command=command(task, lang, True)))
            return 0
        if not _unchanged(path, task):
            return finish(task, lang, write, **grade_kwargs)
        write(w["unchanged"].format(path=_shown(path)))
