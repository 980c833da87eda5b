"""The grader's feedback in the whiteboard drill's Chinese (`course interview --whiteboard --lang zh`): the
checks' own DIAGNOSES (checks/whiteboard.py), then the generic sentences of the grader (GENERIC below), each
English template matched as a pattern whose fields are carried over into the Chinese one."""
from __future__ import annotations

import re
import string

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
